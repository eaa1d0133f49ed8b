/* SPDX-License-Identifier: Apache-2.0 */
/* Opening, permissions, schema versions, full disk, retention, the invariant
** check: on real files. */
#include "tests/integration/engine_fixture.h"
#include "oncebox_charge.h"
#include "oncebox_payout.h"

#include "core/engine/engine_int.h"
#include "core/relay/relay_tx.h"
#include "storage/store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#define PAY OB_PAYOUT_MESSAGE_TYPE

/* A case about SQLite itself (its file, pragmas, schema versions, raw
** edits through sqlite3): storage_pg, the same suite on PostgreSQL, skips
** it, saying why. */
#define SQLITE_ONLY(why)                                                    \
  do {                                                                      \
    if (ts_backend_is_pg()) {                                               \
      print_message("skipped on postgresql: %s\n", why);                   \
      skip();                                                               \
    }                                                                       \
  } while (0)
#define ABOUT_SQLITE "about the SQLite file itself"

static int mode_of(const char* path) {
  struct stat st;
  if (stat(path, &st) != 0) return -1;
  return (int)(st.st_mode & 0777);
}

/* db, -wal and -shm are 0600 whatever the umask. */
static void check_modes_under_umask(mode_t mask) {
  mode_t old = umask(mask);
  fixture_t* f = fx_new(1);
  char id[OB_UUID_BUFLEN], body[256], *wal, *shm;
  ob_register_payout(f->e);
  fx_enqueue(f, PAY, fx_event(1, id), fx_payment(1, body));
  fx_drain(f);
  wal = ts_path(f->dir, "t.db-wal");
  shm = ts_path(f->dir, "t.db-shm");
  assert_int_equal(mode_of(f->db_path), 0600);
  assert_int_equal(mode_of(wal), 0600);
  assert_int_equal(mode_of(shm), 0600);
  free(wal);
  free(shm);
  fx_free(f);
  umask(old);
}

static void test_file_modes(void** state) {
  SQLITE_ONLY(ABOUT_SQLITE);
  (void)state;
  check_modes_under_umask(022);
  check_modes_under_umask(000);
}

static void test_pragmas_in_effect(void** state) {
  SQLITE_ONLY(ABOUT_SQLITE);
  fixture_t* f = fx_new(1);
  (void)state;
  assert_int_equal(fx_count(f, "SELECT count(*) FROM pragma_journal_mode WHERE"
                               " journal_mode = 'wal'"),
                   1);
  assert_int_equal(fx_count(f, "PRAGMA user_version"), OB__SCHEMA_VERSION);
  assert_int_equal(fx_count(f, "PRAGMA application_id"), 0x4f425831);
  /* STRICT tables refuse a wrong type instead of converting it. */
  assert_int_equal(fx_count(f, "SELECT count(*) FROM pragma_table_list WHERE"
                               " name = 'queue' AND strict = 1"),
                   1);
  fx_free(f);
}

static void set_user_version(const char* path, const char* sql) {
  sqlite3* db;
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
  sqlite3_close(db);
}

static void test_newer_schema_refused(void** state) {
  SQLITE_ONLY(ABOUT_SQLITE);
  fixture_t* f = fx_new(1);
  ob_engine_t* e = NULL;
  char err[512];
  (void)state;
  ob_close(f->e);
  f->e = NULL;
  set_user_version(f->db_path, "PRAGMA user_version=99");
  assert_int_equal(ob_open(&e, &f->opts, err, sizeof err), OB_EVERSION);
  assert_null(e);
  assert_non_null(strstr(err, "schema version 99 is newer"));
  fx_free(f);
}

/* What migration 3 -> 4 (relay priorities) added, undone. */
#define UNDO_V4 "DROP INDEX outbox_unpublished_type;"
#define UNDO_V5 "DROP TABLE retention_clock;"
/* What migration 5 -> 6 (the outbox sweep mark) added, undone. */
#define UNDO_V6 "DROP TABLE retention_swept;"
/* What migration 6 -> 7 (the fence across days) added, undone. */
#define UNDO_V7                                                  \
  "ALTER TABLE effect DROP COLUMN first_call_at;"                 \
  "ALTER TABLE effect DROP COLUMN first_call_observed_ms;"        \
  "ALTER TABLE effect DROP COLUMN park_cause;"

/* What migration 8 -> 9 (an effect's lookup reference) added, undone. */
#define UNDO_V9 "ALTER TABLE effect DROP COLUMN lookup_reference;"
/* What migration 7 -> 8 (the deadlines' clock reference) added, undone. */
#define UNDO_V8                                                           \
  "DROP INDEX queue_clock_ref; DROP INDEX outbox_clock_ref;"              \
  "DROP INDEX effect_clock_ref; ALTER TABLE queue DROP COLUMN clock_ref;" \
  "ALTER TABLE outbox_event DROP COLUMN clock_ref;"                       \
  "ALTER TABLE effect DROP COLUMN clock_ref;"

/* What migration 9 -> 10 (foreign events' identity, FIFO groups, trace
** context) added, undone: processed_message back to its old key. */
#define UNDO_V10                                                              \
  "DROP TRIGGER queue_group_release; DROP INDEX queue_group;"                 \
  "ALTER TABLE queue DROP COLUMN source;"                                     \
  "ALTER TABLE queue DROP COLUMN group_key;"                                  \
  "ALTER TABLE failed_message DROP COLUMN source;"                            \
  "ALTER TABLE outbox_event DROP COLUMN traceparent;"                         \
  "ALTER TABLE outbox_event DROP COLUMN tracestate;"                          \
  "DROP TABLE event_source;"                                                  \
  "CREATE TABLE pm9 (consumer_name TEXT NOT NULL, message_id TEXT NOT NULL,"  \
  " processed_at INTEGER NOT NULL, PRIMARY KEY (consumer_name, message_id))"  \
  " STRICT, WITHOUT ROWID;"                                                   \
  "INSERT INTO pm9 SELECT consumer_name, message_id, processed_at FROM"       \
  " processed_message; DROP TABLE processed_message;"                         \
  "ALTER TABLE pm9 RENAME TO processed_message;"                              \
  "CREATE INDEX processed_message_age ON processed_message(processed_at);"

