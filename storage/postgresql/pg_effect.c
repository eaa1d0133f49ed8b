/* SPDX-License-Identifier: Apache-2.0 */
/* The fence's rows on PostgreSQL: effects, their leases and outcomes.
**
** A lease is taken by one conditional UPDATE (ob__pg_effect_lease): of
** several processes on several hosts reading the same due effect, the
** first to update wins and the others, whose UPDATE re-checks the row's
** newest version (READ COMMITTED), change nothing. So the due list is a
** plain read, as on SQLite. The lease is on the server's clock
** (OB__PG_SERVER_MS): a host whose own clock runs ahead must not take a
** live lease, for then one effect is called twice and only the provider's
** memory of the key (24 h at some) stands between that and two effects.
** The moves of waiting messages are pg_failed.c's and pg_queue.c's. */
#include <stdlib.h>
#include <string.h>

#include "core/util/assert.h"
#include "storage/postgresql/pg_int.h"

/* The text stored in effect.state for each ob_effect_state_t, as on
** SQLite (ob_effect_state_name gives the other direction). */
static const char* const state_names[] = {NULL, "pending", "unknown",
                                          "confirmed", "failed"};

static int state_of(const char* t) {
  for (int i = 1; i <= OB_EFFECT_FAILED; i++)
    if (t && strcmp(t, state_names[i]) == 0) return i;
  return 0;
}

/* The columns read_row reads, in its order. */
#define EFFECT_COLS                                                         \
  "key, idempotency_key, provider, method, path, request, state,"           \
  " reference, response, http_status, reason, message_id, consumer_name,"   \
  " calls, lookups, successes, attempts, next_attempt_at, parked_at,"       \
  " created_at, updated_at, coalesce(first_call_at, 0),"                    \
  " coalesce(first_call_observed_ms, 0), park_cause, lookup_reference"

/* Row i of res (EFFECT_COLS) into r. 0, or -1 out of memory (r freed). */
static int read_row(const PGresult* res, int i, ob__effect_row_t* r) {
  int oom = 0;
  memset(r, 0, sizeof *r);
  r->key = ob__pg_dup(res, i, 0, NULL, &oom);
  r->idempotency_key = ob__pg_dup(res, i, 1, NULL, &oom);
  r->provider = ob__pg_dup(res, i, 2, NULL, &oom);
  r->method = ob__pg_dup(res, i, 3, NULL, &oom);
  r->path = ob__pg_dup(res, i, 4, NULL, &oom);
  r->request = ob__pg_dup_bytea(res, i, 5, &r->request_len, &oom);
  r->state = (ob_effect_state_t)state_of(
      ob__pg_isnull(res, i, 6) ? NULL : PQgetvalue(res, i, 6));
  r->reference = ob__pg_dup(res, i, 7, NULL, &oom);
  r->response = ob__pg_dup_bytea(res, i, 8, &r->response_len, &oom);
  r->http_status = (int)ob__pg_int(res, i, 9);
  r->reason = ob__pg_dup(res, i, 10, NULL, &oom);
  r->message_id = ob__pg_dup(res, i, 11, NULL, &oom);
  r->consumer = ob__pg_dup(res, i, 12, NULL, &oom);
  r->calls = (int)ob__pg_int(res, i, 13);
  r->lookups = (int)ob__pg_int(res, i, 14);
  r->successes = (int)ob__pg_int(res, i, 15);
  r->attempts = (int)ob__pg_int(res, i, 16);
  r->next_attempt_at = ob__pg_int(res, i, 17);
  r->parked_at = ob__pg_int(res, i, 18);
  r->created_at = ob__pg_int(res, i, 19);
  r->updated_at = ob__pg_int(res, i, 20);
  r->first_call_at = ob__pg_int(res, i, 21);
  r->first_call_observed_ms = ob__pg_int(res, i, 22);
  r->park_cause = ob__pg_dup(res, i, 23, NULL, &oom);
  r->lookup_reference = ob__pg_dup(res, i, 24, NULL, &oom);
  /* key and request are NOT NULL: a NULL copy is out of memory. */
  if (oom || r->key == NULL || r->request == NULL) {
    ob__effect_row_free(r);
    return -1;
  }
  return 0;
}

