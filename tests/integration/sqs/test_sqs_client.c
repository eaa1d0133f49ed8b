/* SPDX-License-Identifier: Apache-2.0 */
/*
** The SQS client (platform/sqs) against fauxqs behind a TLS terminator that
** verifies every SigV4 signature with @smithy/signature-v4
** (sqs_server.mjs): real TLS with a CA made at test time, the client
** connecting to https://sqs.test:PORT through the resolve override.
**
** Covered: send/receive with attributes, delete, GetQueueUrl,
** GetQueueAttributes, batch send (10 entries, and Failed entries provoked by
** a queue's MaximumMessageSize), delete batch, visibility (single and
** batch), FIFO (group id, dedup id), long poll deadline, error responses
** (nonexistent queue), a wrong secret (403 SignatureDoesNotMatch, not
** retried), session tokens, 5xx/throttling/reset/timeout retries with their
** backoff, server retry hints, the shared token bucket, a lost reply (the
** retry duplicates the message), clock-skew correction, cancel and
** close. Every call also checks the callback ran once and never inside the
** submitting call.
**
** Skips with a message when node or tests/interop/node_modules is missing.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "platform/http/tls_compat.h"
#include "tests/integration/sqs/sqs_test_util.h"
#include "tests/support/testsupport.h"

static sq_server_t g_srv;
static const char* g_skip;
static int g_qn;   /* queue name counter */

typedef struct fix_s {
  uv_loop_t loop;
  sq_clock_t clock;
  ob__sqs_client_t* c;
  ob__sqs_req_t req;
  sq_done_t done;
  char* q;         /* a fresh standard queue */
} fix_t;

static int group_setup(void** state) {
  (void)state;
  g_skip = sq_skip_reason();
  if (g_skip != NULL) {
    printf("%s\n", g_skip);
    return 0;
  }
  return sq_server_start(&g_srv, "sqs-client", NULL);
}

static int group_teardown(void** state) {
  (void)state;
  if (g_skip == NULL) sq_server_stop(&g_srv);
  return 0;
}

static char* new_queue(const char* suffix, const char* attrs) {
  char name[80];
  char* url;
  snprintf(name, sizeof name, "q%d%s", ++g_qn, suffix ? suffix : "");
  url = sq_create_queue(&g_srv, name, attrs);
  assert_non_null(url);
  return url;
}

static void open_client(fix_t* f, const char* secret, uint64_t timeout_ms) {
  ob__sqs_client_config_t cfg;
  char err[256] = "";
  int rc;
  sq_client_config(&g_srv, &cfg, secret, &f->clock.clock);
  if (timeout_ms) cfg.request_timeout_ms = timeout_ms;
  rc = ob__sqs_client_open(&f->c, &f->loop, &cfg, err, sizeof err);
  if (rc != 0) fprintf(stderr, "open: %s\n", err);
  assert_int_equal(rc, 0);
}

static int setup(void** state) {
  fix_t* f;
  *state = NULL;
  if (g_skip != NULL) return 0;   /* the test body skips */
  f = calloc(1, sizeof *f);
  if (f == NULL) return -1;
  uv_loop_init(&f->loop);
  sq_clock_init(&f->clock, 0, -1);
  f->req.data = &f->done;
  f->q = new_queue(NULL, NULL);
  *state = f;
  return 0;
}

static void on_closed(ob__sqs_client_t* c, void* arg) {
  (void)c;
  (*(int*)arg)++;
}

static void close_client(fix_t* f) {
  int closed = 0;
  if (f->c == NULL) return;
  ob__sqs_client_close(f->c, on_closed, &closed);
  while (closed == 0)
    if (uv_run(&f->loop, UV_RUN_ONCE) == 0 && closed == 0) break;
  assert_int_equal(closed, 1);
  f->c = NULL;
}

static int teardown(void** state) {
  fix_t* f = *state;
  if (f == NULL) return 0;
  ob__sqs_req_cleanup(&f->req);
  close_client(f);
  uv_run(&f->loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&f->loop), 0);
  free(f->q);
  free(f);
  return 0;
}

#define FIX             \
  fix_t* f = *state; \
  if (f == NULL) {   \
    skip();          \
    return;          \
  }

/* Submit with `call`, wait, return the status. */
#define RUN(f, call)                                \
  ({                                                \
    int rc_;                                        \
    (f)->done.calls = 0;                            \
    rc_ = (call);                                   \
    if (rc_ != 0) {                                 \
      fprintf(stderr, "submit: %s (%s)\n",          \
              ob__sqs_err_name(rc_), (f)->req.detail); \
      fail();                                       \
    }                                               \
    sq_wait(&(f)->loop, &(f)->req);                 \
  })

static void expect_ok(fix_t* f, int status) {
  if (status != 0)
    fprintf(stderr, "status %s: %s\n", ob__sqs_err_name(status), f->req.detail);
  assert_int_equal(status, 0);
  assert_string_equal(f->req.detail, "");
}

static int send_text(fix_t* f, const char* q, const char* body) {
  ob__sqs_send_t m;
  ob__sqs_send_init(&m);
  m.body = body;
  m.body_len = strlen(body);
  return RUN(f, ob__sqs_send_message(f->c, &f->req, q, &m, sq_cb));
}

static int receive(fix_t* f, const char* q, int max, int wait, int vt) {
  static const char* const all[] = {"All"};
  ob__sqs_receive_t r;
  ob__sqs_receive_init(&r);
  r.queue_url = q;
  r.max_messages = max;
  r.wait_time_seconds = wait;
  r.visibility_timeout = vt;
  r.message_attribute_names = all;
  r.nmessage_attribute_names = 1;
  r.system_attribute_names = all;
  r.nsystem_attribute_names = 1;
  return RUN(f, ob__sqs_receive_message(f->c, &f->req, &r, sq_cb));
}

/* ---- happy paths -------------------------------------------------------------- */