/* What migration 10 -> 11 (the embedder's schema) added, undone. */
#define UNDO_V11 "DROP TABLE schema_migration;"
#define UNDO_V12 "CREATE INDEX outbox_causation ON outbox_event(causation_id);"
/* Schema 13: the engine clock (decision 0019). */
#define UNDO_V13 "DROP TABLE engine_clock;" \
  "ALTER TABLE outbox_event DROP COLUMN wall_behind_ms;"
#define UNDO_V14 "DROP TABLE effect_provider_link; DROP TABLE effect_stored;" \
  "ALTER TABLE effect DROP COLUMN currency;" \
  "ALTER TABLE effect DROP COLUMN amount;"

/* The engine connection's value of a pragma. */
static long long engine_pragma(fixture_t* f, const char* sql) {
  sqlite3_stmt* st;
  long long v = -1;
  assert_int_equal(sqlite3_prepare_v2(f->e->db.db, sql, -1, &st, NULL),
                   SQLITE_OK);
  if (sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return v;
}

/* docs/decisions/0017: a new file has 2 KiB pages, the WAL policy is the
** options', a file with 4 KiB pages keeps them (never a silent VACUUM at
** start-up), and schema 12 drops outbox_causation from an older file. */
static void test_pages_and_wal_policy(void** state) {
  SQLITE_ONLY(ABOUT_SQLITE);
  fixture_t* f = fx_new(1);
  sqlite3* raw;
  (void)state;
  assert_int_equal(fx_count(f, "PRAGMA page_size"), 2048);
  assert_int_equal(engine_pragma(f, "PRAGMA wal_autocheckpoint"), 8000);
  assert_int_equal(engine_pragma(f, "PRAGMA journal_size_limit"), 16777216);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM sqlite_schema WHERE"
                               " name = 'outbox_causation'"), 0);
  ob_close(f->e);
  f->e = NULL;
  f->opts.wal_checkpoint_pages = 500;
  f->opts.wal_size_limit_bytes = 1 << 20;
  fx_open(f);
  assert_int_equal(engine_pragma(f, "PRAGMA wal_autocheckpoint"), 500);
  assert_int_equal(engine_pragma(f, "PRAGMA journal_size_limit"), 1 << 20);
  /* A size cap holds the WAL to a quarter of it, at least 1 MiB. */
  ob_close(f->e);
  f->e = NULL;
  f->opts.wal_checkpoint_pages = 8000;
  f->opts.wal_size_limit_bytes = 16 << 20;
  f->opts.max_db_bytes = 2 << 20;
  fx_open(f);
  assert_int_equal(engine_pragma(f, "PRAGMA wal_autocheckpoint"), 512);
  assert_int_equal(engine_pragma(f, "PRAGMA journal_size_limit"), 1 << 20);
  ob_close(f->e);
  f->e = NULL;
  f->opts.max_db_bytes = 40 << 20;
  fx_open(f);
  assert_int_equal(engine_pragma(f, "PRAGMA wal_autocheckpoint"), 5120);
  assert_int_equal(engine_pragma(f, "PRAGMA journal_size_limit"), 10 << 20);
  f->opts.max_db_bytes = 0;
  /* A schema-11 file: the migration drops the index. */
  ob_close(f->e);
  f->e = NULL;
  set_user_version(f->db_path, UNDO_V14 UNDO_V13 UNDO_V12 "PRAGMA user_version=11");
  assert_int_equal(fx_count(f, "SELECT count(*) FROM sqlite_schema WHERE"
                               " name = 'outbox_causation'"), 1);
  fx_open(f);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM sqlite_schema WHERE"
                               " name = 'outbox_causation'"), 0);
  assert_int_equal(fx_count(f, "PRAGMA user_version"), OB__SCHEMA_VERSION);
  f->opts.wal_checkpoint_pages = 0;
  ob_close(f->e);
  f->e = NULL;
  {
    ob_engine_t* e = NULL;
    char err[512];
    assert_int_equal(ob_open(&e, &f->opts, err, sizeof err), OB_EINVAL);
    assert_non_null(strstr(err, "wal_checkpoint_pages"));
  }
  f->opts.wal_checkpoint_pages = 8000;
  f->opts.wal_size_limit_bytes = 16 << 20;
  fx_free(f);

  /* A file made with 4 KiB pages (an older oncebox) keeps them. */
  f = calloc(1, sizeof *f);
  f->dir = ts_mkdtemp("engine");
  f->db_path = ts_path(f->dir, "old.db");
  assert_int_equal(sqlite3_open(f->db_path, &raw), SQLITE_OK);
  assert_int_equal(sqlite3_exec(raw, "PRAGMA page_size=4096;"
                                     "PRAGMA journal_mode=WAL;"
                                     "CREATE TABLE t(x); DROP TABLE t;",
                                NULL, NULL, NULL), SQLITE_OK);
  sqlite3_close(raw);
  fake_clock_init(&f->clock, FX_T0, 42);
  ob_options_init(&f->opts);
  f->opts.db_path = f->db_path;
  f->opts.clock = &f->clock.clock;
  fx_open(f);
  assert_int_equal(fx_count(f, "PRAGMA page_size"), 4096);

  /* The documented step: ob_vacuum. Refused while another connection is
  ** open (nothing changed), then done; the rows and the invariants hold. */
  {
    char buf[256], id[OB_UUID_BUFLEN];
    int old = 0;
    assert_int_equal(ob_register_payout(f->e), 0);
    for (int i = 0; i < 300; i++)
      assert_int_equal(fx_enqueue(f, OB_PAYOUT_MESSAGE_TYPE, fx_event(i, id),
                                  fx_payment(i, buf)), 0);
    (void)fx_drain(f);
    assert_int_equal(sqlite3_open(f->db_path, &raw), SQLITE_OK);
    assert_int_equal(sqlite3_exec(raw, "SELECT count(*) FROM queue", NULL,
                                  NULL, NULL), SQLITE_OK);
    assert_int_equal(ob_vacuum(f->e, 0, &old), OB_EBUSY);
    assert_non_null(strstr(ob_errmsg(f->e), "another connection"));
    assert_int_equal(old, 4096);
    sqlite3_close(raw);
    assert_int_equal(fx_count(f, "PRAGMA page_size"), 4096);
    assert_int_equal(ob_vacuum(f->e, 1000, NULL), OB_EINVAL);
    assert_int_equal(ob_vacuum(f->e, 0, &old), 0);
    assert_int_equal(old, 4096);
    assert_int_equal(fx_count(f, "PRAGMA page_size"), 2048);
    assert_int_equal(fx_count(f, "SELECT count(*) FROM merchant_payout"), 300);
    assert_int_equal(ob_check(f->e, NULL, NULL), 0);
    assert_int_equal(ob_vacuum(f->e, 2048, &old), 0);  /* nothing to do */
    assert_int_equal(old, 2048);
    /* Still WAL, still handling. */
    assert_int_equal(fx_enqueue(f, OB_PAYOUT_MESSAGE_TYPE, fx_event(900, id),
                                fx_payment(900, buf)), 0);
    assert_int_equal(fx_drain(f).handled, 1);
    fx_reopen(f);
    assert_int_equal(fx_count(f, "SELECT count(*) FROM merchant_payout"), 301);
  }
  fx_free(f);
}

