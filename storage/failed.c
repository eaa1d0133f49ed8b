/* SPDX-License-Identifier: Apache-2.0 */
/* The failure store: messages that exhausted their retries or were
** unrecoverable, with the reason, until an operator retries or removes them. */
#include <sqlite3.h>
#include <string.h>

#include "storage/store.h"

int ob__failed_insert(ob__db_t* db, const ob__queue_row_t* r,
                      const char* error_class, const char* reason,
                      int attempts, int64_t now) {
  return ob__failed_insert_effect(db, r, error_class, reason, attempts, NULL,
                                  now);
}

int ob__failed_insert_effect(ob__db_t* db, const ob__queue_row_t* r,
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
  return r->rowid > 0 ? ob__queue_delete(db, r->rowid) : 0;
}

static const char* col_text(sqlite3_stmt* st, int i) {
  return (const char*)sqlite3_column_text(st, i);
}

int ob__failed_list(ob__db_t* db, int64_t id, const char* type,
                    int (*cb)(void* arg, const ob_failed_t* f), void* arg) {
  sqlite3_stmt* st = NULL;
  int rc, n = 0;
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

int ob__failed_retry(ob__db_t* db, int64_t id, int64_t now) {
  int rc, moved;
  rc = ob__db_begin(db);
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
    ob__db_rollback(db);
    return id > 0 ? ob__db_seterr(db, OB_ENOTFOUND,
                                  "no failed message with id %lld",
                                  (long long)id)
                  : 0;
  }
  rc = ob__db_commit(db);
  return rc < 0 ? rc : moved;

fail:
  rc = moved < 0 ? moved : rc;
  ob__db_rollback(db);
  return rc;
}

int ob__failed_remove(ob__db_t* db, int64_t id) {
  int rc, n;
  rc = ob__db_begin(db);
  if (rc < 0) return rc;
  n = exec_id(db, "DELETE FROM failed_message WHERE (?1 <= 0 OR id = ?1)", id,
              0, "failed remove");
  if (n < 0) {
    ob__db_rollback(db);
    return n;
  }
  rc = ob__db_commit(db);
  if (rc < 0) return rc;
  if (n == 0 && id > 0)
    return ob__db_seterr(db, OB_ENOTFOUND, "no failed message with id %lld",
                         (long long)id);
  return n;
}
