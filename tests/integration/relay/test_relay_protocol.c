/* SPDX-License-Identifier: Apache-2.0 */
/*
** Issue 15, item 7: a server that is not the SQS JSON API (it speaks only
** SQS's older query protocol, lacks the operation, has nothing at the
** endpoint, or is a captive portal) is a configuration fault: the relay
** charges no row an attempt, parks nothing, backs off as for the other
** configuration faults, and says in words, in the log, in relay_status
** and in `oncebox stats`, what is wrong. Fixed, the same database publishes
** everything.
**
** The servers (not_sqs_server.mjs, each mode modelled on a cited real
** server): the real sqslite 2.1.1 from npm behind a TLS terminator (HTTP
** 415), ElasticMQ before 0.14.7 (404 text/plain), ElasticMQ 0.14.7..1.3
** (400 text/xml MissingAction), floci's unknown operation (404
** UnknownOperationException), fauxqs's unknown action (400 InvalidAction),
** a captive portal (200 text/html). The real SQS-compatible server after
** the fix: fauxqs behind the SigV4-verifying terminator (sqs_server.mjs).
**
** The relay runs attached to a loop for a fixed span that is many times
** what park_after (3) refusals take with the short backoffs of
** rf_enable (50..200 ms): the first version charged every refusal to the
** rows as a sender fault and parked all of them within a second.
**
** Also: a genuine whole-request sender fault (InvalidParameterValue from
** SQS) still charges the rows and parks them; the SQS consumer logs the
** same sentences and never calls these answers "offline".
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uv.h>
#include <cmocka.h>

#include "tests/integration/relay/relay_fixture.h"
#include "oncebox_payout.h"

static sq_server_t g_srv;
static const char* g_skip;

#define ROWS 12
#define PARK_AFTER 3
#define SPAN_MS 3000

static int group_setup(void** state) {
  (void)state;
  g_skip = sq_skip_reason();
  return rf_group_start(&g_srv, "relay-proto", g_skip);
}

static int group_teardown(void** state) {
  (void)state;
  rf_group_stop(&g_srv, g_skip);
  return 0;
}

/* ---- the log ----------------------------------------------------------- */

typedef struct logbuf_s {
  char* text;
  size_t len, cap;
} logbuf_t;

static void log_cb(void* ctx, ob_log_level_t level, const char* msg) {
  static const char* const tags[] = {"ERROR", "WARN", "INFO", "DEBUG"};
  logbuf_t* b = ctx;
  char line[1400];
  int n = snprintf(line, sizeof line, "[%s] %s\n", tags[level], msg);
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
}

static int count_in(const char* text, const char* needle) {
  int n = 0;
  for (const char* p = text; p && (p = strstr(p, needle)) != NULL; p++) n++;
  return n;
}

/* A terminal (rf_terminal) whose log goes to *log. */
static fixture_t* terminal(logbuf_t* log) {
  fixture_t* f = fx_new(8);
  ob_close(f->e);
  f->e = NULL;
  f->opts.clock = NULL;
  f->opts.poll_interval_ms = 20;
  f->opts.log = log_cb;
  f->opts.log_ctx = log;
  f->opts.log_level = OB_LOG_DEBUG;
  fx_open(f);
  assert_int_equal(ob_register_payout(f->e), 0);
  return f;
}

static void reopen(fixture_t* f) {
  ob_close(f->e);
  f->e = NULL;
  fx_open(f);
  assert_int_equal(ob_register_payout(f->e), 0);
}

/* ---- running for a fixed span ------------------------------------------ */

typedef struct span_s {
  ob_engine_t* e;
  uv_timer_t timer;
  int detached;
} span_t;

static void span_detached(ob_engine_t* e, void* arg) {
  (void)e;
  ((span_t*)arg)->detached = 1;
}

static void span_end(uv_timer_t* t) {
  span_t* s = t->data;
  uv_close((uv_handle_t*)t, NULL);
  assert_int_equal(ob_detach(s->e, span_detached, s), 0);
}

