/* SPDX-License-Identifier: Apache-2.0 */
/* Statistics, the invariant check of the engine's own tables and the space
** in use: read-only queries, the same figures and checks on both dialects.
** What only one has: SQLite's PRAGMA integrity_check; on PostgreSQL the
** oldest open transaction (it holds back the xmin horizon, so nothing dead
** can be vacuumed and SKIP LOCKED scans walk ever more dead rows), the dead
** tuples of oncebox's tables, and the checks its partitioned tables cannot
** hold as keys. A module's figures and checks are its own (ob_add_stats,
** ob_add_check), run through ob_tx_exec. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "storage/sql.h"

/* A query of both dialects, or of one (the other's text NULL: skipped). */
#define BOTH(q) {q, q}
#define SQLITE_ONLY(q) {q, NULL}
#define PG_ONLY(q) {NULL, q}

/* One figure: the first column of the first row of its query (?1, where
** it has one, is now) into the int64_t field of ob_stats_t at off. */
typedef struct {
  ob__sql_text_t sql;
  size_t off;
} figure_t;

#define FIGURE(field, sql) {sql, offsetof(ob_stats_t, field)}
#define PARKED(cause)                                                       \
  BOTH("SELECT count(*) FROM effect WHERE parked_at IS NOT NULL AND"        \
       " park_cause = '" cause "' AND state IN ('pending','unknown')")

static const figure_t figures[] = {
    FIGURE(queue_ready, BOTH("SELECT count(*) FROM queue WHERE available_at"
                             " <= ?1 AND (lease_until IS NULL OR lease_until"
                             " <= ?1)")),
    FIGURE(queue_delayed,
           BOTH("SELECT count(*) FROM queue WHERE available_at > ?1")),
    FIGURE(queue_in_hand,
           BOTH("SELECT count(*) FROM queue WHERE lease_until > ?1")),
    FIGURE(failed, BOTH("SELECT count(*) FROM failed_message")),
    FIGURE(processed, BOTH("SELECT count(*) FROM processed_message")),
    FIGURE(outbox_unpublished, BOTH("SELECT count(*) FROM outbox_event"
                                    " WHERE published_at IS NULL")),
    FIGURE(outbox_published, BOTH("SELECT count(*) FROM outbox_event"
                                  " WHERE published_at IS NOT NULL")),
    /* The oldest unpublished row's created_at, made an age below. */
    FIGURE(outbox_oldest_unpublished_age_ms,
           BOTH("SELECT coalesce(min(created_at), 0) FROM outbox_event"
                " WHERE published_at IS NULL")),
    FIGURE(outbox_parked, BOTH("SELECT count(*) FROM outbox_event WHERE"
                               " parked_at IS NOT NULL AND published_at IS"
                               " NULL")),
    FIGURE(outbox_due, BOTH("SELECT count(*) FROM outbox_event WHERE"
                            " published_at IS NULL AND parked_at IS NULL AND"
                            " next_attempt_at <= ?1")),
    FIGURE(last_publish_at_ms, BOTH("SELECT coalesce(max(last_publish_at), 0)"
                                    " FROM relay_status")),
    FIGURE(effects_pending,
           BOTH("SELECT count(*) FROM effect WHERE state = 'pending'")),
    FIGURE(effects_unknown,
           BOTH("SELECT count(*) FROM effect WHERE state = 'unknown'")),
    FIGURE(effects_parked, BOTH("SELECT count(*) FROM effect WHERE parked_at"
                                " IS NOT NULL AND state IN ('pending',"
                                "'unknown')")),
    FIGURE(effects_confirmed,
           BOTH("SELECT count(*) FROM effect WHERE state = 'confirmed'")),
    FIGURE(effects_failed,
           BOTH("SELECT count(*) FROM effect WHERE state = 'failed'")),
    FIGURE(fence_claims, BOTH("SELECT count(*) FROM effect")),
    FIGURE(provider_2xx,
           BOTH("SELECT coalesce(sum(successes), 0) FROM effect")),
    FIGURE(provider_replays, BOTH("SELECT coalesce(sum(successes - 1), 0)"
                                  " FROM effect WHERE successes > 1")),
    FIGURE(effects_key_expired, PARKED("key-expired")),
    FIGURE(effects_conflict, PARKED("conflict")),
    FIGURE(effects_replayed_error, PARKED("replayed-error")),
    /* Every other session's open transaction on this database (ours is
    ** this snapshot's own). */
    FIGURE(db_oldest_xact_age_ms,
           PG_ONLY("SELECT coalesce(max(extract(epoch FROM clock_timestamp()"
                   " - xact_start) * 1000), 0)::bigint FROM pg_stat_activity"
                   " WHERE datname = current_database() AND xact_start IS"
                   " NOT NULL AND pid <> pg_backend_pid()")),
    FIGURE(db_dead_tuples,
           PG_ONLY("SELECT coalesce(sum(n_dead_tup), 0)::bigint FROM"
                   " pg_stat_user_tables WHERE schemaname = current_schema()"
                   " AND (relname IN ('queue', 'failed_message', 'effect',"
                   " 'relay_status', 'event_source') OR relname LIKE"
                   " 'processed\\_message%' OR relname LIKE"
                   " 'outbox\\_event%')")),
};

