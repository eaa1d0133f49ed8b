/* SPDX-License-Identifier: Apache-2.0 */
/*
** Self-test of the payment provider simulator (provider_sim.mjs) through
** its C wrapper (provider_sim_util.h), with oncebox's own HTTP client over
** real TLS: certificates from gen_pki.sh made now, the client trusting only
** the test CA and checking the name localhost (resolved to 127.0.0.1 by the
** client's resolve override).
**
** Covered: a charge and its replay (same answer, Idempotent-Replayed, no new
** charge); same key with another body (422); missing or empty key (400);
** invalid bodies (400, key not burnt); a decline (402) and its replay;
** lookup by key (found, 404, 400, lookup_error_5xx); unknown routes (404);
** --no-idempotency (every POST charges); --no-lookup (501); --require-auth
** (401 for charges, lookups and other routes before anything else, the value
** quoted through the wrapper); each fault mode:
** slow (HELD seen, held counter, a concurrent same-key request gets 409,
** charge_first, a client that gives up before the provider charges, the
** request after a held answer on the same connection),
** drop_after_charge, error_5xx, error_5xx_after_charge, rate_limited,
** die_after_charge and die_before_charge with ps_restart (charges and keys
** remembered), SIGKILL with ps_kill; the control channel's errors and exit.
**
** Profiles and the simulator's clock: stripe (replay with
** Idempotent-Replayed, a 402 replayed, pruning after the retention so that
** the old key charges again, 400 idempotency_error for other parameters,
** 409 idempotency_key_in_use while the first request is held, no key
** needed), ietf (400/422/409 as problem+json, replays without a marker, a
** quoted sf-string key), error_500_saved (the 500 saved and replayed, with
** and without a charge, across SIGKILL), the clock (advance, clock, key,
** --clock-offset-ms, the offset kept across restarts, the default profile
** never pruning unless told; keys named constructor and __proto__).
**
** Skips every case, with a message, when node (>= 18), openssl or faketime
** (gen_pki.sh) is missing.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <cjson/cJSON.h>

#include "tests/integration/fence/provider_sim_util.h"
#include "tests/integration/http/http_test_util.h"
#include "tests/support/testsupport.h"

static struct {
  const char* skip;
  char* dir;
  char* pki;
  char* ca;
} g;

typedef struct fix_s {
  char* dir;
  char* state_path;
  uv_loop_t loop;
  ob__http_client_t* client;
  ps_sim_t* sim;
  const char* auth;  /* Authorization header of every request, or NULL */
} fix_t;

/* A request with its own result; res.r first, so ht_on_response (which
** reads req->data as an ht_result_t) fills it. */
typedef struct res_s {
  ht_result_t r;
  int replayed;          /* Idempotent-Replayed: true */
  int has_replayed;      /* an Idempotent-Replayed header at all */
  char retry_after[16];
  char content_type[64];
} res_t;

typedef struct call_s {
  ob__http_req_t req;
  res_t res;
  uint64_t started_ms;
} call_t;

static const ob__http_resolve_t k_resolve[] = {{"localhost", "127.0.0.1"}};

static const char* const k_key_required =
    "{\"error\":{\"type\":\"invalid_request_error\",\"message\":"
    "\"Idempotency-Key header is required\"}}";
static const char* const k_unauthorized =
    "{\"error\":{\"type\":\"authentication_error\",\"message\":"
    "\"Invalid API key provided\"}}";
static const char* const k_key_mismatch =
    "{\"error\":{\"type\":\"idempotency_error\",\"message\":\"Keys for "
    "idempotent requests can only be used with the same parameters they were "
    "first used with.\"}}";
static const char* const k_declined =
    "{\"error\":{\"type\":\"card_error\",\"code\":\"card_declined\","
    "\"message\":\"Your card was declined.\"}}";
static const char* const k_no_such_charge =
    "{\"error\":{\"type\":\"invalid_request_error\",\"message\":"
    "\"No such charge\"}}";
static const char* const k_unavailable =
    "{\"error\":{\"type\":\"api_error\",\"message\":\"Service unavailable\"}}";

/* ---- fixture -------------------------------------------------------------- */

static int tool_missing(const char* tool) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", tool);
  return system(cmd) != 0;
}

static int group_setup(void** state) {
  (void)state;
  if (!ps_node_available())
    g.skip = "skipped: node not found (install Node.js >= 18)";
  else if (tool_missing("openssl"))
    g.skip = "skipped: openssl not found (apt-get install openssl)";
  else if (tool_missing("faketime"))
    g.skip = "skipped: faketime not found, gen_pki.sh needs it "
             "(apt-get install faketime)";
  if (g.skip != NULL) {
    printf("%s\n", g.skip);
    return 0;
  }
  g.dir = ts_mkdtemp("provider-sim");
  g.pki = ts_path(g.dir, "pki");
  g.ca = ts_path(g.pki, "ca.crt");
  if (ht_gen_pki(g.pki) != 0) {
    fprintf(stderr, "gen_pki.sh failed\n");
    return -1;
  }
  return 0;
}

static int group_teardown(void** state) {
  (void)state;
  free(g.ca);
  free(g.pki);
  if (g.dir != NULL) ts_rmdir(g.dir);
  return 0;
}

static int setup(void** state) {
  fix_t* f;
  *state = NULL;
  if (g.skip != NULL) return 0;  /* the test body skips */
  f = calloc(1, sizeof *f);
  if (f == NULL) return -1;
  f->dir = ts_mkdtemp("provider-sim-case");
  f->state_path = ts_path(f->dir, "state.json");
  uv_loop_init(&f->loop);
  *state = f;
  return 0;
}

static void close_client(fix_t* f) {
  if (f->client == NULL) return;
  ht_close_client(&f->loop, f->client);
  f->client = NULL;
}

static int teardown(void** state) {
  fix_t* f = *state;
  if (f == NULL) return 0;
  close_client(f);
  uv_run(&f->loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&f->loop), 0);
  ps_stop(f->sim);
  free(f->state_path);
  ts_rmdir(f->dir);
  free(f);
  return 0;
}

#define FIX          \
  fix_t* f = *state; \
  if (f == NULL) {   \
    skip();          \
    return;          \
  }

static void open_client(fix_t* f) {
  ob__http_config_t cfg;
  char err[256] = "";
  int rc;
  ob__http_config_init(&cfg);
  cfg.ca_file = g.ca;
  cfg.resolve = k_resolve;
  cfg.nresolve = 1;
  cfg.connect_timeout_ms = 5000;
  cfg.request_timeout_ms = 10000;
  rc = ob__http_client_open(&f->client, &f->loop, &cfg, err, sizeof err);
  if (rc != 0) fprintf(stderr, "client_open: %s\n", err);
  assert_int_equal(rc, 0);
}

/* Start the simulator (flags as ps_start) and a client for it. */
static void start(fix_t* f, const char* flags) {
  f->sim = ps_start(g.pki, f->state_path, 0, flags);
  assert_non_null(f->sim);
  assert_true(ps_port(f->sim) > 0);
  open_client(f);
}

/* The same through ps_start_profile. */
static void start_profile(fix_t* f, const char* profile, long long retention,
                          const char* flags) {
  f->sim = ps_start_profile(g.pki, f->state_path, 0, profile, retention, flags);
  assert_non_null(f->sim);
  assert_true(ps_port(f->sim) > 0);
  open_client(f);
}

/* ---- requests ------------------------------------------------------------ */

static void on_response(ob__http_req_t* req, int status,
                        const ob__http_response_t* res) {
  res_t* x = req->data;
  const char* v;
  ht_on_response(req, status, res);
  v = ob__http_header_get(res, "Idempotent-Replayed");
  x->replayed = v != NULL && strcmp(v, "true") == 0;
  x->has_replayed = v != NULL;
  v = ob__http_header_get(res, "Retry-After");
  snprintf(x->retry_after, sizeof x->retry_after, "%s", v ? v : "");
  v = ob__http_header_get(res, "Content-Type");
  snprintf(x->content_type, sizeof x->content_type, "%s", v ? v : "");
}

/* Submit without waiting. key NULL: no Idempotency-Key header. */
static void submit(fix_t* f, call_t* c, const char* method, const char* path,
                   const char* key, const char* body, uint64_t timeout_ms) {
  char url[512];
  ob__http_header_t h[3];
  size_t nh = 0;
  snprintf(url, sizeof url, "https://localhost:%d%s", ps_port(f->sim), path);
  if (key != NULL) h[nh++] = (ob__http_header_t){"Idempotency-Key", key};
  if (f->auth != NULL) h[nh++] = (ob__http_header_t){"Authorization", f->auth};
  h[nh++] = (ob__http_header_t){"Content-Type", "application/json"};
  memset(c, 0, sizeof *c);
  c->req.data = &c->res;
  c->req.method = method;
  c->req.url = url;
  c->req.headers = h;
  c->req.nheaders = nh;
  c->req.body = body;
  c->req.body_len = body ? strlen(body) : 0;
  c->req.timeout_ms = timeout_ms;
  c->started_ms = ht_now_ms();
  assert_int_equal(ob__http_request(f->client, &c->req, on_response), 0);
}

