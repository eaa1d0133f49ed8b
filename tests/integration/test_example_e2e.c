/* SPDX-License-Identifier: Apache-2.0 */
/* Example for embedders: the whole pipeline inside one test process, with
** no server. A terminal (producer) handles PaymentCaptured and emits
** MerchantPayoutCreated into its outbox; an in-process sink feeds those
** events into the local queue of a second engine (head office), whose
** handler books each payout once. Temporary databases, a controllable clock
** (the library's own, oncebox_test.h).
**
** Copy this file as the starting point of your own end-to-end tests: it
** uses nothing but the public headers, the library and cmocka. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "oncebox.h"
#include "tests/support/backend.h"
#include "oncebox_payout.h"
#include "oncebox_test.h"

typedef struct office_s {
  int booked;
} office_t;

/* Head office's handler, written only against the portable handler API. */
static int book_payout(ob_tx_t* tx, const ob_message_t* m, void* arg) {
  office_t* office = arg;
  ob_value_t p[2];
  int rc = ob_tx_exec(tx,
                      "CREATE TABLE IF NOT EXISTS booked(event_id TEXT PRIMARY"
                      " KEY, payload TEXT NOT NULL)",
                      NULL, 0, NULL, NULL);
  if (rc < 0) return rc;
  p[0] = OB_VTEXT(m->id);
  p[1] = OB_VTEXTN(m->body, m->body_len);
  rc = ob_tx_exec(tx, "INSERT INTO booked(event_id, payload) VALUES (?, ?)", p,
                  2, NULL, NULL);
  if (rc < 0) return rc;
  office->booked++;
  return OB_DONE;
}

/* A sink that accepts an event and then "crashes" before the engine marks
** it published: the next drain hands the same event over again. */
typedef struct flaky_s {
  ob_engine_t* target;
  int calls;
  int fail_every;
} flaky_t;

static int flaky_sink(void* arg, const ob_event_t* ev) {
  flaky_t* s = arg;
  int rc = ob_sink_enqueue(s->target, ev);
  if (rc < 0) return rc;
  /* Delivered, but report a failure: the same as a lost reply. */
  if (++s->calls % s->fail_every == 0) return OB_ESINK;
  return 0;
}

/* A fresh private directory for the databases, under $TMPDIR or /tmp. */
static void make_dir(char* out, size_t n) {
  const char* base = getenv("TMPDIR");
  snprintf(out, n, "%s/oncebox-e2e-XXXXXX", base && *base ? base : "/tmp");
  if (mkdtemp(out) == NULL) fail_msg("mkdtemp %s", out);
}

/* Remove database `name` of dir with its -wal and -shm files. */
static void remove_db(const char* dir, const char* name) {
  static const char* suffix[] = {"", "-wal", "-shm"};
  char path[4096];
  for (int i = 0; i < 3; i++) {
    if (snprintf(path, sizeof path, "%s/%s%s", dir, name, suffix[i]) >=
        (int)sizeof path)
      continue;  /* too long to be one of ours */
    (void)unlink(path);
  }
}

/* The terminal's database is always a file; the head office's is one too,
** or (example_e2e_pg) a database on the test's own PostgreSQL. */
static ob_engine_t* open_at(const char* dir, const char* name,
                            ob_fake_clock_t* c, int head_office) {
  ob_options_t o;
  ob_engine_t* e = NULL;
  char err[256], path[4096];
  if (head_office && ts_backend_is_pg()) {
    char* db = ts_backend_db(dir, name);
    snprintf(path, sizeof path, "%s", db);
    free(db);
  } else {
    snprintf(path, sizeof path, "%s/%s", dir, name);
  }
  ob_options_init(&o);
  o.db_path = path;  /* the engine keeps a copy */
  o.clock = ob_fake_clock(c);
  o.batch_size = 50;
  if (ob_open(&e, &o, err, sizeof err) != 0) fail_msg("open %s: %s", path, err);
  return e;
}

static void test_terminal_to_head_office(void** state) {
  char dir[4096];
  ob_fake_clock_t clock;
  office_t office = {0};
  ob_engine_t *terminal, *head_office;
  flaky_t sink;
  ob_batch_result_t r;
  ob_stats_t st;
  size_t published, total = 0;
  (void)state;

  make_dir(dir, sizeof dir);
  ob_fake_clock_init(&clock, 1796083200000LL, 7);
  terminal = open_at(dir, "terminal.db", &clock, 0);
  head_office = open_at(dir, "office.db", &clock, 1);
  assert_int_equal(ob_register_payout(terminal), 0);
  assert_int_equal(ob_register(head_office, OB_PAYOUT_EVENT_TYPE,
                               "book-payout-v1", book_payout, &office),
                   0);

  /* 100 payments, each delivered twice. */
  for (int i = 0; i < 200; i++) {
    char id[OB_UUID_BUFLEN], body[256];
    ob_envelope_t env;
    snprintf(id, sizeof id, "0190b6d8-3ae7-7ca2-a653-%012d", i % 100);
    snprintf(body, sizeof body,
             "{\"paymentId\":\"5c4080b1-b5d2-4e91-8de8-%012d\","
             "\"merchantId\":\"3727331a-b533-4c6e-a0f8-48532237307b\","
             "\"amountInMinorUnits\":%d,\"currency\":\"EUR\"}",
             i % 100, 100 + i % 100);
    memset(&env, 0, sizeof env);
    env.type = OB_PAYOUT_MESSAGE_TYPE;
    env.id = id;
    env.body = body;
    env.body_len = strlen(body);
    assert_int_equal(ob_enqueue(terminal, &env), 0);
  }
  while (ob_run_once(terminal, &r) == 0 && r.claimed > 0) {}

  /* Drain the outbox through a sink that loses every third reply; failed
  ** rows come back after their backoff (the clock moves on). */
  sink.target = head_office;
  sink.calls = 0;
  sink.fail_every = 3;
  for (int round = 0; round < 50; round++) {
    assert_int_equal(ob_outbox_drain(terminal, flaky_sink, &sink, 25, &published), 0);
    total += published;
    assert_int_equal(ob_stats(terminal, &st), 0);
    if (st.outbox_unpublished == 0) break;
    ob_fake_clock_advance(&clock, 10 * 60 * 1000);
  }
  assert_int_equal(st.outbox_unpublished, 0);
  assert_int_equal(total, 100);
  assert_true(sink.calls > 100);  /* some events were handed over twice */

  /* Head office handles its queue: every event booked exactly once. */
  while (ob_run_once(head_office, &r) == 0 && r.claimed > 0) {}
  assert_int_equal(office.booked, 100);
  assert_int_equal(ob_stats(head_office, &st), 0);
  assert_int_equal(st.processed, 100);
  assert_int_equal(st.queue_ready + st.queue_delayed, 0);
  assert_int_equal(ob_check(terminal, NULL, NULL), 0);
  assert_int_equal(ob_check(head_office, NULL, NULL), 0);

  ob_close(terminal);
  ob_close(head_office);
  remove_db(dir, "terminal.db");
  remove_db(dir, "office.db");
  (void)rmdir(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_terminal_to_head_office),
  };
  return cmocka_run_group_tests_name("example_e2e", tests, NULL, NULL);
}
