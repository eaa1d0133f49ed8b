/* SPDX-License-Identifier: Apache-2.0 */
/*
** The shipped defaults on a small filesystem (issue 33, defect 3;
** docs/decisions/0021-default-cap.md).
**
** Nothing configured: no ONCEBOX_MAX_DB_BYTES, no config file, the
** library's ob_options_init. The terminal is the real `oncebox run` (its
** relay offline: SQS's endpoint refuses every connection, so the outbox
** accumulates) and the till is the real `oncebox enqueue`, as separate
** processes, on an 8 MiB tmpfs in a private mount namespace (root only,
** else it skips). Another program's file (the ballast) takes 3 MiB of the
** filesystem first. The till enqueues payments until it is refused; no
** accepted payment may be lost. Then the ballast is deleted and the
** terminal must heal by itself: new payments accepted and handled, and
** `oncebox check` clean.
**
** Before the default cap, the WAL (a checkpoint every 8,000 pages of 2 KiB)
** grew until it filled the disk after a few hundred payments, and the
** terminal did not recover when the ballast went.
**
** The last cases read the cap each path opens with (ob_open, the CLI) and
** where it came from, on the small filesystem and on the test's big one.
*/
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "core/engine/engine_int.h"
#include "core/util/space_policy.h"
#include "oncebox_payout.h"
#include "tests/integration/engine_fixture.h"

#define KIB 1024LL
#define MIB (1024LL * 1024)
#define TMPFS_SIZE "8m"
#define BALLAST (3 * MIB)
#define CHUNK 100
#define MAX_PAYMENTS 20000
#define EXIT_FULL 6

static char* g_mnt;    /* the 8 MiB tmpfs */
static char* g_host;   /* logs, chunks: on the host's filesystem */
static const char* g_bin;

/* A tmpfs in a mount namespace of this process (children inherit it; even
** a SIGKILL leaves nothing mounted on the host). NULL and why if this
** machine does not allow it. */
static const char* mount_tmpfs(char* why, size_t n) {
  if (g_mnt == NULL)
    g_mnt = ts_private_tmpfs("default-cap", "size=" TMPFS_SIZE ",mode=0700",
                             why, n);
  return g_mnt;
}

static long long file_size(const char* path) {
  struct stat st;
  return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

static void write_ballast(const char* path, long long bytes) {
  static char block[64 * 1024];
  long long done = 0;
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  assert_true(fd >= 0);
  memset(block, 0x5a, sizeof block);
  while (done < bytes) {
    ssize_t w = write(fd, block, sizeof block);
    assert_true(w > 0);
    done += w;
  }
  assert_int_equal(fsync(fd), 0);
  close(fd);
}

/* The daemon: `oncebox --db DB run`, nothing configured but where SQS is;
** the endpoint is a closed port on loopback, so every publish fails to
** connect and the relay stays offline. */
static pid_t start_daemon(const char* db, const char* log_path) {
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    char exe[1024];
    char* argv[] = {"oncebox", "--db", (char*)db, "run", NULL};
    int fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0) _exit(20);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    setenv("ONCEBOX_OUTBOX_QUEUE_URL",
           "https://sqs.eu-west-1.amazonaws.com/000000000000/payments", 1);
    snprintf(exe, sizeof exe, "%s/oncebox", g_bin);
    ts_exec_built(exe, argv);
    _exit(21);
  }
  return pid;
}

/* `oncebox enqueue --ndjson` of payments [from, from + n) (fx_cli_enqueue);
** *accepted 0 when it printed no summary. */
static int cli_enqueue(const char* db, int from, int n, int* accepted) {
  int code = fx_cli_enqueue("", g_bin, g_host, db, from, n, accepted);
  if (*accepted < 0) *accepted = 0;
  return code;
}

/* `oncebox stats --json`, parsed; NULL if it failed (a full disk may
** refuse even a reader). */
static cJSON* cli_stats(const char* db, const char* env) {
  char out[1024];
  static char buf[16384];
  FILE* fp;
  size_t n;
  snprintf(out, sizeof out, "%s/stats.json", g_host);
  if (ts_sh("%s $OB_EMULATOR '%s/oncebox' --db '%s' stats --json >'%s' "
            "2>/dev/null", env ? env : "", g_bin, db, out) != 0)
    return NULL;
  fp = fopen(out, "r");
  assert_non_null(fp);
  n = fread(buf, 1, sizeof buf - 1, fp);
  fclose(fp);
  buf[n] = '\0';
  return cJSON_Parse(buf);
}