static int seen_handler(ob_tx_t* tx, const ob_message_t* m, void* arg) {
  (void)tx;
  (void)m;
  (*(int*)arg)++;
  return OB_DONE;
}

/* A version-9 database keyed dedup records on the id alone (a lower-case
** UUID). After the migration such a record still stands for its event:
** redelivered from SQS with any source, or with its UUID in capitals, or
** queued locally, it is a duplicate; new events key on (source, id). Once
** retention removed the old records, claims stop looking for them. */
static void test_migrates_version_9(void** state) {
  SQLITE_ONLY(ABOUT_SQLITE);
  fixture_t* f = fx_new(1);
  ob_batch_result_t res;
  int64_t delay;
  int left, runs = 0;
  const char* old_id = "0190b6d8-3ae7-7ca2-a653-00000000002a";
  (void)state;
  ob_close(f->e);
  f->e = NULL;
  set_user_version(f->db_path, UNDO_V14 UNDO_V13 UNDO_V12 UNDO_V11 UNDO_V10 "PRAGMA user_version=9;"
                   "INSERT INTO processed_message VALUES ('c1',"
                   " '0190b6d8-3ae7-7ca2-a653-00000000002a', 1000);");
  fx_open(f);
  assert_int_equal(fx_count(f, "PRAGMA user_version"), OB__SCHEMA_VERSION);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM processed_message WHERE"
                               " source_ref = -1"),
                   1);
  assert_int_equal(f->e->dedup_legacy, 1);
  assert_int_equal(ob_register(f->e, "T", "c1", seen_handler, &runs), 0);
  {
    ob__queue_row_t r;
    memset(&r, 0, sizeof r);
    r.queue = (char*)"sqs";
    r.type = (char*)"T";
    r.body = (char*)"{}";
    r.body_len = 2;
    r.created_at = FX_T0;
    r.source = (char*)"urn:any";
    r.message_id = (char*)"0190B6D8-3AE7-7CA2-A653-00000000002A";
    assert_int_equal(ob__handle_external(f->e, &r, 0, &res, &delay, &left), 0);
    assert_int_equal(res.duplicates, 1);
    r.message_id = (char*)old_id;
    r.source = (char*)"urn:other";
    assert_int_equal(ob__handle_external(f->e, &r, 0, &res, &delay, &left), 0);
    assert_int_equal(res.duplicates, 1);
    /* A new event: handled. */
    r.message_id = (char*)"42";
    assert_int_equal(ob__handle_external(f->e, &r, 0, &res, &delay, &left), 0);
    assert_int_equal(res.handled, 1);
  }
  assert_int_equal(fx_enqueue(f, "T", old_id, "{}"), 0);
  fx_drain(f);
  assert_int_equal(runs, 1);
  /* Retention removes the old record: the next open stops probing. */
  assert_int_equal(fx_count(f, "SELECT count(*) FROM processed_message"), 2);
  ob_close(f->e);
  f->e = NULL;
  set_user_version(f->db_path,
                   "DELETE FROM processed_message WHERE source_ref = -1");
  fx_open(f);
  assert_int_equal(f->e->dedup_legacy, 0);
  fx_free(f);
}

/* A version-5 database gains the outbox sweep mark, empty: nothing was
** deleted before it existed that the checks could now excuse. */
static void test_migrates_version_5(void** state) {
  SQLITE_ONLY(ABOUT_SQLITE);
  fixture_t* f = fx_new(1);
  (void)state;
  ob_close(f->e);
  f->e = NULL;
  set_user_version(f->db_path, UNDO_V14 UNDO_V13 UNDO_V12 UNDO_V11 UNDO_V10 UNDO_V9 UNDO_V8 UNDO_V7 UNDO_V6 "PRAGMA user_version=5");
  fx_open(f);
  assert_int_equal(fx_count(f, "PRAGMA user_version"), OB__SCHEMA_VERSION);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM retention_swept"), 0);
  fx_free(f);
}

/* A version-6 database gains the fence's key-age columns, empty for the
** effects it had: their age then counts from their claim (earlier than
** any call: the safe side). */
static void test_migrates_version_6(void** state) {
  SQLITE_ONLY(ABOUT_SQLITE);
  fixture_t* f = fx_new(1);
  (void)state;
  ob_close(f->e);
  f->e = NULL;
  set_user_version(f->db_path, UNDO_V14 UNDO_V13 UNDO_V12 UNDO_V11 UNDO_V10 UNDO_V9 UNDO_V8 UNDO_V7 "PRAGMA user_version=6");
  fx_open(f);
  assert_int_equal(fx_count(f, "PRAGMA user_version"), OB__SCHEMA_VERSION);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM pragma_table_info("
                               "'effect') WHERE name IN ('first_call_at',"
                               " 'first_call_observed_ms', 'park_cause')"),
                   3);
  fx_free(f);
}

