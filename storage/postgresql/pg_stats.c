/* SPDX-License-Identifier: Apache-2.0 */
/* Statistics and invariant checks on PostgreSQL: the same figures and
** checks as on SQLite (storage/sqlite/stats.c), in one read
** snapshot, plus what a busy PostgreSQL needs watched: the oldest open
** transaction (it holds back the xmin horizon, so nothing dead can be
** vacuumed and SKIP LOCKED scans walk ever more dead rows) and the dead
** tuples of oncebox's tables. */
#include <stdio.h>
#include <string.h>

#include "storage/check_sql.h"
#include "storage/postgresql/pg_int.h"

/* Queries with $1 = now (bound even where unused: one shape for all). */
static int scalar(ob__db_t* db, const char* sql, int64_t now, int64_t* out) {
  ob__pg_params_t p;
  int rc;
  ob__pg_params_init(&p);
  ob__pg_p_int(&p, now);
  rc = ob__pg_run_int(db, sql, &p, "stats", out);
  if (rc == OB_ENOTFOUND) {
    *out = 0;
    return 0;
  }
  return rc;
}

#define NOW_UNUSED " WHERE $1::bigint IS NOT NULL"

static const char* const figures[] = {
    "SELECT count(*) FROM queue WHERE available_at <= $1::bigint"
    " AND (lease_until IS NULL OR lease_until <= $1::bigint)",
    "SELECT count(*) FROM queue WHERE available_at > $1::bigint",
    "SELECT count(*) FROM queue WHERE lease_until > $1::bigint",
    "SELECT count(*) FROM failed_message" NOW_UNUSED,
    "SELECT count(*) FROM processed_message" NOW_UNUSED,
    "SELECT count(*) FROM outbox_event WHERE published_at IS NULL"
    " AND $1::bigint IS NOT NULL",
    "SELECT count(*) FROM outbox_event WHERE published_at IS NOT NULL"
    " AND $1::bigint IS NOT NULL",
    "SELECT coalesce(min(created_at), 0) FROM outbox_event WHERE"
    " published_at IS NULL AND $1::bigint IS NOT NULL",
    "SELECT count(*) FROM outbox_event WHERE parked_at IS NOT NULL AND"
    " published_at IS NULL AND $1::bigint IS NOT NULL",
    "SELECT count(*) FROM outbox_event WHERE published_at IS NULL AND"
    " parked_at IS NULL AND next_attempt_at <= $1::bigint",
    "SELECT coalesce(max(last_publish_at), 0) FROM relay_status" NOW_UNUSED,
    "SELECT count(*) FROM effect WHERE state = 'pending'"
    " AND $1::bigint IS NOT NULL",
    "SELECT count(*) FROM effect WHERE state = 'unknown'"
    " AND $1::bigint IS NOT NULL",
    "SELECT count(*) FROM effect WHERE parked_at IS NOT NULL AND state"
    " IN ('pending','unknown') AND $1::bigint IS NOT NULL",
    "SELECT count(*) FROM effect WHERE state = 'confirmed'"
    " AND $1::bigint IS NOT NULL",
    "SELECT count(*) FROM effect WHERE state = 'failed'"
    " AND $1::bigint IS NOT NULL",
    "SELECT count(*) FROM effect" NOW_UNUSED,
    "SELECT coalesce(sum(successes), 0) FROM effect" NOW_UNUSED,
    "SELECT coalesce(sum(successes - 1), 0) FROM effect WHERE successes > 1"
    " AND $1::bigint IS NOT NULL",
    "SELECT count(*) FROM effect WHERE parked_at IS NOT NULL AND"
    " park_cause = 'key-expired' AND state IN ('pending','unknown')"
    " AND $1::bigint IS NOT NULL",
    "SELECT count(*) FROM effect WHERE parked_at IS NOT NULL AND"
    " park_cause = 'conflict' AND state IN ('pending','unknown')"
    " AND $1::bigint IS NOT NULL",
    "SELECT count(*) FROM effect WHERE parked_at IS NOT NULL AND"
    " park_cause = 'replayed-error' AND state IN ('pending','unknown')"
    " AND $1::bigint IS NOT NULL",
    /* Every other session's open transaction on this database (ours is
    ** this snapshot's own). */
    "SELECT coalesce(max(extract(epoch FROM clock_timestamp() - xact_start)"
    " * 1000), 0)::bigint FROM pg_stat_activity WHERE datname ="
    " current_database() AND xact_start IS NOT NULL AND pid <>"
    " pg_backend_pid() AND $1::bigint IS NOT NULL",
    "SELECT coalesce(sum(n_dead_tup), 0)::bigint FROM pg_stat_user_tables"
    " WHERE schemaname = current_schema() AND (relname IN ('queue',"
    " 'failed_message', 'effect', 'relay_status', 'event_source')"
    " OR relname LIKE 'processed\\_message%'"
    " OR relname LIKE 'outbox\\_event%') AND $1::bigint IS NOT NULL",
};

