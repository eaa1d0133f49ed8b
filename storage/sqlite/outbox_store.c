/* SPDX-License-Identifier: Apache-2.0 */
/* Outbox rows: written in the handling transaction, read by sinks/relays. */
#include <sqlite3.h>

#include "storage/sqlite/sqlite_store.h"

int ob__sqlite_outbox_insert(ob__db_t* db, const char* id, const char* causation_id,
                      const char* event_type, const char* aggregate_id,
                      const char* payload, size_t payload_len,
                      const char* traceparent, const char* tracestate,
                      int64_t now, int64_t wall_behind_ms) {
  sqlite3_stmt* st = ob__db_stmt(
      db, OB__O_INSERT,
      "INSERT INTO outbox_event(id, causation_id, event_type, aggregate_id,"
      " payload, created_at, next_attempt_at, traceparent, tracestate,"
      " wall_behind_ms) VALUES (?1,?2,?3,?4,?5,?6,?6,?7,?8,?9)");
  if (st == NULL) return db->last_err;
  sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 2, causation_id, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 3, event_type, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 4, aggregate_id, -1, SQLITE_STATIC);
  sqlite3_bind_text64(st, 5, payload, payload_len, SQLITE_STATIC, SQLITE_UTF8);
  sqlite3_bind_int64(st, 6, now);
  if (traceparent) sqlite3_bind_text(st, 7, traceparent, -1, SQLITE_STATIC);
  if (tracestate) sqlite3_bind_text(st, 8, tracestate, -1, SQLITE_STATIC);
  if (wall_behind_ms > 0) sqlite3_bind_int64(st, 9, wall_behind_ms);
  else sqlite3_bind_null(st, 9);
  int rc = ob__db_step_done(db, st, "outbox insert");
  return rc < 0 ? rc : 0;
}

int ob__sqlite_outbox_due(ob__db_t* db, int64_t now, size_t max,
                   int (*cb)(void* arg, const ob_event_t* ev), void* arg) {
  int rc, n = 0;
  sqlite3_stmt* st = ob__db_stmt(
      db, OB__O_DUE,
      "SELECT id, causation_id, event_type, aggregate_id, payload, created_at,"
      " attempt_count, traceparent, tracestate, coalesce(wall_behind_ms, 0)"
      " FROM outbox_event WHERE published_at IS NULL AND parked_at IS NULL"
      " AND next_attempt_at <= ?1 ORDER BY created_at, id LIMIT ?2");
  if (st == NULL) return db->last_err;
  sqlite3_bind_int64(st, 1, now);
  sqlite3_bind_int64(st, 2, (sqlite3_int64)max);
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    ob_event_t ev;
    ev.id = (const char*)sqlite3_column_text(st, 0);
    ev.causation_id = (const char*)sqlite3_column_text(st, 1);
    ev.event_type = (const char*)sqlite3_column_text(st, 2);
    ev.aggregate_id = (const char*)sqlite3_column_text(st, 3);
    ev.payload = (const char*)sqlite3_column_text(st, 4);
    ev.payload_len = (size_t)sqlite3_column_bytes(st, 4);
    ev.created_at_ms = sqlite3_column_int64(st, 5);
    ev.attempt_count = sqlite3_column_int(st, 6);
    ev.traceparent = (const char*)sqlite3_column_text(st, 7);
    ev.tracestate = (const char*)sqlite3_column_text(st, 8);
    ev.wall_behind_ms = sqlite3_column_int64(st, 9);
    if (!ev.id || !ev.causation_id || !ev.event_type || !ev.aggregate_id ||
        !ev.payload) {
      rc = SQLITE_NOMEM;
      break;
    }
    n++;
    if (cb(arg, &ev) != 0) {
      rc = SQLITE_DONE;
      break;
    }
  }
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  if (rc != SQLITE_DONE) return ob__db_fail(db, rc, "outbox read");
  return n;
}

int ob__sqlite_outbox_mark_published(ob__db_t* db, const char* id, int64_t now) {
  sqlite3_stmt* st = ob__db_stmt(
      db, OB__O_MARK_PUBLISHED,
      "UPDATE outbox_event SET published_at = ?2, claim_token = NULL,"
      " claim_until = NULL, clock_ref = NULL"
      " WHERE id = ?1 AND published_at IS NULL");
  if (st == NULL) return db->last_err;
  sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 2, now);
  int rc = ob__db_step_done(db, st, "outbox mark published");
  return rc < 0 ? rc : 0;
}

int ob__sqlite_outbox_mark_failed(ob__db_t* db, const char* id,
                           int64_t next_attempt_at, const char* error,
                           int64_t now) {
  sqlite3_stmt* st = ob__db_stmt(
      db, OB__O_MARK_FAILED,
      "UPDATE outbox_event SET attempt_count = attempt_count + 1,"
      " next_attempt_at = ?2, last_error = ?3, claim_token = NULL,"
      " claim_until = NULL, clock_ref = CASE WHEN ?2 > ?4 THEN ?4 END"
      " WHERE id = ?1 AND published_at IS NULL");
  if (st == NULL) return db->last_err;
  sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 2, next_attempt_at);
  sqlite3_bind_text(st, 3, error, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 4, now);
  int rc = ob__db_step_done(db, st, "outbox mark failed");
  return rc < 0 ? rc : 0;
}
