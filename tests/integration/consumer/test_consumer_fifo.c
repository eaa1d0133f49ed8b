/* SPDX-License-Identifier: Apache-2.0 */
/*
** FIFO order, end to end: real engines on real SQLite files consuming a
** FIFO queue of tests/integration/sqs/fifo_sqs.mjs, an SQS test server that
** follows AWS's documented FIFO receive rule (as many messages of one group
** as it can in one receive; none of a group while one of its messages is in
** flight). fauxqs returns one message per group per receive, so it cannot
** show what these tests check: that one message of a group that does not
** settle (its transaction fails, it retries, the process dies) never lets
** the later messages of its group overtake it.
**
** Skips with a message when node or tests/interop/node_modules is missing.
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
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/integration/consumer/consumer_test_util.h"
#include "tests/integration/sqs/sqs_test_util.h"
#include "tests/support/backend.h"
#include "tests/support/testsupport.h"

static sq_server_t g_srv;
static const char* g_skip;
static char* g_home;
static char* g_dir;
static int g_seq;

#define VT_S 2  /* short: a message left in flight comes back soon */

/* ---- the queue ----------------------------------------------------------- */

static char* new_fifo_queue(void) {
  char name[64];
  snprintf(name, sizeof name, "fifo-%d-%d.fifo", (int)getpid(), ++g_seq);
  char* url = sq_create_queue(&g_srv, name,
                              "{\"FifoQueue\":\"true\",\"VisibilityTimeout\":"
                              "\"2\"}");
  assert_non_null(url);
  return url;
}

/* Send "Sale" CloudEvents n = from..to-1 of group g (ids "g-n"), one
** SendMessageBatch per 10, in order. */
static void send_group(const char* url, const char* g, int from, int to) {
  ct_sqs_t s;
  ct_sqs_open(&g_srv, &s);
  for (int off = from; off < to; off += 10) {
    int k = to - off < 10 ? to - off : 10;
    ob__sqs_send_t ent[10];
    char eid[10][8], id[10][64], data[10][64];
    char* bodies[10];
    ob__sqs_req_t req;
    sq_done_t d = {0, 0};
    for (int i = 0; i < k; i++) {
      snprintf(id[i], sizeof id[i], "%s-%d", g, off + i);
      snprintf(data[i], sizeof data[i], "{\"n\":%d}", off + i);
      bodies[i] = ct_cloudevent(id[i], "Sale", "urn:pos:fifo-test", data[i]);
      ob__sqs_send_init(&ent[i]);
      snprintf(eid[i], sizeof eid[i], "e%d", i);
      ent[i].id = eid[i];
      ent[i].body = bodies[i];
      ent[i].body_len = strlen(bodies[i]);
      ent[i].group_id = g;
      ent[i].dedup_id = id[i];
    }
    memset(&req, 0, sizeof req);
    req.data = &d;
    assert_int_equal(
        ob__sqs_send_message_batch(s.c, &req, url, ent, (size_t)k, sq_cb), 0);
    if (sq_wait(&s.loop, &req) != 0) fail_msg("send: %s", req.detail);
    assert_int_equal(req.batch.nok, (size_t)k);
    ob__sqs_req_cleanup(&req);
    for (int i = 0; i < k; i++) free(bodies[i]);
  }
  ct_sqs_close(&s);
}

/* ---- engines --------------------------------------------------------------- */

/* What a Sale handler does on its first delivery of one chosen event. */
typedef enum { ACT_NONE, ACT_BUSY, ACT_RETRY, ACT_UNRECOVERABLE } act_t;

typedef struct sale_s {
  const char* event_id;  /* the event that misbehaves (first delivery) */
  act_t act;
  int fired;
} sale_t;

/* Records the handling order in `seen`. */
static int sale(ob_tx_t* tx, const ob_message_t* m, void* arg) {
  sale_t* s = arg;
  ob_value_t v[2] = {OB_VTEXT(m->id), OB_VINT(m->attempts)};
  if (s != NULL && !s->fired && strcmp(m->id, s->event_id) == 0) {
    s->fired = 1;
    /* OB_EBUSY: what a locked database does to a handler's statement;
    ** it aborts the whole transaction (nothing commits). */
    if (s->act == ACT_BUSY) return OB_EBUSY;
    if (s->act == ACT_RETRY) return ob_tx_retry(tx, 1000, "not yet");
    if (s->act == ACT_UNRECOVERABLE) return ob_tx_fail(tx, "bad sale");
  }
  /* ob_tx_exec counts the rows it changed. */
  return ob_tx_exec(tx, "INSERT INTO seen(id, attempts) VALUES (?, ?)", v, 2,
                    NULL, NULL) < 0
             ? OB_EIO
             : OB_DONE;
}