static void wait_call(fix_t* f, call_t* c) {
  while (!c->res.r.done)
    if (uv_run(&f->loop, UV_RUN_ONCE) == 0 && !c->res.r.done) fail();
  assert_int_equal(c->res.r.calls, 1);
}

static void call_free(call_t* c) { ht_result_free(&c->res.r); }

/* Blocking request: returns the callback status. */
static int fetch(fix_t* f, call_t* c, const char* method, const char* path,
                 const char* key, const char* body) {
  submit(f, c, method, path, key, body, 0);
  wait_call(f, c);
  return c->res.r.status;
}

/* POST /v1/charges with a valid body: order, amount, EUR. */
static int charge(fix_t* f, call_t* c, const char* key, const char* order,
                  long amount) {
  char body[256];
  snprintf(body, sizeof body,
           "{\"order_id\":\"%s\",\"amount_minor\":%ld,\"currency\":\"EUR\"}",
           order, amount);
  return fetch(f, c, "POST", "/v1/charges", key, body);
}

static int lookup(fix_t* f, call_t* c, const char* key) {
  char path[256];
  snprintf(path, sizeof path, "/v1/charges?idempotency_key=%s", key);
  return fetch(f, c, "GET", path, NULL, NULL);
}

/* The string field `name` of a JSON body (malloc'd), NULL if absent. */
static char* json_str(const char* body, const char* name) {
  cJSON* j = cJSON_Parse(body);
  const cJSON* v = cJSON_GetObjectItemCaseSensitive(j, name);
  char* s = cJSON_IsString(v) ? strdup(v->valuestring) : NULL;
  cJSON_Delete(j);
  return s;
}

static long json_num(const char* body, const char* name) {
  cJSON* j = cJSON_Parse(body);
  const cJSON* v = cJSON_GetObjectItemCaseSensitive(j, name);
  long n = cJSON_IsNumber(v) ? (long)v->valuedouble : -1;
  cJSON_Delete(j);
  return n;
}

/* A charge body as the spec says: ch_ + 16 hex, the request's fields. */
static void check_charge(const char* body, const char* key, const char* order,
                         long amount) {
  char* id = json_str(body, "id");
  char* s;
  assert_non_null(id);
  assert_int_equal(strlen(id), 19);
  assert_memory_equal(id, "ch_", 3);
  assert_int_equal(strspn(id + 3, "0123456789abcdef"), 16);
  free(id);
  s = json_str(body, "object");
  assert_string_equal(s, "charge");
  free(s);
  s = json_str(body, "order_id");
  assert_string_equal(s, order);
  free(s);
  s = json_str(body, "currency");
  assert_string_equal(s, "EUR");
  free(s);
  s = json_str(body, "status");
  assert_string_equal(s, "succeeded");
  free(s);
  if (key != NULL) {
    s = json_str(body, "idempotency_key");
    assert_string_equal(s, key);
    free(s);
  }
  assert_int_equal(json_num(body, "amount_minor"), amount);
  assert_true(json_num(body, "created") > 1600000000L);
}

/* Run the loop (so requests progress) until the simulator printed n lines
** starting with prefix. */
static void pump_until_lines(fix_t* f, const char* prefix, int n,
                             int timeout_ms) {
  uint64_t end = ht_now_ms() + (uint64_t)timeout_ms;
  while (ps_wait_lines(f->sim, prefix, n, 0) < n) {
    if (ht_now_ms() > end) {
      char* o = ps_output(f->sim);
      fprintf(stderr, "no %d '%s' lines; output:\n%s\n", n, prefix, o);
      free(o);
      fail();
    }
    uv_run(&f->loop, UV_RUN_NOWAIT);
    usleep(2 * 1000);
  }
}

static ps_stats_t stats(fix_t* f) {
  ps_stats_t s;
  memset(&s, 0xff, sizeof s);
  assert_int_equal(ps_stats(f->sim, &s), 0);
  return s;
}

/* ---- idempotency ----------------------------------------------------------- */

static void test_charge_and_replay(void** state) {
  FIX;
  call_t a, b;
  ps_stats_t s;
  ob__http_stats_t hs;
  start(f, NULL);
  assert_int_equal(charge(f, &a, "key-1", "o-1", 1250), 0);
  assert_int_equal(a.res.r.http_status, 200);
  assert_int_equal(a.res.replayed, 0);
  check_charge(a.res.r.body, "key-1", "o-1", 1250);
  assert_int_equal(ps_wait_lines(f->sim, "CHARGED o-1 ch_", 1, 5000), 1);

  /* The replay: the stored answer byte for byte, flagged, no new charge. */
  assert_int_equal(charge(f, &b, "key-1", "o-1", 1250), 0);
  assert_int_equal(b.res.r.http_status, 200);
  assert_int_equal(b.res.replayed, 1);
  assert_string_equal(b.res.r.body, a.res.r.body);
  assert_int_equal(ps_charges(f->sim, "o-1"), 1);
  assert_int_equal(ps_charges(f->sim, "o-none"), 0);
  assert_int_equal(ps_wait_lines(f->sim, "CHARGED ", 1, 0), 1);
  s = stats(f);
  assert_int_equal(s.charges_total, 1);
  assert_int_equal(s.orders_charged, 1);
  assert_int_equal(s.max_charges_per_order, 1);
  assert_int_equal(s.requests, 2);
  assert_int_equal(s.posts, 2);
  assert_int_equal(s.replays, 1);
  assert_int_equal(s.lookups, 0);
  assert_int_equal(s.held, 0);
  /* Keep-alive: both requests on one connection. */
  ob__http_client_stats(f->client, &hs);
  assert_int_equal(hs.connections_opened, 1);
  assert_int_equal(hs.connections_reused, 1);
  call_free(&a);
  call_free(&b);
}

static void test_same_key_other_body(void** state) {
  FIX;
  call_t c;
  start(f, NULL);
  assert_int_equal(charge(f, &c, "key-2", "o-2", 100), 0);
  assert_int_equal(c.res.r.http_status, 200);
  call_free(&c);
  assert_int_equal(charge(f, &c, "key-2", "o-2", 101), 0);
  assert_int_equal(c.res.r.http_status, 422);
  assert_string_equal(c.res.r.body, k_key_mismatch);
  assert_int_equal(c.res.replayed, 0);
  call_free(&c);
  assert_int_equal(charge(f, &c, "key-2", "o-other", 100), 0);
  assert_int_equal(c.res.r.http_status, 422);
  call_free(&c);
  assert_int_equal(ps_charges(f->sim, "o-2"), 1);
  assert_int_equal(ps_charges(f->sim, "o-other"), 0);
  assert_int_equal(stats(f).replays, 0);
}

static void test_missing_key(void** state) {
  FIX;
  call_t c;
  start(f, NULL);
  assert_int_equal(charge(f, &c, NULL, "o-3", 100), 0);
  assert_int_equal(c.res.r.http_status, 400);
  assert_string_equal(c.res.r.body, k_key_required);
  call_free(&c);
  assert_int_equal(charge(f, &c, "", "o-3", 100), 0);
  assert_int_equal(c.res.r.http_status, 400);
  assert_string_equal(c.res.r.body, k_key_required);
  call_free(&c);
  assert_int_equal(ps_charges(f->sim, "o-3"), 0);
  assert_int_equal(stats(f).charges_total, 0);
}

static void test_invalid_bodies(void** state) {
  FIX;
  static const struct {
    const char* body;
    const char* message;
  } k_cases[] = {
      {"not json", "Invalid JSON in request body"},
      {"", "Invalid JSON in request body"},
      {"[1,2]", "Request body must be a JSON object"},
      {"{\"amount_minor\":100,\"currency\":\"EUR\"}",
       "order_id must be a string of 1 to 255 characters"},
      {"{\"order_id\":\"\",\"amount_minor\":100,\"currency\":\"EUR\"}",
       "order_id must be a string of 1 to 255 characters"},
      {"{\"order_id\":7,\"amount_minor\":100,\"currency\":\"EUR\"}",
       "order_id must be a string of 1 to 255 characters"},
      {"{\"order_id\":\"o-4\",\"amount_minor\":0,\"currency\":\"EUR\"}",
       "amount_minor must be a positive integer"},
      {"{\"order_id\":\"o-4\",\"amount_minor\":-5,\"currency\":\"EUR\"}",
       "amount_minor must be a positive integer"},
      {"{\"order_id\":\"o-4\",\"amount_minor\":1.5,\"currency\":\"EUR\"}",
       "amount_minor must be a positive integer"},
      {"{\"order_id\":\"o-4\",\"amount_minor\":\"100\",\"currency\":\"EUR\"}",
       "amount_minor must be a positive integer"},
      {"{\"order_id\":\"o-4\",\"amount_minor\":100,\"currency\":\"eur\"}",
       "currency must be 3 upper-case letters"},
      {"{\"order_id\":\"o-4\",\"amount_minor\":100,\"currency\":\"EURO\"}",
       "currency must be 3 upper-case letters"},
      {"{\"order_id\":\"o-4\",\"amount_minor\":100}",
       "currency must be 3 upper-case letters"},
      {"{\"order_id\":\"o-4\",\"amount_minor\":100,\"currency\":\"EUR\","
       "\"tip\":1}",
       "Received unknown parameter: tip"},
  };
  call_t c;
  start(f, NULL);
  for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; i++) {
    char want[512];
    snprintf(want, sizeof want,
             "{\"error\":{\"type\":\"invalid_request_error\",\"message\":"
             "\"%s\"}}",
             k_cases[i].message);
    assert_int_equal(
        fetch(f, &c, "POST", "/v1/charges", "key-4", k_cases[i].body), 0);
    assert_int_equal(c.res.r.http_status, 400);
    assert_string_equal(c.res.r.body, want);
    call_free(&c);
  }
  assert_int_equal(stats(f).charges_total, 0);
  /* Refused requests store nothing: the key is still free. */
  assert_int_equal(charge(f, &c, "key-4", "o-4", 100), 0);
  assert_int_equal(c.res.r.http_status, 200);
  assert_int_equal(c.res.replayed, 0);
  call_free(&c);
  assert_int_equal(ps_charges(f->sim, "o-4"), 1);
}

