/* SPDX-License-Identifier: Apache-2.0 */
/* The failure store: messages that exhausted their retries or were
** unrecoverable, with the reason, until an operator retries or removes them. */
#include <sqlite3.h>
#include <string.h>

#include "storage/sqlite/sqlite_store.h"

int ob__sqlite_failed_insert(ob__db_t* db, const ob__queue_row_t* r,
                      const char* error_class, const char* reason,
                      int attempts, int64_t now) {
  return ob__sqlite_failed_insert_effect(db, r, error_class, reason, attempts, NULL,
                                  now);
}

int ob__sqlite_failed_insert_effect(ob__db_t* db, const ob__queue_row_t* r,
                             const char* error_class, const char* reason,
                             int attempts, const char* effect_key,
                             int64_t now) {
  int rc;
  sqlite3_stmt* st = ob__db_stmt(
      db, OB__F_INSERT,
      "INSERT INTO failed_message(queue_name, message_id, type, headers, body,"
      " error_class, reason, attempts, first_failed_at, last_failed_at,"
      " created_at, effect_key, source) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,"
      "?10,?11,?12,?13)");
  if (st == NULL) return db->last_err;
  sqlite3_bind_text(st, 1, r->queue, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 2, r->message_id, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 3, r->type, -1, SQLITE_STATIC);
  if (r->headers) sqlite3_bind_text(st, 4, r->headers, -1, SQLITE_STATIC);
  sqlite3_bind_blob64(st, 5, r->body, r->body_len, SQLITE_STATIC);
  sqlite3_bind_text(st, 6, error_class, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 7, reason, -1, SQLITE_STATIC);
  sqlite3_bind_int(st, 8, attempts);
  sqlite3_bind_int64(st, 9, r->first_failed_at ? r->first_failed_at : now);
  sqlite3_bind_int64(st, 10, now);
  sqlite3_bind_int64(st, 11, r->created_at);
  if (effect_key) sqlite3_bind_text(st, 12, effect_key, -1, SQLITE_STATIC);
  if (r->source) sqlite3_bind_text(st, 13, r->source, -1, SQLITE_STATIC);
  rc = ob__db_step_done(db, st, "failure store insert");
  if (rc < 0) return rc;
  /* rowid 0: a message from outside (SQS) that never had a queue row. */
  return r->rowid > 0 ? ob__sqlite_queue_delete(db, r->rowid) : 0;
}

static const char* col_text(sqlite3_stmt* st, int i) {
  return (const char*)sqlite3_column_text(st, i);
}

/* Step st (the columns of the two listings below), hand each row to cb
** (non-zero stops), finalize. Returns the rows visited or a storage error. */
static int visit_rows(ob__db_t* db, sqlite3_stmt* st,
                      int (*cb)(void* arg, const ob_failed_t* f), void* arg) {
  int rc, n = 0;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    ob_failed_t f;
    memset(&f, 0, sizeof f);
    f.id = sqlite3_column_int64(st, 0);
    f.message_id = col_text(st, 1);
    f.queue = col_text(st, 2);
    f.type = col_text(st, 3);
    f.headers = col_text(st, 4);
    f.body = sqlite3_column_blob(st, 5);
    f.body_len = (size_t)sqlite3_column_bytes(st, 5);
    f.error_class = col_text(st, 6);
    f.reason = col_text(st, 7);
    f.attempts = sqlite3_column_int(st, 8);
    f.first_failed_at_ms = sqlite3_column_int64(st, 9);
    f.last_failed_at_ms = sqlite3_column_int64(st, 10);
    f.source = col_text(st, 11);
    if (f.body == NULL) f.body = "";
    n++;
    if (cb && cb(arg, &f) != 0) {
      rc = SQLITE_DONE;
      break;
    }
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) return ob__db_fail(db, rc, "failed list");
  return n;
}

int ob__sqlite_failed_list(ob__db_t* db, int64_t id, const char* type,
                    int (*cb)(void* arg, const ob_failed_t* f), void* arg) {
  sqlite3_stmt* st = NULL;
  int rc;
  /* Operator path: prepared per call, not cached. */
  rc = sqlite3_prepare_v2(
      db->db,
      "SELECT id, message_id, queue_name, type, headers, body, error_class,"
      " reason, attempts, first_failed_at, last_failed_at, source FROM"
      " failed_message"
      " WHERE (?1 <= 0 OR id = ?1) AND (?2 IS NULL OR type = ?2) ORDER BY id",
      -1, &st, NULL);
  if (rc != SQLITE_OK) return ob__db_fail(db, rc, "failed list");
  sqlite3_bind_int64(st, 1, id);
  if (type) sqlite3_bind_text(st, 2, type, -1, SQLITE_STATIC);
  return visit_rows(db, st, cb, arg);
}

