/* SPDX-License-Identifier: Apache-2.0 */
/*
** Issue 15 end to end, against clients this project did not write: events
** built and serialized by the official CloudEvents SDK for JavaScript and
** sent by the AWS SDK (ci_send), oncebox's own events read back and judged
** by them (ci_check), and by a second oncebox engine. Real engines on real
** SQLite files, fauxqs behind the SigV4-verifying TLS terminator.
**
** Skips with a message when node, the SDKs or fauxqs are missing.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>
#include <sqlite3.h>

#include "tests/integration/consumer/ce_interop_util.h"
#include "tests/integration/consumer/consumer_test_util.h"
#include "tests/integration/sqs/sqs_test_util.h"
#include "tests/support/testsupport.h"

#define TRACE_ID "4bf92f3577b34da6a3ce929d0e0e4736"
#define TRACEPARENT "00-" TRACE_ID "-00f067aa0ba902b7-01"
#define TRACESTATE "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"

static sq_server_t g_srv;
static const char* g_skip;
static char* g_home;
static char* g_dir;
static int g_seq;

#define SKIP_WITHOUT_TOOLS() \
  do {                       \
    if (g_skip != NULL) skip(); \
  } while (0)

/* ---- engines --------------------------------------------------------------- */

static void log_cb(void* ctx, ob_log_level_t level, const char* msg) {
  (void)ctx;
  if (level <= OB_LOG_WARN) fprintf(stderr, "  engine: %s\n", msg);
}

/* What each handling saw, in order. */
static int record(ob_tx_t* tx, const ob_message_t* m, void* arg) {
  ob_value_t v[6] = {OB_VTEXT(m->source ? m->source : "-"), OB_VTEXT(m->id),
                     OB_VTEXT(m->content_type ? m->content_type : "-"),
                     OB_VTEXT(m->traceparent ? m->traceparent : "-"),
                     OB_VTEXT(m->tracestate ? m->tracestate : "-"),
                     OB_VBLOB(m->body, m->body_len)};
  int rc = ob_tx_exec(tx,
                      "INSERT INTO seen(source, id, content_type, traceparent,"
                      " tracestate, body) VALUES (?, ?, ?, ?, ?, ?)",
                      v, 6, NULL, NULL);
  /* Emitting: the trace must continue in the event (arg non-NULL). */
  if (rc >= 0 && arg != NULL)  /* ob_tx_exec counts the rows changed */
    rc = ob_tx_emit(tx, "Noted", "agg-1", "{\"ok\":true}", 11, NULL);
  return rc < 0 ? rc : OB_DONE;
}

static int refuse(ob_tx_t* tx, const ob_message_t* m, void* arg) {
  (void)m;
  (void)arg;
  return ob_tx_fail(tx, "refused for good");
}

static char* new_db(void) {
  char name[64];
  snprintf(name, sizeof name, "interop-%d.sqlite", ++g_seq);
  return ts_path(g_dir, name);
}

typedef struct eng_opts_s {
  const char* consume_url;   /* NULL: no consumer */
  const char* publish_url;   /* NULL: no relay */
  const char* source;        /* the relay's --source */
  int emit;                  /* the Sale handler emits an event */
  int failures_to_sqs;
  int vt_s;
} eng_opts_t;

static ob_engine_t* open_engine(const char* db, const eng_opts_t* x) {
  ob_options_t o;
  ob_engine_t* e;
  char err[512];
  sqlite3* h;
  ob_options_init(&o);
  o.db_path = db;
  o.poll_interval_ms = 50;
  o.log = log_cb;
  o.log_level = OB_LOG_DEBUG;
  if (ob_open(&e, &o, err, sizeof err) != 0) fail_msg("ob_open: %s", err);
  assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
  assert_int_equal(
      sqlite3_exec(h,
                   "CREATE TABLE IF NOT EXISTS seen(n INTEGER PRIMARY KEY,"
                   " source TEXT, id TEXT, content_type TEXT, traceparent TEXT,"
                   " tracestate TEXT, body BLOB)",
                   NULL, NULL, NULL),
      SQLITE_OK);
  sqlite3_close(h);
  assert_int_equal(ob_register(e, "Sale", "sales", record,
                               x->emit ? (void*)1 : NULL),
                   0);
  assert_int_equal(ob_register(e, "Refused", "sales", refuse, NULL), 0);
  if (x->consume_url != NULL) {
    ob_consumer_options_t c;
    ob_consumer_options_init(&c);
    c.queue_url = x->consume_url;
    c.prefetch = 10;
    c.wait_seconds = 1;
    c.visibility_timeout_s = x->vt_s;
    c.probe.base_ms = 200;
    c.probe.cap_ms = 1000;
    c.failures_to_sqs = x->failures_to_sqs;
    if (ob_consumer_enable(e, &c, err, sizeof err) != 0)
      fail_msg("ob_consumer_enable: %s", err);
  }
  if (x->publish_url != NULL) {
    ob_relay_options_t r;
    ob_relay_options_init(&r);
    r.queue_url = x->publish_url;
    r.source = x->source;
    r.probe.base_ms = 200;
    r.probe.cap_ms = 1000;
    if (ob_relay_enable(e, &r, err, sizeof err) != 0)
      fail_msg("ob_relay_enable: %s", err);
  }
  return e;
}

