/* SPDX-License-Identifier: Apache-2.0 */
/* The fence's rows: effects, their leases and outcomes (the moves of the
** messages waiting on them are failed.c's and queue.c's).
**
** A lease is taken by one conditional UPDATE (ob__effect_lease): of
** several processes reading the same due effect, the first to update wins
** and the others, whose UPDATE re-checks the row (SQLite's write lock,
** PostgreSQL's READ COMMITTED re-read of the newest version), change
** nothing. So the due list is a plain read.
**
** The dialects differ in the clock of a lease. On SQLite it is the
** engine's (one host). On PostgreSQL it is the server's (OB__PG_SERVER_MS):
** a host whose own clock runs ahead must not take a live lease, for then
** one effect is called twice and only the provider's memory of the key
** (24 h at some) stands between that and two effects. And PostgreSQL
** orders keys in byte order only when told (COLLATE "C", SQLite's BINARY). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/assert.h"
#include "storage/sql.h"

/* The text stored in effect.state for each ob_effect_state_t. */
static const char* const state_names[] = {NULL, "pending", "unknown",
                                          "confirmed", "failed"};

static int state_of(const char* t) {
  for (int i = 1; i <= OB_EFFECT_FAILED; i++)
    if (t && strcmp(t, state_names[i]) == 0) return i;
  return 0;
}

const char* ob_effect_state_name(int state) {
  return state >= OB_EFFECT_PENDING && state <= OB_EFFECT_FAILED
             ? state_names[state]
             : "?";
}

/* The lease's now and end in SQL (?3 until, ?4 now on the caller's clock):
** the engine's on SQLite; on PostgreSQL the server's, the lease a length. */
#define NOW_SQLITE "?4"
#define UNTIL_SQLITE "?3"
#define NOW_PG OB__PG_SERVER_MS
#define UNTIL_PG OB__PG_SERVER_MS " + (?3 - ?4)"
#define BYTES_PG " COLLATE \"C\""

/* The columns read_row reads, in its order. */
#define EFFECT_COLS                                                        \
  "key, idempotency_key, provider, method, path, request, state,"          \
  " reference, response, http_status, reason, message_id, consumer_name,"  \
  " calls, lookups, successes, attempts, next_attempt_at, parked_at,"      \
  " created_at, updated_at, coalesce(first_call_at, 0),"                  \
  " coalesce(first_call_observed_ms, 0), park_cause, lookup_reference,"  \
  " coalesce(amount, 0), currency"

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
  free(r->currency);
  memset(r, 0, sizeof *r);
}

