/* SPDX-License-Identifier: Apache-2.0 */
/* The PostgreSQL backend (issue 20) on a real PostgreSQL 15 started by the
** test (support/pg_server.h through support/backend.h; no mocks): the
** payout path end to end with duplicates, two and then four processes on
** one database, a restart, a newer schema refused, the password never
** printed, a CA without verification refused, and what this version does
** not provide on PostgreSQL answering OB_ENOTSUP by name. Skipped (77)
** without the server programs. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine_fixture.h"
#include "tests/support/pg_server.h"
#include "oncebox_payout.h"

#define PAY OB_PAYOUT_MESSAGE_TYPE

/* Payments 1..n, each delivered `copies` times (the same event id). */
static void enqueue_payments(fixture_t* f, int from, int n, int copies) {
  char id[OB_UUID_BUFLEN], body[256];
  for (int c = 0; c < copies; c++)
    for (int i = from; i < from + n; i++)
      assert_int_equal(fx_enqueue(f, PAY, fx_event(i, id),
                                  fx_payment(i, body)), 0);
}

static void assert_one_payout_each(fixture_t* f, int n) {
  assert_int_equal(fx_count(f, "SELECT count(*) FROM merchant_payout"), n);
  assert_int_equal(fx_count(f, "SELECT count(DISTINCT source_payment_id)"
                               " FROM merchant_payout"), n);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM processed_message"), n);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM outbox_event WHERE"
                               " event_type = 'MerchantPayoutCreated'"), n);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM queue"), 0);
  /* Every payout has its event and vice versa (the seed's invariant). */
  assert_int_equal(fx_count(f, "SELECT count(*) FROM merchant_payout p WHERE"
                               " NOT EXISTS (SELECT 1 FROM outbox_event o"
                               " WHERE o.causation_id = p.source_event_id)"),
                   0);
}

static void test_duplicates_and_restart(void** state) {
  fixture_t* f = fx_new(16);
  ob_batch_result_t r;
  (void)state;
  assert_int_equal(ob_register_payout(f->e), 0);
  enqueue_payments(f, 1, 40, 3);
  r = fx_drain(f);
  assert_int_equal(r.claimed, 120);
  assert_int_equal(r.handled, 40);
  assert_int_equal(r.duplicates, 80);
  assert_one_payout_each(f, 40);
  /* After a restart the same events are still duplicates. */
  fx_reopen(f);
  assert_int_equal(ob_register_payout(f->e), 0);
  enqueue_payments(f, 1, 40, 1);
  r = fx_drain(f);
  assert_int_equal(r.handled, 0);
  assert_int_equal(r.duplicates, 40);
  assert_one_payout_each(f, 40);
  fx_free(f);
}

