/* SPDX-License-Identifier: Apache-2.0 */
/*
** A disk that fills while offline (issue 13, docs/field.md "A disk that
** fills while offline").
**
** The first cases run the policy on a real file with a fake clock: the
** reserve refuses new messages before the cap, critical types a little
** later, handling goes on inside it, and giving space back deletes only
** published outbox rows, oldest first.
**
** The last case is the field's whole cycle with real processes on a real
** small tmpfs (a private mount namespace; root only, else it skips): an
** `oncebox`-style daemon (the library in a forked child, with a relay whose
** probes are short so the test is quick) handles payments while SQS is
** unreachable; the real `oncebox enqueue` binary, run as separate
** processes like a till's integration, fills the database until it is
** refused (exit 6); the daemon's CPU and log output are measured while it
** sits full; SQS comes back; everything is published, space is given back,
** and enqueues are accepted again. "Unreachable" is sqs_server.mjs
** resetting every connection after the TLS handshake (what a captive
** portal or a dead uplink behind a NAT does to a terminal); "back" is the
** same fauxqs serving again.
*/
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "oncebox_payout.h"
#include "tests/integration/engine_fixture.h"
#include "tests/integration/sqs/sqs_test_util.h"

#define KIB 1024LL
#define MIB (1024LL * 1024)

/* ---- the policy on a real file ------------------------------------------- */

static fixture_t* capped(int64_t cap, int64_t reserve) {
  fixture_t* f = fx_new(16);
  ob_close(f->e);
  f->e = NULL;
  f->opts.max_db_bytes = cap;
  f->opts.reserve_db_bytes = reserve;
  fx_open(f);
  assert_int_equal(ob_register_payout(f->e), 0);
  return f;
}

/* A body of about 600 bytes that no handler is registered for. */
static int enqueue_filler(fixture_t* f, int n) {
  char id[OB_UUID_BUFLEN], body[640];
  memset(body, 'x', sizeof body - 1);
  body[0] = '"';
  body[sizeof body - 2] = '"';
  body[sizeof body - 1] = '\0';
  snprintf(id, sizeof id, "0190b6d8-3ae7-7ca2-a653-1%011d", n);
  return fx_enqueue(f, "OrderPlaced", id, body);
}

static int enqueue_payment(fixture_t* f, int n) {
  char id[OB_UUID_BUFLEN], body[256];
  return fx_enqueue(f, OB_PAYOUT_MESSAGE_TYPE, fx_event(n, id),
                    fx_payment(n, body));
}

static ob_stats_t stats_of(fixture_t* f) {
  ob_stats_t s;
  assert_int_equal(ob_stats(f->e, &s), 0);
  return s;
}

/* Other types are refused at cap - reserve, critical ones (the payout
** module marks PaymentCaptured) until cap - reserve/2, and the refusal
** names the cap; handling of what is queued goes on. */
static void test_reserve_refuses_other_types_first(void** state) {
  fixture_t* f = capped(1 * MIB, 256 * KIB);
  ob_stats_t s;
  int n = 0, rc, payments = 0;
  (void)state;
  while ((rc = enqueue_filler(f, n)) == 0) n++;
  assert_int_equal(rc, OB_ENOSPC);
  assert_non_null(strstr(ob_errmsg(f->e), "of its 1.0 MiB cap"));
  assert_non_null(strstr(ob_errmsg(f->e), "OrderPlaced"));
  s = stats_of(f);
  assert_int_equal(s.db_max_bytes, 1 * MIB);
  assert_int_equal(s.db_reserve_bytes, 256 * KIB);
  assert_int_equal(s.space_level, 1);
  assert_true(s.db_bytes >= 1 * MIB - 256 * KIB - 4 * KIB);
  assert_true(s.db_bytes < 1 * MIB - 128 * KIB);
  /* Money still enters the first half of the reserve. */
  while ((rc = enqueue_payment(f, payments)) == 0) payments++;
  assert_int_equal(rc, OB_ENOSPC);
  assert_true(payments > 10);
  assert_non_null(strstr(ob_errmsg(f->e), "critical ones too"));
  s = stats_of(f);
  assert_true(s.space_level >= 2);
  assert_true(s.db_bytes < 1 * MIB);
  /* Nothing is lost: every accepted message is queued. */
  assert_int_equal(fx_count(f, "SELECT count(*) FROM queue"), n + payments);
  fx_free(f);
}