/* The current row (EFFECT_COLS) into r. 0, or OB_ENOMEM (r freed). */
static int read_row(ob__sql_t* s, ob__effect_row_t* r) {
  int bad = 0;
  memset(r, 0, sizeof *r);
  bad |= ob__sql_col_dup(s, 0, 0, &r->key, NULL);
  bad |= ob__sql_col_dup(s, 1, 0, &r->idempotency_key, NULL);
  bad |= ob__sql_col_dup(s, 2, 0, &r->provider, NULL);
  bad |= ob__sql_col_dup(s, 3, 0, &r->method, NULL);
  bad |= ob__sql_col_dup(s, 4, 0, &r->path, NULL);
  bad |= ob__sql_col_dup(s, 5, 1, &r->request, &r->request_len);
  r->state = state_of(ob__sql_col_text(s, 6));
  bad |= ob__sql_col_dup(s, 7, 0, &r->reference, NULL);
  bad |= ob__sql_col_dup(s, 8, 1, &r->response, &r->response_len);
  r->http_status = (int)ob__sql_col_int(s, 9);
  bad |= ob__sql_col_dup(s, 10, 0, &r->reason, NULL);
  bad |= ob__sql_col_dup(s, 11, 0, &r->message_id, NULL);
  bad |= ob__sql_col_dup(s, 12, 0, &r->consumer, NULL);
  r->calls = (int)ob__sql_col_int(s, 13);
  r->lookups = (int)ob__sql_col_int(s, 14);
  r->successes = (int)ob__sql_col_int(s, 15);
  r->attempts = (int)ob__sql_col_int(s, 16);
  r->next_attempt_at = ob__sql_col_int(s, 17);
  r->parked_at = ob__sql_col_int(s, 18);
  r->created_at = ob__sql_col_int(s, 19);
  r->updated_at = ob__sql_col_int(s, 20);
  r->first_call_at = ob__sql_col_int(s, 21);
  r->first_call_observed_ms = ob__sql_col_int(s, 22);
  bad |= ob__sql_col_dup(s, 23, 0, &r->park_cause, NULL);
  bad |= ob__sql_col_dup(s, 24, 0, &r->lookup_reference, NULL);
  r->amount = ob__sql_col_int(s, 25);
  bad |= ob__sql_col_dup(s, 26, 0, &r->currency, NULL);
  if (bad || r->key == NULL || r->request == NULL) {
    ob__effect_row_free(r);
    return OB_ENOMEM;
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
  o->amount = r->amount;
  o->currency = r->currency;
}

/* Step s into rows[0..max): the count, or < 0 (rows read so far freed;
** out of memory with what in errmsg). Finishes s. */
static int read_rows(ob__sql_t* s, ob__effect_row_t* rows, int max) {
  int n = 0, rc;
  while ((rc = ob__sql_step(s)) > 0) {
    OB__ASSERT(n < max);  /* the statements' LIMIT */
    if (n == max) break;
    if (read_row(s, &rows[n]) < 0) {
      rc = ob__db_seterr(s->db, OB_ENOMEM, "%s: out of memory", s->what);
      break;
    }
    n++;
  }
  ob__sql_finish(s);
  if (rc < 0)
    while (n > 0) ob__effect_row_free(&rows[--n]);
  return rc < 0 ? rc : n;
}

int ob__effect_get(ob__db_t* db, const char* key, ob__effect_row_t* r) {
  static const char sql[] = "SELECT " EFFECT_COLS " FROM effect WHERE key = ?1";
  ob__sql_t s;
  int n;
  ob__sql_prepare(db, &s, OB__E_GET, sql, "effect lookup");
  ob__sql_text(&s, 1, key);
  n = read_rows(&s, r, 1);
  return n < 0 ? n : n == 1 ? 0 : OB_ENOTFOUND;
}

/* The running totals of the open effects with an amount (docs/offline.md):
** one more stored, or one less. */
static int stored_add(ob__db_t* db, const char* provider, const char* currency,
                      int64_t amount) {
  static const char sql[] =
      "INSERT INTO effect_stored(provider, currency, stored_count,"
      " stored_total) VALUES (?1, ?2, 1, ?3) ON CONFLICT (provider, currency)"
      " DO UPDATE SET stored_count = effect_stored.stored_count + 1,"
      " stored_total = effect_stored.stored_total + excluded.stored_total";
  ob__sql_t s;
  ob__sql_prepare(db, &s, OB__E_STORED_ADD, sql, "effect stored total");
  ob__sql_text(&s, 1, provider);
  ob__sql_text(&s, 2, currency);
  ob__sql_int(&s, 3, amount);
  return ob__sql_done(&s);
}

/* An effect with an amount left the open states: it leaves the totals. */
static int stored_settle(ob__db_t* db, const char* provider,
                         const char* currency, int64_t amount) {
  static const char sql[] =
      "UPDATE effect_stored SET stored_count = stored_count - 1,"
      " stored_total = stored_total - ?3 WHERE provider = ?1 AND"
      " currency = ?2";
  ob__sql_t s;
  ob__sql_prepare(db, &s, OB__E_STORED_SETTLE, sql, "effect stored total");
  ob__sql_text(&s, 1, provider);
  ob__sql_text(&s, 2, currency);
  ob__sql_int(&s, 3, amount);
  return ob__sql_done(&s);
}

int ob__effect_stored_get(ob__db_t* db, const char* provider,
                          const char* currency, int64_t* count,
                          int64_t* total) {
  static const char sql[] =
      "SELECT stored_count, stored_total FROM effect_stored"
      " WHERE provider = ?1 AND currency = ?2";
  ob__sql_t s;
  int rc;
  *count = *total = 0;
  ob__sql_prepare(db, &s, OB__E_STORED_GET, sql, "effect stored total");
  ob__sql_text(&s, 1, provider);
  ob__sql_text(&s, 2, currency);
  rc = ob__sql_step(&s);
  if (rc > 0) {
    *count = ob__sql_col_int(&s, 0);
    *total = ob__sql_col_int(&s, 1);
  }
  ob__sql_finish(&s);
  return rc < 0 ? rc : 0;
}

int ob__effect_stored_lock(ob__db_t* db, const char* provider,
                           const char* currency) {
  char key[160];
  int n = snprintf(key, sizeof key, "effect_stored\n%s\n%s", provider,
                   currency);
  if (n < 0 || (size_t)n >= sizeof key)
    return ob__db_seterr(db, OB_EINVAL, "effect stored lock: name too long");
  return ob__sql_lock_key(db, key);
}

int ob__effect_link_get(ob__db_t* db, const char* provider,
                        int64_t* offline_since) {
  static const char sql[] =
      "SELECT coalesce(offline_since, 0) FROM effect_provider_link"
      " WHERE provider = ?1";
  ob__sql_t s;
  int rc;
  ob__sql_prepare(db, &s, OB__E_LINK_GET, sql, "provider link");
  ob__sql_text(&s, 1, provider);
  rc = ob__sql_int1(&s, offline_since);
  if (rc == OB_ENOTFOUND) {
    *offline_since = 0;
    rc = 0;
  }
  return rc;
}

int ob__effect_link_note(ob__db_t* db, const char* provider, int offline,
                         int64_t now) {
  /* Only a change writes. An answer while online (every effect settled)
  ** is a probe of the key that finds no offline row; no row is online. */
  static const char online[] =
      "UPDATE effect_provider_link SET offline_since = NULL,"
      " online_since = ?2 WHERE provider = ?1 AND offline_since IS NOT NULL";
  static const char offline_sql[] =
      "INSERT INTO effect_provider_link(provider, offline_since,"
      " online_since) VALUES (?1, ?2, NULL) ON CONFLICT (provider) DO UPDATE"
      " SET offline_since = ?2, online_since = NULL"
      " WHERE effect_provider_link.offline_since IS NULL";
  ob__sql_t s;
  ob__sql_prepare(db, &s, offline ? OB__E_LINK_OFFLINE : OB__E_LINK_NOTE,
                  offline ? offline_sql : online, "provider link");
  ob__sql_text(&s, 1, provider);
  ob__sql_int(&s, 2, now);
  return ob__sql_done(&s);
}

int ob__effect_insert(ob__db_t* db, const char* key, const char* idem_key,
                          const ob_effect_request_t* req,
                          const char* message_id, const char* consumer,
                          int64_t now) {
  /* Either key's UNIQUE decides, atomically, across processes: a second
  ** inserter waits for the first's transaction, then sees the conflict. */
  static const char sql[] =
      "INSERT INTO effect(key, idempotency_key, provider, method, path,"
      " request, state, message_id, consumer_name, next_attempt_at,"
      " created_at, updated_at, lookup_reference, amount, currency)"
      " VALUES (?1,?2,?3,?4,?5,?6,'pending',?7,?8,?9,?9,?9,?10,?11,?12)"
      " ON CONFLICT DO NOTHING RETURNING 1";
  ob__sql_t s;
  int rc, priced = req->amount > 0 && req->currency != NULL;
  ob__sql_prepare(db, &s, OB__E_INSERT, sql, "effect claim");
  ob__sql_text(&s, 1, key);
  ob__sql_text(&s, 2, idem_key);
  ob__sql_text(&s, 3, req->provider);
  ob__sql_text(&s, 4, req->method);
  ob__sql_text(&s, 5, req->path);
  /* An empty body is an empty blob, never NULL. */
  ob__sql_blob(&s, 6, req->body_len ? req->body : "", req->body_len);
  ob__sql_text(&s, 7, message_id);
  ob__sql_text(&s, 8, consumer);
  ob__sql_int(&s, 9, now);
  ob__sql_text(&s, 10, req->lookup_reference);
  if (priced)
    ob__sql_int(&s, 11, req->amount);
  else
    ob__sql_null(&s, 11);
  ob__sql_text(&s, 12, priced ? req->currency : NULL);
  rc = ob__sql_done(&s);
  if (rc > 0 && priced) {
    int r2 = stored_add(db, req->provider, req->currency, req->amount);
    if (r2 < 0) return r2;
  }
  return rc < 0 ? rc : rc > 0;
}

#define DUE(now, bytes)                                                     \
  "SELECT " EFFECT_COLS " FROM effect WHERE state IN ('pending','unknown')" \
  " AND parked_at IS NULL AND next_attempt_at <= ?1 AND (?2 IS NULL OR"     \
  " provider = ?2) AND (lease_until IS NULL OR lease_until <= " now ")"     \
  " ORDER BY next_attempt_at, key" bytes " LIMIT ?3"

int ob__effect_due(ob__db_t* db, const char* provider, int64_t now,
                       int max, ob__effect_row_t* rows) {
  static const ob__sql_text_t sql = {DUE("?1", ""), DUE(NOW_PG, BYTES_PG)};
  ob__sql_t s;
  if (max < 1) return 0;
  ob__sql_prepare2(db, &s, OB__E_DUE, &sql, "due effects");
  ob__sql_int(&s, 1, now);
  ob__sql_text(&s, 2, provider);
  ob__sql_int(&s, 3, max);
  return read_rows(&s, rows, max);
}

/* A call handed out may reach the provider from now on: the first such
** moment is kept (the key's age counts from it). clock_ref is this host's
** now on both, so that re-basing moves next_attempt_at if its clock goes
** back. */
#define LEASE(until, now)                                                   \
  "UPDATE effect SET lease_token = ?2, lease_until = " until ","            \
  " clock_ref = ?4, first_call_at = CASE WHEN ?5 <> 0 THEN"                 \
  " coalesce(first_call_at, ?4) ELSE first_call_at END,"                    \
  " first_call_observed_ms = CASE WHEN ?5 <> 0 THEN"                        \
  " coalesce(first_call_observed_ms, ?6) ELSE first_call_observed_ms END"   \
  " WHERE key = ?1 AND state IN ('pending','unknown') AND parked_at IS NULL" \
  " AND (lease_until IS NULL OR lease_until <= " now ")"

int ob__effect_lease(ob__db_t* db, const char* key, const char* token,
                         int64_t until, int64_t now, int for_call,
                         int64_t observed) {
  static const ob__sql_text_t sql = {LEASE(UNTIL_SQLITE, NOW_SQLITE),
                                     LEASE(UNTIL_PG, NOW_PG)};
  ob__sql_t s;
  ob__sql_prepare2(db, &s, OB__E_LEASE, &sql, "effect lease");
  ob__sql_text(&s, 1, key);
  ob__sql_text(&s, 2, token);
  ob__sql_int(&s, 3, until);
  ob__sql_int(&s, 4, now);
  ob__sql_int(&s, 5, for_call != 0);
  ob__sql_int(&s, 6, observed);
  return ob__sql_done(&s);
}

/* One statement of the lease holder's (?1 key, ?2 token, then ?3.. as
** given), prepared per call on SQLite. The rows changed, or < 0. */
static int held(ob__db_t* db, const ob__sql_text_t* t, const char* key,
                const char* token, int64_t a3, int64_t a4, const char* what) {
  ob__sql_t s;
  ob__sql_prepare2(db, &s, OB__SQL_ONCE, t, what);
  ob__sql_text(&s, 1, key);
  ob__sql_text(&s, 2, token);
  ob__sql_int(&s, 3, a3);
  ob__sql_int(&s, 4, a4);
  return ob__sql_done(&s);
}

int ob__effect_mark_call(ob__db_t* db, const char* key, const char* token,
                             int64_t now, int64_t observed) {
  static const char sql[] =
      "UPDATE effect SET first_call_at = coalesce(first_call_at, ?3),"
      " first_call_observed_ms = coalesce(first_call_observed_ms, ?4)"
      " WHERE key = ?1 AND lease_token = ?2";
  static const ob__sql_text_t t = {sql, sql};
  return held(db, &t, key, token, now, observed, "effect first call");
}

int ob__effect_unlease(ob__db_t* db, const char* key, const char* token,
                           int64_t now) {
  static const char sql[] =
      "UPDATE effect SET lease_token = NULL, lease_until = NULL,"
      " next_attempt_at = CASE WHEN next_attempt_at < ?3 THEN"
      " next_attempt_at ELSE ?3 END, clock_ref = NULL"
      " WHERE key = ?1 AND lease_token = ?2";
  static const ob__sql_text_t t = {sql, sql};
  return held(db, &t, key, token, now, 0, "effect release");
}

#define RENEW(until)                                                        \
  "UPDATE effect SET lease_until = " until ", clock_ref = ?4 WHERE key = ?1" \
  " AND lease_token = ?2 AND state IN ('pending','unknown')"

int ob__effect_lease_renew(ob__db_t* db, const char* key,
                               const char* token, int64_t until,
                               int64_t now) {
  static const ob__sql_text_t t = {RENEW(UNTIL_SQLITE), RENEW(UNTIL_PG)};
  return held(db, &t, key, token, until, now, "effect lease renewal");
}

int ob__effect_update(ob__db_t* db, const char* key, const char* token,
                          const ob__effect_update_t* u, int64_t now) {
  /* clock_ref only while the effect stays open with a retry ahead. */
  static const char sql[] =
      "UPDATE effect SET state = ?3, reference = coalesce(?4, reference),"
      " response = coalesce(?5, response),"
      " http_status = CASE WHEN ?6 > 0 THEN ?6 ELSE http_status END,"
      " reason = ?7, calls = calls + ?8, lookups = lookups + ?9,"
      " successes = successes + ?10, attempts = ?11, next_attempt_at = ?12,"
      " parked_at = ?13, lease_token = NULL, lease_until = NULL,"
      " updated_at = ?14, park_cause = ?15,"
      " first_call_at = CASE WHEN ?16 <> 0 THEN NULL ELSE first_call_at END,"
      " first_call_observed_ms = CASE WHEN ?16 <> 0 THEN NULL ELSE"
      " first_call_observed_ms END,"
      " clock_ref = CASE WHEN ?3 IN ('pending','unknown')"
      " AND ?12 > ?14 THEN ?14 END"
      " WHERE key = ?1 AND state IN ('pending','unknown')"
      " AND (?2 IS NULL OR lease_token = ?2)";
  ob__sql_t s;
  int rc;
  /* Callers compute the state (ob_effect_resolve checks the caller's): an
  ** unnamed one would bind NULL and break the row's CHECK. */
  OB__ASSERT(u->state >= OB_EFFECT_PENDING && u->state <= OB_EFFECT_FAILED);
  ob__sql_prepare(db, &s, OB__E_UPDATE, sql, "effect outcome");
  ob__sql_text(&s, 1, key);
  ob__sql_text(&s, 2, token);
  ob__sql_text(&s, 3, state_names[u->state]);
  ob__sql_text(&s, 4, u->reference);
  ob__sql_blob(&s, 5, u->response, u->response_len);
  ob__sql_int(&s, 6, u->http_status);
  ob__sql_text(&s, 7, u->reason);
  ob__sql_int(&s, 8, u->add_calls);
  ob__sql_int(&s, 9, u->add_lookups);
  ob__sql_int(&s, 10, u->add_successes);
  ob__sql_int(&s, 11, u->attempts);
  ob__sql_int(&s, 12, u->next_attempt_at);
  if (u->parked_at > 0)
    ob__sql_int(&s, 13, u->parked_at);
  else
    ob__sql_null(&s, 13);
  ob__sql_int(&s, 14, now);
  ob__sql_text(&s, 15, u->parked_at > 0 ? u->park_cause : NULL);
  ob__sql_int(&s, 16, u->clear_first_call != 0);
  rc = ob__sql_done(&s);
  /* Open to final: it is no longer stored. */
  if (rc > 0 && u->currency != NULL &&
      (u->state == OB_EFFECT_CONFIRMED || u->state == OB_EFFECT_FAILED)) {
    int r2 = stored_settle(db, u->provider, u->currency, u->amount);
    if (r2 < 0) return r2;
  }
  return rc;
}

int ob__effect_next_due_db(ob__db_t* db, const char* provider,
                               int64_t now, int64_t* at) {
  /* A lease's end on the caller's clock: on PostgreSQL now plus what is
  ** left of it. NULL (no open effect) is OB_ENOTFOUND. */
  static const ob__sql_text_t sql = {
      "SELECT min(max(next_attempt_at, coalesce(lease_until, 0))) FROM effect"
      " WHERE state IN ('pending','unknown') AND parked_at IS NULL"
      " AND (?1 IS NULL OR provider = ?1)",
      "SELECT min(GREATEST(next_attempt_at, coalesce(?2 + (lease_until - "
      OB__PG_SERVER_MS "), 0))) FROM effect WHERE state IN"
      " ('pending','unknown') AND parked_at IS NULL AND (?1 IS NULL OR"
      " provider = ?1)"};
  ob__sql_t s;
  ob__sql_prepare2(db, &s, OB__E_NEXT_DUE, &sql, "next due effect");
  ob__sql_text(&s, 1, provider);
  ob__sql_int(&s, 2, now);
  return ob__sql_int1(&s, at);
}

#define LIST(bytes)                                                         \
  "SELECT " EFFECT_COLS " FROM effect WHERE (?1 IS NULL OR state = ?1)"     \
  " AND (?2 = 0 OR parked_at IS NOT NULL) AND (?3 IS NULL OR key = ?3)"     \
  " ORDER BY key" bytes

int ob__effect_list(ob__db_t* db, int state, const char* key,
                        int (*cb)(void* arg, const ob_effect_t* ef),
                        void* arg) {
  /* state 0: all, > 0: that state, < 0: the parked ones. */
  static const ob__sql_text_t sql = {LIST(""), LIST(BYTES_PG)};
  ob__sql_t s;
  int rc, n = 0;
  ob__sql_prepare2(db, &s, OB__SQL_ONCE, &sql, "effect list");
  ob__sql_text(&s, 1, state > 0 ? ob_effect_state_name(state) : NULL);
  ob__sql_int(&s, 2, state < 0);
  ob__sql_text(&s, 3, key);
  while ((rc = ob__sql_step(&s)) > 0) {
    ob__effect_row_t r;
    ob_effect_t ef;
    int stop;
    if (read_row(&s, &r) < 0) {
      rc = ob__db_seterr(db, OB_ENOMEM, "effect list: out of memory");
      break;
    }
    ob__effect_row_view(&r, &ef);
    n++;
    stop = cb != NULL && cb(arg, &ef) != 0;
    ob__effect_row_free(&r);
    if (stop) break;
  }
  ob__sql_finish(&s);
  return rc < 0 ? rc : n;
}

int ob__effect_reconcile(ob__db_t* db, const char* key, int64_t now) {
  static const char sql[] =
      "UPDATE effect SET attempts = 0, parked_at = NULL, park_cause = NULL,"
      " next_attempt_at = ?2, lease_token = NULL, lease_until = NULL,"
      " updated_at = ?2, clock_ref = NULL"
      " WHERE state IN ('pending','unknown') AND (?1 IS NULL OR key = ?1)";
  ob__sql_t s;
  ob__sql_prepare(db, &s, OB__SQL_ONCE, sql, "effect reconcile");
  ob__sql_text(&s, 1, key);
  ob__sql_int(&s, 2, now);
  return ob__sql_done(&s);
}