/* A dedup record from another day is in another partition: still seen. */
static void test_duplicate_across_partitions(void** state) {
  fixture_t* f = fx_new(1);
  ob_batch_result_t r;
  (void)state;
  assert_int_equal(ob_register_payout(f->e), 0);
  enqueue_payments(f, 1, 1, 1);
  r = fx_drain(f);
  assert_int_equal(r.handled, 1);
  fake_clock_advance(&f->clock, 2 * 86400000LL);
  enqueue_payments(f, 1, 1, 1);
  r = fx_drain(f);
  assert_int_equal(r.handled, 0);
  assert_int_equal(r.duplicates, 1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM merchant_payout"), 1);
  /* The two days are two partitions, made ahead at open. */
  assert_true(fx_count(f, "SELECT count(*) FROM pg_inherits WHERE"
                          " inhparent = 'processed_message'::regclass") >= 4);
  fx_free(f);
}

/* Workers drain the same database at once; each exits 0 when its drain
** succeeded. Forked before any connection of the parent is open. */
static void run_workers(fixture_t* f, int workers) {
  pid_t pids[8];
  ob_close(f->e);
  f->e = NULL;
  for (int w = 0; w < workers; w++) {
    pids[w] = fork();
    assert_true(pids[w] >= 0);
    if (pids[w] == 0) {
      ob_engine_t* e;
      ob_batch_result_t r;
      char err[512];
      int rc;
      /* Its own random source, as every real process has: forked with the
      ** parent's seeded fake clock, all workers would draw the same UUIDv7
      ** ids (the payout's id) and collide on merchant_payout's key. */
      fake_clock_init(&f->clock, f->clock.now, (uint64_t)getpid());
      f->opts.batch_size = 8;
      if (ob_open(&e, &f->opts, err, sizeof err) != 0) {
        fprintf(stderr, "worker %d: %s\n", w, err);
        _exit(3);
      }
      ob_register_payout(e);
      do {
        rc = ob_run_once(e, &r);
        /* Two processes claiming one key: the loser waits, never errs. */
        if (rc != 0) {
          fprintf(stderr, "worker %d: %s: %s\n", w, ob_strerror(rc),
                  ob_errmsg(e));
          _exit(4);
        }
      } while (r.claimed > 0);
      ob_close(e);
      _exit(0);
    }
  }
  for (int w = 0; w < workers; w++) {
    int st;
    assert_int_equal(waitpid(pids[w], &st, 0), pids[w]);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
  }
  fx_open(f);
}

static void test_two_then_four_processes(void** state) {
  fixture_t* f = fx_new(8);
  (void)state;
  assert_int_equal(ob_register_payout(f->e), 0);
  /* Each event twice, the copies far apart, so processes race on keys. */
  enqueue_payments(f, 1, 150, 2);
  run_workers(f, 2);
  assert_one_payout_each(f, 150);
  enqueue_payments(f, 151, 150, 2);
  enqueue_payments(f, 1, 20, 1);  /* old ones again */
  run_workers(f, 4);
  assert_one_payout_each(f, 300);
  fx_free(f);
}

static void test_newer_schema_refused(void** state) {
  fixture_t* f = fx_new(1);
  char err[512];
  ob_engine_t* e2 = NULL;
  (void)state;
  ts_backend_exec(f->db_path, "UPDATE oncebox_schema SET version = 99");
  assert_int_equal(ob_open(&e2, &f->opts, err, sizeof err), OB_EVERSION);
  assert_non_null(strstr(err, "newer"));
  ts_backend_exec(f->db_path, "UPDATE oncebox_schema SET version = 1");
  fx_free(f);
}

static void test_foreign_schema_refused(void** state) {
  fixture_t* f = fx_new(1);
  char err[512], other[1400];
  ob_engine_t* e2 = NULL;
  (void)state;
  /* A database with someone else's tables is not taken over. */
  ts_backend_exec(f->db_path, "CREATE SCHEMA elsewhere; CREATE TABLE"
                              " elsewhere.ledger(id int)");
  snprintf(other, sizeof other, "%s options='-csearch_path=elsewhere'",
           f->db_path);
  f->opts.db_path = other;
  assert_int_equal(ob_open(&e2, &f->opts, err, sizeof err), OB_ECORRUPT);
  assert_non_null(strstr(err, "not an oncebox schema"));
  f->opts.db_path = f->db_path;
  fx_free(f);
}

static void test_password_never_printed(void** state) {
  ob_options_t o;
  ob_engine_t* e = NULL;
  char err[512];
  (void)state;
  ob_options_init(&o);
  o.db_path = "host=/nonexistent-oncebox-dir port=1 dbname=x user=u"
              " password=s3cr3t-pw";
  assert_int_equal(ob_open(&e, &o, err, sizeof err), OB_EIO);
  assert_null(strstr(err, "s3cr3t"));
  assert_non_null(strstr(err, "cannot connect to PostgreSQL"));
  o.db_path = "postgresql://u:s3cr3t-pw@/x?host=/nonexistent-oncebox-dir";
  assert_int_equal(ob_open(&e, &o, err, sizeof err), OB_EIO);
  assert_null(strstr(err, "s3cr3t"));
  /* A CA next to a mode that would not use it is a mistake, refused. */
  o.db_path = "host=/nonexistent-oncebox-dir dbname=x sslmode=require"
              " sslrootcert=/etc/ssl/certs/ca-certificates.crt";
  assert_int_equal(ob_open(&e, &o, err, sizeof err), OB_EINVAL);
  assert_non_null(strstr(err, "verify-full"));
}

/* A handler that fails for good while *fail is set, else does nothing. */
static int flaky_handler(ob_tx_t* tx, const ob_message_t* m, void* arg) {
  int* fail = arg;
  (void)tx;
  (void)m;
  return *fail ? OB_UNRECOVERABLE : OB_DONE;
}

static int count_failed(void* arg, const ob_failed_t* fm) {
  int* n = arg;
  assert_non_null(strstr(fm->body, "orderId"));
  (*n)++;
  return 0;
}

/* Failure after the claim leaves no dedup record; replayed from the
** failure store it is handled once. A second capture of a paid payment is
** refused into the failure store, with the event that paid it. */
static void test_failure_store_and_replay(void** state) {
  fixture_t* f = fx_new(4);
  int fail = 1, n = 0;
  char id[OB_UUID_BUFLEN], body[256];
  ob_batch_result_t r;
  (void)state;
  assert_int_equal(ob_register(f->e, "Order", "orders", flaky_handler, &fail),
                   0);
  assert_int_equal(ob_register_payout(f->e), 0);
  assert_int_equal(fx_enqueue(f, "Order", fx_event(900, id),
                              "{\"orderId\":42}"), 0);
  r = fx_drain(f);
  assert_int_equal(r.failed, 1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM processed_message"), 0);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM queue"), 0);
  assert_int_equal(ob_failed_list(f->e, 0, NULL, count_failed, &n), 1);
  assert_int_equal(n, 1);
  fail = 0;
  assert_int_equal(ob_failed_retry(f->e, 0), 1);
  r = fx_drain(f);
  assert_int_equal(r.handled, 1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM failed_message"), 0);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM processed_message"), 1);
  assert_int_equal(ob_failed_retry(f->e, 12345), OB_ENOTFOUND);

  /* The same payment under a second event id. */
  assert_int_equal(fx_enqueue(f, PAY, fx_event(1, id), fx_payment(1, body)),
                   0);
  assert_int_equal(fx_enqueue(f, PAY, fx_event(2, id), fx_payment(1, body)),
                   0);
  r = fx_drain(f);
  assert_int_equal(r.handled, 1);
  assert_int_equal(r.failed, 1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM merchant_payout"), 1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM failed_message WHERE"
                               " error_class = 'unrecoverable' AND reason"
                               " LIKE '%0190b6d8-3ae7-7ca2-a653-000000000001%'"),
                   1);
  assert_int_equal(ob_failed_remove(f->e, 0), 1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM failed_message"), 0);
  fx_free(f);
}

