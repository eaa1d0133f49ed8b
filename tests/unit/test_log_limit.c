/* SPDX-License-Identifier: Apache-2.0 */
/*
** The repeat limiter of log records (core/util/log_limit.c), on a fake
** clock: one record per (component, event, error) and window, then one
** summary with the count when the window ends, when the component says it
** works again, when slots run out, or at flush.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/util/log_limit.h"
#include "tests/support/testsupport.h"

#define WINDOW 60000

typedef struct seen_s {
  int n;
  ob__log_limit_slot_t last;
} seen_t;

static void on_summary(void* arg, const ob__log_limit_slot_t* s) {
  seen_t* seen = arg;
  seen->n++;
  seen->last = *s;
}

static ob_log_record_t rec(ob_log_level_t level, const char* component,
                           const char* event, int error) {
  ob_log_record_t r;
  memset(&r, 0, sizeof r);
  r.level = level;
  r.component = component;
  r.event = event;
  r.error = error;
  r.duration_ms = -1;
  return r;
}

static int pass(ob__log_limit_t* l, fake_clock_t* fc, ob_log_record_t r,
                seen_t* seen) {
  return ob__log_limit_pass(l, &r, ob_fake_clock_now(fc), on_summary, seen);
}

static void test_repeats_within_a_window_are_counted(void** state) {
  ob__log_limit_t l;
  fake_clock_t fc;
  seen_t seen = {0};
  ob_log_record_t off = rec(OB_LOG_WARN, "relay", "relay_unreachable",
                            OB_ENET);
  (void)state;
  fake_clock_init(&fc, 1796083200000LL, 1);
  ob__log_limit_init(&l, WINDOW);
  assert_int_equal(pass(&l, &fc, off, &seen), 1);
  for (int i = 0; i < 5; i++) {
    fake_clock_advance(&fc, 1000);
    assert_int_equal(pass(&l, &fc, off, &seen), 0);
  }
  assert_int_equal(seen.n, 0);
  /* The window ends: the next record of any key delivers the count first,
  ** and this one opens a new window and is delivered. */
  fake_clock_advance(&fc, WINDOW);
  assert_int_equal(pass(&l, &fc, off, &seen), 1);
  assert_int_equal(seen.n, 1);
  assert_int_equal(seen.last.suppressed, 5);
  assert_string_equal(seen.last.component, "relay");
  assert_string_equal(seen.last.event, "relay_unreachable");
  assert_int_equal(seen.last.error, OB_ENET);
  assert_int_equal(seen.last.level, OB_LOG_WARN);
  /* Nothing dropped in the new window: flushing says nothing. */
  ob__log_limit_flush(&l, on_summary, &seen);
  assert_int_equal(seen.n, 1);
}

static void test_window_end_is_exact(void** state) {
  ob__log_limit_t l;
  fake_clock_t fc;
  seen_t seen = {0};
  ob_log_record_t off = rec(OB_LOG_ERROR, "consumer",
                            "consumer_request_failed", OB_EAUTH);
  (void)state;
  fake_clock_init(&fc, 5000, 1);
  ob__log_limit_init(&l, WINDOW);
  assert_int_equal(pass(&l, &fc, off, &seen), 1);
  fake_clock_advance(&fc, WINDOW - 1);
  assert_int_equal(pass(&l, &fc, off, &seen), 0);
  fake_clock_advance(&fc, 1);  /* start + window: a new one */
  assert_int_equal(pass(&l, &fc, off, &seen), 1);
  assert_int_equal(seen.n, 1);
  assert_int_equal(seen.last.suppressed, 1);
}

static void test_keys_are_component_event_error(void** state) {
  ob__log_limit_t l;
  fake_clock_t fc;
  seen_t seen = {0};
  (void)state;
  fake_clock_init(&fc, 0, 1);
  ob__log_limit_init(&l, WINDOW);
  assert_int_equal(pass(&l, &fc, rec(OB_LOG_WARN, "relay", "relay_unreachable",
                                     OB_ENET), &seen), 1);
  /* Another error, event or component is another key, delivered, and it
  ** leaves the first window open (interleaved outages both count). */
  assert_int_equal(pass(&l, &fc, rec(OB_LOG_WARN, "relay", "relay_unreachable",
                                     OB_ETLS), &seen), 1);
  assert_int_equal(pass(&l, &fc, rec(OB_LOG_WARN, "relay",
                                     "relay_batch_failed", OB_ENET), &seen), 1);
  assert_int_equal(pass(&l, &fc, rec(OB_LOG_WARN, "consumer",
                                     "relay_unreachable", OB_ENET), &seen), 1);
  assert_int_equal(pass(&l, &fc, rec(OB_LOG_WARN, "relay", "relay_unreachable",
                                     OB_ENET), &seen), 0);
  assert_int_equal(pass(&l, &fc, rec(OB_LOG_WARN, "consumer",
                                     "relay_unreachable", OB_ENET), &seen), 0);
  assert_int_equal(seen.n, 0);
  ob__log_limit_flush(&l, on_summary, &seen);
  assert_int_equal(seen.n, 2);  /* the two keys that dropped one each */
}