/* The engine attached to a loop for ms, whatever its workers do. */
static void run_for(ob_engine_t* e, uint64_t ms) {
  uv_loop_t loop;
  span_t s;
  memset(&s, 0, sizeof s);
  s.e = e;
  assert_int_equal(uv_loop_init(&loop), 0);
  assert_int_equal(ob_attach(e, &loop), 0);
  uv_timer_init(&loop, &s.timer);
  s.timer.data = &s;
  uv_timer_start(&s.timer, span_end, ms, 0);
  assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
  assert_int_equal(uv_loop_close(&loop), 0);
  assert_int_equal(s.detached, 1);
}

/* ---- the servers ---------------------------------------------------------- */

typedef struct not_sqs_s {
  ht_proc_t* proc;
  int port;
} not_sqs_t;

static void not_sqs_start(not_sqs_t* s, const char* mode) {
  const char* src = getenv("OB_SOURCE_DIR");
  static int seq;
  char script[4200], name[64];
  snprintf(script, sizeof script,
           "%s/tests/integration/relay/not_sqs_server.mjs", src);
  snprintf(name, sizeof name, "not-sqs-%d-%s.out", ++seq, mode);
  char* out = ts_path(g_srv.dir, name);
  const char* argv[] = {"node", script, g_srv.pki, mode, NULL};
  s->proc = ht_spawn(argv, out);
  free(out);
  assert_non_null(s->proc);
  s->port = ht_wait_number(s->proc, "PORT ", 20000);
  if (s->port <= 0) {
    char* o = ht_output(s->proc);
    fail_msg("not_sqs_server.mjs %s did not start:\n%s", mode, o);
  }
}

static void not_sqs_stop(not_sqs_t* s) {
  ht_stop(s->proc);
  s->proc = NULL;
}

/* ---- checks ---------------------------------------------------------------- */

/* relay_status.last_error (malloc'd; NULL when none). */
static void first_text(void* arg, int ncols, const char* const* col) {
  char** v = arg;
  (void)ncols;
  if (*v == NULL && col[0] != NULL) *v = strdup(col[0]);
}

static char* relay_error(fixture_t* f) {
  char* v = NULL;
  ts_backend_rows(f->db_path, "SELECT last_error FROM relay_status"
                  " WHERE name = 'outbox'", first_text, &v);
  return v;
}

/* `oncebox stats` (text, then --json) contains `want`. */
static void assert_cli_stats_say(fixture_t* f, const char* want) {
  const char* bin = getenv("OB_BINARY_DIR");
  char out[4200], pat[600];
  assert_non_null(bin);
  snprintf(out, sizeof out, "%s/stats.out", f->dir);
  /* The sentence as a fixed string: it holds '(' and '''. */
  snprintf(pat, sizeof pat, "%s/stats.want", f->dir);
  FILE* p = fopen(pat, "w");
  assert_non_null(p);
  fputs(want, p);
  fclose(p);
  assert_int_equal(ts_sh("$OB_EMULATOR '%s/oncebox' --db '%s' stats > '%s'", bin, f->db_path,
                      out), 0);
  if (ts_sh("grep -qF -f '%s' '%s'", pat, out) != 0) {
    ts_sh("cat '%s' >&2", out);
    fail_msg("oncebox stats does not say: %s", want);
  }
  assert_int_equal(ts_sh("$OB_EMULATOR '%s/oncebox' --db '%s' stats --json > '%s'", bin,
                      f->db_path, out), 0);
  if (ts_sh("grep -qF -f '%s' '%s'", pat, out) != 0) {
    ts_sh("cat '%s' >&2", out);
    fail_msg("oncebox stats --json does not say: %s", want);
  }
}

/* An outbox row (its id) is among the ids received. */
static void reached_sqs(void* arg, int ncols, const char* const* col) {
  const cJSON* ids = arg;
  const cJSON* it;
  int found = 0;
  (void)ncols;
  cJSON_ArrayForEach(it, ids) found |= strcmp(it->valuestring, col[0]) == 0;
  if (!found) fail_msg("outbox event %s never reached SQS", col[0]);
}

