/* SPDX-License-Identifier: Apache-2.0 */
/* The fleet (issue 20, item 5; docs/postgresql.md, "The fleet"): terminals
** on SQLite files that go offline and online, one SQS queue (fauxqs behind
** TLS, SigV4 checked: sqs/sqs_server.mjs), and a head office of three
** consumer processes on one PostgreSQL, one of them SIGKILLed mid-run and
** started again.
**
** Each terminal is the real `oncebox` program on its own file: each round it
** enqueues its new payments (every one delivered twice, the last round's
** again: a till that retries), handles them (`run --until-idle`: the payout
** module, one payout and one MerchantPayoutCreated event per payment), and,
** when online, publishes its outbox (`outbox drain --until-empty`); offline,
** the same drain meets a closed port, fails, and keeps every row. The head
** office's consumers book each payout event in payout_booking (UNIQUE on the
** payment) through handler SQL. What must hold at the end: each terminal
** made one payout per payment; the head office booked each payment once,
** from the payout its terminal made; nothing is left in SQS; ob_check on
** PostgreSQL is clean.
**
** Needs node + tests/interop/node_modules and openssl (the SQS server) and
** PostgreSQL 15's server programs; skips (77) with the reason otherwise. */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <sqlite3.h>

#include "tests/integration/consumer/consumer_test_util.h"
#include "tests/integration/relay/relay_fixture.h"
#include "tests/integration/sqs/sqs_test_util.h"
#include "tests/support/backend.h"
#include "tests/support/testsupport.h"
#include "oncebox_payout.h"

#define TERMINALS 20
#define ROUNDS 4
#define PER_ROUND 4        /* new payments per terminal per round */
#define CONSUMERS 3
#define SOURCE_FMT "urn:pos:till-%02d"

static sq_server_t g_srv;
static const char* g_skip;
static char* g_dir;
static char* g_url;

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* Payment k of terminal t: ids unique across the fleet. */
static void payment_ids(int t, int k, char id[OB_UUID_BUFLEN],
                        char pay[OB_UUID_BUFLEN]) {
  snprintf(id, OB_UUID_BUFLEN, "0190b6d8-3ae7-7ca2-a653-%06d%06d", t, k);
  snprintf(pay, OB_UUID_BUFLEN, "5c4080b1-b5d2-4e91-8de8-%06d%06d", t, k);
}

/* ---- a terminal: the oncebox program on its file --------------------------- */

/* One integer from a terminal's file (read-only; ts_backend_count reads the
** head office's database in this test). */
static long long file_count(const char* db, const char* sql) {
  sqlite3* h;
  sqlite3_stmt* st;
  long long v = -1;
  assert_int_equal(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL),
                   SQLITE_OK);
  assert_int_equal(sqlite3_prepare_v2(h, sql, -1, &st, NULL), SQLITE_OK);
  if (sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(h);
  return v;
}

/* ", 'id1', 'id2', ...)" of the terminal's payouts (UUIDs: no quoting). */
static void file_ids(const char* db, char* out, size_t n) {
  sqlite3* h;
  sqlite3_stmt* st;
  size_t used = 0;
  assert_int_equal(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL),
                   SQLITE_OK);
  assert_int_equal(sqlite3_prepare_v2(h, "SELECT id FROM merchant_payout", -1,
                                      &st, NULL),
                   SQLITE_OK);
  while (sqlite3_step(st) == SQLITE_ROW) {
    used += (size_t)snprintf(out + used, n - used, ", '%s'",
                             (const char*)sqlite3_column_text(st, 0));
    assert_true(used < n);
  }
  snprintf(out + used, n - used, ")");
  sqlite3_finalize(st);
  sqlite3_close(h);
}

