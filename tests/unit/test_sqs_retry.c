/* SPDX-License-Identifier: Apache-2.0 */
/*
** SQS retry rules (docs/sqs-protocol.md): classification of real error
** responses, full-jitter backoff, server hints, the 500-token retry quota,
** the per-call decision including long polling, HTTP dates and clock-skew
** correction. Randomness from the seeded fake clock of tests/support.
*/
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "core/sigv4/sigv4.h"
#include "core/sqs/sqs.h"
#include "core/sqs/sqs_retry.h"
#include "oncebox.h"
#include "tests/support/testsupport.h"

static ob__sqs_error_t err_of(int status, const char* body,
                              const char* query_error) {
  ob__sqs_error_t e;
  assert_int_equal(ob__sqs_parse_error(status, body, body ? strlen(body) : 0,
                                       query_error, NULL, &e), 0);
  return e;
}

static void test_classify(void** state) {
  static const struct {
    int status;
    const char* body;
    const char* qe;
    int skew_corrected;
    ob__sqs_retry_class_t want;
  } cases[] = {
      /* Throttling, including SQS's 403 RequestThrottled and KMS. */
      {429, NULL, NULL, 0, OB__SQS_RETRY_THROTTLING},
      {403, "{\"__type\":\"com.amazonaws.sqs#RequestThrottled\",\"message\":"
            "\"Request is throttled.\"}", "RequestThrottled;Sender", 0,
       OB__SQS_RETRY_THROTTLING},
      {403, "{\"__type\":\"com.amazonaws.sqs#RequestThrottled\"}", NULL, 0,
       OB__SQS_RETRY_THROTTLING},
      {400, "{\"__type\":\"ThrottlingException\"}", NULL, 0,
       OB__SQS_RETRY_THROTTLING},
      {400, "{\"__type\":\"com.amazonaws.sqs#KmsThrottled\"}",
       "KMS.ThrottlingException;Sender", 0, OB__SQS_RETRY_THROTTLING},
      {400, NULL, "AWS.SimpleQueueService.RequestThrottled;Sender", 0,
       OB__SQS_RETRY_THROTTLING},
      /* Transient: 5xx with or without a body, timeouts. */
      {500, "{\"__type\":\"InternalFailure\"}", NULL, 0,
       OB__SQS_RETRY_TRANSIENT},
      {500, "{\"statusCode\":500,\"error\":\"Internal Server Error\"}", NULL, 0,
       OB__SQS_RETRY_TRANSIENT},
      {502, "<html>bad gateway</html>", NULL, 0, OB__SQS_RETRY_TRANSIENT},
      {503, "{\"__type\":\"ServiceUnavailable\"}", NULL, 0,
       OB__SQS_RETRY_TRANSIENT},
      {504, NULL, NULL, 0, OB__SQS_RETRY_TRANSIENT},
      {400, "{\"__type\":\"RequestTimeout\"}", NULL, 0,
       OB__SQS_RETRY_TRANSIENT},
      /* Not retryable: sender faults and the special cases. */
      {400, "{\"__type\":\"com.amazonaws.sqs#QueueDoesNotExist\"}",
       "AWS.SimpleQueueService.NonExistentQueue;Sender", 0, OB__SQS_RETRY_NONE},
      {400, "{\"__type\":\"com.amazonaws.sqs#InvalidParameterValue\"}", NULL, 0,
       OB__SQS_RETRY_NONE},
      {400, "{\"__type\":\"com.amazonaws.sqs#InvalidMessageContents\"}", NULL,
       0, OB__SQS_RETRY_NONE},
      {403, "{\"__type\":\"com.amazonaws.sqs#OverLimit\"}", "OverLimit;Sender",
       0, OB__SQS_RETRY_NONE},
      {404, "{\"__type\":\"com.amazonaws.sqs#ReceiptHandleIsInvalid\"}",
       "ReceiptHandleIsInvalid;Sender", 0, OB__SQS_RETRY_NONE},
      {403, "{\"__type\":\"com.amazonaws.sqs#InvalidSecurity\"}", NULL, 0,
       OB__SQS_RETRY_NONE},
      {400, "{\"__type\":\"com.amazonaws.sqs#KmsAccessDenied\"}",
       "KMS.AccessDeniedException;Sender", 0, OB__SQS_RETRY_NONE},
      {403, "{\"__type\":\"InvalidClientTokenId\"}", NULL, 0,
       OB__SQS_RETRY_NONE},
      {400, NULL, NULL, 0, OB__SQS_RETRY_NONE},
      /* Clock skew: only once the offset has been corrected. */
      {400, "{\"__type\":\"RequestExpired\"}", NULL, 0, OB__SQS_RETRY_NONE},
      {400, "{\"__type\":\"RequestExpired\"}", NULL, 1,
       OB__SQS_RETRY_CLOCK_SKEW},
      {403, "{\"__type\":\"SignatureDoesNotMatch\"}", NULL, 1,
       OB__SQS_RETRY_CLOCK_SKEW},
      {403, "{\"__type\":\"InvalidSignatureException\"}", NULL, 1,
       OB__SQS_RETRY_CLOCK_SKEW},
      {400, "{\"__type\":\"QueueDoesNotExist\"}", NULL, 1, OB__SQS_RETRY_NONE},
  };
  (void)state;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ob__sqs_error_t e = err_of(cases[i].status, cases[i].body, cases[i].qe);
    ob__sqs_retry_class_t got =
        ob__sqs_classify(OB__SQS_NET_NONE, &e, cases[i].skew_corrected);
    if (got != cases[i].want)
      print_error("case %zu: HTTP %d %s -> %d, want %d\n", i, cases[i].status,
                  e.code, got, cases[i].want);
    assert_int_equal(got, cases[i].want);
  }
  /* Transport failures: all transient but a fatal TLS refusal. */
  for (int n = OB__SQS_NET_CONNECT_TIMEOUT; n <= OB__SQS_NET_UNREACHABLE; n++)
    assert_int_equal(ob__sqs_classify((ob__sqs_net_t)n, NULL, 0),
                     OB__SQS_RETRY_TRANSIENT);
  assert_int_equal(ob__sqs_classify(OB__SQS_NET_TLS_FATAL, NULL, 0),
                   OB__SQS_RETRY_NONE);
  assert_int_equal(ob__sqs_classify(OB__SQS_NET_NONE, NULL, 0),
                   OB__SQS_RETRY_NONE);
}