/* Receive (and delete) everything in the queue; every outbox row of f must
** be among the events. Returns the number of messages. */
static int assert_queue_has_all(fixture_t* f, const char* queue_url) {
  uv_loop_t loop;
  sq_clock_t clock;
  ob__sqs_client_config_t cfg;
  ob__sqs_client_t* c = NULL;
  char err[256];
  int got = 0;
  cJSON* ids = cJSON_CreateArray();
  uv_loop_init(&loop);
  sq_clock_init(&clock, 0, -1);
  sq_client_config(&g_srv, &cfg, SQ_SECRET, &clock.clock);
  assert_int_equal(ob__sqs_client_open(&c, &loop, &cfg, err, sizeof err), 0);
  for (;;) {
    ob__sqs_receive_t p;
    ob__sqs_req_t req;
    sq_done_t done = {0, 0};
    ob__sqs_receive_init(&p);
    p.queue_url = queue_url;
    p.max_messages = 10;
    p.visibility_timeout = 30;
    p.wait_time_seconds = 0;
    memset(&req, 0, sizeof req);
    req.data = &done;
    assert_int_equal(ob__sqs_receive_message(c, &req, &p, sq_cb), 0);
    assert_int_equal(sq_wait(&loop, &req), 0);
    size_t n = req.receive.n;
    for (size_t i = 0; i < n; i++) {
      const ob__sqs_message_t* m = &req.receive.messages[i];
      cJSON* ev = cJSON_ParseWithLength(m->body, m->body_len);
      assert_non_null(ev);
      cJSON_AddItemToArray(ids, cJSON_CreateString(
                                    cJSON_GetObjectItem(ev, "id")->valuestring));
      cJSON_Delete(ev);
      ob__sqs_req_t del;
      sq_done_t d2 = {0, 0};
      memset(&del, 0, sizeof del);
      del.data = &d2;
      assert_int_equal(ob__sqs_delete_message(c, &del, queue_url,
                                              m->receipt_handle, sq_cb), 0);
      assert_int_equal(sq_wait(&loop, &del), 0);
      ob__sqs_req_cleanup(&del);
      got++;
    }
    ob__sqs_req_cleanup(&req);
    if (n == 0) break;
  }
  ob__sqs_client_close(c, NULL, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  uv_loop_close(&loop);

  ts_backend_rows(f->db_path, "SELECT id FROM outbox_event", reached_sqs,
                  ids);
  cJSON_Delete(ids);
  return got;
}

/* ---- the relay against servers that are not the SQS JSON API -------------- */

static void relay_case(const char* mode, const char* queue_name,
                       const char* sentence) {
  not_sqs_t srv;
  logbuf_t log = {NULL, 0, 0};
  fixture_t* f = terminal(&log);
  char* q = sq_create_queue(&g_srv, queue_name, NULL);
  ob_stats_t st;
  char* err;
  int requests;

  not_sqs_start(&srv, mode);
  rf_set_endpoint(srv.port);
  assert_int_equal(rf_enable(f, q, "urn:oncebox:test-terminal", PARK_AFTER, 0),
                   0);
  rf_enqueue_payments(f, 0, ROWS);
  run_for(f->e, SPAN_MS);
  requests = ht_count_lines(srv.proc, "REQ AmazonSQS.SendMessageBatch ");
  print_message("%s: %d SendMessageBatch requests in %d ms\n", mode, requests,
                SPAN_MS);
  /* Long enough: every row could have been refused park_after times over. */
  assert_true(requests >= 3 * PARK_AFTER);

  /* Nothing charged, nothing parked, nothing published. */
  assert_int_equal(ob_stats(f->e, &st), 0);
  {
    ob_payout_stats_t ps;
    assert_int_equal(ob_payout_stats(f->e, &ps), 0);
    assert_int_equal(ps.payouts, ROWS);
  }
  assert_int_equal(st.outbox_unpublished, ROWS);
  assert_int_equal(st.outbox_parked, 0);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM outbox_event WHERE"
                               " parked_at IS NOT NULL"), 0);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM outbox_event WHERE"
                               " attempt_count > 0"), 0);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM outbox_event WHERE"
                               " last_error IS NOT NULL"), 0);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM outbox_event"), ROWS);

  /* Said in words: relay_status, `oncebox stats`, the log. */
  err = relay_error(f);
  if (err == NULL || strstr(err, sentence) == NULL)
    fail_msg("relay_status.last_error is \"%s\", not \"%s\"",
             err ? err : "(none)", sentence);
  free(err);
  assert_true(st.relay_online >= 0);  /* not "never run" */
  assert_cli_stats_say(f, sentence);
  if (strstr(log.text ? log.text : "", sentence) == NULL)
    fail_msg("the log does not say \"%s\":\n%s", sentence,
             log.text ? log.text : "");
  /* A configuration fault, not an outage nor a refused batch. */
  assert_int_equal(count_in(log.text, "SQS unreachable"), 0);
  assert_int_equal(count_in(log.text, "batch refused"), 0);
  assert_int_equal(count_in(log.text, "parked after"), 0);
  not_sqs_stop(&srv);

  /* The endpoint fixed: the same database, a real SQS-compatible server;
  ** every row goes out. */
  reopen(f);
  rf_set_endpoint(g_srv.port);
  assert_int_equal(rf_enable(f, q, "urn:oncebox:test-terminal", PARK_AFTER, 0),
                   0);
  for (int i = 0; i < 100; i++) {
    int rc = ob_run(f->e, OB_RUN_UNTIL_IDLE, 0);
    assert_true(rc == 0 || rc == OB_RUN_STALLED);
    assert_int_equal(ob_stats(f->e, &st), 0);
    if (st.outbox_unpublished == 0) break;
    usleep(50000);
  }
  assert_int_equal(st.outbox_unpublished, 0);
  assert_int_equal(st.outbox_published, ROWS);
  assert_int_equal(st.outbox_parked, 0);
  assert_int_equal(st.relay_online, 1);
  err = relay_error(f);
  assert_null(err);
  assert_true(assert_queue_has_all(f, q) >= ROWS);
  fx_free(f);
  free(log.text);
  free(q);
}