int ob__pg_effect_get(ob__db_t* db, const char* key, ob__effect_row_t* r) {
  static const char sql[] =
      "SELECT " EFFECT_COLS " FROM effect WHERE key = $1::text";
  ob__pg_params_t p;
  PGresult* res;
  int rc = OB_ENOTFOUND;
  ob__pg_params_init(&p);
  ob__pg_p_text(&p, key);
  res = ob__pg_run(db, sql, &p, "effect lookup");
  if (res == NULL) return db->last_err ? db->last_err : OB_EDB;
  if (PQntuples(res) > 0) {
    rc = read_row(res, 0, r) == 0
             ? 0
             : ob__db_seterr(db, OB_ENOMEM, "out of memory reading effect");
  }
  PQclear(res);
  return rc;
}

int ob__pg_effect_insert(ob__db_t* db, const char* key, const char* idem_key,
                         const ob_effect_request_t* req,
                         const char* message_id, const char* consumer,
                         int64_t now) {
  /* Either key's UNIQUE decides, atomically, across processes: a second
  ** inserter waits for the first's transaction, then sees the conflict. */
  static const char sql[] =
      "INSERT INTO effect(key, idempotency_key, provider, method, path,"
      " request, state, message_id, consumer_name, next_attempt_at,"
      " created_at, updated_at, lookup_reference)"
      " VALUES ($1::text, $2::text, $3::text, $4::text, $5::text, $6::bytea,"
      " 'pending', $7::text, $8::text, $9::bigint, $9::bigint, $9::bigint,"
      " $10::text) ON CONFLICT DO NOTHING RETURNING 1";
  ob__pg_params_t p;
  int rc;
  ob__pg_params_init(&p);
  ob__pg_p_text(&p, key);
  ob__pg_p_text(&p, idem_key);
  ob__pg_p_text(&p, req->provider);
  ob__pg_p_text(&p, req->method);
  ob__pg_p_text(&p, req->path);
  /* An empty body is an empty bytea, never NULL (ob__pg_p_blob). */
  ob__pg_p_blob(&p, req->body, req->body_len);
  ob__pg_p_text(&p, message_id);
  ob__pg_p_text(&p, consumer);
  ob__pg_p_int(&p, now);
  ob__pg_p_text(&p, req->lookup_reference);
  rc = ob__pg_run_done(db, sql, &p, "effect claim");
  return rc < 0 ? rc : rc > 0;
}

int ob__pg_effect_due(ob__db_t* db, const char* provider, int64_t now,
                      int max, ob__effect_row_t* rows) {
  /* Keys in byte order (COLLATE "C"), as SQLite's BINARY collation: the
  ** database's own collation may order them otherwise. */
  static const char sql[] =
      "SELECT " EFFECT_COLS " FROM effect"
      " WHERE state IN ('pending','unknown') AND parked_at IS NULL"
      " AND next_attempt_at <= $1::bigint"
      " AND ($2::text IS NULL OR provider = $2::text)"
      " AND (lease_until IS NULL OR lease_until <= " OB__PG_SERVER_MS ")"
      " ORDER BY next_attempt_at, key COLLATE \"C\" LIMIT $3::bigint";
  ob__pg_params_t p;
  PGresult* res;
  int n;
  if (max < 1) return 0;
  ob__pg_params_init(&p);
  ob__pg_p_int(&p, now);
  ob__pg_p_text(&p, provider);
  ob__pg_p_int(&p, max);
  res = ob__pg_run(db, sql, &p, "due effects");
  if (res == NULL) return db->last_err ? db->last_err : OB_EDB;
  n = PQntuples(res);
  OB__ASSERT(n <= max);  /* LIMIT $3 */
  if (n > max) n = max;
  for (int i = 0; i < n; i++)
    if (read_row(res, i, &rows[i]) != 0) {
      for (int j = 0; j < i; j++) ob__effect_row_free(&rows[j]);
      PQclear(res);
      return ob__db_seterr(db, OB_ENOMEM, "due effects: out of memory");
    }
  PQclear(res);
  return n;
}

