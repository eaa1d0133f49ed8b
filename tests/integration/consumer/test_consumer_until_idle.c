/* SPDX-License-Identifier: Apache-2.0 */
/*
** `run --until-idle` with an SQS consume queue means done, end to end: the
** oncebox binary (and, for a handler that retries, the library) on real
** SQLite files, against fauxqs behind the SigV4-verifying TLS terminator
** (tests/integration/sqs/sqs_server.mjs), with other consumers of the same
** queue as real processes: a first oncebox worker killed with SIGKILL, and
** the AWS SDK for JavaScript (tests/interop/sdk_hold.mjs) receiving without
** deleting, or holding messages by extending their visibility.
**
**   - messages a killed worker left in flight are handled before the run
**     ends, exit 0 (before: the run ended on its first empty receive);
**   - the visibility sent is the configured one, or the queue's own by
**     default: a message that was received and not deleted becomes visible
**     to another client seconds later on a queue whose own is 60 s;
**   - messages someone keeps hidden past the bound: exit 5 and a "not
**     done:" line naming them; a run with a longer --visibility-timeout
**     waits for them once the holder is gone;
**   - GetQueueAttributes refused: the default visibility with a warning;
**     counts that can't be read end in exit 5, never 0;
**   - the consumer's own retry, delayed past the visibility timeout, is
**     waited for (library).
**
** fauxqs 1.9.2 answers GetQueueAttributes with ApproximateNumberOfMessages,
** ...NotVisible, ...Delayed and VisibilityTimeout. It moves messages whose
** visibility ended back to visible only on a ReceiveMessage (or during a
** long poll), never on GetQueueAttributes: a message whose visibility ended
** counts as not visible until someone receives. The consumer always asks for
** the counts right after a receive, so it sees them right; the tests never
** wait on the counts alone.
**
** Deadlines are generous (the machine is shared); nothing asserts how long
** something took. Skips with a message without node or
** tests/interop/node_modules.
*/
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "oncebox_payout.h"
#include "platform/consumer/consumer.h"
#include "tests/integration/consumer/consumer_test_util.h"
#include "tests/support/backend.h"
#include "tests/support/testsupport.h"

static sq_server_t g_srv;
static const char* g_skip;
static char* g_home;
static char* g_dir;
static char g_oncebox[4200];
static int g_seq;

#define SKIP_WITHOUT_SERVER() \
  do {                        \
    if (g_skip != NULL) skip(); \
  } while (0)

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static char* slurp(const char* path) {
  FILE* f = fopen(path, "rb");
  char* b;
  long n;
  if (f == NULL) return strdup("");
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fseek(f, 0, SEEK_SET);
  b = calloc(1, (size_t)n + 1);
  if (n > 0 && fread(b, 1, (size_t)n, f) != (size_t)n) b[0] = '\0';
  fclose(f);
  return b;
}

static int count_in(const char* text, const char* needle) {
  int n = 0;
  for (const char* p = text; p && (p = strstr(p, needle)) != NULL; p++) n++;
  return n;
}

static char* new_path(const char* what) {
  char name[64];
  /* Tests make their paths in declarations, ahead of SKIP_WITHOUT_SERVER():
  ** without a server there is no g_dir (a NULL dir crashed the test where
  ** fauxqs was missing), so the skip happens here too. */
  SKIP_WITHOUT_SERVER();
  snprintf(name, sizeof name, "%s-%d", what, ++g_seq);
  return ts_path(g_dir, name);
}

/* A fresh database: a file in g_dir, or one on the test's own PostgreSQL
** server (consumer_until_idle_pg). */
static char* new_db(const char* what) {
  char name[64];
  SKIP_WITHOUT_SERVER();
  snprintf(name, sizeof name, "%s-%d", what, ++g_seq);
  return ts_backend_db(g_dir, name);
}

static long long db_count(const char* db, const char* sql) {
  return ts_backend_count(db, sql);
}

static long long payouts(const char* db) {
  return db_count(db, "SELECT count(*) FROM merchant_payout");
}

/* ---- processes ----------------------------------------------------------- */

