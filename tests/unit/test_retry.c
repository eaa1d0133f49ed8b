/* SPDX-License-Identifier: Apache-2.0 */
/* Retry policy: backoff, cap, jitter, budget, forced and requested delays. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <math.h>
#include <string.h>

#include "core/util/retry.h"
#include "tests/support/testsupport.h"

static ob_retry_policy_t policy(double jitter) {
  ob_retry_policy_t p;
  ob_retry_policy_init(&p);
  p.jitter = jitter;
  return p;
}

static int64_t decide_ok(const ob_retry_policy_t* p, int attempts, int forced,
                         int64_t requested, fake_clock_t* fc) {
  int64_t d = -42;
  assert_int_equal(ob__retry_decide(p, attempts, forced, requested, &fc->clock,
                                    &d), OB__RETRY_AGAIN);
  return d;
}

static void test_defaults_exact_backoff(void** state) {
  ob_retry_policy_t p = policy(0.0);
  fake_clock_t fc;
  uint64_t before;
  int64_t d = -42;
  (void)state;
  fake_clock_init(&fc, 0, 1);
  before = fc.state;
  assert_int_equal(decide_ok(&p, 0, 0, -1, &fc), 1000);
  assert_int_equal(decide_ok(&p, 1, 0, -1, &fc), 2000);
  assert_int_equal(decide_ok(&p, 2, 0, -1, &fc), 4000);
  assert_int_equal(ob__retry_decide(&p, 3, 0, -1, &fc.clock, &d),
                   OB__RETRY_GIVE_UP);
  assert_int_equal(d, 0);
  assert_true(fc.state == before); /* jitter 0 draws no randomness */

  assert_int_equal(ob__retry_base_delay(&p, 1), 1000);
  assert_int_equal(ob__retry_base_delay(&p, 4), 8000);
  assert_int_equal(ob__retry_base_delay(&p, 11), 1024000);
  assert_int_equal(ob__retry_base_delay(&p, 0), 1000);  /* n < 1 is 1 */
  assert_int_equal(ob__retry_base_delay(&p, -5), 1000);
}

static void test_jitter_bounds_and_spread(void** state) {
  ob_retry_policy_t p = policy(0.1);
  fake_clock_t fc;
  int64_t lo = INT64_MAX, hi = 0, d;
  double sum = 0;
  int i, n = 10000;
  (void)state;
  fake_clock_init(&fc, 0, 2024);
  for (i = 0; i < n; i++) {
    d = ob__retry_jitter(&p, 1000, &fc.clock);
    assert_in_range(d, 900, 1100);
    if (d < lo) lo = d;
    if (d > hi) hi = d;
    sum += (double)d;
  }
  assert_true(lo < 950);
  assert_true(hi > 1050);
  /* Uniform: the mean is d within a few standard errors (57.7/sqrt(n)). */
  assert_true(fabs(sum / n - 1000.0) < 3.0);

  /* Through decide, for the second retry (base 2000). */
  lo = INT64_MAX, hi = 0;
  for (i = 0; i < n; i++) {
    d = decide_ok(&p, 1, 0, -1, &fc);
    assert_in_range(d, 1800, 2200);
    if (d < lo) lo = d;
    if (d > hi) hi = d;
  }
  assert_true(lo < 1900);
  assert_true(hi > 2100);
}

static void test_jitter_full_range_and_edges(void** state) {
  ob_retry_policy_t p = policy(1.0);
  fake_clock_t fc;
  int64_t d, lo = INT64_MAX, hi = 0;
  int i;
  (void)state;
  fake_clock_init(&fc, 0, 3);
  for (i = 0; i < 10000; i++) {
    d = ob__retry_jitter(&p, 1000, &fc.clock);
    assert_in_range(d, 0, 2000);
    if (d < lo) lo = d;
    if (d > hi) hi = d;
  }
  assert_true(lo < 50);
  assert_true(hi > 1950);
  assert_int_equal(ob__retry_jitter(&p, 0, &fc.clock), 0);
  assert_int_equal(ob__retry_jitter(&p, -5, &fc.clock), 0); /* never < 0 */
  p.jitter = 0.0;
  assert_int_equal(ob__retry_jitter(&p, 1234, &fc.clock), 1234);
  assert_int_equal(ob__retry_jitter(&p, INT64_MAX, &fc.clock),
                   OB__RETRY_DELAY_MAX);
}

static void test_jitter_deterministic_per_seed(void** state) {
  ob_retry_policy_t p = policy(0.1);
  fake_clock_t a, b;
  int i;
  (void)state;
  fake_clock_init(&a, 0, 77);
  fake_clock_init(&b, 0, 77);
  for (i = 0; i < 1000; i++)
    assert_int_equal(ob__retry_jitter(&p, 5000, &a.clock),
                     ob__retry_jitter(&p, 5000, &b.clock));
}

