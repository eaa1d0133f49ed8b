/* SPDX-License-Identifier: Apache-2.0 */
/* The fence's rows: effects, the messages waiting on them, and the moves
** between queue and failure store that an outcome or a person causes. */
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/assert.h"
#include "storage/sqlite/sqlite_store.h"

static const char* const state_names[] = {NULL, "pending", "unknown",
                                          "confirmed", "failed"};

static int state_of(const unsigned char* t) {
  for (int i = 1; i <= OB_EFFECT_FAILED; i++)
    if (t && strcmp((const char*)t, state_names[i]) == 0) return i;
  return 0;
}

const char* ob_effect_state_name(int state) {
  return state >= OB_EFFECT_PENDING && state <= OB_EFFECT_FAILED
             ? state_names[state]
             : "?";
}

/* NULL stays NULL; a present value is copied with a terminating NUL. */
static int dup_col(sqlite3_stmt* st, int i, char** out, size_t* len) {
  const void* p;
  int n;
  *out = NULL;
  if (len) *len = 0;
  if (sqlite3_column_type(st, i) == SQLITE_NULL) return 0;
  p = sqlite3_column_blob(st, i);
  n = sqlite3_column_bytes(st, i);
  *out = malloc((size_t)n + 1);
  if (*out == NULL) return -1;
  if (n > 0) memcpy(*out, p, (size_t)n);
  (*out)[n] = '\0';
  if (len) *len = (size_t)n;
  return 0;
}

#define EFFECT_COLS                                                        \
  "key, idempotency_key, provider, method, path, request, state,"          \
  " reference, response, http_status, reason, message_id, consumer_name,"  \
  " calls, lookups, successes, attempts, next_attempt_at, parked_at,"      \
  " created_at, updated_at, coalesce(first_call_at, 0),"                  \
  " coalesce(first_call_observed_ms, 0), park_cause, lookup_reference"

void ob__effect_row_free(ob__effect_row_t* r) {
  free(r->key);
  free(r->idempotency_key);
  free(r->provider);
  free(r->method);
  free(r->path);
  free(r->request);
  free(r->reference);
  free(r->response);
  free(r->reason);
  free(r->message_id);
  free(r->consumer);
  free(r->park_cause);
  free(r->lookup_reference);
  memset(r, 0, sizeof *r);
}

static int read_row(sqlite3_stmt* st, ob__effect_row_t* r) {
  int bad = 0;
  memset(r, 0, sizeof *r);
  bad |= dup_col(st, 0, &r->key, NULL);
  bad |= dup_col(st, 1, &r->idempotency_key, NULL);
  bad |= dup_col(st, 2, &r->provider, NULL);
  bad |= dup_col(st, 3, &r->method, NULL);
  bad |= dup_col(st, 4, &r->path, NULL);
  bad |= dup_col(st, 5, &r->request, &r->request_len);
  r->state = state_of(sqlite3_column_text(st, 6));
  bad |= dup_col(st, 7, &r->reference, NULL);
  bad |= dup_col(st, 8, &r->response, &r->response_len);
  r->http_status = sqlite3_column_int(st, 9);
  bad |= dup_col(st, 10, &r->reason, NULL);
  bad |= dup_col(st, 11, &r->message_id, NULL);
  bad |= dup_col(st, 12, &r->consumer, NULL);
  r->calls = sqlite3_column_int(st, 13);
  r->lookups = sqlite3_column_int(st, 14);
  r->successes = sqlite3_column_int(st, 15);
  r->attempts = sqlite3_column_int(st, 16);
  r->next_attempt_at = sqlite3_column_int64(st, 17);
  r->parked_at = sqlite3_column_int64(st, 18);
  r->created_at = sqlite3_column_int64(st, 19);
  r->updated_at = sqlite3_column_int64(st, 20);
  r->first_call_at = sqlite3_column_int64(st, 21);
  r->first_call_observed_ms = sqlite3_column_int64(st, 22);
  bad |= dup_col(st, 23, &r->park_cause, NULL);
  bad |= dup_col(st, 24, &r->lookup_reference, NULL);
  if (bad || r->key == NULL || r->request == NULL) {
    ob__effect_row_free(r);
    return -1;
  }
  return 0;
}