/* `oncebox --db DB --log-level debug run --consume-queue-url URL ARGS`, its
** stdout and stderr in out_path, as a process of its own (ht_spawn: killed
** if the test dies). */
static ht_proc_t* spawn_oncebox(const char* db, const char* url,
                                const char* out_path, const char* args) {
  char cmd[8192];
  const char* argv[] = {"/bin/sh", "-c", cmd, NULL};
  ht_proc_t* p;
  /* exec: the pid is oncebox's own, so SIGKILL reaches it. */
  snprintf(cmd, sizeof cmd,
           "exec $OB_EMULATOR '%s' --db '%s' --log-level debug run --consume-queue-url "
           "'%s' %s </dev/null",
           g_oncebox, db, url, args);
  p = ht_spawn(argv, out_path);
  assert_non_null(p);
  return p;
}

/* Run it to its end (at most timeout_ms, else SIGKILL and fail); returns
** its exit status, *out its output (malloc'd). */
static int run_oncebox(const char* db, const char* url, const char* args,
                       int timeout_ms, char** out) {
  char* path = new_path("run.out");
  ht_proc_t* p = spawn_oncebox(db, url, path, args);
  int st = 0, rc = -2;
  for (int waited = 0; waited < timeout_ms; waited += 20) {
    if (waitpid(p->pid, &st, WNOHANG) == p->pid) {
      rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      p->pid = 0;  /* reaped: ht_stop only frees */
      break;
    }
    sleep_ms(20);
  }
  ht_stop(p);  /* SIGKILL after 2 s if still running */
  *out = slurp(path);
  free(path);
  if (rc == -2) fail_msg("oncebox run did not end within %d ms:\n%s",
                         timeout_ms, *out);
  assert_null(strstr(*out, SQ_SECRET));
  return rc;
}

/* Print the line of text that starts with prefix (for the test's log). */
static void print_line(const char* text, const char* prefix) {
  const char* at = strstr(text, prefix);
  if (at != NULL) print_message("  %.*s\n", (int)strcspn(at, "\n"), at);
}

/* Wait until the process's output holds needle n times. */
static void wait_for(ht_proc_t* p, const char* needle, int n, int timeout_ms) {
  for (int waited = 0;; waited += 20) {
    char* out = ht_output(p);
    int k = count_in(out, needle);
    if (k >= n) {
      free(out);
      return;
    }
    if (waited > timeout_ms)
      fail_msg("'%s' %d times: only %d within %d ms:\n%s", needle, n, k,
               timeout_ms, out);
    free(out);
    sleep_ms(20);
  }
}

/* SIGKILL: dies holding whatever it holds. */
static void kill_dead(ht_proc_t* p) {
  assert_int_equal(kill(p->pid, SIGKILL), 0);
  ht_stop(p);
}

/* tests/interop/sdk_hold.mjs: receives n messages with the AWS SDK (with
** this VisibilityTimeout, or the queue's when visibility < 0) and never
** deletes them; extend_s > 0 keeps them hidden until stopped, else it exits
** at once. Returns once it holds them. */
static ht_proc_t* sdk_hold(const char* url, int n, int visibility,
                           int extend_s) {
  char script[4300], endpoint[64], num[16];
  const char* argv[] = {"node", script, endpoint, SQ_REGION, url,
                        g_srv.ca_file, NULL};
  char* out = new_path("sdk-hold.out");
  ht_proc_t* p;
  snprintf(script, sizeof script, "%s/tests/interop/sdk_hold.mjs",
           getenv("OB_SOURCE_DIR"));
  snprintf(endpoint, sizeof endpoint, "https://localhost:%d", g_srv.port);
  snprintf(num, sizeof num, "%d", n);
  setenv("OB_SDK_HOLD_N", num, 1);
  if (visibility >= 0) {
    snprintf(num, sizeof num, "%d", visibility);
    setenv("OB_SDK_VISIBILITY", num, 1);
  } else {
    unsetenv("OB_SDK_VISIBILITY");
  }
  snprintf(num, sizeof num, "%d", extend_s);
  setenv("OB_SDK_EXTEND_S", num, 1);
  p = ht_spawn(argv, out);
  free(out);
  assert_non_null(p);
  if (ht_wait_number(p, "HELD ", 40000) != n) {
    char* o = ht_output(p);
    fail_msg("sdk_hold.mjs did not hold %d messages:\n%s", n, o);
  }
  return p;
}

/* ---- SQS from the test's side -------------------------------------------- */

