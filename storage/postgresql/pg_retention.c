/* SPDX-License-Identifier: Apache-2.0 */
/*
** Retention's whole days on PostgreSQL (storage/retention.c sweeps the
** rest): the same rows go as on SQLite, dedup records processed before
** cutoff and outbox rows published before it, but by whole daily
** partitions (pg_schema.c's processed_message_pYYYYMMDD,
** outbox_event_pYYYYMMDD) wherever a day is entirely older than cutoff: a DROP, no long DELETE and no dead tuples
** for autovacuum to chase (docs/postgresql.md). Only the DEFAULT
** partitions, where rows outside the partitions made ahead land, are
** deleted row by row, in short batches as on SQLite (retention.c).
**
** So a row is kept longer than on SQLite, never shorter: a day's partition
** goes once its upper bound has passed cutoff (up to a day late), and an
** outbox day goes only once every row of it is published before cutoff (a
** parked or unpublished event keeps its whole day).
*/
#include <stdio.h>

#include "storage/postgresql/pg_int.h"

/* The longest a DROP waits for the tables' lock. It needs ACCESS EXCLUSIVE
** on the parent, and while it waits every new statement on the table
** queues behind it: a short wait, then OB_EBUSY and the next sweep. */
#define DROP_LOCK_MS 1000

/* The partitions of table (a fixed name of ours) whose upper bound is at or
** before cutoff, oldest first: oid, lower bound, upper bound and the DROP
** statement. The bounds are read from the catalog's text of the bound
** ("FOR VALUES FROM ('lo') TO ('hi')"); DEFAULT does not match. */
static PGresult* old_partitions(ob__db_t* db, const char* table,
                                int64_t cutoff) {
  static const char sql[] =
      "SELECT c.oid, b[1]::bigint, b[2]::bigint,"
      " format('DROP TABLE IF EXISTS %I.%I', n.nspname, c.relname)"
      " FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
      " JOIN pg_namespace n ON n.oid = c.relnamespace,"
      " regexp_match(pg_get_expr(c.relpartbound, c.oid),"
      " '^FOR VALUES FROM \\(''(-?[0-9]+)''\\) TO \\(''(-?[0-9]+)''\\)$')"
      " AS b WHERE i.inhparent = $1::text::regclass"
      " AND b[2]::bigint <= $2::bigint ORDER BY 2";
  ob__pg_params_t p;
  ob__pg_params_init(&p);
  ob__pg_p_text(&p, table);
  ob__pg_p_int(&p, cutoff);
  return ob__pg_run(db, sql, &p, "retention: list partitions");
}

/* In a transaction of its own: bound the lock wait, lock the parent (the
** order every DROP of a partition takes: parent first), make sure the
** partition is still there (another process's sweep may have dropped it)
** and, for the outbox, still holds no unpublished row (one may have come
** in since the count: a new row is unpublished, and the partial index
** finds it at once). Then record the sweep and drop. *dropped = 1 when it
** went, 0 when it stays. */
static int drop_one(ob__db_t* db, int outbox, const char* oid, int64_t lo,
                    int64_t hi, const char* drop, int64_t max_time,
                    int* dropped) {
  static const char timeout[] =
      "SELECT set_config('lock_timeout', $1::text, true)";
  static const char lock_pm[] =
      "LOCK TABLE ONLY processed_message IN ACCESS EXCLUSIVE MODE";
  static const char lock_ob[] =
      "LOCK TABLE ONLY outbox_event IN ACCESS EXCLUSIVE MODE";
  static const char still_pm[] =
      "SELECT count(*) FROM pg_class WHERE oid = $1::oid";
  static const char still_ob[] =
      "SELECT count(*) FROM pg_class WHERE oid = $1::oid AND NOT EXISTS"
      " (SELECT 1 FROM outbox_event WHERE created_at >= $2::bigint"
      " AND created_at < $3::bigint AND published_at IS NULL)";
  static const char mark_pm[] =
      "INSERT INTO retention_swept(id, processed_before_ms)"
      " VALUES (1, $1::bigint) ON CONFLICT (id) DO UPDATE SET"
      " processed_before_ms = GREATEST(retention_swept.processed_before_ms,"
      " EXCLUDED.processed_before_ms)";
  static const char mark_ob[] =
      "INSERT INTO retention_swept(id, outbox_created_before_ms)"
      " VALUES (1, $1::bigint) ON CONFLICT (id) DO UPDATE SET"
      " outbox_created_before_ms ="
      " GREATEST(retention_swept.outbox_created_before_ms,"
      " EXCLUDED.outbox_created_before_ms)";
  ob__pg_params_t p;
  char ms[24];
  int64_t there = 0;
  int rc, wait = DROP_LOCK_MS;
  *dropped = 0;
  if (db->pg->busy_timeout_ms > 0 && db->pg->busy_timeout_ms < wait)
    wait = db->pg->busy_timeout_ms;
  snprintf(ms, sizeof ms, "%d", wait);
  rc = ob__pg_db_begin(db);
  if (rc < 0) return rc;
  ob__pg_params_init(&p);
  ob__pg_p_text(&p, ms);
  rc = ob__pg_run_done(db, timeout, &p, "retention: lock timeout");
  if (rc >= 0)
    rc = ob__pg_run_done(db, outbox ? lock_ob : lock_pm, NULL,
                         "retention: lock");
  if (rc >= 0) {
    ob__pg_params_init(&p);
    ob__pg_p_text(&p, oid);
    if (outbox) {
      ob__pg_p_int(&p, lo);
      ob__pg_p_int(&p, hi);
    }
    rc = ob__pg_run_int(db, outbox ? still_ob : still_pm, &p,
                        "retention: partition", &there);
  }
  if (rc >= 0 && there == 0) {
    /* Gone, or an unpublished row came in: it stays. */
    ob__pg_db_rollback(db);
    return 0;
  }
  /* Nothing to record for an empty day: the mark is of rows deleted. */
  if (rc >= 0 && max_time >= 0) {
    ob__pg_params_init(&p);
    ob__pg_p_int(&p, max_time);
    rc = ob__pg_run_done(db, outbox ? mark_ob : mark_pm, &p,
                         "retention: mark");
  }
  /* DDL takes no parameters: the statement was built by format('%I') from
  ** the catalog's names, never from outside input. */
  if (rc >= 0) rc = ob__pg_exec(db, drop, "retention: drop partition");
  if (rc < 0) {
    ob__pg_db_rollback(db);
    return rc;
  }
  rc = ob__pg_db_commit(db);
  if (rc < 0) return rc;
  *dropped = 1;
  return 0;
}

