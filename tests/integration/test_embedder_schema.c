/* SPDX-License-Identifier: Apache-2.0 */
/* The embedder's schema (issue 16, item 4): its migrations applied by
** ob_open in oncebox's own transaction and recorded in schema_migration,
** its tables written by its handlers next to the built-in modules' in one
** transaction, and its own transactions outside handlers (ob_read,
** ob_write). */
#include <sys/wait.h>
#include <unistd.h>

#include "oncebox_payout.h"
#include "storage/store.h"
#include "tests/integration/engine_fixture.h"

#define PAY OB_PAYOUT_MESSAGE_TYPE

/* The engine of the running test (ob_tx_t is opaque). */
static ob_engine_t* g_e;

static const ob_migration_t shop[] = {
    {"shop", 1,
     "CREATE TABLE stock (sku TEXT PRIMARY KEY, qty INTEGER NOT NULL) STRICT;"
     "INSERT INTO stock VALUES ('apple', 10);"},
    {"shop", 2,
     "CREATE TABLE ledger (payment_id TEXT PRIMARY KEY,"
     " amount_minor INTEGER NOT NULL) STRICT;"
     "PRAGMA table_info(ledger);"},
    {"shop", 3, "ALTER TABLE stock ADD COLUMN price_minor INTEGER;"},
};

/* A directory and options, no engine yet: the first ob_open is the test's. */
static fixture_t* fx_blank(const ob_migration_t* m, size_t n) {
  fixture_t* f = calloc(1, sizeof *f);
  f->dir = ts_mkdtemp("embedder");
  f->db_path = ts_path(f->dir, "t.db");
  fake_clock_init(&f->clock, FX_T0, 42);
  ob_options_init(&f->opts);
  f->opts.db_path = f->db_path;
  f->opts.clock = &f->clock.clock;
  f->opts.migrations = m;
  f->opts.nmigrations = n;
  return f;
}

static int try_open(fixture_t* f, const ob_migration_t* m, size_t n,
                    char* err, size_t errlen) {
  ob_close(f->e);
  f->e = NULL;
  f->opts.migrations = m;
  f->opts.nmigrations = n;
  err[0] = '\0';
  return ob_open(&f->e, &f->opts, err, errlen);
}

/* A new file: oncebox's schema and the embedder's in one go, recorded. */
static void test_migrations_applied(void** state) {
  fixture_t* f = fx_blank(shop, 2);
  (void)state;
  fx_open(f);
  assert_int_equal(fx_count(f, "PRAGMA user_version"), OB__SCHEMA_VERSION);
  assert_int_equal(fx_count(f, "SELECT qty FROM stock WHERE sku = 'apple'"),
                   10);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM ledger"), 0);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM schema_migration WHERE"
                               " name = 'shop' AND applied_at = 1796083200000"),
                   2);
  assert_int_equal(fx_count(f, "SELECT max(version) FROM schema_migration"), 2);
  /* Reopened with the same list: nothing runs again (step 1's INSERT would
  ** fail on the primary key). */
  fx_reopen(f);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM stock"), 1);
  fx_free(f);
}

/* One more step: only it runs. Fewer: refused, the file untouched. */
static void test_reopen_more_and_fewer(void** state) {
  fixture_t* f = fx_blank(shop, 2);
  char err[512];
  (void)state;
  fx_open(f);
  assert_int_equal(try_open(f, shop, 3, err, sizeof err), 0);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM stock"), 1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM pragma_table_info('stock')"
                               " WHERE name = 'price_minor'"),
                   1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM schema_migration"), 3);

  assert_int_equal(try_open(f, shop, 1, err, sizeof err), OB_EVERSION);
  assert_null(f->e);
  assert_non_null(strstr(err, "\"shop\""));
  assert_non_null(strstr(err, "version 3"));
  assert_non_null(strstr(err, "(1)"));
  /* Without migrations the embedder's versions are not checked. */
  assert_int_equal(try_open(f, NULL, 0, err, sizeof err), 0);
  /* Another name next to it: applied, shop left alone. */
  {
    static const ob_migration_t two[] = {
        {"shop", 1, "SELECT 1"}, {"shop", 2, "SELECT 1"},
        {"shop", 3, "SELECT 1"}, {"audit", 1, "CREATE TABLE audit (x INT)"}};
    assert_int_equal(try_open(f, two, 4, err, sizeof err), 0);
    assert_int_equal(fx_count(f, "SELECT count(*) FROM schema_migration"), 4);
  }
  fx_free(f);
}