void ob__effect_row_view(const ob__effect_row_t* r, ob_effect_t* o) {
  memset(o, 0, sizeof *o);
  o->key = r->key;
  o->idempotency_key = r->idempotency_key;
  o->provider = r->provider;
  o->method = r->method;
  o->path = r->path;
  o->request = r->request;
  o->request_len = r->request_len;
  o->state = (ob_effect_state_t)r->state;
  o->reference = r->reference;
  o->response = r->response;
  o->response_len = r->response_len;
  o->http_status = r->http_status;
  o->reason = r->reason;
  o->message_id = r->message_id;
  o->consumer = r->consumer;
  o->calls = r->calls;
  o->lookups = r->lookups;
  o->successes = r->successes;
  o->attempts = r->attempts;
  o->next_attempt_at_ms = r->next_attempt_at;
  o->parked_at_ms = r->parked_at;
  o->created_at_ms = r->created_at;
  o->updated_at_ms = r->updated_at;
  o->park_cause = r->parked_at ? r->park_cause : NULL;
  o->lookup_reference = r->lookup_reference;
}

int ob__sqlite_effect_get(ob__db_t* db, const char* key, ob__effect_row_t* r) {
  int rc, found = 0;
  sqlite3_stmt* st = ob__db_stmt(
      db, OB__E_GET, "SELECT " EFFECT_COLS " FROM effect WHERE key = ?1");
  if (st == NULL) return db->last_err;
  sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
  rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    if (read_row(st, r) != 0) {
      sqlite3_reset(st);
      sqlite3_clear_bindings(st);
      return ob__db_seterr(db, OB_ENOMEM, "out of memory reading effect");
    }
    found = 1;
    rc = SQLITE_DONE;
  }
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  if (rc != SQLITE_DONE) return ob__db_fail(db, rc, "effect lookup");
  return found ? 0 : OB_ENOTFOUND;
}

int ob__sqlite_effect_insert(ob__db_t* db, const char* key, const char* idem_key,
                      const ob_effect_request_t* req, const char* message_id,
                      const char* consumer, int64_t now) {
  int rc, inserted;
  sqlite3_stmt* st = ob__db_stmt(
      db, OB__E_INSERT,
      "INSERT INTO effect(key, idempotency_key, provider, method, path,"
      " request, state, message_id, consumer_name, next_attempt_at,"
      " created_at, updated_at, lookup_reference)"
      " VALUES (?1,?2,?3,?4,?5,?6,'pending',?7,?8,?9,?9,?9,?10)"
      " ON CONFLICT DO NOTHING RETURNING 1");
  if (st == NULL) return db->last_err;
  sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 2, idem_key, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 3, req->provider, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 4, req->method, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 5, req->path, -1, SQLITE_STATIC);
  sqlite3_bind_blob64(st, 6, req->body_len ? req->body : "", req->body_len,
                      SQLITE_STATIC);
  sqlite3_bind_text(st, 7, message_id, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 8, consumer, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 9, now);
  if (req->lookup_reference)
    sqlite3_bind_text(st, 10, req->lookup_reference, -1, SQLITE_STATIC);
  rc = sqlite3_step(st);
  inserted = rc == SQLITE_ROW;
  if (rc == SQLITE_ROW) rc = sqlite3_step(st);
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  if (rc != SQLITE_DONE) return ob__db_fail(db, rc, "effect claim");
  return inserted;
}

int ob__sqlite_effect_due(ob__db_t* db, const char* provider, int64_t now, int max,
                   ob__effect_row_t* rows) {
  int n = 0, rc;
  sqlite3_stmt* st = ob__db_stmt(
      db, OB__E_DUE,
      "SELECT " EFFECT_COLS " FROM effect"
      " WHERE state IN ('pending','unknown') AND parked_at IS NULL"
      " AND next_attempt_at <= ?1 AND (?2 IS NULL OR provider = ?2)"
      " AND (lease_until IS NULL OR lease_until <= ?1)"
      " ORDER BY next_attempt_at, key LIMIT ?3");
  if (st == NULL) return db->last_err;
  sqlite3_bind_int64(st, 1, now);
  if (provider) sqlite3_bind_text(st, 2, provider, -1, SQLITE_STATIC);
  sqlite3_bind_int(st, 3, max);
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    OB__ASSERT(n < max);  /* LIMIT ?3 */
    if (read_row(st, &rows[n]) != 0) {
      rc = SQLITE_NOMEM;
      break;
    }
    n++;
  }
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  if (rc != SQLITE_DONE) {
    for (int i = 0; i < n; i++) ob__effect_row_free(&rows[i]);
    return ob__db_fail(db, rc, "due effects");
  }
  return n;
}