static void run_until_idle(ob_engine_t* e) {
  int rc = ob_run(e, OB_RUN_UNTIL_IDLE, 0);
  if (rc != 0) fail_msg("ob_run: %s: %s", ob_strerror(rc), ob_errmsg(e));
}

static long long db_int(const char* db, const char* sql) {
  sqlite3* h;
  sqlite3_stmt* st;
  long long v = -1;
  assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
  if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) != SQLITE_OK)
    fail_msg("prepare %s: %s", sql, sqlite3_errmsg(h));
  if (sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(h);
  return v;
}

/* The text of the first row of sql (malloc'd, "" when none). */
static char* db_text(const char* db, const char* sql) {
  sqlite3* h;
  sqlite3_stmt* st;
  char* v = NULL;
  assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
  if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) != SQLITE_OK)
    fail_msg("prepare %s: %s", sql, sqlite3_errmsg(h));
  if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0) != NULL)
    v = strdup((const char*)sqlite3_column_text(st, 0));
  sqlite3_finalize(st);
  sqlite3_close(h);
  return v ? v : strdup("");
}

static void send_specs(const char* url, const char* specs, int n) {
  assert_int_equal(ci_send(&g_srv, url, specs, NULL, 0), n);
}

/* ---- tests ----------------------------------------------------------------- */

/* Two producers counting from 1: (source, id) is the identity, so four
** events; each sent twice (a producer's retry), still four handlings. */
static void test_foreign_ids_and_sources(void** state) {
  const char* specs =
      "[{\"id\":\"1\",\"source\":\"urn:pos:store-1\",\"type\":\"Sale\","
      "\"data\":{\"n\":1}},"
      "{\"id\":\"2\",\"source\":\"urn:pos:store-1\",\"type\":\"Sale\","
      "\"data\":{\"n\":2}},"
      "{\"id\":\"1\",\"source\":\"https://pos.example/store%2017\","
      "\"type\":\"Sale\",\"data\":{\"n\":3}},"
      "{\"id\":\"2\",\"source\":\"https://pos.example/store%2017\","
      "\"type\":\"Sale\",\"data\":{\"n\":4}},"
      "{\"id\":\"order 42/ÄÖ\",\"source\":\"/relative/ref\",\"type\":\"Sale\","
      "\"data\":{\"n\":5}}]";
  eng_opts_t x = {0};
  char* url;
  char* db;
  ob_engine_t* e;
  (void)state;
  SKIP_WITHOUT_TOOLS();
  url = ct_new_queue(&g_srv, NULL);
  db = new_db();
  send_specs(url, specs, 5);
  send_specs(url, specs, 5);
  x.consume_url = url;
  e = open_engine(db, &x);
  run_until_idle(e);
  ob_close(e);
  assert_int_equal(db_int(db, "SELECT count(*) FROM seen"), 5);
  assert_int_equal(db_int(db, "SELECT count(*) FROM seen WHERE id = '1'"), 2);
  assert_int_equal(db_int(db, "SELECT count(*) FROM seen WHERE source ="
                              " 'https://pos.example/store%2017'"),
                   2);
  assert_int_equal(db_int(db, "SELECT count(*) FROM seen WHERE id ="
                              " 'order 42/ÄÖ' AND source = '/relative/ref'"),
                   1);
  assert_int_equal(db_int(db, "SELECT count(*) FROM failed_message"), 0);
  assert_int_equal(ct_queue_depth(&g_srv, url, NULL, NULL), 0);
  free(db);
  free(url);
}