static int read_row(void* arg, const ob_value_t* cols, size_t n) {
  ob_value_t* out = arg;
  for (size_t i = 0; i < n && i < 4; i++) out[i] = cols[i];
  out[3].i = (int64_t)n;  /* how many columns came (column 3 is text) */
  return 0;
}

/* Handler SQL with ? on PostgreSQL: the same rules as on SQLite
** (test_engine.c's test_handler_sql_rules), and what the rewrite keeps. */
static int pg_rules_handler(ob_tx_t* tx, const ob_message_t* m, void* arg) {
  int* result = arg;
  ob_value_t p[3], row[4];
  (void)m;
  assert_int_equal(ob_tx_exec(tx, "COMMIT", NULL, 0, NULL, NULL), OB_EINVAL);
  assert_int_equal(ob_tx_exec(tx, "  begin", NULL, 0, NULL, NULL), OB_EINVAL);
  assert_int_equal(ob_tx_exec(tx, "SAVEPOINT x", NULL, 0, NULL, NULL),
                   OB_EINVAL);
  assert_int_equal(ob_tx_exec(tx, "/* c */ SET synchronous_commit = off",
                              NULL, 0, NULL, NULL), OB_EINVAL);
  assert_int_equal(ob_tx_exec(tx, "SELECT 1; DELETE FROM queue", NULL, 0,
                              NULL, NULL), OB_EINVAL);
  assert_int_equal(ob_tx_exec(tx, "SELECT ?", NULL, 0, NULL, NULL),
                   OB_EINVAL);
  assert_int_equal(ob_tx_exec(tx, "SELEC nonsense", NULL, 0, NULL, NULL),
                   OB_EINVAL);
  assert_true(ob_tx_exec(tx, "CREATE TABLE IF NOT EXISTS u(k TEXT UNIQUE,"
                             " n BIGINT, b BYTEA)", NULL, 0, NULL, NULL) >= 0);
  p[0] = OB_VTEXT("k1");
  p[1] = OB_VINT(7);
  p[2] = OB_VBLOB("\0\1\2", 3);
  assert_int_equal(ob_tx_exec(tx, "INSERT INTO u(k, n, b) VALUES (?, ?, ?)",
                              p, 3, NULL, NULL), 1);
  /* A constraint violation undoes that statement only, as on SQLite. */
  assert_int_equal(ob_tx_exec(tx, "INSERT INTO u(k, n, b) VALUES (?, ?, ?)",
                              p, 3, NULL, NULL), OB_ECONSTRAINT);
  p[0] = OB_VTEXT("'); DROP TABLE queue;--");
  assert_int_equal(ob_tx_exec(tx, "INSERT INTO u(k, n, b) VALUES (?, ?, ?)",
                              p, 3, NULL, NULL), 1);
  /* ? in a literal, an identifier or a comment is not a placeholder. */
  p[0] = OB_VTEXT("k1");
  memset(row, 0, sizeof row);
  assert_int_equal(ob_tx_exec(tx, "SELECT n, b, '?' AS \"q?\", k /* ? */"
                              " FROM u WHERE k = ?1 -- ?", p, 1, read_row,
                              row), 0);
  assert_int_equal(row[3].i, 4);
  assert_int_equal(row[0].type, OB_TYPE_INT);
  assert_int_equal(row[0].i, 7);
  assert_int_equal(row[1].type, OB_TYPE_BLOB);
  assert_int_equal(row[1].n, 3);
  assert_int_equal(row[2].type, OB_TYPE_TEXT);
  assert_int_equal(row[3].type, OB_TYPE_TEXT);
  /* An integer column compared with a text value, converted as SQLite's
  ** affinity would. */
  p[0] = OB_VTEXT("7");
  assert_int_equal(ob_tx_exec(tx, "UPDATE u SET n = n + 1 WHERE n = ?", p, 1,
                              NULL, NULL), 2);
  *result = 1;
  return OB_DONE;
}