/* A failing step: nothing committed, not even oncebox's schema; errbuf
** names the step and carries SQLite's message. */
static void test_failing_migration(void** state) {
  static const ob_migration_t bad[] = {
      {"shop", 1, "CREATE TABLE stock (sku TEXT PRIMARY KEY) STRICT;"},
      {"shop", 2, "INSERT INTO no_such_table VALUES (1);"},
  };
  fixture_t* f = fx_blank(bad, 2);
  char err[512];
  (void)state;
  assert_int_equal(try_open(f, bad, 2, err, sizeof err), OB_EINVAL);
  assert_null(f->e);
  assert_non_null(strstr(err, "migration shop 2"));
  assert_non_null(strstr(err, "no such table: no_such_table"));
  assert_int_equal(fx_count(f, "SELECT count(*) FROM sqlite_schema"), 0);
  assert_int_equal(fx_count(f, "PRAGMA user_version"), 0);
  assert_int_equal(fx_count(f, "PRAGMA application_id"), 0);

  /* Refused statements: transaction control, ATTACH, identity pragmas. */
  {
    static const char* const refused[] = {
        "COMMIT", "SAVEPOINT x", "ATTACH ':memory:' AS other",
        "PRAGMA user_version = 7", "PRAGMA application_id = 1",
        "PRAGMA synchronous = OFF", "PRAGMA foreign_keys = OFF",
        "PRAGMA journal_mode = DELETE", "PRAGMA writable_schema = 1",
        "DROP TABLE queue", "DELETE FROM processed_message",
        "INSERT INTO schema_migration VALUES ('shop', 9, 0)",
        "ALTER TABLE outbox_event ADD COLUMN x INT",
        "CREATE INDEX mine ON queue(type)",
        "CREATE TRIGGER t AFTER INSERT ON outbox_event BEGIN SELECT 1; END"};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
      ob_migration_t m = {"shop", 1, refused[i]};
      assert_int_equal(try_open(f, &m, 1, err, sizeof err), OB_EINVAL);
      assert_non_null(strstr(err, "migration shop 1"));
      assert_int_equal(fx_count(f, "SELECT count(*) FROM sqlite_schema"), 0);
    }
  }
  /* A malformed list. */
  {
    ob_migration_t gap[] = {{"shop", 1, "SELECT 1"}, {"shop", 3, "SELECT 1"}};
    ob_migration_t noname = {"", 1, "SELECT 1"};
    assert_int_equal(try_open(f, gap, 2, err, sizeof err), OB_EINVAL);
    assert_non_null(strstr(err, "expected 2"));
    assert_int_equal(try_open(f, &noname, 1, err, sizeof err), OB_EINVAL);
  }
  /* The same on an existing oncebox file: its schema stays as it was. */
  assert_int_equal(try_open(f, bad, 1, err, sizeof err), 0);
  assert_int_equal(try_open(f, bad, 2, err, sizeof err), OB_EINVAL);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM schema_migration"), 1);
  fx_free(f);
}