int ob__pg_stats(ob__db_t* db, int64_t now, ob_stats_t* s) {
  static const char relay[] =
      "SELECT online, last_error FROM relay_status WHERE name <> $1::text"
      " ORDER BY updated_at DESC LIMIT 1";
  int64_t oldest = 0;
  int64_t* out[] = {
      &s->queue_ready, &s->queue_delayed, &s->queue_in_hand, &s->failed,
      &s->processed, &s->outbox_unpublished, &s->outbox_published, &oldest,
      &s->outbox_parked, &s->outbox_due, &s->last_publish_at_ms,
      &s->effects_pending, &s->effects_unknown, &s->effects_parked,
      &s->effects_confirmed, &s->effects_failed, &s->fence_claims,
      &s->provider_2xx, &s->provider_replays, &s->effects_key_expired,
      &s->effects_conflict, &s->effects_replayed_error,
      &s->db_oldest_xact_age_ms, &s->db_dead_tuples};
  ob__pg_params_t p;
  PGresult* res;
  int rc = 0, began;
  _Static_assert(sizeof out / sizeof out[0] ==
                     sizeof figures / sizeof figures[0],
                 "one destination per figure");
  memset(s, 0, sizeof *s);
  if ((rc = ob__db_join_read(db, &began)) < 0) return rc;
  for (size_t i = 0; i < sizeof figures / sizeof figures[0] && rc == 0; i++)
    rc = scalar(db, figures[i], now, out[i]);
  s->relay_online = -1;
  if (rc == 0) {
    ob__pg_params_init(&p);
    ob__pg_p_text(&p, OB__SINK_STATUS_NAME);
    res = ob__pg_run(db, relay, &p, "stats");
    if (res == NULL) {
      rc = db->last_err;
    } else {
      if (PQntuples(res) > 0) {
        s->relay_online = (int)ob__pg_int(res, 0, 0);
        if (!ob__pg_isnull(res, 0, 1))
          snprintf(s->relay_error, sizeof s->relay_error, "%s",
                   PQgetvalue(res, 0, 1));
      }
      PQclear(res);
    }
  }
  ob__db_end_joined_read(db, began);
  if (rc < 0) {
    memset(s, 0, sizeof *s);
    return rc;
  }
  s->outbox_oldest_unpublished_age_ms =
      oldest > 0 && now > oldest ? now - oldest : 0;
  s->db_postgresql = 1;
  return 0;
}

/* The engine's invariants, as on SQLite; PRAGMA integrity_check has no
** counterpart here (the server checksums pages if initdb --data-checksums;
** amcheck is the operator's tool). */
static const char* const checks[] = {
    OB__CHECK_SQL_ENGINE,
    /* What the partitioned tables cannot hold as keys (pg_schema_sql.h). */
    ("SELECT 'dedup record ' || consumer_name || '/' || message_id || ' is"
     " recorded ' || count(*) || ' times' FROM processed_message GROUP BY"
     " consumer_name, message_id, source_ref HAVING count(*) > 1"),
    ("SELECT 'outbox event ' || id || ' is stored ' || count(*) || ' times'"
     " FROM outbox_event GROUP BY id HAVING count(*) > 1"),
};

int ob__pg_check(ob__db_t* db, void (*cb)(void* arg, const char* v),
                 void* arg) {
  return ob__pg_check_queries(db, checks, sizeof checks / sizeof checks[0],
                              cb, arg);
}

/* The database's size on the server's disk: what `stats` reports as
** db_bytes. A size cap is SQLite's; here space is the operator's. */
int ob__pg_space_used_bytes(ob__db_t* db, int64_t* used) {
  static const char sql[] = "SELECT pg_database_size(current_database())";
  return ob__pg_run_int(db, sql, NULL, "database size", used);
}