static void terminal_round(int t, int round, int online) {
  const char* bin = getenv("OB_BINARY_DIR");
  char db[600], nd[600], log[600];
  FILE* f;
  snprintf(db, sizeof db, "%s/till-%02d.db", g_dir, t);
  snprintf(nd, sizeof nd, "%s/till-%02d-%d.ndjson", g_dir, t, round);
  snprintf(log, sizeof log, "%s/till-%02d.log", g_dir, t);
  f = fopen(nd, "w");
  assert_non_null(f);
  /* This round's payments twice, and the last round's once more. */
  for (int copy = 0; copy < 2; copy++)
    for (int k = (round > 0 && copy == 0 ? round - 1 : round) * PER_ROUND;
         k < (round + 1) * PER_ROUND; k++) {
      char id[OB_UUID_BUFLEN], pay[OB_UUID_BUFLEN];
      payment_ids(t, k, id, pay);
      fprintf(f,
              "{\"id\":\"%s\",\"type\":\"PaymentCaptured\",\"body\":"
              "\"{\\\"paymentId\\\":\\\"%s\\\",\\\"merchantId\\\":"
              "\\\"3727331a-b533-4c6e-a0f8-48532237307b\\\","
              "\\\"amountInMinorUnits\\\":%d,\\\"currency\\\":\\\"EUR\\\"}\"}\n",
              id, pay, 100 + t * 10 + k);
    }
  assert_int_equal(fclose(f), 0);
  assert_int_equal(ts_sh("'%s/oncebox' --db '%s' --log-level warn enqueue"
                      " --ndjson '%s' 2>>'%s'", bin, db, nd, log), 0);
  assert_int_equal(ts_sh("'%s/oncebox' --db '%s' --log-level warn run"
                      " --until-idle 2>>'%s'", bin, db, log), 0);
  if (online) {
    assert_int_equal(ts_sh("AWS_ENDPOINT_URL_SQS=https://localhost:%d"
                        " ONCEBOX_SOURCE=" SOURCE_FMT " '%s/oncebox' --db '%s'"
                        " --log-level warn outbox drain --until-empty"
                        " --timeout 30 --outbox-queue-url '%s' 2>>'%s'",
                        g_srv.port, t, bin, db, g_url, log), 0);
  } else {
    /* Offline: nothing listens there. The drain gives up, keeping all. */
    assert_int_not_equal(ts_sh("AWS_ENDPOINT_URL_SQS=https://localhost:1"
                            " ONCEBOX_SOURCE=" SOURCE_FMT " '%s/oncebox'"
                            " --db '%s' --log-level error outbox drain"
                            " --until-empty --timeout 1"
                            " --outbox-queue-url '%s' 2>>'%s'",
                            t, bin, db, g_url, log), 0);
  }
}

/* ---- the head office: a consumer process on PostgreSQL --------------------- */

/* MerchantPayoutCreated from a terminal: book it. The UNIQUE on the payment
** is the ledger's own rule; the dedup record (by the event's source and
** id) keeps a redelivery from reaching it. */
static int book(ob_tx_t* tx, const ob_message_t* m, void* arg) {
  cJSON* p = cJSON_ParseWithLength(m->body, m->body_len);
  const cJSON* pay = cJSON_GetObjectItemCaseSensitive(p, "paymentId");
  const cJSON* payout = cJSON_GetObjectItemCaseSensitive(p, "payoutId");
  int rc;
  (void)arg;
  if (!cJSON_IsString(pay) || !cJSON_IsString(payout)) {
    cJSON_Delete(p);
    return OB_EINVAL;
  }
  {
    ob_value_t v[3] = {OB_VTEXT(pay->valuestring),
                       OB_VTEXT(payout->valuestring),
                       OB_VTEXT(m->source ? m->source : "")};
    rc = ob_tx_exec(tx,
                    "INSERT INTO payout_booking(payment_id, payout_id,"
                    " terminal) VALUES (?, ?, ?)",
                    v, 3, NULL, NULL);
  }
  cJSON_Delete(p);
  return rc < 0 ? rc : OB_DONE;
}

