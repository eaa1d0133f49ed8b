/* SPDX-License-Identifier: Apache-2.0 */
/* The fence's rules (core/fence/fence_policy.c): pure functions. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "core/fence/fence.h"

static ob_effect_reply_t reply(int status, int sent, const char* body) {
  ob_effect_reply_t r;
  memset(&r, 0, sizeof r);
  r.status = status;
  r.sent = sent;
  r.body = body;
  r.body_len = body ? strlen(body) : 0;
  return r;
}

static void test_idempotency_key(void** state) {
  char a[OB_UUID_BUFLEN], b[OB_UUID_BUFLEN], c[OB_UUID_BUFLEN];
  (void)state;
  assert_int_equal(ob__fence_idempotency_key("charge:order-42", a), 0);
  assert_int_equal(ob__fence_idempotency_key("charge:order-42", b), 0);
  assert_int_equal(ob__fence_idempotency_key("charge:order-43", c), 0);
  assert_string_equal(a, b);              /* stable */
  assert_string_not_equal(a, c);          /* distinct */
  assert_int_equal(strlen(a), 36);
  assert_int_equal(a[14], '8');           /* UUID version 8 */
  assert_true(strchr("89ab", a[19]) != NULL);  /* RFC 9562 variant */
  /* Pinned: a change would re-charge every in-flight order after an
  ** upgrade, so the derivation must never change silently. */
  /* = python3: sha256(b"oncebox/fence/v1\0charge:order-42"), v8 bits set */
  assert_string_equal(a, "db7e26e2-64af-8543-833f-6076eb40fec9");
}

static ob__fence_action_t act(int fresh, int keys, int lookup, int64_t age,
                              int64_t retention) {
  ob__fence_facts_t f;
  f.fresh = fresh;
  f.idempotency_keys = keys;
  f.has_lookup = lookup & 1;
  f.has_reference_lookup = (lookup & 2) != 0;
  f.key_age_ms = age;
  f.key_retention_ms = retention;
  return ob__fence_next_action(&f);
}

#define HOUR (3600LL * 1000)

static void test_next_action(void** state) {
  (void)state;
  /* fresh, idempotency keys, lookup; keys kept forever */
  assert_int_equal(act(1, 0, 0, 0, 0), OB__FENCE_CALL);
  assert_int_equal(act(0, 1, 0, 0, 0), OB__FENCE_CALL);
  assert_int_equal(act(0, 1, 1, 0, 0), OB__FENCE_CALL);
  assert_int_equal(act(0, 0, 1, 0, 0), OB__FENCE_LOOKUP);
  assert_int_equal(act(0, 0, 0, 0, 0), OB__FENCE_PARK);
  assert_int_equal(act(0, 1, 0, 1000 * HOUR, 0), OB__FENCE_CALL);
}

/* The money defect: a reply lost, a stop, and 25 hours later the
** call was repeated with a key Stripe had pruned (24 h): a second charge.
** Past 7/8 of the retention a maybe-sent effect is never called again
** with its key, nor looked up by it; a fresh one (never sent) still is. */
static void test_key_retention(void** state) {
  const int64_t day = 24 * HOUR;
  (void)state;
  assert_int_equal(ob__fence_key_deadline_ms(day), 21 * HOUR);
  assert_int_equal(act(0, 1, 0, 21 * HOUR - 1, day), OB__FENCE_CALL);
  assert_int_equal(act(0, 1, 0, 21 * HOUR, day), OB__FENCE_PARK_KEY_EXPIRED);
  assert_int_equal(act(0, 1, 0, 25 * HOUR, day), OB__FENCE_PARK_KEY_EXPIRED);
  assert_int_equal(act(0, 1, 1, 25 * HOUR, day), OB__FENCE_PARK_KEY_EXPIRED);
  assert_int_equal(act(0, 0, 1, 25 * HOUR, day), OB__FENCE_PARK_KEY_EXPIRED);
  assert_int_equal(act(0, 0, 1, 20 * HOUR, day), OB__FENCE_LOOKUP);
  assert_int_equal(act(1, 1, 0, 25 * HOUR, day), OB__FENCE_CALL);
  /* A lookup by the business reference (2) is the way out past it; it
  ** is also the only question a provider without keys can be asked. */
  assert_int_equal(act(0, 1, 2, 25 * HOUR, day), OB__FENCE_LOOKUP_REFERENCE);
  assert_int_equal(act(0, 1, 3, 25 * HOUR, day), OB__FENCE_LOOKUP_REFERENCE);
  assert_int_equal(act(0, 1, 2, 20 * HOUR, day), OB__FENCE_CALL);
  assert_int_equal(act(0, 0, 2, 1 * HOUR, day), OB__FENCE_LOOKUP_REFERENCE);
  assert_int_equal(act(0, 0, 3, 1 * HOUR, day), OB__FENCE_LOOKUP);
  /* Adyen keeps keys at least 31 days. */
  assert_int_equal(act(0, 1, 0, 25 * HOUR, 31 * day), OB__FENCE_CALL);
}