static int retry_once(ob_tx_t* tx, const ob_message_t* m, void* arg) {
  (void)arg;
  return m->attempts == 0 ? ob_tx_retry(tx, 1000, "later") : OB_DONE;
}

/* A version-7 database whose deadlines were computed a day "ahead" (the
** clock set back before the upgrade): the migration gives each row the
** earliest time its deadlines can have been computed (created_at,
** first_failed_at), and the open re-bases them on it. A retry 1 s ahead,
** a message scheduled 1 h ahead and an outbox row claimed for 60 s come
** out 1 s, 1 h and 60 s ahead of the clock set back. */
static void test_migrates_version_7(void** state) {
  SQLITE_ONLY(ABOUT_SQLITE);
  fixture_t* f = fx_new(8);
  char id[OB_UUID_BUFLEN], body[256];
  ob_envelope_t env;
  ob__relay_row_t row;
  (void)state;
  ob_register_payout(f->e);
  assert_int_equal(ob_register(f->e, "Flaky", "flaky-v1", retry_once, NULL),
                   0);
  fx_enqueue(f, PAY, fx_event(1, id), fx_payment(1, body));
  fx_enqueue(f, "Flaky", fx_event(2, id), "{}");
  memset(&env, 0, sizeof env);
  env.type = "Flaky";
  env.id = fx_event(3, id);
  env.body = "{}";
  env.body_len = 2;
  env.delay_ms = 3600 * 1000;
  assert_int_equal(ob_enqueue(f->e, &env), 0);
  fx_drain(f);
  assert_int_equal(ob__relay_take(f->e, "0190b6d8-0000-7000-8000-0000000000a0",
                                  60000, 1, 0, NULL, 0, &row),
                   1);
  ob__relay_row_free(&row);
  ob_close(f->e);
  f->e = NULL;
  set_user_version(f->db_path, UNDO_V14 UNDO_V13 UNDO_V12 UNDO_V11 UNDO_V10 UNDO_V9 UNDO_V8 "PRAGMA user_version=7");
  fake_clock_advance(&f->clock, -24LL * 3600 * 1000);
  fx_open(f);
  assert_int_equal(fx_count(f, "PRAGMA user_version"), OB__SCHEMA_VERSION);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM sqlite_schema WHERE name"
                               " LIKE '%_clock_ref'"),
                   3);
  {
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT available_at - %lld FROM queue WHERE"
             " attempts = 1", (long long)f->clock.now);
    assert_int_equal(fx_count(f, sql), 1000);
    snprintf(sql, sizeof sql, "SELECT available_at - %lld FROM queue WHERE"
             " attempts = 0", (long long)f->clock.now);
    assert_int_equal(fx_count(f, sql), 3600 * 1000);
    snprintf(sql, sizeof sql, "SELECT claim_until - %lld FROM outbox_event",
             (long long)f->clock.now);
    assert_int_equal(fx_count(f, sql), 60000);
  }
  fx_free(f);
}

/* A version-3 database (before relay priorities) gains the index the
** priority claim reads, its outbox rows kept. */
static void test_migrates_version_3(void** state) {
  SQLITE_ONLY(ABOUT_SQLITE);
  fixture_t* f = fx_new(1);
  char id[OB_UUID_BUFLEN], body[256];
  (void)state;
  ob_register_payout(f->e);
  fx_enqueue(f, PAY, fx_event(1, id), fx_payment(1, body));
  fx_drain(f);
  ob_close(f->e);
  f->e = NULL;
  set_user_version(f->db_path, UNDO_V14 UNDO_V13 UNDO_V12 UNDO_V11 UNDO_V10 UNDO_V9 UNDO_V8 UNDO_V7 UNDO_V6 UNDO_V5 UNDO_V4 "PRAGMA user_version=3");
  assert_int_equal(fx_count(f, "SELECT count(*) FROM sqlite_schema WHERE name ="
                               " 'outbox_unpublished_type'"),
                   0);
  fx_open(f);
  assert_int_equal(fx_count(f, "PRAGMA user_version"), OB__SCHEMA_VERSION);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM sqlite_schema WHERE name ="
                               " 'outbox_unpublished_type'"),
                   1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM outbox_event WHERE"
                               " published_at IS NULL"),
                   1);
  fx_free(f);
}

/* What migration 2 -> 3 (the fence) added, undone. */
#define UNDO_V3                                                           \
  "DROP TABLE effect; DROP TABLE IF EXISTS charge;"                       \
  "DROP INDEX queue_waiting;"                                             \
  "DROP INDEX queue_leased;"                                              \
  "DROP INDEX failed_message_effect; ALTER TABLE queue DROP COLUMN"       \
  " waiting_on; ALTER TABLE failed_message DROP COLUMN effect_key;"

/* A version-2 database (before the fence) is migrated in place: a queued
** message and a failed one keep their rows and gain the new columns. */
static void test_migrates_version_2(void** state) {
  SQLITE_ONLY(ABOUT_SQLITE);
  fixture_t* f = fx_new(1);
  char id[OB_UUID_BUFLEN];
  (void)state;
  fx_enqueue(f, "Nobody", fx_event(1, id), "{}");
  fx_drain(f);  /* no handler: failure store */
  fx_enqueue(f, "Nobody", fx_event(2, id), "{}");
  ob_close(f->e);
  f->e = NULL;
  set_user_version(f->db_path, UNDO_V14 UNDO_V13 UNDO_V12 UNDO_V11 UNDO_V10 UNDO_V9 UNDO_V8 UNDO_V7 UNDO_V6 UNDO_V5 UNDO_V4 UNDO_V3
                   "PRAGMA user_version=2");
  fx_open(f);
  assert_int_equal(fx_count(f, "PRAGMA user_version"), OB__SCHEMA_VERSION);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM queue WHERE waiting_on"
                               " IS NULL"), 1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM failed_message WHERE"
                               " effect_key IS NULL"), 1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM effect"), 0);
  /* The modules' tables are theirs: oncebox's own schema makes none. */
  assert_int_equal(fx_count(f, "SELECT count(*) FROM sqlite_schema WHERE"
                               " name IN ('charge', 'merchant_payout')"), 0);
  fx_free(f);
}

