/* SPDX-License-Identifier: Apache-2.0 */
/* When an until-idle run may call the SQS consumer done
** (core/consumer/consumer_idle.c), driven the way the consumer drives it:
** an empty receive begins at the fake clock's now, takes the long poll,
** then the counts decide. No server. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core/consumer/consumer_idle.h"
#include "tests/support/testsupport.h"

#define POLL_MS 2000   /* the CLI's until-idle long poll */
#define MARGIN OB__CONSUMER_IDLE_MARGIN_MS

static ob__consumer_counts_t counts(int64_t visible, int64_t not_visible,
                                    int64_t delayed) {
  ob__consumer_counts_t c;
  c.known = 1;
  c.visible = visible;
  c.not_visible = not_visible;
  c.delayed = delayed;
  return c;
}

/* One empty receive from now (the clock moves over the poll), then the
** verdict on counts c. */
static ob__consumer_idle_verdict_t empty_receive(fake_clock_t* fc,
                                                 ob__consumer_idle_t* w,
                                                 const ob__consumer_counts_t* c,
                                                 int vt_s) {
  int64_t started = fc->clock.now_ms(fc->clock.ctx);
  fake_clock_advance(fc, POLL_MS);
  return ob__consumer_idle_decide(w, c, started, vt_s);
}

static void test_empty_queue_is_done(void** state) {
  fake_clock_t fc;
  ob__consumer_idle_t w;
  ob__consumer_counts_t none = counts(0, 0, 0);
  (void)state;
  fake_clock_init(&fc, 5000, 1);
  ob__consumer_idle_init(&w);
  assert_int_equal(empty_receive(&fc, &w, &none, 30), OB__CONSUMER_IDLE_DONE);
  assert_int_equal(w.since_ms, -1);
  assert_int_equal(ob__consumer_idle_deadline_ms(&w, 30), -1);
  assert_int_equal(ob__consumer_counts_left(&none), 0);
}

/* Messages a killed worker held (not visible): keep receiving until an
** empty receive that began a visibility timeout + margin after the first
** one found them; then stalled. Not a moment earlier. */
static void test_in_flight_waits_out_the_bound(void** state) {
  const int vt = 3;
  fake_clock_t fc;
  ob__consumer_idle_t w;
  ob__consumer_counts_t held = counts(0, 4, 0);
  int64_t first;
  int receives = 0;
  ob__consumer_idle_verdict_t v;
  (void)state;
  fake_clock_init(&fc, 100000, 1);
  ob__consumer_idle_init(&w);
  first = fc.now;
  do {
    v = empty_receive(&fc, &w, &held, vt);
    receives++;
    if (v == OB__CONSUMER_IDLE_WAIT)
      /* Still inside the bound: the receive began before its end. */
      assert_true(fc.now - POLL_MS < first + vt * 1000 + MARGIN);
  } while (v == OB__CONSUMER_IDLE_WAIT && receives < 100);
  assert_int_equal(v, OB__CONSUMER_IDLE_STALLED);
  assert_int_equal(w.since_ms, first);
  assert_int_equal(ob__consumer_idle_deadline_ms(&w, vt),
                   first + vt * 1000 + MARGIN);
  /* The receive that decided began at or after the bound. */
  assert_true(fc.now - POLL_MS >= first + vt * 1000 + MARGIN);
  /* 0, 2, 4 s: waiting; the one at 4 s began at the bound (4 s): stalled. */
  assert_int_equal(receives, 3);
}

/* The messages come back within the bound: a receive brings them (progress),
** then the queue is empty: done. */
static void test_in_flight_come_back(void** state) {
  fake_clock_t fc;
  ob__consumer_idle_t w;
  ob__consumer_counts_t held = counts(0, 2, 0), none = counts(0, 0, 0);
  (void)state;
  fake_clock_init(&fc, 0, 1);
  ob__consumer_idle_init(&w);
  assert_int_equal(empty_receive(&fc, &w, &held, 3), OB__CONSUMER_IDLE_WAIT);
  assert_true(w.since_ms >= 0);
  /* A receive brings them. */
  fake_clock_advance(&fc, 1200);
  ob__consumer_idle_progress(&w);
  assert_int_equal(w.since_ms, -1);
  assert_int_equal(empty_receive(&fc, &w, &none, 3), OB__CONSUMER_IDLE_DONE);
}

/* Progress restarts the bound: messages that keep coming (each taken by a
** receive) never make the run stalled, however long it runs. */
static void test_progress_restarts_the_bound(void** state) {
  const int vt = 2;
  fake_clock_t fc;
  ob__consumer_idle_t w;
  ob__consumer_counts_t held = counts(0, 1, 0);
  (void)state;
  fake_clock_init(&fc, 0, 1);
  ob__consumer_idle_init(&w);
  for (int i = 0; i < 50; i++) {
    int64_t started = fc.now;
    assert_int_equal(empty_receive(&fc, &w, &held, vt),
                     OB__CONSUMER_IDLE_WAIT);
    assert_int_equal(w.since_ms, started);
    fake_clock_advance(&fc, 500);
    ob__consumer_idle_progress(&w);
  }
  /* Far longer than one bound in all. */
  assert_true(fc.now > 10 * (vt * 1000 + MARGIN));
}