static void test_max_delay_cap(void** state) {
  ob_retry_policy_t p = policy(0.0);
  fake_clock_t fc;
  int i;
  int64_t d;
  (void)state;
  fake_clock_init(&fc, 0, 4);
  p.max_retries = 10;
  p.max_delay_ms = 5000;
  assert_int_equal(decide_ok(&p, 0, 0, -1, &fc), 1000);
  assert_int_equal(decide_ok(&p, 1, 0, -1, &fc), 2000);
  assert_int_equal(decide_ok(&p, 2, 0, -1, &fc), 4000);
  assert_int_equal(decide_ok(&p, 3, 0, -1, &fc), 5000);
  assert_int_equal(decide_ok(&p, 9, 0, -1, &fc), 5000);
  assert_int_equal(ob__retry_base_delay(&p, 200), 5000);
  /* The cap applies before jitter (oncebox.h), so capped retries still
  ** spread out instead of all landing on max_delay. */
  p.jitter = 0.1;
  for (i = 0; i < 1000; i++) {
    d = decide_ok(&p, 7, 0, -1, &fc);
    assert_in_range(d, 4500, 5500);
  }
}

static void test_multiplier_three(void** state) {
  ob_retry_policy_t p = policy(0.0);
  fake_clock_t fc;
  (void)state;
  fake_clock_init(&fc, 0, 5);
  p.max_retries = 5;
  p.delay_ms = 2000;
  p.multiplier = 3.0;
  assert_int_equal(decide_ok(&p, 0, 0, -1, &fc), 2000);
  assert_int_equal(decide_ok(&p, 1, 0, -1, &fc), 6000);
  assert_int_equal(decide_ok(&p, 2, 0, -1, &fc), 18000);
  assert_int_equal(decide_ok(&p, 3, 0, -1, &fc), 54000);
  assert_int_equal(decide_ok(&p, 4, 0, -1, &fc), 162000);
  /* multiplier 1: constant delay */
  p.multiplier = 1.0;
  assert_int_equal(ob__retry_base_delay(&p, 1000), 2000);
}

static void test_no_overflow(void** state) {
  ob_retry_policy_t p = policy(0.0);
  fake_clock_t fc;
  int64_t d;
  (void)state;
  fake_clock_init(&fc, 0, 6);
  assert_int_equal(ob__retry_base_delay(&p, 200), OB__RETRY_DELAY_MAX);
  assert_int_equal(ob__retry_base_delay(&p, INT_MAX), OB__RETRY_DELAY_MAX);
  assert_int_equal(ob__retry_base_delay(&p, 62), OB__RETRY_DELAY_MAX);
  assert_int_equal(ob__retry_base_delay(&p, 50), 1000LL << 49);
  p.jitter = 0.1;
  d = ob__retry_jitter(&p, ob__retry_base_delay(&p, 200), &fc.clock);
  assert_in_range(d, OB__RETRY_DELAY_MAX / 10 * 9, OB__RETRY_DELAY_MAX);
  /* Extreme but valid policies saturate too. */
  p.delay_ms = INT64_MAX;
  assert_int_equal(ob__retry_base_delay(&p, 1), OB__RETRY_DELAY_MAX);
  assert_int_equal(ob__retry_base_delay(&p, 300), OB__RETRY_DELAY_MAX);
  p.delay_ms = 1;
  p.multiplier = 1e300;
  assert_int_equal(ob__retry_base_delay(&p, 3), OB__RETRY_DELAY_MAX);
  p.delay_ms = 0;
  assert_int_equal(ob__retry_base_delay(&p, 3), 0); /* not 0 * inf */
  /* A forced retry at attempts INT_MAX must not overflow attempts + 1. */
  p = policy(0.1);
  d = decide_ok(&p, INT_MAX, 1, -1, &fc);
  assert_in_range(d, 0, OB__RETRY_DELAY_MAX);
  assert_true(d > OB__RETRY_DELAY_MAX / 2);
}

static void test_give_up_exactly_after_max_retries(void** state) {
  ob_retry_policy_t p = policy(0.1);
  fake_clock_t fc;
  int64_t d;
  int a;
  (void)state;
  fake_clock_init(&fc, 0, 7);
  p.max_retries = 5;
  for (a = 0; a < 5; a++) assert_true(decide_ok(&p, a, 0, -1, &fc) > 0);
  assert_int_equal(ob__retry_decide(&p, 5, 0, -1, &fc.clock, &d),
                   OB__RETRY_GIVE_UP);
  assert_int_equal(ob__retry_decide(&p, 6, 0, -1, &fc.clock, &d),
                   OB__RETRY_GIVE_UP);
  /* The budget holds even when the handler names a delay. */
  assert_int_equal(ob__retry_decide(&p, 5, 0, 100, &fc.clock, &d),
                   OB__RETRY_GIVE_UP);
  p.max_retries = 0;
  assert_int_equal(ob__retry_decide(&p, 0, 0, -1, &fc.clock, NULL),
                   OB__RETRY_GIVE_UP);
}