static void test_handler_sql(void** state) {
  fixture_t* f = fx_new(1);
  int result = 0;
  char id[OB_UUID_BUFLEN];
  ob_batch_result_t r;
  (void)state;
  assert_int_equal(ob_register(f->e, "Rules", "rules", pg_rules_handler,
                               &result), 0);
  assert_int_equal(fx_enqueue(f, "Rules", fx_event(1, id), "{}"), 0);
  r = fx_drain(f);
  assert_int_equal(result, 1);
  assert_int_equal(r.handled, 1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM u"), 2);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM u WHERE n = 8"), 2);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM u WHERE b = x'000102'"),
                   2);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM u WHERE k ="
                               " '''); DROP TABLE queue;--'"), 1);
  fx_free(f);
}

/* ob_stats and ob_check on PostgreSQL, with what a busy PostgreSQL needs
** watched: a transaction another session holds open is seen by its age;
** deleted rows are dead tuples until vacuumed. */
static void test_stats_and_check(void** state) {
  fixture_t* f = fx_new(8);
  ob_stats_t st;
  ob_payout_stats_t ps;
  PGconn* idle;
  PGresult* r;
  (void)state;
  assert_int_equal(ob_register_payout(f->e), 0);
  enqueue_payments(f, 1, 10, 2);
  assert_int_equal(ob_stats(f->e, &st), 0);
  assert_int_equal(st.queue_ready, 20);
  fx_drain(f);
  assert_int_equal(ob_stats(f->e, &st), 0);
  assert_int_equal(st.queue_ready, 0);
  assert_int_equal(st.processed, 10);
  assert_int_equal(st.outbox_unpublished, 10);
  assert_true(st.db_bytes > 0);
  assert_int_equal(ob_payout_stats(f->e, &ps), 0);
  assert_int_equal(ps.payouts, 10);
  assert_int_equal(ob_check(f->e, NULL, NULL), 0);
  /* A session left idle in a transaction (a forgotten BEGIN in psql). */
  idle = pg_connect_or_die(f->db_path);
  r = PQexec(idle, "BEGIN; SELECT txid_current(); SELECT pg_sleep(0.3)");
  PQclear(r);
  assert_int_equal(ob_stats(f->e, &st), 0);
  assert_true(st.db_oldest_xact_age_ms >= 250);
  PQclear(PQexec(idle, "ROLLBACK"));
  PQfinish(idle);
  /* The 20 queue rows the engine deleted are dead until vacuumed. A
  ** backend reports its counts to the statistics when idle, at most once a
  ** second: wait for them (up to 10 s), then check. */
  for (int i = 0; i < 100; i++) {
    assert_int_equal(ob_stats(f->e, &st), 0);
    if (st.db_dead_tuples >= 20) break;
    usleep(100 * 1000);
  }
  assert_true(st.db_dead_tuples >= 20);
  /* A violation check finds: a second outbox row for a payout. */
  ts_backend_exec(f->db_path, "INSERT INTO outbox_event SELECT"
                              " id || 'x', causation_id, event_type,"
                              " aggregate_id, payload, created_at FROM"
                              " outbox_event LIMIT 1");
  assert_int_equal(ob_check(f->e, NULL, NULL), 1);
  fx_free(f);
}