/* Run one write statement with (id) bound inside its own transaction. */
static int exec_id(ob__db_t* db, const char* sql, int64_t id, int64_t now,
                   const char* what) {
  sqlite3_stmt* st = NULL;
  int rc = sqlite3_prepare_v2(db->db, sql, -1, &st, NULL);
  if (rc != SQLITE_OK) return ob__db_fail(db, rc, what);
  sqlite3_bind_int64(st, 1, id);
  if (sqlite3_bind_parameter_count(st) >= 2) sqlite3_bind_int64(st, 2, now);
  rc = ob__db_step_done(db, st, what);
  sqlite3_finalize(st);
  return rc;
}

int ob__sqlite_failed_retry(ob__db_t* db, int64_t id, int64_t now) {
  int rc, moved;
  rc = ob__sqlite_db_begin(db);
  if (rc < 0) return rc;
  /* Back to the queue with attempts reset: a replay passes the same dedup
  ** guard as any delivery. */
  moved = exec_id(db,
                  "INSERT INTO queue(queue_name, message_id, type, headers,"
                  " body, available_at, attempts, created_at, source)"
                  " SELECT queue_name, message_id, type, headers, body, ?2, 0,"
                  " created_at, source FROM failed_message"
                  " WHERE (?1 <= 0 OR id = ?1)"
                  " ORDER BY id",
                  id, now, "failed retry");
  if (moved < 0) goto fail;
  rc = exec_id(db, "DELETE FROM failed_message WHERE (?1 <= 0 OR id = ?1)",
               id, now, "failed retry");
  if (rc < 0) goto fail;
  if (moved == 0) {
    ob__sqlite_db_rollback(db);
    return id > 0 ? ob__db_seterr(db, OB_ENOTFOUND,
                                  "no failed message with id %lld",
                                  (long long)id)
                  : 0;
  }
  rc = ob__sqlite_db_commit(db);
  return rc < 0 ? rc : moved;

fail:
  rc = moved < 0 ? moved : rc;
  ob__sqlite_db_rollback(db);
  return rc;
}

int ob__sqlite_failed_remove(ob__db_t* db, int64_t id) {
  int rc, n;
  rc = ob__sqlite_db_begin(db);
  if (rc < 0) return rc;
  n = exec_id(db, "DELETE FROM failed_message WHERE (?1 <= 0 OR id = ?1)", id,
              0, "failed remove");
  if (n < 0) {
    ob__sqlite_db_rollback(db);
    return n;
  }
  rc = ob__sqlite_db_commit(db);
  if (rc < 0) return rc;
  if (n == 0 && id > 0)
    return ob__db_seterr(db, OB_ENOTFOUND, "no failed message with id %lld",
                         (long long)id);
  return n;
}

/* ---- filters over a backlog ------------------------------------------------
** One WHERE clause for every filtered statement; filter values are bound
** (?1..?5), never part of the SQL text. instr(), not LIKE: a reason holding
** % or _ needs no escaping. ?6/?7 bound the id range of one batch. */
#define FILTER_WHERE                                                        \
  " (?1 IS NULL OR type = ?1) AND (?2 IS NULL OR error_class = ?2)"         \
  " AND (?3 <= 0 OR last_failed_at >= ?3) AND (?4 <= 0 OR last_failed_at < ?4)" \
  " AND (?5 IS NULL OR instr(reason, ?5) > 0)"                              \
  " AND id > ?6 AND id <= ?7"

static const char* nonempty(const char* s) {
  return s != NULL && s[0] != '\0' ? s : NULL;
}

static int prepare_filter(ob__db_t* db, const char* sql,
                          const ob_failed_filter_t* fl, int64_t lo,
                          int64_t hi, sqlite3_stmt** st, const char* what) {
  int rc = sqlite3_prepare_v2(db->db, sql, -1, st, NULL);
  if (rc != SQLITE_OK) return ob__db_fail(db, rc, what);
  if (fl != NULL) {
    if (nonempty(fl->type))
      sqlite3_bind_text(*st, 1, fl->type, -1, SQLITE_STATIC);
    if (nonempty(fl->error_class))
      sqlite3_bind_text(*st, 2, fl->error_class, -1, SQLITE_STATIC);
    sqlite3_bind_int64(*st, 3, fl->failed_after_ms);
    sqlite3_bind_int64(*st, 4, fl->failed_before_ms);
    if (nonempty(fl->reason_contains))
      sqlite3_bind_text(*st, 5, fl->reason_contains, -1, SQLITE_STATIC);
  } else {
    sqlite3_bind_int64(*st, 3, 0);
    sqlite3_bind_int64(*st, 4, 0);
  }
  sqlite3_bind_int64(*st, 6, lo);
  sqlite3_bind_int64(*st, 7, hi);
  return 0;
}

static int filter_limit(const ob_failed_filter_t* fl) {
  return fl != NULL && fl->limit > 0 ? fl->limit : -1;
}