/* A version-1 database (before the relay) is migrated in place, its rows
** kept. */
static void test_migrates_version_1(void** state) {
  SQLITE_ONLY(ABOUT_SQLITE);
  fixture_t* f = fx_new(1);
  char id[OB_UUID_BUFLEN], body[256];
  (void)state;
  ob_register_payout(f->e);
  fx_enqueue(f, PAY, fx_event(1, id), fx_payment(1, body));
  fx_drain(f);
  ob_close(f->e);
  f->e = NULL;
  set_user_version(f->db_path, UNDO_V14 UNDO_V13 UNDO_V12 UNDO_V11 UNDO_V10 UNDO_V9 UNDO_V8 UNDO_V7 UNDO_V6 UNDO_V5 UNDO_V4 UNDO_V3
                   "DROP INDEX outbox_unpublished_aggregate;"
                   "DROP TABLE relay_status; PRAGMA user_version=1");
  assert_int_equal(fx_count(f, "PRAGMA user_version"), 1);
  fx_open(f);
  assert_int_equal(fx_count(f, "PRAGMA user_version"), OB__SCHEMA_VERSION);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM relay_status"), 0);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM merchant_payout"), 1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM sqlite_schema WHERE name ="
                               " 'outbox_unpublished_aggregate'"),
                   1);
  fx_free(f);
}

static void test_not_a_database(void** state) {
  SQLITE_ONLY(ABOUT_SQLITE);
  char* dir = ts_mkdtemp("notdb");
  char* path = ts_path(dir, "x.db");
  ob_options_t o;
  ob_engine_t* e = NULL;
  char err[512];
  int fd = open(path, O_CREAT | O_WRONLY, 0600);
  (void)state;
  assert_true(fd >= 0);
  assert_int_equal(write(fd, "this is not sqlite at all, just text........", 44), 44);
  close(fd);
  ob_options_init(&o);
  o.db_path = path;
  assert_int_equal(ob_open(&e, &o, err, sizeof err), OB_ECORRUPT);
  assert_null(e);
  /* Someone else's database is refused, not extended. */
  unlink(path);
  set_user_version(path, "CREATE TABLE customers(id INTEGER)");
  assert_int_equal(ob_open(&e, &o, err, sizeof err), OB_ECORRUPT);
  assert_non_null(strstr(err, "not an oncebox database"));
  /* Missing directory: a clear error. */
  o.db_path = "/nonexistent-dir/oncebox.db";
  assert_int_equal(ob_open(&e, &o, err, sizeof err), OB_ENOTFOUND);
  assert_non_null(strstr(err, "/nonexistent-dir/oncebox.db"));
  o.db_path = NULL;
  assert_int_equal(ob_open(&e, &o, err, sizeof err), OB_EINVAL);
  free(path);
  ts_rmdir(dir);
}

/* (f) A full database: a clear error, nothing half-applied or lost, and
** handling resumes once there is room again. */
static void test_full_disk_then_resume(void** state) {
  SQLITE_ONLY("the size cap is SQLite's max_page_count (pg_full_disk has PostgreSQL's)");
  fixture_t* f = fx_new(1);
  char id[OB_UUID_BUFLEN], body[256];
  int i, rc = 0, queued = 0;
  (void)state;
  ob_close(f->e);
  f->opts.max_db_bytes = 160 * 1024;
  /* No reserve: the hard cap itself, as on a full disk (the reserve's
  ** policy is tests/integration/test_disk_cycle.c). */
  f->opts.reserve_db_bytes = 0;
  fx_open(f);
  ob_register_payout(f->e);
  /* Fill the queue until the cap says no. */
  for (i = 0; i < 100000; i++) {
    ob_envelope_t env;
    char big[2048];
    memset(&env, 0, sizeof env);
    fx_payment(i, body);
    snprintf(big, sizeof big, "%s", body);
    env.type = PAY;
    env.id = fx_event(i, id);
    env.body = big;
    env.body_len = strlen(big);
    rc = ob_enqueue(f->e, &env);
    if (rc != 0) break;
    queued++;
  }
  assert_int_equal(rc, OB_ENOSPC);
  assert_true(strstr(ob_errmsg(f->e), "full") != NULL ||
              strstr(ob_errmsg(f->e), "of its 160 KiB cap") != NULL);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM queue"), queued);
  /* Handling needs room for payouts and outbox rows: it fails cleanly. */
  ob_batch_result_t r;
  rc = ob_run_once(f->e, &r);
  /* The first few may still fit in freed pages; run until it fails. */
  while (rc == 0 && r.claimed > 0) rc = ob_run_once(f->e, &r);
  assert_int_equal(rc, OB_ENOSPC);
  long long payouts = fx_count(f, "SELECT count(*) FROM merchant_payout");
  assert_int_equal(fx_count(f, "SELECT count(*) FROM queue") + payouts, queued);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM outbox_event"), payouts);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM processed_message"), payouts);
  assert_int_equal(ob_check(f->e, NULL, NULL), 0);
  /* Space returns. */
  ob_close(f->e);
  f->opts.max_db_bytes = 0;
  fx_open(f);
  ob_register_payout(f->e);
  r = fx_drain(f);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM merchant_payout"), queued);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM queue"), 0);
  assert_int_equal(ob_check(f->e, NULL, NULL), 0);
  fx_free(f);
}

/* Retention deletes old dedup records and old published events in bounded
** batches; an unpublished event is never deleted, whatever its age. */
static int accept_all(void* arg, const ob_event_t* ev) {
  (void)ev;
  ++*(int*)arg;
  return 0;
}

