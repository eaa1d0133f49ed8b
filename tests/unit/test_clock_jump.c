/* SPDX-License-Identifier: Apache-2.0 */
/* Telling a wall-clock jump from time passing (core/util/clock_jump.c),
** with a fake clock whose wall and monotonic readings are set apart. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/util/clock_jump.h"
#include "tests/support/testsupport.h"

#define DAY (24LL * 3600 * 1000)

typedef struct two_clocks_s {
  fake_clock_t fc;  /* the wall */
  int64_t mono;
} two_clocks_t;

static int64_t mono_now(void* ctx) {
  return ((two_clocks_t*)ctx)->mono;
}

static void init(two_clocks_t* c, int with_mono) {
  fake_clock_init(&c->fc, 1796083200000LL, 1);
  c->fc.clock.ctx = c;  /* fc is the first member: fake_now still reads it */
  c->fc.clock.monotonic_ms = with_mono ? mono_now : NULL;
  c->mono = 7000;
}

static int64_t jump_after(two_clocks_t* c, int64_t wall, int64_t mono) {
  ob__clock_mark_t a, b;
  ob__clock_mark(&c->fc.clock, &a);
  c->fc.now += wall;
  c->mono += mono;
  ob__clock_mark(&c->fc.clock, &b);
  return ob__clock_jump(&a, &b);
}

static void test_time_passing_is_no_jump(void** state) {
  two_clocks_t c;
  (void)state;
  init(&c, 1);
  assert_int_equal(jump_after(&c, 0, 0), 0);
  assert_int_equal(jump_after(&c, 5 * 60000, 5 * 60000), 0);
  /* NTP slewing: 0.05% over a day is 43 s, inside the 0.1% allowance. */
  assert_int_equal(jump_after(&c, DAY + 43000, DAY), 0);
  assert_int_equal(jump_after(&c, DAY - 43000, DAY), 0);
  /* An NTP step under a second. */
  assert_int_equal(jump_after(&c, 60000 - 900, 60000), 0);
}

static void test_jumps_both_ways(void** state) {
  two_clocks_t c;
  (void)state;
  init(&c, 1);
  assert_int_equal(jump_after(&c, -DAY + 50, 50), -DAY);
  assert_int_equal(jump_after(&c, 3600000 + 1000, 1000), 3600000);
  assert_int_equal(jump_after(&c, 40 * DAY, 0), 40 * DAY);
  /* Just past the tolerance: 1 s plus 0.1% of the 10 s that passed. */
  assert_int_equal(jump_after(&c, 10000 + 1010, 10000), 0);
  assert_int_equal(jump_after(&c, 10000 + 1011, 10000), 1011);
  assert_int_equal(jump_after(&c, 10000 - 1011, 10000), -1011);
  /* Set back while the engine was idle for an hour: still the jump. */
  assert_int_equal(jump_after(&c, 3600000 - DAY, 3600000), -DAY);
}

/* Without a monotonic clock only a clock that went back shows. */
static void test_without_monotonic(void** state) {
  two_clocks_t c;
  (void)state;
  init(&c, 0);
  assert_int_equal(jump_after(&c, -DAY, 0), -DAY);
  assert_int_equal(jump_after(&c, -900, 0), 0);
  assert_int_equal(jump_after(&c, 40 * DAY, 0), 0);
  /* A monotonic clock that went back is treated as none. */
  init(&c, 1);
  assert_int_equal(jump_after(&c, 3600000, -5), 0);
  assert_int_equal(jump_after(&c, -5000, -5), -5000);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_time_passing_is_no_jump),
      cmocka_unit_test(test_jumps_both_ways),
      cmocka_unit_test(test_without_monotonic),
  };
  return cmocka_run_group_tests_name("clock_jump", tests, NULL, NULL);
}