/* One ReceiveMessage (long poll wait_s, the queue's visibility); deletes
** what it got. Returns how many. */
static size_t receive_and_delete(const char* url, int wait_s) {
  static const char* const all[] = {"All"};
  ct_sqs_t s;
  ob__sqs_receive_t p;
  ob__sqs_req_t req;
  sq_done_t d = {0, 0};
  size_t n;
  ct_sqs_open(&g_srv, &s);
  ob__sqs_receive_init(&p);
  p.queue_url = url;
  p.max_messages = 10;
  p.wait_time_seconds = wait_s;
  p.message_attribute_names = all;
  p.nmessage_attribute_names = 1;
  memset(&req, 0, sizeof req);
  req.data = &d;
  assert_int_equal(ob__sqs_receive_message(s.c, &req, &p, sq_cb), 0);
  assert_int_equal(sq_wait(&s.loop, &req), 0);
  n = req.receive.n;
  for (size_t i = 0; i < n; i++) {
    ob__sqs_req_t del;
    sq_done_t dd = {0, 0};
    memset(&del, 0, sizeof del);
    del.data = &dd;
    assert_int_equal(
        ob__sqs_delete_message(s.c, &del, url,
                               req.receive.messages[i].receipt_handle, sq_cb),
        0);
    assert_int_equal(sq_wait(&s.loop, &del), 0);
    ob__sqs_req_cleanup(&del);
  }
  ob__sqs_req_cleanup(&req);
  ct_sqs_close(&s);
  return n;
}

static void send_payments(const char* url, int first, int n) {
  char* bodies[10];
  assert_true(n <= 10);
  for (int i = 0; i < n; i++) bodies[i] = ct_payment_event(first + i);
  ct_send_bodies(&g_srv, url, bodies, (size_t)n, NULL);
  for (int i = 0; i < n; i++) free(bodies[i]);
}

/* ---- setup --------------------------------------------------------------- */

static int group_setup(void** state) {
  const char* bin = getenv("OB_BINARY_DIR");
  (void)state;
  g_skip = sq_skip_reason();
  if (g_skip == NULL && !ht_localhost_is_127())
    g_skip = "skipped: localhost does not resolve to 127.0.0.1 only";
  if (g_skip != NULL) {
    printf("%s\n", g_skip);
    return 0;
  }
  snprintf(g_oncebox, sizeof g_oncebox, "%s/oncebox", bin ? bin : ".");
  if (sq_server_start(&g_srv, "until-idle", NULL) != 0) return -1;
  g_home = ts_path(g_srv.dir, "home");
  g_dir = ts_path(g_srv.dir, "work");
  mkdir(g_home, 0700);
  mkdir(g_dir, 0700);
  ct_set_env(&g_srv, g_home);
  return 0;
}

static int group_teardown(void** state) {
  (void)state;
  if (g_skip != NULL) return 0;
  free(g_home);
  free(g_dir);
  sq_server_stop(&g_srv);
  return 0;
}

/* ---- messages a killed worker held --------------------------------------- */

/* A first terminal's worker receives 5 messages, handles them, and is
** SIGKILLed before any is deleted (its first DeleteMessageBatch hangs; the
** rest wait behind it, kept invisible by its keepalive). On a queue whose
** VisibilityTimeout is 3 s, `run --until-idle` of a second terminal must
** wait for them, handle all 5 and exit 0. Before, it ended after its first
** empty 2 s receive with all 5 still in flight and nothing handled. */
static void test_killed_worker_messages_are_handled(void** state) {
  char* url;
  char* db_a = new_db("a.db");
  char* db_b = new_db("b.db");
  char* log_a = new_path("killed.out");
  char* out;
  long hidden = -1;
  ht_proc_t* w;
  (void)state;
  SKIP_WITHOUT_SERVER();
  url = ct_new_queue(&g_srv, "{\"VisibilityTimeout\":\"3\"}");
  send_payments(url, 1001, 5);
  sq_fault(&g_srv, "{\"count\":1,\"mode\":\"hang\","
                   "\"target\":\"AmazonSQS.DeleteMessageBatch\"}");
  w = spawn_oncebox(db_a, url, log_a, "--prefetch 10");
  wait_for(w, "committed; deleting", 5, 30000);
  kill_dead(w);
  sq_clear(&g_srv);
  assert_int_equal(payouts(db_a), 5);
  assert_int_equal(ct_queue_depth(&g_srv, url, NULL, &hidden), 5);
  assert_int_equal(hidden, 5);

  assert_int_equal(run_oncebox(db_b, url, "--until-idle", 60000, &out), 0);
  if (payouts(db_b) != 5) fail_msg("payouts %lld:\n%s", payouts(db_b), out);
  assert_non_null(strstr(out, "visibility 3 s (the queue's"));
  assert_int_equal(count_in(out, "handled, committed; deleting"), 5);
  assert_null(strstr(out, "not done:"));
  free(out);
  assert_int_equal(ct_queue_depth(&g_srv, url, NULL, NULL), 0);
  free(log_a);
  free(db_a);
  free(db_b);
  free(url);
}