int ob__pg_effect_lease(ob__db_t* db, const char* key, const char* token,
                        int64_t until, int64_t now, int for_call,
                        int64_t observed) {
  /* A call handed out may reach the provider from now on: the first such
  ** moment is kept (the key's age counts from it). The lease is its length
  ** from the server's now; clock_ref is this host's now, as on SQLite, so
  ** that re-basing moves next_attempt_at if this clock goes back. */
  static const char sql[] =
      "UPDATE effect SET lease_token = $2::text, lease_until = "
      OB__PG_SERVER_MS " + ($3::bigint - $4::bigint), clock_ref = $4::bigint,"
      " first_call_at = CASE WHEN $5::bigint <> 0"
      " THEN coalesce(first_call_at, $4::bigint) ELSE first_call_at END,"
      " first_call_observed_ms = CASE WHEN $5::bigint <> 0 THEN"
      " coalesce(first_call_observed_ms, $6::bigint)"
      " ELSE first_call_observed_ms END"
      " WHERE key = $1::text AND state IN ('pending','unknown')"
      " AND parked_at IS NULL AND (lease_until IS NULL OR"
      " lease_until <= " OB__PG_SERVER_MS ")";
  ob__pg_params_t p;
  ob__pg_params_init(&p);
  ob__pg_p_text(&p, key);
  ob__pg_p_text(&p, token);
  ob__pg_p_int(&p, until);
  ob__pg_p_int(&p, now);
  ob__pg_p_int(&p, for_call != 0);
  ob__pg_p_int(&p, observed);
  return ob__pg_run_done(db, sql, &p, "effect lease");
}

int ob__pg_effect_mark_call(ob__db_t* db, const char* key, const char* token,
                            int64_t now, int64_t observed) {
  static const char sql[] =
      "UPDATE effect SET first_call_at = coalesce(first_call_at, $3::bigint),"
      " first_call_observed_ms = coalesce(first_call_observed_ms,"
      " $4::bigint) WHERE key = $1::text AND lease_token = $2::text";
  ob__pg_params_t p;
  ob__pg_params_init(&p);
  ob__pg_p_text(&p, key);
  ob__pg_p_text(&p, token);
  ob__pg_p_int(&p, now);
  ob__pg_p_int(&p, observed);
  return ob__pg_run_done(db, sql, &p, "effect first call");
}

int ob__pg_effect_unlease(ob__db_t* db, const char* key, const char* token,
                          int64_t now) {
  static const char sql[] =
      "UPDATE effect SET lease_token = NULL, lease_until = NULL,"
      " next_attempt_at = LEAST(next_attempt_at, $3::bigint),"
      " clock_ref = NULL WHERE key = $1::text AND lease_token = $2::text";
  ob__pg_params_t p;
  ob__pg_params_init(&p);
  ob__pg_p_text(&p, key);
  ob__pg_p_text(&p, token);
  ob__pg_p_int(&p, now);
  return ob__pg_run_done(db, sql, &p, "effect release");
}

int ob__pg_effect_lease_renew(ob__db_t* db, const char* key,
                              const char* token, int64_t until,
                              int64_t now) {
  static const char sql[] =
      "UPDATE effect SET lease_until = " OB__PG_SERVER_MS " + ($3::bigint -"
      " $4::bigint), clock_ref = $4::bigint WHERE key = $1::text AND lease_token = $2::text"
      " AND state IN ('pending','unknown')";
  ob__pg_params_t p;
  ob__pg_params_init(&p);
  ob__pg_p_text(&p, key);
  ob__pg_p_text(&p, token);
  ob__pg_p_int(&p, until);
  ob__pg_p_int(&p, now);
  return ob__pg_run_done(db, sql, &p, "effect lease renewal");
}

int ob__pg_effect_update(ob__db_t* db, const char* key, const char* token,
                         const ob__effect_update_t* u, int64_t now) {
  /* clock_ref only while the effect stays open with a retry ahead. */
  static const char sql[] =
      "UPDATE effect SET state = $3::text,"
      " reference = coalesce($4::text, reference),"
      " response = coalesce($5::bytea, response),"
      " http_status = CASE WHEN $6::bigint > 0 THEN $6::bigint"
      " ELSE http_status END, reason = $7::text,"
      " calls = calls + $8::bigint, lookups = lookups + $9::bigint,"
      " successes = successes + $10::bigint, attempts = $11::bigint,"
      " next_attempt_at = $12::bigint, parked_at = $13::bigint,"
      " lease_token = NULL, lease_until = NULL, updated_at = $14::bigint,"
      " park_cause = $15::text,"
      " first_call_at = CASE WHEN $16::bigint <> 0 THEN NULL"
      " ELSE first_call_at END,"
      " first_call_observed_ms = CASE WHEN $16::bigint <> 0 THEN NULL"
      " ELSE first_call_observed_ms END,"
      " clock_ref = CASE WHEN $3::text IN ('pending','unknown')"
      " AND $12::bigint > $14::bigint THEN $14::bigint END"
      " WHERE key = $1::text AND state IN ('pending','unknown')"
      " AND ($2::text IS NULL OR lease_token = $2::text)";
  ob__pg_params_t p;
  /* Callers compute the state (ob_effect_resolve checks the caller's): an
  ** unnamed one would bind NULL and break the row's CHECK. */
  OB__ASSERT(u->state >= OB_EFFECT_PENDING && u->state <= OB_EFFECT_FAILED);
  ob__pg_params_init(&p);
  ob__pg_p_text(&p, key);
  ob__pg_p_text(&p, token);
  ob__pg_p_text(&p, state_names[u->state]);
  ob__pg_p_text(&p, u->reference);
  if (u->response) ob__pg_p_blob(&p, u->response, u->response_len);
  else ob__pg_p_null(&p);
  ob__pg_p_int(&p, u->http_status);
  ob__pg_p_text(&p, u->reason);
  ob__pg_p_int(&p, u->add_calls);
  ob__pg_p_int(&p, u->add_lookups);
  ob__pg_p_int(&p, u->add_successes);
  ob__pg_p_int(&p, u->attempts);
  ob__pg_p_int(&p, u->next_attempt_at);
  if (u->parked_at > 0) ob__pg_p_int(&p, u->parked_at);
  else ob__pg_p_null(&p);
  ob__pg_p_int(&p, now);
  ob__pg_p_text(&p, u->parked_at > 0 ? u->park_cause : NULL);
  ob__pg_p_int(&p, u->clear_first_call != 0);
  return ob__pg_run_done(db, sql, &p, "effect outcome");
}