static void test_classify_call(void** state) {
  ob_effect_reply_t r;
  (void)state;
  static const struct { int status, sent, want; } cases[] = {
      {200, 1, OB__ANSWER_CONFIRMED}, {201, 1, OB__ANSWER_CONFIRMED},
      {400, 1, OB__ANSWER_FAILED},    {402, 1, OB__ANSWER_FAILED},
      {404, 1, OB__ANSWER_FAILED},    {422, 1, OB__ANSWER_CONFLICT},
      {408, 1, OB__ANSWER_UNKNOWN},   {409, 1, OB__ANSWER_IN_FLIGHT},
      {425, 1, OB__ANSWER_UNKNOWN},   {429, 1, OB__ANSWER_UNKNOWN},
      {500, 1, OB__ANSWER_UNKNOWN},   {503, 1, OB__ANSWER_UNKNOWN},
      {302, 1, OB__ANSWER_UNKNOWN},   {OB_ETIMEDOUT, 1, OB__ANSWER_UNKNOWN},
      {OB_ENET, 0, OB__ANSWER_NOT_SENT}, {OB_ETLS, 0, OB__ANSWER_NOT_SENT},
      {401, 1, OB__ANSWER_NOT_SENT},  {403, 1, OB__ANSWER_NOT_SENT},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    r = reply(cases[i].status, cases[i].sent, NULL);
    assert_int_equal(ob__fence_classify(0, &r), cases[i].want);
  }
}

/* Stripe's idempotency errors and the IETF draft's, from their bodies and
** the replay header. */
static void test_classify_idempotency(void** state) {
  ob_effect_reply_t r;
  (void)state;
  r = reply(400, 1, "{\"error\":{\"type\":\"idempotency_error\",\"message\":"
            "\"Keys for idempotent requests can only be used with the same "
            "parameters they were first used with.\"}}");
  assert_int_equal(ob__fence_classify(0, &r), OB__ANSWER_CONFLICT);
  r = reply(400, 1, "{\"error\":{\"type\":\"idempotency_error\",\"code\":"
            "\"idempotency_key_in_use\",\"message\":\"in use\"}}");
  assert_int_equal(ob__fence_classify(0, &r), OB__ANSWER_IN_FLIGHT);
  r = reply(400, 1, "{\"error\":{\"type\":\"invalid_request_error\","
            "\"code\":\"parameter_missing\"}}");
  assert_int_equal(ob__fence_classify(0, &r), OB__ANSWER_FAILED);
  r = reply(400, 1, "not json");
  assert_int_equal(ob__fence_classify(0, &r), OB__ANSWER_FAILED);
  r = reply(500, 1, "{\"error\":{\"type\":\"api_error\"}}");
  assert_int_equal(ob__fence_classify(0, &r), OB__ANSWER_UNKNOWN);
  r.replayed = 1;
  assert_int_equal(ob__fence_classify(0, &r), OB__ANSWER_REPLAYED_ERROR);
  /* A replayed decline stays a decline; a replayed success a success. */
  r = reply(402, 1, "{\"error\":{\"type\":\"card_error\"}}");
  r.replayed = 1;
  assert_int_equal(ob__fence_classify(0, &r), OB__ANSWER_FAILED);
  r = reply(200, 1, "{\"id\":\"ch_1\"}");
  r.replayed = 1;
  assert_int_equal(ob__fence_classify(0, &r), OB__ANSWER_CONFIRMED);
}