/* The head office's own table, the embedder's migration (the three
** consumers start at once: it is applied once, under oncebox's lock). */
static const ob_migration_t booking_schema[] = {
    {"head-office", 1,
     "CREATE TABLE payout_booking(payment_id TEXT PRIMARY KEY,"
     " payout_id TEXT NOT NULL UNIQUE, terminal TEXT NOT NULL)"}};

static volatile sig_atomic_t g_stop;
static void on_term(int sig) {
  (void)sig;
  g_stop = 1;
}

static pid_t start_consumer(const char* db, int i) {
  pid_t pid;
  fflush(NULL);
  pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    ob_options_t o;
    ob_consumer_options_t c;
    ob_engine_t* e = NULL;
    char err[512], logp[600];
    snprintf(logp, sizeof logp, "%s/office-%d.log", g_dir, i);
    if (freopen(logp, "a", stderr) == NULL) _exit(9);
    setvbuf(stderr, NULL, _IONBF, 0);
    signal(SIGTERM, on_term);
    ob_options_init(&o);
    o.db_path = db;
    o.poll_interval_ms = 50;
    o.migrations = booking_schema;
    o.nmigrations = 1;
    if (ob_open(&e, &o, err, sizeof err) != 0) {
      fprintf(stderr, "office %d: %s\n", i, err);
      _exit(2);
    }
    if (ob_register(e, OB_PAYOUT_EVENT_TYPE, "book-payout-v1", book, NULL) !=
        0)
      _exit(3);
    ob_consumer_options_init(&c);
    c.queue_url = g_url;
    c.prefetch = 10;
    c.wait_seconds = 1;
    c.visibility_timeout_s = 5;
    c.probe.base_ms = 200;
    c.probe.cap_ms = 1000;
    if (ob_consumer_enable(e, &c, err, sizeof err) != 0) {
      fprintf(stderr, "office %d: %s\n", i, err);
      _exit(4);
    }
    while (!g_stop) {
      /* Until idle, again and again: SIGTERM ends it between two runs. */
      int rc = ob_run(e, OB_RUN_UNTIL_IDLE, 0);
      if (rc != 0)
        fprintf(stderr, "office %d: ob_run: %s: %s\n", i, ob_err_name(rc),
                ob_errmsg(e));
      sleep_ms(100);
    }
    ob_close(e);
    _exit(0);
  }
  return pid;
}

