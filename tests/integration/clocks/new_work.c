/* SPDX-License-Identifier: Apache-2.0 */
/* The clock class of issue 33 (docs/decisions/0019-one-engine-clock.md):
** rows written before the wall clock went back and never attempted (a
** queue row due at once, an outbox row never sent) are due at once after
** the jump, in the same run and across a restart; events made while the
** wall clock is behind carry the engine clock's time and say so; and every
** column of the schema that holds a time is classified, so a new one cannot
** be added without deciding which clock it is on.
**
** Before the engine clock, new rows had clock_ref NULL and the re-basing
** skipped them: `oncebox run --until-idle` under FAKETIME='@2000-01-01'
** handled 0 of 20 and never returned; the outbox published 0 of 30. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "tests/integration/clocks/clocks.h"

#define N_QUEUE 20
#define N_OUTBOX 30

typedef struct nw_s {
  fixture_t* f;
  jump_clock_t jc;
  int handled;
  int published;
  int64_t first_time;    /* created_at_ms of the first published event */
  int64_t behind_seen;   /* the largest wall_behind_ms published */
} nw_t;

static void nw_open(nw_t* w) {
  memset(w, 0, sizeof *w);
  w->f = calloc(1, sizeof *w->f);
  w->f->dir = ts_mkdtemp("new-work");
  w->f->db_path = ts_backend_db(w->f->dir, "t.db");
  jc_init(&w->jc);
  ob_options_init(&w->f->opts);
  w->f->opts.db_path = w->f->db_path;
  w->f->opts.clock = &w->jc.clock;
  w->f->opts.batch_size = 8;
  w->f->opts.log_level = OB_LOG_ERROR;
  fx_open(w->f);
}

static int emit_one(ob_tx_t* tx, const ob_message_t* m, void* arg) {
  nw_t* w = arg;
  w->handled++;
  return ob_tx_emit(tx, "PaymentBooked", m->id, "{}", 2, NULL);
}

static int accept_all(void* arg, const ob_event_t* ev) {
  nw_t* w = arg;
  if (w->published++ == 0) w->first_time = ev->created_at_ms;
  if (ev->wall_behind_ms > w->behind_seen) w->behind_seen = ev->wall_behind_ms;
  return 0;
}

static void enqueue_n(nw_t* w, int first, int n) {
  char id[OB_UUID_BUFLEN];
  for (int i = first; i < first + n; i++)
    assert_int_equal(fx_enqueue(w->f, "Pay", fx_event(i, id), "{}"), 0);
}

/* Process restart: a new process's monotonic clock starts anywhere. */
static void restart(nw_t* w) {
  ob_close(w->f->e);
  w->f->e = NULL;
  w->jc.mono = 3;
  fx_open(w->f);
  assert_int_equal(ob_register(w->f->e, "Pay", "book-v1", emit_one, w), 0);
}

/* Queue rows enqueued, never attempted; the wall clock back a day while
** the engine runs: all are handled at once. */
void test_new_queue_rows_after_backward_jump(void** state) {
  nw_t w;
  (void)state;
  nw_open(&w);
  assert_int_equal(ob_register(w.f->e, "Pay", "book-v1", emit_one, &w), 0);
  enqueue_n(&w, 0, N_QUEUE);
  jc_pass(&w.jc, 10);
  w.jc.wall -= DAY;
  fx_drain(w.f);
  assert_int_equal(w.handled, N_QUEUE);
  fx_free(w.f);
}

/* The same across a restart with the RTC at 2000-01-01 (a flat battery):
** the engine clock starts from the value the database recorded. */
void test_new_queue_rows_after_flat_rtc_restart(void** state) {
  nw_t w;
  (void)state;
  nw_open(&w);
  enqueue_n(&w, 0, N_QUEUE);
  jc_pass(&w.jc, 2000);
  w.jc.wall = 946684800000LL;  /* 2000-01-01T00:00:00Z */
  restart(&w);
  fx_drain(w.f);
  assert_int_equal(w.handled, N_QUEUE);
  fx_free(w.f);
}