/* A lookup by reference: Stripe's search result shape, and a plain
** object. */
static void test_classify_reference_lookup(void** state) {
  ob_effect_reply_t r;
  char ref[64];
  (void)state;
  r = reply(200, 1, "{\"object\":\"search_result\",\"data\":[]}");
  assert_int_equal(ob__fence_classify(2, &r), OB__ANSWER_ABSENT);
  r = reply(200, 1, "{\"object\":\"search_result\",\"data\":[{\"id\":"
            "\"ch_1\",\"amount\":1999}],\"has_more\":false}");
  assert_int_equal(ob__fence_classify(2, &r), OB__ANSWER_CONFIRMED);
  assert_int_equal(ob__fence_found(r.body, r.body_len, ref, sizeof ref), 1);
  assert_string_equal(ref, "ch_1");
  r = reply(200, 1, "{\"data\":[{\"id\":\"ch_1\"},{\"id\":\"ch_2\"}]}");
  assert_int_equal(ob__fence_classify(2, &r), OB__ANSWER_CONFLICT);
  r = reply(200, 1, "{\"id\":\"ch_9\"}");
  assert_int_equal(ob__fence_classify(2, &r), OB__ANSWER_CONFIRMED);
  r = reply(404, 1, "{}");
  assert_int_equal(ob__fence_classify(2, &r), OB__ANSWER_ABSENT);
  /* Unreadable: nothing is concluded. */
  r = reply(200, 1, "{\"data\":[{\"amount\":1}]}");
  assert_int_equal(ob__fence_classify(2, &r), OB__ANSWER_UNKNOWN);
  r = reply(200, 1, "not json");
  assert_int_equal(ob__fence_classify(2, &r), OB__ANSWER_UNKNOWN);
  r = reply(200, 1, "{\"data\":{}}");
  assert_int_equal(ob__fence_classify(2, &r), OB__ANSWER_UNKNOWN);
  r = reply(503, 1, "{}");
  assert_int_equal(ob__fence_classify(2, &r), OB__ANSWER_UNKNOWN);
  r = reply(401, 1, "{}");
  assert_int_equal(ob__fence_classify(2, &r), OB__ANSWER_NOT_SENT);
}

static void test_classify_lookup(void** state) {
  ob_effect_reply_t r;
  (void)state;
  r = reply(200, 1, "{}");
  assert_int_equal(ob__fence_classify(1, &r), OB__ANSWER_CONFIRMED);
  r = reply(404, 1, NULL);
  assert_int_equal(ob__fence_classify(1, &r), OB__ANSWER_ABSENT);
  r = reply(400, 1, NULL);  /* a lookup refused teaches nothing */
  assert_int_equal(ob__fence_classify(1, &r), OB__ANSWER_UNKNOWN);
  r = reply(501, 1, NULL);
  assert_int_equal(ob__fence_classify(1, &r), OB__ANSWER_UNKNOWN);
  r = reply(OB_ENET, 1, NULL);
  assert_int_equal(ob__fence_classify(1, &r), OB__ANSWER_UNKNOWN);
}

static void test_reference(void** state) {
  char ref[16];
  (void)state;
  assert_int_equal(ob__fence_reference("{\"id\":\"ch_1\"}", 13, ref, sizeof ref),
                   0);
  assert_string_equal(ref, "ch_1");
  assert_int_equal(ob__fence_reference(" { \"x\":{\"id\":\"no\"}, \"id\" : "
                                       "\"ch_2\" } ", 36, ref, sizeof ref),
                   0);
  assert_string_equal(ref, "ch_2");
  assert_int_equal(ob__fence_reference("{\"id\":7}", 8, ref, sizeof ref), -1);
  assert_int_equal(ob__fence_reference("{\"id\":\"\"}", 9, ref, sizeof ref), -1);
  assert_int_equal(ob__fence_reference("[\"id\"]", 6, ref, sizeof ref), -1);
  assert_int_equal(ob__fence_reference("{\"id\":\"ch", 9, ref, sizeof ref), -1);
  assert_int_equal(ob__fence_reference(NULL, 0, ref, sizeof ref), -1);
  /* Truncated to the buffer, control characters end it. */
  assert_int_equal(ob__fence_reference("{\"id\":\"ch_0123456789abcdef\"}", 28,
                                       ref, sizeof ref), 0);
  assert_string_equal(ref, "ch_0123456789ab");
  assert_int_equal(ob__fence_reference("{\"id\":\"ch\\n1\"}", 14, ref,
                                       sizeof ref), 0);
  assert_string_equal(ref, "ch");
}

static void test_reason(void** state) {
  char out[128];
  ob_effect_reply_t r;
  (void)state;
  r = reply(402, 1, "{\"error\":{\"type\":\"card_error\",\"code\":"
                    "\"card_declined\",\"message\":\"Your card was declined.\"}}");
  ob__fence_reason(&r, out, sizeof out);
  assert_string_equal(out, "402 card_declined: Your card was declined.");
  r = reply(400, 1, "{\"error\":{\"type\":\"invalid_request_error\","
                    "\"message\":\"bad\"}}");
  ob__fence_reason(&r, out, sizeof out);
  assert_string_equal(out, "400 invalid_request_error: bad");
  r = reply(422, 1, "{\"message\":\"nope\"}");
  ob__fence_reason(&r, out, sizeof out);
  assert_string_equal(out, "422: nope");
  r = reply(400, 1, "{\"error\":\"plain\"}");
  ob__fence_reason(&r, out, sizeof out);
  assert_string_equal(out, "400: plain");
  r = reply(503, 1, "<html>\x01\n</html>");
  ob__fence_reason(&r, out, sizeof out);
  assert_string_equal(out, "503: <html>?" "?</html>");
  r = reply(500, 1, NULL);
  ob__fence_reason(&r, out, sizeof out);
  assert_string_equal(out, "500");
  r = reply(OB_ENET, 1, NULL);
  r.detail = "connection closed";
  ob__fence_reason(&r, out, sizeof out);
  assert_string_equal(out, "no answer: connection closed");
}