static void test_backoff_bounds(void** state) {
  static const int64_t transient[] = {50,   100,  200,   400,   800,  1600,
                                      3200, 6400, 12800, 20000, 20000};
  static const int64_t throttling[] = {1000, 2000, 4000, 8000, 16000, 20000};
  (void)state;
  /* Without randomness: the ceiling min(base x 2^i, 20 s). */
  for (int i = 0; i < 11; i++)
    assert_int_equal(ob__sqs_backoff_ms(OB__SQS_RETRY_TRANSIENT, i, NULL),
                     transient[i]);
  for (int i = 0; i < 6; i++)
    assert_int_equal(ob__sqs_backoff_ms(OB__SQS_RETRY_THROTTLING, i, NULL),
                     throttling[i]);
  assert_int_equal(ob__sqs_backoff_ms(OB__SQS_RETRY_CLOCK_SKEW, 0, NULL), 50);
  assert_int_equal(ob__sqs_backoff_ms(OB__SQS_RETRY_TRANSIENT, 100000, NULL),
                   20000);
  assert_int_equal(ob__sqs_backoff_ms(OB__SQS_RETRY_TRANSIENT, -3, NULL), 50);
}

static void all_ones(void* ctx, void* buf, size_t len) {
  (void)ctx;
  memset(buf, 0xff, len);
}

static void all_zero(void* ctx, void* buf, size_t len) {
  (void)ctx;
  memset(buf, 0, len);
}