static void test_send_receive_delete(void** state) {
  FIX;
  ob__sqs_attr_t attrs[3] = {
      {"traceId", "String", "abc", 3},
      {"amount", "Number", "42.50", 5},
      {"blob", "Binary", "\x01\x02\x00\x03", 4},
  };
  ob__sqs_send_t m;
  char msg_id[128];
  int before_bad = sq_count(&g_srv, "REQ AmazonSQS.SendMessage 403");
  int before_ok = sq_count(&g_srv, "REQ AmazonSQS.SendMessage 200 ok");
  const ob__sqs_message_t* got;

  open_client(f, NULL, 0);
  ob__sqs_send_init(&m);
  m.body = "h\xc3\xa9llo \"world\"\n";
  m.body_len = strlen(m.body);
  m.attrs = attrs;
  m.nattrs = 3;
  expect_ok(f, RUN(f, ob__sqs_send_message(f->c, &f->req, f->q, &m, sq_cb)));
  assert_int_equal(f->req.attempts, 1);
  assert_int_equal(f->req.http_status, 200);
  assert_non_null(f->req.send.message_id);
  assert_non_null(f->req.send.md5_of_message_attributes);
  snprintf(msg_id, sizeof msg_id, "%s", f->req.send.message_id);
  assert_int_equal(sq_count(&g_srv, "REQ AmazonSQS.SendMessage 200 ok"),
                   before_ok + 1);
  assert_int_equal(sq_count(&g_srv, "REQ AmazonSQS.SendMessage 403"),
                   before_bad);

  expect_ok(f, receive(f, f->q, 10, 1, 30));
  assert_int_equal(f->req.receive.n, 1);
  got = &f->req.receive.messages[0];
  assert_string_equal(got->message_id, msg_id);
  assert_int_equal(got->body_len, m.body_len);
  assert_memory_equal(got->body, m.body, m.body_len);
  assert_int_equal(got->receive_count, 1);
  assert_true(got->sent_timestamp_ms > 0);
  assert_int_equal(got->nmessage_attributes, 3);
  for (size_t i = 0; i < 3; i++) {
    const ob__sqs_attr_t* a = NULL;
    for (size_t k = 0; k < 3; k++)
      if (strcmp(got->message_attributes[k].name, attrs[i].name) == 0)
        a = &got->message_attributes[k];
    assert_non_null(a);
    assert_string_equal(a->data_type, attrs[i].data_type);
    assert_int_equal(a->value_len, attrs[i].value_len);
    assert_memory_equal(a->value, attrs[i].value, attrs[i].value_len);
  }
  {
    char* handle = strdup(got->receipt_handle);
    expect_ok(f, RUN(f, ob__sqs_delete_message(f->c, &f->req, f->q, handle,
                                              sq_cb)));
    free(handle);
  }
  expect_ok(f, receive(f, f->q, 10, 0, -1));
  assert_int_equal(f->req.receive.n, 0);
  /* Each of those requests passed the terminator's SigV4 check: a bad
  ** signature is a 403 and would have failed the call. */
  assert_int_equal(sq_count(&g_srv, "REQ AmazonSQS.DeleteMessage 200 ok"), 1);
}

static void test_queue_url_and_attributes(void** state) {
  FIX;
  static const char* const names[] = {"All"};
  const char* name = strrchr(f->q, '/') + 1;
  open_client(f, NULL, 0);
  expect_ok(f, RUN(f, ob__sqs_get_queue_url(f->c, &f->req, name, NULL, sq_cb)));
  assert_string_equal(f->req.queue_url, f->q);
  expect_ok(f, send_text(f, f->q, "one"));
  expect_ok(f, send_text(f, f->q, "two"));
  expect_ok(f, RUN(f, ob__sqs_get_queue_attributes(f->c, &f->req, f->q, names,
                                                   1, sq_cb)));
  assert_string_equal(ob__sqs_attr_get(&f->req.attrs, "VisibilityTimeout"),
                      "30");
  assert_string_equal(
      ob__sqs_attr_get(&f->req.attrs, "ApproximateNumberOfMessages"), "2");
  assert_non_null(ob__sqs_attr_get(&f->req.attrs, "QueueArn"));
}

static void test_batch_send_and_delete(void** state) {
  FIX;
  ob__sqs_send_t e[10];
  char ids[10][8], bodies[10][32];
  ob__sqs_attr_t attr = {"kind", "String", "batch", 5};
  ob__sqs_handle_entry_t h[11];
  char* handles[10];
  size_t nh = 0;

  open_client(f, NULL, 0);
  for (int i = 0; i < 10; i++) {
    ob__sqs_send_init(&e[i]);
    snprintf(ids[i], sizeof ids[i], "e%d", i);
    snprintf(bodies[i], sizeof bodies[i], "batch body %d", i);
    e[i].id = ids[i];
    e[i].body = bodies[i];
    e[i].body_len = strlen(bodies[i]);
    if (i % 2) {
      e[i].attrs = &attr;
      e[i].nattrs = 1;
    }
  }
  expect_ok(f, RUN(f, ob__sqs_send_message_batch(f->c, &f->req, f->q, e, 10,
                                                sq_cb)));
  assert_int_equal(f->req.batch.nok, 10);
  assert_int_equal(f->req.batch.nfailed, 0);
  for (size_t i = 0; i < 10; i++) assert_non_null(f->req.batch.ok[i].message_id);

  /* Collect the 10 receipt handles (fauxqs returns up to 10 per call). */
  while (nh < 10) {
    expect_ok(f, receive(f, f->q, 10, 1, 60));
    assert_true(f->req.receive.n > 0);
    for (size_t i = 0; i < f->req.receive.n && nh < 10; i++)
      handles[nh++] = strdup(f->req.receive.messages[i].receipt_handle);
  }
  for (size_t i = 0; i < 10; i++) {
    h[i].id = ids[i];
    h[i].receipt_handle = handles[i];
    h[i].visibility_timeout = -1;
  }
  expect_ok(f, RUN(f, ob__sqs_delete_message_batch(f->c, &f->req, f->q, h, 10,
                                                  sq_cb)));
  assert_int_equal(f->req.batch.nok, 10);
  assert_int_equal(f->req.batch.nfailed, 0);
  for (size_t i = 0; i < 10; i++) free(handles[i]);
  expect_ok(f, receive(f, f->q, 10, 0, -1));
  assert_int_equal(f->req.receive.n, 0);

  /* Too many entries and duplicate ids never reach the wire. */
  assert_int_equal(ob__sqs_send_message_batch(f->c, &f->req, f->q, e, 11, sq_cb),
                   OB_ETOOBIG);
  assert_non_null(strstr(f->req.detail, "invalid request"));
  e[1].id = ids[0];
  assert_int_equal(ob__sqs_send_message_batch(f->c, &f->req, f->q, e, 2, sq_cb),
                   OB_EINVAL);
  assert_non_null(strstr(f->req.detail, "DUPLICATE"));
}