/* The latest relay_status row of a relay: online (-1 when none has run)
** and its last_error. */
static int relay_state(ob__db_t* db, ob_stats_t* st) {
  static const char sql[] =
      "SELECT online, last_error FROM relay_status WHERE name <> '"
      OB__SINK_STATUS_NAME "' ORDER BY updated_at DESC LIMIT 1";
  ob__sql_t s;
  int rc;
  st->relay_online = -1;
  ob__sql_prepare(db, &s, OB__SQL_ONCE, sql, "stats");
  if ((rc = ob__sql_step(&s)) > 0) {
    const char* e = ob__sql_col_text(&s, 1);
    st->relay_online = (int)ob__sql_col_int(&s, 0);
    if (e != NULL) snprintf(st->relay_error, sizeof st->relay_error, "%s", e);
  }
  ob__sql_finish(&s);
  return rc < 0 ? rc : 0;
}

/* In one read snapshot (the caller's transaction, or one of its own). */
int ob__stats(ob__db_t* db, int64_t now, ob_stats_t* st) {
  int rc, began;
  int64_t oldest;
  memset(st, 0, sizeof *st);
  if ((rc = ob__db_join_read(db, &began)) < 0) return rc;
  for (size_t i = 0; i < sizeof figures / sizeof figures[0] && rc >= 0; i++) {
    ob__sql_t s;
    ob__sql_prepare2(db, &s, OB__SQL_ONCE, &figures[i].sql, "stats");
    if (s.sql == NULL) continue;
    if (strchr(s.sql, '?') != NULL) ob__sql_int(&s, 1, now);
    rc = ob__sql_int1(&s, (int64_t*)((char*)st + figures[i].off));
    if (rc == OB_ENOTFOUND) rc = 0; /* an aggregate has a row; NULL is 0 */
  }
  if (rc >= 0) rc = relay_state(db, st);
  ob__db_end_joined_read(db, began);
  if (rc < 0) {
    memset(st, 0, sizeof *st);
    return rc;
  }
  oldest = st->outbox_oldest_unpublished_age_ms;
  st->outbox_oldest_unpublished_age_ms =
      oldest > 0 && now > oldest ? now - oldest : 0;
  st->db_postgresql = ob__sql_is_pg(db);
  return 0;
}

