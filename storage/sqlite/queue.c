/* SPDX-License-Identifier: Apache-2.0 */
/* The local durable queue: insert, read ready rows, ack, reschedule. */
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/assert.h"
#include "storage/sqlite/sqlite_store.h"

int ob__sqlite_queue_insert(ob__db_t* db, const char* queue, const char* message_id,
                     const char* type, const char* headers, const void* body,
                     size_t body_len, int64_t available_at, int64_t now) {
  sqlite3_stmt* st = ob__db_stmt(
      db, OB__Q_ENQUEUE,
      /* clock_ref only for a message that waits (store.h). */
      "INSERT INTO queue(queue_name, message_id, type, headers, body,"
      " available_at, created_at, clock_ref) VALUES (?1, ?2, ?3, ?4, ?5, ?6,"
      " ?7, CASE WHEN ?6 > ?7 THEN ?7 END)");
  if (st == NULL) return db->last_err;
  sqlite3_bind_text(st, 1, queue, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 2, message_id, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 3, type, -1, SQLITE_STATIC);
  if (headers) sqlite3_bind_text(st, 4, headers, -1, SQLITE_STATIC);
  /* zeroblob-safe: an empty body is stored as an empty blob, not NULL. */
  sqlite3_bind_blob64(st, 5, body_len ? body : "", body_len, SQLITE_STATIC);
  sqlite3_bind_int64(st, 6, available_at);
  sqlite3_bind_int64(st, 7, now);
  int rc = ob__db_step_done(db, st, "enqueue");
  return rc < 0 ? rc : 0;
}

int ob__sqlite_queue_insert_held(ob__db_t* db, const ob__queue_row_t* r,
                          int64_t now) {
  sqlite3_stmt* st = ob__db_stmt(
      db, OB__Q_INSERT_HELD,
      /* Held: never due (and no deadline to re-base) until the trigger
      ** queue_group_release makes it the group's first row. */
      "INSERT INTO queue(queue_name, message_id, type, headers, body,"
      " available_at, attempts, created_at, source, group_key) VALUES (?1, ?2,"
      " ?3, ?4, ?5, 9223372036854775807, ?6, ?7, ?8, ?9)");
  if (st == NULL) return db->last_err;
  OB__ASSERT(r->group_key != NULL);
  sqlite3_bind_text(st, 1, r->queue, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 2, r->message_id, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 3, r->type, -1, SQLITE_STATIC);
  if (r->headers) sqlite3_bind_text(st, 4, r->headers, -1, SQLITE_STATIC);
  sqlite3_bind_blob64(st, 5, r->body_len ? r->body : "", r->body_len,
                      SQLITE_STATIC);
  sqlite3_bind_int(st, 6, r->attempts);
  sqlite3_bind_int64(st, 7, now);
  if (r->source) sqlite3_bind_text(st, 8, r->source, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 9, r->group_key, -1, SQLITE_STATIC);
  int rc = ob__db_step_done(db, st, "queue a message behind its group");
  return rc < 0 ? rc : 0;
}

int ob__sqlite_queue_group_busy(ob__db_t* db, const char* group_key) {
  int rc, busy;
  sqlite3_stmt* st = ob__db_stmt(
      db, OB__Q_GROUP_BUSY, "SELECT 1 FROM queue WHERE group_key = ?1 LIMIT 1");
  if (st == NULL) return db->last_err;
  sqlite3_bind_text(st, 1, group_key, -1, SQLITE_STATIC);
  rc = sqlite3_step(st);
  busy = rc == SQLITE_ROW;
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE)
    return ob__db_fail(db, rc, "messages of a group");
  return busy;
}

static char* dup_col(sqlite3_stmt* st, int i, size_t* len_out) {
  const void* p;
  int n;
  char* out;
  if (sqlite3_column_type(st, i) == SQLITE_NULL) {
    if (len_out) *len_out = 0;
    return NULL;
  }
  p = sqlite3_column_blob(st, i);
  n = sqlite3_column_bytes(st, i);
  out = malloc((size_t)n + 1);
  if (out == NULL) return NULL;
  if (n > 0) memcpy(out, p, (size_t)n);
  out[n] = '\0';
  if (len_out) *len_out = (size_t)n;
  return out;
}

void ob__queue_row_free(ob__queue_row_t* r) {
  free(r->queue);
  free(r->message_id);
  free(r->type);
  free(r->headers);
  free(r->body);
  free(r->source);
  free(r->group_key);
  memset(r, 0, sizeof *r);
}