static void test_batch_failed_entries(void** state) {
  FIX;
  char* small = new_queue("small", "{\"MaximumMessageSize\":\"1024\"}");
  static char big[2000];
  ob__sqs_send_t e[3];
  const char* ids[3] = {"ok1", "toolarge", "ok2"};
  int saw_failed = 0;

  open_client(f, NULL, 0);
  memset(big, 'x', sizeof big - 1);
  for (int i = 0; i < 3; i++) {
    ob__sqs_send_init(&e[i]);
    e[i].id = ids[i];
    e[i].body = i == 1 ? big : "fits";
    e[i].body_len = strlen(e[i].body);
  }
  /* HTTP 200 with one entry under Failed: the call succeeds, the caller
  ** walks batch.failed. */
  expect_ok(f, RUN(f, ob__sqs_send_message_batch(f->c, &f->req, small, e, 3,
                                                sq_cb)));
  assert_int_equal(f->req.batch.nok, 2);
  assert_int_equal(f->req.batch.nfailed, 1);
  for (size_t i = 0; i < f->req.batch.nfailed; i++) {
    const ob__sqs_batch_err_t* x = &f->req.batch.failed[i];
    assert_string_equal(x->id, "toolarge");
    assert_int_equal(x->sender_fault, 1);
    assert_non_null(strstr(x->code, "InvalidParameterValue"));
    saw_failed = 1;
  }
  assert_true(saw_failed);
  free(small);
}

static void test_change_visibility(void** state) {
  FIX;
  char* handle;
  ob__sqs_handle_entry_t h[2];

  open_client(f, NULL, 0);
  expect_ok(f, send_text(f, f->q, "vis"));
  expect_ok(f, receive(f, f->q, 1, 0, 60));
  assert_int_equal(f->req.receive.n, 1);
  handle = strdup(f->req.receive.messages[0].receipt_handle);
  /* Invisible for 60 s: nothing to receive. */
  expect_ok(f, receive(f, f->q, 1, 0, -1));
  assert_int_equal(f->req.receive.n, 0);
  /* Visibility 0: back at once, second receive. */
  expect_ok(f, RUN(f, ob__sqs_change_visibility(f->c, &f->req, f->q, handle, 0,
                                               sq_cb)));
  free(handle);
  expect_ok(f, receive(f, f->q, 1, 0, 60));
  assert_int_equal(f->req.receive.n, 1);
  assert_int_equal(f->req.receive.messages[0].receive_count, 2);
  handle = strdup(f->req.receive.messages[0].receipt_handle);

  /* Batch form: one good handle, one garbage handle (Failed). */
  h[0].id = "good";
  h[0].receipt_handle = handle;
  h[0].visibility_timeout = 0;
  h[1].id = "bad";
  h[1].receipt_handle = "not-a-handle";
  h[1].visibility_timeout = 0;
  expect_ok(f, RUN(f, ob__sqs_change_visibility_batch(f->c, &f->req, f->q, h, 2,
                                                     sq_cb)));
  assert_int_equal(f->req.batch.nok, 1);
  assert_string_equal(f->req.batch.ok[0].id, "good");
  assert_int_equal(f->req.batch.nfailed, 1);
  assert_string_equal(f->req.batch.failed[0].id, "bad");
  assert_non_null(strstr(f->req.batch.failed[0].code, "ReceiptHandleIsInvalid"));
  free(handle);
  expect_ok(f, receive(f, f->q, 1, 0, -1));
  assert_int_equal(f->req.receive.n, 1);
  assert_int_equal(f->req.receive.messages[0].receive_count, 3);

  /* Out of range: refused before the wire. */
  assert_int_equal(ob__sqs_change_visibility(f->c, &f->req, f->q, "h", 43201,
                                            sq_cb),
                   OB_EINVAL);
}

static void test_fifo(void** state) {
  FIX;
  char* q = new_queue(".fifo", "{\"FifoQueue\":\"true\"}");
  ob__sqs_send_t m;
  char first_id[128], first_seq[64];

  open_client(f, NULL, 0);
  ob__sqs_send_init(&m);
  m.body = "fifo one";
  m.body_len = strlen(m.body);
  m.group_id = "terminal-7";
  m.dedup_id = "evt-0001";
  expect_ok(f, RUN(f, ob__sqs_send_message(f->c, &f->req, q, &m, sq_cb)));
  assert_non_null(f->req.send.sequence_number);
  snprintf(first_id, sizeof first_id, "%s", f->req.send.message_id);
  snprintf(first_seq, sizeof first_seq, "%s", f->req.send.sequence_number);
  /* Same dedup id, different body: accepted, same id, not delivered twice. */
  m.body = "fifo one, again";
  m.body_len = strlen(m.body);
  expect_ok(f, RUN(f, ob__sqs_send_message(f->c, &f->req, q, &m, sq_cb)));
  assert_string_equal(f->req.send.message_id, first_id);
  assert_string_equal(f->req.send.sequence_number, first_seq);
  expect_ok(f, receive(f, q, 10, 0, 30));
  assert_int_equal(f->req.receive.n, 1);
  assert_string_equal(f->req.receive.messages[0].group_id, "terminal-7");
  assert_string_equal(f->req.receive.messages[0].dedup_id, "evt-0001");
  assert_string_equal(f->req.receive.messages[0].sequence_number, first_seq);

  /* No group id: the service error surfaces with its code. */
  m.group_id = NULL;
  m.dedup_id = "evt-0002";
  assert_int_equal(RUN(f, ob__sqs_send_message(f->c, &f->req, q, &m, sq_cb)),
                   OB__SQS_E_SERVICE);
  assert_int_equal(f->req.http_status, 400);
  assert_true(ob__sqs_error_is(&f->req.error, "MissingParameter"));
  assert_non_null(strstr(f->req.detail, "MissingParameter"));
  assert_non_null(strstr(f->req.detail, "MessageGroupId"));
  assert_int_equal(f->req.attempts, 1);
  free(q);
}

static void test_long_poll_deadline(void** state) {
  FIX;
  uint64_t t0;
  /* A 1 s request timeout must not cut a 2 s long poll short. */
  open_client(f, NULL, 1000);
  t0 = ht_now_ms();
  expect_ok(f, receive(f, f->q, 1, 2, -1));
  assert_int_equal(f->req.receive.n, 0);
  assert_true(ht_now_ms() - t0 >= 1900);
  assert_int_equal(f->req.attempts, 1);
}

/* ---- errors ------------------------------------------------------------------- */

static void test_nonexistent_queue(void** state) {
  FIX;
  char url[256];
  snprintf(url, sizeof url, "%.*s/no-such-queue", (int)(strrchr(f->q, '/') - f->q),
           f->q);
  open_client(f, NULL, 0);
  assert_int_equal(send_text(f, url, "x"), OB__SQS_E_NO_QUEUE);
  assert_int_equal(f->req.attempts, 1);
  assert_int_equal(f->req.http_status, 400);
  assert_string_equal(f->req.error.query_code,
                      "AWS.SimpleQueueService.NonExistentQueue");
  assert_string_equal(f->req.error.type, "QueueDoesNotExist");
  assert_int_equal(f->req.error.sender_fault, 1);
  assert_non_null(strstr(f->req.detail, "QueueDoesNotExist: The specified queue does not exist."));
  assert_false(ob__sqs_status_is_transient(OB__SQS_E_NO_QUEUE));
  assert_int_equal(RUN(f, ob__sqs_get_queue_url(f->c, &f->req, "nope", NULL,
                                               sq_cb)),
                   OB__SQS_E_NO_QUEUE);
}

