/* SPDX-License-Identifier: Apache-2.0 */
/* The health rules (core/util/health.c) on figures made by hand: each
** reason turns on at its threshold and off again, the one-shot and the
** running engine's views, and the /health body. The HTTP listener's
** answers on a real run are in tests/integration/test_metrics_http.c. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/health.h"

typedef struct fixture_s {
  ob_stats_t s;
  ob_counters_t c;
  ob__health_input_t in;
} fixture_t;

static void setup_in(fixture_t* f, int with_counters) {
  memset(f, 0, sizeof *f);
  f->s.relay_online = -1;
  f->in.stats = &f->s;
  f->in.counters = with_counters ? &f->c : NULL;
  f->in.write_probe = -1;
  f->in.now_ms = 1000000;
  f->in.relay_failing_ms = 300000;
  f->in.write_error_ms = 0;
  f->in.effects_unknown_max = 0;
}

static unsigned verdict(fixture_t* f) {
  ob__health_t h;
  ob__health_eval(&f->in, &h);
  return h.reasons;
}

static void test_healthy(void** state) {
  fixture_t f;
  char* j;
  ob__health_t h;
  (void)state;
  setup_in(&f, 1);
  assert_int_equal(verdict(&f), 0);
  ob__health_eval(&f.in, &h);
  j = ob__health_json(&f.in, &h);
  assert_non_null(j);
  assert_non_null(strstr(j, "\"status\":\"ok\",\"reasons\":[]"));
  free(j);
}

static void test_disk_reserve(void** state) {
  fixture_t f;
  (void)state;
  setup_in(&f, 0);
  f.s.space_level = 1;
  assert_int_equal(verdict(&f), OB__HEALTH_DISK_RESERVE);
  f.s.space_level = 3;
  assert_int_equal(verdict(&f), OB__HEALTH_DISK_RESERVE);
  f.s.space_level = 0;
  assert_int_equal(verdict(&f), 0);
}

static void test_effects_unknown(void** state) {
  fixture_t f;
  (void)state;
  setup_in(&f, 0);
  f.s.effects_unknown = 1;
  assert_int_equal(verdict(&f), OB__HEALTH_EFFECTS_UNKNOWN);
  f.in.effects_unknown_max = 1;
  assert_int_equal(verdict(&f), 0);
}

/* The count rules: more than the maximum in the period, each on its own,
** off with a period of 0 or a negative maximum; the body says how many. */
static void test_failures_and_retries_in_period(void** state) {
  fixture_t f;
  ob__health_t h;
  char* j;
  (void)state;
  setup_in(&f, 1);
  f.in.period_ms = 60000;
  f.in.failed_max = 5;
  f.in.retried_max = 5;
  f.in.failed_in_period = 5;
  f.in.retried_in_period = 5;
  assert_int_equal(verdict(&f), 0);
  f.in.failed_in_period = 6;
  assert_int_equal(verdict(&f), OB__HEALTH_FAILURES);
  f.in.retried_in_period = 6;
  assert_int_equal(verdict(&f), OB__HEALTH_FAILURES | OB__HEALTH_RETRIES);
  ob__health_eval(&f.in, &h);
  j = ob__health_json(&f.in, &h);
  assert_non_null(j);
  assert_non_null(strstr(j, "\"reasons\":[\"failures\",\"retries\"]"));
  assert_non_null(strstr(j, "\"period_seconds\":60,\"failed_in_period\":6,"
                            "\"retried_in_period\":6}"));
  free(j);
  f.in.failed_max = -1;
  assert_int_equal(verdict(&f), OB__HEALTH_RETRIES);
  f.in.failed_max = 0;
  f.in.period_ms = 0;
  assert_int_equal(verdict(&f), 0);
}