/* What the SDK emits for binary data (data_base64) reaches the handler as
** the bytes, with the datacontenttype; a text type's string data as its
** text. */
static void test_binary_and_text_data(void** state) {
  const char* specs =
      "[{\"id\":\"b1\",\"source\":\"urn:pos:scale\",\"type\":\"Sale\","
      "\"datacontenttype\":\"application/octet-stream\","
      "\"binary\":\"0001225c0afffe807f41\"},"
      "{\"id\":\"b2\",\"source\":\"urn:pos:scale\",\"type\":\"Sale\","
      "\"binary\":\"ff\"},"
      "{\"id\":\"t1\",\"source\":\"urn:pos:scale\",\"type\":\"Sale\","
      "\"datacontenttype\":\"text/plain\",\"data\":\"hello\\nworld\"}]";
  eng_opts_t x = {0};
  char* url;
  char* db;
  char* v;
  ob_engine_t* e;
  (void)state;
  SKIP_WITHOUT_TOOLS();
  url = ct_new_queue(&g_srv, NULL);
  db = new_db();
  send_specs(url, specs, 3);
  x.consume_url = url;
  e = open_engine(db, &x);
  run_until_idle(e);
  ob_close(e);
  v = db_text(db, "SELECT hex(body) || ' ' || content_type FROM seen WHERE"
                  " id = 'b1'");
  assert_string_equal(v, "0001225C0AFFFE807F41 application/octet-stream");
  free(v);
  v = db_text(db, "SELECT hex(body) || ' ' || content_type FROM seen WHERE"
                  " id = 'b2'");
  assert_string_equal(v, "FF -");
  free(v);
  v = db_text(db, "SELECT body || '|' || content_type FROM seen WHERE"
                  " id = 't1'");
  assert_string_equal(v, "hello\nworld|text/plain");
  free(v);
  assert_int_equal(ct_queue_depth(&g_srv, url, NULL, NULL), 0);
  free(db);
  free(url);
}

/* oncebox's own events with a long source (300 and 5000 bytes; a 256-byte
** buffer refused them on consumption before): the SDK finds them valid,
** and a second engine consumes them with that source. */
static void test_own_events_long_source(void** state) {
  char* src = malloc(5100);
  eng_opts_t a = {0}, b = {0};
  char* q1;
  char* q2;
  char* dba;
  char* dbb;
  char** lines = NULL;
  int invalid = -1, n;
  ob_engine_t* e;
  (void)state;
  SKIP_WITHOUT_TOOLS();
  strcpy(src, "https://pos.example/terminals/");
  while (strlen(src) < 5000) strcat(src, "abcdefghij");
  q1 = ct_new_queue(&g_srv, NULL);
  q2 = ct_new_queue(&g_srv, NULL);
  dba = new_db();
  dbb = new_db();
  /* Engine A: handles a local Sale that emits, publishes to q1. */
  a.publish_url = q1;
  a.source = src;
  a.emit = 1;
  e = open_engine(dba, &a);
  {
    ob_envelope_t env;
    char id[OB_UUID_BUFLEN];
    memset(&env, 0, sizeof env);
    env.type = "Sale";
    env.id = ct_event_id(1, id);
    env.body = "{}";
    env.body_len = 2;
    assert_int_equal(ob_enqueue(e, &env), 0);
  }
  run_until_idle(e);
  ob_close(e);
  n = ci_check(&g_srv, q1, 1, 10000, &lines, &invalid);
  assert_int_equal(n, 1);
  assert_int_equal(invalid, 0);
  {
    cJSON* o = cJSON_Parse(lines[0]);
    assert_non_null(o);
    assert_string_equal(cJSON_GetObjectItem(o, "source")->valuestring, src);
    /* Re-send that very body to q2 for engine B. */
    {
      cJSON* spec = cJSON_CreateArray();
      cJSON* one = cJSON_CreateObject();
      char* specs;
      cJSON_AddStringToObject(one, "raw",
                              cJSON_GetObjectItem(o, "body")->valuestring);
      cJSON_AddItemToArray(spec, one);
      specs = cJSON_PrintUnformatted(spec);
      send_specs(q2, specs, 1);
      free(specs);
      cJSON_Delete(spec);
    }
    cJSON_Delete(o);
  }
  ci_lines_free(lines, n);
  /* Engine B consumes oncebox's event: its Noted type has no handler
  ** there, so register one that records. */
  b.consume_url = q2;
  e = open_engine(dbb, &b);
  assert_int_equal(ob_register(e, "Noted", "notes", record, NULL), 0);
  run_until_idle(e);
  ob_close(e);
  assert_int_equal(db_int(dbb, "SELECT count(*) FROM seen WHERE length(source)"
                               " = 5000"),
                   1);
  assert_int_equal(db_int(dbb, "SELECT count(*) FROM failed_message"), 0);
  free(dba);
  free(dbb);
  free(q1);
  free(q2);
  free(src);
}

