/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers of the SQS consumer tests (consumer_test_util.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/integration/consumer/consumer_test_util.h"
#include "oncebox_payout.h"

/* ---- bodies -------------------------------------------------------------- */

const char* ct_payment(int n, char buf[256]) {
  snprintf(buf, 256,
           "{\"paymentId\":\"5c4080b1-b5d2-4e91-8de8-%012d\","
           "\"merchantId\":\"3727331a-b533-4c6e-a0f8-48532237307b\","
           "\"amountInMinorUnits\":12500,\"currency\":\"EUR\"}",
           n);
  return buf;
}

const char* ct_event_id(int n, char buf[OB_UUID_BUFLEN]) {
  snprintf(buf, OB_UUID_BUFLEN, "0190b6d8-3ae7-7ca2-a653-%012d", n);
  return buf;
}

char* ct_cloudevent(const char* id, const char* type, const char* source,
                    const char* data) {
  size_t n = strlen(data) + strlen(type) + strlen(source) + 256;
  char* s = malloc(n);
  snprintf(s, n,
           "{\"specversion\":\"1.0\",\"id\":\"%s\",\"source\":\"%s\","
           "\"type\":\"%s\",\"subject\":\"s\",\"datacontenttype\":"
           "\"application/json\",\"data\":%s}",
           id, source, type, data);
  return s;
}

char* ct_payment_event(int n) {
  char id[OB_UUID_BUFLEN], body[256];
  return ct_cloudevent(ct_event_id(n, id), OB_PAYOUT_MESSAGE_TYPE,
                       "urn:oncebox:test", ct_payment(n, body));
}

/* ---- SQS from the test's side -------------------------------------------- */

void ct_sqs_open(const sq_server_t* srv, ct_sqs_t* s) {
  ob__sqs_client_config_t cfg;
  char err[256];
  assert_int_equal(uv_loop_init(&s->loop), 0);
  sq_client_config(srv, &cfg, NULL, NULL);
  if (ob__sqs_client_open(&s->c, &s->loop, &cfg, err, sizeof err) != 0)
    fail_msg("client: %s", err);
}

static void closed_cb(ob__sqs_client_t* c, void* arg) {
  (void)c;
  *(int*)arg = 1;
}

void ct_sqs_close(ct_sqs_t* s) {
  int closed = 0;
  ob__sqs_client_close(s->c, closed_cb, &closed);
  uv_run(&s->loop, UV_RUN_DEFAULT);
  assert_int_equal(closed, 1);
  assert_int_equal(uv_loop_close(&s->loop), 0);
}

char* ct_new_queue(const sq_server_t* srv, const char* attrs) {
  static int seq;
  char name[64];
  char* url;
  snprintf(name, sizeof name, "consumer-%d-%d", (int)getpid(), ++seq);
  url = sq_create_queue(srv, name, attrs);
  assert_non_null(url);
  return url;
}

void ct_send_bodies(const sq_server_t* srv, const char* url,
                    char* const* bodies, size_t n, char (*ids)[80]) {
  ct_sqs_t s;
  ct_sqs_open(srv, &s);
  for (size_t off = 0; off < n; off += 10) {
    size_t k = n - off < 10 ? n - off : 10;
    ob__sqs_send_t ent[10];
    char eid[10][8];
    ob__sqs_req_t req;
    sq_done_t d = {0, 0};
    for (size_t i = 0; i < k; i++) {
      ob__sqs_send_init(&ent[i]);
      snprintf(eid[i], sizeof eid[i], "e%zu", i);
      ent[i].id = eid[i];
      ent[i].body = bodies[off + i];
      ent[i].body_len = strlen(bodies[off + i]);
    }
    memset(&req, 0, sizeof req);
    req.data = &d;
    assert_int_equal(ob__sqs_send_message_batch(s.c, &req, url, ent, k, sq_cb),
                     0);
    if (sq_wait(&s.loop, &req) != 0) fail_msg("send: %s", req.detail);
    assert_int_equal(req.batch.nfailed, 0);
    assert_int_equal(req.batch.nok, k);
    for (size_t i = 0; ids != NULL && i < req.batch.nok; i++) {
      int idx = atoi(req.batch.ok[i].id + 1);
      snprintf(ids[off + (size_t)idx], 80, "%s", req.batch.ok[i].message_id);
    }
    ob__sqs_req_cleanup(&req);
  }
  ct_sqs_close(&s);
}

void ct_send_one(const sq_server_t* srv, const char* url, char* body) {
  ct_send_bodies(srv, url, &body, 1, NULL);
  free(body);
}

long ct_queue_depth(const sq_server_t* srv, const char* url, long* visible,
                    long* hidden) {
  static const char* const names[] = {"ApproximateNumberOfMessages",
                                      "ApproximateNumberOfMessagesNotVisible",
                                      "ApproximateNumberOfMessagesDelayed"};
  long v[3] = {0, 0, 0};
  ct_sqs_t s;
  ob__sqs_req_t req;
  sq_done_t d = {0, 0};
  ct_sqs_open(srv, &s);
  memset(&req, 0, sizeof req);
  req.data = &d;
  assert_int_equal(
      ob__sqs_get_queue_attributes(s.c, &req, url, names, 3, sq_cb), 0);
  assert_int_equal(sq_wait(&s.loop, &req), 0);
  for (int i = 0; i < 3; i++) {
    const char* a = ob__sqs_attr_get(&req.attrs, names[i]);
    assert_non_null(a);
    v[i] = atol(a);
  }
  ob__sqs_req_cleanup(&req);
  ct_sqs_close(&s);
  if (visible) *visible = v[0];
  if (hidden) *hidden = v[1];
  return v[0] + v[1] + v[2];
}

/* ---- environment --------------------------------------------------------- */

void ct_set_env(const sq_server_t* srv, const char* home) {
  char endpoint[64];
  snprintf(endpoint, sizeof endpoint, "https://localhost:%d", srv->port);
  setenv("HOME", home, 1);
  setenv("AWS_ACCESS_KEY_ID", SQ_AKID, 1);
  setenv("AWS_SECRET_ACCESS_KEY", SQ_SECRET, 1);
  setenv("AWS_REGION", SQ_REGION, 1);
  setenv("AWS_ENDPOINT_URL_SQS", endpoint, 1);
  setenv("AWS_CA_BUNDLE", srv->ca_file, 1);
  unsetenv("AWS_SESSION_TOKEN");
  unsetenv("AWS_PROFILE");
  unsetenv("AWS_DEFAULT_REGION");
  unsetenv("AWS_ENDPOINT_URL");
  unsetenv("AWS_SHARED_CREDENTIALS_FILE");
  unsetenv("AWS_CONFIG_FILE");
  unsetenv("AWS_MAX_ATTEMPTS");
}