static void test_wrong_secret(void** state) {
  FIX;
  const char* wrong = "WRONG/secret+canary0123456789abcdefghij";
  int before = sq_count(&g_srv, "REQ AmazonSQS.SendMessage 403 bad");
  ob__sqs_stats_t st;
  open_client(f, wrong, 0);
  assert_int_equal(send_text(f, f->q, "x"), OB__SQS_E_AUTH);
  /* Refused by the verifier (not by fauxqs), surfaced, not retried. */
  assert_int_equal(f->req.attempts, 1);
  assert_int_equal(f->req.http_status, 403);
  assert_true(ob__sqs_error_is(&f->req.error, "SignatureDoesNotMatch"));
  assert_non_null(strstr(f->req.detail, "SignatureDoesNotMatch"));
  assert_null(strstr(f->req.detail, wrong));
  assert_null(strstr(f->req.detail, SQ_SECRET));
  assert_int_equal(sq_count(&g_srv, "REQ AmazonSQS.SendMessage 403 bad"),
                   before + 1);
  ob__sqs_client_stats(f->c, &st);
  assert_int_equal(st.retries, 0);
  assert_int_equal(st.retry_tokens, 500);
}

static void test_session_token(void** state) {
  FIX;
  sq_server_t s2;
  ob__sqs_client_config_t cfg;
  char err[256];
  char* q;
  /* A second server that demands a token, so the signed token is checked. */
  assert_int_equal(sq_server_start(&s2, "sqs-token", "TOKEN/abc+def=="), 0);
  q = sq_create_queue(&s2, "tq", NULL);
  assert_non_null(q);
  sq_client_config(&s2, &cfg, NULL, &f->clock.clock);
  cfg.session_token = "TOKEN/abc+def==";
  assert_int_equal(ob__sqs_client_open(&f->c, &f->loop, &cfg, err, sizeof err), 0);
  expect_ok(f, send_text(f, q, "with token"));
  close_client(f);
  cfg.session_token = "TOKEN/other";
  assert_int_equal(ob__sqs_client_open(&f->c, &f->loop, &cfg, err, sizeof err), 0);
  assert_int_equal(send_text(f, q, "wrong token"), OB__SQS_E_AUTH);
  assert_true(ob__sqs_error_is(&f->req.error, "InvalidClientTokenId"));
  close_client(f);
  free(q);
  sq_server_stop(&s2);
}

/* ---- retries -------------------------------------------------------------------- */

static void test_5xx_retried(void** state) {
  FIX;
  ob__sqs_stats_t st;
  int faults0 = sq_count(&g_srv, "FAULT AmazonSQS.SendMessage error 503");
  open_client(f, NULL, 0);
  sq_fault(&g_srv, "{\"count\":2,\"status\":503,\"code\":\"ServiceUnavailable\","
                   "\"target\":\"AmazonSQS.SendMessage\"}");
  expect_ok(f, send_text(f, f->q, "after two 503s"));
  assert_int_equal(f->req.attempts, 3);
  assert_int_equal(sq_count(&g_srv, "FAULT AmazonSQS.SendMessage error 503"),
                   faults0 + 2);
  ob__sqs_client_stats(f->c, &st);
  assert_int_equal(st.retries, 2);
  /* Two transient retries (14 each), the last refunded on success. */
  assert_int_equal(st.retry_tokens, 500 - 28 + 14);

  /* Three in a row: the last error surfaces after 3 attempts. */
  sq_fault(&g_srv, "{\"count\":3,\"status\":500,\"code\":\"InternalFailure\","
                   "\"query\":\"InternalFailure;Receiver\"}");
  assert_int_equal(send_text(f, f->q, "x"), OB__SQS_E_UNAVAILABLE);
  assert_int_equal(f->req.attempts, 3);
  assert_int_equal(f->req.http_status, 500);
  assert_int_equal(f->req.error.sender_fault, 0);
  assert_non_null(strstr(f->req.detail, "InternalFailure"));
  assert_true(ob__sqs_status_is_transient(OB__SQS_E_UNAVAILABLE));
}

static void test_throttling_backoff(void** state) {
  FIX;
  uint64_t t0, dt;
  ob__sqs_stats_t st;
  /* rand01 = 0.1: throttling waits 0.1 x 1000 ms, then 0.1 x 2000 ms. */
  sq_clock_init(&f->clock, 0, 0.1);
  open_client(f, NULL, 0);
  sq_fault(&g_srv, "{\"count\":1,\"status\":400,\"code\":\"ThrottlingException\","
                   "\"query\":\"ThrottlingException;Sender\"}");
  sq_fault(&g_srv, "{\"count\":1,\"status\":403,\"code\":\"RequestThrottled\","
                   "\"query\":\"RequestThrottled;Sender\"}");
  t0 = ht_now_ms();
  expect_ok(f, send_text(f, f->q, "throttled twice"));
  dt = ht_now_ms() - t0;
  assert_int_equal(f->req.attempts, 3);
  assert_true(dt >= 300);
  assert_true(dt < 3000);
  ob__sqs_client_stats(f->c, &st);
  assert_int_equal(st.retry_tokens, 500 - 10 + 5);

  /* Exhausted attempts on throttling: OB__SQS_E_THROTTLED. */
  sq_clock_init(&f->clock, 0, 0.0);
  sq_fault(&g_srv, "{\"count\":3,\"status\":429,\"code\":\"TooManyRequestsException\"}");
  assert_int_equal(send_text(f, f->q, "x"), OB__SQS_E_THROTTLED);
  assert_int_equal(f->req.attempts, 3);
}

static void test_retry_hint(void** state) {
  FIX;
  uint64_t t0;
  /* Backoff 0, but the server asks for 400 ms: the hint stretches it. */
  sq_clock_init(&f->clock, 0, 0.0);
  open_client(f, NULL, 0);
  sq_fault(&g_srv, "{\"count\":1,\"status\":503,\"retryAfterMs\":400}");
  t0 = ht_now_ms();
  expect_ok(f, send_text(f, f->q, "hinted"));
  assert_true(ht_now_ms() - t0 >= 390);
  assert_int_equal(f->req.attempts, 2);
}