/* Inside ob_enqueue_many, each message meets the pages the batch used so
** far: the batch commits what fits and reports OB_ENOSPC for the rest. */
static void test_batch_commits_what_fits(void** state) {
  fixture_t* f = capped(512 * KIB, OB_RESERVE_AUTO);
  enum { N = 1200 };
  static ob_envelope_t envs[N];
  static char ids[N][OB_UUID_BUFLEN];
  static int results[N];
  static char body[400];
  int committed, refused = 0;
  (void)state;
  memset(body, 'y', sizeof body - 1);
  body[0] = '"';
  body[sizeof body - 2] = '"';
  for (int i = 0; i < N; i++) {
    snprintf(ids[i], sizeof ids[i], "0190b6d8-3ae7-7ca2-a653-2%011d", i);
    memset(&envs[i], 0, sizeof envs[i]);
    envs[i].id = ids[i];
    envs[i].type = "OrderPlaced";
    envs[i].body = body;
    envs[i].body_len = strlen(body);
  }
  committed = ob_enqueue_many(f->e, envs, N, results);
  assert_true(committed > 100);
  for (int i = 0; i < N; i++) {
    if (results[i] == OB_ENOSPC) refused++;
    else assert_int_equal(results[i], 0);
  }
  assert_int_equal(committed + refused, N);
  assert_true(refused > 0);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM queue"), committed);
  fx_free(f);
}

/* Run batches until nothing is ready or handling pauses for space. */
static void drain(fixture_t* f) {
  ob_batch_result_t r;
  int rc;
  do {
    rc = ob_run_once(f->e, &r);
    if (rc == OB_ENOSPC) return;
    assert_int_equal(rc, 0);
  } while (r.claimed > 0);
}

static void exec_sql(fixture_t* f, const char* sql) {
  sqlite3* db;
  assert_int_equal(sqlite3_open(f->db_path, &db), SQLITE_OK);
  sqlite3_busy_timeout(db, 5000);
  if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
    fail_msg("%s: %s", sql, sqlite3_errmsg(db));
  sqlite3_close(db);
}