static void test_decline_and_replay(void** state) {
  FIX;
  call_t c;
  start(f, NULL);
  assert_int_equal(charge(f, &c, "key-5", "o-5", 402), 0);
  assert_int_equal(c.res.r.http_status, 402);
  assert_string_equal(c.res.r.body, k_declined);
  assert_int_equal(c.res.replayed, 0);
  call_free(&c);
  assert_int_equal(charge(f, &c, "key-5", "o-5", 402), 0);
  assert_int_equal(c.res.r.http_status, 402);
  assert_string_equal(c.res.r.body, k_declined);
  assert_int_equal(c.res.replayed, 1);
  call_free(&c);
  /* The key holds the decline: another amount under it is a mismatch. */
  assert_int_equal(charge(f, &c, "key-5", "o-5", 500), 0);
  assert_int_equal(c.res.r.http_status, 422);
  call_free(&c);
  /* A decline is no charge: nothing to look up. */
  assert_int_equal(lookup(f, &c, "key-5"), 0);
  assert_int_equal(c.res.r.http_status, 404);
  call_free(&c);
  assert_int_equal(ps_charges(f->sim, "o-5"), 0);
  assert_int_equal(stats(f).charges_total, 0);
  assert_int_equal(ps_wait_lines(f->sim, "CHARGED ", 1, 0), -1);
}

static void test_lookup(void** state) {
  FIX;
  call_t a, c;
  start(f, NULL);
  assert_int_equal(charge(f, &a, "key-6", "o-6", 600), 0);
  assert_int_equal(a.res.r.http_status, 200);
  assert_int_equal(lookup(f, &c, "key-6"), 0);
  assert_int_equal(c.res.r.http_status, 200);
  assert_string_equal(c.res.r.body, a.res.r.body);
  call_free(&c);
  assert_int_equal(lookup(f, &c, "key-unknown"), 0);
  assert_int_equal(c.res.r.http_status, 404);
  assert_string_equal(c.res.r.body, k_no_such_charge);
  call_free(&c);
  assert_int_equal(fetch(f, &c, "GET", "/v1/charges", NULL, NULL), 0);
  assert_int_equal(c.res.r.http_status, 400);
  call_free(&c);
  assert_int_equal(stats(f).lookups, 3);

  /* lookup_error_5xx: the next lookup fails, POSTs are not affected. */
  assert_int_equal(ps_mode(f->sim, "lookup_error_5xx", 1, 0, 0), 0);
  assert_int_equal(charge(f, &c, "key-6b", "o-6b", 600), 0);
  assert_int_equal(c.res.r.http_status, 200);
  call_free(&c);
  assert_int_equal(lookup(f, &c, "key-6"), 0);
  assert_int_equal(c.res.r.http_status, 503);
  assert_string_equal(c.res.r.body, k_unavailable);
  call_free(&c);
  assert_int_equal(lookup(f, &c, "key-6"), 0);
  assert_int_equal(c.res.r.http_status, 200);
  assert_string_equal(c.res.r.body, a.res.r.body);
  call_free(&c);
  call_free(&a);
}

static void test_unknown_routes(void** state) {
  FIX;
  static const char* const k_routes[][2] = {
      {"GET", "/"},
      {"POST", "/v1/charges/x"},
      {"PUT", "/v1/charges"},
      {"DELETE", "/v1/charges?idempotency_key=k"},
      {"GET", "/v1/refunds"},
  };
  call_t c;
  start(f, NULL);
  for (size_t i = 0; i < sizeof k_routes / sizeof k_routes[0]; i++) {
    assert_int_equal(fetch(f, &c, k_routes[i][0], k_routes[i][1], "key-7",
                           "{}"),
                     0);
    assert_int_equal(c.res.r.http_status, 404);
    call_free(&c);
  }
  assert_int_equal(stats(f).charges_total, 0);
}

static void test_no_idempotency(void** state) {
  FIX;
  call_t a, b, c;
  char* ida;
  char* idb;
  char* st;
  ps_stats_t s;
  start(f, "--no-idempotency");
  assert_int_equal(charge(f, &a, "key-8", "o-8", 800), 0);
  assert_int_equal(a.res.r.http_status, 200);
  assert_int_equal(charge(f, &b, "key-8", "o-8", 800), 0);
  assert_int_equal(b.res.r.http_status, 200);
  assert_int_equal(b.res.replayed, 0);
  ida = json_str(a.res.r.body, "id");
  idb = json_str(b.res.r.body, "id");
  assert_string_not_equal(ida, idb);  /* a second, real charge */
  /* No key at all is fine too: keys are ignored. */
  assert_int_equal(charge(f, &c, NULL, "o-8", 800), 0);
  assert_int_equal(c.res.r.http_status, 200);
  call_free(&c);
  assert_int_equal(ps_charges(f->sim, "o-8"), 3);
  assert_int_equal(ps_wait_lines(f->sim, "CHARGED o-8 ", 3, 5000), 3);
  s = stats(f);
  assert_int_equal(s.charges_total, 3);
  assert_int_equal(s.orders_charged, 1);
  assert_int_equal(s.max_charges_per_order, 3);
  assert_int_equal(s.replays, 0);
  st = ps_command(f->sim, "{\"cmd\":\"stats\"}");
  assert_non_null(st);
  assert_non_null(strstr(st, "\"orders_charged_twice\":[\"o-8\"]"));
  free(st);
  free(ida);
  free(idb);
  call_free(&a);
  call_free(&b);
}

static void test_no_lookup(void** state) {
  FIX;
  call_t c;
  start(f, "--no-lookup");
  assert_int_equal(charge(f, &c, "key-9", "o-9", 900), 0);
  assert_int_equal(c.res.r.http_status, 200);
  call_free(&c);
  assert_int_equal(lookup(f, &c, "key-9"), 0);
  assert_int_equal(c.res.r.http_status, 501);
  assert_string_equal(c.res.r.body,
                      "{\"error\":{\"message\":\"lookup not supported\"}}");
  call_free(&c);
  /* Keys still work. */
  assert_int_equal(charge(f, &c, "key-9", "o-9", 900), 0);
  assert_int_equal(c.res.r.http_status, 200);
  assert_int_equal(c.res.replayed, 1);
  call_free(&c);
  assert_int_equal(ps_charges(f->sim, "o-9"), 1);
}

/* --require-auth: anything without exactly that Authorization is refused
** 401 before it is looked at: no charge, the key stays free, a fault mode is
** not used up; lookups and unknown routes too. The value has a space: the
** wrapper passes it quoted. */
static void test_require_auth(void** state) {
  FIX;
  call_t c;
  ps_stats_t s;
  char* out;
  start(f, "--require-auth 'Bearer sk_test_4eC39HqLyjWDarjtT1zdp7dc'");
  assert_int_equal(ps_mode(f->sim, "error_5xx", 1, 0, 0), 0);
  for (int i = 0; i < 3; i++) {
    f->auth = i == 0   ? NULL
              : i == 1 ? "Bearer sk_test_wrong"
                       : "bearer sk_test_4eC39HqLyjWDarjtT1zdp7dc";
    assert_int_equal(charge(f, &c, "key-a", "o-a", 100), 0);
    assert_int_equal(c.res.r.http_status, 401);
    assert_string_equal(c.res.r.body, k_unauthorized);
    call_free(&c);
    assert_int_equal(lookup(f, &c, "key-a"), 0);
    assert_int_equal(c.res.r.http_status, 401);
    assert_string_equal(c.res.r.body, k_unauthorized);
    call_free(&c);
    assert_int_equal(fetch(f, &c, "GET", "/v1/nothing", NULL, NULL), 0);
    assert_int_equal(c.res.r.http_status, 401);
    call_free(&c);
  }
  s = stats(f);
  assert_int_equal(s.unauthorized, 9);
  assert_int_equal(s.requests, 9);
  assert_int_equal(s.posts, 0);
  assert_int_equal(s.lookups, 0);
  assert_int_equal(s.charges_total, 0);
  assert_int_equal(ps_wait_lines(f->sim, "REQ POST /v1/charges 401", 3, 0), 3);
  assert_int_equal(ps_wait_lines(f->sim, "REQ GET /v1/charges 401", 3, 0), 3);

  /* The right value: the fault mode is still there, then the key is free. */
  f->auth = "Bearer sk_test_4eC39HqLyjWDarjtT1zdp7dc";
  assert_int_equal(charge(f, &c, "key-a", "o-a", 100), 0);
  assert_int_equal(c.res.r.http_status, 503);
  call_free(&c);
  assert_int_equal(lookup(f, &c, "key-a"), 0);
  assert_int_equal(c.res.r.http_status, 404);
  call_free(&c);
  assert_int_equal(charge(f, &c, "key-a", "o-a", 100), 0);
  assert_int_equal(c.res.r.http_status, 200);
  assert_int_equal(c.res.replayed, 0);
  call_free(&c);
  assert_int_equal(lookup(f, &c, "key-a"), 0);
  assert_int_equal(c.res.r.http_status, 200);
  call_free(&c);
  assert_int_equal(ps_charges(f->sim, "o-a"), 1);
  assert_int_equal(stats(f).unauthorized, 9);
  /* ps_restart keeps the flags (and so the quoted value). */
  assert_int_equal(ps_restart(f->sim), 0);
  f->auth = NULL;
  assert_int_equal(lookup(f, &c, "key-a"), 0);
  assert_int_equal(c.res.r.http_status, 401);
  call_free(&c);
  /* The simulator never prints the value. */
  out = ps_output(f->sim);
  assert_null(strstr(out, "4eC39HqLyjWDarjtT1zdp7dc"));
  assert_null(strstr(out, "sk_test_wrong"));
  free(out);
}