/* The list of oncebox's own tables the migrations' authorizer protects is
** exactly the set a new file holds. */
static void test_own_tables(void** state) {
  fixture_t* f = fx_blank(NULL, 0);
  sqlite3* db;
  sqlite3_stmt* st;
  int n = 0;
  (void)state;
  fx_open(f);
  assert_int_equal(sqlite3_open(f->db_path, &db), SQLITE_OK);
  assert_int_equal(sqlite3_prepare_v2(db, "SELECT name FROM sqlite_schema"
                                          " WHERE type = 'table'",
                                      -1, &st, NULL),
                   SQLITE_OK);
  while (sqlite3_step(st) == SQLITE_ROW) {
    const char* name = (const char*)sqlite3_column_text(st, 0);
    if (!ob__schema_is_own_table(name)) fail_msg("not in the list: %s", name);
    n++;
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  assert_int_equal(n, 13);  /* no module's table: those are the modules' */
  assert_false(ob__schema_is_own_table("stock"));
  fx_free(f);
}

/* A file with tables of its own and no oncebox identity: refused unless
** the caller adopts it. */
static void test_adopt_existing(void** state) {
  fixture_t* f = fx_blank(shop, 1);
  sqlite3* db;
  char err[512];
  (void)state;
  assert_int_equal(sqlite3_open(f->db_path, &db), SQLITE_OK);
  assert_int_equal(sqlite3_exec(db, "CREATE TABLE legacy (x INT);"
                                    "INSERT INTO legacy VALUES (5);",
                                NULL, NULL, NULL),
                   SQLITE_OK);
  sqlite3_close(db);
  assert_int_equal(try_open(f, shop, 1, err, sizeof err), OB_ECORRUPT);
  assert_non_null(strstr(err, "not an oncebox database"));
  assert_int_equal(fx_count(f, "PRAGMA user_version"), 0);
  f->opts.adopt_existing = 1;
  assert_int_equal(try_open(f, shop, 1, err, sizeof err), 0);
  assert_int_equal(fx_count(f, "SELECT x FROM legacy"), 5);
  assert_int_equal(fx_count(f, "SELECT qty FROM stock"), 10);
  assert_int_equal(fx_count(f, "PRAGMA user_version"), OB__SCHEMA_VERSION);
  f->opts.adopt_existing = 0;  /* now ours: no opt-in needed */
  assert_int_equal(try_open(f, shop, 1, err, sizeof err), 0);
  fx_free(f);
}

/* The embedder's handler writes its ledger next to the payout module's
** merchant_payout: one transaction, one file. */
static int ledger_handler(ob_tx_t* tx, const ob_message_t* m, void* arg) {
  ob_value_t p[2];
  int fail = *(int*)arg;
  p[0] = OB_VTEXT(m->id);
  p[1] = OB_VINT(12500);
  if (ob_tx_exec(tx, "INSERT INTO ledger VALUES (?, ?)", p, 2, NULL, NULL) !=
      1)
    return ob_tx_fail(tx, "ledger insert");
  return fail ? ob_tx_fail(tx, "ledger says no") : OB_DONE;
}

static void test_handler_with_payout(void** state) {
  fixture_t* f = fx_blank(shop, 2);
  char id[OB_UUID_BUFLEN], body[256];
  int fail = 0;
  ob_batch_result_t r;
  (void)state;
  fx_open(f);
  assert_int_equal(ob_register_payout(f->e), 0);
  assert_int_equal(ob_register(f->e, PAY, "shop-ledger", ledger_handler, &fail),
                   0);
  assert_int_equal(fx_enqueue(f, PAY, fx_event(1, id), fx_payment(1, body)), 0);
  r = fx_drain(f);
  assert_int_equal(r.handled, 1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM ledger"), 1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM merchant_payout"), 1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM processed_message"), 2);

  fail = 1;
  assert_int_equal(fx_enqueue(f, PAY, fx_event(2, id), fx_payment(2, body)), 0);
  r = fx_drain(f);
  assert_int_equal(r.failed, 1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM ledger"), 1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM merchant_payout"), 1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM outbox_event"), 1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM failed_message"), 1);
  fx_free(f);
}

/* ---- ob_read / ob_write -------------------------------------------------- */

typedef struct {
  int ret;             /* what fn returns */
  const char* sql;     /* run with no parameters */
  int exec_rc;
  int emit_rc;
  int nested_rc;
  int retry_rc;
  int emit;
  char event_id[OB_UUID_BUFLEN];
} wr_t;

static int nop_fn(ob_tx_t* tx, void* arg) {
  (void)tx;
  (void)arg;
  return 0;
}

static int wr_fn(ob_tx_t* tx, void* arg) {
  wr_t* w = arg;
  w->exec_rc = ob_tx_exec(tx, w->sql, NULL, 0, NULL, NULL);
  if (w->emit)
    w->emit_rc = ob_tx_emit(tx, "StockChanged", "apple", "{\"qty\":9}", 9,
                            w->event_id);
  w->nested_rc = ob_read(g_e, nop_fn, NULL);
  w->retry_rc = ob_tx_retry(tx, 0, "no");
  return w->ret;
}