/* Outbox rows made while the sink was away (never attempted), the clock
** back a day, across a restart: all are published at once, with the time
** they were made; events made after the jump carry the engine clock's
** time (not the day before) and how far the wall clock is behind. */
void test_new_outbox_rows_after_backward_restart(void** state) {
  nw_t w;
  size_t pub = 0;
  int64_t made_at = FX_T0;
  (void)state;
  nw_open(&w);
  assert_int_equal(ob_register(w.f->e, "Pay", "book-v1", emit_one, &w), 0);
  enqueue_n(&w, 0, N_OUTBOX);
  fx_drain(w.f);
  assert_int_equal(w.handled, N_OUTBOX);
  jc_pass(&w.jc, 2000);
  w.jc.wall -= DAY;
  restart(&w);
  assert_int_equal(ob_outbox_drain(w.f->e, accept_all, &w, 1000, &pub), 0);
  assert_int_equal((int)pub, N_OUTBOX);
  assert_true(w.first_time >= made_at);
  assert_int_equal(w.behind_seen, 0);  /* made while the clock was right */
  /* One more payment now, with the wall clock a day behind. */
  w.published = 0;
  enqueue_n(&w, 100, 1);
  fx_drain(w.f);
  assert_int_equal(ob_outbox_drain(w.f->e, accept_all, &w, 1000, &pub), 0);
  assert_int_equal((int)pub, 1);
  /* The 2 s before the restart were never recorded (no commit): the
  ** engine clock goes on from the last value a commit recorded. */
  assert_true(w.first_time >= made_at);
  assert_true(w.behind_seen > DAY - 5000 && w.behind_seen <= DAY);
  fx_free(w.f);
}

/* A forward jump keeps its meaning: the engine clock follows the wall
** clock forward, and a delayed message keeps its delay (deadlines.c moves
** it by the jump it measured on the engine clock). */
void test_engine_clock_follows_forward(void** state) {
  nw_t w;
  ob_envelope_t env;
  char id[OB_UUID_BUFLEN];
  (void)state;
  nw_open(&w);
  assert_int_equal(ob_register(w.f->e, "Pay", "book-v1", emit_one, &w), 0);
  memset(&env, 0, sizeof env);
  env.type = "Pay";
  env.id = fx_event(7, id);
  env.body = "{}";
  env.body_len = 2;
  env.delay_ms = 60000;
  assert_int_equal(ob_enqueue(w.f->e, &env), 0);
  w.jc.wall += 40 * DAY;
  jc_pass(&w.jc, 10);
  fx_drain(w.f);
  assert_int_equal(w.handled, 0);
  jc_pass(&w.jc, 60000);
  fx_drain(w.f);
  assert_int_equal(w.handled, 1);
  fx_free(w.f);
}

/* ---- every time column is classified ----------------------------------- */

/* The schema's columns that hold a time, and the clock each is on. A
** deadline is compared with now; an event time is recorded. Each is written
** from ob__now (the engine clock) but for the PostgreSQL leases, which are
** the server's (docs/postgresql.md). A column added to the migrations that
** holds a time (by its name: *_at, *_until, *_ms, clock_ref) and is not
** here fails this test: decide its clock, then list it. */
static const char* const time_columns[] = {
    /* deadlines (engine clock; leases on PostgreSQL: the server's) */
    "queue.available_at", "queue.lease_until", "queue.clock_ref",
    "outbox_event.next_attempt_at", "outbox_event.claim_until",
    "outbox_event.clock_ref", "effect.next_attempt_at", "effect.lease_until",
    "effect.clock_ref",
    /* event times (engine clock) */
    "queue.created_at", "queue.first_failed_at",
    "processed_message.processed_at", "merchant_payout.created_at",
    "outbox_event.created_at", "outbox_event.published_at",
    "outbox_event.parked_at", "outbox_event.wall_behind_ms",
    "failed_message.first_failed_at", "failed_message.last_failed_at",
    "failed_message.created_at", "relay_status.last_publish_at",
    "relay_status.updated_at", "effect.created_at", "effect.updated_at",
    "effect.parked_at", "effect.first_call_at", "charge.created_at",
    "schema_migration.applied_at",
    /* the observed clock of retention and key age (observed.c) */
    "retention_clock.observed_ms", "effect.first_call_observed_ms",
    "retention_swept.outbox_created_before_ms",
    "retention_swept.processed_before_ms",
    /* the engine clock itself */
    "engine_clock.ms",
};

static int holds_time(const char* col) {
  size_t n = strlen(col);
  return (n > 3 && strcmp(col + n - 3, "_at") == 0) ||
         (n > 6 && strcmp(col + n - 6, "_until") == 0) ||
         (n > 3 && strcmp(col + n - 3, "_ms") == 0) ||
         strcmp(col, "clock_ref") == 0 || strcmp(col, "ms") == 0 ||
         strcmp(col, "since") == 0;
}

typedef struct cols_s {
  int seen;
  int unlisted;
  char names[1024];
} cols_t;