/* The field's case: the real sqslite (query protocol only). */
static void test_sqslite_415(void** state) {
  (void)state;
  if (g_skip) skip();
  relay_case("sqslite", "proto-sqslite",
             "the server does not speak SQS's JSON protocol (HTTP 415 to "
             "AmazonSQS.SendMessageBatch)");
}

static void test_elasticmq_404(void** state) {
  (void)state;
  if (g_skip) skip();
  relay_case("elasticmq-404", "proto-404",
             "the server has no SQS API at the endpoint's path / (HTTP 404 to "
             "AmazonSQS.SendMessageBatch");
}

static void test_elasticmq_xml(void** state) {
  (void)state;
  if (g_skip) skip();
  relay_case("elasticmq-xml", "proto-xml",
             "the server does not speak SQS's JSON protocol: it answered in "
             "XML, as servers of SQS's older query protocol do (HTTP 400 "
             "MissingAction to AmazonSQS.SendMessageBatch)");
}

static void test_unknown_operation(void** state) {
  (void)state;
  if (g_skip) skip();
  relay_case("unknown-op", "proto-unknown-op",
             "the server does not know the operation AmazonSQS.SendMessageBatch "
             "(HTTP 404 UnknownOperationException)");
}

static void test_invalid_action(void** state) {
  (void)state;
  if (g_skip) skip();
  relay_case("invalid-action", "proto-invalid-action",
             "the server does not know the operation AmazonSQS.SendMessageBatch "
             "(HTTP 400 InvalidAction)");
}

static void test_captive_portal(void** state) {
  (void)state;
  if (g_skip) skip();
  relay_case("portal", "proto-portal",
             "the server's answer is not SQS's JSON (HTTP 200, text/html, to "
             "AmazonSQS.SendMessageBatch)");
}

