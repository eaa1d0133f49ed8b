/* SPDX-License-Identifier: Apache-2.0 */
/* The failure store on PostgreSQL: messages that exhausted their retries,
** were unrecoverable or wait for a person to resolve an effect, until an
** operator retries or removes them.
**
** Every move between the queue and the store is ONE statement, a DELETE
** ... RETURNING feeding the INSERT: a row is moved exactly once even when
** two processes (two operators, an operator and an engine) move the same
** rows at once, since the second DELETE waits for the first's row locks
** and then skips the rows it took. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "storage/postgresql/pg_int.h"

int ob__pg_failed_insert(ob__db_t* db, const ob__queue_row_t* r,
                         const char* error_class, const char* reason,
                         int attempts, int64_t now) {
  return ob__pg_failed_insert_effect(db, r, error_class, reason, attempts,
                                     NULL, now);
}

int ob__pg_failed_insert_effect(ob__db_t* db, const ob__queue_row_t* r,
                                const char* error_class, const char* reason,
                                int attempts, const char* effect_key,
                                int64_t now) {
  static const char sql[] =
      "INSERT INTO failed_message(queue_name, message_id, type, headers,"
      " body, error_class, reason, attempts, first_failed_at,"
      " last_failed_at, created_at, effect_key, source) VALUES ($1::text,"
      " $2::text, $3::text, $4::text, $5::bytea, $6::text, $7::text,"
      " $8::bigint, $9::bigint, $10::bigint, $11::bigint, $12::text,"
      " $13::text)";
  ob__pg_params_t p;
  int rc;
  ob__pg_params_init(&p);
  ob__pg_p_message(&p, r);
  ob__pg_p_text(&p, error_class);
  ob__pg_p_text(&p, reason);
  ob__pg_p_int(&p, attempts);
  ob__pg_p_int(&p, r->first_failed_at ? r->first_failed_at : now);
  ob__pg_p_int(&p, now);
  ob__pg_p_int(&p, r->created_at);
  ob__pg_p_text(&p, effect_key);
  ob__pg_p_text(&p, r->source);
  rc = ob__pg_run_done(db, sql, &p, "failure store insert");
  if (rc < 0) return rc;
  /* rowid 0: a message from outside (SQS) that never had a queue row. */
  return r->rowid > 0 ? ob__pg_queue_delete(db, r->rowid) : 0;
}

/* The columns both listings read, in visit_rows' order. */
#define FAILED_COLUMNS                                                      \
  "id, message_id, queue_name, type, headers, body, error_class, reason,"   \
  " attempts, first_failed_at, last_failed_at, source"

/* A text column, NULL for SQL NULL. Valid until the result is cleared. */
static const char* col(const PGresult* res, int i, int c) {
  return ob__pg_isnull(res, i, c) ? NULL : PQgetvalue(res, i, c);
}

/* Hand each row of res (FAILED_COLUMNS) to cb (may be NULL; non-zero
** stops), then clear res. Every row is read before the first callback, so
** cb may call other store functions. The rows visited, or < 0. */
static int visit_rows(ob__db_t* db, PGresult* res,
                      int (*cb)(void* arg, const ob_failed_t* f),
                      void* arg) {
  int n = PQntuples(res), visited = 0;
  for (int i = 0; i < n; i++) {
    ob_failed_t f;
    int oom = 0, stop;
    size_t body_len = 0;
    char* body = ob__pg_dup_bytea(res, i, 5, &body_len, &oom);
    if (oom) {
      PQclear(res);
      return ob__db_seterr(db, OB_ENOMEM, "failed list: out of memory");
    }
    memset(&f, 0, sizeof f);
    f.id = ob__pg_int(res, i, 0);
    f.message_id = PQgetvalue(res, i, 1);
    f.queue = PQgetvalue(res, i, 2);
    f.type = PQgetvalue(res, i, 3);
    f.headers = col(res, i, 4);
    f.body = body ? body : "";
    f.body_len = body ? body_len : 0;
    f.error_class = PQgetvalue(res, i, 6);
    f.reason = PQgetvalue(res, i, 7);
    f.attempts = (int)ob__pg_int(res, i, 8);
    f.first_failed_at_ms = ob__pg_int(res, i, 9);
    f.last_failed_at_ms = ob__pg_int(res, i, 10);
    f.source = col(res, i, 11);
    visited++;
    stop = cb != NULL && cb(arg, &f) != 0;
    free(body);
    if (stop) break;
  }
  PQclear(res);
  return visited;
}