static void test_token_bucket(void** state) {
  FIX;
  ob__sqs_stats_t st;
  int calls = 0;
  int total_retries = 0;
  int first_refused = -1;
  sq_clock_init(&f->clock, 0, 0.0);   /* no waiting */
  open_client(f, NULL, 0);
  sq_fault(&g_srv, "{\"count\":200,\"status\":503}");
  /* 500 tokens, 14 per transient retry: 35 retries, then fail fast. */
  while (calls < 25) {
    int rc = send_text(f, f->q, "x");
    assert_int_equal(rc, OB__SQS_E_UNAVAILABLE);
    total_retries += f->req.attempts - 1;
    calls++;
    if (f->req.quota_exhausted && first_refused < 0) first_refused = calls;
    if (f->req.quota_exhausted && f->req.attempts == 1) break;
  }
  assert_int_equal(total_retries, 35);
  assert_int_equal(first_refused, 18);   /* 17 x 2 retries, then 1 */
  assert_non_null(strstr(f->req.detail, "retry quota exhausted"));
  ob__sqs_client_stats(f->c, &st);
  assert_int_equal(st.retry_tokens, 10);
  assert_true(st.quota_refusals >= 2);
  sq_clear(&g_srv);
  /* Successes refill one token each; the bucket is per client. */
  for (int i = 0; i < 4; i++) expect_ok(f, send_text(f, f->q, "ok"));
  ob__sqs_client_stats(f->c, &st);
  assert_int_equal(st.retry_tokens, 14);
  sq_fault(&g_srv, "{\"count\":1,\"status\":503}");
  expect_ok(f, send_text(f, f->q, "one retry affordable again"));
  assert_int_equal(f->req.attempts, 2);
  /* Another operation shares the same bucket: now 14 - 14 + 14 = 14. */
  sq_fault(&g_srv, "{\"count\":2,\"status\":503}");
  assert_int_equal(receive(f, f->q, 1, 0, -1), OB__SQS_E_UNAVAILABLE);
  assert_int_equal(f->req.attempts, 2);
  assert_int_equal(f->req.quota_exhausted, 1);
  sq_clear(&g_srv);
}

static void test_transport_errors_retried(void** state) {
  FIX;
  sq_clock_init(&f->clock, 0, 0.0);
  open_client(f, NULL, 1000);
  /* Connection reset after the request was read. */
  sq_fault(&g_srv, "{\"count\":1,\"mode\":\"reset\"}");
  expect_ok(f, send_text(f, f->q, "after a reset"));
  assert_int_equal(f->req.attempts, 2);
  /* No answer at all: the 1 s deadline fires, then the retry succeeds. */
  sq_fault(&g_srv, "{\"count\":1,\"mode\":\"hang\"}");
  expect_ok(f, send_text(f, f->q, "after a hang"));
  assert_int_equal(f->req.attempts, 2);
  /* Every attempt times out: the transport code surfaces. */
  sq_fault(&g_srv, "{\"count\":3,\"mode\":\"hang\"}");
  assert_int_equal(send_text(f, f->q, "x"), OB__HTTP_E_DEADLINE);
  assert_int_equal(f->req.attempts, 3);
  assert_true(ob__sqs_status_is_transient(OB__HTTP_E_DEADLINE));
}

/* The reply to an applied SendMessage is lost: the retry succeeds and the
** queue holds two copies. At-least-once, as the relay must expect (stable
** ids make the duplicate harmless downstream). */
static void test_lost_reply_duplicates(void** state) {
  FIX;
  sq_clock_init(&f->clock, 0, 0.0);
  open_client(f, NULL, 0);
  sq_fault(&g_srv, "{\"count\":1,\"mode\":\"lost-reply\"}");
  expect_ok(f, send_text(f, f->q, "maybe twice"));
  assert_int_equal(f->req.attempts, 2);
  expect_ok(f, receive(f, f->q, 10, 1, 30));
  assert_int_equal(f->req.receive.n, 2);
  assert_memory_equal(f->req.receive.messages[0].body, "maybe twice", 11);
  assert_memory_equal(f->req.receive.messages[1].body, "maybe twice", 11);
  assert_string_not_equal(f->req.receive.messages[0].message_id,
                          f->req.receive.messages[1].message_id);
}

static void test_clock_skew_corrected(void** state) {
  FIX;
  ob__sqs_stats_t st;
  int before = sq_count(&g_srv, "REQ AmazonSQS.SendMessage 400 expired");
  /* Our clock is an hour slow: the first attempt is refused as expired,
  ** its Date header corrects the offset, the one skew retry succeeds. */
  sq_clock_init(&f->clock, -3600 * 1000, 0.0);
  open_client(f, NULL, 0);
  expect_ok(f, send_text(f, f->q, "skewed"));
  assert_int_equal(f->req.attempts, 2);
  assert_int_equal(sq_count(&g_srv, "REQ AmazonSQS.SendMessage 400 expired"),
                   before + 1);
  ob__sqs_client_stats(f->c, &st);
  assert_int_equal(st.skew_corrections, 1);
  assert_true(st.clock_offset_ms > 3590 * 1000 && st.clock_offset_ms < 3610 * 1000);
  /* Later calls are signed with the corrected clock from the start. */
  expect_ok(f, send_text(f, f->q, "skewed again"));
  assert_int_equal(f->req.attempts, 1);
}

/* The other direction, and a jump in between: a clock an hour fast is
** refused once and corrected (a negative offset); then it is set back two
** hours while the client lives, so the offset is wrong by two hours the
** other way: refused once more, corrected again, accepted. Recovery does
** not depend on which way the clock is off or on it staying put. */
static void test_clock_skew_corrected_both_ways(void** state) {
  FIX;
  ob__sqs_stats_t st;
  int before = sq_count(&g_srv, "REQ AmazonSQS.SendMessage 400 expired");
  sq_clock_init(&f->clock, 3600 * 1000, 0.0);
  open_client(f, NULL, 0);
  expect_ok(f, send_text(f, f->q, "fast"));
  assert_int_equal(f->req.attempts, 2);
  ob__sqs_client_stats(f->c, &st);
  assert_int_equal(st.skew_corrections, 1);
  assert_true(st.clock_offset_ms < -3590 * 1000 &&
              st.clock_offset_ms > -3610 * 1000);
  f->clock.offset_ms -= 2 * 3600 * 1000;  /* now an hour slow */
  expect_ok(f, send_text(f, f->q, "slow after a jump"));
  assert_int_equal(f->req.attempts, 2);
  ob__sqs_client_stats(f->c, &st);
  assert_int_equal(st.skew_corrections, 2);
  assert_true(st.clock_offset_ms > 3590 * 1000 &&
              st.clock_offset_ms < 3610 * 1000);
  assert_int_equal(sq_count(&g_srv, "REQ AmazonSQS.SendMessage 400 expired"),
                   before + 2);
  expect_ok(f, send_text(f, f->q, "settled"));
  assert_int_equal(f->req.attempts, 1);
}