/* `oncebox stats` on PostgreSQL: the figures, and in the Prometheus form
** the oldest-transaction and dead-tuple gauges (absent on SQLite). */
static void test_cli_stats(void** state) {
  fixture_t* f = fx_new(8);
  char cmd[2048], line[512];
  const char* bin = getenv("OB_BINARY_DIR");
  int seen_age = 0, seen_dead = 0, seen_processed = 0;
  FILE* p;
  (void)state;
  if (bin == NULL) skip();
  assert_int_equal(ob_register_payout(f->e), 0);
  enqueue_payments(f, 1, 3, 1);
  fx_drain(f);
  snprintf(cmd, sizeof cmd, "$OB_EMULATOR '%s/oncebox' --db '%s' stats"
           " --prometheus 2>&1", bin, f->db_path);
  p = popen(cmd, "r");
  assert_non_null(p);
  while (fgets(line, sizeof line, p) != NULL) {
    if (strncmp(line, "oncebox_db_oldest_transaction_age_seconds ", 42) == 0)
      seen_age = 1;
    if (strncmp(line, "oncebox_db_dead_tuples ", 23) == 0) seen_dead = 1;
    if (strcmp(line, "oncebox_dedup_records 3\n") == 0) seen_processed = 1;
  }
  assert_int_equal(pclose(p), 0);
  assert_true(seen_age && seen_dead && seen_processed);
  fx_free(f);
}


static long long partitions_of(fixture_t* f, const char* table) {
  char sql[256];
  snprintf(sql, sizeof sql, "SELECT count(*) FROM pg_inherits WHERE"
           " inhparent = '%s'::regclass", table);
  return fx_count(f, sql);
}

/* Retention drops whole days (pg_retention.c): the dedup records of a day
** older than the window go with their partition; the ledger stays; an
** outbox day that still holds an unpublished event stays whole. */
static void test_retention_drops_whole_days(void** state) {
  fixture_t* f = fx_new(8);
  int64_t deleted = -1;
  long long pm_before, ob_before;
  (void)state;
  assert_int_equal(ob_register_payout(f->e), 0);
  enqueue_payments(f, 1, 3, 1);
  assert_int_equal(fx_drain(f).handled, 3);
  /* Three days on, with a one-day window. */
  fake_clock_advance(&f->clock, 3 * 86400000LL);
  f->opts.retention_ms = 86400000LL;
  fx_reopen(f);
  assert_int_equal(ob_register_payout(f->e), 0);
  enqueue_payments(f, 4, 2, 1);
  assert_int_equal(fx_drain(f).handled, 2);
  pm_before = partitions_of(f, "processed_message");
  ob_before = partitions_of(f, "outbox_event");
  assert_int_equal(ob_gc(f->e, &deleted), 0);
  assert_true(deleted >= 0);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM processed_message"), 2);
  assert_true(partitions_of(f, "processed_message") < pm_before);
  /* Nothing was published (no relay here): every event stays, and so does
  ** the partition of the day that holds them. */
  assert_int_equal(fx_count(f, "SELECT count(*) FROM outbox_event"), 5);
  assert_true(partitions_of(f, "outbox_event") <= ob_before);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM merchant_payout"), 5);
  /* Inside the window a duplicate is still one. */
  enqueue_payments(f, 4, 2, 1);
  assert_int_equal(fx_drain(f).duplicates, 2);
  assert_int_equal(ob_check(f->e, NULL, NULL), 0);
  fx_free(f);
}


static void test_not_yet_provided(void** state) {
  fixture_t* f = fx_new(1);
  (void)state;
  assert_int_equal(ob_failed_count(f->e, NULL), 0);
  assert_int_equal(ob_outbox_retry_parked(f->e), OB_ENOTSUP);
  assert_non_null(strstr(ob_errmsg(f->e), "ob__relay_retry_parked"));
  assert_non_null(strstr(ob_errmsg(f->e), "postgresql"));
  fx_free(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_duplicates_and_restart),
      cmocka_unit_test(test_duplicate_across_partitions),
      cmocka_unit_test(test_two_then_four_processes),
      cmocka_unit_test(test_newer_schema_refused),
      cmocka_unit_test(test_foreign_schema_refused),
      cmocka_unit_test(test_password_never_printed),
      cmocka_unit_test(test_failure_store_and_replay),
      cmocka_unit_test(test_handler_sql),
      cmocka_unit_test(test_stats_and_check),
      cmocka_unit_test(test_cli_stats),
      cmocka_unit_test(test_retention_drops_whole_days),
      cmocka_unit_test(test_not_yet_provided),
  };
  setenv("OB_TEST_BACKEND", "postgresql", 1);
  (void)ts_backend_is_pg();  /* exits 77 without PostgreSQL support */
  return cmocka_run_group_tests(tests, NULL, NULL);
}
