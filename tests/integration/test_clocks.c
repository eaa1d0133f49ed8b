/* SPDX-License-Identifier: Apache-2.0 */
/* Clocks that jump (docs/field.md): retention counts the time the engine
** observed passing, not the wall clock (this file), and persisted deadlines
** keep their length when the clock goes back (the engine clock runs on),
** their leases kept when it goes
** forward (clocks/). A real SQLite file; the wall and the monotonic clock
** are driven separately through ob_clock_t, as a terminal without NTP sees
** them (its RTC reset or set forward, its uptime steady), and through real
** processes under libfaketime. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/integration/clocks/clocks.h"

#define N_RECORDS 50

/* The README's reserve_stock shape: no business unique key, so only the
** dedup record stands between a redelivery and a second effect. */
static int g_runs;
static int count_handler(ob_tx_t* tx, const ob_message_t* m, void* arg) {
  (void)m;
  (void)arg;
  (void)tx;
  g_runs++;  /* stock reserved once more */
  return OB_DONE;
}

typedef struct world_s {
  fixture_t* f;
  jump_clock_t jc;
} world_t;

static void open_world(world_t* w) {
  w->f = calloc(1, sizeof *w->f);
  w->f->dir = ts_mkdtemp("clocks");
  w->f->db_path = ts_backend_db(w->f->dir, "t.db");
  jc_init(&w->jc);
  ob_options_init(&w->f->opts);
  w->f->opts.db_path = w->f->db_path;
  w->f->opts.clock = &w->jc.clock;
  fx_open(w->f);
  assert_int_equal(ob_register(w->f->e, "Reserve", "reserve-stock-v1",
                               count_handler, NULL),
                   0);
}

static void handle_batch(world_t* w, int first) {
  char id[OB_UUID_BUFLEN];
  for (int i = 0; i < N_RECORDS; i++)
    assert_int_equal(fx_enqueue(w->f, "Reserve", fx_event(first + i, id), "{}"),
                     0);
  fx_drain(w->f);
}

static long long dedup_records(world_t* w) {
  return fx_count(w->f, "SELECT count(*) FROM processed_message");
}

/* Forward 40 days on the wall, minutes on the monotonic clock: nothing is
** old enough to delete, and a redelivery is still a duplicate. */
static void test_forward_jump_deletes_nothing(void** state) {
  world_t w;
  int64_t deleted = -1;
  (void)state;
  open_world(&w);
  g_runs = 0;
  handle_batch(&w, 0);
  assert_int_equal(dedup_records(&w), N_RECORDS);
  w.jc.mono += 5 * 60 * 1000;
  w.jc.wall += 40 * DAY + 5 * 60 * 1000;
  assert_int_equal(ob_gc(w.f->e, &deleted), 0);
  assert_int_equal(deleted, 0);
  assert_int_equal(dedup_records(&w), N_RECORDS);
  /* The same ids again, as a queue would redeliver them: duplicates. */
  handle_batch(&w, 0);
  assert_int_equal(g_runs, N_RECORDS);
  /* Across a restart too: the observed clock was recorded. */
  fx_reopen(w.f);
  assert_int_equal(ob_register(w.f->e, "Reserve", "reserve-stock-v1",
                               count_handler, NULL),
                   0);
  w.jc.wall += DAY;
  assert_int_equal(ob_gc(w.f->e, &deleted), 0);
  assert_int_equal(deleted, 0);
  fx_free(w.f);
}

/* Retention still works on observed time: kept at 29 days, deleted at 31;
** the boundary is retention_ms of observed time. */
static void test_retention_counts_observed_time(void** state) {
  world_t w;
  int64_t deleted = -1;
  (void)state;
  open_world(&w);
  handle_batch(&w, 100);
  w.jc.mono += 29 * DAY;
  w.jc.wall += 29 * DAY;
  assert_int_equal(ob_gc(w.f->e, &deleted), 0);
  assert_int_equal(deleted, 0);
  w.jc.mono += 2 * DAY;
  w.jc.wall += 2 * DAY;
  assert_int_equal(ob_gc(w.f->e, &deleted), 0);
  assert_int_equal(deleted, N_RECORDS);
  fx_free(w.f);
}