static void visit_column(void* arg, int ncols, const char* const* v) {
  cols_t* c = arg;
  char name[200];
  int listed = 0;
  assert_int_equal(ncols, 2);
  if (v[0] == NULL || v[1] == NULL || !holds_time(v[1])) return;
  /* PostgreSQL's partitions repeat their parent's columns. */
  if (strchr(v[0], '_') != NULL && strstr(v[0], "_p") != NULL &&
      strspn(strrchr(v[0], '_') + 2, "0123456789") > 0)
    return;
  snprintf(name, sizeof name, "%s.%s", v[0], v[1]);
  c->seen++;
  for (size_t i = 0; i < sizeof time_columns / sizeof time_columns[0]; i++)
    if (strcmp(name, time_columns[i]) == 0) listed = 1;
  if (!listed && c->unlisted++ < 8) {
    size_t used = strlen(c->names);
    snprintf(c->names + used, sizeof c->names - used, " %s", name);
  }
}

void test_every_time_column_is_classified(void** state) {
  nw_t w;
  cols_t c;
  (void)state;
  nw_open(&w);
  memset(&c, 0, sizeof c);
  if (ts_backend_is_pg())
    ts_backend_rows(w.f->db_path,
                    "SELECT table_name::text, column_name::text FROM"
                    " information_schema.columns WHERE table_schema ="
                    " current_schema() AND table_name NOT IN (SELECT"
                    " c.relname FROM pg_inherits i JOIN pg_class c ON"
                    " c.oid = i.inhrelid)",
                    visit_column, &c);
  else
    ts_backend_rows(w.f->db_path,
                    "SELECT m.name, p.name FROM sqlite_schema m,"
                    " pragma_table_info(m.name) p WHERE m.type = 'table'",
                    visit_column, &c);
  if (c.unlisted > 0)
    fail_msg("%d time column(s) not classified in time_columns[]:%s; decide "
             "which clock each is on (docs/decisions/0019)",
             c.unlisted, c.names);
  assert_true(c.seen >= 10);  /* the query did see the schema */
  fx_free(w.f);
}

/* ---- real processes under libfaketime ------------------------------------ */

static int run_cli_under(const char* lib, const char* faketime,
                         const char* bin, const char* dir) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd,
           "LD_PRELOAD='%s' FAKETIME='%s' timeout 60 $OB_EMULATOR "
           "'%s/oncebox' --db '%s/t.db' --log-level error run --until-idle "
           ">/dev/null 2>&1",
           lib, faketime, bin, dir);
  return system(cmd);
}

/* The reproduction, on real processes: 20 payments enqueued with
** the real clock, then `oncebox run --until-idle` under a flat RTC (2000)
** and under a day back: each handles all 20 and exits 0 (it handled 0 and
** never returned before). */
void test_faketime_new_rows_handled(void** state) {
  static const char* const fakes[] = {"@2000-01-01 00:00:00", "-1d"};
  const char* bin = getenv("OB_BINARY_DIR");
  char* lib;
  (void)state;
  CLOCKS_SQLITE_ONLY("the CLI under libfaketime on a SQLite file");
  assert_non_null(bin);
  TS_FAKETIME_OR_SKIP(lib);
  for (size_t k = 0; k < sizeof fakes / sizeof fakes[0]; k++) {
    char* dir = ts_mkdtemp("clocks-new");
    char cmd[2048], path[1024];
    int st;
    for (int i = 0; i < N_QUEUE; i++) {
      snprintf(cmd, sizeof cmd,
               "$OB_EMULATOR '%s/oncebox' --db '%s/t.db' enqueue --type "
               "PaymentCaptured --id 0190b6d8-3ae7-7ca2-a653-%012d --body "
               "'{\"paymentId\":\"5c4080b1-b5d2-4e91-8de8-%012d\","
               "\"merchantId\":\"3727331a-b533-4c6e-a0f8-48532237307b\","
               "\"amountInMinorUnits\":100,\"currency\":\"EUR\"}' >/dev/null",
               bin, dir, i, i);
      assert_int_equal(system(cmd), 0);
    }
    st = run_cli_under(lib, fakes[k], bin, dir);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
      fail_msg("run --until-idle under FAKETIME='%s' exited %d (124: it "
               "never returned)", fakes[k],
               WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    snprintf(path, sizeof path, "%s/t.db", dir);
    assert_int_equal(ts_backend_count(path, "SELECT count(*) FROM merchant_payout"),
                     N_QUEUE);
    assert_int_equal(ts_backend_count(path, "SELECT count(*) FROM queue"), 0);
    /* The events were made with the wall clock behind: they say so. */
    assert_int_equal(ts_backend_count(path, "SELECT count(*) FROM outbox_event"
                                            " WHERE wall_behind_ms > 0"),
                     N_QUEUE);
    ts_rmdir(dir);
  }
  free(lib);
}
