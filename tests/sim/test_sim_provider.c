/* SPDX-License-Identifier: Apache-2.0 */
/*
** The simulated payment provider (sim_provider.c), driven directly with
** the requests platform/effects sends for ChargeOrder, on the simulated
** clock. Each answer is also put through the fence's own classifier
** (ob__fence_classify), so what the provider says means to the fence what
** the rules it models say it should.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/fence/fence.h"
#include "tests/sim/sim.h"
#include "tests/sim/sim_provider.h"

#define HOUR (3600LL * 1000)
#define T0 1760000000000LL  /* 2025-10-09, true and wall time at start */
#define KEY_A "6f1c2a9e-5b3d-8a41-9c0e-1d2e3f405162"
#define KEY_B "0a1b2c3d-4e5f-8a6b-8c7d-8e9fa0b1c2d3"
#define BODY_O1 "{\"order_id\":\"o-1\",\"amount_minor\":1250,\"currency\":\"EUR\"}"

typedef struct ans_s {
  int status;
  char body[4096];
  int replayed;  /* Idempotent-Replayed: true */
} ans_t;

static ans_t serve(sim_provider_t* p, const char* method, const char* url,
                   const char* key, const char* body) {
  sim_http_req_t rq;
  sim_http_res_t rs;
  ans_t a;
  memset(&rq, 0, sizeof rq);
  memset(&rs, 0, sizeof rs);
  memset(&a, 0, sizeof a);
  rq.method = method;
  rq.url = url;
  rq.target = "";
  rq.idem_key = key ? key : "";
  rq.amz_date = "";
  rq.body = body ? body : "";
  rq.body_len = body ? strlen(body) : 0;
  assert_int_equal(sim_provider_service(p, &rq, &rs), 0);
  a.status = rs.status;
  assert_true(rs.body_len < sizeof a.body);
  memcpy(a.body, rs.body, rs.body_len);
  a.body[rs.body_len] = '\0';
  a.replayed = strcmp(rs.header, "Idempotent-Replayed: true") == 0;
  if (!a.replayed) assert_string_equal(rs.header, "");
  free(rs.body);
  return a;
}

static ans_t charge(sim_provider_t* p, const char* key, const char* body) {
  return serve(p, "POST", SIM_PROVIDER_BASE_URL "/v1/charges", key, body);
}

/* What the fence makes of an answer (lookup 0: a call, 2: a search). */
static ob__fence_answer_t fence(int lookup, const ans_t* a) {
  ob_effect_reply_t r;
  memset(&r, 0, sizeof r);
  r.status = a->status;
  r.sent = 1;
  r.body = a->body;
  r.body_len = strlen(a->body);
  r.replayed = a->replayed;
  return ob__fence_classify(lookup, &r);
}

/* The "id" of a 200 charge. */
static void id_of(const ans_t* a, char* out, size_t n) {
  assert_int_equal(ob__fence_reference(a->body, strlen(a->body), out, n), 0);
  assert_true(strncmp(out, "ch_", 3) == 0);
}

static sim_provider_t* provider(uint64_t seed, int64_t in_flight_ms) {
  sim_provider_config_t c;
  sim_provider_t* p;
  sim_clock_init(seed, T0);
  sim_provider_config_init(&c);
  c.in_flight_ms = in_flight_ms;
  p = sim_provider_new(seed, &c);
  assert_non_null(p);
  return p;
}

static void test_first_request_charges_and_a_repeat_replays(void** state) {
  sim_provider_t* p = provider(1, 2000);
  sim_provider_stats_t st;
  char id[64], id2[64];
  ans_t a, b;
  (void)state;

  a = charge(p, KEY_A, BODY_O1);
  assert_int_equal(a.status, 200);
  assert_false(a.replayed);
  assert_int_equal(fence(0, &a), OB__ANSWER_CONFIRMED);
  id_of(&a, id, sizeof id);
  assert_int_equal(sim_provider_charges_of(p, "o-1"), 1);
  assert_string_equal(sim_provider_first_charge(p, "o-1"), id);

  /* The answer was lost; the fence repeats the call with the same key. */
  sim_clock_advance_ms(5000);
  b = charge(p, KEY_A, BODY_O1);
  assert_int_equal(b.status, 200);
  assert_true(b.replayed);
  assert_string_equal(b.body, a.body);  /* exactly the first answer */
  id_of(&b, id2, sizeof id2);
  assert_string_equal(id2, id);
  assert_int_equal(fence(0, &b), OB__ANSWER_CONFIRMED);

  /* Just before the retention: still the replay. */
  sim_clock_advance_ms(24 * HOUR - 5000 - 1);
  b = charge(p, KEY_A, BODY_O1);
  assert_true(b.replayed);
  assert_string_equal(b.body, a.body);

  sim_provider_stats(p, &st);
  assert_int_equal(st.requests, 3);
  assert_int_equal(st.calls, 3);
  assert_int_equal(st.charges, 1);
  assert_int_equal(st.orders, 1);
  assert_int_equal(st.replays, 2);
  assert_int_equal(st.pruned, 0);
  assert_int_equal(sim_provider_check(p, NULL, 0), 0);
  sim_provider_free(p);
}