/* Full of unpublished payouts: nothing can be given back, refusals stay.
** Once the relay published them (published_at set here as the relay sets
** it), the next refused enqueue gives back published rows, oldest
** publication first, and is accepted; no unpublished row and no dedup
** record inside its window is deleted. */
static void test_published_rows_are_given_back(void** state) {
  fixture_t* f = capped(1 * MIB, 256 * KIB);
  int n = 0, rc;
  long long payouts, processed, older, newer;
  char sql[512];
  (void)state;
  while ((rc = enqueue_payment(f, n)) == 0) {
    n++;
    if (n % 50 == 0) drain(f);
  }
  assert_int_equal(rc, OB_ENOSPC);
  drain(f);
  payouts = fx_count(f, "SELECT count(*) FROM merchant_payout");
  assert_true(payouts > 100);
  fake_clock_advance(&f->clock, 2000);  /* past the heal interval */
  assert_int_equal(enqueue_payment(f, n), OB_ENOSPC);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM outbox_event"), payouts);
  /* All but the newest 5 published: the older half at T0+1 s, the newer
  ** half at T0+61 s. */
  older = (payouts - 5) / 2;
  newer = payouts - 5 - older;
  snprintf(sql, sizeof sql,
           "UPDATE outbox_event SET published_at = %lld WHERE id IN (SELECT"
           " id FROM outbox_event ORDER BY created_at, id LIMIT %lld);"
           "UPDATE outbox_event SET published_at = %lld WHERE id IN (SELECT"
           " id FROM outbox_event WHERE published_at IS NULL ORDER BY"
           " created_at, id LIMIT %lld)",
           FX_T0 + 1000, older, FX_T0 + 61000, newer);
  exec_sql(f, sql);
  fake_clock_advance(&f->clock, 2000);
  processed = fx_count(f, "SELECT count(*) FROM processed_message");
  /* Rewriting rows may rebalance pages and free a few, so the level may
  ** allow some before the first refusal: enough new ones to reach it.
  ** Each is accepted, the first refused one after giving space back. */
  /* (How many fit before it depends on the schema's own pages: enqueue
  ** until the reserve is reached and published rows give way, each one
  ** accepted, at most 2000.) */
  for (int i = 0; i < 2000 &&
                  fx_count(f, "SELECT count(*) FROM outbox_event") >= payouts;
       i++)
    assert_int_equal(enqueue_payment(f, n + i), 0);
  assert_true(fx_count(f, "SELECT count(*) FROM outbox_event") < payouts);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM outbox_event WHERE"
                               " published_at IS NULL"), 5);
  /* Oldest first: a newer one went only after every older one. */
  snprintf(sql, sizeof sql, "SELECT count(*) FROM outbox_event WHERE"
           " published_at = %lld", FX_T0 + 61000);
  if (fx_count(f, sql) < newer) {
    snprintf(sql, sizeof sql, "SELECT count(*) FROM outbox_event WHERE"
             " published_at = %lld", FX_T0 + 1000);
    assert_int_equal(fx_count(f, sql), 0);
  }
  assert_int_equal(fx_count(f, "SELECT count(*) FROM processed_message"),
                   processed);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM merchant_payout"),
                   payouts);
  assert_int_equal(stats_of(f).space_level, 0);
  fx_free(f);
}

static int count_violations(ob_engine_t* e) {
  return ob_check(e, NULL, NULL);
}

/* Payouts whose published events retention (or the reserve) deleted are
** not "lost": before the retention_swept mark, `check` reported every payout
** older than the retention window as having 0 events, so a terminal in
** service for 31 days failed its own check. */
static void test_check_clean_after_published_rows_go(void** state) {
  fixture_t* f = fx_new(8);
  int64_t deleted = 0;
  (void)state;
  assert_int_equal(ob_register_payout(f->e), 0);
  for (int i = 0; i < 20; i++) assert_int_equal(enqueue_payment(f, i), 0);
  drain(f);
  exec_sql(f, "UPDATE outbox_event SET published_at = created_at + 1");
  assert_int_equal(count_violations(f->e), 0);
  fake_clock_advance(&f->clock, 31LL * 24 * 3600 * 1000);
  assert_int_equal(ob_gc(f->e, &deleted), 0);
  assert_int_equal(deleted, 40);  /* 20 dedup records, 20 events */
  assert_int_equal(fx_count(f, "SELECT count(*) FROM outbox_event"), 0);
  assert_int_equal(count_violations(f->e), 0);
  /* A payout after the sweep still needs its event. */
  assert_int_equal(enqueue_payment(f, 100), 0);
  drain(f);
  exec_sql(f, "DELETE FROM outbox_event");
  assert_int_equal(count_violations(f->e), 1);
  fx_free(f);
}