/* Back one day: records made after the jump are stamped with the observed
** clock, so they are not a day "older" and survive their full window. */
static void test_backward_jump_keeps_new_records_their_window(void** state) {
  world_t w;
  int64_t deleted = -1;
  (void)state;
  open_world(&w);
  w.jc.mono += 1000;
  w.jc.wall -= DAY;
  handle_batch(&w, 200);
  w.jc.mono += 29 * DAY + 12 * 3600 * 1000;
  w.jc.wall += 29 * DAY + 12 * 3600 * 1000;
  assert_int_equal(ob_gc(w.f->e, &deleted), 0);
  assert_int_equal(deleted, 0);
  assert_int_equal(dedup_records(&w), N_RECORDS);
  fx_free(w.f);
}

/* The field's reproduction: `faketime +40d oncebox gc` on records minutes
** old deleted them all. Skips without faketime (tests/install-deps.sh
** installs it). */
static void test_faketime_gc(void** state) {
  const char* bin = getenv("OB_BINARY_DIR");
  char* lib;
  char* dir;
  char cmd[2048];
  int st;
  long long before, after;
  (void)state;
  CLOCKS_SQLITE_ONLY("the CLI under libfaketime on a SQLite file");
  assert_non_null(bin);
  /* libfaketime is an LD_PRELOAD library, which a sanitizer build refuses
  ** (its runtime must come first): then this case cannot run. */
  TS_FAKETIME_OR_SKIP(lib);
  dir = ts_mkdtemp("clocks-cli");
  for (int i = 0; i < 20; i++) {
    snprintf(cmd, sizeof cmd,
             "$OB_EMULATOR '%s/oncebox' --db '%s/t.db' enqueue --type PaymentCaptured "
             "--id 0190b6d8-3ae7-7ca2-a653-%012d --body "
             "'{\"paymentId\":\"5c4080b1-b5d2-4e91-8de8-%012d\","
             "\"merchantId\":\"3727331a-b533-4c6e-a0f8-48532237307b\","
             "\"amountInMinorUnits\":100,\"currency\":\"EUR\"}' >/dev/null",
             bin, dir, i, i);
    assert_int_equal(system(cmd), 0);
  }
  snprintf(cmd, sizeof cmd,
           "$OB_EMULATOR '%s/oncebox' --db '%s/t.db' --log-level error run --until-idle "
           "2>/dev/null", bin, dir);
  assert_int_equal(system(cmd), 0);
  snprintf(cmd, sizeof cmd, "%s/t.db", dir);
  {
    fixture_t f;
    memset(&f, 0, sizeof f);
    f.db_path = cmd;
    before = fx_count(&f, "SELECT count(*) FROM processed_message");
  }
  assert_int_equal(before, 20);
  snprintf(cmd, sizeof cmd,
           "LD_PRELOAD='%s' FAKETIME='+40d' $OB_EMULATOR '%s/oncebox' --db "
           "'%s/t.db' gc >/dev/null 2>&1", lib, bin, dir);
  st = system(cmd);
  assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  snprintf(cmd, sizeof cmd, "%s/t.db", dir);
  {
    fixture_t f;
    memset(&f, 0, sizeof f);
    f.db_path = cmd;
    after = fx_count(&f, "SELECT count(*) FROM processed_message");
  }
  assert_int_equal(after, 20);
  free(lib);
  ts_rmdir(dir);
}

int main(int argc, char** argv) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_forward_jump_deletes_nothing),
      cmocka_unit_test(test_retention_counts_observed_time),
      cmocka_unit_test(test_backward_jump_keeps_new_records_their_window),
      cmocka_unit_test(test_faketime_gc),
      cmocka_unit_test(test_retries_after_backward_jump_in_run),
      cmocka_unit_test(test_relay_leases_after_backward_restart),
      cmocka_unit_test(test_effect_deadlines_after_backward_jump),
      cmocka_unit_test(test_scheduled_message_not_pulled_in),
      cmocka_unit_test(test_forward_jump_keeps_relay_leases),
      cmocka_unit_test(test_forward_jump_keeps_effect_leases),
      cmocka_unit_test(test_faketime_retries_jump_back_in_run),
      cmocka_unit_test(test_new_queue_rows_after_backward_jump),
      cmocka_unit_test(test_new_queue_rows_after_flat_rtc_restart),
      cmocka_unit_test(test_new_outbox_rows_after_backward_restart),
      cmocka_unit_test(test_engine_clock_follows_forward),
      cmocka_unit_test(test_every_time_column_is_classified),
      cmocka_unit_test(test_faketime_new_rows_handled),
  };
  /* The faketime case runs this executable again as its child process. */
  if (argc == 3 && strcmp(argv[1], "--retry-child") == 0)
    return clocks_retry_child(argv[2]);
  return cmocka_run_group_tests_name("clocks", tests, NULL, NULL);
}
