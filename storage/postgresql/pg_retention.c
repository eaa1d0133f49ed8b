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
      "SELECT set_config('lock_timeout', ?1, true)";
  static const char lock_pm[] =
      "LOCK TABLE ONLY processed_message IN ACCESS EXCLUSIVE MODE";
  static const char lock_ob[] =
      "LOCK TABLE ONLY outbox_event IN ACCESS EXCLUSIVE MODE";
  static const char still_pm[] =
      "SELECT count(*) FROM pg_class WHERE oid = ?1::oid";
  static const char still_ob[] =
      "SELECT count(*) FROM pg_class WHERE oid = ?1::oid AND NOT EXISTS"
      " (SELECT 1 FROM outbox_event WHERE created_at >= ?2"
      " AND created_at < ?3 AND published_at IS NULL)";
  static const char mark_pm[] =
      "INSERT INTO retention_swept(id, processed_before_ms)"
      " VALUES (1, ?1) ON CONFLICT (id) DO UPDATE SET"
      " processed_before_ms = GREATEST(retention_swept.processed_before_ms,"
      " EXCLUDED.processed_before_ms)";
  static const char mark_ob[] =
      "INSERT INTO retention_swept(id, outbox_created_before_ms)"
      " VALUES (1, ?1) ON CONFLICT (id) DO UPDATE SET"
      " outbox_created_before_ms ="
      " GREATEST(retention_swept.outbox_created_before_ms,"
      " EXCLUDED.outbox_created_before_ms)";
  ob__sql_t s;
  char ms[24];
  int64_t there = 0;
  int rc, wait = DROP_LOCK_MS;
  *dropped = 0;
  if (db->pg->busy_timeout_ms > 0 && db->pg->busy_timeout_ms < wait)
    wait = db->pg->busy_timeout_ms;
  snprintf(ms, sizeof ms, "%d", wait);
  rc = ob__pg_db_begin(db);
  if (rc < 0) return rc;
  ob__sql_prepare(db, &s, OB__SQL_ONCE, timeout, "retention: lock timeout");
  ob__sql_text(&s, 1, ms);
  rc = ob__sql_done(&s);
  if (rc >= 0)
    rc = ob__sql_run(db, OB__SQL_ONCE, outbox ? lock_ob : lock_pm,
                     "retention: lock");
  if (rc >= 0) {
    ob__sql_prepare(db, &s, OB__SQL_ONCE, outbox ? still_ob : still_pm,
                    "retention: partition");
    ob__sql_text(&s, 1, oid);
    if (outbox) {
      ob__sql_int(&s, 2, lo);
      ob__sql_int(&s, 3, hi);
    }
    rc = ob__sql_int1(&s, &there);
  }
  if (rc >= 0 && there == 0) {
    /* Gone, or an unpublished row came in: it stays. */
    ob__pg_db_rollback(db);
    return 0;
  }
  /* Nothing to record for an empty day: the mark is of rows deleted. */
  if (rc >= 0 && max_time >= 0) {
    ob__sql_prepare(db, &s, OB__SQL_ONCE, outbox ? mark_ob : mark_pm,
                    "retention: mark");
    ob__sql_int(&s, 1, max_time);
    rc = ob__sql_done(&s);
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
  /* The partitions of the table (?1, a fixed name of ours) whose upper
  ** bound is at or before cutoff, oldest first: oid, lower bound, upper
  ** bound and the DROP statement. The bounds are read from the catalog's
  ** text of the bound ("FOR VALUES FROM ('lo') TO ('hi')"); DEFAULT does
  ** not match. */
  static const char list[] =
      "SELECT c.oid, b[1]::bigint, b[2]::bigint,"
      " format('DROP TABLE IF EXISTS %I.%I', n.nspname, c.relname)"
      " FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
      " JOIN pg_namespace n ON n.oid = c.relnamespace,"
      " regexp_match(pg_get_expr(c.relpartbound, c.oid),"
      " '^FOR VALUES FROM \\(''(-?[0-9]+)''\\) TO \\(''(-?[0-9]+)''\\)$')"
      " AS b WHERE i.inhparent = ?1::regclass"
      " AND b[2]::bigint <= ?2 ORDER BY 2";
  /* Every row of a dedup day is older than cutoff. */
  static const char count_pm[] =
      "SELECT count(*), coalesce(max(processed_at), -1), 1"
      " FROM processed_message"
      " WHERE processed_at >= ?1 AND processed_at < ?2";
  /* An outbox day goes when SQLite would have deleted every row of it:
  ** all published, and published before cutoff. */
  static const char count_ob[] =
      "SELECT count(*), coalesce(max(created_at), -1),"
      " coalesce(bool_and(published_at IS NOT NULL AND"
      " published_at < ?3), true)::int"
      " FROM outbox_event"
      " WHERE created_at >= ?1 AND created_at < ?2";
  ob__sql_t parts;
  int rc;
  ob__sql_prepare(db, &parts, OB__SQL_ONCE, list,
                  "retention: list partitions");
  ob__sql_text(&parts, 1, outbox ? "outbox_event" : "processed_message");
  ob__sql_int(&parts, 2, cutoff);
  /* All the rows are fetched at the first step: the drops in between are
  ** free to run statements of their own. */
  while ((rc = ob__sql_step(&parts)) > 0) {
    int64_t lo = ob__sql_col_int(&parts, 1), hi = ob__sql_col_int(&parts, 2);
    int64_t n = 0, max_time = -1;
    int all = 0, dropped = 0;
    ob__sql_t c;
    ob__sql_prepare(db, &c, OB__SQL_ONCE, outbox ? count_ob : count_pm,
                    "retention: count partition");
    ob__sql_int(&c, 1, lo);
    ob__sql_int(&c, 2, hi);
    if (outbox) ob__sql_int(&c, 3, cutoff);
    if ((rc = ob__sql_step(&c)) > 0) {
      n = ob__sql_col_int(&c, 0);
      max_time = ob__sql_col_int(&c, 1);
      all = ob__sql_col_int(&c, 2) != 0;
    }
    ob__sql_finish(&c);
    if (rc < 0) break;
    /* An outbox day with rows still to publish (or published inside the
    ** window) stays whole: its rows are not deleted one by one. */
    if (!all) continue;
    rc = drop_one(db, outbox, ob__sql_col_text(&parts, 0), lo, hi,
                  ob__sql_col_text(&parts, 3), n > 0 ? max_time : -1,
                  &dropped);
    if (rc < 0) break;
    if (dropped) *deleted += n;
  }
  ob__sql_finish(&parts);
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