static void test_retention(void** state) {
  fixture_t* f = fx_new(1);
  char id[OB_UUID_BUFLEN], body[256];
  int published = 0;
  size_t n;
  int64_t deleted;
  (void)state;
  ob_close(f->e);
  f->opts.gc_batch = 7;  /* several batches */
  fx_open(f);
  ob_register_payout(f->e);
  for (int i = 0; i < 40; i++) fx_enqueue(f, PAY, fx_event(i, id), fx_payment(i, body));
  fx_drain(f);
  /* Publish half of the events. */
  assert_int_equal(ob_outbox_drain(f->e, accept_all, &published, 20, &n), 0);
  assert_int_equal(n, 20);
  fake_clock_advance(&f->clock, 29LL * 24 * 3600 * 1000);
  assert_int_equal(ob_gc(f->e, &deleted), 0);
  assert_int_equal(deleted, 0);
  fake_clock_advance(&f->clock, 2LL * 24 * 3600 * 1000);
  assert_int_equal(ob_gc(f->e, &deleted), 0);
  /* On PostgreSQL an outbox day goes whole, once every row of it is
  ** published (docs/postgresql.md): the 20 published rows share their day
  ** with the 20 unpublished ones, and stay. */
  int outbox_gone = ts_backend_is_pg() ? 0 : 20;
  assert_int_equal(deleted, 40 + outbox_gone);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM processed_message"), 0);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM outbox_event WHERE"
                               " published_at IS NULL"),
                   20);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM outbox_event"),
                   40 - outbox_gone);
  /* A redelivery after the dedup record expired still pays once: the payout
  ** row itself remembers which event paid it. */
  fx_enqueue(f, PAY, fx_event(3, id), fx_payment(3, body));
  ob_batch_result_t r = fx_drain(f);
  assert_int_equal(r.failed, 0);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM merchant_payout"), 40);
  fx_free(f);
}

/* The retention window's edge: "older than the window" is strict. A dedup
** record and a published event exactly retention_ms old are kept; one
** millisecond older, both are deleted. */
static void test_retention_boundary(void** state) {
  SQLITE_ONLY("retention goes by whole days there (pg_backend's test_retention_drops_whole_days)");
  fixture_t* f = fx_new(1);
  char id[OB_UUID_BUFLEN], body[256];
  int published = 0;
  size_t n;
  int64_t deleted;
  const int64_t window = 3600LL * 1000;
  (void)state;
  ob_close(f->e);
  f->opts.retention_ms = window;
  fx_open(f);
  ob_register_payout(f->e);
  fx_enqueue(f, PAY, fx_event(1, id), fx_payment(1, body));
  fx_drain(f);
  assert_int_equal(ob_outbox_drain(f->e, accept_all, &published, 10, &n), 0);
  assert_int_equal(n, 1);
  /* Both rows carry the fake clock's time, to the millisecond. */
  assert_int_equal(fx_count(f, "SELECT processed_at - 1796083200000"
                               " FROM processed_message"),
                   0);
  assert_int_equal(fx_count(f, "SELECT published_at - 1796083200000"
                               " FROM outbox_event"),
                   0);

  /* window - 1 ms old: kept. */
  fake_clock_advance(&f->clock, window - 1);
  assert_int_equal(ob_gc(f->e, &deleted), 0);
  assert_int_equal(deleted, 0);
  /* Exactly window old: still kept. */
  fake_clock_advance(&f->clock, 1);
  assert_int_equal(ob_gc(f->e, &deleted), 0);
  assert_int_equal(deleted, 0);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM processed_message"), 1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM outbox_event"), 1);
  /* window + 1 ms old: both deleted. */
  fake_clock_advance(&f->clock, 1);
  assert_int_equal(ob_gc(f->e, &deleted), 0);
  assert_int_equal(deleted, 2);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM processed_message"), 0);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM outbox_event"), 0);
  fx_free(f);
}

/* Two relays on one database (storage/relay_store.c through storage/store.h,
** on two real connections to the same file). Relay A claims the rows, its
** lease runs out, relay B claims them with its own token. A's late marks,
** published or failed, change nothing; B's take effect. */
static void test_relay_claim_taken_over(void** state) {
  SQLITE_ONLY("a lease runs out by the fake clock; there it is on the server's (pg_backend's test_relay_lease_on_server_clock)");
  fixture_t* f = fx_new(1);
  char id[OB_UUID_BUFLEN], body[256];
  ob__db_t a, b;
  ob__relay_row_t rows_a[4], rows_b[4];
  const int64_t lease = 30000;
  int64_t now = FX_T0 + 1000;
  int na, nb;
  (void)state;
  ob_register_payout(f->e);
  for (int i = 1; i <= 2; i++)
    fx_enqueue(f, PAY, fx_event(i, id), fx_payment(i, body));
  fx_drain(f);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM outbox_event"), 2);
  memset(&a, 0, sizeof a);
  memset(&b, 0, sizeof b);
  assert_int_equal(ob__db_open(&a, f->db_path, OB_SYNC_FULL, 5000, 0), 0);
  assert_int_equal(ob__db_open(&b, f->db_path, OB_SYNC_FULL, 5000, 0), 0);

  na = ob__relay_claim(&a, "relay-a", now, now + lease, 4, 0, NULL, 0, rows_a);
  assert_int_equal(na, 2);
  /* While A's lease runs, B gets nothing. */
  assert_int_equal(ob__relay_claim(&b, "relay-b", now + lease - 1,
                                   now + 2 * lease, 4, 0, NULL, 0, rows_b),
                   0);
  /* A's lease expired: B takes both rows over. */
  nb = ob__relay_claim(&b, "relay-b", now + lease, now + 2 * lease, 4, 0,
                       NULL, 0, rows_b);
  assert_int_equal(nb, 2);
  assert_string_equal(rows_a[0].id, rows_b[0].id);
  assert_string_equal(rows_a[1].id, rows_b[1].id);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM outbox_event"
                               " WHERE claim_token = 'relay-b'"),
                   2);

  /* A, late, with its old token: nothing changes. */
  assert_int_equal(ob__db_begin(&a), 0);
  assert_int_equal(ob__relay_mark_published(&a, rows_a[0].id, "relay-a",
                                            now + lease + 1),
                   0);
  assert_int_equal(ob__relay_mark_failed(&a, rows_a[1].id, "relay-a",
                                         now + lease + 5000, "late A", 1,
                                         now + lease + 1),
                   0);
  assert_int_equal(ob__db_commit(&a), 0);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM outbox_event WHERE"
                               " published_at IS NULL AND parked_at IS NULL"
                               " AND attempt_count = 0 AND last_error IS NULL"
                               " AND claim_token = 'relay-b'"),
                   2);

  /* B's marks work: one published, one failed and parked (park_after 1). */
  assert_int_equal(ob__db_begin(&b), 0);
  assert_int_equal(ob__relay_mark_published(&b, rows_b[0].id, "relay-b",
                                            now + lease + 2),
                   1);
  assert_int_equal(ob__relay_mark_failed(&b, rows_b[1].id, "relay-b",
                                         now + lease + 5000, "B failed", 1,
                                         now + lease + 2),
                   1);
  assert_int_equal(ob__db_commit(&b), 0);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM outbox_event WHERE"
                               " published_at = 1796083231002"
                               " AND claim_token IS NULL"),
                   1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM outbox_event WHERE"
                               " published_at IS NULL AND attempt_count = 1"
                               " AND last_error = 'B failed'"
                               " AND parked_at = 1796083231002"
                               " AND claim_token IS NULL"),
                   1);
  /* A cannot undo B's publication with its old token either. */
  assert_int_equal(ob__db_begin(&a), 0);
  assert_int_equal(ob__relay_mark_failed(&a, rows_a[0].id, "relay-a",
                                         now + lease + 9000, "late A", 0,
                                         now + lease + 3),
                   0);
  assert_int_equal(ob__db_commit(&a), 0);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM outbox_event WHERE"
                               " published_at IS NOT NULL AND attempt_count = 0"),
                   1);
  for (int i = 0; i < na; i++) ob__relay_row_free(&rows_a[i]);
  for (int i = 0; i < nb; i++) ob__relay_row_free(&rows_b[i]);
  ob__db_close(&a);
  ob__db_close(&b);
  assert_int_equal(ob_check(f->e, NULL, NULL), 0);
  fx_free(f);
}

