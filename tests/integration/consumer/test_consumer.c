/* SPDX-License-Identifier: Apache-2.0 */
/*
** The SQS consumer end to end: real engines on real SQLite files,
** ob_consumer_enable configured only through the AWS environment variables,
** against fauxqs behind the TLS terminator that verifies every SigV4
** signature (tests/integration/sqs/sqs_server.mjs),
** reached as https://localhost:PORT (the test certificate's other name).
**
** Every test ends by checking that the queue is empty: each message was
** deleted, after being handled, acknowledged as a duplicate or stored in
** failed_message.
**
** Skips with a message when node or tests/interop/node_modules is missing.
*/
#include <errno.h>
#include <poll.h>
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
#include <fcntl.h>
#include "tests/support/backend.h"

#include "platform/consumer/consumer.h"
#include "tests/integration/consumer/consumer_test_util.h"
#include "tests/integration/sqs/sqs_test_util.h"
#include "tests/support/testsupport.h"
#include "oncebox_payout.h"

#define PAY OB_PAYOUT_MESSAGE_TYPE

static sq_server_t g_srv;
static const char* g_skip;
static char* g_home;     /* an empty HOME: no ~/.aws */
static char* g_dir;      /* databases and worker logs */
static int g_seq;

#define SKIP_WITHOUT_SERVER() \
  do {                        \
    if (g_skip != NULL) {     \
      skip();                 \
    }                         \
  } while (0)

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* ---- engines ------------------------------------------------------------- */

typedef struct logbuf_s {
  char* text;
  size_t len;
  size_t cap;
  int fd;          /* >= 0: also append to this file (workers) */
  int block_fd;    /* >= 0: on "committed; deleting", tell the parent and
                   ** stop dead (the kill test) */
} logbuf_t;

static void log_cb(void* ctx, ob_log_level_t level, const char* msg) {
  static const char* const tags[] = {"ERROR", "WARN", "INFO", "DEBUG"};
  logbuf_t* b = ctx;
  char line[1200];
  int n = snprintf(line, sizeof line, "%6llu [%s] %s\n",
                   (unsigned long long)(ht_now_ms() % 1000000), tags[level],
                   msg);
  if (n < 0) return;
  if ((size_t)n >= sizeof line) n = (int)sizeof line - 1;
  if (b->len + (size_t)n + 1 > b->cap) {
    size_t cap = (b->cap ? b->cap * 2 : 8192) + (size_t)n;
    char* t = realloc(b->text, cap);
    if (t == NULL) return;
    b->text = t;
    b->cap = cap;
  }
  memcpy(b->text + b->len, line, (size_t)n);
  b->len += (size_t)n;
  b->text[b->len] = '\0';
  if (b->fd >= 0 && write(b->fd, line, (size_t)n) < 0) {
  }
  if (level <= OB_LOG_WARN && b->fd < 0) fprintf(stderr, "  engine: %s", line);
  if (b->block_fd >= 0 && strstr(msg, "committed; deleting") != NULL) {
    if (write(b->block_fd, "K", 1) < 0) {
    }
    for (;;) pause();  /* the parent SIGKILLs us here */
  }
}

static int count_in(const char* text, const char* needle) {
  int n = 0;
  for (const char* p = text; p && (p = strstr(p, needle)) != NULL; p++) n++;
  return n;
}

typedef struct eng_s {
  ob_engine_t* e;
  logbuf_t log;
} eng_t;

/* A fresh database: a file in g_dir, or one on the test's own PostgreSQL
** server (consumer_pg). */
static char* new_db(void) {
  char name[64];
  snprintf(name, sizeof name, "db-%d.sqlite", ++g_seq);
  return ts_backend_db(g_dir, name);
}

static void eng_open_opts(eng_t* g, const char* db, int log_fd, int block_fd,
                          int no_handling, int busy_ms) {
  ob_options_t o;
  char err[512];
  memset(g, 0, sizeof *g);
  g->log.fd = log_fd;
  g->log.block_fd = block_fd;
  ob_options_init(&o);
  o.db_path = db;
  o.poll_interval_ms = 50;
  o.no_handling = no_handling;
  o.busy_timeout_ms = busy_ms;
  o.log = log_cb;
  o.log_ctx = &g->log;
  o.log_level = OB_LOG_DEBUG;
  if (ob_open(&g->e, &o, err, sizeof err) != 0) fail_msg("ob_open: %s", err);
  assert_int_equal(ob_register_payout(g->e), 0);
}

static void eng_open(eng_t* g, const char* db, int log_fd, int block_fd) {
  eng_open_opts(g, db, log_fd, block_fd, 0, 5000);
}

static void eng_consume(eng_t* g, const char* url, int prefetch, int vt_s,
                        int wait_s) {
  ob_consumer_options_t o;
  char err[512];
  ob_consumer_options_init(&o);
  o.queue_url = url;
  o.prefetch = prefetch;
  o.visibility_timeout_s = vt_s;
  o.wait_seconds = wait_s;
  o.probe.base_ms = 200;
  o.probe.cap_ms = 1000;
  if (ob_consumer_enable(g->e, &o, err, sizeof err) != 0)
    fail_msg("ob_consumer_enable: %s", err);
}