/* ---- fault modes ----------------------------------------------------------- */

static void test_slow(void** state) {
  FIX;
  call_t a, b, c;
  ps_stats_t s;
  uint64_t took;
  start(f, NULL);
  assert_int_equal(ps_mode(f->sim, "slow", 1, 800, 0), 0);
  submit(f, &a, "POST", "/v1/charges", "key-10",
         "{\"order_id\":\"o-10\",\"amount_minor\":1000,\"currency\":\"EUR\"}",
         0);
  pump_until_lines(f, "HELD o-10", 1, 5000);
  s = stats(f);
  assert_int_equal(s.held, 1);
  assert_int_equal(s.charges_total, 0);  /* charged after the wait */

  /* The same key while the first is held: 409, no charge. */
  assert_int_equal(charge(f, &b, "key-10", "o-10", 1000), 0);
  assert_int_equal(b.res.r.http_status, 409);
  assert_non_null(strstr(b.res.r.body, "\"code\":\"idempotency_key_in_use\""));
  call_free(&b);

  wait_call(f, &a);
  took = ht_now_ms() - a.started_ms;
  assert_int_equal(a.res.r.status, 0);
  assert_int_equal(a.res.r.http_status, 200);
  check_charge(a.res.r.body, "key-10", "o-10", 1000);
  assert_true(took >= 700);
  s = stats(f);
  assert_int_equal(s.held, 0);
  assert_int_equal(s.charges_total, 1);
  call_free(&a);

  /* count 1: the next request is normal again. */
  assert_int_equal(charge(f, &c, "key-10b", "o-10b", 1000), 0);
  assert_int_equal(c.res.r.http_status, 200);
  call_free(&c);
  assert_int_equal(ps_wait_lines(f->sim, "HELD ", 1, 0), 1);  /* not held */
}

/* A request that follows a held answer on the same keep-alive connection
** is answered. Node queues its response until the held one has finished
** writing; the simulator used to take that queued response (no socket yet)
** for a dead connection and never sent it, and the client waited out its
** deadline (from the second round on, every time, before the fix). */
static void test_slow_then_next_on_same_connection(void** state) {
  FIX;
  call_t a, b, c;
  char key[32], order[32], body[128], held[48];
  start(f, NULL);
  for (int i = 0; i < 8; i++) {
    snprintf(key, sizeof key, "n-key-%d", i);
    snprintf(order, sizeof order, "n-o-%d", i);
    snprintf(held, sizeof held, "HELD %s", order);
    snprintf(body, sizeof body,
             "{\"order_id\":\"%s\",\"amount_minor\":100,"
             "\"currency\":\"EUR\"}",
             order);
    assert_int_equal(ps_mode(f->sim, "slow", 1, 200, 0), 0);
    submit(f, &a, "POST", "/v1/charges", key, body, 0);
    pump_until_lines(f, held, 1, 5000);
    assert_int_equal(charge(f, &b, key, order, 100), 0);  /* 2nd connection */
    assert_int_equal(b.res.r.http_status, 409);
    call_free(&b);
    wait_call(f, &a);
    assert_int_equal(a.res.r.http_status, 200);
    call_free(&a);
    snprintf(key, sizeof key, "n-next-%d", i);
    assert_int_equal(charge(f, &c, key, order, 100), 0);
    assert_int_equal(c.res.r.http_status, 200);
    call_free(&c);
  }
}

/* A pooled TLS connection, so that a short client deadline is spent
** waiting for the answer, not on the handshake. */
static void warm_up(fix_t* f) {
  call_t c;
  assert_int_equal(lookup(f, &c, "warm-up"), 0);
  assert_int_equal(c.res.r.http_status, 404);
  call_free(&c);
}

/* charge_first: charged on arrival, answered late; the client gives up
** first, and its retry with the same key finds the charge. */
static void test_slow_charge_first(void** state) {
  FIX;
  call_t a, c;
  char* id;
  start(f, NULL);
  warm_up(f);
  assert_int_equal(ps_mode(f->sim, "slow", 1, 2000, 1), 0);
  submit(f, &a, "POST", "/v1/charges", "key-11",
         "{\"order_id\":\"o-11\",\"amount_minor\":1100,\"currency\":\"EUR\"}",
         500);
  pump_until_lines(f, "HELD o-11", 1, 5000);
  wait_call(f, &a);
  assert_int_equal(a.res.r.status, OB__HTTP_E_DEADLINE);
  assert_int_equal(a.res.r.request_sent, 1);
  call_free(&a);
  assert_int_equal(ps_charges(f->sim, "o-11"), 1);
  assert_int_equal(stats(f).held, 1);  /* still holding the answer */
  /* The retry is a replay of the charge made on arrival. */
  assert_int_equal(lookup(f, &c, "key-11"), 0);
  assert_int_equal(c.res.r.http_status, 200);
  id = json_str(c.res.r.body, "id");
  call_free(&c);
  assert_int_equal(charge(f, &c, "key-11", "o-11", 1100), 0);
  assert_int_equal(c.res.r.http_status, 200);
  assert_int_equal(c.res.replayed, 1);
  {
    char* id2 = json_str(c.res.r.body, "id");
    assert_string_equal(id2, id);
    free(id2);
  }
  call_free(&c);
  free(id);
  assert_int_equal(ps_charges(f->sim, "o-11"), 1);
}

/* Not charge_first: the client gives up before the provider charges; the
** charge still happens, and the retry with the key replays it. */
static void test_slow_client_gives_up(void** state) {
  FIX;
  call_t a, c;
  start(f, NULL);
  warm_up(f);
  assert_int_equal(ps_mode(f->sim, "slow", 1, 1500, 0), 0);
  submit(f, &a, "POST", "/v1/charges", "key-12",
         "{\"order_id\":\"o-12\",\"amount_minor\":1200,\"currency\":\"EUR\"}",
         500);
  pump_until_lines(f, "HELD o-12", 1, 5000);
  wait_call(f, &a);
  assert_int_equal(a.res.r.status, OB__HTTP_E_DEADLINE);
  assert_int_equal(a.res.r.request_sent, 1);
  call_free(&a);
  assert_int_equal(ps_charges(f->sim, "o-12"), 0);  /* not yet */
  assert_int_equal(ps_wait_lines(f->sim, "CHARGED o-12 ", 1, 5000), 1);
  assert_int_equal(charge(f, &c, "key-12", "o-12", 1200), 0);
  assert_int_equal(c.res.r.http_status, 200);
  assert_int_equal(c.res.replayed, 1);
  check_charge(c.res.r.body, "key-12", "o-12", 1200);
  call_free(&c);
  assert_int_equal(ps_charges(f->sim, "o-12"), 1);
}

static void test_drop_after_charge(void** state) {
  FIX;
  call_t a, c;
  char* id;
  start(f, NULL);
  assert_int_equal(ps_mode(f->sim, "drop_after_charge", 1, 0, 0), 0);
  assert_true(charge(f, &a, "key-13", "o-13", 1300) < 0);
  printf("  drop: %s (%s)\n", ob__http_err_name(a.res.r.status),
         a.res.r.detail);
  assert_int_equal(a.res.r.request_sent, 1);
  assert_int_equal(a.res.r.http_status, 0);
  call_free(&a);
  assert_int_equal(ps_wait_lines(f->sim, "DROPPED o-13", 1, 5000), 1);
  assert_int_equal(ps_charges(f->sim, "o-13"), 1);
  assert_int_equal(lookup(f, &c, "key-13"), 0);
  assert_int_equal(c.res.r.http_status, 200);
  id = json_str(c.res.r.body, "id");
  call_free(&c);
  assert_int_equal(charge(f, &c, "key-13", "o-13", 1300), 0);
  assert_int_equal(c.res.r.http_status, 200);
  assert_int_equal(c.res.replayed, 1);
  {
    char* id2 = json_str(c.res.r.body, "id");
    assert_string_equal(id2, id);
    free(id2);
  }
  call_free(&c);
  free(id);
  assert_int_equal(ps_charges(f->sim, "o-13"), 1);
}