/* A parked outbox event (a relay gave up on it) is not handed to a sink by
** ob_outbox_drain until an operator retries it; then it is, once. */
static void test_parked_event_not_drained(void** state) {
  fixture_t* f = fx_new(1);
  char id[OB_UUID_BUFLEN], body[256];
  ob__db_t db;
  ob__relay_row_t rows[2];
  int seen = 0;
  size_t n;
  (void)state;
  ob_register_payout(f->e);
  fx_enqueue(f, PAY, fx_event(1, id), fx_payment(1, body));
  fx_drain(f);
  memset(&db, 0, sizeof db);
  assert_int_equal(ob__db_open(&db, f->db_path, OB_SYNC_FULL, 5000, 0), 0);
  assert_int_equal(ob__relay_claim(&db, "relay", FX_T0, FX_T0 + 30000, 2, 0,
                                   NULL, 0, rows),
                   1);
  assert_int_equal(ob__db_begin(&db), 0);
  assert_int_equal(ob__relay_mark_failed(&db, rows[0].id, "relay", FX_T0,
                                         "refused", 1, FX_T0),
                   1);
  assert_int_equal(ob__db_commit(&db), 0);
  ob__relay_row_free(&rows[0]);
  ob__db_close(&db);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM outbox_event"
                               " WHERE parked_at IS NOT NULL"),
                   1);
  /* Due (next_attempt_at is now) but parked: nothing for the sink. */
  assert_int_equal(ob_outbox_drain(f->e, accept_all, &seen, 10, &n), 0);
  assert_int_equal(n, 0);
  assert_int_equal(seen, 0);
  /* Retried by the operator: drained once, then published. */
  assert_int_equal(ob_outbox_retry_parked(f->e), 1);
  assert_int_equal(ob_outbox_drain(f->e, accept_all, &seen, 10, &n), 0);
  assert_int_equal(n, 1);
  assert_int_equal(seen, 1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM outbox_event"
                               " WHERE published_at IS NOT NULL"
                               " AND parked_at IS NULL"),
                   1);
  fx_free(f);
}

static void collect(void* arg, const char* v) {
  int* n = arg;
  (*n)++;
  print_message("violation: %s\n", v);
}

/* The checker catches what it is meant to catch. */
static void test_check_reports_violations(void** state) {
  SQLITE_ONLY(ABOUT_SQLITE);
  fixture_t* f = fx_new(1);
  char id[OB_UUID_BUFLEN], body[256];
  int n = 0;
  sqlite3* db;
  (void)state;
  ob_register_payout(f->e);
  for (int i = 0; i < 3; i++) fx_enqueue(f, PAY, fx_event(i, id), fx_payment(i, body));
  fx_drain(f);
  assert_int_equal(ob_check(f->e, collect, &n), 0);
  assert_int_equal(sqlite3_open(f->db_path, &db), SQLITE_OK);
  /* An outbox row lost, and a payout without its dedup record. */
  assert_int_equal(sqlite3_exec(db,
                                "DELETE FROM outbox_event WHERE id IN"
                                " (SELECT id FROM outbox_event WHERE causation_id ="
                                " '0190b6d8-3ae7-7ca2-a653-000000000000');"
                                "DELETE FROM processed_message WHERE message_id ="
                                " '0190b6d8-3ae7-7ca2-a653-000000000002';",
                                NULL, NULL, NULL),
                   SQLITE_OK);
  sqlite3_close(db);
  n = 0;
  assert_int_equal(ob_check(f->e, collect, &n), 2);
  assert_int_equal(n, 2);
  fx_free(f);
}

/* A module's schema, invariants and figures come with its registration:
** before it the database has no table of the module (its statistics say
** OB_ENOTFOUND), after it the invariants run in ob_check (once however often
** it is registered) and its figure is in ob_module_figures. */
static int read_figures(ob_tx_t* tx, void* arg) {
  ob_figure_t* fig = arg;
  return ob_module_figures(tx, fig, 4) == 1 ? 0 : -1;
}

