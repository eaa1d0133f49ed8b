/* SPDX-License-Identifier: Apache-2.0 */
/* Retention: bounded deletes so the loop is never blocked for long and the
** WAL does not balloon. The window must outlast every way a message can come
** back (SQS retention, failure-store replays, offline days). */
#include <sqlite3.h>

#include "storage/sqlite/sqlite_store.h"

/* mark_sql (may be NULL) runs first in each batch's transaction, with the
** same parameters: it records what the DELETE is about to remove. */
static int sweep_one(ob__db_t* db, const char* mark_sql, const char* sql,
                     int64_t cutoff, int batch, int64_t* deleted) {
  sqlite3_stmt* st = NULL;
  sqlite3_stmt* mark = NULL;
  int rc = sqlite3_prepare_v2(db->db, sql, -1, &st, NULL);
  if (rc != SQLITE_OK) return ob__db_fail(db, rc, "retention");
  if (mark_sql != NULL &&
      (rc = sqlite3_prepare_v2(db->db, mark_sql, -1, &mark, NULL)) !=
          SQLITE_OK) {
    sqlite3_finalize(st);
    return ob__db_fail(db, rc, "retention");
  }
  for (;;) {
    int n = 0;
    rc = ob__sqlite_db_begin(db);
    if (rc < 0) break;
    if (mark != NULL) {
      sqlite3_bind_int64(mark, 1, cutoff);
      sqlite3_bind_int(mark, 2, batch);
      n = ob__db_step_done(db, mark, "retention");
    }
    if (n >= 0) {
      sqlite3_bind_int64(st, 1, cutoff);
      sqlite3_bind_int(st, 2, batch);
      n = ob__db_step_done(db, st, "retention");
    }
    if (n < 0) {
      rc = n;
      ob__sqlite_db_rollback(db);
      break;
    }
    rc = ob__sqlite_db_commit(db);
    if (rc < 0) break;
    *deleted += n;
    if (n < batch) break;
  }
  sqlite3_finalize(st);
  sqlite3_finalize(mark);
  return rc;
}

int ob__sqlite_retention_sweep(ob__db_t* db, int64_t cutoff, int batch,
                        int64_t* deleted) {
  int rc;
  *deleted = 0;
  if (batch <= 0) batch = 1000;
  /* processed_message is WITHOUT ROWID: select keys through the age index. */
  rc = sweep_one(db,
                 "INSERT INTO retention_swept(id, processed_before_ms)"
                 " SELECT 1, m FROM (SELECT max(processed_at) AS m FROM"
                 " processed_message WHERE processed_at < ?1 AND ?2 > 0)"
                 " WHERE m IS NOT NULL ON CONFLICT(id) DO UPDATE SET"
                 " processed_before_ms = max(processed_before_ms,"
                 " excluded.processed_before_ms)",
                 "DELETE FROM processed_message WHERE (consumer_name,"
                 " message_id) IN (SELECT consumer_name, message_id FROM"
                 " processed_message WHERE processed_at < ?1 LIMIT ?2)",
                 cutoff, batch, deleted);
  if (rc < 0) return rc;
  /* Only published rows: an unpublished outbox row is never deleted. */
  return sweep_one(db,
                   /* All the rows this sweep will delete (?2 unused). */
                   "INSERT INTO retention_swept(id, outbox_created_before_ms)"
                   " SELECT 1, m FROM (SELECT max(created_at) AS m FROM"
                   " outbox_event WHERE published_at IS NOT NULL AND"
                   " published_at < ?1 AND ?2 > 0) WHERE m IS NOT NULL"
                   " ON CONFLICT(id) DO UPDATE SET outbox_created_before_ms ="
                   " max(outbox_created_before_ms,"
                   " excluded.outbox_created_before_ms)",
                   "DELETE FROM outbox_event WHERE id IN (SELECT id FROM"
                   " outbox_event WHERE published_at IS NOT NULL AND"
                   " published_at < ?1 LIMIT ?2)",
                   cutoff, batch, deleted);
}

/* The one value of a one-row clock table: 0, OB_ENOTFOUND when no row. */
static int load_clock(ob__db_t* db, const char* sql, const char* what,
                      int64_t* ms) {
  sqlite3_stmt* st = NULL;
  int rc = sqlite3_prepare_v2(db->db, sql, -1, &st, NULL);
  if (rc != SQLITE_OK) return ob__db_fail(db, rc, what);
  rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) *ms = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  if (rc == SQLITE_ROW) return 0;
  return rc == SQLITE_DONE ? OB_ENOTFOUND : ob__db_fail(db, rc, what);
}

int ob__sqlite_engine_clock_load(ob__db_t* db, int64_t* ms) {
  return load_clock(db, "SELECT ms FROM engine_clock WHERE id = 1",
                    "engine clock", ms);
}

/* In the open write transaction, before its COMMIT (db.c). */
int ob__sqlite_engine_clock_record(ob__db_t* db) {
  sqlite3_stmt* st = ob__db_stmt(
      db, OB__ENGINE_CLOCK_STORE,
      "INSERT INTO engine_clock(id, ms) VALUES (1, ?1)"
      " ON CONFLICT(id) DO UPDATE SET ms = max(ms, excluded.ms)");
  int rc;
  if (st == NULL) return db->last_err;
  sqlite3_bind_int64(st, 1, db->clock_pending);
  rc = ob__db_step_done(db, st, "engine clock");
  return rc < 0 ? rc : 0;
}

int ob__sqlite_observed_clock_load(ob__db_t* db, int64_t* ms) {
  return load_clock(db, "SELECT observed_ms FROM retention_clock WHERE id = 1",
                    "observed clock", ms);
}

int ob__sqlite_observed_clock_store(ob__db_t* db, int64_t ms) {
  sqlite3_stmt* st = NULL;
  int n, rc = sqlite3_prepare_v2(
      db->db,
      "INSERT INTO retention_clock(id, observed_ms) VALUES (1, ?1)"
      " ON CONFLICT(id) DO UPDATE SET observed_ms ="
      " max(observed_ms, excluded.observed_ms)",
      -1, &st, NULL);
  if (rc != SQLITE_OK) return ob__db_fail(db, rc, "observed clock");
  sqlite3_bind_int64(st, 1, ms);
  n = ob__db_step_done(db, st, "observed clock");
  sqlite3_finalize(st);
  return n < 0 ? n : 0;
}