static double num(cJSON* o, const char* a, const char* b) {
  cJSON* x = cJSON_GetObjectItem(cJSON_GetObjectItem(o, a), b);
  assert_non_null(x);
  return x->valuedouble;
}

static const char* str(cJSON* o, const char* a, const char* b) {
  cJSON* x = cJSON_GetObjectItem(cJSON_GetObjectItem(o, a), b);
  return cJSON_IsString(x) ? x->valuestring : "(missing)";
}

static long long count(const char* db, const char* sql) {
  fixture_t f;
  memset(&f, 0, sizeof f);
  f.db_path = (char*)db;
  return fx_count(&f, sql);
}

/* Poll until done() holds; a generous bound so a stuck terminal fails the
** test instead of hanging it (not a measure of speed). */
static void wait_until(const char* what, const char* db, const char* log,
                       int (*done)(const char* db)) {
  time_t end = time(NULL) + 45;
  while (!done(db)) {
    if (time(NULL) > end) {
      char wal[1100];
      snprintf(wal, sizeof wal, "%s-wal", db);
      (void)ts_sh("tail -15 '%s' >&2", log);
      fail_msg("not within 45 s: %s (WAL %lld bytes, database %lld bytes)",
               what, file_size(wal), file_size(db));
    }
    usleep(100 * 1000);
  }
}

static long long g_accepted;  /* payments accepted so far */

/* Every accepted payment handled: its payout row, nothing left queued. */
static int all_handled(const char* db) {
  return count(db, "SELECT count(*) FROM queue") == 0 &&
         count(db, "SELECT count(*) FROM merchant_payout") == g_accepted;
}

/* Payments the terminal holds: handled (a payout) or queued. None is lost
** and none is there twice. */
static void assert_nothing_lost(const char* db, const char* when) {
  long long payouts = count(db, "SELECT count(*) FROM merchant_payout");
  long long queued = count(db, "SELECT count(*) FROM queue");
  long long failed = count(db, "SELECT count(*) FROM failed_message");
  print_message("%s: %lld accepted, %lld handled, %lld queued, %lld failed\n",
                when, g_accepted, payouts, queued, failed);
  assert_int_equal(failed, 0);
  assert_int_equal(payouts + queued, g_accepted);
}