static void test_error_5xx(void** state) {
  FIX;
  call_t c;
  start(f, NULL);
  assert_int_equal(ps_mode(f->sim, "error_5xx", 2, 0, 0), 0);
  for (int i = 0; i < 2; i++) {
    assert_int_equal(charge(f, &c, "key-14", "o-14", 1400), 0);
    assert_int_equal(c.res.r.http_status, 503);
    assert_string_equal(c.res.r.body, k_unavailable);
    call_free(&c);
  }
  assert_int_equal(ps_charges(f->sim, "o-14"), 0);
  /* Nothing was stored under the key: the third try charges. */
  assert_int_equal(charge(f, &c, "key-14", "o-14", 1400), 0);
  assert_int_equal(c.res.r.http_status, 200);
  assert_int_equal(c.res.replayed, 0);
  call_free(&c);
  assert_int_equal(ps_charges(f->sim, "o-14"), 1);
}

static void test_error_5xx_after_charge(void** state) {
  FIX;
  call_t c;
  start(f, NULL);
  assert_int_equal(ps_mode(f->sim, "error_5xx_after_charge", 1, 0, 0), 0);
  assert_int_equal(charge(f, &c, "key-15", "o-15", 1500), 0);
  assert_int_equal(c.res.r.http_status, 500);
  call_free(&c);
  assert_int_equal(ps_charges(f->sim, "o-15"), 1);
  assert_int_equal(charge(f, &c, "key-15", "o-15", 1500), 0);
  assert_int_equal(c.res.r.http_status, 200);
  assert_int_equal(c.res.replayed, 1);
  check_charge(c.res.r.body, "key-15", "o-15", 1500);
  call_free(&c);
  assert_int_equal(ps_charges(f->sim, "o-15"), 1);
}

static void test_rate_limited(void** state) {
  FIX;
  call_t c;
  start(f, NULL);
  assert_int_equal(ps_mode(f->sim, "rate_limited", 1, 0, 0), 0);
  assert_int_equal(charge(f, &c, "key-16", "o-16", 1600), 0);
  assert_int_equal(c.res.r.http_status, 429);
  assert_string_equal(c.res.retry_after, "1");
  call_free(&c);
  assert_int_equal(ps_charges(f->sim, "o-16"), 0);
  assert_int_equal(charge(f, &c, "key-16", "o-16", 1600), 0);
  assert_int_equal(c.res.r.http_status, 200);
  assert_int_equal(c.res.replayed, 0);
  call_free(&c);
  assert_int_equal(ps_charges(f->sim, "o-16"), 1);
}

/* The provider dies after charging; restarted, it remembers the charge and
** the key (the state file), on the same port. */
static void test_die_after_charge_and_restart(void** state) {
  FIX;
  call_t a, c;
  char* body;
  int port;
  ps_stats_t s;
  start(f, NULL);
  port = ps_port(f->sim);
  assert_int_equal(ps_mode(f->sim, "die_after_charge", 1, 0, 0), 0);
  assert_true(charge(f, &a, "key-17", "o-17", 1700) < 0);
  assert_int_equal(a.res.r.request_sent, 1);
  call_free(&a);
  assert_int_equal(ps_wait_lines(f->sim, "DYING", 1, 5000), 1);
  assert_int_equal(ps_wait_lines(f->sim, "CHARGED o-17 ", 1, 0), 1);
  assert_true(ps_stats(f->sim, &s) != 0);  /* no one to answer */

  assert_int_equal(ps_restart(f->sim), 0);
  assert_int_equal(ps_port(f->sim), port);
  assert_int_equal(ps_charges(f->sim, "o-17"), 1);
  s = stats(f);
  assert_int_equal(s.charges_total, 1);
  assert_int_equal(s.requests, 0);  /* counters are per process */
  assert_int_equal(lookup(f, &c, "key-17"), 0);
  assert_int_equal(c.res.r.http_status, 200);
  check_charge(c.res.r.body, "key-17", "o-17", 1700);
  body = c.res.r.body;
  c.res.r.body = NULL;
  assert_int_equal(charge(f, &c, "key-17", "o-17", 1700), 0);
  assert_int_equal(c.res.r.http_status, 200);
  assert_int_equal(c.res.replayed, 1);
  assert_string_equal(c.res.r.body, body);
  call_free(&c);
  free(body);
  assert_int_equal(ps_charges(f->sim, "o-17"), 1);
  /* Line counts span restarts. */
  assert_int_equal(ps_wait_lines(f->sim, "CHARGED ", 1, 0), 1);
}

static void test_die_before_charge_and_kill(void** state) {
  FIX;
  call_t a, c;
  ob__http_stats_t hs;
  start(f, NULL);
  assert_int_equal(ps_mode(f->sim, "die_before_charge", 1, 0, 0), 0);
  assert_true(charge(f, &a, "key-18", "o-18", 1800) < 0);
  call_free(&a);
  assert_int_equal(ps_wait_lines(f->sim, "DYING", 1, 5000), 1);
  assert_int_equal(ps_restart(f->sim), 0);
  assert_int_equal(ps_charges(f->sim, "o-18"), 0);
  /* Nothing stored: the retry charges, once. */
  assert_int_equal(charge(f, &c, "key-18", "o-18", 1800), 0);
  assert_int_equal(c.res.r.http_status, 200);
  assert_int_equal(c.res.replayed, 0);
  call_free(&c);
  assert_int_equal(ps_charges(f->sim, "o-18"), 1);

  /* SIGKILL while idle (its connection stays in our pool), then restart:
  ** the charge and key survive. A lookup (GET: resent once by the client
  ** when the pooled connection turns out dead) goes first. */
  ps_kill(f->sim);
  assert_int_equal(ps_alive(f->sim), 0);
  assert_true(ps_stats(f->sim, &(ps_stats_t){0}) != 0);
  assert_int_equal(ps_restart(f->sim), 0);
  assert_int_equal(lookup(f, &c, "key-18"), 0);
  assert_int_equal(c.res.r.http_status, 200);
  call_free(&c);
  ob__http_client_stats(f->client, &hs);
  printf("  after SIGKILL: %llu connections, %llu resent\n",
         (unsigned long long)hs.connections_opened,
         (unsigned long long)hs.retries);
  assert_int_equal(charge(f, &c, "key-18", "o-18", 1800), 0);
  assert_int_equal(c.res.r.http_status, 200);
  assert_int_equal(c.res.replayed, 1);
  call_free(&c);
  assert_int_equal(ps_charges(f->sim, "o-18"), 1);
  assert_int_equal(stats(f).charges_total, 1);
}

/* ---- profiles, the simulator's clock, saved 500s ----------------------------- */

#define DAY_MS 86400000LL

static const char* const k_internal =
    "{\"error\":{\"type\":\"api_error\",\"message\":\"Internal server error\"}}";
static const char* const k_in_use =
    "{\"error\":{\"type\":\"idempotency_error\",\"code\":"
    "\"idempotency_key_in_use\",\"message\":\"There is currently another "
    "in-progress request using this Idempotency Key. Please try again "
    "later.\"}}";

/* The stats ACK as text (malloc'd). */
static char* stats_text(fix_t* f) {
  char* st = ps_command(f->sim, "{\"cmd\":\"stats\"}");
  assert_non_null(st);
  return st;
}

/* The body's "id" (malloc'd). */
static char* id_of(const call_t* c) {
  char* id = json_str(c->res.r.body, "id");
  assert_non_null(id);
  return id;
}

/* An RFC 9457 problem as the ietf profile sends it. */
static void check_problem(const call_t* c, int status, const char* title) {
  char* s;
  assert_int_equal(c->res.r.http_status, status);
  assert_string_equal(c->res.content_type, "application/problem+json");
  assert_int_equal(json_num(c->res.r.body, "status"), status);
  s = json_str(c->res.r.body, "title");
  assert_string_equal(s, title);
  free(s);
  s = json_str(c->res.r.body, "type");
  assert_non_null(s);
  free(s);
  s = json_str(c->res.r.body, "detail");
  assert_non_null(s);
  free(s);
  assert_int_equal(c->res.has_replayed, 0);
}

