/* SPDX-License-Identifier: Apache-2.0 */
/* Retention and giving space back: bounded deletes so the loop is never
** blocked for long and the WAL does not balloon (the window must outlast
** every way a message can come back: SQS retention, failure-store replays,
** offline days); and the clocks they are measured on.
**
** Every delete records in retention_swept the newest time it removed, in
** the same transaction. On SQLite a statement before the DELETE reads it
** from the same rows (one write lock, one snapshot); on PostgreSQL the mark
** is taken from the rows the DELETE returns, in the same statement, and
** SKIP LOCKED lets another process's sweep take other rows, not wait. On
** PostgreSQL whole days go first, by their partitions
** (ob__sql_retention_days). */
#include "storage/sql.h"

/* The upsert of retention_swept's column col to the larger value. */
#define MARK(col, select)                                                   \
  "INSERT INTO retention_swept(id, " col ") " select " ON CONFLICT (id) DO" \
  " UPDATE SET " col " = CASE WHEN excluded." col " > retention_swept." col \
  " THEN excluded." col " ELSE retention_swept." col " END"
/* PostgreSQL: the DELETE (its rows' time as t) feeding the mark. */
#define DELETE_MARKED(col, del)                                             \
  "WITH d AS (" del "), m AS (" MARK(col, "SELECT 1, max(t) FROM d HAVING"  \
  " count(*) > 0") " RETURNING 1) SELECT 1 FROM d"

/* One batch in a transaction of its own: mark_sqlite (SQLite only), then
** the DELETE of t, both with ?1..?2 from args. The rows deleted, or < 0. */
static int sweep_batch(ob__db_t* db, const ob__sql_text_t* t,
                       const char* mark_sqlite, int64_t a1, int64_t a2,
                       const char* what) {
  ob__sql_t s;
  int rc, n = 0;
  if ((rc = ob__db_begin(db)) < 0) return rc;
  for (int i = ob__sql_is_pg(db); i < 2 && n >= 0; i++) {
    if (i == 0)
      ob__sql_prepare(db, &s, OB__SQL_ONCE, mark_sqlite, what);
    else
      ob__sql_prepare2(db, &s, OB__SQL_ONCE, t, what);
    ob__sql_int(&s, 1, a1);
    ob__sql_int(&s, 2, a2);
    n = ob__sql_done(&s);
  }
  if (n < 0) {
    ob__db_rollback(db);
    return n;
  }
  return (rc = ob__db_commit(db)) < 0 ? rc : n;
}

/* Batches until one comes back short. */
static int sweep(ob__db_t* db, const ob__sql_text_t* t,
                 const char* mark_sqlite, int64_t cutoff, int batch,
                 int64_t* deleted) {
  for (;;) {
    int n = sweep_batch(db, t, mark_sqlite, cutoff, batch, "retention");
    if (n < 0) return n;
    *deleted += n;
    if (n < batch) return 0;
  }
}

int ob__retention_sweep(ob__db_t* db, int64_t cutoff, int batch,
                            int64_t* deleted) {
  /* processed_message is WITHOUT ROWID on SQLite: keys through the age
  ** index. On PostgreSQL what days left: the DEFAULT partition's rows (ctid
  ** is a row's address in one table, so the statement names the
  ** partition). */
  static const ob__sql_text_t processed = {
      "DELETE FROM processed_message WHERE (consumer_name, message_id) IN"
      " (SELECT consumer_name, message_id FROM processed_message WHERE"
      " processed_at < ?1 LIMIT ?2)",
      DELETE_MARKED("processed_before_ms",
                    "DELETE FROM processed_message_default WHERE ctid = ANY"
                    " (ARRAY(SELECT ctid FROM processed_message_default"
                    " WHERE processed_at < ?1 LIMIT ?2 FOR UPDATE SKIP"
                    " LOCKED)) RETURNING processed_at AS t")};
  /* Only published rows: an unpublished outbox row is never deleted. */
  static const ob__sql_text_t outbox = {
      "DELETE FROM outbox_event WHERE id IN (SELECT id FROM outbox_event"
      " WHERE published_at IS NOT NULL AND published_at < ?1 LIMIT ?2)",
      DELETE_MARKED("outbox_created_before_ms",
                    "DELETE FROM outbox_event_default WHERE ctid = ANY"
                    " (ARRAY(SELECT ctid FROM outbox_event_default WHERE"
                    " published_at IS NOT NULL AND published_at < ?1 LIMIT"
                    " ?2 FOR UPDATE SKIP LOCKED)) RETURNING created_at AS t")};
  /* All the rows the DELETE will remove (?2: none when there is no batch). */
  static const char mark_processed[] = MARK(
      "processed_before_ms",
      "SELECT 1, m FROM (SELECT max(processed_at) AS m FROM processed_message"
      " WHERE processed_at < ?1 AND ?2 > 0) WHERE m IS NOT NULL");
  static const char mark_outbox[] = MARK(
      "outbox_created_before_ms",
      "SELECT 1, m FROM (SELECT max(created_at) AS m FROM outbox_event WHERE"
      " published_at IS NOT NULL AND published_at < ?1 AND ?2 > 0) WHERE m"
      " IS NOT NULL");
  int rc;
  *deleted = 0;
  if (batch <= 0) batch = 1000;
  if ((rc = ob__sql_retention_days(db, 0, cutoff, deleted)) < 0 ||
      (rc = sweep(db, &processed, mark_processed, cutoff, batch, deleted)) <
          0 ||
      (rc = ob__sql_retention_days(db, 1, cutoff, deleted)) < 0)
    return rc;
  return sweep(db, &outbox, mark_outbox, cutoff, batch, deleted);
}