/* A genuine sender fault of SQS on the whole request still costs the rows
** attempts and parks them after park_after: the rule above is about the
** server, not about every 4xx. */
static void test_sender_fault_still_charges(void** state) {
  (void)state;
  if (g_skip) skip();
  logbuf_t log = {NULL, 0, 0};
  fixture_t* f = terminal(&log);
  char* q = sq_create_queue(&g_srv, "proto-sender-fault", NULL);
  ob_stats_t st;
  rf_set_endpoint(g_srv.port);
  assert_int_equal(rf_enable(f, q, "urn:oncebox:test-terminal", 2, 0), 0);
  rf_enqueue_payments(f, 500, 5);
  sq_fault(&g_srv, "{\"count\":100,\"status\":400,\"code\":"
                   "\"InvalidParameterValue\",\"query\":"
                   "\"AWS.SimpleQueueService.InvalidParameterValue;Sender\","
                   "\"message\":\"Value for parameter MessageBody is invalid.\","
                   "\"target\":\"AmazonSQS.SendMessageBatch\"}");
  for (int i = 0; i < 100; i++) {
    int rc = ob_run(f->e, OB_RUN_UNTIL_IDLE, 0);
    assert_true(rc == 0 || rc == OB_RUN_STALLED);
    assert_int_equal(ob_stats(f->e, &st), 0);
    if (st.outbox_parked == 5) break;
    usleep(50000);
  }
  sq_clear(&g_srv);
  assert_int_equal(st.outbox_parked, 5);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM outbox_event WHERE"
                               " attempt_count = 2 AND parked_at IS NOT NULL"
                               " AND last_error LIKE '%InvalidParameterValue%'"),
                   5);
  assert_non_null(strstr(log.text, "relay: batch refused"));
  fx_free(f);
  free(log.text);
  free(q);
}

/* ---- the SQS consumer against the same servers ---------------------------- */

static void consumer_case(const char* mode, const char* sentence) {
  not_sqs_t srv;
  logbuf_t log = {NULL, 0, 0};
  fixture_t* f = terminal(&log);
  ob_consumer_options_t o;
  char url[128], err[512];

  not_sqs_start(&srv, mode);
  rf_set_endpoint(srv.port);
  snprintf(url, sizeof url, "https://localhost:%d/000000000000/orders",
           srv.port);
  ob_consumer_options_init(&o);
  o.queue_url = url;
  o.prefetch = 10;
  o.wait_seconds = 1;
  o.probe.base_ms = 50;
  o.probe.cap_ms = 200;
  if (ob_consumer_enable(f->e, &o, err, sizeof err) != 0)
    fail_msg("ob_consumer_enable: %s", err);
  run_for(f->e, 1500);
  if (ht_count_lines(srv.proc, "REQ AmazonSQS.ReceiveMessage ") < 2) {
    char* out = ht_output(srv.proc);
    fail_msg("%s: fewer than 2 ReceiveMessage requests:\n%s\nlog:\n%s", mode,
             out, log.text ? log.text : "");
  }
  if (strstr(log.text ? log.text : "", sentence) == NULL)
    fail_msg("the consumer's log does not say \"%s\":\n%s", sentence,
             log.text ? log.text : "");
  /* The server answered: not an outage. */
  assert_int_equal(count_in(log.text, "sqs consumer: offline"), 0);
  assert_int_equal(count_in(log.text, "sqs consumer: still offline"), 0);
  not_sqs_stop(&srv);
  fx_free(f);
  free(log.text);
}

static void test_consumer_says_so(void** state) {
  (void)state;
  if (g_skip) skip();
  consumer_case("sqslite",
                "the server does not speak SQS's JSON protocol (HTTP 415 to "
                "AmazonSQS.ReceiveMessage)");
  consumer_case("elasticmq-404",
                "the server has no SQS API at the endpoint's path / (HTTP 404 "
                "to AmazonSQS.ReceiveMessage");
  consumer_case("unknown-op",
                "the server does not know the operation "
                "AmazonSQS.ReceiveMessage (HTTP 404 UnknownOperationException)");
  consumer_case("portal",
                "the server's answer is not SQS's JSON (HTTP 200, text/html, "
                "to AmazonSQS.ReceiveMessage)");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sqslite_415),
      cmocka_unit_test(test_elasticmq_404),
      cmocka_unit_test(test_elasticmq_xml),
      cmocka_unit_test(test_unknown_operation),
      cmocka_unit_test(test_invalid_action),
      cmocka_unit_test(test_captive_portal),
      cmocka_unit_test(test_sender_fault_still_charges),
      cmocka_unit_test(test_consumer_says_so),
  };
  return cmocka_run_group_tests_name("relay_protocol", tests, group_setup,
                                     group_teardown);
}