/* What an attempt says of the provider's link (docs/offline.md). */
static void test_link_answer(void** state) {
  ob_effect_reply_t r;
  (void)state;
  r = reply(OB_ENET, 0, NULL);  /* refused, DNS, TLS: nothing sent */
  assert_int_equal(ob__fence_link_answer(&r), 1);
  r = reply(OB_ETIMEDOUT, 1, NULL);  /* sent, no answer */
  assert_int_equal(ob__fence_link_answer(&r), 1);
  r = reply(OB_EPROTO, 1, NULL);
  assert_int_equal(ob__fence_link_answer(&r), 1);
  r = reply(401, 1, NULL);
  assert_int_equal(ob__fence_link_answer(&r), 1);
  r = reply(403, 1, NULL);
  assert_int_equal(ob__fence_link_answer(&r), 1);
  r = reply(OB_ECANCELED, 0, NULL);
  assert_int_equal(ob__fence_link_answer(&r), -1);
  r = reply(200, 1, "{}");
  assert_int_equal(ob__fence_link_answer(&r), 0);
  r = reply(402, 1, "{}");
  assert_int_equal(ob__fence_link_answer(&r), 0);
  r = reply(404, 1, "{}");
  assert_int_equal(ob__fence_link_answer(&r), 0);
  r = reply(503, 1, "{}");  /* reachable, if unwell */
  assert_int_equal(ob__fence_link_answer(&r), 0);
  r = reply(429, 1, "{}");
  assert_int_equal(ob__fence_link_answer(&r), 0);
}

/* The limits at their boundaries, and a figure 0 is no limit. */
static void test_offline_check(void** state) {
  ob_offline_limit_t l;
  char why[256];
  (void)state;
  memset(&l, 0, sizeof l);
  l.currency = "EUR";
  /* No limit set for the currency: the default decides. */
  assert_int_equal(ob__offline_check(NULL, OB_OFFLINE_NO_LIMIT, "USD", 1, 0, 0,
                                     why, sizeof why), 0);
  assert_int_equal(ob__offline_check(NULL, OB_OFFLINE_REFUSE, "USD", 1, 0, 0,
                                     why, sizeof why), OB_EOFFLINE);
  assert_non_null(strstr(why, "USD"));
  /* All figures 0: nothing limited. */
  assert_int_equal(ob__offline_check(&l, OB_OFFLINE_REFUSE, "EUR",
                                     INT64_C(9007199254740991), 1000000,
                                     INT64_MAX / 2, why, sizeof why), 0);
  l.max_amount = 25000;
  assert_int_equal(ob__offline_check(&l, 0, "EUR", 25000, 0, 0, why,
                                     sizeof why), 0);
  assert_int_equal(ob__offline_check(&l, 0, "EUR", 25001, 0, 0, why,
                                     sizeof why), OB_EOFFLINE);
  l.max_amount = 0;
  l.max_total = 10000;
  assert_int_equal(ob__offline_check(&l, 0, "EUR", 4000, 3, 6000, why,
                                     sizeof why), 0);
  assert_int_equal(ob__offline_check(&l, 0, "EUR", 4001, 3, 6000, why,
                                     sizeof why), OB_EOFFLINE);
  /* Totals already over (a limit lowered since): no overflow, refused. */
  assert_int_equal(ob__offline_check(&l, 0, "EUR", 1, 9, 20000, why,
                                     sizeof why), OB_EOFFLINE);
  assert_int_equal(ob__offline_check(&l, 0, "EUR", INT64_MAX, 0, 1, why,
                                     sizeof why), OB_EOFFLINE);
  l.max_total = 0;
  l.max_count = 500;  /* Moneris' 500 records */
  assert_int_equal(ob__offline_check(&l, 0, "EUR", 1, 499, 0, why,
                                     sizeof why), 0);
  assert_int_equal(ob__offline_check(&l, 0, "EUR", 1, 500, 0, why,
                                     sizeof why), OB_EOFFLINE);
  assert_string_equal(why, "500 EUR effects are stored, the offline maximum");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_idempotency_key),
      cmocka_unit_test(test_next_action),
      cmocka_unit_test(test_key_retention),
      cmocka_unit_test(test_classify_idempotency),
      cmocka_unit_test(test_classify_reference_lookup),
      cmocka_unit_test(test_classify_call),
      cmocka_unit_test(test_classify_lookup),
      cmocka_unit_test(test_reference),
      cmocka_unit_test(test_reason),
      cmocka_unit_test(test_link_answer),
      cmocka_unit_test(test_offline_check),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