/* Stripe: the first answer with a key is saved, a 402 decline included, and
** replayed with Idempotent-Replayed: true; a request without a key is
** executed and nothing is saved for it. */
static void test_stripe_replay_and_decline(void** state) {
  FIX;
  call_t a, b, c;
  ps_stats_t s;
  char* st;
  start_profile(f, "stripe", 0, NULL);
  st = stats_text(f);
  assert_non_null(strstr(st, "\"profile\":\"stripe\""));
  assert_non_null(strstr(st, "\"key_retention_ms\":86400000"));
  free(st);
  assert_int_equal(charge(f, &a, "s-key-1", "s-o-1", 1250), 0);
  assert_int_equal(a.res.r.http_status, 200);
  assert_int_equal(a.res.replayed, 0);
  check_charge(a.res.r.body, "s-key-1", "s-o-1", 1250);
  assert_int_equal(charge(f, &b, "s-key-1", "s-o-1", 1250), 0);
  assert_int_equal(b.res.r.http_status, 200);
  assert_int_equal(b.res.replayed, 1);
  assert_string_equal(b.res.r.body, a.res.r.body);
  call_free(&a);
  call_free(&b);

  assert_int_equal(charge(f, &c, "s-key-2", "s-o-2", 402), 0);
  assert_int_equal(c.res.r.http_status, 402);
  assert_string_equal(c.res.r.body, k_declined);
  assert_int_equal(c.res.replayed, 0);
  call_free(&c);
  assert_int_equal(charge(f, &c, "s-key-2", "s-o-2", 402), 0);
  assert_int_equal(c.res.r.http_status, 402);
  assert_string_equal(c.res.r.body, k_declined);
  assert_int_equal(c.res.replayed, 1);
  call_free(&c);

  assert_int_equal(ps_key_status(f->sim, "s-key-1"), 200);
  assert_int_equal(ps_key_status(f->sim, "s-key-2"), 402);
  assert_int_equal(ps_key_status(f->sim, "s-none"), 0);
  assert_int_equal(ps_charges(f->sim, "s-o-1"), 1);
  assert_int_equal(ps_charges(f->sim, "s-o-2"), 0);

  /* No key: executed every time (Stripe does not require one). */
  for (int i = 0; i < 2; i++) {
    assert_int_equal(charge(f, &c, NULL, "s-o-3", 300), 0);
    assert_int_equal(c.res.r.http_status, 200);
    assert_int_equal(c.res.replayed, 0);
    call_free(&c);
  }
  assert_int_equal(ps_charges(f->sim, "s-o-3"), 2);
  s = stats(f);
  assert_int_equal(s.replays, 2);
  assert_int_equal(s.keys, 2);
  assert_int_equal(s.pruned, 0);
  assert_int_equal(s.charges_total, 3);
}

/* Stripe: keys are pruned once at least 24 h old on the simulator's clock;
** a request with a pruned key is a new request: a second real charge, its
** own answer saved and replayed; the old parameters are forgotten too; a
** saved 500 is pruned like any answer. */
static void test_stripe_prune_after_retention(void** state) {
  FIX;
  call_t a, c;
  char* id1;
  char* id2;
  char* id;
  long long off = -1;
  start_profile(f, "stripe", 0, NULL);
  assert_int_equal(charge(f, &a, "p-key", "p-o", 700), 0);
  assert_int_equal(a.res.r.http_status, 200);
  id1 = id_of(&a);
  call_free(&a);

  /* A minute short of 24 h: still replayed. */
  assert_int_equal(ps_advance(f->sim, DAY_MS - 60000), 0);
  assert_int_equal(ps_clock(f->sim, NULL, &off), 0);
  assert_int_equal(off, DAY_MS - 60000);
  assert_int_equal(charge(f, &c, "p-key", "p-o", 700), 0);
  assert_int_equal(c.res.r.http_status, 200);
  assert_int_equal(c.res.replayed, 1);
  id = id_of(&c);
  assert_string_equal(id, id1);
  free(id);
  call_free(&c);
  assert_int_equal(ps_key_status(f->sim, "p-key"), 200);

  /* 24 h: pruned by the sweep of advance. */
  assert_int_equal(ps_advance(f->sim, 60000), 1);
  assert_int_equal(ps_wait_lines(f->sim, "PRUNED p-key", 1, 0), 1);
  assert_int_equal(ps_key_status(f->sim, "p-key"), 0);
  assert_int_equal(lookup(f, &c, "p-key"), 0);
  assert_int_equal(c.res.r.http_status, 404);
  call_free(&c);

  /* The old key again: a new charge, printed like any other. */
  assert_int_equal(charge(f, &c, "p-key", "p-o", 700), 0);
  assert_int_equal(c.res.r.http_status, 200);
  assert_int_equal(c.res.replayed, 0);
  check_charge(c.res.r.body, "p-key", "p-o", 700);
  id2 = id_of(&c);
  assert_string_not_equal(id2, id1);
  call_free(&c);
  assert_int_equal(ps_charges(f->sim, "p-o"), 2);
  assert_int_equal(ps_wait_lines(f->sim, "CHARGED p-o ", 2, 0), 2);
  /* Its answer is the one saved now. */
  assert_int_equal(charge(f, &c, "p-key", "p-o", 700), 0);
  assert_int_equal(c.res.replayed, 1);
  id = id_of(&c);
  assert_string_equal(id, id2);
  free(id);
  call_free(&c);
  assert_int_equal(lookup(f, &c, "p-key"), 0);
  assert_int_equal(c.res.r.http_status, 200);
  id = id_of(&c);
  assert_string_equal(id, id2);
  free(id);
  call_free(&c);

  /* Pruned, the key's parameters are forgotten: another amount is new. */
  assert_int_equal(charge(f, &c, "p-key-2", "p-o-2", 100), 0);
  assert_int_equal(c.res.r.http_status, 200);
  call_free(&c);
  /* A saved 500 goes the same way. */
  assert_int_equal(ps_mode(f->sim, "error_500_saved", 1, 0, 0), 0);
  assert_int_equal(charge(f, &c, "p-key-3", "p-o-3", 100), 0);
  assert_int_equal(c.res.r.http_status, 500);
  call_free(&c);
  assert_int_equal(ps_advance(f->sim, DAY_MS), 3);  /* p-key too */
  assert_int_equal(charge(f, &c, "p-key-2", "p-o-2", 101), 0);
  assert_int_equal(c.res.r.http_status, 200);
  assert_int_equal(c.res.replayed, 0);
  call_free(&c);
  assert_int_equal(charge(f, &c, "p-key-3", "p-o-3", 100), 0);
  assert_int_equal(c.res.r.http_status, 200);
  assert_int_equal(c.res.replayed, 0);
  call_free(&c);
  assert_int_equal(ps_charges(f->sim, "p-o-2"), 2);
  assert_int_equal(ps_charges(f->sim, "p-o-3"), 1);
  assert_int_equal(stats(f).pruned, 4);
  free(id1);
  free(id2);
}

/* --key-retention-ms; the offset and the keys' ages survive SIGKILL; the
** lazy pruning of a key made old by real time alone. */
static void test_retention_option_and_restart(void** state) {
  FIX;
  call_t c;
  long long off = -1;
  start_profile(f, "stripe", 60000, NULL);
  assert_int_equal(charge(f, &c, "r-key", "r-o", 100), 0);
  assert_int_equal(c.res.r.http_status, 200);
  call_free(&c);
  assert_int_equal(ps_advance(f->sim, 30000), 0);

  ps_kill(f->sim);
  assert_int_equal(ps_restart(f->sim), 0);
  assert_int_equal(ps_clock(f->sim, NULL, &off), 0);
  assert_int_equal(off, 30000);
  /* A GET first: the client resends it over the dead pooled connection. */
  assert_int_equal(lookup(f, &c, "r-key"), 0);
  assert_int_equal(c.res.r.http_status, 200);
  call_free(&c);
  assert_int_equal(ps_key_status(f->sim, "r-key"), 200);
  assert_int_equal(charge(f, &c, "r-key", "r-o", 100), 0);
  assert_int_equal(c.res.replayed, 1);
  call_free(&c);
  /* Another 30 s of the simulator's clock: 60 s old, pruned. */
  assert_int_equal(ps_advance(f->sim, 30000), 1);
  assert_int_equal(charge(f, &c, "r-key", "r-o", 100), 0);
  assert_int_equal(c.res.r.http_status, 200);
  assert_int_equal(c.res.replayed, 0);
  call_free(&c);
  assert_int_equal(ps_charges(f->sim, "r-o"), 2);
  ps_stop(f->sim);
  f->sim = NULL;
  close_client(f);

  /* 300 ms of retention: real time prunes it at its next use. */
  unlink(f->state_path);
  start_profile(f, "stripe", 300, NULL);
  assert_int_equal(charge(f, &c, "r-key-2", "r-o-2", 100), 0);
  assert_int_equal(c.res.r.http_status, 200);
  call_free(&c);
  usleep(400 * 1000);
  assert_int_equal(charge(f, &c, "r-key-2", "r-o-2", 100), 0);
  assert_int_equal(c.res.r.http_status, 200);
  assert_int_equal(c.res.replayed, 0);
  call_free(&c);
  assert_int_equal(ps_wait_lines(f->sim, "PRUNED r-key-2", 1, 0), 1);
  assert_int_equal(ps_charges(f->sim, "r-o-2"), 2);
}