static void test_small_fs_heals_with_no_configuration(void** state) {
  char why[256], db[1024], ballast[1024], log[1024], wal[1100];
  int next = 0, accepted, code, status, tries;
  pid_t daemon;
  cJSON* s;
  (void)state;
  if (mount_tmpfs(why, sizeof why) == NULL) {
    print_message("skipped: no small tmpfs here: %s\n", why);
    skip();
  }
  snprintf(db, sizeof db, "%s/terminal.db", g_mnt);
  snprintf(wal, sizeof wal, "%s-wal", db);
  snprintf(ballast, sizeof ballast, "%s/ballast", g_mnt);
  snprintf(log, sizeof log, "%s/daemon.log", g_host);
  write_ballast(ballast, BALLAST);
  assert_int_equal(ts_sh("$OB_EMULATOR '%s/oncebox' --db '%s' init "
                         ">/dev/null", g_bin, db), 0);
  daemon = start_daemon(db, log);

  /* The till: chunks of payments until the terminal refuses one. */
  for (;;) {
    code = cli_enqueue(db, next, CHUNK, &accepted);
    g_accepted += accepted;
    if (code != 0) break;
    assert_int_equal(accepted, CHUNK);
    next += CHUNK;
    assert_true(next < MAX_PAYMENTS);
  }
  print_message("full: %lld payments accepted, then `oncebox enqueue` "
                "exited %d; WAL %lld bytes, database %lld bytes\n",
                g_accepted, code, file_size(wal), file_size(db));
  /* Refused for space, said as such: not a broken database. */
  assert_int_equal(code, EXIT_FULL);
  /* The refused lines are the chunk's last ones: resent below. */
  next += accepted;
  assert_nothing_lost(db, "full");

  /* Space returns: another program's file goes. */
  assert_int_equal(unlink(ballast), 0);
  /* Healing, by itself: the till resends until the terminal accepts (the
  ** first try normally; bounded so that a terminal that never heals fails
  ** here and not by the test's timeout). */
  for (tries = 0;; tries++) {
    code = cli_enqueue(db, next, CHUNK, &accepted);
    g_accepted += accepted;
    next += accepted;
    if (code == 0) break;
    if (tries == 100) {
      (void)ts_sh("tail -15 '%s' >&2", log);
      fail_msg("after the ballast went, `oncebox enqueue` still exits %d "
               "(WAL %lld bytes, database %lld bytes)", code, file_size(wal),
               file_size(db));
    }
    usleep(300 * 1000);
  }
  print_message("healed: after freeing %lld bytes, %d more payments "
                "accepted (%d refused tries first)\n", BALLAST, CHUNK, tries);
  wait_until("the terminal handles every accepted payment", db, log,
             all_handled);
  assert_nothing_lost(db, "healed");
  assert_int_equal(ts_sh("$OB_EMULATOR '%s/oncebox' --db '%s' check "
                         ">/dev/null", g_bin, db), 0);

  /* What stats says: a cap, from the filesystem, well inside it. */
  s = cli_stats(db, NULL);
  assert_non_null(s);
  print_message("stats: cap %.0f bytes (%s), reserve %.0f, in use %.0f\n",
                num(s, "space", "maxBytes"), str(s, "space", "capSource"),
                num(s, "space", "reserveBytes"), num(s, "space", "usedBytes"));
  assert_string_equal(str(s, "space", "capSource"), "filesystem");
  assert_true(num(s, "space", "maxBytes") > 2 * MIB);
  assert_true(num(s, "space", "maxBytes") < 6 * MIB);
  cJSON_Delete(s);

  kill(daemon, SIGTERM);
  assert_int_equal(waitpid(daemon, &status, 0), daemon);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
}