/* Drop the days of one table entirely before cutoff; their rows (counted
** first: reltuples is an estimate, and the table goes anyway) into
** *deleted. The count is taken before the lock, so the table is not held
** for a full scan; the outbox's safety check is repeated under the lock. */
static int drop_partitions(ob__db_t* db, int outbox, int64_t cutoff,
                           int64_t* deleted) {
  /* Every row of a dedup day is older than cutoff. */
  static const char count_pm[] =
      "SELECT count(*), coalesce(max(processed_at), -1), true"
      " FROM processed_message"
      " WHERE processed_at >= $1::bigint AND processed_at < $2::bigint";
  /* An outbox day goes when SQLite would have deleted every row of it:
  ** all published, and published before cutoff. */
  static const char count_ob[] =
      "SELECT count(*), coalesce(max(created_at), -1),"
      " coalesce(bool_and(published_at IS NOT NULL AND"
      " published_at < $3::bigint), true)"
      " FROM outbox_event"
      " WHERE created_at >= $1::bigint AND created_at < $2::bigint";
  PGresult* parts;
  int rc = 0;
  parts = old_partitions(db, outbox ? "outbox_event" : "processed_message",
                         cutoff);
  if (parts == NULL) return db->last_err ? db->last_err : OB_EDB;
  for (int i = 0; i < PQntuples(parts) && rc >= 0; i++) {
    int64_t lo = ob__pg_int(parts, i, 1), hi = ob__pg_int(parts, i, 2);
    ob__pg_params_t p;
    PGresult* c;
    int64_t n, max_time;
    int all, dropped = 0;
    ob__pg_params_init(&p);
    ob__pg_p_int(&p, lo);
    ob__pg_p_int(&p, hi);
    if (outbox) ob__pg_p_int(&p, cutoff);
    c = ob__pg_run(db, outbox ? count_ob : count_pm, &p,
                   "retention: count partition");
    if (c == NULL) {
      rc = db->last_err ? db->last_err : OB_EDB;
      break;
    }
    n = ob__pg_int(c, 0, 0);
    max_time = ob__pg_int(c, 0, 1);
    all = PQgetvalue(c, 0, 2)[0] == 't';
    PQclear(c);
    /* An outbox day with rows still to publish (or published inside the
    ** window) stays whole: its rows are not deleted one by one. */
    if (!all) continue;
    rc = drop_one(db, outbox, PQgetvalue(parts, i, 0), lo, hi,
                  PQgetvalue(parts, i, 3), n > 0 ? max_time : -1, &dropped);
    if (rc >= 0 && dropped) *deleted += n;
  }
  PQclear(parts);
  return rc < 0 ? rc : 0;
}

int ob__pg_retention_days(ob__db_t* db, int outbox, int64_t cutoff,
                          int64_t* deleted) {
  int64_t now = cutoff, observed = 0;
  int rc;
  /* The partitions are made at open; a process that runs for days makes
  ** the coming days' here, from the engine's observed clock (cutoff is
  ** that clock less the window), so its rows do not pile into DEFAULT. */
  if (!outbox) {
    rc = ob__observed_clock_load(db, &observed);
    if (rc < 0 && rc != OB_ENOTFOUND) return rc;
    if (rc == 0 && observed > now) now = observed;
    rc = ob__pg_partitions_ensure(db, now, OB__PG_PARTITIONS_AHEAD);
    if (rc < 0) return rc;
  }
  return drop_partitions(db, outbox, cutoff, deleted);
}