static int in_handler_rc = 1;
static int write_in_handler(ob_tx_t* tx, const ob_message_t* m, void* arg) {
  (void)m;
  (void)arg;
  (void)tx;
  in_handler_rc = ob_write(g_e, nop_fn, NULL);
  return OB_DONE;
}

static void test_write_and_read(void** state) {
  fixture_t* f = fx_blank(shop, 2);
  wr_t w;
  char id[OB_UUID_BUFLEN];
  (void)state;
  fx_open(f);
  g_e = f->e;

  /* Commit, with an event: its causation_id is the write's own id. */
  memset(&w, 0, sizeof w);
  w.sql = "UPDATE stock SET qty = 9 WHERE sku = 'apple'";
  w.emit = 1;
  assert_int_equal(ob_write(f->e, wr_fn, &w), 0);
  assert_int_equal(w.exec_rc, 1);
  assert_int_equal(w.emit_rc, 0);
  assert_int_equal(w.nested_rc, OB_ESTATE);
  assert_int_equal(w.retry_rc, OB_ESTATE);
  assert_int_equal(fx_count(f, "SELECT qty FROM stock"), 9);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM outbox_event WHERE"
                               " event_type = 'StockChanged' AND"
                               " length(causation_id) = 36 AND"
                               " causation_id <> id"),
                   1);
  assert_true(ob_uuid_valid(w.event_id));

  /* Roll back: fn's value is returned, nothing applied. */
  memset(&w, 0, sizeof w);
  w.sql = "UPDATE stock SET qty = 1";
  w.emit = 1;
  w.ret = 7;
  assert_int_equal(ob_write(f->e, wr_fn, &w), 7);
  assert_int_equal(w.exec_rc, 1);
  assert_int_equal(fx_count(f, "SELECT qty FROM stock"), 9);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM outbox_event"), 1);

  /* PRAGMA and transaction control refused, as in handlers. */
  memset(&w, 0, sizeof w);
  w.sql = "PRAGMA synchronous = OFF";
  assert_int_equal(ob_write(f->e, wr_fn, &w), 0);
  assert_int_equal(w.exec_rc, OB_EINVAL);
  w.sql = "COMMIT";
  assert_int_equal(ob_write(f->e, wr_fn, &w), 0);
  assert_int_equal(w.exec_rc, OB_EINVAL);

  /* A read: sees the data, refuses writes and events. */
  memset(&w, 0, sizeof w);
  w.sql = "SELECT qty FROM stock";
  assert_int_equal(ob_read(f->e, wr_fn, &w), 0);
  assert_int_equal(w.exec_rc, 0);
  assert_int_equal(w.nested_rc, 0);  /* a read in a read joins it */
  w.sql = "DELETE FROM stock";
  w.emit = 1;
  assert_int_equal(ob_read(f->e, wr_fn, &w), 0);
  assert_int_equal(w.exec_rc, OB_EINVAL);
  assert_int_equal(w.emit_rc, OB_EINVAL);
  assert_non_null(strstr(ob_errmsg(f->e), "ob_read"));
  assert_int_equal(fx_count(f, "SELECT count(*) FROM stock"), 1);

  assert_int_equal(ob_read(NULL, nop_fn, NULL), OB_EINVAL);
  assert_int_equal(ob_write(f->e, NULL, NULL), OB_EINVAL);

  /* Inside a handler: refused. */
  assert_int_equal(ob_register(f->e, "T", "c", write_in_handler, NULL), 0);
  assert_int_equal(fx_enqueue(f, "T", fx_event(3, id), "{}"), 0);
  fx_drain(f);
  assert_int_equal(in_handler_rc, OB_ESTATE);
  fx_free(f);
}

/* Statistics inside an ob_read read its snapshot (what `oncebox stats`
** relies on for one consistent report): a message another connection
** enqueues between two calls is not seen until the read ends. */
typedef struct {
  ob_engine_t* other;
  ob_stats_t before, after;
  ob_payout_stats_t ps;
  int rc[4];
} snap_t;