static void stop_consumer(pid_t pid) {
  int st;
  assert_int_equal(kill(pid, SIGTERM), 0);
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* ---- the run ----------------------------------------------------------------- */

static void test_fleet(void** state) {
  char* office;
  pid_t cons[CONSUMERS];
  long long booked = 0;
  int total = TERMINALS * ROUNDS * PER_ROUND, killed = 0;
  (void)state;
  if (g_skip != NULL) {
    print_message("%s\n", g_skip);
    skip();
  }
  office = ts_backend_db(g_dir, "office");
  for (int i = 0; i < CONSUMERS; i++) cons[i] = start_consumer(office, i);

  for (int round = 0; round < ROUNDS; round++) {
    for (int t = 0; t < TERMINALS; t++) {
      /* A third of the tills are offline in a round (a different third
      ** each time); all are online in the last. */
      int online = round == ROUNDS - 1 || (t + round) % 3 != 0;
      terminal_round(t, round, online);
    }
    /* Mid-run, once the head office has booked its first events, the
    ** second consumer dies by SIGKILL (whatever it has in hand: received,
    ** handled, committed, not yet deleted) and is started again. */
    if (round == 1) {
      int st;
      for (int w = 0; w < 100 && ts_backend_count(office, "SELECT count(*)"
                                                  " FROM payout_booking") == 0;
           w++)
        sleep_ms(50);
      assert_int_equal(kill(cons[1], SIGKILL), 0);
      assert_int_equal(waitpid(cons[1], &st, 0), cons[1]);
      if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGKILL)
        fail_msg("consumer 1 had ended before the kill (status 0x%x)", st);
      killed = 1;
      cons[1] = start_consumer(office, 1);
    }
  }
  for (int w = 0; w < 1200 && booked < total; w++) {
    booked = ts_backend_count(office, "SELECT count(*) FROM payout_booking");
    if (booked < total) sleep_ms(50);
  }
  for (int i = 0; i < CONSUMERS; i++) stop_consumer(cons[i]);
  print_message("fleet: %d terminals, %d payments, %d booked at the head"
                " office by %d consumers (one SIGKILLed: %d)\n",
                TERMINALS, total, (int)booked, CONSUMERS, killed);

  /* Each terminal: one payout per payment, every event published. */
  for (int t = 0; t < TERMINALS; t++) {
    char db[600];
    snprintf(db, sizeof db, "%s/till-%02d.db", g_dir, t);
    assert_int_equal(file_count(db, "SELECT count(*) FROM merchant_payout"),
                     ROUNDS * PER_ROUND);
    assert_int_equal(file_count(db, "SELECT count(DISTINCT source_payment_id)"
                                    " FROM merchant_payout"),
                     ROUNDS * PER_ROUND);
    assert_int_equal(file_count(db, "SELECT count(*) FROM outbox_event"
                                    " WHERE published_at IS NULL"),
                     0);
  }
  /* The head office: each payment booked once, from its terminal's payout. */
  assert_int_equal(booked, total);
  assert_int_equal(ts_backend_count(office, "SELECT count(DISTINCT"
                                            " payment_id) FROM payout_booking"),
                   total);
  assert_int_equal(ts_backend_count(office, "SELECT count(DISTINCT terminal)"
                                            " FROM payout_booking"),
                   TERMINALS);
  assert_int_equal(ts_backend_count(office, "SELECT count(*) FROM"
                                            " failed_message"),
                   0);
  assert_int_equal(ct_queue_depth(&g_srv, g_url, NULL, NULL), 0);
  {
    ob_options_t o;
    ob_engine_t* e = NULL;
    char err[512];
    ob_options_init(&o);
    o.db_path = office;
    o.migrations = booking_schema;
    o.nmigrations = 1;
    assert_int_equal(ob_open(&e, &o, err, sizeof err), 0);
    assert_int_equal(ob_check(e, NULL, NULL), 0);
    ob_close(e);
  }
  for (int t = 0; t < TERMINALS; t++) {
    /* The payouts each terminal made are the ones booked, from it. */
    char db[600], q[4096];
    size_t n;
    snprintf(db, sizeof db, "%s/till-%02d.db", g_dir, t);
    n = (size_t)snprintf(q, sizeof q, "SELECT count(*) FROM payout_booking"
                         " WHERE terminal = '" SOURCE_FMT "' AND payout_id IN"
                         " ('-'", t);
    file_ids(db, q + n, sizeof q - n);
    assert_int_equal(ts_backend_count(office, q), ROUNDS * PER_ROUND);
  }
  free(office);
}

static int group_setup(void** state) {
  (void)state;
  g_skip = sq_skip_reason();
  if (g_skip != NULL) return 0;
  if (sq_server_start(&g_srv, "fleet", NULL) != 0) return -1;
  g_dir = ts_path(g_srv.dir, "fleet");
  mkdir(g_dir, 0700);
  rf_setenv(&g_srv);
  ct_set_env(&g_srv, g_dir);
  g_url = ct_new_queue(&g_srv, NULL);
  return 0;
}

static int group_teardown(void** state) {
  (void)state;
  if (g_skip != NULL) return 0;
  free(g_url);
  free(g_dir);
  sq_server_stop(&g_srv);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fleet),
  };
  /* The head office on PostgreSQL; the terminals' files are paths. */
  setenv("OB_TEST_BACKEND", "postgresql", 1);
  (void)ts_backend_is_pg();  /* exits 77 without PostgreSQL support */
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