static void eng_close(eng_t* g) {
  ob_close(g->e);
  free(g->log.text);
  memset(g, 0, sizeof *g);
}

static void run_until_idle(eng_t* g) {
  int rc = ob_run(g->e, OB_RUN_UNTIL_IDLE, 0);
  if (rc != 0) fail_msg("ob_run: %s: %s", ob_strerror(rc), ob_errmsg(g->e));
}

static long long db_count(const char* db, const char* sql) {
  return ts_backend_count(db, sql);
}

static void check_invariants(const char* db) {
  eng_t g;
  eng_open(&g, db, -1, -1);
  assert_int_equal(ob_check(g.e, NULL, NULL), 0);
  eng_close(&g);
}

/* ---- handlers the tests register ----------------------------------------- */

static int slow_handler(ob_tx_t* tx, const ob_message_t* m, void* arg) {
  (void)tx;
  (void)m;
  sleep_ms(*(const int*)arg);
  return OB_DONE;
}

/* ---- workers (forked processes) ------------------------------------------ */

typedef struct worker_s {
  const char* db;
  const char* url;
  const char* log_path;
  int prefetch;
  int vt_s;
  int wait_s;
  int slow_ms;     /* > 0: a second PaymentCaptured consumer that sleeps */
  int block_fd;    /* >= 0: stop dead after the first COMMIT */
  int forever;     /* consume only, until SIGTERM (else until idle) */
} worker_t;

/* Never returns in the child; _exit keeps the parent's atexit handlers
** (which stop the server) from running. */
static pid_t spawn_worker(const worker_t* w) {
  pid_t pid;
  fflush(NULL);
  pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    eng_t g;
    int fd = open(w->log_path, O_WRONLY | O_CREAT | O_APPEND, 0600);
    int rc;
    /* Forever: consume only (no_handling), so the runner never takes the
    ** write lock for the empty local queue and blocks this loop while the
    ** other worker's slow transaction holds it; and a transaction waits
    ** for the other worker's (2.5 s each) instead of giving up. */
    eng_open_opts(&g, w->db, fd, w->block_fd, w->forever,
                  w->forever ? 30000 : 5000);
    if (w->slow_ms > 0 &&
        ob_register(g.e, PAY, "slow-audit", slow_handler,
                    (void*)&w->slow_ms) != 0)
      _exit(3);
    eng_consume(&g, w->url, w->prefetch, w->vt_s, w->wait_s);
    rc = ob_run(g.e, w->forever ? OB_RUN_FOREVER : OB_RUN_UNTIL_IDLE,
                w->forever);
    ob_close(g.e);
    _exit(rc == 0 ? 0 : 2);
  }
  return pid;
}