static void test_not_limited(void** state) {
  ob__log_limit_t l;
  fake_clock_t fc;
  seen_t seen = {0};
  ob_log_record_t failed = rec(OB_LOG_WARN, "engine", "message_failed",
                               OB_EHANDLER);
  (void)state;
  fake_clock_init(&fc, 0, 1);
  ob__log_limit_init(&l, WINDOW);
  failed.message_id = "0190b6d8-3ae7-7ca2-a653-6ff2d5a6f231";
  /* A message's failure is news each time; debug records and records
  ** without an error are never limited. */
  for (int i = 0; i < 3; i++) {
    assert_int_equal(pass(&l, &fc, failed, &seen), 1);
    assert_int_equal(pass(&l, &fc, rec(OB_LOG_DEBUG, "relay", "x", OB_ENET),
                          &seen), 1);
    assert_int_equal(pass(&l, &fc, rec(OB_LOG_WARN, "relay", "log", 0),
                          &seen), 1);
  }
  assert_int_equal(ob__log_limit_applies(&failed), 0);
  failed.message_id = NULL;
  assert_int_equal(ob__log_limit_applies(&failed), 1);
  ob__log_limit_flush(&l, on_summary, &seen);
  assert_int_equal(seen.n, 0);
}

static void test_recovery_closes_the_components_windows(void** state) {
  ob__log_limit_t l;
  fake_clock_t fc;
  seen_t seen = {0};
  ob_log_record_t off = rec(OB_LOG_WARN, "relay", "relay_unreachable",
                            OB_ENET);
  ob_log_record_t other = rec(OB_LOG_WARN, "consumer", "consumer_offline",
                              OB_ENET);
  (void)state;
  fake_clock_init(&fc, 0, 1);
  ob__log_limit_init(&l, WINDOW);
  assert_int_equal(pass(&l, &fc, off, &seen), 1);
  assert_int_equal(pass(&l, &fc, other, &seen), 1);
  assert_int_equal(pass(&l, &fc, off, &seen), 0);
  assert_int_equal(pass(&l, &fc, off, &seen), 0);
  assert_int_equal(pass(&l, &fc, other, &seen), 0);
  /* A debug line or an info line with an error does not say "works". */
  assert_int_equal(pass(&l, &fc, rec(OB_LOG_DEBUG, "relay", "log", 0), &seen),
                   1);
  assert_int_equal(pass(&l, &fc, rec(OB_LOG_INFO, "relay", "y", OB_ETLS),
                        &seen), 1);
  assert_int_equal(seen.n, 0);
  /* "reachable again": the relay's count comes first, the consumer's
  ** window stays. */
  assert_int_equal(pass(&l, &fc, rec(OB_LOG_INFO, "relay", "log", 0), &seen),
                   1);
  assert_int_equal(seen.n, 1);
  assert_string_equal(seen.last.component, "relay");
  assert_int_equal(seen.last.suppressed, 2);
  /* The next outage logs at once. */
  assert_int_equal(pass(&l, &fc, off, &seen), 1);
  assert_int_equal(pass(&l, &fc, other, &seen), 0);
  ob__log_limit_flush(&l, on_summary, &seen);
  assert_int_equal(seen.n, 2);
  assert_string_equal(seen.last.component, "consumer");
  assert_int_equal(seen.last.suppressed, 2);
}

static void test_full_table_closes_the_oldest(void** state) {
  static const char* events[OB__LOG_LIMIT_SLOTS + 1] = {
      "e0", "e1", "e2", "e3", "e4", "e5", "e6", "e7", "e8"};
  ob__log_limit_t l;
  fake_clock_t fc;
  seen_t seen = {0};
  (void)state;
  fake_clock_init(&fc, 0, 1);
  ob__log_limit_init(&l, WINDOW);
  for (int i = 0; i < OB__LOG_LIMIT_SLOTS; i++) {
    assert_int_equal(pass(&l, &fc, rec(OB_LOG_WARN, "c", events[i], OB_EIO),
                          &seen), 1);
    assert_int_equal(pass(&l, &fc, rec(OB_LOG_WARN, "c", events[i], OB_EIO),
                          &seen), 0);
    fake_clock_advance(&fc, 10);
  }
  assert_int_equal(seen.n, 0);
  assert_int_equal(pass(&l, &fc, rec(OB_LOG_WARN, "c", events[8], OB_EIO),
                        &seen), 1);
  assert_int_equal(seen.n, 1);
  assert_string_equal(seen.last.event, "e0");
  /* e0 starts over: delivered again. */
  assert_int_equal(pass(&l, &fc, rec(OB_LOG_WARN, "c", events[0], OB_EIO),
                        &seen), 1);
  assert_int_equal(seen.n, 2);
  assert_string_equal(seen.last.event, "e1");
}

static void test_clock_back_ends_the_window(void** state) {
  ob__log_limit_t l;
  fake_clock_t fc;
  seen_t seen = {0};
  ob_log_record_t off = rec(OB_LOG_WARN, "relay", "relay_unreachable",
                            OB_ENET);
  (void)state;
  fake_clock_init(&fc, 100000, 1);
  ob__log_limit_init(&l, WINDOW);
  assert_int_equal(pass(&l, &fc, off, &seen), 1);
  assert_int_equal(pass(&l, &fc, off, &seen), 0);
  /* Time that goes back cannot hold a window open for ever. */
  ob_fake_clock_set(&fc, 1000);
  assert_int_equal(pass(&l, &fc, off, &seen), 1);
  assert_int_equal(seen.n, 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_repeats_within_a_window_are_counted),
      cmocka_unit_test(test_window_end_is_exact),
      cmocka_unit_test(test_keys_are_component_event_error),
      cmocka_unit_test(test_not_limited),
      cmocka_unit_test(test_recovery_closes_the_components_windows),
      cmocka_unit_test(test_full_table_closes_the_oldest),
      cmocka_unit_test(test_clock_back_ends_the_window),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