static void test_forced_ignores_budget(void** state) {
  ob_retry_policy_t p = policy(0.0);
  fake_clock_t fc;
  (void)state;
  fake_clock_init(&fc, 0, 8);
  p.max_retries = 0;
  assert_int_equal(decide_ok(&p, 0, 1, -1, &fc), 1000);
  p.max_retries = 3;
  assert_int_equal(decide_ok(&p, 3, 1, -1, &fc), 8000);
  assert_int_equal(decide_ok(&p, 100, 1, -1, &fc), OB__RETRY_DELAY_MAX);
  assert_int_equal(decide_ok(&p, 100, 1, 250, &fc), 250);
  p.max_delay_ms = 60000;
  assert_int_equal(decide_ok(&p, 1000, 1, -1, &fc), 60000);
}

static void test_requested_delay_honoured(void** state) {
  ob_retry_policy_t p = policy(0.1);
  fake_clock_t fc;
  uint64_t before;
  (void)state;
  fake_clock_init(&fc, 0, 9);
  before = fc.state;
  assert_int_equal(decide_ok(&p, 0, 0, 60000, &fc), 60000); /* no jitter */
  assert_int_equal(decide_ok(&p, 2, 0, 0, &fc), 0);
  assert_int_equal(decide_ok(&p, 1, 0, 1, &fc), 1);
  assert_true(fc.state == before);
  assert_int_equal(decide_ok(&p, 0, 0, INT64_MAX, &fc), OB__RETRY_DELAY_MAX);
  assert_int_equal(decide_ok(&p, -3, 0, 5, &fc), 5); /* attempts < 0 is 0 */
}

static void test_policy_check(void** state) {
  ob_retry_policy_t p = policy(0.1), q;
  (void)state;
  assert_int_equal(ob__retry_policy_check(&p), 0);
  assert_int_equal(ob__retry_policy_check(NULL), -1);
#define BAD(field, value)                                   \
  do {                                                      \
    q = p;                                                  \
    q.field = value;                                        \
    assert_int_equal(ob__retry_policy_check(&q), -1);       \
  } while (0)
#define OK(field, value)                                    \
  do {                                                      \
    q = p;                                                  \
    q.field = value;                                        \
    assert_int_equal(ob__retry_policy_check(&q), 0);        \
  } while (0)
  BAD(max_retries, -1);
  BAD(delay_ms, -1);
  BAD(multiplier, 0.5);
  BAD(multiplier, 0.0);
  BAD(multiplier, -2.0);
  BAD(multiplier, NAN);
  BAD(multiplier, INFINITY);
  BAD(max_delay_ms, -1);
  BAD(jitter, -0.01);
  BAD(jitter, 1.01);
  BAD(jitter, NAN);
  OK(max_retries, 0);
  OK(delay_ms, 0);
  OK(multiplier, 1.0);
  OK(max_delay_ms, 1);
  OK(jitter, 0.0);
  OK(jitter, 1.0);
#undef BAD
#undef OK
}


/* The one storage-failure backoff of every loop driver: 100 ms doubling
** from the first failure (200 ms), capped at 30 s. */
static void test_storage_backoff(void** state) {
  (void)state;
  assert_int_equal(ob__storage_backoff_ms(0), 200);
  assert_int_equal(ob__storage_backoff_ms(1), 200);
  assert_int_equal(ob__storage_backoff_ms(2), 400);
  assert_int_equal(ob__storage_backoff_ms(8), 25600);
  assert_int_equal(ob__storage_backoff_ms(9), OB__STORAGE_BACKOFF_MAX_MS);
  assert_int_equal(ob__storage_backoff_ms(15), OB__STORAGE_BACKOFF_MAX_MS);
  assert_int_equal(ob__storage_backoff_ms(1000), OB__STORAGE_BACKOFF_MAX_MS);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_storage_backoff),
      cmocka_unit_test(test_defaults_exact_backoff),
    cmocka_unit_test(test_jitter_bounds_and_spread),
    cmocka_unit_test(test_jitter_full_range_and_edges),
    cmocka_unit_test(test_jitter_deterministic_per_seed),
    cmocka_unit_test(test_max_delay_cap),
    cmocka_unit_test(test_multiplier_three),
    cmocka_unit_test(test_no_overflow),
    cmocka_unit_test(test_give_up_exactly_after_max_retries),
    cmocka_unit_test(test_forced_ignores_budget),
    cmocka_unit_test(test_requested_delay_honoured),
    cmocka_unit_test(test_policy_check),
  };
  return cmocka_run_group_tests_name("retry", tests, NULL, NULL);
}