int ob__sqlite_failed_list_filter(ob__db_t* db, const ob_failed_filter_t* fl,
                           int (*cb)(void* arg, const ob_failed_t* f),
                           void* arg) {
  sqlite3_stmt* st = NULL;
  int rc;
  rc = prepare_filter(
      db,
      "SELECT id, message_id, queue_name, type, headers, body, error_class,"
      " reason, attempts, first_failed_at, last_failed_at, source FROM"
      " failed_message WHERE" FILTER_WHERE " ORDER BY id LIMIT ?8",
      fl, 0, INT64_MAX, &st, "failed list");
  if (rc < 0) return rc;
  sqlite3_bind_int(st, 8, filter_limit(fl));
  return visit_rows(db, st, cb, arg);
}

/* One integer from a filtered statement (count, or a batch's last id);
** *out untouched when there is no row. */
static int filter_int(ob__db_t* db, const char* sql,
                      const ob_failed_filter_t* fl, int64_t lo, int64_t hi,
                      int64_t extra, int64_t* out, const char* what) {
  sqlite3_stmt* st = NULL;
  int rc = prepare_filter(db, sql, fl, lo, hi, &st, what);
  if (rc < 0) return rc;
  if (sqlite3_bind_parameter_count(st) >= 8) sqlite3_bind_int64(st, 8, extra);
  rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) *out = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return ob__db_fail(db, rc, what);
  return 0;
}

int ob__sqlite_failed_count(ob__db_t* db, const ob_failed_filter_t* fl) {
  int64_t n = 0;
  int rc = filter_int(db,
                      "SELECT count(*) FROM (SELECT 1 FROM failed_message"
                      " WHERE" FILTER_WHERE " LIMIT ?8)",
                      fl, 0, INT64_MAX, filter_limit(fl), &n, "failed count");
  if (rc < 0) return rc;
  return n > INT32_MAX ? INT32_MAX : (int)n;
}

/* Run one filtered write over ids (lo, hi]; returns the rows changed. */
static int filter_exec(ob__db_t* db, const char* sql,
                       const ob_failed_filter_t* fl, int64_t lo, int64_t hi,
                       int64_t now, const char* what) {
  sqlite3_stmt* st = NULL;
  int rc = prepare_filter(db, sql, fl, lo, hi, &st, what);
  if (rc < 0) return rc;
  if (sqlite3_bind_parameter_count(st) >= 8) sqlite3_bind_int64(st, 8, now);
  rc = ob__db_step_done(db, st, what);
  sqlite3_finalize(st);
  return rc;
}

int ob__sqlite_failed_apply_filter(ob__db_t* db, int retry,
                            const ob_failed_filter_t* fl, int batch,
                            int64_t now, ob_failed_progress_fn progress,
                            void* arg) {
  const char* what = retry ? "failed retry" : "failed remove";
  int64_t max_id = 0, last = 0;
  int total, done = 0, rc;
  sqlite3_stmt* st = NULL;
  if (batch <= 0) batch = 500;
  /* The rows there now: failures arriving during a long run are not swept
  ** into a selection the operator counted before. */
  rc = sqlite3_prepare_v2(db->db, "SELECT max(id) FROM failed_message", -1,
                          &st, NULL);
  if (rc != SQLITE_OK) return ob__db_fail(db, rc, what);
  rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) max_id = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  if (rc != SQLITE_ROW) return ob__db_fail(db, rc, what);
  total = ob__sqlite_failed_count(db, fl);
  if (total <= 0) return total;
  while (done < total) {
    int want = total - done < batch ? total - done : batch, n;
    int64_t hi = max_id;
    rc = ob__sqlite_db_begin(db);
    if (rc < 0) return rc;
    /* The batch's last id: the want-th matching row after the previous
    ** batch (all the rest when fewer remain). */
    rc = filter_int(db,
                    "SELECT id FROM failed_message WHERE" FILTER_WHERE
                    " ORDER BY id LIMIT 1 OFFSET ?8",
                    fl, last, max_id, want - 1, &hi, what);
    if (rc < 0) goto fail;
    if (retry) {
      n = filter_exec(db,
                      "INSERT INTO queue(queue_name, message_id, type,"
                      " headers, body, available_at, attempts, created_at,"
                      " source) SELECT queue_name, message_id, type, headers,"
                      " body, ?8, 0, created_at, source FROM failed_message"
                      " WHERE" FILTER_WHERE " ORDER BY id",
                      fl, last, hi, now, what);
      if (n < 0) {
        rc = n;
        goto fail;
      }
    }
    n = filter_exec(db, "DELETE FROM failed_message WHERE" FILTER_WHERE, fl,
                    last, hi, 0, what);
    if (n < 0) {
      rc = n;
      goto fail;
    }
    rc = ob__sqlite_db_commit(db);
    if (rc < 0) return rc;
    done += n;
    last = hi;
    /* Once per commit: what it reports is durable. */
    if (progress && progress(arg, done, total) != 0) break;
    if (n == 0 || hi >= max_id) break;
  }
  return done;

fail:
  ob__sqlite_db_rollback(db);
  return rc;
}