/* Stripe: the same key with other parameters: 400 idempotency_error, and
** the saved answer stays. */
static void test_stripe_other_body(void** state) {
  FIX;
  call_t c;
  char want[512];
  snprintf(want, sizeof want,
           "{\"error\":{\"type\":\"idempotency_error\",\"message\":\"Keys for "
           "idempotent requests can only be used with the same parameters "
           "they were first used with. Try using a key other than 'm-key' if "
           "you meant to execute a different request.\"}}");
  start_profile(f, "stripe", 0, NULL);
  assert_int_equal(charge(f, &c, "m-key", "m-o", 100), 0);
  assert_int_equal(c.res.r.http_status, 200);
  call_free(&c);
  assert_int_equal(charge(f, &c, "m-key", "m-o", 101), 0);
  assert_int_equal(c.res.r.http_status, 400);
  assert_string_equal(c.res.r.body, want);
  assert_int_equal(c.res.replayed, 0);
  call_free(&c);
  assert_int_equal(charge(f, &c, "m-key", "m-other", 100), 0);
  assert_int_equal(c.res.r.http_status, 400);
  assert_string_equal(c.res.r.body, want);
  call_free(&c);
  assert_int_equal(ps_key_status(f->sim, "m-key"), 200);
  assert_int_equal(charge(f, &c, "m-key", "m-o", 100), 0);
  assert_int_equal(c.res.r.http_status, 200);
  assert_int_equal(c.res.replayed, 1);
  call_free(&c);
  assert_int_equal(ps_charges(f->sim, "m-o"), 1);
  assert_int_equal(ps_charges(f->sim, "m-other"), 0);
}

/* Stripe: a request with a key whose first request is still being
** processed (held by mode slow): 409 idempotency_key_in_use, whatever its
** body, nothing saved; the first then answers and is replayed. */
static void test_stripe_in_flight(void** state) {
  FIX;
  call_t a, b;
  start_profile(f, "stripe", 0, NULL);
  assert_int_equal(ps_mode(f->sim, "slow", 1, 800, 0), 0);
  submit(f, &a, "POST", "/v1/charges", "f-key",
         "{\"order_id\":\"f-o\",\"amount_minor\":1000,\"currency\":\"EUR\"}",
         0);
  pump_until_lines(f, "HELD f-o", 1, 5000);
  assert_int_equal(charge(f, &b, "f-key", "f-o", 1000), 0);
  assert_int_equal(b.res.r.http_status, 409);
  assert_string_equal(b.res.r.body, k_in_use);
  assert_int_equal(b.res.replayed, 0);
  call_free(&b);
  assert_int_equal(charge(f, &b, "f-key", "f-o", 999), 0);
  assert_int_equal(b.res.r.http_status, 409);
  call_free(&b);
  assert_int_equal(ps_key_status(f->sim, "f-key"), 0);
  wait_call(f, &a);
  assert_int_equal(a.res.r.http_status, 200);
  assert_int_equal(charge(f, &b, "f-key", "f-o", 1000), 0);
  assert_int_equal(b.res.r.http_status, 200);
  assert_int_equal(b.res.replayed, 1);
  assert_string_equal(b.res.r.body, a.res.r.body);
  call_free(&a);
  call_free(&b);
  assert_int_equal(ps_charges(f->sim, "f-o"), 1);
}

/* draft-ietf-httpapi-idempotency-key-header: 400 without a key, 422 for
** another payload, 409 while the first is in progress, all problem+json;
** results replayed (errors too) without a replay marker; a key in
** sf-string form is the same key; keys expire after 24 h. */
static void test_ietf(void** state) {
  FIX;
  call_t a, b, c;
  char* st;
  start_profile(f, "ietf", 0, NULL);
  st = stats_text(f);
  assert_non_null(strstr(st, "\"profile\":\"ietf\""));
  free(st);
  assert_int_equal(charge(f, &c, NULL, "i-o", 100), 0);
  check_problem(&c, 400, "Idempotency-Key is missing");
  call_free(&c);
  assert_int_equal(charge(f, &c, "", "i-o", 100), 0);
  check_problem(&c, 400, "Idempotency-Key is missing");
  call_free(&c);
  assert_int_equal(charge(f, &c, "\"\"", "i-o", 100), 0);
  check_problem(&c, 400, "Idempotency-Key is missing");
  call_free(&c);
  assert_int_equal(ps_charges(f->sim, "i-o"), 0);

  assert_int_equal(charge(f, &a, "i-key", "i-o", 100), 0);
  assert_int_equal(a.res.r.http_status, 200);
  assert_int_equal(a.res.has_replayed, 0);
  assert_int_equal(charge(f, &b, "i-key", "i-o", 100), 0);
  assert_int_equal(b.res.r.http_status, 200);
  assert_int_equal(b.res.has_replayed, 0);
  assert_string_equal(b.res.r.body, a.res.r.body);
  call_free(&b);
  assert_int_equal(stats(f).replays, 1);
  /* RFC 8941 sf-string: "i-key" is the key i-key. */
  assert_int_equal(charge(f, &b, "\"i-key\"", "i-o", 100), 0);
  assert_int_equal(b.res.r.http_status, 200);
  assert_string_equal(b.res.r.body, a.res.r.body);
  call_free(&b);
  assert_int_equal(charge(f, &c, "i-key", "i-o", 101), 0);
  check_problem(&c, 422, "Idempotency-Key is already used");
  call_free(&c);
  call_free(&a);

  assert_int_equal(ps_mode(f->sim, "slow", 1, 800, 0), 0);
  submit(f, &a, "POST", "/v1/charges", "i-key-2",
         "{\"order_id\":\"i-o-2\",\"amount_minor\":200,\"currency\":\"EUR\"}",
         0);
  pump_until_lines(f, "HELD i-o-2", 1, 5000);
  assert_int_equal(charge(f, &c, "i-key-2", "i-o-2", 200), 0);
  check_problem(&c, 409, "A request is outstanding for this Idempotency-Key");
  call_free(&c);
  wait_call(f, &a);
  assert_int_equal(a.res.r.http_status, 200);
  call_free(&a);

  /* An error result is replayed as well. */
  assert_int_equal(charge(f, &c, "i-key-3", "i-o-3", 402), 0);
  assert_int_equal(c.res.r.http_status, 402);
  call_free(&c);
  assert_int_equal(charge(f, &c, "i-key-3", "i-o-3", 402), 0);
  assert_int_equal(c.res.r.http_status, 402);
  assert_string_equal(c.res.r.body, k_declined);
  assert_int_equal(c.res.has_replayed, 0);
  call_free(&c);
  assert_int_equal(ps_charges(f->sim, "i-o"), 1);
  assert_int_equal(ps_charges(f->sim, "i-o-2"), 1);

  /* The published expiry, 24 h: then the other payload is a new request. */
  assert_int_equal(ps_advance(f->sim, DAY_MS), 3);
  assert_int_equal(charge(f, &c, "i-key", "i-o", 101), 0);
  assert_int_equal(c.res.r.http_status, 200);
  call_free(&c);
  assert_int_equal(ps_charges(f->sim, "i-o"), 2);
}

/* error_500_saved: the 500 is what the key keeps and replays (Stripe v1);
** by default nothing is charged, with charge_first the charge is made
** first; the saved 500 survives SIGKILL. */
static void test_error_500_saved(void** state) {
  FIX;
  call_t c;
  start(f, NULL);
  assert_int_equal(ps_mode(f->sim, "error_500_saved", 1, 0, 0), 0);
  assert_int_equal(charge(f, &c, "e-key", "e-o", 500), 0);
  assert_int_equal(c.res.r.http_status, 500);
  assert_string_equal(c.res.r.body, k_internal);
  assert_int_equal(c.res.replayed, 0);
  call_free(&c);
  assert_int_equal(ps_charges(f->sim, "e-o"), 0);
  assert_int_equal(ps_key_status(f->sim, "e-key"), 500);
  assert_int_equal(charge(f, &c, "e-key", "e-o", 500), 0);
  assert_int_equal(c.res.r.http_status, 500);
  assert_string_equal(c.res.r.body, k_internal);
  assert_int_equal(c.res.replayed, 1);
  call_free(&c);
  assert_int_equal(ps_charges(f->sim, "e-o"), 0);
  assert_int_equal(lookup(f, &c, "e-key"), 0);
  assert_int_equal(c.res.r.http_status, 404);
  call_free(&c);
  assert_int_equal(ps_wait_lines(f->sim, "CHARGED ", 1, 0), -1);

  /* charge_first: charged, then the 500 saved over it. */
  assert_int_equal(ps_mode(f->sim, "error_500_saved", 1, 0, 1), 0);
  assert_int_equal(charge(f, &c, "e-key-2", "e-o-2", 600), 0);
  assert_int_equal(c.res.r.http_status, 500);
  assert_string_equal(c.res.r.body, k_internal);
  call_free(&c);
  assert_int_equal(ps_wait_lines(f->sim, "CHARGED e-o-2 ", 1, 0), 1);
  assert_int_equal(ps_charges(f->sim, "e-o-2"), 1);
  assert_int_equal(charge(f, &c, "e-key-2", "e-o-2", 600), 0);
  assert_int_equal(c.res.r.http_status, 500);
  assert_int_equal(c.res.replayed, 1);
  call_free(&c);
  assert_int_equal(lookup(f, &c, "e-key-2"), 0);
  assert_int_equal(c.res.r.http_status, 200);
  check_charge(c.res.r.body, "e-key-2", "e-o-2", 600);
  call_free(&c);
  /* The mode is used up; another body under the key is still a mismatch. */
  assert_int_equal(charge(f, &c, "e-key-2", "e-o-2", 601), 0);
  assert_int_equal(c.res.r.http_status, 422);
  call_free(&c);

  /* SIGKILL: the saved 500s are in the state file. */
  ps_kill(f->sim);
  assert_int_equal(ps_restart(f->sim), 0);
  assert_int_equal(lookup(f, &c, "e-key-2"), 0);
  assert_int_equal(c.res.r.http_status, 200);
  call_free(&c);
  assert_int_equal(charge(f, &c, "e-key", "e-o", 500), 0);
  assert_int_equal(c.res.r.http_status, 500);
  assert_string_equal(c.res.r.body, k_internal);
  assert_int_equal(c.res.replayed, 1);
  call_free(&c);
  assert_int_equal(ps_key_status(f->sim, "e-key-2"), 500);
  assert_int_equal(ps_charges(f->sim, "e-o"), 0);
  assert_int_equal(ps_charges(f->sim, "e-o-2"), 1);
  assert_int_equal(stats(f).charges_total, 1);
}