/* The reserve's bounds: at most half the cap; ignored without a cap. */
static void test_reserve_option_bounds(void** state) {
  fixture_t* f = fx_new(1);
  ob_engine_t* e = NULL;
  ob_options_t o = f->opts;
  char err[256];
  (void)state;
  o.max_db_bytes = 1 * MIB;
  o.reserve_db_bytes = 1 * MIB / 2 + 1;
  assert_int_equal(ob_open(&e, &o, err, sizeof err), OB_EINVAL);
  assert_non_null(strstr(err, "reserve_db_bytes"));
  o.reserve_db_bytes = -2;
  assert_int_equal(ob_open(&e, &o, err, sizeof err), OB_EINVAL);
  o.max_db_bytes = OB_NO_DB_CAP;  /* 0 would derive one from the disk */
  o.reserve_db_bytes = 5 * MIB;
  assert_int_equal(ob_open(&e, &o, err, sizeof err), 0);
  assert_int_equal(stats_of(&(fixture_t){.e = e}).db_reserve_bytes, 0);
  assert_int_equal(ob_mark_critical(e, ""), OB_EINVAL);
  assert_int_equal(ob_mark_critical(e, "Refund"), 0);
  assert_int_equal(ob_mark_critical(e, "Refund"), 0);
  ob_close(e);
  fx_free(f);
}

/* ---- the whole cycle on a tmpfs, with real processes -------------------- */

#define CYCLE_CAP (2 * MIB)
#define CYCLE_TMPFS "16m"
#define CHUNK 100

static sq_server_t g_srv;
static const char* g_skip;
static char* g_mnt;

/* A tmpfs in a mount namespace of this process (children inherit it; even
** a SIGKILL leaves nothing mounted on the host). NULL and why if this
** machine does not allow it. */
static const char* mount_tmpfs(char* why, size_t n) {
  g_mnt = ts_private_tmpfs("disk-cycle", "size=" CYCLE_TMPFS ",mode=0700",
                           why, n);
  return g_mnt;
}

static void child_log(void* ctx, ob_log_level_t level, const char* msg) {
  static const char* names[] = {"error", "warn", "info", "debug"};
  (void)ctx;
  fprintf(stderr, "%s %s\n", names[level], msg);
}

/* The daemon: what `oncebox run` does, with probes of at most 2 s. */
static pid_t start_daemon(const char* db, const char* queue_url,
                          const char* log_path) {
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    ob_options_t o;
    ob_relay_options_t r;
    ob_engine_t* e = NULL;
    char err[256];
    int fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || dup2(fd, 2) < 0) _exit(20);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    ob_options_init(&o);
    o.db_path = db;
    o.max_db_bytes = CYCLE_CAP;
    o.log = child_log;
    o.batch_size = 16;
    if (ob_open(&e, &o, err, sizeof err) != 0) {
      fprintf(stderr, "ob_open: %s\n", err);
      _exit(21);
    }
    if (ob_register_payout(e) != 0) _exit(22);
    ob_relay_options_init(&r);
    r.queue_url = queue_url;
    r.source = "urn:oncebox:test-terminal";
    /* Probes every 2 s at most: quick to see SQS back, and few enough
    ** TLS handshakes not to dominate the CPU measured while full. */
    r.backoff_base_ms = 100;
    r.backoff_cap_ms = 2000;
    r.probe.base_ms = 100;
    r.probe.cap_ms = 2000;
    if (ob_relay_enable(e, &r, err, sizeof err) != 0) {
      fprintf(stderr, "ob_relay_enable: %s\n", err);
      _exit(23);
    }
    int rc = ob_run(e, OB_RUN_FOREVER, 1);
    ob_close(e);
    fflush(stderr);
    _exit(rc == 0 ? 0 : 24);
  }
  return pid;
}