int ob__pg_failed_list(ob__db_t* db, int64_t id, const char* type,
                       int (*cb)(void* arg, const ob_failed_t* f),
                       void* arg) {
  static const char sql[] =
      "SELECT " FAILED_COLUMNS " FROM failed_message"
      " WHERE ($1::bigint <= 0 OR id = $1::bigint) AND"
      " ($2::text IS NULL OR type = $2::text) ORDER BY id";
  ob__pg_params_t p;
  PGresult* res;
  ob__pg_params_init(&p);
  ob__pg_p_int(&p, id);
  ob__pg_p_text(&p, type);
  res = ob__pg_run(db, sql, &p, "failed list");
  if (res == NULL) return db->last_err ? db->last_err : OB_EDB;
  return visit_rows(db, res, cb, arg);
}

int ob__pg_failed_retry(ob__db_t* db, int64_t id, int64_t now) {
  /* Back to the queue with attempts reset, in id order: a replay passes
  ** the same dedup guard as any delivery. */
  static const char move[] =
      "WITH f AS (DELETE FROM failed_message WHERE ($1::bigint <= 0 OR"
      " id = $1::bigint) RETURNING id, queue_name, message_id, type,"
      " headers, body, created_at, source)"
      " INSERT INTO queue(queue_name, message_id, type, headers, body,"
      " available_at, attempts, created_at, source) SELECT queue_name,"
      " message_id, type, headers, body, $2::bigint, 0, created_at, source"
      " FROM f ORDER BY id";
  ob__pg_params_t p;
  int rc, moved;
  if ((rc = ob__pg_db_begin(db)) < 0) return rc;
  ob__pg_params_init(&p);
  ob__pg_p_int(&p, id);
  ob__pg_p_int(&p, now);
  moved = ob__pg_run_done(db, move, &p, "failed retry");
  if (moved < 0) {
    ob__pg_db_rollback(db);
    return moved;
  }
  if (moved == 0) {
    ob__pg_db_rollback(db);
    return id > 0 ? ob__db_seterr(db, OB_ENOTFOUND,
                                  "no failed message with id %lld",
                                  (long long)id)
                  : 0;
  }
  rc = ob__pg_db_commit(db);
  return rc < 0 ? rc : moved;
}

int ob__pg_failed_remove(ob__db_t* db, int64_t id) {
  static const char sql[] =
      "DELETE FROM failed_message WHERE ($1::bigint <= 0 OR id = $1::bigint)";
  ob__pg_params_t p;
  int rc, n;
  if ((rc = ob__pg_db_begin(db)) < 0) return rc;
  ob__pg_params_init(&p);
  ob__pg_p_int(&p, id);
  n = ob__pg_run_done(db, sql, &p, "failed remove");
  if (n < 0) {
    ob__pg_db_rollback(db);
    return n;
  }
  if ((rc = ob__pg_db_commit(db)) < 0) return rc;
  if (n == 0 && id > 0)
    return ob__db_seterr(db, OB_ENOTFOUND, "no failed message with id %lld",
                         (long long)id);
  return n;
}

/* ---- filters over a backlog ------------------------------------------------
** One WHERE clause for every filtered statement; the filter's values are
** bound ($1..$5), never part of the SQL text. strpos(), not LIKE: a
** reason holding % or _ needs no escaping. $6/$7 bound the id range of one
** batch; $8 is each statement's own (limit, offset or now). */
#define FILTER_WHERE                                                        \
  " ($1::text IS NULL OR type = $1::text)"                                  \
  " AND ($2::text IS NULL OR error_class = $2::text)"                       \
  " AND ($3::bigint <= 0 OR last_failed_at >= $3::bigint)"                  \
  " AND ($4::bigint <= 0 OR last_failed_at < $4::bigint)"                   \
  " AND ($5::text IS NULL OR strpos(reason, $5::text) > 0)"                 \
  " AND id > $6::bigint AND id <= $7::bigint"