int ob__space_delete_published(ob__db_t* db, int batch,
                                   int64_t* deleted) {
  /* Oldest publication first (SQLite through outbox_published_age; the
  ** PostgreSQL schema has no such index: a sort of the published rows,
  ** under pressure only); an unpublished (or parked) row is never
  ** selected. */
  static const ob__sql_text_t sql = {
      "DELETE FROM outbox_event WHERE id IN (SELECT id FROM outbox_event"
      " WHERE published_at IS NOT NULL ORDER BY published_at LIMIT ?1)",
      DELETE_MARKED("outbox_created_before_ms",
                    "DELETE FROM outbox_event WHERE (id, created_at) IN"
                    " (SELECT id, created_at FROM outbox_event WHERE"
                    " published_at IS NOT NULL ORDER BY published_at LIMIT"
                    " ?1 FOR UPDATE SKIP LOCKED) RETURNING created_at AS t")};
  static const char mark[] = MARK(
      "outbox_created_before_ms",
      "SELECT 1, m FROM (SELECT max(created_at) AS m FROM (SELECT created_at"
      " FROM outbox_event WHERE published_at IS NOT NULL ORDER BY"
      " published_at LIMIT ?1)) WHERE m IS NOT NULL");
  int n;
  *deleted = 0;
  if (batch <= 0) return 0;
  n = sweep_batch(db, &sql, mark, batch, 0, "reclaim published events");
  if (n < 0) return n;
  *deleted = n;
  return 0;
}

/* ---- the clocks ---------------------------------------------------------- */

/* The one value of a one-row clock table: 0, OB_ENOTFOUND when none. */
static int load_clock(ob__db_t* db, const char* sql, const char* what,
                      int64_t* ms) {
  ob__sql_t s;
  ob__sql_prepare(db, &s, OB__SQL_ONCE, sql, what);
  return ob__sql_int1(&s, ms);
}

/* Record ms, never moving the clock back (another process's larger value
** wins). */
static int store_clock(ob__db_t* db, int id, const char* sql, int64_t ms,
                       const char* what) {
  ob__sql_t s;
  int rc;
  ob__sql_prepare(db, &s, id, sql, what);
  ob__sql_int(&s, 1, ms);
  rc = ob__sql_done(&s);
  return rc < 0 ? rc : 0;
}

int ob__engine_clock_load(ob__db_t* db, int64_t* ms) {
  return load_clock(db, "SELECT ms FROM engine_clock WHERE id = 1",
                    "engine clock", ms);
}

int ob__sql_engine_clock_record(ob__db_t* db) {
  return store_clock(db, OB__ENGINE_CLOCK_STORE,
                     "INSERT INTO engine_clock(id, ms) VALUES (1, ?1)"
                     " ON CONFLICT (id) DO UPDATE SET ms = CASE WHEN"
                     " excluded.ms > engine_clock.ms THEN excluded.ms ELSE"
                     " engine_clock.ms END",
                     db->clock_pending, "engine clock");
}

int ob__observed_clock_load(ob__db_t* db, int64_t* ms) {
  return load_clock(db, "SELECT observed_ms FROM retention_clock WHERE id = 1",
                    "observed clock", ms);
}

int ob__observed_clock_store(ob__db_t* db, int64_t ms) {
  return store_clock(db, OB__SQL_ONCE,
                     "INSERT INTO retention_clock(id, observed_ms) VALUES"
                     " (1, ?1) ON CONFLICT (id) DO UPDATE SET observed_ms ="
                     " CASE WHEN excluded.observed_ms >"
                     " retention_clock.observed_ms THEN excluded.observed_ms"
                     " ELSE retention_clock.observed_ms END",
                     ms, "observed clock");
}