static void test_backoff_jitter(void** state) {
  fake_clock_t fc;
  ob_clock_t hi = {NULL, NULL, all_ones, NULL};
  ob_clock_t lo = {NULL, NULL, all_zero, NULL};
  double sum = 0;
  int64_t mn = INT64_MAX, mx = -1;
  const int n = 20000;
  (void)state;
  fake_clock_init(&fc, 0, 42);
  /* Full jitter over [0, ceiling): uniform, mean ceiling/2. */
  for (int i = 0; i < n; i++) {
    int64_t d = ob__sqs_backoff_ms(OB__SQS_RETRY_THROTTLING, 3, &fc.clock);
    assert_true(d >= 0 && d < 8000);
    sum += (double)d;
    if (d < mn) mn = d;
    if (d > mx) mx = d;
  }
  print_message("throttling retry 4: mean %.0f ms (want ~4000), range "
                "%lld..%lld\n", sum / n, (long long)mn, (long long)mx);
  assert_true(sum / n > 3850 && sum / n < 4150);
  assert_true(mn < 50 && mx > 7950);
  assert_int_equal(ob__sqs_backoff_ms(OB__SQS_RETRY_TRANSIENT, 0, &hi), 49);
  assert_int_equal(ob__sqs_backoff_ms(OB__SQS_RETRY_TRANSIENT, 20, &hi),
                   19999);
  assert_int_equal(ob__sqs_backoff_ms(OB__SQS_RETRY_THROTTLING, 0, &lo), 0);
}

static void test_hints(void** state) {
  const int64_t now = INT64_C(784111777000); /* Sun, 06 Nov 1994 08:49:37 */
  (void)state;
  assert_int_equal(ob__sqs_apply_hint(100, -1), 100);
  assert_int_equal(ob__sqs_apply_hint(100, 50), 100);
  assert_int_equal(ob__sqs_apply_hint(100, 3000), 3000);
  assert_int_equal(ob__sqs_apply_hint(100, 60000), 5100);
  assert_int_equal(ob__sqs_retry_hint_ms("1500", NULL, now), 1500);
  assert_int_equal(ob__sqs_retry_hint_ms(NULL, "3", now), 3000);
  assert_int_equal(ob__sqs_retry_hint_ms("soon", " 2 ", now), 2000);
  assert_int_equal(ob__sqs_retry_hint_ms(NULL, "Sun, 06 Nov 1994 08:49:47 GMT",
                                         now), 10000);
  assert_int_equal(ob__sqs_retry_hint_ms(NULL, "Sun, 06 Nov 1994 08:49:30 GMT",
                                         now), 0);
  assert_int_equal(ob__sqs_retry_hint_ms(NULL, "later", now), -1);
  assert_int_equal(ob__sqs_retry_hint_ms("-5", "1e3", now), -1);
  assert_int_equal(ob__sqs_retry_hint_ms("9999999999999", NULL, now), -1);
  assert_int_equal(ob__sqs_retry_hint_ms(NULL, NULL, now), -1);
}

static void test_bucket(void** state) {
  ob__sqs_bucket_t b;
  int n = 0;
  (void)state;
  ob__sqs_bucket_init(&b);
  assert_int_equal(b.tokens, 500);
  assert_int_equal(ob__sqs_retry_cost(OB__SQS_RETRY_NONE), 0);
  assert_int_equal(ob__sqs_bucket_acquire(&b, OB__SQS_RETRY_NONE), 0);
  assert_int_equal(ob__sqs_bucket_acquire(&b, OB__SQS_RETRY_TRANSIENT), 14);
  assert_int_equal(ob__sqs_bucket_acquire(&b, OB__SQS_RETRY_THROTTLING), 5);
  assert_int_equal(ob__sqs_bucket_acquire(&b, OB__SQS_RETRY_CLOCK_SKEW), 14);
  assert_int_equal(b.tokens, 467);
  ob__sqs_bucket_success(&b, 14);
  ob__sqs_bucket_success(&b, 0);
  assert_int_equal(b.tokens, 482);
  while (ob__sqs_bucket_acquire(&b, OB__SQS_RETRY_TRANSIENT) == 14) n++;
  assert_int_equal(n, 34);          /* 482 / 14 */
  assert_int_equal(b.tokens, 6);    /* refused: nothing taken */
  assert_int_equal(ob__sqs_bucket_acquire(&b, OB__SQS_RETRY_THROTTLING), 5);
  assert_int_equal(ob__sqs_bucket_acquire(&b, OB__SQS_RETRY_THROTTLING), 0);
  assert_int_equal(b.tokens, 1);
  for (int i = 0; i < 1000; i++) ob__sqs_bucket_success(&b, 0);
  assert_int_equal(b.tokens, 500);  /* capped */
  ob__sqs_bucket_success(&b, 14);
  assert_int_equal(b.tokens, 500);
  /* The edge: no retry only when fewer tokens are left than it costs, so
  ** exactly the cost is still granted, and leaves 0. */
  b.tokens = 14;
  assert_int_equal(ob__sqs_bucket_acquire(&b, OB__SQS_RETRY_TRANSIENT), 14);
  assert_int_equal(b.tokens, 0);
  b.tokens = 13;
  assert_int_equal(ob__sqs_bucket_acquire(&b, OB__SQS_RETRY_TRANSIENT), 0);
  assert_int_equal(b.tokens, 13);
  b.tokens = 5;
  assert_int_equal(ob__sqs_bucket_acquire(&b, OB__SQS_RETRY_THROTTLING), 5);
  assert_int_equal(b.tokens, 0);
}

