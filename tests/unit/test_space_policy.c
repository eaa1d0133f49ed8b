/* SPDX-License-Identifier: Apache-2.0 */
/* The disk-full policy's thresholds (core/util/space_policy.c). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/util/space_policy.h"
#include "oncebox.h"

#define KIB 1024LL
#define MIB (1024LL * 1024)

static void test_auto_reserve(void** state) {
  (void)state;
  assert_int_equal(ob__space_reserve(0, OB_RESERVE_AUTO), 0);
  assert_int_equal(ob__space_reserve(0, 5 * MIB), 0);  /* no cap, no policy */
  assert_int_equal(ob__space_reserve(8 * MIB, OB_RESERVE_AUTO), 1 * MIB);
  /* At least 64 KiB, at most half the cap, at most 64 MiB. */
  assert_int_equal(ob__space_reserve(256 * KIB, OB_RESERVE_AUTO), 64 * KIB);
  assert_int_equal(ob__space_reserve(100 * KIB, OB_RESERVE_AUTO), 50 * KIB);
  assert_int_equal(ob__space_reserve(4096 * MIB, OB_RESERVE_AUTO), 64 * MIB);
  assert_int_equal(ob__space_reserve(8 * MIB, 0), 0);
  assert_int_equal(ob__space_reserve(8 * MIB, 3 * MIB), 3 * MIB);
}

static void test_levels(void** state) {
  const int64_t cap = 8 * MIB, r = 1 * MIB;
  (void)state;
  assert_int_equal(ob__space_level(0, 0, 0), OB__SPACE_OK);  /* no cap */
  assert_int_equal(ob__space_level(cap - r - 1, cap, r), OB__SPACE_OK);
  assert_int_equal(ob__space_level(cap - r, cap, r), OB__SPACE_CRITICAL);
  assert_int_equal(ob__space_level(cap - r / 2 - 1, cap, r),
                   OB__SPACE_CRITICAL);
  assert_int_equal(ob__space_level(cap - r / 2, cap, r), OB__SPACE_REFUSING);
  assert_int_equal(ob__space_level(cap - r / 4, cap, r), OB__SPACE_PAUSED);
  assert_int_equal(ob__space_level(cap, cap, r), OB__SPACE_PAUSED);
  /* No reserve: everything runs to the cap. */
  assert_int_equal(ob__space_level(cap - 1, cap, 0), OB__SPACE_OK);
  assert_int_equal(ob__space_level(cap, cap, 0), OB__SPACE_PAUSED);
}

static void test_admission(void** state) {
  (void)state;
  assert_true(ob__space_admits(OB__SPACE_OK, 0));
  assert_true(ob__space_admits(OB__SPACE_OK, 1));
  assert_false(ob__space_admits(OB__SPACE_CRITICAL, 0));
  assert_true(ob__space_admits(OB__SPACE_CRITICAL, 1));
  assert_false(ob__space_admits(OB__SPACE_REFUSING, 1));
  assert_false(ob__space_admits(OB__SPACE_PAUSED, 1));
}

static void test_reclaim_target(void** state) {
  (void)state;
  /* One and a half reserves below the cap: below the first threshold, so
  ** that new messages are accepted again after a reclaim. */
  assert_int_equal(ob__space_reclaim_target(8 * MIB, 1 * MIB),
                   8 * MIB - 1 * MIB - 512 * KIB);
  assert_true(ob__space_level(ob__space_reclaim_target(8 * MIB, 1 * MIB),
                              8 * MIB, 1 * MIB) == OB__SPACE_OK);
  assert_int_equal(ob__space_reclaim_target(8 * MIB, 0), 7 * MIB);
  assert_int_equal(ob__space_reclaim_target(0, 0), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_auto_reserve),
      cmocka_unit_test(test_levels),
      cmocka_unit_test(test_admission),
      cmocka_unit_test(test_reclaim_target),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