static void test_other_payload_under_a_key_is_422(void** state) {
  sim_provider_t* p = provider(2, 2000);
  sim_provider_stats_t st;
  ans_t a;
  (void)state;

  assert_int_equal(charge(p, KEY_A, BODY_O1).status, 200);
  sim_clock_advance_ms(3000);
  /* Same order, another amount; then another order under the same key. */
  a = charge(p, KEY_A,
             "{\"order_id\":\"o-1\",\"amount_minor\":1251,\"currency\":\"EUR\"}");
  assert_int_equal(a.status, 422);
  assert_false(a.replayed);
  assert_int_equal(fence(0, &a), OB__ANSWER_CONFLICT);
  a = charge(p, KEY_A,
             "{\"order_id\":\"o-2\",\"amount_minor\":1250,\"currency\":\"EUR\"}");
  assert_int_equal(a.status, 422);
  /* The parameters, not the bytes: the same fields in another order and
  ** spacing are the same payload. */
  a = charge(p, KEY_A,
             "{ \"currency\":\"EUR\", \"amount_minor\":1250, \"order_id\":\"o-1\" }");
  assert_int_equal(a.status, 200);
  assert_true(a.replayed);

  sim_provider_stats(p, &st);
  assert_int_equal(st.conflicts_422, 2);
  assert_int_equal(st.charges, 1);
  assert_int_equal(sim_provider_charges_of(p, "o-2"), 0);
  sim_provider_free(p);
}

static void test_repeat_inside_the_in_flight_window_is_409(void** state) {
  sim_provider_t* p = provider(3, 10000);
  sim_provider_stats_t st;
  ans_t a, b;
  (void)state;

  a = charge(p, KEY_A, BODY_O1);
  assert_int_equal(a.status, 200);
  sim_clock_advance_ms(9999);
  b = charge(p, KEY_A, BODY_O1);
  assert_int_equal(b.status, 409);
  assert_false(b.replayed);
  assert_int_equal(fence(0, &b), OB__ANSWER_IN_FLIGHT);
  /* The key is locked whatever the payload. */
  b = charge(p, KEY_A,
             "{\"order_id\":\"o-1\",\"amount_minor\":9,\"currency\":\"EUR\"}");
  assert_int_equal(b.status, 409);
  /* A lookup does not see the charge before its request is done. */
  b = serve(p, "GET", SIM_PROVIDER_BASE_URL "/v1/charges?idempotency_key="
            KEY_A, NULL, NULL);
  assert_int_equal(b.status, 404);
  assert_int_equal(fence(1, &b), OB__ANSWER_ABSENT);

  sim_clock_advance_ms(1);
  b = charge(p, KEY_A, BODY_O1);
  assert_int_equal(b.status, 200);
  assert_true(b.replayed);
  assert_string_equal(b.body, a.body);
  b = serve(p, "GET", SIM_PROVIDER_BASE_URL "/v1/charges?idempotency_key="
            KEY_A, NULL, NULL);
  assert_int_equal(b.status, 200);
  assert_int_equal(fence(1, &b), OB__ANSWER_CONFIRMED);

  sim_provider_stats(p, &st);
  assert_int_equal(st.in_flight_409, 2);
  assert_int_equal(st.charges, 1);
  assert_int_equal(st.lookups, 2);
  sim_provider_free(p);
}

static void test_after_24_hours_the_key_makes_a_new_charge(void** state) {
  sim_provider_t* p = provider(4, 2000);
  sim_provider_stats_t st;
  char id[64], id2[64], why[512];
  ans_t a, b;
  (void)state;

  a = charge(p, KEY_A, BODY_O1);
  id_of(&a, id, sizeof id);
  sim_clock_advance_ms(24 * HOUR);
  /* Pruned: a lookup by the key has never seen it ... */
  b = serve(p, "GET", SIM_PROVIDER_BASE_URL "/v1/charges?idempotency_key="
            KEY_A, NULL, NULL);
  assert_int_equal(b.status, 404);
  /* ... and a repeat is a new request: a second real charge. */
  b = charge(p, KEY_A, BODY_O1);
  assert_int_equal(b.status, 200);
  assert_false(b.replayed);
  id_of(&b, id2, sizeof id2);
  assert_string_not_equal(id, id2);
  assert_int_equal(sim_provider_charges_of(p, "o-1"), 2);
  assert_string_equal(sim_provider_first_charge(p, "o-1"), id);

  assert_int_equal(sim_provider_check(p, why, sizeof why), 1);
  assert_non_null(strstr(why, "order o-1 charged 2 times"));
  assert_non_null(strstr(why, id));
  assert_non_null(strstr(why, id2));
  sim_provider_stats(p, &st);
  assert_int_equal(st.pruned, 1);
  assert_int_equal(st.reused_after_prune, 1);
  assert_int_equal(st.orders_charged_twice, 1);
  assert_int_equal(st.charges, 2);
  sim_provider_free(p);
}