/* The same with the AWS SDK for JavaScript as the consumer that received
** (with the queue's 3 s) and died without deleting. */
static void test_sdk_consumer_left_them(void** state) {
  char* url;
  char* db = new_db("sdk.db");
  char* out;
  ht_proc_t* h;
  (void)state;
  SKIP_WITHOUT_SERVER();
  url = ct_new_queue(&g_srv, "{\"VisibilityTimeout\":\"3\"}");
  send_payments(url, 1101, 3);
  h = sdk_hold(url, 3, -1, 0);
  ht_stop(h);
  assert_int_equal(ct_queue_depth(&g_srv, url, NULL, NULL), 3);

  assert_int_equal(run_oncebox(db, url, "--until-idle", 60000, &out), 0);
  if (payouts(db) != 3) fail_msg("payouts %lld:\n%s", payouts(db), out);
  free(out);
  assert_int_equal(ct_queue_depth(&g_srv, url, NULL, NULL), 0);
  free(db);
  free(url);
}

/* ---- the visibility sent ------------------------------------------------- */

/* A worker receives one message and handles it; its delete fails (every
** attempt reset), so it is left in flight with the visibility the worker
** sent; the worker is SIGKILLed. On a queue whose own VisibilityTimeout
** would hide it for 60 s, it comes back within seconds: to the test's own
** client, or (if it was quicker) to the worker itself, as a duplicate. */
static void reappears_soon(const char* queue_attrs, const char* args,
                           const char* logged) {
  char* url;
  char* db = new_db("vis.db");
  char* log = new_path("vis.out");
  char* text;
  ht_proc_t* w;
  size_t got = 0;
  url = ct_new_queue(&g_srv, queue_attrs);
  send_payments(url, 1201 + g_seq, 1);
  sq_fault(&g_srv, "{\"count\":3,\"mode\":\"reset\","
                   "\"target\":\"AmazonSQS.DeleteMessageBatch\"}");
  w = spawn_oncebox(db, url, log, args);
  wait_for(w, "DeleteMessageBatch of 1 messages failed", 1, 30000);
  kill_dead(w);
  sq_clear(&g_srv);
  text = slurp(log);
  assert_int_equal(payouts(db), 1);
  if (count_in(text, "duplicate, committed; deleting") == 0) {
    /* Still in flight: another client gets it once the visibility the
    ** worker sent ends; 25 s is far below the queue's 60 (and the 30 once
    ** hard-coded). */
    for (int waited = 0; got == 0 && waited < 25000; waited += 2000)
      got = receive_and_delete(url, 2);
    if (got != 1) fail_msg("the message did not come back:\n%s", text);
  }
  if (strstr(text, logged) == NULL) fail_msg("no '%s' in:\n%s", logged, text);
  free(text);
  assert_int_equal(ct_queue_depth(&g_srv, url, NULL, NULL), 0);
  free(log);
  free(db);
  free(url);
}

static void test_visibility_timeout_option_is_sent(void** state) {
  (void)state;
  SKIP_WITHOUT_SERVER();
  reappears_soon("{\"VisibilityTimeout\":\"60\"}", "--visibility-timeout 2",
                 "visibility 2 s, configured");
}

/* Without the option, the queue's own (2 s), not the 30 s once hard-coded
** (and not the 60 s this check would need to fail). */
static void test_queue_visibility_is_the_default(void** state) {
  (void)state;
  SKIP_WITHOUT_SERVER();
  reappears_soon("{\"VisibilityTimeout\":\"2\"}", "",
                 "visibility 2 s (the queue's VisibilityTimeout)");
}