/* The simulator's clock: clock, advance (and its refusals), the default
** profile never pruning, charges stamped with it, the offset kept across a
** restart; --clock-offset-ms at start, and as a floor on restart; bad
** profile and retention arguments. */
static void test_clock(void** state) {
  FIX;
  call_t c;
  long long now = -1, off = -1;
  long long wall = (long long)time(NULL) * 1000;
  const long long ten_years = 3650 * DAY_MS;
  char* ack;
  char* st;
  start(f, NULL);
  assert_int_equal(ps_clock(f->sim, &now, &off), 0);
  assert_int_equal(off, 0);
  assert_true(now > wall - 5000 && now < wall + 5000);
  assert_int_equal(charge(f, &c, "c-key", "c-o", 100), 0);
  assert_int_equal(c.res.r.http_status, 200);
  call_free(&c);
  /* Default profile: keys kept however old. */
  assert_int_equal(ps_advance(f->sim, ten_years), 0);
  assert_int_equal(charge(f, &c, "c-key", "c-o", 100), 0);
  assert_int_equal(c.res.replayed, 1);
  call_free(&c);
  st = stats_text(f);
  assert_non_null(strstr(st, "\"profile\":\"default\""));
  assert_non_null(strstr(st, "\"key_retention_ms\":null"));
  free(st);
  assert_int_equal(charge(f, &c, "c-key-2", "c-o-2", 100), 0);
  assert_true(json_num(c.res.r.body, "created") >=
              (long)((wall + ten_years) / 1000) - 5);
  call_free(&c);
  assert_int_equal(ps_advance(f->sim, -1), -1);
  for (int i = 0; i < 5; i++) {
    static const char* const k_bad[] = {
        "{\"cmd\":\"advance\",\"ms\":-5}", "{\"cmd\":\"advance\",\"ms\":1.5}",
        "{\"cmd\":\"advance\"}", "{\"cmd\":\"advance\",\"ms\":\"5\"}",
        "{\"cmd\":\"key\"}"};
    ack = ps_command(f->sim, k_bad[i]);
    assert_non_null(ack);
    assert_non_null(strstr(ack, "\"ok\":false"));
    free(ack);
  }
  /* Keys named like Object's own properties are keys like any other. */
  for (int i = 0; i < 2; i++) {
    const char* k = i == 0 ? "constructor" : "__proto__";
    assert_int_equal(charge(f, &c, k, "c-o-3", 100 + i), 0);
    assert_int_equal(c.res.r.http_status, 200);
    assert_int_equal(c.res.replayed, 0);
    call_free(&c);
    assert_int_equal(charge(f, &c, k, "c-o-3", 100 + i), 0);
    assert_int_equal(c.res.replayed, 1);
    call_free(&c);
  }
  assert_int_equal(ps_charges(f->sim, "c-o-3"), 2);
  ps_kill(f->sim);
  assert_int_equal(ps_restart(f->sim), 0);
  assert_int_equal(ps_clock(f->sim, NULL, &off), 0);
  assert_int_equal(off, ten_years);
  assert_int_equal(ps_key_status(f->sim, "__proto__"), 200);
  assert_int_equal(ps_key_status(f->sim, "constructor"), 200);
  ps_stop(f->sim);
  f->sim = NULL;
  close_client(f);

  /* --clock-offset-ms: the start's offset, and a floor at each restart. */
  unlink(f->state_path);
  start_profile(f, NULL, 0, "--clock-offset-ms 86400000");
  assert_int_equal(ps_clock(f->sim, NULL, &off), 0);
  assert_int_equal(off, DAY_MS);
  assert_int_equal(ps_advance(f->sim, 1000), 0);
  assert_int_equal(ps_restart(f->sim), 0);
  assert_int_equal(ps_clock(f->sim, NULL, &off), 0);
  assert_int_equal(off, DAY_MS + 1000);
  ps_stop(f->sim);
  f->sim = NULL;

  /* Refused at start (exit 2): ps_start gives NULL. */
  assert_null(ps_start(g.pki, f->state_path, 0, "--profile nope"));
  assert_null(ps_start(g.pki, f->state_path, 0, "--key-retention-ms 0"));
  assert_null(ps_start(g.pki, f->state_path, 0, "--clock-offset-ms -1"));
  assert_null(ps_start_profile(g.pki, f->state_path, 0, "Stripe", 0, NULL));
}

/* ---- control ------------------------------------------------------------------ */

static void test_control(void** state) {
  FIX;
  char* ack;
  start(f, NULL);
  assert_int_equal(ps_mode(f->sim, "bogus", 1, 0, 0), -1);
  assert_int_equal(ps_mode(f->sim, "slow", -1, 0, 0), -1);
  assert_int_equal(ps_mode(f->sim, "normal", 0, 0, 0), 0);
  ack = ps_command(f->sim, "{\"cmd\":\"nope\"}");
  assert_non_null(ack);
  assert_non_null(strstr(ack, "\"ok\":false"));
  free(ack);
  ack = ps_command(f->sim, "{\"cmd\":\"charges\"}");
  assert_non_null(ack);
  assert_non_null(strstr(ack, "\"ok\":false"));
  free(ack);
  assert_int_equal(ps_charges(f->sim, "o-\"quoted\""), 0);
  /* exit: ACK, then the process ends with 0. */
  ack = ps_command(f->sim, "{\"cmd\":\"exit\"}");
  assert_non_null(ack);
  assert_string_equal(ack, "{\"ok\":true}");
  free(ack);
  for (int i = 0; i < 500 && ps_alive(f->sim); i++) usleep(10 * 1000);
  assert_int_equal(ps_alive(f->sim), 0);
  assert_int_equal(ps_restart(f->sim), 0);
  assert_int_equal(ps_alive(f->sim), 1);
  assert_int_equal(ps_charges(f->sim, "o-x"), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_charge_and_replay, setup, teardown),
      cmocka_unit_test_setup_teardown(test_same_key_other_body, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_missing_key, setup, teardown),
      cmocka_unit_test_setup_teardown(test_invalid_bodies, setup, teardown),
      cmocka_unit_test_setup_teardown(test_decline_and_replay, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_lookup, setup, teardown),
      cmocka_unit_test_setup_teardown(test_unknown_routes, setup, teardown),
      cmocka_unit_test_setup_teardown(test_no_idempotency, setup, teardown),
      cmocka_unit_test_setup_teardown(test_no_lookup, setup, teardown),
      cmocka_unit_test_setup_teardown(test_require_auth, setup, teardown),
      cmocka_unit_test_setup_teardown(test_slow, setup, teardown),
      cmocka_unit_test_setup_teardown(test_slow_then_next_on_same_connection,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_slow_charge_first, setup, teardown),
      cmocka_unit_test_setup_teardown(test_slow_client_gives_up, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_drop_after_charge, setup, teardown),
      cmocka_unit_test_setup_teardown(test_error_5xx, setup, teardown),
      cmocka_unit_test_setup_teardown(test_error_5xx_after_charge, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_rate_limited, setup, teardown),
      cmocka_unit_test_setup_teardown(test_die_after_charge_and_restart, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_die_before_charge_and_kill, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_control, setup, teardown),
      cmocka_unit_test_setup_teardown(test_stripe_replay_and_decline, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_stripe_prune_after_retention, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_retention_option_and_restart, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_stripe_other_body, setup, teardown),
      cmocka_unit_test_setup_teardown(test_stripe_in_flight, setup, teardown),
      cmocka_unit_test_setup_teardown(test_ietf, setup, teardown),
      cmocka_unit_test_setup_teardown(test_error_500_saved, setup, teardown),
      cmocka_unit_test_setup_teardown(test_clock, setup, teardown),
  };
  return cmocka_run_group_tests_name("provider_sim", tests, group_setup,
                                     group_teardown);
}