static void log_cb(void* ctx, ob_log_level_t level, const char* msg) {
  int fd = ctx ? *(int*)ctx : -1;
  if (level <= OB_LOG_WARN) fprintf(stderr, "  engine: %s\n", msg);
  /* The kill test: stop dead after the first COMMIT, before its delete. */
  if (fd >= 0 && strstr(msg, "committed; deleting") != NULL) {
    if (write(fd, "K", 1) < 0) {
    }
    for (;;) pause();
  }
}

static char* new_db(void) {
  char name[64];
  snprintf(name, sizeof name, "fifo-db-%d.sqlite", ++g_seq);
  return ts_backend_db(g_dir, name);  /* or one on PostgreSQL (_pg) */
}

static ob_engine_t* open_engine(const char* db, const char* url, sale_t* s,
                                int* block_fd, int failures_to_sqs) {
  ob_options_t o;
  ob_consumer_options_t c;
  ob_engine_t* e;
  char err[512];
  ob_options_init(&o);
  o.db_path = db;
  o.poll_interval_ms = 50;
  o.log = log_cb;
  o.log_ctx = block_fd;
  o.log_level = OB_LOG_DEBUG;
  if (ob_open(&e, &o, err, sizeof err) != 0) fail_msg("ob_open: %s", err);
  /* The handlers' table; n counts in handling order. */
  ts_backend_exec(db, ts_backend_is_pg()
                          ? "CREATE TABLE IF NOT EXISTS seen(n BIGSERIAL"
                            " PRIMARY KEY, id TEXT, attempts INTEGER)"
                          : "CREATE TABLE IF NOT EXISTS seen(n INTEGER"
                            " PRIMARY KEY, id TEXT, attempts INTEGER)");
  assert_int_equal(ob_register(e, "Sale", "sales", sale, s), 0);
  ob_consumer_options_init(&c);
  c.queue_url = url;
  c.prefetch = 10;
  c.wait_seconds = 1;
  c.probe.base_ms = 200;
  c.probe.cap_ms = 1000;
  c.failures_to_sqs = failures_to_sqs;
  if (ob_consumer_enable(e, &c, err, sizeof err) != 0)
    fail_msg("ob_consumer_enable: %s", err);
  return e;
}

static void run_until_idle(ob_engine_t* e) {
  int rc = ob_run(e, OB_RUN_UNTIL_IDLE, 0);
  if (rc != 0) fail_msg("ob_run: %s: %s", ob_strerror(rc), ob_errmsg(e));
}

/* The handled ids in handling order, "g-0 g-1 ..." (malloc'd). */
static void seen_row(void* arg, int ncols, const char* const* col) {
  char* out = arg;
  (void)ncols;
  if (out[0]) strcat(out, " ");
  strncat(out, col[0], 60);
}

static char* seen_order(const char* db) {
  char* out = calloc(1, 4096);
  ts_backend_rows(db, "SELECT id FROM seen ORDER BY n", seen_row, out);
  return out;
}

static char* expected(const char* g, int n) {
  char* out = calloc(1, 4096);
  for (int i = 0; i < n; i++)
    snprintf(out + strlen(out), 4096 - strlen(out), "%s%s-%d", i ? " " : "",
             g, i);
  return out;
}

/* The order of one group's ids within the whole order. */
static char* only_group(const char* order, const char* g) {
  char* out = calloc(1, 4096);
  char* copy = strdup(order);
  size_t gl = strlen(g);
  for (char* t = strtok(copy, " "); t != NULL; t = strtok(NULL, " "))
    if (strncmp(t, g, gl) == 0 && t[gl] == '-') {
      if (out[0]) strcat(out, " ");
      strcat(out, t);
    }
  free(copy);
  return out;
}

static void assert_group_order(const char* order, const char* g, int n) {
  char* got = only_group(order, g);
  char* want = expected(g, n);
  if (strcmp(got, want) != 0)
    fail_msg("group %s handled out of order:\n  got  %s\n  want %s", g, got,
             want);
  free(got);
  free(want);
}

#define SKIP_WITHOUT_SERVER() \
  do {                        \
    if (g_skip != NULL) skip(); \
  } while (0)

/* ---- tests ----------------------------------------------------------------- */