/* Delayed and visible messages count as left too: receive on. */
static void test_delayed_and_visible_are_left(void** state) {
  fake_clock_t fc;
  ob__consumer_idle_t w;
  ob__consumer_counts_t delayed = counts(0, 0, 3), visible = counts(5, 0, 0);
  (void)state;
  fake_clock_init(&fc, 0, 1);
  ob__consumer_idle_init(&w);
  assert_int_equal(ob__consumer_counts_left(&delayed), 3);
  assert_int_equal(empty_receive(&fc, &w, &delayed, 30),
                   OB__CONSUMER_IDLE_WAIT);
  assert_int_equal(empty_receive(&fc, &w, &visible, 30),
                   OB__CONSUMER_IDLE_WAIT);
  /* The queue empties (no receive of ours brought them: someone else took
  ** them): done, and the bound is gone. */
  {
    ob__consumer_counts_t none = counts(0, 0, 0);
    assert_int_equal(empty_receive(&fc, &w, &none, 30),
                     OB__CONSUMER_IDLE_DONE);
    assert_int_equal(w.since_ms, -1);
  }
}

/* Our own retry, delayed past the visibility timeout: wait for it even when
** the (approximate) counts say nothing is left; stalled only after its
** delay, plus the margin, if it is still reported then. */
static void test_own_retry_is_waited_for(void** state) {
  const int vt = 2;
  fake_clock_t fc;
  ob__consumer_idle_t w;
  ob__consumer_counts_t none = counts(0, 0, 0), held = counts(0, 1, 0);
  int64_t until;
  (void)state;
  fake_clock_init(&fc, 0, 1);
  ob__consumer_idle_init(&w);
  until = fc.now + 10000;  /* retry in 10 s, vt 2 s */
  ob__consumer_idle_own_hidden(&w, until);
  ob__consumer_idle_own_hidden(&w, until - 5000);  /* the latest is kept */
  assert_int_equal(w.own_until_ms, until);
  /* Counts lag and say 0: still waiting. */
  assert_int_equal(empty_receive(&fc, &w, &none, vt), OB__CONSUMER_IDLE_WAIT);
  /* Counts say 1: waiting, past vt, until the retry's end. */
  while (fc.now < until + MARGIN)
    assert_int_equal(empty_receive(&fc, &w, &held, vt),
                     OB__CONSUMER_IDLE_WAIT);
  assert_true(ob__consumer_idle_deadline_ms(&w, vt) >= until + MARGIN);
  /* A receive beginning after it: it should have come back by now. */
  assert_int_equal(empty_receive(&fc, &w, &held, vt),
                   OB__CONSUMER_IDLE_STALLED);
  /* Once its delay is over, nothing reported is done. */
  assert_int_equal(empty_receive(&fc, &w, &none, vt), OB__CONSUMER_IDLE_DONE);
}

/* Counts that can't be read: nothing can be ruled out; the run waits out
** the bound (messages a dead worker held still come back in it), then is
** stalled, never done. */
static void test_unknown_counts_wait_then_stall(void** state) {
  const int vt = 3;
  fake_clock_t fc;
  ob__consumer_idle_t w;
  ob__consumer_counts_t unknown;
  ob__consumer_idle_verdict_t v;
  int64_t first;
  (void)state;
  unknown.known = 0;
  unknown.visible = unknown.not_visible = unknown.delayed = -1;
  assert_int_equal(ob__consumer_counts_left(&unknown), 0);
  fake_clock_init(&fc, 0, 1);
  ob__consumer_idle_init(&w);
  first = fc.now;
  while ((v = empty_receive(&fc, &w, &unknown, vt)) == OB__CONSUMER_IDLE_WAIT)
    assert_true(fc.now < first + 60000);
  assert_int_equal(v, OB__CONSUMER_IDLE_STALLED);
  assert_true(fc.now - POLL_MS >= first + vt * 1000 + MARGIN);
  /* NULL counts are unknown too. */
  ob__consumer_idle_init(&w);
  assert_int_equal(ob__consumer_idle_decide(&w, NULL, 0, vt),
                   OB__CONSUMER_IDLE_WAIT);
}

/* A visibility timeout of 0 (nothing hidden by anyone but for a moment):
** the bound is the margin alone. */
static void test_zero_visibility_bound(void** state) {
  fake_clock_t fc;
  ob__consumer_idle_t w;
  ob__consumer_counts_t held = counts(0, 1, 0);
  (void)state;
  fake_clock_init(&fc, 0, 1);
  ob__consumer_idle_init(&w);
  assert_int_equal(empty_receive(&fc, &w, &held, 0), OB__CONSUMER_IDLE_WAIT);
  assert_int_equal(ob__consumer_idle_deadline_ms(&w, 0), MARGIN);
  assert_int_equal(empty_receive(&fc, &w, &held, 0),
                   OB__CONSUMER_IDLE_STALLED);
  assert_int_equal(ob__consumer_idle_deadline_ms(&w, -5), MARGIN);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_empty_queue_is_done),
      cmocka_unit_test(test_in_flight_waits_out_the_bound),
      cmocka_unit_test(test_in_flight_come_back),
      cmocka_unit_test(test_progress_restarts_the_bound),
      cmocka_unit_test(test_delayed_and_visible_are_left),
      cmocka_unit_test(test_own_retry_is_waited_for),
      cmocka_unit_test(test_unknown_counts_wait_then_stall),
      cmocka_unit_test(test_zero_visibility_bound),
  };
  return cmocka_run_group_tests_name("consumer_idle", tests, NULL, NULL);
}
