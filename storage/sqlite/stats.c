/* SPDX-License-Identifier: Apache-2.0 */
/* Statistics and the invariant check of the engine's own tables: read-only
** queries. A module's figures and checks are its own (ob_add_stats,
** ob_add_check), run through ob_tx_exec. */
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "storage/check_sql.h"
#include "storage/sqlite/sqlite_store.h"

/* One integer from a query with optional ?1 = now. */
static int scalar(ob__db_t* db, const char* sql, int64_t now, int64_t* out) {
  sqlite3_stmt* st = NULL;
  int rc = sqlite3_prepare_v2(db->db, sql, -1, &st, NULL);
  if (rc != SQLITE_OK) return ob__db_fail(db, rc, "stats");
  if (sqlite3_bind_parameter_count(st) >= 1) sqlite3_bind_int64(st, 1, now);
  rc = sqlite3_step(st);
  *out = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
  sqlite3_finalize(st);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return ob__db_fail(db, rc, "stats");
  return 0;
}

static int effect_stats(ob__db_t* db, int64_t now, ob_stats_t* s) {
  int rc;
  if ((rc = scalar(db, "SELECT count(*) FROM effect WHERE state = 'pending'",
                   now, &s->effects_pending)) < 0 ||
      (rc = scalar(db, "SELECT count(*) FROM effect WHERE state = 'unknown'",
                   now, &s->effects_unknown)) < 0 ||
      (rc = scalar(db, "SELECT count(*) FROM effect WHERE parked_at IS NOT"
                       " NULL AND state IN ('pending','unknown')", now,
                   &s->effects_parked)) < 0 ||
      (rc = scalar(db, "SELECT count(*) FROM effect WHERE state ="
                       " 'confirmed'", now, &s->effects_confirmed)) < 0 ||
      (rc = scalar(db, "SELECT count(*) FROM effect WHERE state = 'failed'",
                   now, &s->effects_failed)) < 0 ||
      (rc = scalar(db, "SELECT count(*) FROM effect", now,
                   &s->fence_claims)) < 0 ||
      (rc = scalar(db, "SELECT coalesce(sum(successes), 0) FROM effect", now,
                   &s->provider_2xx)) < 0 ||
      (rc = scalar(db, "SELECT coalesce(sum(successes - 1), 0) FROM effect"
                       " WHERE successes > 1", now,
                   &s->provider_replays)) < 0 ||
      (rc = scalar(db, "SELECT count(*) FROM effect WHERE parked_at IS NOT"
                       " NULL AND park_cause = 'key-expired' AND state IN"
                       " ('pending','unknown')", now,
                   &s->effects_key_expired)) < 0 ||
      (rc = scalar(db, "SELECT count(*) FROM effect WHERE parked_at IS NOT"
                       " NULL AND park_cause = 'conflict' AND state IN"
                       " ('pending','unknown')", now,
                   &s->effects_conflict)) < 0 ||
      (rc = scalar(db, "SELECT count(*) FROM effect WHERE parked_at IS NOT"
                       " NULL AND park_cause = 'replayed-error' AND state IN"
                       " ('pending','unknown')", now,
                   &s->effects_replayed_error)) < 0)
    return rc;
  return 0;
}