/* Poll the loop (and the server's log) until `line` was logged n times. */
static void wait_log(fix_t* f, const char* line, int n) {
  for (int i = 0; i < 2500 && sq_count(&g_srv, line) < n; i++) {
    uv_run(&f->loop, UV_RUN_NOWAIT);
    usleep(2000);
  }
  assert_true(sq_count(&g_srv, line) >= n);
}

static void test_cancel_and_close(void** state) {
  FIX;
  ob__sqs_req_t r2;
  sq_done_t d2;
  ob__sqs_send_t m;
  int hangs = sq_count(&g_srv, "FAULT AmazonSQS.SendMessage hang");
  int throttles = sq_count(&g_srv, "FAULT AmazonSQS.SendMessage error 400");
  open_client(f, NULL, 0);
  ob__sqs_send_init(&m);
  m.body = "never answered";
  m.body_len = strlen(m.body);

  /* Cancel while the server sits on the request. */
  sq_fault(&g_srv, "{\"count\":1,\"mode\":\"hang\"}");
  f->done.calls = 0;
  assert_int_equal(ob__sqs_send_message(f->c, &f->req, f->q, &m, sq_cb), 0);
  assert_int_equal(ob__sqs_send_message(f->c, &f->req, f->q, &m, sq_cb),
                   OB_ESTATE);
  wait_log(f, "FAULT AmazonSQS.SendMessage hang", hangs + 1);
  assert_int_equal(ob__sqs_cancel(&f->req), 0);
  assert_int_equal(f->done.calls, 0);   /* never from inside cancel */
  assert_int_equal(sq_wait(&f->loop, &f->req), OB_ECANCELED);
  assert_int_equal(ob__sqs_cancel(&f->req), OB_ESTATE);
  ob__sqs_req_cleanup(&f->req);

  /* Close with one call waiting ~1 s to retry after a throttle and one
  ** in flight on a server that never answers. */
  sq_clock_init(&f->clock, 0, 0.99);
  sq_fault(&g_srv, "{\"count\":1,\"status\":400,\"code\":\"ThrottlingException\"}");
  sq_fault(&g_srv, "{\"count\":1,\"mode\":\"hang\"}");
  memset(&r2, 0, sizeof r2);
  memset(&d2, 0, sizeof d2);
  r2.data = &d2;
  f->done.calls = 0;
  assert_int_equal(ob__sqs_send_message(f->c, &f->req, f->q, &m, sq_cb), 0);
  wait_log(f, "FAULT AmazonSQS.SendMessage error 400", throttles + 1);
  assert_int_equal(ob__sqs_send_message(f->c, &r2, f->q, &m, sq_cb), 0);
  wait_log(f, "FAULT AmazonSQS.SendMessage hang", hangs + 2);
  assert_int_equal(f->done.calls, 0);
  assert_int_equal(d2.calls, 0);
  close_client(f);
  assert_int_equal(f->done.calls, 1);
  assert_int_equal(f->done.status, OB_ECANCELED);
  assert_int_equal(f->req.attempts, 1);
  assert_int_equal(d2.calls, 1);
  assert_int_equal(d2.status, OB_ECANCELED);
  ob__sqs_req_cleanup(&r2);
  sq_clear(&g_srv);
}

static void test_open_errors(void** state) {
  FIX;
  ob__sqs_client_config_t cfg;
  ob__sqs_client_t* c = (ob__sqs_client_t*)1;
  char err[256];
  sq_client_config(&g_srv, &cfg, NULL, NULL);
  cfg.endpoint = "http://sqs.test:1";
  assert_int_equal(ob__sqs_client_open(&c, &f->loop, &cfg, err, sizeof err),
                   OB_EINVAL);
  assert_null(c);
  assert_non_null(strstr(err, "plain HTTP"));
  cfg.endpoint = "https://sqs.test/path";
  assert_int_equal(ob__sqs_client_open(&c, &f->loop, &cfg, err, sizeof err),
                   OB_EINVAL);
  cfg.endpoint = g_srv.endpoint;
  cfg.secret_access_key = "has space";
  assert_int_equal(ob__sqs_client_open(&c, &f->loop, &cfg, err, sizeof err),
                   OB_EINVAL);
  assert_null(strstr(err, "has space"));
  cfg.secret_access_key = SQ_SECRET;
  cfg.ca_file = "/nonexistent/ca.pem";
  assert_int_equal(ob__sqs_client_open(&c, &f->loop, &cfg, err, sizeof err),
                   OB__HTTP_E_TLS_CA);
}

/* ---- plain HTTP (docs/security.md, "Plain HTTP") ---------------------------
** An http:// endpoint from any of the three places the SDKs read is used
** only with the opt-in: refused at open otherwise, naming where it came
** from; with it, plain-HTTP fauxqs (the server behind the TLS terminator)
** answers. */
#define PH_TOKEN "CANARYsessionTOKEN/plain+http=="

typedef struct ph_env_s {
  const char* name[12];
  const char* value[12];
  size_t n;
} ph_env_t;

static const char* ph_getenv(void* ctx, const char* name) {
  ph_env_t* e = ctx;
  for (size_t i = 0; i < e->n; i++)
    if (strcmp(e->name[i], name) == 0) return e->value[i];
  return NULL;
}

static void ph_set(ph_env_t* e, const char* name, const char* value) {
  for (size_t i = 0; i < e->n; i++)
    if (strcmp(e->name[i], name) == 0) {
      e->value[i] = value;
      return;
    }
  assert_true(e->n < 12);
  e->name[e->n] = name;
  e->value[e->n++] = value;
}

/* The terminal's AWS variables, nothing from the process environment. */
static void ph_base(ph_env_t* e, const char* home) {
  memset(e, 0, sizeof *e);
  ph_set(e, "HOME", home);
  ph_set(e, "AWS_ACCESS_KEY_ID", SQ_AKID);
  ph_set(e, "AWS_SECRET_ACCESS_KEY", SQ_SECRET);
  ph_set(e, "AWS_SESSION_TOKEN", PH_TOKEN);
  ph_set(e, "AWS_REGION", SQ_REGION);
}

static void ph_no_secret(const char* s) {
  if (strstr(s, SQ_SECRET) != NULL || strstr(s, PH_TOKEN) != NULL ||
      strstr(s, SQ_AKID) != NULL) {
    fprintf(stderr, "a credential leaked into: %s\n", s);
    fail();
  }
}

