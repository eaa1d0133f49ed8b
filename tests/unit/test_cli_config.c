/* SPDX-License-Identifier: Apache-2.0 */
/*
** The CLI's settings table (programs/oncebox/cli_config.c): its defaults are
** the library's own (ob_options_init, ob_retry_policy_init, the consumer's
** and the provider's option inits), so a setting nobody gives changes
** nothing; and the layers pick flag > environment > file > default.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "programs/oncebox/cli.h"

extern char** environ;

/* A cli_t with the table loaded from no environment and no file. */
static void fresh(cli_t* cli) {
  /* Only what a case sets: none of the caller's ONCEBOX_* settings. */
  for (;;) {
    char name[128];
    char** e;
    for (e = environ; *e != NULL; e++)
      if (strncmp(*e, "ONCEBOX_", 8) == 0) break;
    if (*e == NULL) break;
    snprintf(name, sizeof name, "%.*s", (int)strcspn(*e, "="), *e);
    unsetenv(name);
  }
  memset(cli, 0, sizeof *cli);
  assert_int_equal(ob__cli_cfg_init(cli), 0);
  assert_int_equal(ob__cli_cfg_load(cli, 0), 0);
}

static void test_defaults_are_the_library_s(void** state) {
  cli_t cli;
  ob_options_t lib, ours;
  ob_consumer_options_t co;
  ob_provider_options_t po;
  ob_metrics_options_t mo;
  (void)state;
  fresh(&cli);
  ob_options_init(&lib);
  ob_options_init(&ours);
  ob__cli_cfg_options(&cli, &ours);
  assert_int_equal(ours.busy_timeout_ms, lib.busy_timeout_ms);
  assert_int_equal(ours.batch_size, lib.batch_size);
  assert_int_equal(ours.retention_ms, lib.retention_ms);
  assert_int_equal(ours.gc_interval_ms, lib.gc_interval_ms);
  assert_int_equal(ours.gc_batch, lib.gc_batch);
  assert_int_equal(ours.poll_interval_ms, lib.poll_interval_ms);
  assert_int_equal(ours.max_body_bytes, lib.max_body_bytes);
  assert_int_equal(ours.retry.max_retries, lib.retry.max_retries);
  assert_int_equal(ours.retry.delay_ms, lib.retry.delay_ms);
  assert_true(ours.retry.multiplier == lib.retry.multiplier);
  assert_int_equal(ours.retry.max_delay_ms, lib.retry.max_delay_ms);
  assert_true(ours.retry.jitter == lib.retry.jitter);
  assert_int_equal(cli.max_db_bytes, lib.max_db_bytes);
  assert_int_equal(cli.reserve_db_bytes, lib.reserve_db_bytes);
  assert_int_equal(cli.log_level, lib.log_level);
  assert_int_equal(cli.sync_normal, 0);
  assert_int_equal(cli.log_format, CLI_LOG_TEXT);
  assert_null(cli.db_path);
  assert_null(cli.metrics_listen);
  ob_consumer_options_init(&co);
  assert_int_equal(ob__cli_cfg_int(&cli, CFG_PREFETCH), co.prefetch);
  assert_int_equal(ob__cli_cfg_int(&cli, CFG_VISIBILITY) / 1000,
                   co.visibility_timeout_s);
  ob_provider_options_init(&po);
  assert_int_equal(ob__cli_cfg_int(&cli, CFG_PROVIDER_TIMEOUT), po.timeout_ms);
  assert_int_equal(ob__cli_cfg_int(&cli, CFG_PROVIDER_KEY_RETENTION),
                   po.key_retention_ms);
  assert_int_equal(ob__cli_cfg_int(&cli, CFG_PROVIDER_IDEMPOTENCY),
                   po.idempotency_keys);
  ob_metrics_options_init(&mo);
  assert_int_equal(ob__cli_cfg_int(&cli, CFG_METRICS_REFRESH),
                   mo.stats_refresh_ms);
  assert_int_equal(ob__cli_cfg_int(&cli, CFG_HEALTH_RELAY_FAILING),
                   mo.relay_failing_ms);
  assert_int_equal(ob__cli_cfg_int(&cli, CFG_HEALTH_EFFECTS_UNKNOWN),
                   mo.effects_unknown_max);
  assert_int_equal(ob__cli_cfg_int(&cli, CFG_HEALTH_PERIOD), mo.period_ms);
  assert_int_equal(ob__cli_cfg_int(&cli, CFG_HEALTH_FAILED), mo.failed_max);
  assert_int_equal(ob__cli_cfg_int(&cli, CFG_HEALTH_RETRIED), mo.retried_max);
  for (int id = 0; id < CFG_N; id++) assert_int_equal(ob__cli_cfg_given(&cli, id), 0);
  ob__cli_cfg_free(&cli);
}

static void test_layers(void** state) {
  cli_t cli;
  char src[256];
  const char* text = "[engine]\ngc_batch = 111\n[retry.orders]\nmax_retries = 1\n";
  (void)state;
  fresh(&cli);
  assert_int_equal(ob__cli_cfg_parse_file(&cli, "t.conf", text, strlen(text)), 0);
  assert_int_equal(ob__cli_cfg_int(&cli, CFG_GC_BATCH), 111);
  setenv("ONCEBOX_GC_BATCH", "222", 1);
  ob__cli_cfg_free(&cli);

  memset(&cli, 0, sizeof cli);
  assert_int_equal(ob__cli_cfg_init(&cli), 0);
  assert_int_equal(ob__cli_cfg_load(&cli, 0), 0);
  assert_int_equal(ob__cli_cfg_parse_file(&cli, "t.conf", text, strlen(text)), 0);
  assert_int_equal(ob__cli_cfg_int(&cli, CFG_GC_BATCH), 222);
  assert_string_equal(ob__cli_cfg_source(&cli, CFG_GC_BATCH, src, sizeof src),
                      "env ONCEBOX_GC_BATCH");
  assert_int_equal(ob__cli_cfg_flag(&cli, CFG_GC_BATCH, "333", "--gc-batch",
                                    NULL), 0);
  assert_int_equal(ob__cli_cfg_int(&cli, CFG_GC_BATCH), 333);
  assert_string_equal(ob__cli_cfg_source(&cli, CFG_GC_BATCH, src, sizeof src),
                      "flag --gc-batch");
  /* A bad flag value leaves the layer as it was. */
  assert_int_equal(ob__cli_cfg_flag(&cli, CFG_GC_BATCH, "0", "--gc-batch",
                                    NULL), -1);
  assert_int_equal(ob__cli_cfg_int(&cli, CFG_GC_BATCH), 333);
  unsetenv("ONCEBOX_GC_BATCH");
  ob__cli_cfg_free(&cli);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_defaults_are_the_library_s),
      cmocka_unit_test(test_layers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