static void test_decide(void** state) {
  fake_clock_t fc;
  ob__sqs_retry_t r;
  ob__sqs_bucket_t b;
  int64_t delay;
  (void)state;
  fake_clock_init(&fc, 0, 7);
  ob__sqs_bucket_init(&b);

  /* Not retryable: nothing happens. */
  ob__sqs_retry_init(&r, 0, 0);
  assert_int_equal(r.max_attempts, 3);
  assert_int_equal(ob__sqs_retry_decide(&r, &b, OB__SQS_RETRY_NONE, -1,
                                        &fc.clock, &delay), OB__SQS_GIVE_UP);
  assert_int_equal(delay, 0);
  assert_int_equal(b.tokens, 500);

  /* Two transient retries, then the attempt budget (3) is spent. */
  assert_int_equal(ob__sqs_retry_decide(&r, &b, OB__SQS_RETRY_TRANSIENT, -1,
                                        &fc.clock, &delay),
                   OB__SQS_RETRY_AFTER);
  assert_true(delay >= 0 && delay < 50);
  assert_int_equal(r.attempt, 2);
  assert_int_equal(ob__sqs_retry_decide(&r, &b, OB__SQS_RETRY_TRANSIENT, -1,
                                        &fc.clock, &delay),
                   OB__SQS_RETRY_AFTER);
  assert_true(delay >= 0 && delay < 100);
  assert_int_equal(r.attempt, 3);
  assert_int_equal(b.tokens, 472);
  assert_int_equal(ob__sqs_retry_decide(&r, &b, OB__SQS_RETRY_TRANSIENT, -1,
                                        &fc.clock, &delay), OB__SQS_GIVE_UP);
  assert_int_equal(b.tokens, 472);
  /* Success on a retry refunds that retry's cost. */
  ob__sqs_retry_succeeded(&r, &b);
  assert_int_equal(b.tokens, 486);
  /* Success on the first attempt adds one. */
  ob__sqs_retry_init(&r, 3, 0);
  ob__sqs_retry_succeeded(&r, &b);
  assert_int_equal(b.tokens, 487);

  /* Throttling with a server hint of 3 s: the delay honours it. */
  ob__sqs_retry_init(&r, 3, 0);
  assert_int_equal(ob__sqs_retry_decide(&r, &b, OB__SQS_RETRY_THROTTLING, 3000,
                                        &fc.clock, &delay),
                   OB__SQS_RETRY_AFTER);
  assert_int_equal(delay, 3000);
  assert_int_equal(b.tokens, 482);

  /* Clock skew: one retry per call, even with attempts left. */
  ob__sqs_retry_init(&r, 5, 0);
  assert_int_equal(ob__sqs_retry_decide(&r, &b, OB__SQS_RETRY_CLOCK_SKEW, -1,
                                        &fc.clock, &delay),
                   OB__SQS_RETRY_AFTER);
  assert_int_equal(ob__sqs_retry_decide(&r, &b, OB__SQS_RETRY_CLOCK_SKEW, -1,
                                        &fc.clock, &delay), OB__SQS_GIVE_UP);
  assert_int_equal(ob__sqs_retry_decide(&r, &b, OB__SQS_RETRY_TRANSIENT, -1,
                                        &fc.clock, &delay),
                   OB__SQS_RETRY_AFTER);

  /* Empty quota: fail fast, but a long poll still waits its backoff. */
  b.tokens = 13;
  ob__sqs_retry_init(&r, 3, 0);
  assert_int_equal(ob__sqs_retry_decide(&r, &b, OB__SQS_RETRY_TRANSIENT, -1,
                                        &fc.clock, &delay), OB__SQS_GIVE_UP);
  assert_int_equal(delay, 0);
  ob__sqs_retry_init(&r, 3, 1);
  assert_int_equal(ob__sqs_retry_decide(&r, &b, OB__SQS_RETRY_TRANSIENT, 200,
                                        &fc.clock, &delay),
                   OB__SQS_GIVE_UP_AFTER);
  assert_int_equal(delay, 200);
  assert_int_equal(b.tokens, 13);
  assert_int_equal(r.attempt, 1);
  /* ... while throttling (5 tokens) still gets through. */
  assert_int_equal(ob__sqs_retry_decide(&r, &b, OB__SQS_RETRY_THROTTLING, -1,
                                        &fc.clock, &delay),
                   OB__SQS_RETRY_AFTER);
  assert_int_equal(b.tokens, 8);
}