static int wait_worker(pid_t pid, int timeout_ms) {
  int st = 0;
  for (int waited = 0; waited < timeout_ms; waited += 20) {
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    sleep_ms(20);
  }
  kill(pid, SIGKILL);
  waitpid(pid, &st, 0);
  return -2;
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

/* ---- setup --------------------------------------------------------------- */

static void set_env(void) {
  ct_set_env(&g_srv, g_home);
}

static int group_setup(void** state) {
  (void)state;
  g_skip = sq_skip_reason();
  if (g_skip == NULL && !ht_localhost_is_127())
    g_skip = "skipped: localhost does not resolve to 127.0.0.1 only";
  if (g_skip != NULL) {
    printf("%s\n", g_skip);
    return 0;
  }
  if (sq_server_start(&g_srv, "consumer", NULL) != 0) return -1;
  g_home = ts_path(g_srv.dir, "home");
  g_dir = ts_path(g_srv.dir, "work");
  mkdir(g_home, 0700);
  mkdir(g_dir, 0700);
  set_env();
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

/* ---- tests --------------------------------------------------------------- */

/* The same event (the same CloudEvents source and id) in several SQS
** messages: handled once, the copies acked as duplicates. The same id from
** another source is another event (CloudEvents' identity is (source, id)):
** handled, and the payout module's own key (the payment) still makes one
** payout per payment. Every copy deleted. */
static void test_same_event_many_times(void** state) {
  char* url;
  char* db;
  char* bodies[20];
  size_t n = 0;
  eng_t g;
  (void)state;
  SKIP_WITHOUT_SERVER();
  db = new_db();
  url = ct_new_queue(&g_srv, NULL);
  for (int copy = 0; copy < 4; copy++)
    for (int p = 1; p <= 5; p++) {
      char id[OB_UUID_BUFLEN], body[256];
      bodies[n++] = ct_cloudevent(
          ct_event_id(p, id), PAY,
          copy == 3 ? "urn:elsewhere" : "urn:oncebox:test",
          ct_payment(p, body));
    }
  ct_send_bodies(&g_srv, url, bodies, n, NULL);
  for (size_t i = 0; i < n; i++) free(bodies[i]);

  eng_open(&g, db, -1, -1);
  eng_consume(&g, url, 10, 30, 1);
  run_until_idle(&g);
  assert_int_equal(count_in(g.log.text, "duplicate, acked"), 10);
  assert_int_equal(count_in(g.log.text, "handled, committed; deleting"), 10);
  eng_close(&g);
  assert_int_equal(db_count(db, "SELECT count(*) FROM event_source"), 2);

  assert_int_equal(db_count(db, "SELECT count(*) FROM merchant_payout"), 5);
  /* One dedup record per (source, id): 5 events from each source. */
  assert_int_equal(db_count(db, "SELECT count(*) FROM processed_message WHERE"
                                " consumer_name = 'create-merchant-payout-v1'"),
                   10);
  assert_int_equal(db_count(db, "SELECT count(*) FROM outbox_event WHERE"
                                " event_type = 'MerchantPayoutCreated'"),
                   5);
  assert_int_equal(db_count(db, "SELECT count(*) FROM failed_message"), 0);
  assert_int_equal(ct_queue_depth(&g_srv, url, NULL, NULL), 0);
  check_invariants(db);
  free(url);
  free(db);
}

/* Bodies that are not CloudEvents go to failed_message with the reason
** (message_id = the SQS MessageId, a UUID) and everything SQS said about
** them (headers); handler failures too; all of them are deleted. An id
** that is not a UUID and data_base64 are valid CloudEvents now: their
** payload is what the payout handler refuses. */
static void test_invalid_bodies(void** state) {
  char* url;
  char* db;
  char ids[8][80];
  char id[OB_UUID_BUFLEN];
  char* bodies[8];
  eng_t g;
  (void)state;
  SKIP_WITHOUT_SERVER();
  db = new_db();
  url = ct_new_queue(&g_srv, NULL);
  bodies[0] = strdup("this is not json");
  bodies[1] = ct_cloudevent("payment-42", PAY, "urn:x", "{}");
  bodies[2] = strdup("[1,2,3]");
  bodies[3] = strdup("{\"specversion\":\"1.0\",\"id\":\"0190b6d8-3ae7-7ca2-"
                     "a653-000000000101\",\"source\":\"urn:x\",\"type\":"
                     "\"PaymentCaptured\",\"data_base64\":\"e30=\"}");
  bodies[4] = strdup("{\"specversion\":\"0.3\",\"id\":\"0190b6d8-3ae7-7ca2-"
                     "a653-000000000102\",\"source\":\"urn:x\",\"type\":"
                     "\"PaymentCaptured\",\"data\":{}}");
  /* Valid CloudEvents the engine refuses: a bad payment, an unknown type. */
  bodies[5] = ct_cloudevent(ct_event_id(103, id), PAY, "urn:x",
                         "{\"paymentId\":\"nope\"}");
  bodies[6] = ct_cloudevent(ct_event_id(104, id), "NoSuchType", "urn:x", "{}");
  bodies[7] = ct_payment_event(105);
  ct_send_bodies(&g_srv, url, bodies, 8, ids);

  eng_open(&g, db, -1, -1);
  eng_consume(&g, url, 10, 30, 1);
  run_until_idle(&g);
  eng_close(&g);

  for (int i = 0; i < 5; i++) {
    char sql[1024];
    char want[OB_UUID_BUFLEN];
    if (i == 1 || i == 3) continue;  /* valid CloudEvents (above) */
    /* fauxqs MessageIds are UUIDs, so they are the failure-store ids. */
    assert_true(ob_uuid_valid(ids[i]));
    assert_int_equal(ob__consumer_failure_id(ids[i], want), 0);
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM failed_message WHERE message_id = '%s'"
             " AND queue_name = 'sqs' AND type = '" OB__CONSUMER_INVALID_TYPE
             "' AND error_class = 'unrecoverable' AND reason LIKE"
             " 'invalid CloudEvent: %%' AND CAST(body AS TEXT) = '%s'"
             " AND headers ->> '$.sqsMessageId' = '%s' AND headers ->>"
             " '$.sqsAttributes.ApproximateReceiveCount' = '1'",
             want, bodies[i], ids[i]);
    assert_int_equal(db_count(db, sql), 1);
  }
  assert_int_equal(db_count(db, "SELECT count(*) FROM failed_message WHERE"
                                " reason LIKE '%body is not valid JSON%'"),
                   1);
  assert_int_equal(db_count(db, "SELECT count(*) FROM failed_message WHERE"
                                " message_id = 'payment-42' AND source ="
                                " 'urn:x' AND reason LIKE"
                                " '%missing field paymentId%'"),
                   1);
  assert_int_equal(db_count(db, "SELECT count(*) FROM failed_message WHERE"
                                " reason LIKE '%not a JSON object%'"),
                   1);
  /* data_base64 "e30=" is "{}", handed to the handler as such. */
  assert_int_equal(db_count(db, "SELECT count(*) FROM failed_message WHERE"
                                " message_id = '0190b6d8-3ae7-7ca2-a653-"
                                "000000000101' AND CAST(body AS TEXT) = '{}'"
                                " AND reason LIKE '%missing field%'"),
                   1);
  assert_int_equal(db_count(db, "SELECT count(*) FROM failed_message WHERE"
                                " reason LIKE '%specversion%'"),
                   1);
  assert_int_equal(db_count(db, "SELECT count(*) FROM failed_message WHERE"
                                " message_id = '0190b6d8-3ae7-7ca2-a653-"
                                "000000000103' AND error_class ="
                                " 'unrecoverable' AND type = 'PaymentCaptured'"
                                " AND CAST(body AS TEXT) ="
                                " '{\"paymentId\":\"nope\"}'"),
                   1);
  assert_int_equal(db_count(db, "SELECT count(*) FROM failed_message WHERE"
                                " message_id = '0190b6d8-3ae7-7ca2-a653-"
                                "000000000104' AND error_class = 'no_handler'"),
                   1);
  assert_int_equal(db_count(db, "SELECT count(*) FROM failed_message"), 7);
  assert_int_equal(db_count(db, "SELECT count(*) FROM merchant_payout"), 1);
  assert_int_equal(ct_queue_depth(&g_srv, url, NULL, NULL), 0);
  for (int i = 0; i < 8; i++) free(bodies[i]);
  free(url);
  free(db);
}

/* An invalid message whose delete failed (not applied) comes back: it is a
** duplicate, not a second failure row. */
static void test_invalid_redelivered_once_in_store(void** state) {
  char* url;
  char* db;
  eng_t g;
  (void)state;
  SKIP_WITHOUT_SERVER();
  db = new_db();
  url = ct_new_queue(&g_srv, NULL);
  ct_send_one(&g_srv, url, strdup("{not json"));
  /* Every attempt of the first DeleteMessageBatch is reset before fauxqs
  ** sees it. */
  sq_fault(&g_srv, "{\"count\":3,\"mode\":\"reset\","
                   "\"target\":\"AmazonSQS.DeleteMessageBatch\"}");
  eng_open(&g, db, -1, -1);
  /* Visibility 1 s, long poll 3 s: the redelivery arrives within the poll. */
  eng_consume(&g, url, 1, 1, 3);
  run_until_idle(&g);
  assert_int_equal(count_in(g.log.text, "moved to the failure store"), 1);
  assert_int_equal(count_in(g.log.text, "already in the failure store"), 1);
  assert_int_equal(count_in(g.log.text, "DeleteMessageBatch of 1 messages "
                                        "failed"),
                   1);
  eng_close(&g);
  sq_clear(&g_srv);
  assert_int_equal(db_count(db, "SELECT count(*) FROM failed_message"), 1);
  assert_int_equal(ct_queue_depth(&g_srv, url, NULL, NULL), 0);
  free(url);
  free(db);
}

/* SIGKILL between COMMIT and DeleteMessage: the worker stops dead in the
** log line the consumer writes after COMMIT and before the delete leaves.
** The message comes back, is a duplicate, and is deleted: one payout. */
static void test_kill_between_commit_and_delete(void** state) {
  char* url;
  char* db;
  char* log_path;
  int fds[2];
  int deletes_before;
  long hidden = 0;
  struct pollfd pfd;
  worker_t w;
  pid_t pid;
  char k = 0;
  int st;
  eng_t g;
  (void)state;
  SKIP_WITHOUT_SERVER();
  db = new_db();
  log_path = ts_path(g_dir, "kill-worker.log");
  url = ct_new_queue(&g_srv, NULL);
  ct_send_one(&g_srv, url, ct_payment_event(201));
  assert_int_equal(pipe(fds), 0);
  deletes_before = sq_count(&g_srv, "REQ AmazonSQS.DeleteMessageBatch");

  memset(&w, 0, sizeof w);
  w.db = db;
  w.url = url;
  w.log_path = log_path;
  w.prefetch = 1;
  w.vt_s = 2;
  w.wait_s = 1;
  w.block_fd = fds[1];
  pid = spawn_worker(&w);
  close(fds[1]);
  pfd.fd = fds[0];
  pfd.events = POLLIN;
  assert_int_equal(poll(&pfd, 1, 30000), 1);
  assert_int_equal(read(fds[0], &k, 1), 1);
  assert_int_equal(k, 'K');
  assert_int_equal(kill(pid, SIGKILL), 0);
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
  close(fds[0]);

  /* Committed, never deleted. */
  assert_int_equal(db_count(db, "SELECT count(*) FROM merchant_payout"), 1);
  assert_int_equal(sq_count(&g_srv, "REQ AmazonSQS.DeleteMessageBatch"),
                   deletes_before);
  assert_int_equal(ct_queue_depth(&g_srv, url, NULL, &hidden), 1);
  assert_int_equal(hidden, 1);

  /* A new process on the same database: the redelivery is a duplicate. */
  eng_open(&g, db, -1, -1);
  eng_consume(&g, url, 1, 30, 5);
  run_until_idle(&g);
  assert_int_equal(count_in(g.log.text, "duplicate, acked"), 1);
  assert_int_equal(count_in(g.log.text, "duplicate, committed; deleting"), 1);
  eng_close(&g);
  assert_int_equal(db_count(db, "SELECT count(*) FROM merchant_payout"), 1);
  assert_int_equal(db_count(db, "SELECT count(*) FROM outbox_event"), 1);
  assert_int_equal(ct_queue_depth(&g_srv, url, NULL, NULL), 0);
  check_invariants(db);
  free(log_path);
  free(url);
  free(db);
}

/* A lost DeleteMessage reply (applied, answer gone) and a failed delete
** (not applied): no second payout, nothing left in the queue. */
static void test_lost_and_failed_deletes(void** state) {
  char* url;
  char* db;
  char* bodies[2];
  eng_t g;
  (void)state;
  SKIP_WITHOUT_SERVER();
  db = new_db();
  url = ct_new_queue(&g_srv, NULL);
  bodies[0] = ct_payment_event(301);
  bodies[1] = ct_payment_event(302);
  ct_send_bodies(&g_srv, url, bodies, 2, NULL);
  free(bodies[0]);
  free(bodies[1]);
  /* First delete: every attempt applied, every answer lost. Second delete:
  ** every attempt reset, nothing applied. */
  sq_fault(&g_srv, "{\"count\":3,\"mode\":\"lost-reply\","
                   "\"target\":\"AmazonSQS.DeleteMessageBatch\"}");
  sq_fault(&g_srv, "{\"count\":3,\"mode\":\"reset\","
                   "\"target\":\"AmazonSQS.DeleteMessageBatch\"}");
  eng_open(&g, db, -1, -1);
  eng_consume(&g, url, 1, 1, 3);
  run_until_idle(&g);
  assert_int_equal(count_in(g.log.text, "handled, committed; deleting"), 2);
  assert_int_equal(count_in(g.log.text, "DeleteMessageBatch of 1 messages "
                                        "failed"),
                   2);
  /* Only the one whose delete never arrived came back. */
  assert_int_equal(count_in(g.log.text, "duplicate, committed; deleting"), 1);
  eng_close(&g);
  sq_clear(&g_srv);
  assert_int_equal(db_count(db, "SELECT count(*) FROM merchant_payout"), 2);
  assert_int_equal(ct_queue_depth(&g_srv, url, NULL, NULL), 0);
  check_invariants(db);
  free(url);
  free(db);
}

/* The queue's visibility timeout (1 s) is shorter than the handler
** (2.5 s): two worker processes on one database both get the same messages
** (each message reappears while its transaction still runs, and the other
** worker's long poll takes it); the dedup guard, behind the SQLite write
** lock, makes it one payout each. The workers run until SIGTERM, which
** also closes their consumers gracefully. */
static void test_visibility_shorter_than_handler(void** state) {
  char* url;
  char* db;
  char* logs[2];
  char* texts[2];
  char* bodies[2];
  pid_t pids[2];
  int dups = 0, received = 0;
  eng_t g;
  (void)state;
  SKIP_WITHOUT_SERVER();
  db = new_db();
  url = ct_new_queue(&g_srv, "{\"VisibilityTimeout\":\"1\"}");
  /* Create the schema before two processes race to. */
  eng_open(&g, db, -1, -1);
  eng_close(&g);
  for (int i = 0; i < 2; i++) {
    char name[32];
    worker_t w;
    snprintf(name, sizeof name, "vt-worker-%d.log", i);
    logs[i] = ts_path(g_dir, name);
    memset(&w, 0, sizeof w);
    w.db = db;
    w.url = url;
    w.log_path = logs[i];
    w.prefetch = 1;
    w.vt_s = 1;
    w.wait_s = 2;
    w.slow_ms = 2500;
    w.block_fd = -1;
    w.forever = 1;
    pids[i] = spawn_worker(&w);
  }
  /* Publish once both are attached and long polling: each takes one. */
  for (int waited = 0;; waited += 50) {
    int ready = 0;
    for (int i = 0; i < 2; i++) {
      char* t = slurp(logs[i]);
      ready += strstr(t, "sqs consumer: receiving") != NULL;
      free(t);
    }
    if (ready == 2) break;
    if (waited > 20000) {
      kill(pids[0], SIGKILL);
      kill(pids[1], SIGKILL);
      fail_msg("the workers did not start");
    }
    sleep_ms(50);
  }
  sleep_ms(300);
  bodies[0] = ct_payment_event(401);
  bodies[1] = ct_payment_event(402);
  ct_send_bodies(&g_srv, url, bodies, 2, NULL);
  free(bodies[0]);
  free(bodies[1]);
  /* Until both are paid and nothing is left in the queue. */
  for (int waited = 0;; waited += 250) {
    if (waited > 60000) {
      kill(pids[0], SIGKILL);
      kill(pids[1], SIGKILL);
      fail_msg("the workers did not finish within 60 s");
    }
    sleep_ms(250);
    if (db_count(db, "SELECT count(*) FROM processed_message WHERE"
                     " consumer_name = 'slow-audit'") == 2 &&
        ct_queue_depth(&g_srv, url, NULL, NULL) == 0)
      break;
  }
  for (int i = 0; i < 2; i++) assert_int_equal(kill(pids[i], SIGTERM), 0);
  for (int i = 0; i < 2; i++) {
    int rc = wait_worker(pids[i], 30000);
    texts[i] = slurp(logs[i]);
    if (rc != 0) fail_msg("worker %d: %d\n%s", i, rc, texts[i]);
    dups += count_in(texts[i], "duplicate, committed; deleting");
    received += count_in(texts[i], "received 1 messages");
    free(logs[i]);
  }
  /* A message came back while its handler still ran, was received by the
  ** other worker, and was acknowledged as a duplicate. */
  if (dups < 1 || received < 3) {
    fprintf(stderr, "no duplicate:\n--- worker 0\n%s--- worker 1\n%s",
            texts[0], texts[1]);
    fail();
  }
  free(texts[0]);
  free(texts[1]);
  assert_int_equal(db_count(db, "SELECT count(*) FROM merchant_payout"), 2);
  assert_int_equal(db_count(db, "SELECT count(*) FROM processed_message WHERE"
                                " consumer_name = 'slow-audit'"),
                   2);
  assert_int_equal(ct_queue_depth(&g_srv, url, NULL, NULL), 0);
  check_invariants(db);
  free(url);
  free(db);
}

/* Prefetched messages wait while earlier ones are handled slowly: the
** keepalive, extending by the queue's own visibility timeout, keeps them
** invisible, so none is delivered twice. */
static void test_keepalive_prefetch_buffer(void** state) {
  static const int slow = 600;
  char* url;
  char* db;
  char* bodies[5];
  int cmv_before;
  eng_t g;
  (void)state;
  SKIP_WITHOUT_SERVER();
  db = new_db();
  url = ct_new_queue(&g_srv, "{\"VisibilityTimeout\":\"1\"}");
  for (int i = 0; i < 5; i++) bodies[i] = ct_payment_event(501 + i);
  ct_send_bodies(&g_srv, url, bodies, 5, NULL);
  for (int i = 0; i < 5; i++) free(bodies[i]);
  cmv_before =
      sq_count(&g_srv, "REQ AmazonSQS.ChangeMessageVisibilityBatch 200");
  eng_open(&g, db, -1, -1);
  assert_int_equal(ob_register(g.e, PAY, "slow-audit", slow_handler,
                               (void*)&slow),
                   0);
  /* Visibility 1 s, the queue's own (visibility_timeout_s 0: read at
  ** start, what the keepalive extends by); each message takes 0.6 s: the
  ** fifth waits 2.4 s. */
  eng_consume(&g, url, 5, 0, 1);
  run_until_idle(&g);
  assert_non_null(
      strstr(g.log.text, "visibility 1 s (the queue's VisibilityTimeout)"));
  assert_int_equal(count_in(g.log.text, "handled, committed; deleting"), 5);
  assert_int_equal(count_in(g.log.text, "duplicate"), 0);
  assert_int_equal(count_in(g.log.text, "keepalive of message"), 0);
  eng_close(&g);
  assert_true(
      sq_count(&g_srv, "REQ AmazonSQS.ChangeMessageVisibilityBatch 200") -
          cmv_before >=
      3);
  assert_int_equal(db_count(db, "SELECT count(*) FROM merchant_payout"), 5);
  assert_int_equal(ct_queue_depth(&g_srv, url, NULL, NULL), 0);
  free(url);
  free(db);
}

/* A retry makes the message invisible for the delay (no copy); it comes
** back with ApproximateReceiveCount 2 (attempts 1) and succeeds. */
static int64_t g_flaky_at[4];
static int g_flaky_attempts[4];
static int g_flaky_calls;

static int flaky_handler(ob_tx_t* tx, const ob_message_t* m, void* arg) {
  uv_timeval64_t tv;
  (void)arg;
  uv_gettimeofday(&tv);
  if (g_flaky_calls < 4) {
    g_flaky_at[g_flaky_calls] = tv.tv_sec * 1000 + tv.tv_usec / 1000;
    g_flaky_attempts[g_flaky_calls] = m->attempts;
  }
  g_flaky_calls++;
  if (m->attempts == 0) return ob_tx_retry(tx, 1500, "supplier not ready");
  return OB_DONE;
}

static void test_retry_comes_back_after_delay(void** state) {
  char* url;
  char* db;
  int64_t gap;
  eng_t g;
  (void)state;
  SKIP_WITHOUT_SERVER();
  db = new_db();
  url = ct_new_queue(&g_srv, NULL);
  ct_send_one(&g_srv, url, ct_payment_event(601));
  g_flaky_calls = 0;
  eng_open(&g, db, -1, -1);
  assert_int_equal(ob_register(g.e, PAY, "flaky", flaky_handler, NULL), 0);
  eng_consume(&g, url, 1, 30, 5);
  run_until_idle(&g);
  assert_int_equal(count_in(g.log.text, "retry, invisible for 2 s"), 1);
  eng_close(&g);
  assert_int_equal(g_flaky_calls, 2);
  assert_int_equal(g_flaky_attempts[0], 0);
  assert_int_equal(g_flaky_attempts[1], 1);
  gap = g_flaky_at[1] - g_flaky_at[0];
  assert_true(gap >= 1500);
  assert_true(gap < 5000);
  /* The retry rolled the first payout back; the second delivery paid. */
  assert_int_equal(db_count(db, "SELECT count(*) FROM merchant_payout"), 1);
  assert_int_equal(db_count(db, "SELECT count(*) FROM failed_message"), 0);
  assert_int_equal(ct_queue_depth(&g_srv, url, NULL, NULL), 0);
  check_invariants(db);
  free(url);
  free(db);
}

/* Past the retry budget (ApproximateReceiveCount), the engine stores the
** message as retries_exhausted; then it is deleted. */
static int busy_handler(ob_tx_t* tx, const ob_message_t* m, void* arg) {
  (void)m;
  (void)arg;
  return ob_tx_retry(tx, 0, "always busy");
}

static void test_retries_exhausted(void** state) {
  char* url;
  char* db;
  char id[OB_UUID_BUFLEN];
  ob_retry_policy_t p;
  eng_t g;
  (void)state;
  SKIP_WITHOUT_SERVER();
  db = new_db();
  url = ct_new_queue(&g_srv, NULL);
  ct_send_one(&g_srv, url, ct_cloudevent(ct_event_id(701, id), "Busy",
                                         "urn:x", "{\"n\":1}"));
  eng_open(&g, db, -1, -1);
  assert_int_equal(ob_register(g.e, "Busy", "busy", busy_handler, NULL), 0);
  ob_retry_policy_init(&p);
  p.max_retries = 2;
  assert_int_equal(ob_set_retry_policy(g.e, OB__CONSUMER_QUEUE, &p), 0);
  eng_consume(&g, url, 1, 30, 2);
  run_until_idle(&g);
  assert_int_equal(count_in(g.log.text, "retry, invisible for 0 s"), 2);
  eng_close(&g);
  assert_int_equal(db_count(db, "SELECT count(*) FROM failed_message WHERE"
                                " message_id = '0190b6d8-3ae7-7ca2-a653-"
                                "000000000701' AND error_class ="
                                " 'retries_exhausted' AND attempts = 2 AND"
                                " queue_name = 'sqs'"
                                " AND CAST(body AS TEXT) = '{\"n\":1}'"),
                   1);
  assert_int_equal(ct_queue_depth(&g_srv, url, NULL, NULL), 0);
  free(url);
  free(db);
}

/* Graceful shutdown from inside a handler: after the first of three
** prefetched messages, its handler (running in the consumer's transaction)
** detaches the engine. The close waits for that transaction; then the
** committed message is deleted and the two unhandled ones are made visible
** at once (not left invisible for 30 s). */
typedef struct stop_ctx_s {
  ob_engine_t* e;
  int calls;
  int detached;
} stop_ctx_t;

static void stop_detached(ob_engine_t* e, void* arg) {
  (void)e;
  ((stop_ctx_t*)arg)->detached++;
}

static int detach_handler(ob_tx_t* tx, const ob_message_t* m, void* arg) {
  stop_ctx_t* s = arg;
  (void)tx;
  (void)m;
  if (s->calls++ == 0)
    assert_int_equal(ob_detach(s->e, stop_detached, s), 0);
  return OB_DONE;
}

static void test_detach_in_handler_releases_prefetched(void** state) {
  char* url;
  char* db;
  char* bodies[3];
  long visible = -1, hidden = -1;
  uv_loop_t loop;
  stop_ctx_t sc;
  eng_t g;
  (void)state;
  SKIP_WITHOUT_SERVER();
  db = new_db();
  url = ct_new_queue(&g_srv, NULL);
  for (int i = 0; i < 3; i++) bodies[i] = ct_payment_event(801 + i);
  ct_send_bodies(&g_srv, url, bodies, 3, NULL);
  for (int i = 0; i < 3; i++) free(bodies[i]);
  eng_open(&g, db, -1, -1);
  memset(&sc, 0, sizeof sc);
  sc.e = g.e;
  assert_int_equal(ob_register(g.e, PAY, "detacher", detach_handler, &sc), 0);
  eng_consume(&g, url, 10, 30, 1);
  assert_int_equal(uv_loop_init(&loop), 0);
  assert_int_equal(ob_attach(g.e, &loop), 0);
  assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
  assert_int_equal(uv_loop_close(&loop), 0);
  assert_int_equal(sc.calls, 1);
  assert_int_equal(sc.detached, 1);
  assert_int_equal(count_in(g.log.text, "handled, committed; deleting"), 1);
  assert_non_null(strstr(g.log.text, "deleting 1 committed messages, "
                                     "releasing 2 unhandled"));
  assert_non_null(strstr(g.log.text, "sqs consumer: closed"));
  eng_close(&g);
  assert_int_equal(db_count(db, "SELECT count(*) FROM merchant_payout"), 1);
  assert_int_equal(ct_queue_depth(&g_srv, url, &visible, &hidden), 2);
  assert_int_equal(visible, 2);
  assert_int_equal(hidden, 0);

  /* The next run handles the rest. */
  eng_open(&g, db, -1, -1);
  eng_consume(&g, url, 10, 30, 1);
  run_until_idle(&g);
  eng_close(&g);
  assert_int_equal(db_count(db, "SELECT count(*) FROM merchant_payout"), 3);
  assert_int_equal(ct_queue_depth(&g_srv, url, NULL, NULL), 0);
  check_invariants(db);
  free(url);
  free(db);
}

/* ob_detach cancels the 20 s long poll at once. */
typedef struct detach_ctx_s {
  eng_t* g;
  uv_timer_t timer;
  uint64_t asked_at;
  uint64_t done_at;
} detach_ctx_t;

static void detached(ob_engine_t* e, void* arg) {
  detach_ctx_t* d = arg;
  (void)e;
  d->done_at = ht_now_ms();
}

static void detach_tick(uv_timer_t* t) {
  detach_ctx_t* d = t->data;
  uv_close((uv_handle_t*)t, NULL);
  d->asked_at = ht_now_ms();
  assert_int_equal(ob_detach(d->g->e, detached, d), 0);
}

static void test_detach_cancels_long_poll(void** state) {
  char* url;
  char* db;
  uv_loop_t loop;
  detach_ctx_t d;
  eng_t g;
  (void)state;
  SKIP_WITHOUT_SERVER();
  db = new_db();
  url = ct_new_queue(&g_srv, NULL);
  eng_open(&g, db, -1, -1);
  eng_consume(&g, url, 1, 30, 20);
  memset(&d, 0, sizeof d);
  d.g = &g;
  assert_int_equal(uv_loop_init(&loop), 0);
  assert_int_equal(ob_attach(g.e, &loop), 0);
  uv_timer_init(&loop, &d.timer);
  d.timer.data = &d;
  uv_timer_start(&d.timer, detach_tick, 500, 0);
  assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
  assert_true(d.done_at > 0);
  assert_true(d.done_at - d.asked_at < 2000);
  assert_int_equal(uv_loop_close(&loop), 0);
  assert_non_null(strstr(g.log.text, "sqs consumer: closed"));
  eng_close(&g);
  free(url);
  free(db);
}

/* Offline: the receive fails (connection resets), the consumer backs off
** (here: a minute); ob_network_changed makes it try at once. */
typedef struct net_ctx_s {
  eng_t* g;
  const char* db;
  uv_timer_t timer;
  uint64_t nudged_at;
  uint64_t paid_at;
  uint64_t started;
} net_ctx_t;

static void net_tick(uv_timer_t* t) {
  net_ctx_t* n = t->data;
  uint64_t now = ht_now_ms();
  if (now - n->started > 30000) {
    uv_close((uv_handle_t*)t, NULL);
    ob_detach(n->g->e, NULL, NULL);
    return;
  }
  if (n->nudged_at == 0 && strstr(n->g->log.text ? n->g->log.text : "",
                                  "sqs consumer: offline") != NULL) {
    n->nudged_at = now;
    ob_network_changed(n->g->e);
    return;
  }
  if (n->nudged_at != 0 &&
      db_count(n->db, "SELECT count(*) FROM merchant_payout") == 1) {
    n->paid_at = now;
    uv_close((uv_handle_t*)t, NULL);
    ob_detach(n->g->e, NULL, NULL);
  }
}

static void test_offline_then_network_changed(void** state) {
  char* url;
  char* db;
  ob_consumer_options_t o;
  char err[512];
  uv_loop_t loop;
  net_ctx_t n;
  eng_t g;
  (void)state;
  SKIP_WITHOUT_SERVER();
  db = new_db();
  url = ct_new_queue(&g_srv, NULL);
  ct_send_one(&g_srv, url, ct_payment_event(901));
  sq_fault(&g_srv, "{\"count\":3,\"mode\":\"reset\","
                   "\"target\":\"AmazonSQS.ReceiveMessage\"}");
  eng_open(&g, db, -1, -1);
  ob_consumer_options_init(&o);
  o.queue_url = url;
  o.wait_seconds = 1;
  o.probe.base_ms = 60000;
  o.probe.cap_ms = 60000;
  assert_int_equal(ob_consumer_enable(g.e, &o, err, sizeof err), 0);
  memset(&n, 0, sizeof n);
  n.g = &g;
  n.db = db;
  n.started = ht_now_ms();
  assert_int_equal(uv_loop_init(&loop), 0);
  assert_int_equal(ob_attach(g.e, &loop), 0);
  uv_timer_init(&loop, &n.timer);
  n.timer.data = &n;
  uv_timer_start(&n.timer, net_tick, 20, 20);
  assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
  assert_int_equal(uv_loop_close(&loop), 0);
  assert_true(n.nudged_at > 0);
  assert_true(n.paid_at > 0);
  assert_true(n.paid_at - n.nudged_at < 5000);
  assert_non_null(strstr(g.log.text, "sqs consumer: online again"));
  eng_close(&g);
  sq_clear(&g_srv);
  assert_int_equal(ct_queue_depth(&g_srv, url, NULL, NULL), 0);
  free(url);
  free(db);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_same_event_many_times),
      cmocka_unit_test(test_invalid_bodies),
      cmocka_unit_test(test_invalid_redelivered_once_in_store),
      cmocka_unit_test(test_kill_between_commit_and_delete),
      cmocka_unit_test(test_lost_and_failed_deletes),
      cmocka_unit_test(test_visibility_shorter_than_handler),
      cmocka_unit_test(test_keepalive_prefetch_buffer),
      cmocka_unit_test(test_retry_comes_back_after_delay),
      cmocka_unit_test(test_retries_exhausted),
      cmocka_unit_test(test_detach_in_handler_releases_prefetched),
      cmocka_unit_test(test_detach_cancels_long_poll),
      cmocka_unit_test(test_offline_then_network_changed),
  };
  return cmocka_run_group_tests_name("consumer", tests, group_setup,
                                     group_teardown);
}
