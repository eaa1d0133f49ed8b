/* SPDX-License-Identifier: Apache-2.0 */
/* Counts over the last period (core/util/recent.c) on a clock made by
** hand: what falls out of the window, slot reuse after a whole ring, a
** clock before zero, a clock set back, a period shorter than the slots. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/util/recent.h"

#define F OB__RECENT_FAILED
#define R OB__RECENT_RETRIED

static void test_window_slides(void** state) {
  ob__recent_t r;
  (void)state;
  ob__recent_init(&r, 60000);  /* 60 slots of 1 s */
  assert_int_equal(ob__recent_sum(&r, 0, F), 0);
  ob__recent_add(&r, 1000, F, 3);
  ob__recent_add(&r, 1500, F, 1);
  ob__recent_add(&r, 30000, R, 2);
  assert_int_equal(ob__recent_sum(&r, 30000, F), 4);
  assert_int_equal(ob__recent_sum(&r, 30000, R), 2);
  /* At 61.0 s the window is (1.0 s, 61.0 s]: slot 1 (1.000-1.999 s)
  ** overlaps it and is counted whole, as documented. */
  assert_int_equal(ob__recent_sum(&r, 61000, F), 4);
  /* From 62.0 s on, slot 1 lies wholly before the window. */
  assert_int_equal(ob__recent_sum(&r, 62000, F), 0);
  assert_int_equal(ob__recent_sum(&r, 62000, R), 2);
  assert_int_equal(ob__recent_sum(&r, 91000, R), 0);
}

static void test_slot_reused_after_a_ring(void** state) {
  ob__recent_t r;
  (void)state;
  ob__recent_init(&r, 60000);
  ob__recent_add(&r, 5000, F, 7);
  /* 60 s later the same ring index: the old count must not add up. */
  ob__recent_add(&r, 65000, F, 1);
  assert_int_equal(ob__recent_sum(&r, 65000, F), 1);
  /* Hours later: everything is out. */
  assert_int_equal(ob__recent_sum(&r, 65000 + 3600000, F), 0);
}

static void test_bad_input_and_negative_times(void** state) {
  ob__recent_t r;
  (void)state;
  ob__recent_init(&r, 0);  /* taken as 1 ms */
  ob__recent_add(&r, -5, F, 2);
  assert_int_equal(ob__recent_sum(&r, -5, F), 2);
  assert_int_equal(ob__recent_sum(&r, -4, F), 0);
  ob__recent_init(&r, 60000);
  ob__recent_add(&r, -1500, R, 1);  /* a monotonic clock may start below 0 */
  assert_int_equal(ob__recent_sum(&r, -1, R), 1);
  ob__recent_add(&r, 0, F, 0);
  ob__recent_add(&r, 0, F, -3);
  ob__recent_add(&r, 0, 9, 4);
  assert_int_equal(ob__recent_sum(&r, 0, F), 0);
  assert_int_equal(ob__recent_sum(&r, 0, 9), 0);
}

static void test_clock_set_back(void** state) {
  ob__recent_t r;
  (void)state;
  ob__recent_init(&r, 60000);
  ob__recent_add(&r, 100000, F, 5);
  /* A wall clock set back 50 s: what lies "in the future" is left out
  ** rather than counted twice; going forward again finds both. */
  assert_int_equal(ob__recent_sum(&r, 50000, F), 0);
  ob__recent_add(&r, 50000, F, 1);
  assert_int_equal(ob__recent_sum(&r, 50000, F), 1);
  assert_int_equal(ob__recent_sum(&r, 100000, F), 6);
}

static void test_short_period(void** state) {
  ob__recent_t r;
  (void)state;
  ob__recent_init(&r, 30);  /* 1 ms slots, 30 of them used */
  for (int t = 0; t < 100; t++) ob__recent_add(&r, t, R, 1);
  assert_int_equal(ob__recent_sum(&r, 99, R), 30);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_window_slides),
      cmocka_unit_test(test_slot_reused_after_a_ring),
      cmocka_unit_test(test_bad_input_and_negative_times),
      cmocka_unit_test(test_clock_set_back),
      cmocka_unit_test(test_short_period),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