/* An outage, as the relay would live it: every call fails with 503 until
** the quota is spent, then calls fail fast (no retry storm); afterwards
** successes refill the bucket one token at a time. */
static void test_outage_drains_then_refills(void** state) {
  fake_clock_t fc;
  ob__sqs_bucket_t b;
  ob__sqs_error_t e = err_of(503, "{\"__type\":\"ServiceUnavailable\"}", NULL);
  int sends = 0, calls_with_retries = 0;
  (void)state;
  fake_clock_init(&fc, 0, 1);
  ob__sqs_bucket_init(&b);
  for (int call = 0; call < 100; call++) {
    ob__sqs_retry_t r;
    int retried = 0;
    ob__sqs_retry_init(&r, 3, 0);
    for (;;) {
      int64_t delay;
      ob__sqs_verdict_t v;
      sends++;
      v = ob__sqs_retry_decide(&r, &b, ob__sqs_classify(OB__SQS_NET_NONE, &e, 0),
                               -1, &fc.clock, &delay);
      if (v != OB__SQS_RETRY_AFTER) break;
      retried = 1;
    }
    calls_with_retries += retried;
  }
  /* 500 tokens = 35 retries of 14, 10 left over: 17 calls with 2 retries,
  ** 1 with 1; 100 calls in all send 100 + 35 requests. */
  assert_int_equal(sends, 135);
  assert_int_equal(calls_with_retries, 18);
  assert_int_equal(b.tokens, 10);
  for (int i = 0; i < 490; i++) {
    ob__sqs_retry_t r;
    ob__sqs_retry_init(&r, 3, 0);
    ob__sqs_retry_succeeded(&r, &b);
  }
  assert_int_equal(b.tokens, 500);
}