static int snap_fn(ob_tx_t* tx, void* arg) {
  snap_t* sn = arg;
  ob_envelope_t env;
  char id[OB_UUID_BUFLEN];
  (void)tx;
  sn->rc[0] = ob_stats(g_e, &sn->before);
  memset(&env, 0, sizeof env);
  env.type = "T";
  env.id = fx_event(77, id);
  env.body = "{}";
  env.body_len = 2;
  sn->rc[1] = ob_enqueue(sn->other, &env);
  sn->rc[2] = ob_stats(g_e, &sn->after);
  sn->rc[3] = ob_payout_stats(g_e, &sn->ps);
  return 0;
}

static void test_stats_in_read(void** state) {
  fixture_t* f = fx_blank(shop, 2);
  snap_t sn;
  ob_stats_t s;
  char err[512];
  (void)state;
  fx_open(f);
  g_e = f->e;
  assert_int_equal(ob_register_payout(f->e), 0);
  memset(&sn, 0, sizeof sn);
  assert_int_equal(ob_open(&sn.other, &f->opts, err, sizeof err), 0);
  assert_int_equal(ob_read(f->e, snap_fn, &sn), 0);
  assert_int_equal(sn.rc[0], 0);
  assert_int_equal(sn.rc[1], 0);
  assert_int_equal(sn.rc[2], 0);
  assert_int_equal(sn.rc[3], 0);
  assert_int_equal(sn.before.queue_ready, 0);
  assert_int_equal(sn.after.queue_ready, 0);  /* the read's snapshot */
  /* The read ended: the next ob_stats is a read of its own and sees it. */
  assert_int_equal(ob_stats(f->e, &s), 0);
  assert_int_equal(s.queue_ready, 1);
  ob_close(sn.other);
  fx_free(f);
}

/* Several processes open one new file at once (a terminal's services
** started together): each open succeeds and the steps run once. The
** children wait on a pipe so that they really start together, and the
** rounds repeat it: the windows (the WAL switch's lock upgrade, the
** identity read) are microseconds wide. */
#define OPENERS 4
#define ROUNDS 25
static void test_processes_at_once(void** state) {
  static const ob_migration_t once[] = {
      {"shop", 1,
       "CREATE TABLE runs (n INTEGER) STRICT; INSERT INTO runs VALUES (1);"},
  };
  (void)state;
  for (int round = 0; round < ROUNDS; round++) {
    fixture_t* f = fx_blank(once, 1);
    pid_t pid[OPENERS];
    int go[2];
    assert_int_equal(pipe(go), 0);
    for (int i = 0; i < OPENERS; i++) {
      pid[i] = fork();
      assert_true(pid[i] >= 0);
      if (pid[i] == 0) {
        ob_engine_t* e = NULL;
        char err[256], c;
        int rc;
        close(go[1]);
        if (read(go[0], &c, 1) < 0) _exit(2);  /* EOF: all start */
        rc = ob_open(&e, &f->opts, err, sizeof err);
        /* The parent sees only the exit code: say why. */
        if (rc != 0)
          fprintf(stderr, "round %d child %d: %s: %s\n", round, i,
                  ob_strerror(rc), err);
        ob_close(e);
        _exit(rc == 0 ? 0 : 1);
      }
    }
    close(go[0]);
    close(go[1]);
    for (int i = 0; i < OPENERS; i++) {
      int st;
      assert_int_equal(waitpid(pid[i], &st, 0), pid[i]);
      assert_true(WIFEXITED(st));
      assert_int_equal(WEXITSTATUS(st), 0);
    }
    assert_int_equal(fx_count(f, "SELECT count(*) FROM runs"), 1);
    assert_int_equal(fx_count(f, "SELECT count(*) FROM schema_migration"), 1);
    fx_free(f);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_migrations_applied),
      cmocka_unit_test(test_reopen_more_and_fewer),
      cmocka_unit_test(test_failing_migration),
      cmocka_unit_test(test_own_tables),
      cmocka_unit_test(test_adopt_existing),
      cmocka_unit_test(test_handler_with_payout),
      cmocka_unit_test(test_write_and_read),
      cmocka_unit_test(test_stats_in_read),
      cmocka_unit_test(test_processes_at_once),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