/* Read the columns id, queue_name, message_id, type, headers, body,
** attempts, first_failed_at, created_at, source, group_key (in that order,
** OB__QUEUE_ROW_COLUMNS) into r. 0, or -1
** when out of memory (r is then freed). */
int ob__queue_row_read(sqlite3_stmt* st, ob__queue_row_t* r) {
  memset(r, 0, sizeof *r);
  r->rowid = sqlite3_column_int64(st, 0);
  r->queue = dup_col(st, 1, NULL);
  r->message_id = dup_col(st, 2, NULL);
  r->type = dup_col(st, 3, NULL);
  r->headers = dup_col(st, 4, NULL);
  r->body = dup_col(st, 5, &r->body_len);
  r->attempts = sqlite3_column_int(st, 6);
  r->first_failed_at = sqlite3_column_int64(st, 7);
  r->created_at = sqlite3_column_int64(st, 8);
  r->source = dup_col(st, 9, NULL);
  r->group_key = dup_col(st, 10, NULL);
  if (!r->queue || !r->message_id || !r->type || !r->body ||
      (sqlite3_column_type(st, 4) != SQLITE_NULL && !r->headers) ||
      (sqlite3_column_type(st, 9) != SQLITE_NULL && !r->source) ||
      (sqlite3_column_type(st, 10) != SQLITE_NULL && !r->group_key)) {
    ob__queue_row_free(r);
    return -1;
  }
  return 0;
}

/* Step a bound SELECT of queue rows (columns as ob__queue_row_read) into
** rows[] until done, then reset it. Returns the count, or a negative code
** with every row read so far freed. */
int ob__queue_rows_read(ob__db_t* db, sqlite3_stmt* st, ob__queue_row_t* rows,
                        int max, const char* what) {
  int n = 0, rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    OB__ASSERT(n < max);  /* the statement's LIMIT is max */
    if (ob__queue_row_read(st, &rows[n]) != 0) {
      rc = SQLITE_NOMEM;
      break;
    }
    n++;
  }
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  if (rc != SQLITE_DONE) {
    for (int i = 0; i < n; i++) ob__queue_row_free(&rows[i]);
    return ob__db_fail(db, rc, what);
  }
  return n;
}

int ob__sqlite_queue_claim_ready(ob__db_t* db, int64_t now, int max,
                          ob__queue_row_t* rows) {
  sqlite3_stmt* st = ob__db_stmt(
      db, OB__Q_CLAIM_READY,
      "SELECT " OB__QUEUE_ROW_COLUMNS " FROM queue"
      " WHERE available_at <= ?1 AND (lease_until IS NULL OR lease_until <= ?1)"
      " ORDER BY available_at, id LIMIT ?2");
  OB__ASSERT(max >= 1);  /* the batch size, checked by ob_open */
  if (st == NULL) return db->last_err;
  sqlite3_bind_int64(st, 1, now);
  sqlite3_bind_int(st, 2, max);
  return ob__queue_rows_read(db, st, rows, max, "read ready messages");
}

int ob__sqlite_queue_delete(ob__db_t* db, int64_t rowid) {
  sqlite3_stmt* st =
      ob__db_stmt(db, OB__Q_DELETE, "DELETE FROM queue WHERE id = ?1");
  if (st == NULL) return db->last_err;
  sqlite3_bind_int64(st, 1, rowid);
  int rc = ob__db_step_done(db, st, "ack");
  return rc < 0 ? rc : 0;
}

int ob__sqlite_queue_reschedule(ob__db_t* db, int64_t rowid, int attempts,
                         int64_t available_at, int64_t first_failed_at,
                         const char* last_error, int64_t now) {
  sqlite3_stmt* st = ob__db_stmt(
      db, OB__Q_RESCHEDULE,
      "UPDATE queue SET attempts = ?2, available_at = ?3, lease_until = NULL,"
      " first_failed_at = ?4, last_error = ?5, waiting_on = NULL,"
      " clock_ref = CASE WHEN ?3 > ?6 THEN ?6 END WHERE id = ?1");
  if (st == NULL) return db->last_err;
  sqlite3_bind_int64(st, 1, rowid);
  sqlite3_bind_int(st, 2, attempts);
  sqlite3_bind_int64(st, 3, available_at);
  sqlite3_bind_int64(st, 4, first_failed_at);
  sqlite3_bind_text(st, 5, last_error, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 6, now);
  int rc = ob__db_step_done(db, st, "reschedule");
  return rc < 0 ? rc : 0;
}