static void ph_load(ph_env_t* e, ob__aws_config_t* aws) {
  char err[512];
  int rc = ob__aws_config_load(aws, ph_getenv, e, NULL, err, sizeof err);
  if (rc != 0) fail_msg("load: %s", err);
}

/* Refused at open by the client (the relay's and the consumer's path) and
** by the check, which names `source`. */
static void ph_expect_refused(fix_t* f, ph_env_t* e, const char* source) {
  ob__aws_config_t aws;
  ob__sqs_client_t* c = (ob__sqs_client_t*)1;
  char err[1024], warn[1024], want[256];
  ph_load(e, &aws);
  assert_int_equal(aws.endpoint.tls, 0);
  snprintf(want, sizeof want, "%s:%d", "http://127.0.0.1", g_srv.fauxqs_port);
  /* Nothing checked it, nothing opted in: the client refuses. */
  assert_int_equal(ob__sqs_client_open_aws(&c, &f->loop, &aws, NULL, err,
                                           sizeof err), OB_EINVAL);
  assert_null(c);
  assert_non_null(strstr(err, "plain HTTP"));
  assert_non_null(strstr(err, want));
  ph_no_secret(err);
  /* The check: OB_EINVAL, the source, the endpoint, how to opt in. */
  assert_int_equal(ob__aws_plain_http_check(&aws, 0, warn, sizeof warn, err,
                                            sizeof err), OB_EINVAL);
  assert_string_equal(warn, "");
  assert_int_equal(aws.plain_http_allowed, 0);
  snprintf(want, sizeof want, "%s is http://127.0.0.1:%d: plain HTTP sends the "
           "signed requests and the session token in clear", source,
           g_srv.fauxqs_port);
  if (strstr(err, want) == NULL) fail_msg("error '%s' lacks '%s'", err, want);
  assert_non_null(strstr(err, "use https://"));
  assert_non_null(strstr(err, "ONCEBOX_SQS_ALLOW_HTTP=1"));
  ph_no_secret(err);
  assert_int_equal(ob__sqs_client_open_aws(&c, &f->loop, &aws, NULL, err,
                                           sizeof err), OB_EINVAL);
  assert_null(c);
  ob__aws_config_free(&aws);
}

static void test_plain_http_refused(void** state) {
  FIX;
  ph_env_t e;
  char* home = ts_mkdtemp("sqs-plain-home");
  char* conf = ts_path(home, "config");
  char src[4300];
  FILE* fp;
  /* 1. AWS_ENDPOINT_URL_SQS */
  ph_base(&e, home);
  ph_set(&e, "AWS_ENDPOINT_URL_SQS", g_srv.plain_endpoint);
  ph_expect_refused(f, &e, "AWS_ENDPOINT_URL_SQS");
  /* Any value but 1 is no opt-in, and the message says so. */
  {
    ob__aws_config_t aws;
    char err[1024];
    ph_set(&e, "ONCEBOX_SQS_ALLOW_HTTP", "yes");
    ph_load(&e, &aws);
    assert_int_equal(aws.allow_http_env, -1);
    assert_int_equal(ob__aws_plain_http_check(&aws, 0, NULL, 0, err,
                                              sizeof err), OB_EINVAL);
    assert_non_null(strstr(err, "only the value 1 opts in"));
    ob__aws_config_free(&aws);
    ph_set(&e, "ONCEBOX_SQS_ALLOW_HTTP", "");   /* empty: unset */
    ph_expect_refused(f, &e, "AWS_ENDPOINT_URL_SQS");
  }
  /* 2. AWS_ENDPOINT_URL (with a path-less trailing slash, upper case) */
  ph_base(&e, home);
  {
    char url[80];
    snprintf(url, sizeof url, "HTTP://127.0.0.1:%d/", g_srv.fauxqs_port);
    ph_set(&e, "AWS_ENDPOINT_URL", url);
    ph_expect_refused(f, &e, "AWS_ENDPOINT_URL");
  }
  /* 3. endpoint_url of the profile in the config file */
  fp = fopen(conf, "w");
  assert_non_null(fp);
  fprintf(fp, "[default]\nregion = %s\n# the emulator\nendpoint_url = %s\n",
          SQ_REGION, g_srv.plain_endpoint);
  fclose(fp);
  ph_base(&e, home);
  ph_set(&e, "AWS_CONFIG_FILE", conf);
  snprintf(src, sizeof src, "%s:4: endpoint_url", conf);
  ph_expect_refused(f, &e, src);
  free(conf);
  ts_rmdir(home);
}

/* Send and receive one message over plain HTTP with a client opened the
** relay's way. */
static void ph_round_trip(fix_t* f, ob__aws_config_t* aws, const char* body) {
  ob__sqs_send_t m;
  ob__sqs_receive_t p;
  char err[512];
  int rc = ob__sqs_client_open_aws(&f->c, &f->loop, aws, &f->clock.clock, err,
                                   sizeof err);
  if (rc != 0) fail_msg("open: %s", err);
  ob__sqs_send_init(&m);
  m.body = body;
  m.body_len = strlen(body);
  assert_int_equal(RUN(f, ob__sqs_send_message(f->c, &f->req, f->q, &m, sq_cb)),
                   0);
  ob__sqs_req_cleanup(&f->req);
  ob__sqs_receive_init(&p);
  p.queue_url = f->q;
  p.max_messages = 10;
  p.wait_time_seconds = 0;
  assert_int_equal(RUN(f, ob__sqs_receive_message(f->c, &f->req, &p, sq_cb)), 0);
  assert_int_equal(f->req.receive.n, 1);
  assert_memory_equal(f->req.receive.messages[0].body, body, strlen(body));
  {
    /* Submitting req again cleans its results: keep the handle. */
    char* handle = strdup(f->req.receive.messages[0].receipt_handle);
    assert_int_equal(RUN(f, ob__sqs_delete_message(f->c, &f->req, f->q, handle,
                                                   sq_cb)),
                     0);
    free(handle);
  }
  ob__sqs_req_cleanup(&f->req);
  close_client(f);
}