static void test_act_then_500_replays_the_500(void** state) {
  sim_provider_t* p = provider(5, 2000);
  sim_provider_stats_t st;
  ans_t a, b;
  (void)state;

  sim_provider_set_faults(p, 0, 1000);
  a = charge(p, KEY_A, BODY_O1);
  assert_int_equal(a.status, 500);
  assert_false(a.replayed);
  assert_int_equal(fence(0, &a), OB__ANSWER_UNKNOWN);  /* retried */
  assert_int_equal(sim_provider_charges_of(p, "o-1"), 1);

  sim_provider_set_faults(p, 0, 0);
  sim_clock_advance_ms(60000);
  b = charge(p, KEY_A, BODY_O1);
  assert_int_equal(b.status, 500);
  assert_true(b.replayed);
  assert_string_equal(b.body, a.body);
  assert_int_equal(fence(0, &b), OB__ANSWER_REPLAYED_ERROR);  /* parked */
  assert_int_equal(sim_provider_charges_of(p, "o-1"), 1);

  /* The money moved: a search by the order finds the charge. */
  b = serve(p, "GET", SIM_PROVIDER_BASE_URL
            "/v1/charges/search?query=metadata['order_id']:'o-1'", NULL, NULL);
  assert_int_equal(b.status, 200);
  assert_int_equal(fence(2, &b), OB__ANSWER_CONFIRMED);

  sim_provider_stats(p, &st);
  assert_int_equal(st.errors_after, 1);
  assert_int_equal(st.replays, 1);
  assert_int_equal(st.replayed_5xx, 1);
  sim_provider_free(p);
}

static void test_5xx_without_acting_leaves_the_key_free(void** state) {
  sim_provider_t* p = provider(6, 2000);
  sim_provider_stats_t st;
  ans_t a;
  (void)state;

  sim_provider_set_faults(p, 1000, 0);
  a = charge(p, KEY_A, BODY_O1);
  assert_true(a.status == 500 || a.status == 503);
  assert_false(a.replayed);
  assert_int_equal(fence(0, &a), OB__ANSWER_UNKNOWN);
  assert_int_equal(sim_provider_charges_of(p, "o-1"), 0);

  sim_provider_set_faults(p, 0, 0);
  sim_clock_advance_ms(1000);  /* inside what would be the window */
  a = charge(p, KEY_A, BODY_O1);
  assert_int_equal(a.status, 200);
  assert_false(a.replayed);  /* nothing was saved: a first execution */
  assert_int_equal(sim_provider_charges_of(p, "o-1"), 1);
  sim_provider_stats(p, &st);
  assert_int_equal(st.errors_before, 1);
  assert_int_equal(st.charges, 1);
  sim_provider_free(p);
}

static void test_search_by_order_reference(void** state) {
  sim_provider_config_t c;
  sim_provider_t* p;
  ans_t a;
  char ref[64];
  (void)state;

  sim_clock_init(7, T0);
  sim_provider_config_init(&c);
  c.search_lag_ms = 30000;
  p = sim_provider_new(7, &c);

  /* Nothing yet: the fence makes the call. */
  a = serve(p, "GET", SIM_PROVIDER_BASE_URL
            "/v1/charges/search?query=metadata['order_id']:'o-1'", NULL, NULL);
  assert_int_equal(a.status, 200);
  assert_int_equal(fence(2, &a), OB__ANSWER_ABSENT);

  assert_int_equal(charge(p, KEY_A, BODY_O1).status, 200);
  /* The index lags. */
  sim_clock_advance_ms(2000 + 29999);
  a = serve(p, "GET", SIM_PROVIDER_BASE_URL
            "/v1/charges/search?query=metadata['order_id']:'o-1'", NULL, NULL);
  assert_int_equal(fence(2, &a), OB__ANSWER_ABSENT);
  sim_clock_advance_ms(1);
  /* Percent-encoded as a provider description may write it. */
  a = serve(p, "GET", SIM_PROVIDER_BASE_URL
            "/v1/charges/search?query=metadata%5B%27order_id%27%5D%3A%27o-1%27",
            NULL, NULL);
  assert_int_equal(fence(2, &a), OB__ANSWER_CONFIRMED);
  assert_int_equal(ob__fence_found(a.body, strlen(a.body), ref, sizeof ref),
                   1);
  assert_string_equal(ref, sim_provider_first_charge(p, "o-1"));

  /* Two charges of one order (a second key): a conflict for a person. */
  assert_int_equal(charge(p, KEY_B, BODY_O1).status, 200);
  sim_clock_advance_ms(2000 + 30000);
  a = serve(p, "GET", SIM_PROVIDER_BASE_URL
            "/v1/charges/search?query=metadata[\"order_id\"]:\"o-1\"", NULL,
            NULL);
  assert_int_equal(fence(2, &a), OB__ANSWER_CONFLICT);
  assert_int_equal(sim_provider_check(p, NULL, 0), 1);

  a = serve(p, "GET", SIM_PROVIDER_BASE_URL "/v1/charges/search?query=amount>3",
            NULL, NULL);
  assert_int_equal(a.status, 400);
  sim_provider_free(p);
}