/* The distributed-tracing extension: the SDK's traceparent and tracestate
** reach the handler; the event it emits carries the same trace id with a
** new parent id, and the SDK reads it as valid. */
static void test_trace_context_through_oncebox(void** state) {
  const char* specs =
      "[{\"id\":\"tr-1\",\"source\":\"urn:pos:till\",\"type\":\"Sale\","
      "\"data\":{},\"traceparent\":\"" TRACEPARENT "\",\"tracestate\":\""
      TRACESTATE "\"}]";
  eng_opts_t x = {0};
  char* in;
  char* out;
  char* db;
  char* v;
  char** lines = NULL;
  int invalid = -1, n;
  ob_engine_t* e;
  (void)state;
  SKIP_WITHOUT_TOOLS();
  in = ct_new_queue(&g_srv, NULL);
  out = ct_new_queue(&g_srv, NULL);
  db = new_db();
  send_specs(in, specs, 1);
  x.consume_url = in;
  x.publish_url = out;
  x.emit = 1;
  e = open_engine(db, &x);
  run_until_idle(e);
  ob_close(e);
  v = db_text(db, "SELECT traceparent || ' ' || tracestate FROM seen");
  assert_string_equal(v, TRACEPARENT " " TRACESTATE);
  free(v);
  n = ci_check(&g_srv, out, 1, 10000, &lines, &invalid);
  assert_int_equal(n, 1);
  assert_int_equal(invalid, 0);
  {
    cJSON* o = cJSON_Parse(lines[0]);
    const char* tp;
    assert_non_null(o);
    tp = cJSON_GetObjectItem(o, "traceparent")->valuestring;
    assert_int_equal(strlen(tp), 55);
    assert_memory_equal(tp, "00-" TRACE_ID "-", 36);
    assert_string_not_equal(tp + 36, "00f067aa0ba902b7-01");
    assert_string_equal(tp + 52, "-01");
    assert_string_equal(cJSON_GetObjectItem(o, "tracestate")->valuestring,
                        TRACESTATE);
    cJSON_Delete(o);
  }
  ci_lines_free(lines, n);
  free(db);
  free(in);
  free(out);
}

/* A body that is not a CloudEvent keeps, in the failure store, everything
** that arrived: the body, the message attributes (Binary in base64) and
** SQS's system attributes. */
static void test_failure_store_keeps_attributes(void** state) {
  const char* specs =
      "[{\"raw\":\"not a cloudevent\",\"messageAttributes\":{"
      "\"tenant\":{\"DataType\":\"String\",\"StringValue\":\"store-17\"},"
      "\"sig\":{\"DataType\":\"Binary\",\"BinaryValue\":\"AAEC/w==\"},"
      "\"n\":{\"DataType\":\"Number.int\",\"StringValue\":\"42\"}}}]";
  eng_opts_t x = {0};
  char* url;
  char* db;
  char* h;
  cJSON* o;
  cJSON* ma;
  ob_engine_t* e;
  (void)state;
  SKIP_WITHOUT_TOOLS();
  url = ct_new_queue(&g_srv, NULL);
  db = new_db();
  send_specs(url, specs, 1);
  x.consume_url = url;
  e = open_engine(db, &x);
  run_until_idle(e);
  ob_close(e);
  h = db_text(db, "SELECT headers FROM failed_message");
  o = cJSON_Parse(h);
  if (o == NULL) fail_msg("headers are not JSON: %s", h);
  ma = cJSON_GetObjectItem(o, "sqsMessageAttributes");
  assert_non_null(ma);
  assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(ma, "tenant"),
                                          "StringValue")->valuestring,
                      "store-17");
  assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(ma, "sig"),
                                          "BinaryValue")->valuestring,
                      "AAEC/w==");
  assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(ma, "n"),
                                          "DataType")->valuestring,
                      "Number.int");
  assert_non_null(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "sqsAttributes"),
                                      "SentTimestamp"));
  assert_non_null(cJSON_GetObjectItem(o, "sqsMessageId"));
  cJSON_Delete(o);
  free(h);
  h = db_text(db, "SELECT body FROM failed_message");
  assert_string_equal(h, "not a cloudevent");
  free(h);
  free(db);
  free(url);
}