/* "" selects everything, as NULL does (ob_failed_filter_t). */
static const char* nonempty(const char* s) {
  return s != NULL && s[0] != '\0' ? s : NULL;
}

/* $1..$7 of FILTER_WHERE for fl (NULL: all) over ids (lo, hi]. */
static void filter_params(ob__pg_params_t* p, const ob_failed_filter_t* fl,
                          int64_t lo, int64_t hi) {
  ob__pg_params_init(p);
  ob__pg_p_text(p, fl ? nonempty(fl->type) : NULL);
  ob__pg_p_text(p, fl ? nonempty(fl->error_class) : NULL);
  ob__pg_p_int(p, fl ? fl->failed_after_ms : 0);
  ob__pg_p_int(p, fl ? fl->failed_before_ms : 0);
  ob__pg_p_text(p, fl ? nonempty(fl->reason_contains) : NULL);
  ob__pg_p_int(p, lo);
  ob__pg_p_int(p, hi);
}

/* The filter's limit as $8: NULL (LIMIT NULL is no limit) when unset. */
static void limit_param(ob__pg_params_t* p, const ob_failed_filter_t* fl) {
  if (fl != NULL && fl->limit > 0)
    ob__pg_p_int(p, fl->limit);
  else
    ob__pg_p_null(p);
}

int ob__pg_failed_list_filter(ob__db_t* db, const ob_failed_filter_t* fl,
                              int (*cb)(void* arg, const ob_failed_t* f),
                              void* arg) {
  static const char sql[] =
      "SELECT " FAILED_COLUMNS " FROM failed_message WHERE" FILTER_WHERE
      " ORDER BY id LIMIT $8::bigint";
  ob__pg_params_t p;
  PGresult* res;
  filter_params(&p, fl, 0, INT64_MAX);
  limit_param(&p, fl);
  res = ob__pg_run(db, sql, &p, "failed list");
  if (res == NULL) return db->last_err ? db->last_err : OB_EDB;
  return visit_rows(db, res, cb, arg);
}

int ob__pg_failed_count(ob__db_t* db, const ob_failed_filter_t* fl) {
  /* The bodies are never read: the count runs over the row ids only. */
  static const char sql[] =
      "SELECT count(*) FROM (SELECT 1 FROM failed_message WHERE"
      FILTER_WHERE " LIMIT $8::bigint) AS s";
  ob__pg_params_t p;
  int64_t n = 0;
  int rc;
  filter_params(&p, fl, 0, INT64_MAX);
  limit_param(&p, fl);
  rc = ob__pg_run_int(db, sql, &p, "failed count", &n);
  if (rc < 0) return rc;
  return n > INT32_MAX ? INT32_MAX : (int)n;
}