static void test_refusals_save_nothing(void** state) {
  sim_provider_t* p = provider(8, 2000);
  sim_provider_stats_t st;
  ans_t a;
  (void)state;

  a = charge(p, NULL, BODY_O1);
  assert_int_equal(a.status, 400);
  assert_int_equal(fence(0, &a), OB__ANSWER_FAILED);
  a = charge(p, KEY_A, "{\"order_id\":\"o-1\",\"amount_minor\":0,"
                       "\"currency\":\"EUR\"}");
  assert_int_equal(a.status, 400);
  a = charge(p, KEY_A, "{\"order_id\":\"o-1\"}");
  assert_int_equal(a.status, 400);
  a = charge(p, KEY_A, "not json");
  assert_int_equal(a.status, 400);
  /* The key is still free: the valid request executes. */
  a = charge(p, KEY_A, BODY_O1);
  assert_int_equal(a.status, 200);
  assert_false(a.replayed);
  a = serve(p, "DELETE", SIM_PROVIDER_BASE_URL "/v1/charges", NULL, NULL);
  assert_int_equal(a.status, 404);
  sim_provider_stats(p, &st);
  assert_int_equal(st.invalid_400, 4);
  assert_int_equal(st.charges, 1);
  sim_provider_free(p);
}

/* One scripted day with faults drawn from the seed: its trace hash, and the
** charge ids it made. */
static uint64_t scripted(uint64_t seed, char* ids, size_t n) {
  sim_provider_t* p = provider(seed, 1500);
  uint64_t h;
  char key[64], body[128];
  size_t len = 0;
  sim_provider_set_faults(p, 100, 100);
  for (int i = 0; i < 40; i++) {
    snprintf(key, sizeof key, "key-%d", i % 13);
    snprintf(body, sizeof body,
             "{\"order_id\":\"o-%d\",\"amount_minor\":%d,\"currency\":\"EUR\"}",
             i % 13, 100 + i % 13);
    (void)charge(p, key, body);
    sim_clock_advance_ms(700 + 3 * HOUR * (i % 9 == 8));
  }
  for (int i = 0; i < 13; i++) {
    const char* id;
    snprintf(key, sizeof key, "o-%d", i);
    id = sim_provider_first_charge(p, key);
    len += (size_t)snprintf(ids + len, n - len, "%s%s", i ? "," : "",
                            id ? id : "-");
    if (len >= n) break;
  }
  h = sim_trace_hash();
  assert_true(sim_trace_count() >= 40);  /* a line per request */
  sim_provider_free(p);
  return h;
}

static void test_deterministic(void** state) {
  char a[512], b[512], c[512];
  (void)state;
  uint64_t h1 = scripted(42, a, sizeof a);
  uint64_t h2 = scripted(42, b, sizeof b);
  uint64_t h3 = scripted(43, c, sizeof c);
  assert_true(h1 == h2);
  assert_string_equal(a, b);
  assert_true(h1 != h3);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_first_request_charges_and_a_repeat_replays),
      cmocka_unit_test(test_other_payload_under_a_key_is_422),
      cmocka_unit_test(test_repeat_inside_the_in_flight_window_is_409),
      cmocka_unit_test(test_after_24_hours_the_key_makes_a_new_charge),
      cmocka_unit_test(test_act_then_500_replays_the_500),
      cmocka_unit_test(test_5xx_without_acting_leaves_the_key_free),
      cmocka_unit_test(test_search_by_order_reference),
      cmocka_unit_test(test_refusals_save_nothing),
      cmocka_unit_test(test_deterministic),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