int ob__sqlite_effect_lease(ob__db_t* db, const char* key, const char* token,
                     int64_t until, int64_t now, int for_call,
                     int64_t observed) {
  /* A call handed out may reach the provider from now on: the first such
  ** moment is kept (the key's age counts from it). */
  sqlite3_stmt* st = ob__db_stmt(
      db, OB__E_LEASE,
      "UPDATE effect SET lease_token = ?2, lease_until = ?3, clock_ref = ?4,"
      " first_call_at = CASE WHEN ?5 THEN coalesce(first_call_at, ?4)"
      " ELSE first_call_at END,"
      " first_call_observed_ms = CASE WHEN ?5 THEN"
      " coalesce(first_call_observed_ms, ?6) ELSE first_call_observed_ms END"
      " WHERE key = ?1 AND state IN ('pending','unknown')"
      " AND parked_at IS NULL AND (lease_until IS NULL OR lease_until <= ?4)");
  if (st == NULL) return db->last_err;
  sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 2, token, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 3, until);
  sqlite3_bind_int64(st, 4, now);
  sqlite3_bind_int(st, 5, for_call != 0);
  sqlite3_bind_int64(st, 6, observed);
  return ob__db_step_done(db, st, "effect lease");
}

int ob__sqlite_effect_mark_call(ob__db_t* db, const char* key, const char* token,
                         int64_t now, int64_t observed) {
  sqlite3_stmt* st = NULL;
  int rc = sqlite3_prepare_v2(
      db->db,
      "UPDATE effect SET first_call_at = coalesce(first_call_at, ?3),"
      " first_call_observed_ms = coalesce(first_call_observed_ms, ?4)"
      " WHERE key = ?1 AND lease_token = ?2",
      -1, &st, NULL);
  if (rc != SQLITE_OK) return ob__db_fail(db, rc, "effect first call");
  sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 2, token, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 3, now);
  sqlite3_bind_int64(st, 4, observed);
  rc = sqlite3_step(st);
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) return ob__db_fail(db, rc, "effect first call");
  return sqlite3_changes(db->db);
}


/* Operator and shutdown paths below are prepared per call, not cached. */
static int exec_bound(ob__db_t* db, const char* sql, const char* what,
                      const char* t1, const char* t2, const char* t3,
                      int64_t i4) {
  sqlite3_stmt* st = NULL;
  int rc = sqlite3_prepare_v2(db->db, sql, -1, &st, NULL);
  if (rc != SQLITE_OK) return ob__db_fail(db, rc, what);
  if (t1) sqlite3_bind_text(st, 1, t1, -1, SQLITE_STATIC);
  if (t2) sqlite3_bind_text(st, 2, t2, -1, SQLITE_STATIC);
  if (t3) sqlite3_bind_text(st, 3, t3, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 4, i4);
  rc = sqlite3_step(st);
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) return ob__db_fail(db, rc, what);
  return sqlite3_changes(db->db);
}

int ob__sqlite_effect_unlease(ob__db_t* db, const char* key, const char* token,
                       int64_t now) {
  return exec_bound(db,
                    "UPDATE effect SET lease_token = NULL, lease_until = NULL,"
                    " next_attempt_at = min(next_attempt_at, ?4),"
                    " clock_ref = NULL"
                    " WHERE key = ?1 AND lease_token = ?2",
                    "effect release", key, token, NULL, now);
}

int ob__sqlite_effect_lease_renew(ob__db_t* db, const char* key, const char* token,
                           int64_t until, int64_t now) {
  sqlite3_stmt* st = NULL;
  int rc = sqlite3_prepare_v2(
      db->db,
      "UPDATE effect SET lease_until = ?3, clock_ref = ?4 WHERE key = ?1 AND"
      " lease_token = ?2 AND state IN ('pending','unknown')",
      -1, &st, NULL);
  if (rc != SQLITE_OK) return ob__db_fail(db, rc, "effect lease renewal");
  sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 2, token, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 3, until);
  sqlite3_bind_int64(st, 4, now);
  rc = ob__db_step_done(db, st, "effect lease renewal");
  sqlite3_finalize(st);
  return rc;
}