int ob__pg_effect_next_due_db(ob__db_t* db, const char* provider,
                              int64_t now, int64_t* at) {
  /* A lease's end on the caller's clock: now plus what is left of it. */
  static const char sql[] =
      "SELECT min(GREATEST(next_attempt_at, coalesce($2::bigint +"
      " (lease_until - " OB__PG_SERVER_MS "), 0)))"
      " FROM effect WHERE state IN ('pending','unknown')"
      " AND parked_at IS NULL AND ($1::text IS NULL OR provider = $1::text)";
  ob__pg_params_t p;
  ob__pg_params_init(&p);
  ob__pg_p_text(&p, provider);
  ob__pg_p_int(&p, now);
  /* NULL (no open effect) is OB_ENOTFOUND. */
  return ob__pg_run_int(db, sql, &p, "next due effect", at);
}

int ob__pg_effect_list(ob__db_t* db, int state, const char* key,
                       int (*cb)(void* arg, const ob_effect_t* ef),
                       void* arg) {
  /* state 0: all, > 0: that state, < 0: the parked ones. */
  static const char sql[] =
      "SELECT " EFFECT_COLS " FROM effect"
      " WHERE ($1::text IS NULL OR state = $1::text)"
      " AND ($2::bigint = 0 OR parked_at IS NOT NULL)"
      " AND ($3::text IS NULL OR key = $3::text) ORDER BY key COLLATE \"C\"";
  ob__pg_params_t p;
  PGresult* res;
  int n, visited = 0, rc = 0;
  ob__pg_params_init(&p);
  ob__pg_p_text(&p, state > 0 ? ob_effect_state_name(state) : NULL);
  ob__pg_p_int(&p, state < 0);
  ob__pg_p_text(&p, key);
  /* Every row is in res before the first callback: cb may call other
  ** store functions on this connection. */
  res = ob__pg_run(db, sql, &p, "effect list");
  if (res == NULL) return db->last_err ? db->last_err : OB_EDB;
  n = PQntuples(res);
  for (int i = 0; i < n; i++) {
    ob__effect_row_t r;
    ob_effect_t ef;
    int stop;
    if (read_row(res, i, &r) != 0) {
      rc = ob__db_seterr(db, OB_ENOMEM, "effect list: out of memory");
      break;
    }
    ob__effect_row_view(&r, &ef);
    visited++;
    stop = cb != NULL && cb(arg, &ef) != 0;
    ob__effect_row_free(&r);
    if (stop) break;
  }
  PQclear(res);
  return rc < 0 ? rc : visited;
}

int ob__pg_effect_reconcile(ob__db_t* db, const char* key, int64_t now) {
  static const char sql[] =
      "UPDATE effect SET attempts = 0, parked_at = NULL, park_cause = NULL,"
      " next_attempt_at = $2::bigint, lease_token = NULL,"
      " lease_until = NULL, updated_at = $2::bigint, clock_ref = NULL"
      " WHERE state IN ('pending','unknown')"
      " AND ($1::text IS NULL OR key = $1::text)";
  ob__pg_params_t p;
  ob__pg_params_init(&p);
  ob__pg_p_text(&p, key);
  ob__pg_p_int(&p, now);
  return ob__pg_run_done(db, sql, &p, "effect reconcile");
}