static void test_plain_http_opt_in(void** state) {
  FIX;
  ph_env_t e;
  ob__aws_config_t aws;
  char* home = ts_mkdtemp("sqs-plain-home");
  char err[1024], warn[1024], want[256];
  int tls0 = sq_count(&g_srv, "REQ AmazonSQS.SendMessage");
  /* ONCEBOX_SQS_ALLOW_HTTP=1 */
  ph_base(&e, home);
  ph_set(&e, "AWS_ENDPOINT_URL_SQS", g_srv.plain_endpoint);
  ph_set(&e, "ONCEBOX_SQS_ALLOW_HTTP", "1");
  ph_load(&e, &aws);
  assert_int_equal(aws.allow_http_env, 1);
  assert_int_equal(ob__aws_plain_http_check(&aws, 0, warn, sizeof warn, err,
                                            sizeof err), 1);
  assert_int_equal(aws.plain_http_allowed, 1);
  snprintf(want, sizeof want, "AWS_ENDPOINT_URL_SQS is http://127.0.0.1:%d: "
           "plain HTTP allowed by ONCEBOX_SQS_ALLOW_HTTP=1", g_srv.fauxqs_port);
  if (strstr(warn, want) == NULL) fail_msg("warning '%s' lacks '%s'", warn, want);
  ph_no_secret(warn);
  ph_round_trip(f, &aws, "over plain http, env");
  ob__aws_config_free(&aws);
  /* The caller's opt-in (allow_http, --sqs-allow-http), loopback or not. */
  ph_base(&e, home);
  ph_set(&e, "AWS_ENDPOINT_URL", g_srv.plain_endpoint);
  ph_load(&e, &aws);
  assert_int_equal(ob__aws_plain_http_check(&aws, 1, warn, sizeof warn, err,
                                            sizeof err), 1);
  assert_non_null(strstr(warn, "AWS_ENDPOINT_URL is http://127.0.0.1:"));
  assert_non_null(strstr(warn, "the opt-in"));
  ph_round_trip(f, &aws, "over plain http, option");
  ob__aws_config_free(&aws);
  /* Neither request went through the TLS terminator. */
  assert_int_equal(sq_count(&g_srv, "REQ AmazonSQS.SendMessage"), tls0);
  /* https: the opt-in changes nothing, no warning. */
  ph_base(&e, home);
  ph_set(&e, "AWS_ENDPOINT_URL_SQS", g_srv.endpoint);
  ph_set(&e, "ONCEBOX_SQS_ALLOW_HTTP", "1");
  ph_load(&e, &aws);
  assert_int_equal(ob__aws_plain_http_check(&aws, 1, warn, sizeof warn, err,
                                            sizeof err), 0);
  assert_string_equal(warn, "");
  assert_int_equal(aws.plain_http_allowed, 0);
  ob__aws_config_free(&aws);
  /* The client itself: allow_plain_http, and the refusal says how. */
  {
    ob__sqs_client_config_t cfg;
    ob__sqs_client_t* c = (ob__sqs_client_t*)1;
    sq_client_config(&g_srv, &cfg, NULL, NULL);
    cfg.endpoint = g_srv.plain_endpoint;
    assert_int_equal(ob__sqs_client_open(&c, &f->loop, &cfg, err, sizeof err),
                     OB_EINVAL);
    assert_null(c);
    assert_non_null(strstr(err, "ONCEBOX_SQS_ALLOW_HTTP=1"));
    cfg.allow_plain_http = 1;
    assert_int_equal(ob__sqs_client_open(&f->c, &f->loop, &cfg, err,
                                         sizeof err), 0);
    close_client(f);
  }
  ts_rmdir(home);
}

/* ---- the TLS version and suite (issue 42) -------------------------------------- */

/* One send through fresh client `f`; the version and suite it reports. */
static void send_and_report(fix_t* f, const char* q, ob__sqs_stats_t* st) {
  open_client(f, SQ_SECRET, 0);
  expect_ok(f, send_text(f, q, "tls version"));
  ob__sqs_client_stats(f->c, st);
  printf("negotiated with the SQS front: %s, %s\n", st->tls_version,
         st->tls_suite);
}

/* A front that takes 1.2 and 1.3 gets 1.3 from a build whose mbedTLS has
** it (3.6, Debian 13) and 1.2 otherwise; each an AEAD suite. */
static void test_tls_version_reported(void** state) {
  ob__sqs_stats_t st;
  FIX;
  send_and_report(f, f->q, &st);
  assert_string_equal(st.tls_version, OB__TLS_HAVE_13 ? "TLSv1.3" : "TLSv1.2");
  assert_true(strstr(st.tls_suite, "GCM") != NULL ||
              strstr(st.tls_suite, "CHACHA20-POLY1305") != NULL);
  if (OB__TLS_HAVE_13) assert_true(strncmp(st.tls_suite, "TLS1-3-", 7) == 0);
}

/* A front that speaks TLS 1.2 only (Node with maxVersion TLSv1.2): every
** build falls back to 1.2, with a forward-secret AEAD suite. */
static void test_tls12_front(void** state) {
  sq_server_t s12;
  ob__sqs_stats_t st;
  char* q;
  FIX;
  setenv("OB_SQS_TLS_MAX", "TLSv1.2", 1);
  int rc = sq_server_start(&s12, "sqs-tls12", NULL);
  unsetenv("OB_SQS_TLS_MAX");
  assert_int_equal(rc, 0);
  q = sq_create_queue(&s12, "tls12", NULL);
  assert_non_null(q);
  {
    ob__sqs_client_config_t cfg;
    char err[256] = "";
    sq_client_config(&s12, &cfg, SQ_SECRET, &f->clock.clock);
    assert_int_equal(ob__sqs_client_open(&f->c, &f->loop, &cfg, err, sizeof err), 0);
  }
  expect_ok(f, send_text(f, q, "tls 1.2"));
  ob__sqs_client_stats(f->c, &st);
  printf("negotiated with the TLS 1.2 SQS front: %s, %s\n", st.tls_version,
         st.tls_suite);
  close_client(f);
  sq_server_stop(&s12);
  free(q);
  assert_string_equal(st.tls_version, "TLSv1.2");
  assert_true(strncmp(st.tls_suite, "TLS-ECDHE-", 10) == 0);
  assert_true(strstr(st.tls_suite, "GCM") != NULL ||
              strstr(st.tls_suite, "CHACHA20-POLY1305") != NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
      T(test_send_receive_delete),
      T(test_queue_url_and_attributes),
      T(test_batch_send_and_delete),
      T(test_batch_failed_entries),
      T(test_change_visibility),
      T(test_fifo),
      T(test_long_poll_deadline),
      T(test_nonexistent_queue),
      T(test_wrong_secret),
      T(test_session_token),
      T(test_5xx_retried),
      T(test_throttling_backoff),
      T(test_retry_hint),
      T(test_token_bucket),
      T(test_transport_errors_retried),
      T(test_lost_reply_duplicates),
      T(test_clock_skew_corrected),
      T(test_clock_skew_corrected_both_ways),
      T(test_cancel_and_close),
      T(test_open_errors),
      T(test_plain_http_refused),
      T(test_plain_http_opt_in),
      T(test_tls_version_reported),
      T(test_tls12_front),
#undef T
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