int ob__sqlite_effect_update(ob__db_t* db, const char* key, const char* token,
                      const ob__effect_update_t* u, int64_t now) {
  sqlite3_stmt* st = ob__db_stmt(
      db, OB__E_UPDATE,
      "UPDATE effect SET state = ?3, reference = coalesce(?4, reference),"
      " response = coalesce(?5, response),"
      " http_status = CASE WHEN ?6 > 0 THEN ?6 ELSE http_status END,"
      " reason = ?7, calls = calls + ?8, lookups = lookups + ?9,"
      " successes = successes + ?10, attempts = ?11, next_attempt_at = ?12,"
      " parked_at = ?13, lease_token = NULL, lease_until = NULL,"
      " updated_at = ?14, park_cause = ?15,"
      " first_call_at = CASE WHEN ?16 THEN NULL ELSE first_call_at END,"
      " first_call_observed_ms = CASE WHEN ?16 THEN NULL ELSE"
      " first_call_observed_ms END,"
      " clock_ref = CASE WHEN ?3 IN ('pending','unknown')"
      " AND ?12 > ?14 THEN ?14 END"
      " WHERE key = ?1 AND state IN ('pending','unknown')"
      " AND (?2 IS NULL OR lease_token = ?2)");
  /* Callers compute the state (ob_effect_resolve checks the caller's): an
  ** unnamed one would bind NULL and break the row's CHECK. */
  OB__ASSERT(u->state >= OB_EFFECT_PENDING && u->state <= OB_EFFECT_FAILED);
  if (st == NULL) return db->last_err;
  sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
  if (token) sqlite3_bind_text(st, 2, token, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 3, ob_effect_state_name(u->state), -1, SQLITE_STATIC);
  if (u->reference) sqlite3_bind_text(st, 4, u->reference, -1, SQLITE_STATIC);
  if (u->response)
    sqlite3_bind_blob64(st, 5, u->response, u->response_len, SQLITE_STATIC);
  sqlite3_bind_int(st, 6, u->http_status);
  if (u->reason) sqlite3_bind_text(st, 7, u->reason, -1, SQLITE_STATIC);
  sqlite3_bind_int(st, 8, u->add_calls);
  sqlite3_bind_int(st, 9, u->add_lookups);
  sqlite3_bind_int(st, 10, u->add_successes);
  sqlite3_bind_int(st, 11, u->attempts);
  sqlite3_bind_int64(st, 12, u->next_attempt_at);
  if (u->parked_at > 0) sqlite3_bind_int64(st, 13, u->parked_at);
  sqlite3_bind_int64(st, 14, now);
  if (u->parked_at > 0 && u->park_cause)
    sqlite3_bind_text(st, 15, u->park_cause, -1, SQLITE_STATIC);
  sqlite3_bind_int(st, 16, u->clear_first_call != 0);
  return ob__db_step_done(db, st, "effect outcome");
}

int ob__sqlite_effect_next_due_db(ob__db_t* db, const char* provider,
                                  int64_t now, int64_t* at) {
  int rc, null;
  (void)now;  /* one host, one clock: the lease's end is on it */
  sqlite3_stmt* st = ob__db_stmt(
      db, OB__E_NEXT_DUE,
      "SELECT min(max(next_attempt_at, coalesce(lease_until, 0))) FROM effect"
      " WHERE state IN ('pending','unknown') AND parked_at IS NULL"
      " AND (?1 IS NULL OR provider = ?1)");
  if (st == NULL) return db->last_err;
  if (provider) sqlite3_bind_text(st, 1, provider, -1, SQLITE_STATIC);
  rc = sqlite3_step(st);
  null = rc != SQLITE_ROW || sqlite3_column_type(st, 0) == SQLITE_NULL;
  if (rc == SQLITE_ROW) *at = sqlite3_column_int64(st, 0);
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  if (rc != SQLITE_ROW) return ob__db_fail(db, rc, "next due effect");
  return null ? OB_ENOTFOUND : 0;
}

int ob__sqlite_effect_list(ob__db_t* db, int state, const char* key,
                    int (*cb)(void* arg, const ob_effect_t* ef), void* arg) {
  sqlite3_stmt* st = NULL;
  int rc, n = 0;
  rc = sqlite3_prepare_v2(
      db->db,
      "SELECT " EFFECT_COLS " FROM effect"
      " WHERE (?1 IS NULL OR state = ?1) AND (?2 = 0 OR parked_at IS NOT NULL)"
      " AND (?3 IS NULL OR key = ?3) ORDER BY key",
      -1, &st, NULL);
  if (rc != SQLITE_OK) return ob__db_fail(db, rc, "effect list");
  if (state > 0)
    sqlite3_bind_text(st, 1, ob_effect_state_name(state), -1, SQLITE_STATIC);
  sqlite3_bind_int(st, 2, state < 0);
  if (key) sqlite3_bind_text(st, 3, key, -1, SQLITE_STATIC);
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    ob__effect_row_t r;
    ob_effect_t ef;
    int stop;
    if (read_row(st, &r) != 0) {
      rc = SQLITE_NOMEM;
      break;
    }
    ob__effect_row_view(&r, &ef);
    n++;
    stop = cb != NULL && cb(arg, &ef) != 0;
    ob__effect_row_free(&r);
    if (stop) {
      rc = SQLITE_DONE;
      break;
    }
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) return ob__db_fail(db, rc, "effect list");
  return n;
}

int ob__sqlite_effect_reconcile(ob__db_t* db, const char* key, int64_t now) {
  return exec_bound(db,
                    "UPDATE effect SET attempts = 0, parked_at = NULL,"
                    " park_cause = NULL,"
                    " next_attempt_at = ?4, lease_token = NULL,"
                    " lease_until = NULL, updated_at = ?4, clock_ref = NULL"
                    " WHERE state IN ('pending','unknown')"
                    " AND (?1 IS NULL OR key = ?1)",
                    "effect reconcile", key, NULL, NULL, now);
}

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