static void test_http_dates(void** state) {
  int64_t ms;
  static const char* const bad[] = {
      "Sun, 06 Nov 1994 08:49:37 UTC", "Sun, 31 Feb 2024 00:00:00 GMT",
      "Wed, 29 Feb 2023 00:00:00 GMT", "Sun, 06 Nov 1994 24:00:00 GMT",
      "Sun, 06 Nov 1994 08:60:00 GMT", "Xyz, 06 Nov 1994 08:49:37 GMT",
      "Sun, 06 Nov 1969 08:49:37 GMT", "Sun, 06 Foo 1994 08:49:37 GMT",
      "Sun, 6 Nov 1994 08:49:37 GMT", "Funday, 06-Nov-94 08:49:37 GMT",
      "1994-11-06T08:49:37Z", "", "Sun, 06 Nov 1994 08:49:37 GMTX"};
  (void)state;
  assert_int_equal(ob__http_date_parse("Sun, 06 Nov 1994 08:49:37 GMT", &ms),
                   0);
  assert_int_equal(ms, INT64_C(784111777000));
  assert_int_equal(ob__http_date_parse("Sunday, 06-Nov-94 08:49:37 GMT", &ms),
                   0);
  assert_int_equal(ms, INT64_C(784111777000));
  assert_int_equal(ob__http_date_parse("Sun Nov  6 08:49:37 1994", &ms), 0);
  assert_int_equal(ms, INT64_C(784111777000));
  assert_int_equal(ob__http_date_parse("Thu, 29 Feb 2024 23:59:59 GMT", &ms),
                   0);
  assert_int_equal(ms, INT64_C(1709251199000));
  assert_int_equal(ob__http_date_parse("Mon, 30 Nov 2026 05:28:31 GMT ", &ms),
                   0);
  assert_int_equal(ms, INT64_C(1796016511000));
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    if (ob__http_date_parse(bad[i], &ms) != OB_EINVAL)
      print_error("accepted: '%s'\n", bad[i]);
    assert_int_equal(ob__http_date_parse(bad[i], &ms), OB_EINVAL);
  }
  assert_int_equal(ob__http_date_parse(NULL, &ms), OB_EINVAL);
}

static void test_clock_skew(void** state) {
  /* Server time: Mon, 30 Nov 2026 05:28:31 GMT. The local clock is 20 min
  ** 0.250 s behind. */
  const char* date = "Mon, 30 Nov 2026 05:28:31 GMT";
  const int64_t server = INT64_C(1796016511000);
  const int64_t local = server - 20 * 60000 - 250;
  int64_t off = 0;
  char amz[17];
  (void)state;
  assert_int_equal(ob__sqs_clock_update(&off, date, local - 80, local, 0), 1);
  assert_int_equal(off, 20 * 60000 + 250);
  /* Signed again with the offset: X-Amz-Date is the server's time. */
  assert_int_equal(ob__sigv4_amz_date(ob__sqs_signing_time_s(local, off), amz),
                   0);
  assert_string_equal(amz, "20261130T052831Z");
  /* The next response with the same skew: updated, but not a correction
  ** (a skew error now has another cause and is not retried). */
  assert_int_equal(ob__sqs_clock_update(&off, date, local + 100, local + 700,
                                        0), 0);
  assert_int_equal(off, 20 * 60000 + 250 - 700);
  /* Cached response (Age), slow round trip, no Date, bad Date: unchanged. */
  off = 0;
  assert_int_equal(ob__sqs_clock_update(&off, date, local - 80, local, 1), 0);
  assert_int_equal(ob__sqs_clock_update(&off, date, local - 16 * 60000, local,
                                        0), 0);
  assert_int_equal(ob__sqs_clock_update(&off, NULL, local, local, 0), 0);
  assert_int_equal(ob__sqs_clock_update(&off, "yesterday", local, local, 0),
                   OB_EINVAL);
  assert_int_equal(off, 0);
  /* A local clock ahead: negative offset, also a correction. */
  assert_int_equal(ob__sqs_clock_update(&off, date, server + 600000,
                                        server + 600000, 0), 1);
  assert_int_equal(off, -600000);
  /* Small drift (3 s) is tracked but is no correction. */
  off = 0;
  assert_int_equal(ob__sqs_clock_update(&off, date, server - 3000,
                                        server - 3000, 0), 0);
  assert_int_equal(off, 3000);

  assert_int_equal(ob__sqs_signing_time_s(1000500, 0), 1000);
  assert_int_equal(ob__sqs_signing_time_s(1000500, -600), 999);
  assert_int_equal(ob__sqs_signing_time_s(0, -1), -1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_classify),
      cmocka_unit_test(test_backoff_bounds),
      cmocka_unit_test(test_backoff_jitter),
      cmocka_unit_test(test_hints),
      cmocka_unit_test(test_bucket),
      cmocka_unit_test(test_decide),
      cmocka_unit_test(test_outage_drains_then_refills),
      cmocka_unit_test(test_http_dates),
      cmocka_unit_test(test_clock_skew),
  };
  return cmocka_run_group_tests_name("sqs_retry", tests, NULL, NULL);
}
