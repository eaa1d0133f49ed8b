/* SPDX-License-Identifier: Apache-2.0 */
/* The relay's pure decisions with a fake clock. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/relay/relay_policy.h"
#include "core/util/link.h"
#include "tests/support/testsupport.h"

static void test_fifo_detection(void** state) {
  (void)state;
  assert_true(ob__relay_queue_is_fifo("https://sqs.eu-west-1.amazonaws.com/1/pay.fifo"));
  assert_true(ob__relay_queue_is_fifo("http://127.0.0.1:4566/000000000000/q.fifo/"));
  assert_false(ob__relay_queue_is_fifo("https://sqs.eu-west-1.amazonaws.com/1/payfifo"));
  assert_false(ob__relay_queue_is_fifo("fifo"));
  assert_false(ob__relay_queue_is_fifo(NULL));
}

static void test_batch_fit(void** state) {
  size_t sizes[12] = {100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100};
  size_t big[3] = {600, 500, 10};
  size_t huge[2] = {2000, 1};
  (void)state;
  assert_int_equal(ob__relay_batch_fit(sizes, 12, 1 << 20), 10);
  assert_int_equal(ob__relay_batch_fit(sizes, 3, 1 << 20), 3);
  assert_int_equal(ob__relay_batch_fit(sizes, 0, 1 << 20), 0);
  assert_int_equal(ob__relay_batch_fit(big, 3, 1000), 1);   /* 600+500 > 1000 */
  assert_int_equal(ob__relay_batch_fit(big, 3, 1100), 2);   /* exactly full */
  assert_int_equal(ob__relay_batch_fit(huge, 2, 1000), 0);  /* can never fit */
}

static void test_row_backoff(void** state) {
  fake_clock_t fc;
  (void)state;
  fake_clock_init(&fc, 0, 3);
  for (int a = 1; a <= 20; a++) {
    int64_t base = 1000LL << (a - 1 < 20 ? a - 1 : 20);
    if (base > 300000) base = 300000;
    for (int k = 0; k < 200; k++) {
      int64_t d = ob__relay_row_backoff(1000, 300000, a, &fc.clock);
      assert_true(d >= base * 9 / 10 && d <= base * 11 / 10);
    }
  }
  /* Far past the cap: still the cap, no overflow. */
  int64_t d = ob__relay_row_backoff(1000, 300000, 1000000, &fc.clock);
  assert_true(d >= 270000 && d <= 330000);
}

static void test_link_offline_and_back(void** state) {
  fake_clock_t fc;
  ob__link_t l;
  (void)state;
  fake_clock_init(&fc, 1000, 9);
  ob__link_init(&l, 1000, 60000);
  assert_int_equal(l.online, 1);
  int64_t prev = 0;
  for (int i = 1; i <= 10; i++) {
    int64_t d = ob__link_failed(&l, fc.now, &fc.clock);
    assert_int_equal(l.online, 0);
    assert_int_equal(l.next_probe_at, fc.now + d);
    int64_t base = 1000LL << (i - 1);
    if (base > 60000) base = 60000;
    assert_true(d >= base * 9 / 10 && d <= base * 11 / 10);
    if (i < 6) assert_true(d > prev);  /* grows until the cap */
    prev = d;
  }
  ob__link_nudge(&l, 5000);
  assert_int_equal(l.next_probe_at, 5000);
  assert_int_equal(l.failures, 0);
  assert_int_equal(ob__link_ok(&l), 1);
  assert_int_equal(l.online, 1);
  assert_int_equal(ob__link_ok(&l), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fifo_detection),
      cmocka_unit_test(test_batch_fit),
      cmocka_unit_test(test_row_backoff),
      cmocka_unit_test(test_link_offline_and_back),
  };
  return cmocka_run_group_tests_name("relay_policy", tests, NULL, NULL);
}
