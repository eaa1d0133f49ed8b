/* SPDX-License-Identifier: Apache-2.0 */
/* ob_run(OB_RUN_UNTIL_IDLE) ends when nothing is due within the idle
** horizon (ob_options_t.idle_horizon_ms; docs/decisions/0020-until-idle.md)
** and ob_scheduled says what is left. A fake clock that never moves: work
** due later than the horizon can only be left, never waited for, so a run
** that waited would never return (the ctest timeout says so). */
#include "tests/integration/engine_fixture.h"
#include "oncebox_charge.h"
#include "oncebox_payout.h"

#define PAY OB_PAYOUT_MESSAGE_TYPE
#define DAY_MS 86400000LL

static void enqueue_delayed(fixture_t* f, int n, int64_t delay_ms) {
  char id[OB_UUID_BUFLEN], body[256];
  ob_envelope_t env;
  memset(&env, 0, sizeof env);
  env.type = PAY;
  env.id = fx_event(n, id);
  env.body = fx_payment(n, body);
  env.body_len = strlen(body);
  env.delay_ms = delay_ms;
  assert_int_equal(ob_enqueue(f->e, &env), 0);
}

/* A message delayed by a day beside three due ones: the three are handled,
** the run returns 0 (not stalled), and the delayed one is scheduled, due
** exactly a day after the enqueue. */
static void test_delayed_by_a_day_is_left_scheduled(void** state) {
  fixture_t* f = fx_new(1);
  ob_scheduled_t s;
  char id[OB_UUID_BUFLEN], body[256];
  (void)state;
  ob_register_payout(f->e);
  for (int i = 0; i < 3; i++)
    assert_int_equal(fx_enqueue(f, PAY, fx_event(i, id), fx_payment(i, body)), 0);
  enqueue_delayed(f, 9, DAY_MS);
  assert_int_equal(ob_run(f->e, OB_RUN_UNTIL_IDLE, 0), 0);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM merchant_payout"), 3);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM queue"), 1);
  assert_int_equal(ob_scheduled(f->e, &s), 0);
  assert_int_equal(s.messages, 1);
  assert_int_equal(s.effects, 0);
  assert_int_equal(s.earliest_ms, FX_T0 + DAY_MS);
  fx_free(f);
}

/* The horizon decides, not the delay alone: 0 leaves a message due 1 ms
** from now; nothing scheduled leaves ob_scheduled all zero. */
static void test_horizon_zero_and_nothing_left(void** state) {
  fixture_t* f = fx_new(1);
  ob_scheduled_t s;
  (void)state;
  ob_close(f->e);
  f->opts.idle_horizon_ms = 0;
  fx_open(f);
  ob_register_payout(f->e);
  assert_int_equal(ob_scheduled(f->e, &s), 0);
  assert_int_equal(s.messages + s.outbox + s.effects + s.earliest_ms, 0);
  enqueue_delayed(f, 1, 1);
  assert_int_equal(ob_run(f->e, OB_RUN_UNTIL_IDLE, 0), 0);
  assert_int_equal(ob_scheduled(f->e, &s), 0);
  assert_int_equal(s.messages, 1);
  assert_int_equal(s.earliest_ms, FX_T0 + 1);
  fx_free(f);
}

/* A retry waiting for its backoff is scheduled work too: the handler asks
** for a retry in an hour, the run returns 0 with the message left. */
static int retry_in_an_hour(ob_tx_t* tx, const ob_message_t* m, void* arg) {
  (void)m;
  (*(int*)arg)++;
  return ob_tx_retry(tx, 3600000, "supplier busy");
}

static void test_retry_backoff_is_left_scheduled(void** state) {
  fixture_t* f = fx_new(1);
  ob_scheduled_t s;
  char id[OB_UUID_BUFLEN];
  int calls = 0;
  (void)state;
  assert_int_equal(ob_register(f->e, "Busy", "busy", retry_in_an_hour, &calls), 0);
  assert_int_equal(fx_enqueue(f, "Busy", fx_event(1, id), "{}"), 0);
  assert_int_equal(ob_run(f->e, OB_RUN_UNTIL_IDLE, 0), 0);
  assert_int_equal(calls, 1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM queue"), 1);
  assert_int_equal(ob_scheduled(f->e, &s), 0);
  assert_int_equal(s.messages, 1);
  /* The retry's delay, with the policy's jitter (+-10%). */
  assert_true(s.earliest_ms >= FX_T0 + 3240000 && s.earliest_ms <= FX_T0 + 3960000);
  fx_free(f);
}

/* Effects: a message waiting for an effect that is due now and that no
** executor can take (the provider is registered, not enabled) leaves the
** run stalled, as before; the same effect with its next attempt a day
** away is scheduled work: 0, and ob_scheduled names it. */
static void test_effect_due_later_is_scheduled_not_stalled(void** state) {
  fixture_t* f = fx_new(1);
  ob_provider_options_t o;
  ob_scheduled_t s;
  char id[OB_UUID_BUFLEN], sql[256];
  (void)state;
  ob_provider_options_init(&o);
  o.name = OB_CHARGE_PROVIDER;
  assert_int_equal(ob_provider_register(f->e, &o), 0);
  assert_int_equal(ob_register_charge_order(f->e), 0);
  assert_int_equal(fx_enqueue(f, OB_CHARGE_MESSAGE_TYPE, fx_event(1, id),
                              "{\"orderId\":\"order-1\",\"amountInMinorUnits\""
                              ":100,\"currency\":\"EUR\"}"), 0);
  assert_int_equal(ob_run(f->e, OB_RUN_UNTIL_IDLE, 0), OB_RUN_STALLED);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM effect"), 1);
  snprintf(sql, sizeof sql, "UPDATE effect SET next_attempt_at = %lld",
           (long long)(FX_T0 + DAY_MS));
  ts_backend_exec(f->db_path, sql);
  assert_int_equal(ob_run(f->e, OB_RUN_UNTIL_IDLE, 0), 0);
  assert_int_equal(ob_scheduled(f->e, &s), 0);
  assert_int_equal(s.effects, 1);
  assert_int_equal(s.earliest_ms, FX_T0 + DAY_MS);
  fx_free(f);
}

/* The horizon is validated: -1 (OB_IDLE_HORIZON_POLL) and up; less is
** OB_EINVAL. ob_scheduled refuses NULL. */
static void test_options_and_arguments(void** state) {
  fixture_t* f = fx_new(1);
  ob_options_t o;
  ob_engine_t* e = NULL;
  ob_scheduled_t s;
  (void)state;
  ob_options_init(&o);
  assert_int_equal(o.idle_horizon_ms, OB_IDLE_HORIZON_POLL);
  o = f->opts;
  o.idle_horizon_ms = -2;
  ob_close(f->e);
  f->e = NULL;
  assert_int_equal(ob_open(&e, &o, NULL, 0), OB_EINVAL);
  assert_null(e);
  fx_open(f);
  assert_int_equal(ob_scheduled(NULL, &s), OB_EINVAL);
  assert_int_equal(ob_scheduled(f->e, NULL), OB_EINVAL);
  fx_free(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_delayed_by_a_day_is_left_scheduled),
      cmocka_unit_test(test_horizon_zero_and_nothing_left),
      cmocka_unit_test(test_retry_backoff_is_left_scheduled),
      cmocka_unit_test(test_effect_due_later_is_scheduled_not_stalled),
      cmocka_unit_test(test_options_and_arguments),
  };
  return cmocka_run_group_tests_name("until_idle", tests, NULL, NULL);
}