/* The latest relay_status row: online (-1 when no relay has run) and its
** last_error into s->relay_error. */
static int relay_state(ob__db_t* db, ob_stats_t* s, int64_t* online) {
  sqlite3_stmt* st = NULL;
  int rc = sqlite3_prepare_v2(db->db,
                              "SELECT online, last_error FROM relay_status"
                              " WHERE name <> '" OB__SINK_STATUS_NAME "'"
                              " ORDER BY updated_at DESC LIMIT 1",
                              -1, &st, NULL);
  if (rc != SQLITE_OK) return ob__db_fail(db, rc, "stats");
  rc = sqlite3_step(st);
  *online = -1;
  s->relay_error[0] = '\0';
  if (rc == SQLITE_ROW) {
    const unsigned char* t = sqlite3_column_text(st, 1);
    *online = sqlite3_column_int64(st, 0);
    if (t != NULL)
      snprintf(s->relay_error, sizeof s->relay_error, "%s", (const char*)t);
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return ob__db_fail(db, rc, "stats");
  return 0;
}

int ob__sqlite_stats(ob__db_t* db, int64_t now, ob_stats_t* s) {
  int rc, began;
  int64_t oldest = 0, online = -1;
  memset(s, 0, sizeof *s);
  rc = ob__db_join_read(db, &began);
  if (rc < 0) return rc;
  if ((rc = scalar(db, "SELECT count(*) FROM queue WHERE available_at <= ?1"
                       " AND (lease_until IS NULL OR lease_until <= ?1)",
                   now, &s->queue_ready)) < 0 ||
      (rc = scalar(db, "SELECT count(*) FROM queue WHERE available_at > ?1",
                   now, &s->queue_delayed)) < 0 ||
      (rc = scalar(db, "SELECT count(*) FROM queue WHERE lease_until > ?1",
                   now, &s->queue_in_hand)) < 0 ||
      (rc = scalar(db, "SELECT count(*) FROM failed_message", now,
                   &s->failed)) < 0 ||
      (rc = scalar(db, "SELECT count(*) FROM processed_message", now,
                   &s->processed)) < 0 ||
      (rc = scalar(db, "SELECT count(*) FROM outbox_event"
                       " WHERE published_at IS NULL", now,
                   &s->outbox_unpublished)) < 0 ||
      (rc = scalar(db, "SELECT count(*) FROM outbox_event"
                       " WHERE published_at IS NOT NULL", now,
                   &s->outbox_published)) < 0 ||
      (rc = scalar(db, "SELECT coalesce(min(created_at), 0) FROM outbox_event"
                       " WHERE published_at IS NULL", now, &oldest)) < 0 ||
      (rc = scalar(db, "SELECT count(*) FROM outbox_event WHERE"
                       " parked_at IS NOT NULL AND published_at IS NULL", now,
                   &s->outbox_parked)) < 0 ||
      (rc = scalar(db, "SELECT count(*) FROM outbox_event WHERE"
                       " published_at IS NULL AND parked_at IS NULL AND"
                       " next_attempt_at <= ?1", now, &s->outbox_due)) < 0 ||
      (rc = scalar(db, "SELECT coalesce(max(last_publish_at), 0) FROM"
                       " relay_status", now, &s->last_publish_at_ms)) < 0 ||
      (rc = relay_state(db, s, &online)) < 0 ||
      (rc = effect_stats(db, now, s)) < 0) {
    ob__db_end_joined_read(db, began);
    return rc;
  }
  ob__db_end_joined_read(db, began);
  s->outbox_oldest_unpublished_age_ms = oldest > 0 && now > oldest ? now - oldest : 0;
  s->relay_online = (int)online;
  return 0;
}

/* The engine's own invariants. Each query returns one row per violation,
** column 0 its text; they are written against the documented tables so an
** operator can run them by hand with sqlite3. */
static const char* const checks[] = {OB__CHECK_SQL_ENGINE};

int ob__check_queries(ob__db_t* db, const char* const* sqls, size_t n,
                      void (*cb)(void* arg, const char* v), void* arg) {
  sqlite3_stmt* st = NULL;
  int rc, violations = 0;
  /* The checker is checked too: a failed prepare or step is an error, never
  ** silently "ok". */
  for (size_t i = 0; i < n; i++) {
    rc = sqlite3_prepare_v2(db->db, sqls[i], -1, &st, NULL);
    if (rc != SQLITE_OK) return ob__db_fail(db, rc, "check");
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
      const char* t = (const char*)sqlite3_column_text(st, 0);
      if (cb) cb(arg, t ? t : "(violation)");
      violations++;
    }
    sqlite3_finalize(st);
    st = NULL;
    if (rc != SQLITE_DONE) return ob__db_fail(db, rc, "check");
  }
  return violations;
}

int ob__sqlite_check(ob__db_t* db, void (*cb)(void* arg, const char* v), void* arg) {
  sqlite3_stmt* st = NULL;
  int rc, n, violations = 0;

  rc = sqlite3_prepare_v2(db->db, "PRAGMA integrity_check", -1, &st, NULL);
  if (rc != SQLITE_OK) return ob__db_fail(db, rc, "check");
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    const char* t = (const char*)sqlite3_column_text(st, 0);
    if (t == NULL || strcmp(t, "ok") != 0) {
      char line[600];
      snprintf(line, sizeof line, "integrity_check: %s", t ? t : "(null)");
      if (cb) cb(arg, line);
      violations++;
    }
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) return ob__db_fail(db, rc, "check");
  n = ob__check_queries(db, checks, sizeof checks / sizeof checks[0], cb, arg);
  return n < 0 ? n : violations + n;
}