/* A pragma on the engine's own connection (they are per connection). */
static long long engine_pragma(fixture_t* f, const char* sql) {
  sqlite3_stmt* st;
  long long v = -1;
  assert_int_equal(sqlite3_prepare_v2(f->e->db.db, sql, -1, &st, NULL),
                   SQLITE_OK);
  if (sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return v;
}

/* Every way of opening: the CLI says where its cap came from; ob_open
** derives the same one, unless told "no cap" or given one. */
static void test_each_path_reports_its_cap(void** state) {
  char why[256], db[1024];
  ob_options_t o;
  ob_engine_t* e = NULL;
  ob_stats_t st;
  char err[256];
  cJSON* s;
  double cli_cap;
  (void)state;
  if (mount_tmpfs(why, sizeof why) == NULL) {
    print_message("skipped: no small tmpfs here: %s\n", why);
    skip();
  }
  snprintf(db, sizeof db, "%s/paths.db", g_mnt);
  assert_int_equal(ts_sh("$OB_EMULATOR '%s/oncebox' --db '%s' init "
                         ">/dev/null", g_bin, db), 0);
  s = cli_stats(db, NULL);
  assert_non_null(s);
  assert_string_equal(str(s, "space", "capSource"), "filesystem");
  cli_cap = num(s, "space", "maxBytes");
  cJSON_Delete(s);
  s = cli_stats(db, "ONCEBOX_MAX_DB_BYTES=none");
  assert_non_null(s);
  assert_string_equal(str(s, "space", "capSource"), "none");
  assert_true(num(s, "space", "maxBytes") == 0);
  cJSON_Delete(s);
  s = cli_stats(db, "ONCEBOX_MAX_DB_BYTES=1M");
  assert_non_null(s);
  assert_string_equal(str(s, "space", "capSource"), "configured");
  assert_true(num(s, "space", "maxBytes") == (double)MIB);
  cJSON_Delete(s);

  ob_options_init(&o);
  o.db_path = db;
  assert_int_equal(ob_open(&e, &o, err, sizeof err), 0);
  assert_int_equal(ob_stats(e, &st), 0);
  assert_true((double)st.db_max_bytes == cli_cap);
  assert_int_equal(st.db_cap_source, OB_CAP_FILESYSTEM);
  ob_close(e);
  o.max_db_bytes = OB_NO_DB_CAP;
  assert_int_equal(ob_open(&e, &o, err, sizeof err), 0);
  assert_int_equal(ob_stats(e, &st), 0);
  assert_int_equal(st.db_max_bytes, 0);
  assert_int_equal(st.db_cap_source, OB_CAP_NONE);
  ob_close(e);
  o.max_db_bytes = 3 * MIB;
  assert_int_equal(ob_open(&e, &o, err, sizeof err), 0);
  assert_int_equal(ob_stats(e, &st), 0);
  assert_int_equal(st.db_max_bytes, 3 * MIB);
  assert_int_equal(st.db_cap_source, OB_CAP_CONFIGURED);
  ob_close(e);
}

/* On the test's own (normally large) filesystem the derived cap leaves the
** WAL policy of decision 0017 as it was: the default cap only bites where
** the filesystem is small. */
static void test_big_fs_keeps_the_wal_policy(void** state) {
  fixture_t* f = fx_new(1);
  struct statvfs sv;
  ob__space_default_t d;
  ob_stats_t st;
  (void)state;
  if (ts_backend_is_pg()) {
    fx_free(f);
    skip();
  }
  assert_int_equal(statvfs(f->dir, &sv), 0);
  ob__space_default(ob__space_fs_bytes((int64_t)sv.f_blocks,
                                       (int64_t)sv.f_bfree,
                                       (int64_t)sv.f_bavail,
                                       (int64_t)sv.f_frsize),
                    &d);
  assert_int_equal(ob_stats(f->e, &st), 0);
  print_message("the test's filesystem: %llu bytes; derived cap %lld, WAL "
                "%lld\n",
                (unsigned long long)sv.f_blocks * sv.f_frsize,
                (long long)st.db_max_bytes, (long long)d.wal_bytes);
  assert_int_equal(st.db_cap_source, OB_CAP_FILESYSTEM);
  assert_int_equal(st.db_max_bytes, d.cap);
  /* A disk of more than about 128 MiB: decision 0017's WAL as it was. */
  if (d.wal_bytes >= 16 * MIB) {
    assert_int_equal(engine_pragma(f, "PRAGMA wal_autocheckpoint"), 8000);
    assert_int_equal(engine_pragma(f, "PRAGMA journal_size_limit"), 16 * MIB);
    assert_true(st.db_max_bytes > 64 * MIB);
  }
  fx_free(f);
}

static int group_setup(void** state) {
  (void)state;
  g_bin = getenv("OB_BINARY_DIR");
  if (g_bin == NULL) return -1;
  g_host = ts_mkdtemp("default-cap-host");
  /* Nothing configured: the defaults are what is tested. */
  unsetenv("ONCEBOX_MAX_DB_BYTES");
  unsetenv("ONCEBOX_RESERVE_DB_BYTES");
  unsetenv("ONCEBOX_WAL_CHECKPOINT_PAGES");
  unsetenv("ONCEBOX_WAL_SIZE_LIMIT");
  unsetenv("ONCEBOX_CONFIG");
  unsetenv("AWS_PROFILE");
  unsetenv("AWS_SESSION_TOKEN");
  setenv("HOME", g_host, 1);  /* no ~/.aws of the machine's */
  setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE", 1);
  setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
         1);
  setenv("AWS_REGION", "eu-west-1", 1);
  /* SQS unreachable: nothing listens on port 1 of loopback. */
  setenv("AWS_ENDPOINT_URL_SQS", "https://127.0.0.1:1", 1);
  return 0;
}

static int group_teardown(void** state) {
  (void)state;
  if (g_mnt != NULL) {
    (void)umount2(g_mnt, MNT_DETACH);
    rmdir(g_mnt);
    free(g_mnt);
  }
  if (g_host != NULL) ts_rmdir(g_host);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_small_fs_heals_with_no_configuration),
      cmocka_unit_test(test_each_path_reports_its_cap),
      cmocka_unit_test(test_big_fs_keeps_the_wal_policy),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
