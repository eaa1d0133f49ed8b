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
#include "core/engine/engine_int.h"
#include "tests/support/pg_server.h"
#include "oncebox_charge.h"
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

/* The embedder's migrations (storage/schema_ext.c, as on SQLite): applied
** and recorded once; a database holding a newer step than the program
** gives, a failing step and a malformed list are refused, nothing of them
** committed. */
static void test_embedder_migrations(void** state) {
  static const ob_migration_t shop[] = {
      {"shop", 1, "CREATE TABLE stock (sku TEXT PRIMARY KEY, qty BIGINT);"
                  "INSERT INTO stock VALUES ('apple', 10)"},
      {"shop", 2, "ALTER TABLE stock ADD COLUMN price BIGINT"},
      {"shop", 3, "INSERT INTO no_such_table VALUES (1)"}};
  static const ob_migration_t gap[] = {{"shop", 1, "SELECT 1"},
                                       {"shop", 3, "SELECT 1"}};
  fixture_t* f = fx_new(1);
  char err[512];
  ob_engine_t* e2 = NULL;
  (void)state;
  f->opts.migrations = shop;
  for (int i = 0; i < 2; i++) {  /* the second time, nothing runs again */
    f->opts.nmigrations = 2;
    assert_int_equal(ob_open(&e2, &f->opts, err, sizeof err), 0);
    ob_close(e2);
    e2 = NULL;
  }
  assert_int_equal(fx_count(f, "SELECT count(*) FROM stock"), 1);
  assert_int_equal(fx_count(f, "SELECT max(version) FROM schema_migration"
                               " WHERE name = 'shop'"), 2);
  f->opts.nmigrations = 1;
  assert_int_equal(ob_open(&e2, &f->opts, err, sizeof err), OB_EVERSION);
  assert_non_null(strstr(err, "\"shop\" is at version 2"));
  f->opts.nmigrations = 3;
  assert_int_equal(ob_open(&e2, &f->opts, err, sizeof err), OB_EINVAL);
  assert_non_null(strstr(err, "migration shop 3 failed"));
  assert_non_null(strstr(err, "no_such_table"));
  f->opts.migrations = gap;
  f->opts.nmigrations = 2;
  assert_int_equal(ob_open(&e2, &f->opts, err, sizeof err), OB_EINVAL);
  assert_non_null(strstr(err, "expected 2"));
  assert_int_equal(fx_count(f, "SELECT count(*) FROM schema_migration"), 2);
  f->opts.migrations = NULL;
  f->opts.nmigrations = 0;
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

/* `oncebox demo --fleet` with its head office on PostgreSQL: 20 terminals
** on SQLite files offline and online, 3 consumers on this database, one
** SIGKILLed; the demo's own expectations all hold (it exits 0 only then),
** and the bookings are in the database, once each. */
static void test_demo_fleet(void** state) {
  char* db = ts_backend_db(NULL, "fleet");
  char cmd[2048], line[512];
  const char* bin = getenv("OB_BINARY_DIR");
  int holds = 0;
  FILE* p;
  (void)state;
  if (bin == NULL) skip();
  snprintf(cmd, sizeof cmd, "$OB_EMULATOR '%s/oncebox' --db '%s' demo --fleet"
           " 2>&1", bin, db);
  p = popen(cmd, "r");
  assert_non_null(p);
  while (fgets(line, sizeof line, p) != NULL) {
    fputs(line, stdout);
    if (strcmp(line, "every expectation holds\n") == 0) holds = 1;
  }
  assert_int_equal(pclose(p), 0);
  assert_true(holds);
  assert_int_equal(ts_backend_count(db, "SELECT count(DISTINCT payment_id)"
                                        " FROM payout_booking"),
                   320);
  assert_int_equal(ts_backend_count(db, "SELECT count(*) FROM"
                                        " payout_booking"),
                   320);
  free(db);
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

/* ---- leases on the server's clock ---------------------------------------
** Two head-office hosts on one database whose wall clocks disagree by an
** hour (one without NTP, or set by hand: what RELIABILITY.md's clock cases
** are on a terminal). Each host is an engine with a fake clock of its own;
** the database's clock is the server's real one. A lease must mean the
** same to both: live while its holder's time lasts on the server's clock,
** free after, whichever host asks. */

#define HOUR (3600LL * 1000)

/* A second host on f's database, its wall clock `skew` ms from f's. */
static fixture_t* fx_host(const fixture_t* f, int64_t skew, uint64_t seed) {
  fixture_t* h = calloc(1, sizeof *h);
  h->dir = ts_mkdtemp("host");
  h->db_path = strdup(f->db_path);
  fake_clock_init(&h->clock, ob_fake_clock_now(&f->clock) + skew, seed);
  ob_options_init(&h->opts);
  h->opts.db_path = h->db_path;
  h->opts.clock = &h->clock.clock;
  h->opts.batch_size = f->opts.batch_size;
  fx_open(h);
  return h;
}

static int64_t wall(fixture_t* f) {
  return ob_fake_clock_now(&f->clock);
}

static void test_relay_lease_on_server_clock(void** state) {
  fixture_t* b = fx_new(8);
  fixture_t* ahead = fx_host(b, +HOUR, 43);
  fixture_t* behind = fx_host(b, -HOUR, 44);
  ob__relay_row_t rows[4];
  int n;
  (void)state;

  assert_int_equal(ob_register_payout(b->e), 0);
  enqueue_payments(b, 1, 2, 1);
  assert_int_equal(fx_drain(b).handled, 2);
  /* b claims one row for 30 s. */
  n = ob__relay_claim(&b->e->db, "relay-b", wall(b), wall(b) + 30000, 1, 0,
                      NULL, 0, rows);
  assert_int_equal(n, 1);
  ob__relay_row_free(&rows[0]);
  /* A host an hour ahead must not take it: on its own clock the lease ran
  ** out an hour ago. It gets the other row only. */
  n = ob__relay_claim(&ahead->e->db, "relay-ahead", wall(ahead),
                      wall(ahead) + 30000, 4, 0, NULL, 0, rows);
  assert_int_equal(n, 1);
  for (int i = 0; i < n; i++) ob__relay_row_free(&rows[i]);
  assert_int_equal(fx_count(b, "SELECT count(*) FROM outbox_event WHERE"
                               " claim_token = 'relay-b'"), 1);
  assert_int_equal(fx_count(b, "SELECT count(*) FROM outbox_event WHERE"
                               " claim_token = 'relay-ahead'"), 1);
  /* Its next due time, on the asking host's clock, is within the lease. */
  {
    int64_t at = 0;
    assert_int_equal(ob__relay_next_due(&ahead->e->db, wall(ahead), 0, &at),
                     0);
    assert_true(at > wall(ahead) && at <= wall(ahead) + 30000);
  }
  /* The host an hour behind handles a payment: its row is due on its own
  ** clock (a due time stays the writing host's; only leases are the
  ** server's). b claims it for 300 ms, then dies. */
  assert_int_equal(ob_register_payout(behind->e), 0);
  enqueue_payments(behind, 3, 1, 1);
  assert_int_equal(fx_drain(behind).handled, 1);
  n = ob__relay_claim(&b->e->db, "relay-b2", wall(b), wall(b) + 300, 4, 0,
                      NULL, 0, rows);
  assert_int_equal(n, 1);
  ob__relay_row_free(&rows[0]);
  usleep(600 * 1000);
  /* A host an hour behind takes it once the 300 ms passed on the server,
  ** not an hour and 300 ms later. */
  n = ob__relay_claim(&behind->e->db, "relay-behind", wall(behind),
                      wall(behind) + 30000, 4, 0, NULL, 0, rows);
  assert_int_equal(n, 1);
  ob__relay_row_free(&rows[0]);
  fx_free(behind);
  fx_free(ahead);
  fx_free(b);
}

/* The fence: the provider is an in-process function; while host b's call
** is in flight (its lease held), the host an hour ahead performs too. */
typedef struct skew_provider_s {
  int calls;
  fixture_t* other;   /* performs from inside the first call */
  size_t other_settled;
} skew_provider_t;

static int skew_perform(void* arg, const ob_effect_call_t* c,
                        ob_effect_reply_t* r) {
  static char body[64];
  skew_provider_t* p = arg;
  fixture_t* other = p->other;
  p->calls++;
  if (other != NULL) {
    p->other = NULL;
    assert_int_equal(ob_effects_perform(other->e, skew_perform, p, 10,
                                        &p->other_settled), 0);
  }
  if (c->lookup) {
    r->status = 404;
    snprintf(body, sizeof body, "{}");
  } else {
    r->status = 200;
    snprintf(body, sizeof body, "{\"id\":\"ch_%d\"}", p->calls);
  }
  r->sent = 1;
  r->body = body;
  r->body_len = strlen(body);
  return 0;
}

static void reg_charge(fixture_t* f) {
  ob_provider_options_t o;
  ob_provider_options_init(&o);
  o.name = OB_CHARGE_PROVIDER;
  /* Keys and lookups, as Stripe's: a second host that took the lease
  ** would look the key up, find nothing (the first call is still in
  ** flight) and call again. */
  o.idempotency_keys = 1;
  o.lookup_path = OB_CHARGE_LOOKUP_PATH;
  assert_int_equal(ob_provider_register(f->e, &o), 0);
  assert_int_equal(ob_register_charge_order(f->e), 0);
}

static void test_effect_lease_on_server_clock(void** state) {
  fixture_t* b = fx_new(8);
  fixture_t* ahead = fx_host(b, +HOUR, 45);
  fixture_t* behind = fx_host(b, -HOUR, 46);
  skew_provider_t p = {0};
  char id[OB_UUID_BUFLEN];
  size_t settled = 0;
  (void)state;

  reg_charge(b);
  reg_charge(ahead);
  assert_int_equal(fx_enqueue(b, OB_CHARGE_MESSAGE_TYPE, fx_event(1, id),
                              "{\"orderId\":\"o-1\",\"amountInMinorUnits\":"
                              "500,\"currency\":\"EUR\"}"), 0);
  assert_int_equal(fx_drain(b).waiting, 1);
  p.other = ahead;
  assert_int_equal(ob_effects_perform(b->e, skew_perform, &p, 10, &settled),
                   0);
  /* One call reached the provider: the host ahead saw b's lease live and
  ** neither looked up nor called. */
  assert_int_equal(p.calls, 1);
  assert_int_equal(p.other_settled, 0);
  assert_int_equal(settled, 1);
  assert_int_equal(fx_count(b, "SELECT count(*) FROM charge"), 1);

  /* A lease whose holder died: free once its time passed on the server,
  ** for a host an hour behind too. */
  assert_int_equal(fx_enqueue(b, OB_CHARGE_MESSAGE_TYPE, fx_event(2, id),
                              "{\"orderId\":\"o-2\",\"amountInMinorUnits\":"
                              "700,\"currency\":\"EUR\"}"), 0);
  assert_int_equal(fx_drain(b).waiting, 1);
  assert_int_equal(ob__effect_lease(&b->e->db, "charge:o-2", "dead-b",
                                    wall(b) + 300, wall(b), 1, 0), 1);
  assert_int_equal(ob__effect_lease(&ahead->e->db, "charge:o-2", "ahead",
                                    wall(ahead) + 30000, wall(ahead), 1, 0),
                   0);
  usleep(600 * 1000);
  assert_int_equal(ob__effect_lease(&behind->e->db, "charge:o-2", "behind",
                                    wall(behind) + 30000, wall(behind), 1, 0),
                   1);
  /* Renewed by its holder on its own clock, it stays live for another. */
  assert_int_equal(ob__effect_lease_renew(&behind->e->db, "charge:o-2",
                                          "behind", wall(behind) + 30000,
                                          wall(behind)), 1);
  assert_int_equal(ob__effect_lease(&ahead->e->db, "charge:o-2", "ahead",
                                    wall(ahead) + 30000, wall(ahead), 1, 0),
                   0);
  fx_free(behind);
  fx_free(ahead);
  fx_free(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_duplicates_and_restart),
      cmocka_unit_test(test_duplicate_across_partitions),
      cmocka_unit_test(test_two_then_four_processes),
      cmocka_unit_test(test_newer_schema_refused),
      cmocka_unit_test(test_embedder_migrations),
      cmocka_unit_test(test_foreign_schema_refused),
      cmocka_unit_test(test_password_never_printed),
      cmocka_unit_test(test_failure_store_and_replay),
      cmocka_unit_test(test_handler_sql),
      cmocka_unit_test(test_stats_and_check),
      cmocka_unit_test(test_cli_stats),
      cmocka_unit_test(test_demo_fleet),
      cmocka_unit_test(test_retention_drops_whole_days),
      cmocka_unit_test(test_relay_lease_on_server_clock),
      cmocka_unit_test(test_effect_lease_on_server_clock),
  };
  setenv("OB_TEST_BACKEND", "postgresql", 1);
  (void)ts_backend_is_pg();  /* exits 77 without PostgreSQL support */
  return cmocka_run_group_tests(tests, NULL, NULL);
}