/* --failures-to-sqs: a message that fails for good (not a CloudEvent; an
** unrecoverable handler) stays in SQS, and the queue's redrive policy
** moves it to the dead-letter queue after maxReceiveCount receives;
** nothing lands in the local failure store. */
static void test_failures_to_sqs_redrive(void** state) {
  char attrs[512];
  char* dlq;
  char* url;
  char* db;
  eng_opts_t x = {0};
  ob_engine_t* e;
  long long ok;
  const char* specs =
      "[{\"raw\":\"{not json\"},"
      "{\"id\":\"r1\",\"source\":\"urn:pos:till\",\"type\":\"Refused\","
      "\"data\":{}},"
      "{\"id\":\"s1\",\"source\":\"urn:pos:till\",\"type\":\"Sale\","
      "\"data\":{}}]";
  (void)state;
  SKIP_WITHOUT_TOOLS();
  dlq = ct_new_queue(&g_srv, NULL);
  {
    /* The DLQ's ARN: fauxqs's, as GetQueueAttributes reports it. */
    char* arn = NULL;
    ct_sqs_t s;
    ob__sqs_req_t req;
    sq_done_t d = {0, 0};
    static const char* const names[] = {"QueueArn"};
    ct_sqs_open(&g_srv, &s);
    memset(&req, 0, sizeof req);
    req.data = &d;
    assert_int_equal(
        ob__sqs_get_queue_attributes(s.c, &req, dlq, names, 1, sq_cb), 0);
    assert_int_equal(sq_wait(&s.loop, &req), 0);
    arn = strdup(ob__sqs_attr_get(&req.attrs, "QueueArn"));
    ob__sqs_req_cleanup(&req);
    ct_sqs_close(&s);
    snprintf(attrs, sizeof attrs,
             "{\"RedrivePolicy\":\"{\\\"deadLetterTargetArn\\\":\\\"%s\\\","
             "\\\"maxReceiveCount\\\":\\\"2\\\"}\"}",
             arn);
    free(arn);
  }
  url = ct_new_queue(&g_srv, attrs);
  db = new_db();
  send_specs(url, specs, 3);
  x.consume_url = url;
  x.failures_to_sqs = 1;
  x.vt_s = 1;
  e = open_engine(db, &x);
  run_until_idle(e);
  ob_close(e);
  assert_int_equal(db_int(db, "SELECT count(*) FROM failed_message"), 0);
  ok = db_int(db, "SELECT count(*) FROM seen WHERE id = 's1'");
  assert_int_equal(ok, 1);
  assert_int_equal(ct_queue_depth(&g_srv, url, NULL, NULL), 0);
  assert_int_equal(ct_queue_depth(&g_srv, dlq, NULL, NULL), 2);
  free(db);
  free(url);
  free(dlq);
}

static int setup(void** state) {
  (void)state;
  g_skip = ci_skip_reason();
  if (g_skip != NULL) {
    printf("%s\n", g_skip);
    return 0;
  }
  if (sq_server_start(&g_srv, "consumer-interop", NULL) != 0) return -1;
  g_home = ts_mkdtemp("interop-home");
  g_dir = ts_mkdtemp("interop");
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
      cmocka_unit_test(test_foreign_ids_and_sources),
      cmocka_unit_test(test_binary_and_text_data),
      cmocka_unit_test(test_own_events_long_source),
      cmocka_unit_test(test_trace_context_through_oncebox),
      cmocka_unit_test(test_failure_store_keeps_attributes),
      cmocka_unit_test(test_failures_to_sqs_redrive),
  };
  return cmocka_run_group_tests_name("consumer_interop", tests, setup,
                                     teardown);
}