static void test_write_errors(void** state) {
  fixture_t f;
  ob__health_t h;
  char* j;
  (void)state;
  setup_in(&f, 1);
  f.c.last_write_error = OB_EIO;
  f.c.write_failing_since_ms = f.in.now_ms - 10;
  assert_int_equal(verdict(&f), OB__HEALTH_DB_NOT_WRITABLE);
  ob__health_eval(&f.in, &h);
  j = ob__health_json(&f.in, &h);
  assert_non_null(strstr(j, "\"reasons\":[\"db_not_writable\"]"));
  assert_non_null(strstr(j, "\"db_write_error\":\"OB_EIO\""));
  free(j);
  /* A threshold: a failure that a later commit would heal is tolerated. */
  f.in.write_error_ms = 11;
  assert_int_equal(verdict(&f), 0);
  f.in.write_error_ms = 10;
  assert_int_equal(verdict(&f), OB__HEALTH_DB_NOT_WRITABLE);
  f.c.last_write_error = 0;  /* a commit since */
  f.c.write_failing_since_ms = 0;
  assert_int_equal(verdict(&f), 0);
  /* The one-shot probe. */
  setup_in(&f, 0);
  f.in.write_probe = 0;
  f.in.write_probe_error = OB_EPERM;
  assert_int_equal(verdict(&f), OB__HEALTH_DB_NOT_WRITABLE);
  f.in.write_probe = 1;
  assert_int_equal(verdict(&f), 0);
}

static void test_relay_counters(void** state) {
  fixture_t f;
  ob__health_t h;
  (void)state;
  setup_in(&f, 1);
  f.c.relay_enabled = 1;
  f.c.relay_failing_since_ms = f.in.now_ms - 299999;
  assert_int_equal(verdict(&f), 0);
  f.c.relay_failing_since_ms = f.in.now_ms - 300000;
  ob__health_eval(&f.in, &h);
  assert_int_equal(h.reasons, OB__HEALTH_RELAY_FAILING);
  assert_int_equal(h.relay_failing_for_ms, 300000);
  f.in.relay_failing_ms = 0;  /* the rule off */
  assert_int_equal(verdict(&f), 0);
  f.in.relay_failing_ms = 300000;
  f.c.relay_failing_since_ms = 0;  /* a request went through */
  assert_int_equal(verdict(&f), 0);
}

/* What a one-shot read sees: the relay's record and the waiting events. */
static void test_relay_record(void** state) {
  fixture_t f;
  (void)state;
  setup_in(&f, 0);
  f.s.relay_online = 0;
  f.s.outbox_unpublished = 3;
  f.s.outbox_oldest_unpublished_age_ms = 300000;
  assert_int_equal(verdict(&f), OB__HEALTH_RELAY_FAILING);
  f.s.outbox_oldest_unpublished_age_ms = 299999;
  assert_int_equal(verdict(&f), 0);
  /* Offline with nothing waiting (or only parked events): nothing at risk. */
  f.s.outbox_oldest_unpublished_age_ms = 900000;
  f.s.outbox_parked = 3;
  assert_int_equal(verdict(&f), 0);
  f.s.outbox_parked = 0;
  /* Online but refusing (a configuration fault) counts as failing. */
  f.s.relay_online = 1;
  assert_int_equal(verdict(&f), 0);
  snprintf(f.s.relay_error, sizeof f.s.relay_error, "credentials refused");
  assert_int_equal(verdict(&f), OB__HEALTH_RELAY_FAILING);
  /* No relay ever ran: nothing to fail. */
  f.s.relay_online = -1;
  assert_int_equal(verdict(&f), 0);
}

static void test_several_and_no_peer_text(void** state) {
  fixture_t f;
  ob__health_t h;
  char* j;
  (void)state;
  setup_in(&f, 0);
  f.s.space_level = 2;
  f.s.effects_unknown = 4;
  f.s.relay_online = 1;
  f.s.outbox_unpublished = 1;
  f.s.outbox_oldest_unpublished_age_ms = 400000;
  snprintf(f.s.relay_error, sizeof f.s.relay_error, "CANARY-SECRET echoed");
  ob__health_eval(&f.in, &h);
  j = ob__health_json(&f.in, &h);
  assert_non_null(j);
  assert_non_null(strstr(j, "\"status\":\"unhealthy\",\"reasons\":["
                            "\"disk_reserve\",\"relay_failing\","
                            "\"effects_unknown\"]"));
  assert_null(strstr(j, "CANARY"));
  free(j);
  ob__health_eval(NULL, &h);
  assert_int_equal(h.reasons, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_healthy),
      cmocka_unit_test(test_disk_reserve),
      cmocka_unit_test(test_effects_unknown),
      cmocka_unit_test(test_failures_and_retries_in_period),
      cmocka_unit_test(test_write_errors),
      cmocka_unit_test(test_relay_counters),
      cmocka_unit_test(test_relay_record),
      cmocka_unit_test(test_several_and_no_peer_text),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