/* A bad value is a usage error, before anything is opened. */
static void test_visibility_timeout_usage(void** state) {
  char* db = new_db("usage.db");
  char* out;
  (void)state;
  SKIP_WITHOUT_SERVER();
  assert_int_equal(run_oncebox(db, "https://localhost:1/000000000000/q",
                               "--until-idle --visibility-timeout 43201",
                               20000, &out),
                   2);
  assert_non_null(strstr(out, "--visibility-timeout wants 0..43200"));
  free(out);
  assert_int_equal(run_oncebox(db, "https://localhost:1/000000000000/q",
                               "--until-idle --visibility-timeout -1", 20000,
                               &out),
                   2);
  free(out);
  free(db);
}

/* ---- held longer than the bound ------------------------------------------ */

/* Another consumer (the AWS SDK) keeps two messages hidden, extending them
** to 4 s every 1.3 s, on a queue whose VisibilityTimeout is 2 s: the run
** waits out its bound (2 s + 1 s), then exits 5 with a "not done:" line
** naming the two in flight. Once the holder is gone, a run with
** --visibility-timeout 10 (a 10 s bound) waits for them and handles both. */
static void test_held_past_the_bound_is_stalled(void** state) {
  char* url;
  char* db = new_db("held.db");
  char* out;
  ht_proc_t* h;
  (void)state;
  SKIP_WITHOUT_SERVER();
  url = ct_new_queue(&g_srv, "{\"VisibilityTimeout\":\"2\"}");
  send_payments(url, 1301, 2);
  h = sdk_hold(url, 2, 4, 4);

  assert_int_equal(run_oncebox(db, url, "--until-idle", 60000, &out), 5);
  if (strstr(out, "not done:") == NULL ||
      strstr(out, "the SQS queue still reports 2 message(s) in flight") ==
          NULL)
    fail_msg("no not-done line naming 2 in flight:\n%s", out);
  assert_non_null(strstr(out, "someone else holds them"));
  assert_non_null(strstr(out, "sqs consumer: not done:"));
  print_line(out, "sqs consumer: not done:");
  print_line(out, "not done: work");
  free(out);
  assert_int_equal(payouts(db), 0);
  {
    /* The holder was extending all along. */
    char* o = ht_output(h);
    assert_non_null(strstr(o, "EXTENDED 2"));
    free(o);
  }
  ht_stop(h);

  assert_int_equal(
      run_oncebox(db, url, "--until-idle --visibility-timeout 10", 60000,
                  &out),
      0);
  if (payouts(db) != 2) fail_msg("payouts %lld:\n%s", payouts(db), out);
  assert_non_null(strstr(out, "visibility 10 s, configured"));
  free(out);
  assert_int_equal(ct_queue_depth(&g_srv, url, NULL, NULL), 0);
  free(db);
  free(url);
}

/* ---- GetQueueAttributes refused ----------------------------------------- */

/* Without sqs:GetQueueAttributes (403 AccessDenied from the terminator):
** the queue's VisibilityTimeout can't be read, so 30 s and a warning, and
** the run still works (the counts, asked later, are answered); the counts
** refused: the run waits out its bound (2 s + 1 s) and exits 5 naming the
** refusal, never 0. */
static void test_get_queue_attributes_refused(void** state) {
  char* url;
  char* db = new_db("refused.db");
  char* out;
  (void)state;
  SKIP_WITHOUT_SERVER();
  url = ct_new_queue(&g_srv, "{\"VisibilityTimeout\":\"2\"}");

  sq_fault(&g_srv, "{\"count\":1,\"status\":403,"
                   "\"code\":\"AccessDenied\","
                   "\"target\":\"AmazonSQS.GetQueueAttributes\"}");
  assert_int_equal(run_oncebox(db, url, "--until-idle", 60000, &out), 0);
  sq_clear(&g_srv);
  if (strstr(out, "cannot read the queue's VisibilityTimeout") == NULL ||
      strstr(out, "using 30 s") == NULL)
    fail_msg("no warning about the visibility:\n%s", out);
  free(out);

  sq_fault(&g_srv, "{\"count\":30,\"status\":403,"
                   "\"code\":\"AccessDenied\","
                   "\"target\":\"AmazonSQS.GetQueueAttributes\"}");
  assert_int_equal(run_oncebox(db, url, "--until-idle --visibility-timeout 2",
                               60000, &out),
                   5);
  sq_clear(&g_srv);
  if (strstr(out, "the SQS queue's message counts could not be read "
                  "(AccessDenied)") == NULL)
    fail_msg("no not-done line naming the refusal:\n%s", out);
  print_line(out, "not done: work");
  free(out);
  assert_int_equal(ct_queue_depth(&g_srv, url, NULL, NULL), 0);
  free(db);
  free(url);
}