int ob__sqlite_queue_next_due(ob__db_t* db, int64_t* at) {
  int rc;
  sqlite3_stmt* st = ob__db_stmt(
      db, OB__Q_NEXT_DUE,
      /* Two index probes, not a scan: the earliest unleased row through
      ** queue_ready, and leased rows (rare) through queue_leased. A scan
      ** here made draining a backlog quadratic (3/4 of a batch's CPU with
      ** 2,000 rows queued). */
      "SELECT min(x) FROM (SELECT * FROM (SELECT available_at AS x FROM queue"
      " WHERE lease_until IS NULL ORDER BY available_at LIMIT 1) UNION ALL"
      " SELECT max(available_at, lease_until) FROM queue"
      " WHERE lease_until IS NOT NULL)");
  if (st == NULL) return db->last_err;
  rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    int null = sqlite3_column_type(st, 0) == SQLITE_NULL;
    *at = sqlite3_column_int64(st, 0);
    sqlite3_reset(st);
    return null ? OB_ENOTFOUND : 0;
  }
  sqlite3_reset(st);
  return ob__db_fail(db, rc, "next due message");
}

int ob__sqlite_queue_next_due_unwaited(ob__db_t* db, int64_t* at) {
  sqlite3_stmt* st = NULL;
  int rc, null;
  /* Off the hot path (an until-idle run deciding to stop): not cached. */
  rc = sqlite3_prepare_v2(db->db,
                          "SELECT min(max(available_at, coalesce(lease_until,"
                          " 0))) FROM queue WHERE waiting_on IS NULL"
                          /* held behind its group's first row */
                          " AND available_at < 9223372036854775807",
                          -1, &st, NULL);
  if (rc != SQLITE_OK) return ob__db_fail(db, rc, "next due message");
  rc = sqlite3_step(st);
  null = rc != SQLITE_ROW || sqlite3_column_type(st, 0) == SQLITE_NULL;
  if (rc == SQLITE_ROW) *at = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  if (rc != SQLITE_ROW) return ob__db_fail(db, rc, "next due message");
  return null ? OB_ENOTFOUND : 0;
}

/* ---- messages that wait for an effect ---------------------------------- */

int ob__sqlite_queue_wait(ob__db_t* db, int64_t rowid, const char* key,
                   int64_t available_at, int64_t now) {
  sqlite3_stmt* st = ob__db_stmt(
      db, OB__Q_WAIT,
      "UPDATE queue SET waiting_on = ?2, available_at = ?3, lease_until = NULL,"
      " clock_ref = CASE WHEN ?3 > ?4 THEN ?4 END WHERE id = ?1");
  if (st == NULL) return db->last_err;
  sqlite3_bind_int64(st, 1, rowid);
  sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 3, available_at);
  sqlite3_bind_int64(st, 4, now);
  int rc = ob__db_step_done(db, st, "wait for effect");
  return rc < 0 ? rc : 0;
}

int ob__sqlite_queue_insert_waiting(ob__db_t* db, const ob__queue_row_t* r,
                             const char* key, int64_t available_at,
                             int64_t now) {
  sqlite3_stmt* st = ob__db_stmt(
      db, OB__Q_INSERT_WAITING,
      "INSERT INTO queue(queue_name, message_id, type, headers, body,"
      " available_at, attempts, created_at, waiting_on, clock_ref, source,"
      " group_key) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9, CASE WHEN ?6 > ?10"
      " THEN ?10 END, ?11, ?12)");
  if (st == NULL) return db->last_err;
  sqlite3_bind_text(st, 1, r->queue, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 2, r->message_id, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 3, r->type, -1, SQLITE_STATIC);
  if (r->headers) sqlite3_bind_text(st, 4, r->headers, -1, SQLITE_STATIC);
  sqlite3_bind_blob64(st, 5, r->body_len ? r->body : "", r->body_len,
                      SQLITE_STATIC);
  sqlite3_bind_int64(st, 6, available_at);
  sqlite3_bind_int(st, 7, r->attempts);
  sqlite3_bind_int64(st, 8, r->created_at ? r->created_at : now);
  sqlite3_bind_text(st, 9, key, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 10, now);
  if (r->source) sqlite3_bind_text(st, 11, r->source, -1, SQLITE_STATIC);
  if (r->group_key) sqlite3_bind_text(st, 12, r->group_key, -1, SQLITE_STATIC);
  int rc = ob__db_step_done(db, st, "queue a message waiting for an effect");
  return rc < 0 ? rc : 0;
}

int ob__sqlite_queue_claim_waiting(ob__db_t* db, const char* key, int max,
                            ob__queue_row_t* rows) {
  sqlite3_stmt* st = ob__db_stmt(
      db, OB__Q_CLAIM_WAITING,
      "SELECT " OB__QUEUE_ROW_COLUMNS " FROM queue WHERE waiting_on = ?1"
      " ORDER BY id LIMIT ?2");
  if (st == NULL) return db->last_err;
  sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
  sqlite3_bind_int(st, 2, max);
  return ob__queue_rows_read(db, st, rows, max,
                             "messages waiting for an effect");
}