/* utime + stime of pid in seconds. */
static double cpu_seconds(pid_t pid) {
  char path[64], buf[1024];
  unsigned long ut = 0, st = 0;
  FILE* fp;
  char* p;
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  fp = fopen(path, "r");
  assert_non_null(fp);
  assert_non_null(fgets(buf, sizeof buf, fp));
  fclose(fp);
  p = strrchr(buf, ')');  /* the command name may hold spaces */
  assert_non_null(p);
  /* Fields after the name: state(3) ... utime(14) stime(15). */
  assert_int_equal(sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u "
                          "%*u %lu %lu", &ut, &st), 2);
  return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static long long file_size(const char* path) {
  struct stat st;
  return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

/* `oncebox enqueue --ndjson` of payments [from, from + n) under a 2 MiB cap
** (fx_cli_enqueue). */
static int cli_enqueue(const char* bin, const char* db, int from, int n,
                       int* accepted) {
  return fx_cli_enqueue("ONCEBOX_MAX_DB_BYTES=2M", bin, g_srv.dir, db, from,
                        n, accepted);
}

/* The daemon's database seen from outside: one stats --json field. */
static cJSON* cli_stats(const char* bin, const char* db) {
  char out[1024];
  FILE* fp;
  static char buf[16384];
  size_t n;
  snprintf(out, sizeof out, "%s/stats.json", g_srv.dir);
  assert_int_equal(ts_sh("ONCEBOX_MAX_DB_BYTES=2M $OB_EMULATOR '%s/oncebox' --db '%s' stats "
                      "--json >'%s' 2>/dev/null", bin, db, out), 0);
  fp = fopen(out, "r");
  assert_non_null(fp);
  n = fread(buf, 1, sizeof buf - 1, fp);
  fclose(fp);
  buf[n] = '\0';
  cJSON* o = cJSON_Parse(buf);
  assert_non_null(o);
  return o;
}

static double num(cJSON* o, const char* a, const char* b) {
  cJSON* x = cJSON_GetObjectItem(o, a);
  if (b != NULL) x = cJSON_GetObjectItem(x, b);
  assert_non_null(x);
  return cJSON_IsBool(x) ? (double)cJSON_IsTrue(x) : x->valuedouble;
}

/* Every paymentId the queue holds (receiving and deleting). */
static int received_payments(const char* queue_url, char* seen, int max) {
  uv_loop_t loop;
  sq_clock_t clock;
  ob__sqs_client_config_t cfg;
  ob__sqs_client_t* c = NULL;
  char err[256];
  int distinct = 0;
  uv_loop_init(&loop);
  sq_clock_init(&clock, 0, -1);
  sq_client_config(&g_srv, &cfg, SQ_SECRET, &clock.clock);
  assert_int_equal(ob__sqs_client_open(&c, &loop, &cfg, err, sizeof err), 0);
  for (;;) {
    ob__sqs_receive_t p;
    ob__sqs_req_t req;
    sq_done_t done = {0, 0};
    size_t n;
    memset(&p, 0, sizeof p);
    p.queue_url = queue_url;
    p.max_messages = 10;
    p.visibility_timeout = 60;
    memset(&req, 0, sizeof req);
    req.data = &done;
    assert_int_equal(ob__sqs_receive_message(c, &req, &p, sq_cb), 0);
    assert_int_equal(sq_wait(&loop, &req), 0);
    n = req.receive.n;
    for (size_t i = 0; i < n; i++) {
      const ob__sqs_message_t* m = &req.receive.messages[i];
      cJSON* ev = cJSON_ParseWithLength(m->body, m->body_len);
      cJSON* pid;
      int k;
      assert_non_null(ev);
      pid = cJSON_GetObjectItem(cJSON_GetObjectItem(ev, "data"), "paymentId");
      assert_non_null(pid);
      k = atoi(pid->valuestring + strlen("5c4080b1-b5d2-4e91-8de8-"));
      assert_true(k >= 0 && k < max);
      if (!seen[k]) distinct++;
      seen[k] = 1;
      cJSON_Delete(ev);
      ob__sqs_req_t del;
      sq_done_t d2 = {0, 0};
      memset(&del, 0, sizeof del);
      del.data = &d2;
      assert_int_equal(ob__sqs_delete_message(c, &del, queue_url,
                                             m->receipt_handle, sq_cb), 0);
      assert_int_equal(sq_wait(&loop, &del), 0);
      ob__sqs_req_cleanup(&del);
    }
    ob__sqs_req_cleanup(&req);
    if (n == 0) break;
  }
  ob__sqs_client_close(c, NULL, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  uv_loop_close(&loop);
  return distinct;
}

static void wait_until(const char* what, int timeout_s, const char* bin,
                       const char* db, int (*done)(cJSON* s)) {
  time_t end = time(NULL) + timeout_s;
  for (;;) {
    cJSON* s = cli_stats(bin, db);
    int ok = done(s);
    if (!ok && time(NULL) > end) {
      char* t = cJSON_PrintUnformatted(s);
      fprintf(stderr, "last stats: %s\n", t ? t : "?");
      free(t);
      cJSON_Delete(s);
      fail_msg("not within %d s: %s", timeout_s, what);
    }
    cJSON_Delete(s);
    if (ok) return;
    usleep(200 * 1000);
  }
}

static int handled_all_it_may(cJSON* s) {
  /* Nothing ready, or handling paused for space (level 3). */
  return num(s, "queue", "ready") == 0 || num(s, "space", "level") == 3;
}

static int all_published(cJSON* s) {
  return num(s, "queue", "ready") == 0 && num(s, "queue", "delayed") == 0 &&
         num(s, "outbox", "unpublished") == 0;
}

static int accepting(cJSON* s) { return num(s, "space", "refusing") == 0; }

static void test_whole_cycle_on_tmpfs(void** state) {
  const char* bin = getenv("OB_BINARY_DIR");
  char why[256], db[1024], log_path[1024];
  char* q;
  pid_t daemon;
  int next = 0, accepted = 0, got, code, status;
  long long total_accepted = 0;
  double cpu0, cpu1;
  long long log0, log1;
  static char seen[100000];
  (void)state;
  if (g_skip) {
    print_message("%s\n", g_skip);
    skip();
  }
  if (mount_tmpfs(why, sizeof why) == NULL) {
    print_message("skipped: no small tmpfs here: %s\n", why);
    skip();
  }
  assert_non_null(bin);
  snprintf(db, sizeof db, "%s/terminal.db", g_mnt);
  snprintf(log_path, sizeof log_path, "%s/daemon.log", g_srv.dir);
  q = sq_create_queue(&g_srv, "disk-cycle", NULL);
  /* Offline: every connection is reset after the handshake. */
  sq_fault(&g_srv, "{\"count\":200000,\"mode\":\"reset\"}");
  assert_int_equal(ts_sh("$OB_EMULATOR '%s/oncebox' --db '%s' init >/dev/null", bin, db), 0);
  daemon = start_daemon(db, q, log_path);

  /* Fill: chunks of payments until the reserve refuses them. */
  for (;;) {
    code = cli_enqueue(bin, db, next, CHUNK, &accepted);
    assert_true(accepted >= 0);
    total_accepted += accepted;
    if (code == 6) break;
    assert_int_equal(code, 0);
    assert_int_equal(accepted, CHUNK);
    next += CHUNK;
    assert_true(next < 20000);
  }
  /* Refused lines are the chunk's last ones (one transaction: the pages
  ** in use only grow), so the accepted ones are [0, next + accepted). */
  int first_refused = next + accepted;
  print_message("filled: %lld payments accepted, then refused (exit 6)\n",
                total_accepted);
  /* Another type is refused too, with exit 6 and the reason. */
  assert_int_equal(ts_sh("ONCEBOX_MAX_DB_BYTES=2M $OB_EMULATOR '%s/oncebox' --db '%s' enqueue "
                      "--type OrderPlaced --id "
                      "0190b6d8-3ae7-7ca2-a653-999999999999 --body '{}' "
                      "2>'%s/refused.err'", bin, db, g_srv.dir), 6);
  assert_int_equal(ts_sh("grep -q 'of its 2.0 MiB cap' '%s/refused.err'",
                      g_srv.dir), 0);
  /* Handling goes on inside the reserve. */
  wait_until("the daemon handles what is queued", 60, bin, db,
             handled_all_it_may);

  /* Sitting full and offline while the till keeps trying: bounded CPU and
  ** log output. */
  cpu0 = cpu_seconds(daemon);
  log0 = file_size(log_path);
  for (int i = 0; i < 10; i++) {
    (void)cli_enqueue(bin, db, first_refused, 5, &accepted);
    assert_int_equal(accepted, 0);
    usleep(500 * 1000);
  }
  cpu1 = cpu_seconds(daemon);
  log1 = file_size(log_path);
  print_message("full and offline for about 5 s: daemon CPU %.2f s, log "
                "+%lld bytes\n", cpu1 - cpu0, log1 - log0);
  /* The field saw 8.4-9.1 s of CPU per 10 s and 376 MB of log in 4 min. */
  assert_true(cpu1 - cpu0 < 1.5);
  assert_true(log1 - log0 < 16 * 1024);

  /* Online: published, given back, accepting again, without a person. */
  sq_clear(&g_srv);
  wait_until("everything is published", 120, bin, db, all_published);
  wait_until("new messages are accepted again", 60, bin, db, accepting);
  code = cli_enqueue(bin, db, first_refused, next + CHUNK - first_refused,
                     &accepted);
  assert_int_equal(code, 0);
  total_accepted += accepted;
  wait_until("the rest is published", 120, bin, db, all_published);

  kill(daemon, SIGTERM);
  assert_int_equal(waitpid(daemon, &status, 0), daemon);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);

  /* 0 lost: every accepted payment has its payout and reached SQS. */
  {
    fixture_t f;
    memset(&f, 0, sizeof f);
    f.db_path = db;
    assert_int_equal(fx_count(&f, "SELECT count(*) FROM merchant_payout"),
                     total_accepted);
    assert_int_equal(fx_count(&f, "SELECT count(*) FROM failed_message"), 0);
  }
  got = received_payments(q, seen, (int)sizeof seen);
  assert_int_equal(got, total_accepted);
  for (int i = 0; i < next + CHUNK; i++)
    if (!seen[i]) fail_msg("payment %d never reached SQS", i);
  assert_int_equal(ts_sh("$OB_EMULATOR '%s/oncebox' --db '%s' check", bin, db), 0);
  if (ts_sh("grep -q 'deleted early' '%s'", log_path) != 0) {
    (void)ts_sh("tail -20 '%s'", log_path);
    fail_msg("the daemon never gave space back");
  }
  free(q);
}

static int group_setup(void** state) {
  (void)state;
  g_skip = sq_skip_reason();
  if (g_skip != NULL) return 0;
  if (sq_server_start(&g_srv, "disk-cycle", NULL) != 0) return -1;
  setenv("AWS_ACCESS_KEY_ID", SQ_AKID, 1);
  setenv("AWS_SECRET_ACCESS_KEY", SQ_SECRET, 1);
  setenv("AWS_REGION", SQ_REGION, 1);
  setenv("AWS_CA_BUNDLE", g_srv.ca_file, 1);
  unsetenv("AWS_PROFILE");
  unsetenv("AWS_SESSION_TOKEN");
  {
    char url[64];
    snprintf(url, sizeof url, "https://localhost:%d", g_srv.port);
    setenv("AWS_ENDPOINT_URL_SQS", url, 1);
  }
  return 0;
}

static int group_teardown(void** state) {
  (void)state;
  if (g_skip == NULL) sq_server_stop(&g_srv);
  if (g_mnt != NULL) {
    (void)umount2(g_mnt, MNT_DETACH);
    rmdir(g_mnt);
  }
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reserve_refuses_other_types_first),
      cmocka_unit_test(test_batch_commits_what_fits),
      cmocka_unit_test(test_published_rows_are_given_back),
      cmocka_unit_test(test_reserve_option_bounds),
      cmocka_unit_test(test_check_clean_after_published_rows_go),
      cmocka_unit_test(test_whole_cycle_on_tmpfs),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