static void test_module_checks_and_stats(void** state) {
  fixture_t* f = fx_new(1);
  ob_payout_stats_t ps;
  ob_charge_stats_t cs;
  ob_figure_t fig[4];
  int n = 0;
  (void)state;
  ps.payouts = 7;
  assert_int_equal(ob_payout_stats(f->e, &ps), OB_ENOTFOUND);
  assert_int_equal(ps.payouts, 0);
  assert_int_equal(ob_register_payout(f->e), 0);
  assert_int_equal(fx_count(f, "SELECT version FROM schema_migration WHERE"
                               " name = 'payout'"), 1);
  /* A payout with neither its MerchantPayoutCreated row nor its dedup
  ** record. */
  ts_backend_exec(f->db_path, "INSERT INTO merchant_payout VALUES('p-1',"
                              " 'pay-1', 'm-1', 100, 'EUR', 'ev-1', 0)");
  assert_int_equal(ob_payout_stats(f->e, &ps), 0);
  assert_int_equal(ps.payouts, 1);
  assert_int_equal(ob_read(f->e, read_figures, fig), 0);
  assert_string_equal(fig[0].name, "payouts");
  assert_int_equal(fig[0].value, 1);
  assert_int_equal(ob_check(f->e, collect, &n), 2);
  assert_int_equal(ob_register_payout(f->e), OB_EEXIST);
  n = 0;
  assert_int_equal(ob_check(f->e, collect, &n), 2);
  assert_int_equal(n, 2);
  assert_int_equal(ob_charge_stats(f->e, &cs), OB_ENOTFOUND);
  assert_int_equal(ob_register_charge_order(f->e), 0);
  assert_int_equal(ob_charge_stats(f->e, &cs), 0);
  assert_int_equal(cs.charges, 0);
  ts_backend_exec(f->db_path, "DROP TABLE charge");
  cs.charges = 7;
  assert_int_equal(ob_charge_stats(f->e, &cs), OB_ENOTFOUND);
  assert_int_equal(cs.charges, 0);
  /* A check that cannot run is an error, never "ok". */
  assert_true(ob_check(f->e, collect, &n) < 0);
  assert_int_equal(ob_payout_stats(NULL, &ps), OB_EINVAL);
  assert_int_equal(ob_payout_stats(f->e, NULL), OB_EINVAL);
  fx_free(f);
}

/* A database made before the modules had schemas of their own holds their
** tables already, made by oncebox's own schema then: registering adopts
** them with their rows and records the module's version 1. */
static void test_module_adopts_older_table(void** state) {
  fixture_t* f = fx_new(1);
  (void)state;
  ts_backend_exec(f->db_path,
                  "CREATE TABLE merchant_payout (id TEXT PRIMARY KEY,"
                  " source_payment_id TEXT NOT NULL UNIQUE, merchant_id TEXT"
                  " NOT NULL, amount_minor BIGINT NOT NULL CHECK"
                  " (amount_minor > 0), currency TEXT NOT NULL CHECK"
                  " (length(currency) = 3), source_event_id TEXT NOT NULL,"
                  " created_at BIGINT NOT NULL)");
  ts_backend_exec(f->db_path, "INSERT INTO merchant_payout VALUES('p-1',"
                              " 'pay-1', 'm-1', 100, 'EUR', 'ev-1', 0)");
  assert_int_equal(ob_register_payout(f->e), 0);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM merchant_payout"), 1);
  assert_int_equal(fx_count(f, "SELECT version FROM schema_migration WHERE"
                               " name = 'payout'"), 1);
  fx_free(f);
}

static void test_stats(void** state) {
  fixture_t* f = fx_new(1);
  char id[OB_UUID_BUFLEN], body[256];
  ob_stats_t s;
  (void)state;
  ob_register_payout(f->e);
  for (int i = 0; i < 5; i++) fx_enqueue(f, PAY, fx_event(i, id), fx_payment(i, body));
  fx_enqueue(f, PAY, fx_event(99, id), "garbage");
  fx_drain(f);
  fx_enqueue(f, PAY, fx_event(100, id), fx_payment(100, body));
  fake_clock_advance(&f->clock, 1500);
  assert_int_equal(ob_stats(f->e, &s), 0);
  assert_int_equal(s.queue_ready, 1);
  assert_int_equal(s.failed, 1);
  assert_int_equal(s.processed, 5);
  {
    ob_payout_stats_t ps;
    assert_int_equal(ob_payout_stats(f->e, &ps), 0);
    assert_int_equal(ps.payouts, 5);
  }
  assert_int_equal(s.outbox_unpublished, 5);
  assert_int_equal(s.outbox_oldest_unpublished_age_ms, 1500);
  fx_free(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_file_modes),
      cmocka_unit_test(test_pragmas_in_effect),
      cmocka_unit_test(test_pages_and_wal_policy),
      cmocka_unit_test(test_newer_schema_refused),
      cmocka_unit_test(test_migrates_version_1),
      cmocka_unit_test(test_migrates_version_6),
      cmocka_unit_test(test_migrates_version_9),
      cmocka_unit_test(test_migrates_version_5),
      cmocka_unit_test(test_migrates_version_3),
      cmocka_unit_test(test_migrates_version_2),
      cmocka_unit_test(test_migrates_version_7),
      cmocka_unit_test(test_not_a_database),
      cmocka_unit_test(test_full_disk_then_resume),
      cmocka_unit_test(test_retention),
      cmocka_unit_test(test_retention_boundary),
      cmocka_unit_test(test_relay_claim_taken_over),
      cmocka_unit_test(test_parked_event_not_drained),
      cmocka_unit_test(test_check_reports_violations),
      cmocka_unit_test(test_module_checks_and_stats),
      cmocka_unit_test(test_module_adopts_older_table),
      cmocka_unit_test(test_stats),
  };
  return cmocka_run_group_tests_name("storage", tests, NULL, NULL);
}