/* Send `n` messages of till-7 (and 5 of till-8 if `other`), consume them
** all with one engine whose Sale handler does `act` on the first delivery
** of `event_id`; returns the handling order (malloc'd). The queue must end
** empty. */
static char* consume_group(const char* event_id, act_t act, int n,
                           int other) {
  char* url = new_fifo_queue();
  char* db = new_db();
  char* order;
  sale_t s = {event_id, act, 0};
  ob_engine_t* e;
  send_group(url, "till-7", 0, n);
  if (other) send_group(url, "till-8", 0, 5);
  e = open_engine(db, url, &s, NULL, 0);
  run_until_idle(e);
  ob_close(e);
  assert_int_equal(s.fired, 1);
  order = seen_order(db);
  assert_int_equal(ct_queue_depth(&g_srv, url, NULL, NULL), 0);
  free(db);
  free(url);
  return order;
}

/* The field report: ten messages of one group in one receive, the first
** one's transaction fails (the database was locked). Before, 1..9 were
** handled at once and 0 thirty seconds later. */
static void test_failed_transaction_holds_its_group(void** state) {
  char* order;
  (void)state;
  SKIP_WITHOUT_SERVER();
  order = consume_group("till-7-0", ACT_BUSY, 10, 1);
  assert_group_order(order, "till-7", 10);
  /* The other group is not held back by it. */
  assert_group_order(order, "till-8", 5);
  free(order);
}

/* A retry makes the message invisible for its delay; the later messages of
** its group wait for it. */
static void test_retry_holds_its_group(void** state) {
  char* order;
  (void)state;
  SKIP_WITHOUT_SERVER();
  order = consume_group("till-7-3", ACT_RETRY, 10, 0);
  assert_group_order(order, "till-7", 10);
  free(order);
}

/* A message that fails for good goes to the failure store and its group
** goes on (as SQS's own dead-letter queue would let it). */
static void test_unrecoverable_does_not_block(void** state) {
  char* order;
  (void)state;
  SKIP_WITHOUT_SERVER();
  order = consume_group("till-7-2", ACT_UNRECOVERABLE, 6, 0);
  assert_string_equal(order, "till-7-0 till-7-1 till-7-3 till-7-4 till-7-5");
  free(order);
}

/* A worker dies by SIGKILL after its first COMMIT, before the delete, with
** the rest of the group in hand. The next worker gets the whole group back
** in order: the committed one as a duplicate, then the others once each. */
static void test_order_holds_across_a_crash(void** state) {
  char* url;
  char* db;
  char* order;
  int fds[2];
  pid_t pid;
  char k;
  int st;
  ob_engine_t* e;
  (void)state;
  SKIP_WITHOUT_SERVER();
  url = new_fifo_queue();
  db = new_db();
  send_group(url, "till-7", 0, 10);
  assert_int_equal(pipe(fds), 0);
  fflush(NULL);
  pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    e = open_engine(db, url, NULL, &fds[1], 0);
    (void)ob_run(e, OB_RUN_FOREVER, 0);
    _exit(0);
  }
  close(fds[1]);
  assert_int_equal(read(fds[0], &k, 1), 1);
  kill(pid, SIGKILL);
  waitpid(pid, &st, 0);
  close(fds[0]);
  order = seen_order(db);
  assert_string_equal(order, "till-7-0");
  free(order);
  e = open_engine(db, url, NULL, NULL, 0);
  run_until_idle(e);
  ob_close(e);
  order = seen_order(db);
  assert_group_order(order, "till-7", 10);
  assert_int_equal(ct_queue_depth(&g_srv, url, NULL, NULL), 0);
  free(order);
  free(db);
  free(url);
}

static int setup(void** state) {
  (void)state;
  g_skip = sq_skip_reason();
  if (g_skip != NULL) {
    printf("%s\n", g_skip);
    return 0;
  }
  if (sq_server_start_backend(&g_srv, "consumer-fifo", NULL, "fifo-rules") != 0)
    return -1;
  g_home = ts_mkdtemp("fifo-home");
  g_dir = ts_mkdtemp("fifo");
  ct_set_env(&g_srv, g_home);
  return 0;
}

static int teardown(void** state) {
  (void)state;
  if (g_skip != NULL) return 0;
  sq_server_stop(&g_srv);
  ts_rmdir(g_home);
  ts_rmdir(g_dir);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_failed_transaction_holds_its_group),
      cmocka_unit_test(test_retry_holds_its_group),
      cmocka_unit_test(test_unrecoverable_does_not_block),
      cmocka_unit_test(test_order_holds_across_a_crash),
  };
  return cmocka_run_group_tests_name("consumer_fifo", tests, setup, teardown);
}