int ob__pg_failed_apply_filter(ob__db_t* db, int retry,
                               const ob_failed_filter_t* fl, int batch,
                               int64_t now, ob_failed_progress_fn progress,
                               void* arg) {
  static const char top[] = "SELECT max(id) FROM failed_message";
  /* The batch's last id: the want-th matching row after the previous
  ** batch (none when fewer remain: then all the rest). */
  static const char last_of[] =
      "SELECT id FROM failed_message WHERE" FILTER_WHERE
      " ORDER BY id LIMIT 1 OFFSET $8::bigint";
  static const char move[] =
      "WITH f AS (DELETE FROM failed_message WHERE" FILTER_WHERE
      " RETURNING id, queue_name, message_id, type, headers, body,"
      " created_at, source) INSERT INTO queue(queue_name, message_id, type,"
      " headers, body, available_at, attempts, created_at, source)"
      " SELECT queue_name, message_id, type, headers, body, $8::bigint, 0,"
      " created_at, source FROM f ORDER BY id";
  static const char drop[] =
      "DELETE FROM failed_message WHERE" FILTER_WHERE;
  const char* what = retry ? "failed retry" : "failed remove";
  ob__pg_params_t p;
  int64_t max_id = 0, last = 0;
  int total, done = 0, rc;
  if (batch <= 0) batch = 500;
  /* The rows there now: failures arriving during a long run are not swept
  ** into a selection the operator counted before. */
  rc = ob__pg_run_int(db, top, NULL, what, &max_id);
  if (rc == OB_ENOTFOUND) max_id = 0, rc = 0;
  if (rc < 0) return rc;
  total = ob__pg_failed_count(db, fl);
  if (total <= 0) return total;
  while (done < total) {
    int want = total - done < batch ? total - done : batch, n;
    int64_t hi = max_id;
    if ((rc = ob__pg_db_begin(db)) < 0) return rc;
    filter_params(&p, fl, last, max_id);
    ob__pg_p_int(&p, want - 1);
    rc = ob__pg_run_int(db, last_of, &p, what, &hi);
    if (rc == OB_ENOTFOUND) hi = max_id, rc = 0;
    if (rc < 0) goto fail;
    filter_params(&p, fl, last, hi);
    if (retry) {
      ob__pg_p_int(&p, now);
      n = ob__pg_run_done(db, move, &p, what);
    } else {
      n = ob__pg_run_done(db, drop, &p, what);
    }
    if (n < 0) {
      rc = n;
      goto fail;
    }
    if ((rc = ob__pg_db_commit(db)) < 0) return rc;
    done += n;
    last = hi;
    /* Once per commit: what it reports is durable. */
    if (progress && progress(arg, done, total) != 0) break;
    if (n == 0 || hi >= max_id) break;
  }
  return done;

fail:
  ob__pg_db_rollback(db);
  return rc;
}

/* ---- messages that wait for an effect ----------------------------------- */

int ob__pg_effect_park_waiting(ob__db_t* db, const char* key,
                               const char* reason, int64_t now) {
  /* Every row waiting on key, in id order, with the effect remembered so
  ** resolving it moves them back (ob__pg_effect_requeue_failed). A row
  ** another transaction holds is waited for, not skipped: every one of
  ** them is moved, as on SQLite. */
  static const char sql[] =
      "WITH q AS (DELETE FROM queue WHERE waiting_on = $1::text RETURNING"
      " id, queue_name, message_id, type, headers, body, attempts,"
      " first_failed_at, created_at, source)"
      " INSERT INTO failed_message(queue_name, message_id, type, headers,"
      " body, error_class, reason, attempts, first_failed_at,"
      " last_failed_at, created_at, effect_key, source)"
      " SELECT queue_name, message_id, type, headers, body,"
      " 'effect_unknown', $2::text, attempts, coalesce(first_failed_at,"
      " $3::bigint), $3::bigint, created_at, $1::text, source"
      " FROM q ORDER BY id";
  ob__pg_params_t p;
  ob__pg_params_init(&p);
  ob__pg_p_text(&p, key);
  ob__pg_p_text(&p, reason);
  ob__pg_p_int(&p, now);
  return ob__pg_run_done(db, sql, &p, "park messages of an effect");
}

int ob__pg_effect_requeue_failed(ob__db_t* db, const char* key,
                                 int64_t now) {
  /* Due now, attempts reset, created anew (as on SQLite). */
  static const char sql[] =
      "WITH f AS (DELETE FROM failed_message WHERE effect_key = $1::text"
      " RETURNING id, queue_name, message_id, type, headers, body, source)"
      " INSERT INTO queue(queue_name, message_id, type, headers, body,"
      " available_at, attempts, created_at, source)"
      " SELECT queue_name, message_id, type, headers, body, $2::bigint, 0,"
      " $2::bigint, source FROM f ORDER BY id";
  ob__pg_params_t p;
  ob__pg_params_init(&p);
  ob__pg_p_text(&p, key);
  ob__pg_p_int(&p, now);
  return ob__pg_run_done(db, sql, &p, "requeue messages of an effect");
}