/* ---- the consumer's own retry (library) ---------------------------------- */

static int g_calls;

static int retry_once(ob_tx_t* tx, const ob_message_t* m, void* arg) {
  (void)arg;
  g_calls++;
  /* 8 s: longer than the bound the counts alone give (the queue's 2 s
  ** visibility + 1 s after the first empty receive, and a 2 s poll). */
  if (m->attempts == 0) return ob_tx_retry(tx, 8000, "not yet");
  return OB_DONE;
}

static void null_log(void* ctx, ob_log_level_t level, const char* msg) {
  (void)ctx;
  if (level <= OB_LOG_WARN) fprintf(stderr, "  engine: %s\n", msg);
}

/* The handler retries after 8 s; the message is invisible for that long by
** this consumer's own ChangeMessageVisibility. The run waits for it and
** handles the second attempt; ob_consumer_status says what it used. */
static void test_own_retry_is_waited_for(void** state) {
  char* url;
  char* db = new_db("retry.db");
  ob_options_t o;
  ob_consumer_options_t co;
  ob_consumer_status_t st;
  ob_engine_t* e;
  char err[512];
  (void)state;
  SKIP_WITHOUT_SERVER();
  url = ct_new_queue(&g_srv, "{\"VisibilityTimeout\":\"2\"}");
  send_payments(url, 1401, 1);
  ob_options_init(&o);
  o.db_path = db;
  o.log = null_log;
  o.log_level = OB_LOG_DEBUG;
  if (ob_open(&e, &o, err, sizeof err) != 0) fail_msg("ob_open: %s", err);
  assert_int_equal(ob_register(e, OB_PAYOUT_MESSAGE_TYPE, "retry-once",
                               retry_once, NULL),
                   0);
  ob_consumer_options_init(&co);
  co.queue_url = url;
  co.wait_seconds = 2;
  assert_int_equal(ob_consumer_enable(e, &co, err, sizeof err), 0);
  g_calls = 0;
  assert_int_equal(ob_run(e, OB_RUN_UNTIL_IDLE, 0), 0);
  assert_int_equal(g_calls, 2);
  assert_int_equal(ob_consumer_status(e, &st), 0);
  assert_int_equal(st.online, 1);
  assert_int_equal(st.visibility_timeout_s, 2);
  assert_int_equal(st.visibility_source, OB_CONSUMER_VT_QUEUE);
  assert_int_equal(st.counts, 1);
  assert_int_equal(st.not_visible, 0);
  assert_int_equal(st.visible, 0);
  assert_int_equal(st.delayed, 0);
  assert_int_equal(st.stalled, 0);
  ob_close(e);
  assert_int_equal(db_count(db, "SELECT count(*) FROM processed_message "
                                "WHERE consumer_name = 'retry-once'"),
                   1);
  assert_int_equal(ct_queue_depth(&g_srv, url, NULL, NULL), 0);
  free(db);
  free(url);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_killed_worker_messages_are_handled),
      cmocka_unit_test(test_sdk_consumer_left_them),
      cmocka_unit_test(test_visibility_timeout_option_is_sent),
      cmocka_unit_test(test_queue_visibility_is_the_default),
      cmocka_unit_test(test_visibility_timeout_usage),
      cmocka_unit_test(test_held_past_the_bound_is_stalled),
      cmocka_unit_test(test_get_queue_attributes_refused),
      cmocka_unit_test(test_own_retry_is_waited_for),
  };
  /* One case: OB_TEST_FILTER, a cmocka glob. */
  const char* only = getenv("OB_TEST_FILTER");
  if (only != NULL && *only) cmocka_set_test_filter(only);
  return cmocka_run_group_tests_name("consumer_until_idle", tests,
                                     group_setup, group_teardown);
}