/* The engine's own invariants: one row per violation, column 0 its text,
** written against the documented tables so an operator can run them by
** hand. One text for both dialects, so a check cannot hold on one and be
** forgotten on the other. PRAGMA integrity_check has no counterpart on
** PostgreSQL (the server checksums pages if initdb --data-checksums;
** amcheck is the operator's tool). */
static const ob__sql_text_t checks[] = {
    SQLITE_ONLY("SELECT 'integrity_check: ' || integrity_check FROM"
                " pragma_integrity_check WHERE integrity_check <> 'ok'"),
    BOTH("SELECT 'outbox event ' || id || ' has attempt_count ' ||"
         " attempt_count FROM outbox_event WHERE attempt_count < 0"),
    /* The fence: a provider reference is confirmed once. */
    BOTH("SELECT 'provider reference ' || reference || ' is confirmed for '"
         " || count(*) || ' effects' FROM effect WHERE state = 'confirmed'"
         " AND reference IS NOT NULL GROUP BY reference HAVING count(*) > 1"),
    BOTH("SELECT 'effect ' || key || ' is ' || state || ' but has ' ||"
         " successes || ' provider successes and no outcome' FROM effect"
         " WHERE state = 'failed' AND successes > 0"),
    /* Offline limits (docs/offline.md): the running totals are the open
    ** effects' with an amount, per provider and currency. */
    BOTH("SELECT 'offline totals of ' || e.provider || ' ' || e.currency ||"
         " ': ' || coalesce(s.stored_count, 0) || ' stored for ' || count(*)"
         " || ' open effects, total ' || coalesce(s.stored_total, 0) ||"
         " ' for ' || sum(e.amount) FROM effect e LEFT JOIN effect_stored s"
         " ON s.provider = e.provider AND s.currency = e.currency WHERE"
         " e.state IN ('pending','unknown') AND e.currency IS NOT NULL"
         " GROUP BY e.provider, e.currency, s.stored_count, s.stored_total"
         " HAVING coalesce(s.stored_count, 0) <> count(*) OR"
         " coalesce(s.stored_total, 0) <> sum(e.amount)"),
    BOTH("SELECT 'offline totals of ' || provider || ' ' || currency || ': '"
         " || stored_count || ' stored, total ' || stored_total || ', for no"
         " open effect' FROM effect_stored s WHERE (stored_count <> 0 OR"
         " stored_total <> 0) AND NOT EXISTS (SELECT 1 FROM effect e WHERE"
         " e.provider = s.provider AND e.currency = s.currency AND e.state IN"
         " ('pending','unknown'))"),
    /* What the partitioned tables cannot hold as keys (pg_schema_sql.h). */
    PG_ONLY("SELECT 'dedup record ' || consumer_name || '/' || message_id ||"
            " ' is recorded ' || count(*) || ' times' FROM processed_message"
            " GROUP BY consumer_name, message_id, source_ref HAVING"
            " count(*) > 1"),
    PG_ONLY("SELECT 'outbox event ' || id || ' is stored ' || count(*) ||"
            " ' times' FROM outbox_event GROUP BY id HAVING count(*) > 1"),
};

/* The checker is checked too: a query that fails is an error, never
** silently "ok". */
int ob__check(ob__db_t* db, void (*cb)(void* arg, const char* v), void* arg) {
  int rc, violations = 0;
  for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++) {
    ob__sql_t s;
    ob__sql_prepare2(db, &s, OB__SQL_ONCE, &checks[i], "check");
    if (s.sql == NULL) continue;
    while ((rc = ob__sql_step(&s)) > 0) {
      const char* t = ob__sql_col_text(&s, 0);
      if (cb) cb(arg, t ? t : "(violation)");
      violations++;
    }
    ob__sql_finish(&s);
    if (rc < 0) return rc;
  }
  return violations;
}

/* What the disk-full policy reads. SQLite: the pages in use (free pages
** are reused before the file grows: they are not "used"). PostgreSQL: the
** database's size on the server's disk (`stats` reports it as db_bytes; a
** size cap is SQLite's, there space is the operator's). */
int ob__space_used_bytes(ob__db_t* db, int64_t* used) {
  int64_t pages = 0, free_pages = 0;
  ob__sql_t s;
  int rc;
  if (ob__sql_is_pg(db)) {
    ob__sql_prepare(db, &s, OB__D_USED_BYTES,
                    "SELECT pg_database_size(current_database())",
                    "space in use");
    return ob__sql_int1(&s, used);
  }
  /* Two PRAGMA statements prepared once and the page size kept (it changes
  ** only with ob_vacuum, whose db_repage forgets it): the table-valued
  ** form, pragma_page_count() joined with two others, parsed three virtual
  ** tables' declarations on every step, three quarters of an enqueue's
  ** instructions, since each new message is judged against the cap. Free
  ** pages are reused before the file grows: they are not "used". */
  if (db->page_size == 0 && (rc = ob__db_page_size(db, &db->page_size)) < 0)
    return rc;
  ob__sql_prepare(db, &s, OB__D_USED_BYTES, "PRAGMA page_count",
                  "space in use");
  if ((rc = ob__sql_int1(&s, &pages)) < 0) return rc;
  ob__sql_prepare(db, &s, OB__D_FREE_PAGES, "PRAGMA freelist_count",
                  "space in use");
  if ((rc = ob__sql_int1(&s, &free_pages)) < 0) return rc;
  *used = (pages - free_pages) * db->page_size;
  return 0;
}
