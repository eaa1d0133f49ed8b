/* SPDX-License-Identifier: Apache-2.0 */
/*
** SQS JSON-1.0 codec: request bodies (exact bytes, limits, validation),
** response parsing with the shapes of docs/sqs-protocol.md, MD5 checks, error
** parsing, and hostile responses (deep nesting, wrong types, huge strings,
** missing members, random corruption) giving specific errors.
*/
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "core/sqs/sqs.h"
#include "oncebox.h"

#define QURL "https://sqs.eu-west-1.amazonaws.com/123456789012/payouts"

/* rc and diagnosis in one go. */
#define expect_fault(call, want_rc, want_fault, want_field)                   \
  do {                                                                        \
    ob__sqs_diag_t d_;                                                        \
    memset(&d_, 0, sizeof d_);                                                \
    int rc_ = (call);                                                         \
    if (rc_ != (want_rc) || d_.fault != (want_fault) ||                       \
        strcmp(d_.field, (want_field)) != 0)                                  \
      print_error("%s:%d: rc %d fault %s field '%s'\n", __FILE__, __LINE__,   \
                  rc_, ob__sqs_fault_name(d_.fault), d_.field);               \
    assert_int_equal(rc_, (want_rc));                                         \
    assert_string_equal(ob__sqs_fault_name(d_.fault),                         \
                        ob__sqs_fault_name(want_fault));                      \
    assert_string_equal(d_.field, (want_field));                              \
  } while (0)
#define D (&d_)
/* A string literal and its length, for the (text, len) parameters. */
#define JS(s) (s), strlen(s)

static char* big(size_t n, char fill) {
  char* p = malloc(n + 1);
  assert_non_null(p);
  memset(p, fill, n);
  p[n] = '\0';
  return p;
}

/* ---------------------------------------------------------------------------
** Requests.
*/
static void test_targets(void** state) {
  (void)state;
  assert_string_equal(ob__sqs_target(OB__SQS_SEND_MESSAGE),
                      "AmazonSQS.SendMessage");
  assert_string_equal(ob__sqs_target(OB__SQS_CHANGE_MESSAGE_VISIBILITY_BATCH),
                      "AmazonSQS.ChangeMessageVisibilityBatch");
  assert_string_equal(ob__sqs_target(OB__SQS_GET_QUEUE_ATTRIBUTES),
                      "AmazonSQS.GetQueueAttributes");
  assert_null(ob__sqs_target(OB__SQS_OP_COUNT));
  assert_null(ob__sqs_target((ob__sqs_op_t)-1));
  assert_string_equal(OB__SQS_CONTENT_TYPE, "application/x-amz-json-1.0");
}

static void test_receive_matches_sdk_capture(void** state) {
  /* The body @aws-sdk/client-sqs sent (docs/sqs-protocol.md). */
  static const char* const sys[] = {"ApproximateReceiveCount", "SentTimestamp"};
  static const char* const all[] = {"All"};
  ob__sqs_receive_t r;
  char* out;
  size_t len;
  (void)state;
  ob__sqs_receive_init(&r);
  r.queue_url = "http://127.0.0.1:4566/000000000000/sdk-q";
  r.system_attribute_names = sys;
  r.nsystem_attribute_names = 2;
  r.message_attribute_names = all;
  r.nmessage_attribute_names = 1;
  r.max_messages = 10;
  r.visibility_timeout = 30;
  r.wait_time_seconds = 1;
  assert_int_equal(ob__sqs_build_receive_message(&r, &out, &len, NULL), 0);
  assert_string_equal(out,
      "{\"QueueUrl\":\"http://127.0.0.1:4566/000000000000/sdk-q\","
      "\"MessageSystemAttributeNames\":[\"ApproximateReceiveCount\","
      "\"SentTimestamp\"],\"MessageAttributeNames\":[\"All\"],"
      "\"MaxNumberOfMessages\":10,\"VisibilityTimeout\":30,"
      "\"WaitTimeSeconds\":1}");
  assert_int_equal(len, strlen(out));
  free(out);

  /* Everything optional omitted; FIFO attempt id. */
  ob__sqs_receive_init(&r);
  r.queue_url = QURL;
  r.receive_request_attempt_id = "attempt-1";
  assert_int_equal(ob__sqs_build_receive_message(&r, &out, NULL, NULL), 0);
  assert_string_equal(out, "{\"QueueUrl\":\"" QURL "\","
                           "\"ReceiveRequestAttemptId\":\"attempt-1\"}");
  free(out);

  r.receive_request_attempt_id = NULL;
  r.wait_time_seconds = 21;
  expect_fault(ob__sqs_build_receive_message(&r, &out, NULL, D), OB_EINVAL,
               OB__SQS_FAULT_ARG, "WaitTimeSeconds");
  assert_null(out);
  r.wait_time_seconds = 20;
  r.max_messages = 11;
  expect_fault(ob__sqs_build_receive_message(&r, &out, NULL, D), OB_EINVAL,
               OB__SQS_FAULT_ARG, "MaxNumberOfMessages");
  r.max_messages = 1;
  r.visibility_timeout = 43201;
  expect_fault(ob__sqs_build_receive_message(&r, &out, NULL, D), OB_EINVAL,
               OB__SQS_FAULT_ARG, "VisibilityTimeout");
  r.visibility_timeout = -1;
  r.queue_url = "";
  expect_fault(ob__sqs_build_receive_message(&r, &out, NULL, D), OB_EINVAL,
               OB__SQS_FAULT_ARG, "QueueUrl");
}

static void test_send_message_body(void** state) {
  static const unsigned char bin[] = {0x00, 0xff, 0x10};
  ob__sqs_attr_t attrs[3] = {
      {"traceId", "String", "abc", 3},
      {"amount", "Number.cents", "-12.50", 6},
      {"blob", "Binary", bin, sizeof bin},
  };
  ob__sqs_send_t m;
  char* out;
  size_t len;
  (void)state;
  ob__sqs_send_init(&m);
  m.body = "{\"orderId\":42}xyz"; /* not NUL-ended at body_len */
  m.body_len = 14;
  m.attrs = attrs;
  m.nattrs = 3;
  m.trace_header = "Root=1-5759e988-bd862e3fe1be46a994272793";
  m.dedup_id = "0b1c7f0e-7c1f-4c55-9a0b-0c6f6f3f2a11";
  m.group_id = "merchant-7";
  m.delay_seconds = 0;
  assert_int_equal(ob__sqs_build_send_message(QURL, &m, &out, &len, NULL), 0);
  assert_string_equal(out,
      "{\"QueueUrl\":\"" QURL "\",\"MessageBody\":\"{\\\"orderId\\\":42}\","
      "\"DelaySeconds\":0,\"MessageAttributes\":{"
      "\"traceId\":{\"StringValue\":\"abc\",\"DataType\":\"String\"},"
      "\"amount\":{\"StringValue\":\"-12.50\",\"DataType\":\"Number.cents\"},"
      "\"blob\":{\"BinaryValue\":\"AP8Q\",\"DataType\":\"Binary\"}},"
      "\"MessageSystemAttributes\":{\"AWSTraceHeader\":{\"StringValue\":"
      "\"Root=1-5759e988-bd862e3fe1be46a994272793\",\"DataType\":\"String\"}},"
      "\"MessageDeduplicationId\":\"0b1c7f0e-7c1f-4c55-9a0b-0c6f6f3f2a11\","
      "\"MessageGroupId\":\"merchant-7\"}");
  assert_int_equal(len, strlen(out));
  free(out);
  assert_int_equal(ob__sqs_message_size(&m),
                   14 + (7 + 6 + 3) + (6 + 12 + 6) + (4 + 6 + 3));
}

/* Escapes round-trip: what cJSON reads back is the exact body bytes. */
static void test_send_message_escaping_roundtrip(void** state) {
  const char* body = "Gr\xc3\xbc\xc3\x9f" "e \"quoted\" \\ back\nnew\ttab "
                     "\xf0\x9f\x99\x82 \xe1\x88\xb4\r\x7f</script>";
  ob__sqs_send_t m;
  char* out;
  cJSON* j;
  (void)state;
  ob__sqs_send_init(&m);
  m.body = body;
  m.body_len = strlen(body);
  assert_int_equal(ob__sqs_build_send_message(QURL, &m, &out, NULL, NULL), 0);
  j = cJSON_Parse(out);
  assert_non_null(j);
  assert_string_equal(
      cJSON_GetObjectItemCaseSensitive(j, "MessageBody")->valuestring, body);
  /* UTF-8 goes through unescaped; only JSON's specials are escaped. */
  assert_non_null(strstr(out, "\xf0\x9f\x99\x82"));
  assert_non_null(strstr(out, "\\\"quoted\\\" \\\\ back\\nnew\\ttab"));
  cJSON_Delete(j);
  free(out);
}

static void test_send_message_refusals(void** state) {
  ob__sqs_send_t m;
  ob__sqs_attr_t a[11];
  char* out = (char*)1;
  char* body;
  char name[300];
  (void)state;
  ob__sqs_send_init(&m);
  m.body = "x";
  m.body_len = 1;

  expect_fault(ob__sqs_build_send_message(NULL, &m, &out, NULL, D), OB_EINVAL,
               OB__SQS_FAULT_ARG, "QueueUrl");
  assert_null(out);
  expect_fault(ob__sqs_build_send_message("http://q\xff", &m, &out, NULL, D),
               OB_EINVAL, OB__SQS_FAULT_TEXT, "QueueUrl");

  /* Body: empty, invalid UTF-8 of every kind, characters SQS refuses. */
  {
    static const struct { const char* b; size_t n; } bad[] = {
        {"\xc3\x28", 2},          /* bad continuation */
        {"\xc0\xaf", 2},          /* overlong '/' */
        {"\xe0\x80\xaf", 3},      /* overlong */
        {"\xed\xa0\x80", 3},      /* UTF-16 surrogate */
        {"\xf4\x90\x80\x80", 4},  /* > U+10FFFF */
        {"\xe2\x82", 2},          /* truncated */
        {"a\x01z", 3},            /* control character */
        {"a\0z", 3},              /* NUL */
        {"\xef\xbf\xbe", 3},      /* U+FFFE */
        {"\x80", 1},              /* lone continuation */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
      m.body = bad[i].b;
      m.body_len = bad[i].n;
      expect_fault(ob__sqs_build_send_message(QURL, &m, &out, NULL, D),
                   OB_EINVAL, OB__SQS_FAULT_TEXT, "MessageBody");
    }
  }
  m.body = "";
  m.body_len = 0;
  expect_fault(ob__sqs_build_send_message(QURL, &m, &out, NULL, D), OB_EINVAL,
               OB__SQS_FAULT_ARG, "MessageBody");

  /* Size: exactly 1 MiB passes, one byte more does not, and attributes
  ** count. */
  body = big(OB__SQS_MAX_MESSAGE_BYTES + 1, 'b');
  m.body = body;
  m.body_len = OB__SQS_MAX_MESSAGE_BYTES;
  assert_int_equal(ob__sqs_build_send_message(QURL, &m, &out, NULL, NULL), 0);
  free(out);
  m.body_len = OB__SQS_MAX_MESSAGE_BYTES + 1;
  expect_fault(ob__sqs_build_send_message(QURL, &m, &out, NULL, D), OB_ETOOBIG,
               OB__SQS_FAULT_TOO_BIG, "MessageBody");
  m.body_len = OB__SQS_MAX_MESSAGE_BYTES - 10;
  a[0] = (ob__sqs_attr_t){"k", "String", "v", 1}; /* 1 + 6 + 1 = 8: fits */
  m.attrs = a;
  m.nattrs = 1;
  assert_int_equal(ob__sqs_build_send_message(QURL, &m, &out, NULL, NULL), 0);
  free(out);
  a[0].value = "vvv"; /* 10: still fits */
  a[0].value_len = 3;
  assert_int_equal(ob__sqs_build_send_message(QURL, &m, &out, NULL, NULL), 0);
  free(out);
  a[0].value = "vvvv"; /* 11: one byte over */
  a[0].value_len = 4;
  expect_fault(ob__sqs_build_send_message(QURL, &m, &out, NULL, D), OB_ETOOBIG,
               OB__SQS_FAULT_TOO_BIG, "message size");
  free(body);
  m.body = "x";
  m.body_len = 1;

  /* Attributes. */
  for (int i = 0; i < 11; i++) {
    static char names[11][8];
    snprintf(names[i], sizeof names[i], "a%d", i);
    a[i] = (ob__sqs_attr_t){names[i], "String", "v", 1};
  }
  m.nattrs = 11;
  expect_fault(ob__sqs_build_send_message(QURL, &m, &out, NULL, D), OB_ETOOBIG,
               OB__SQS_FAULT_TOO_MANY, "MessageAttributes");
  m.nattrs = 1;
  {
    static const char* const bad_names[] = {"AWS.x", "amazon.x", ".a", "a.",
                                            "a..b", "a b", "", "\xc3\xa9"};
    for (size_t i = 0; i < sizeof bad_names / sizeof bad_names[0]; i++) {
      a[0] = (ob__sqs_attr_t){bad_names[i], "String", "v", 1};
      expect_fault(ob__sqs_build_send_message(QURL, &m, &out, NULL, D),
                   OB_EINVAL, OB__SQS_FAULT_NAME, "MessageAttributes[0]");
    }
  }
  memset(name, 'n', 257);
  name[257] = '\0';
  a[0] = (ob__sqs_attr_t){name, "String", "v", 1};
  expect_fault(ob__sqs_build_send_message(QURL, &m, &out, NULL, D), OB_EINVAL,
               OB__SQS_FAULT_NAME, "MessageAttributes[0]");
  name[256] = '\0';
  assert_int_equal(ob__sqs_build_send_message(QURL, &m, &out, NULL, NULL), 0);
  free(out);
  a[0] = (ob__sqs_attr_t){"k", "Strin", "v", 1};
  expect_fault(ob__sqs_build_send_message(QURL, &m, &out, NULL, D), OB_EINVAL,
               OB__SQS_FAULT_NAME, "MessageAttributes.k.DataType");
  a[0].data_type = "String.";
  expect_fault(ob__sqs_build_send_message(QURL, &m, &out, NULL, D), OB_EINVAL,
               OB__SQS_FAULT_NAME, "MessageAttributes.k.DataType");
  a[0].data_type = "String";
  a[0].value_len = 0;
  expect_fault(ob__sqs_build_send_message(QURL, &m, &out, NULL, D), OB_EINVAL,
               OB__SQS_FAULT_ARG, "MessageAttributes.k.Value");
  a[0] = (ob__sqs_attr_t){"k", "Number", "1e", 2};
  expect_fault(ob__sqs_build_send_message(QURL, &m, &out, NULL, D), OB_EINVAL,
               OB__SQS_FAULT_TEXT, "MessageAttributes.k.StringValue");
  a[0] = (ob__sqs_attr_t){"k", "String", "a\x02", 2};
  expect_fault(ob__sqs_build_send_message(QURL, &m, &out, NULL, D), OB_EINVAL,
               OB__SQS_FAULT_TEXT, "MessageAttributes.k.StringValue");
  a[0] = (ob__sqs_attr_t){"k", "Binary", "\x02", SIZE_MAX - 3}; /* bogus */
  expect_fault(ob__sqs_build_send_message(QURL, &m, &out, NULL, D), OB_ETOOBIG,
               OB__SQS_FAULT_TOO_BIG, "MessageAttributes.k.Value");
  a[0] = (ob__sqs_attr_t){"k", "Binary", "\x02\x00", 2}; /* any bytes */
  a[1] = (ob__sqs_attr_t){"k", "String", "v", 1};
  m.nattrs = 2;
  expect_fault(ob__sqs_build_send_message(QURL, &m, &out, NULL, D), OB_EINVAL,
               OB__SQS_FAULT_DUPLICATE, "MessageAttributes.k");
  m.nattrs = 1;
  assert_int_equal(ob__sqs_build_send_message(QURL, &m, &out, NULL, NULL), 0);
  free(out);
  m.nattrs = 0;

  m.delay_seconds = 901;
  expect_fault(ob__sqs_build_send_message(QURL, &m, &out, NULL, D), OB_EINVAL,
               OB__SQS_FAULT_ARG, "DelaySeconds");
  m.delay_seconds = -1;
  memset(name, 'd', 129);
  name[129] = '\0';
  m.dedup_id = name;
  expect_fault(ob__sqs_build_send_message(QURL, &m, &out, NULL, D), OB_EINVAL,
               OB__SQS_FAULT_NAME, "MessageDeduplicationId");
  m.dedup_id = NULL;
  m.group_id = "has space";
  expect_fault(ob__sqs_build_send_message(QURL, &m, &out, NULL, D), OB_EINVAL,
               OB__SQS_FAULT_NAME, "MessageGroupId");
  m.group_id = NULL;
  m.trace_header = "";
  expect_fault(ob__sqs_build_send_message(QURL, &m, &out, NULL, D), OB_EINVAL,
               OB__SQS_FAULT_TEXT, "MessageSystemAttributes.AWSTraceHeader");
}

static void test_send_message_batch(void** state) {
  ob__sqs_send_t e[11];
  char* out;
  char* body;
  (void)state;
  for (int i = 0; i < 11; i++) {
    static char ids[11][8];
    ob__sqs_send_init(&e[i]);
    snprintf(ids[i], sizeof ids[i], "m%d", i);
    e[i].id = ids[i];
    e[i].body = "b";
    e[i].body_len = 1;
  }
  e[1].group_id = "g";
  e[1].dedup_id = "d1";
  assert_int_equal(ob__sqs_build_send_message_batch(QURL, e, 2, &out, NULL,
                                                    NULL), 0);
  assert_string_equal(out, "{\"QueueUrl\":\"" QURL "\",\"Entries\":["
                           "{\"Id\":\"m0\",\"MessageBody\":\"b\"},"
                           "{\"Id\":\"m1\",\"MessageBody\":\"b\","
                           "\"MessageDeduplicationId\":\"d1\","
                           "\"MessageGroupId\":\"g\"}]}");
  free(out);
  assert_int_equal(ob__sqs_build_send_message_batch(QURL, e, 10, &out, NULL,
                                                    NULL), 0);
  free(out);
  expect_fault(ob__sqs_build_send_message_batch(QURL, e, 11, &out, NULL, D),
               OB_ETOOBIG, OB__SQS_FAULT_TOO_MANY, "Entries");
  expect_fault(ob__sqs_build_send_message_batch(QURL, e, 0, &out, NULL, D),
               OB_EINVAL, OB__SQS_FAULT_ARG, "Entries");
  e[3].id = "m1";
  expect_fault(ob__sqs_build_send_message_batch(QURL, e, 4, &out, NULL, D),
               OB_EINVAL, OB__SQS_FAULT_DUPLICATE, "Entries[3].Id");
  e[3].id = "bad id!";
  expect_fault(ob__sqs_build_send_message_batch(QURL, e, 4, &out, NULL, D),
               OB_EINVAL, OB__SQS_FAULT_NAME, "Entries[3].Id");
  e[3].id = "m3";
  e[2].body = "\xff";
  expect_fault(ob__sqs_build_send_message_batch(QURL, e, 4, &out, NULL, D),
               OB_EINVAL, OB__SQS_FAULT_TEXT, "Entries[2].MessageBody");
  e[2].body = "b";
  /* 2 x 600 KiB: each fits, the sum does not (BatchRequestTooLong). */
  body = big(600 * 1024, 'x');
  e[0].body = e[1].body = body;
  e[0].body_len = e[1].body_len = 600 * 1024;
  expect_fault(ob__sqs_build_send_message_batch(QURL, e, 2, &out, NULL, D),
               OB_ETOOBIG, OB__SQS_FAULT_TOO_BIG, "Entries");
  assert_int_equal(ob__sqs_build_send_message_batch(QURL, e, 1, &out, NULL,
                                                    NULL), 0);
  free(out);
  free(body);
}

static void test_handle_requests(void** state) {
  ob__sqs_handle_entry_t e[3] = {
      {"a", "AQEB+h/1==", -1}, {"b-2", "AQEBzz", 60}, {"c_3", "AQEByy", 0}};
  static const char* const names[] = {"VisibilityTimeout",
                                      "MaximumMessageSize"};
  char* out;
  (void)state;
  assert_int_equal(ob__sqs_build_delete_message(QURL, "AQEB+h/1==", &out, NULL,
                                                NULL), 0);
  assert_string_equal(out, "{\"QueueUrl\":\"" QURL "\",\"ReceiptHandle\":"
                           "\"AQEB+h/1==\"}");
  free(out);
  expect_fault(ob__sqs_build_delete_message(QURL, NULL, &out, NULL, D),
               OB_EINVAL, OB__SQS_FAULT_ARG, "ReceiptHandle");

  assert_int_equal(ob__sqs_build_delete_message_batch(QURL, e, 3, &out, NULL,
                                                      NULL), 0);
  assert_string_equal(out, "{\"QueueUrl\":\"" QURL "\",\"Entries\":["
                           "{\"Id\":\"a\",\"ReceiptHandle\":\"AQEB+h/1==\"},"
                           "{\"Id\":\"b-2\",\"ReceiptHandle\":\"AQEBzz\"},"
                           "{\"Id\":\"c_3\",\"ReceiptHandle\":\"AQEByy\"}]}");
  free(out);
  assert_int_equal(ob__sqs_build_change_visibility_batch(QURL, e, 3, &out,
                                                         NULL, NULL), 0);
  assert_string_equal(out, "{\"QueueUrl\":\"" QURL "\",\"Entries\":["
                           "{\"Id\":\"a\",\"ReceiptHandle\":\"AQEB+h/1==\"},"
                           "{\"Id\":\"b-2\",\"ReceiptHandle\":\"AQEBzz\","
                           "\"VisibilityTimeout\":60},"
                           "{\"Id\":\"c_3\",\"ReceiptHandle\":\"AQEByy\","
                           "\"VisibilityTimeout\":0}]}");
  free(out);
  e[1].visibility_timeout = 43201;
  expect_fault(ob__sqs_build_change_visibility_batch(QURL, e, 3, &out, NULL,
                                                     D),
               OB_EINVAL, OB__SQS_FAULT_ARG, "Entries[1].VisibilityTimeout");
  e[2].id = "a";
  expect_fault(ob__sqs_build_delete_message_batch(QURL, e, 3, &out, NULL, D),
               OB_EINVAL, OB__SQS_FAULT_DUPLICATE, "Entries[2].Id");

  assert_int_equal(ob__sqs_build_change_visibility(QURL, "h", 43200, &out,
                                                   NULL, NULL), 0);
  assert_string_equal(out, "{\"QueueUrl\":\"" QURL "\",\"ReceiptHandle\":"
                           "\"h\",\"VisibilityTimeout\":43200}");
  free(out);
  expect_fault(ob__sqs_build_change_visibility(QURL, "h", 43201, &out, NULL, D),
               OB_EINVAL, OB__SQS_FAULT_ARG, "VisibilityTimeout");

  assert_int_equal(ob__sqs_build_get_queue_url("payouts.fifo", "123456789012",
                                               &out, NULL, NULL), 0);
  assert_string_equal(out, "{\"QueueName\":\"payouts.fifo\","
                           "\"QueueOwnerAWSAccountId\":\"123456789012\"}");
  free(out);
  expect_fault(ob__sqs_build_get_queue_url("bad.name", NULL, &out, NULL, D),
               OB_EINVAL, OB__SQS_FAULT_NAME, "QueueName");

  assert_int_equal(ob__sqs_build_get_queue_attributes(QURL, names, 2, &out,
                                                      NULL, NULL), 0);
  assert_string_equal(out, "{\"QueueUrl\":\"" QURL "\",\"AttributeNames\":["
                           "\"VisibilityTimeout\",\"MaximumMessageSize\"]}");
  free(out);
  assert_int_equal(ob__sqs_build_get_queue_attributes(QURL, NULL, 0, &out,
                                                      NULL, NULL), 0);
  assert_string_equal(out, "{\"QueueUrl\":\"" QURL "\"}");
  free(out);
}

/* ---------------------------------------------------------------------------
** MD5.
*/
static void test_md5_vectors(void** state) {
  char h[33];
  static const unsigned char b3[] = {1, 2, 3};
  static const unsigned char b2[] = {0, 255};
  /* fauxqs-verified (docs/sqs-protocol.md, "Checksums"); given unsorted on
  ** purpose. */
  const ob__sqs_attr_t fx[3] = {{"traceId", "String", "abc", 3},
                                {"n", "Number", "42", 2},
                                {"b", "Binary", b3, 3}};
  /* Computed independently (Python hashlib over the documented encoding). */
  const ob__sqs_attr_t py[3] = {
      {"z", "Binary.jpg", b2, 2},
      {"Attr.1", "String.custom", "h\xc3\xa9llo \xf0\x9f\x99\x82", 11},
      {"a_b", "Number", "-1.5e3", 6}};
  const ob__sqs_attr_t bad[1] = {{"x", "Blob", "v", 1}};
  (void)state;
  assert_int_equal(ob__sqs_md5_hex(JS("Body"), h), 0);
  assert_string_equal(h, "ac101b32dda4448cf13a93fe283dddd8");
  assert_int_equal(ob__sqs_md5_hex(JS("hello"), h), 0);
  assert_string_equal(h, "5d41402abc4b2a76b9719d911017c592");
  assert_int_equal(ob__sqs_md5_of_attributes(fx, 3, h), 0);
  assert_string_equal(h, "b3fe5ec1575f78f289dc718fd17660f8");
  assert_int_equal(ob__sqs_md5_of_attributes(py, 3, h), 0);
  assert_string_equal(h, "ab8378dd533a969e841ab68de76be68b");
  assert_int_equal(ob__sqs_md5_of_attributes(NULL, 0, h), 0);
  assert_string_equal(h, "");
  assert_int_equal(ob__sqs_md5_of_attributes(bad, 1, h), OB_EINVAL);
}

/* ---------------------------------------------------------------------------
** Success responses.
*/
static void test_parse_send_message(void** state) {
  static const char ok[] =
      "{\"MD5OfMessageBody\":\"E45153DD35B41F8D5C1D47A589C83C58\","
      "\"MessageId\":\"5fea7756-0ea4-451a-a703-a558b933e274\"}";
  static const char fifo[] =
      "{\"MessageId\":\"m\",\"MD5OfMessageBody\":"
      "\"e45153dd35b41f8d5c1d47a589c83c58\",\"MD5OfMessageAttributes\":"
      "\"b3fe5ec1575f78f289dc718fd17660f8\",\"SequenceNumber\":"
      "\"00000000000000000001\"}";
  static const unsigned char b3[] = {1, 2, 3};
  const ob__sqs_attr_t fx[3] = {{"traceId", "String", "abc", 3},
                                {"n", "Number", "42", 2},
                                {"b", "Binary", b3, 3}};
  ob__sqs_send_t m;
  ob__sqs_send_result_t r;
  (void)state;
  ob__sqs_send_init(&m);
  m.body = "{\"orderId\":42}";
  m.body_len = strlen(m.body);
  assert_int_equal(ob__sqs_parse_send_message(ok, strlen(ok), &m, &r, NULL), 0);
  assert_string_equal(r.message_id, "5fea7756-0ea4-451a-a703-a558b933e274");
  assert_null(r.sequence_number);
  assert_null(r.md5_of_message_attributes);
  ob__sqs_send_result_free(&r);
  ob__sqs_send_result_free(&r);

  m.attrs = fx;
  m.nattrs = 3;
  expect_fault(ob__sqs_parse_send_message(ok, strlen(ok), &m, &r, D),
               OB_EINVAL, OB__SQS_FAULT_MISSING, "MD5OfMessageAttributes");
  assert_null(r.message_id);
  assert_int_equal(ob__sqs_parse_send_message(fifo, strlen(fifo), &m, &r,
                                              NULL), 0);
  assert_string_equal(r.sequence_number, "00000000000000000001");
  ob__sqs_send_result_free(&r);

  m.body = "{\"orderId\":43}";
  expect_fault(ob__sqs_parse_send_message(ok, strlen(ok), &m, &r, D), OB_EIO,
               OB__SQS_FAULT_MD5, "MD5OfMessageBody");
  /* Without the sent message, no check. */
  assert_int_equal(ob__sqs_parse_send_message(ok, strlen(ok), NULL, &r, NULL),
                   0);
  ob__sqs_send_result_free(&r);
  expect_fault(ob__sqs_parse_send_message(JS("{\"MD5OfMessageBody\":\"x\"}"),
                                          NULL, &r, D),
               OB_EINVAL, OB__SQS_FAULT_MISSING, "MessageId");
  expect_fault(ob__sqs_parse_send_message(
                   JS("{\"MessageId\":7,\"MD5OfMessageBody\":\"x\"}"), NULL,
                   &r, D),
               OB_EINVAL, OB__SQS_FAULT_WRONG_TYPE, "MessageId");
}

static const char k_receive[] =
    "{\"Messages\":["
    "{\"MessageId\":\"a1\",\"ReceiptHandle\":\"AQEB1\","
    "\"MD5OfBody\":\"de11fb8bb0cb4c367adbad16a210b451\","
    "\"Body\":\"Gr\\u00fc\\u00dfe \\\"quoted\\\" \\\\ back\\nnew\\ttab "
    "\\ud83d\\ude42 \xe1\x88\xb4\","
    "\"Attributes\":{\"SenderId\":\"000000000000\",\"ApproximateReceiveCount\":"
    "\"2\",\"SentTimestamp\":\"1764480511000\","
    "\"ApproximateFirstReceiveTimestamp\":\"1764480512345\"},"
    "\"MD5OfMessageAttributes\":\"b3fe5ec1575f78f289dc718fd17660f8\","
    "\"MessageAttributes\":{\"traceId\":{\"StringValue\":\"abc\","
    "\"DataType\":\"String\"},\"n\":{\"StringValue\":\"42\",\"DataType\":"
    "\"Number\"},\"b\":{\"BinaryValue\":\"AQID\",\"DataType\":\"Binary\"}}},"
    "{\"MessageId\":\"a2\",\"ReceiptHandle\":\"AQEB2\","
    "\"MD5OfBody\":\"a9f0e61a137d86aa9db53465e0801612\",\"Body\":\"second\","
    "\"Attributes\":{\"MessageGroupId\":\"g\",\"MessageDeduplicationId\":\"d\","
    "\"SequenceNumber\":\"18849496460467696128\",\"ApproximateReceiveCount\":"
    "\"1\"}}]}";

static void test_parse_receive(void** state) {
  ob__sqs_receive_result_t r;
  const ob__sqs_message_t* m;
  (void)state;
  assert_int_equal(ob__sqs_parse_receive_message(JS("{}"), 0, &r, NULL), 0);
  assert_int_equal(r.n, 0);
  ob__sqs_receive_result_free(&r);

  assert_int_equal(ob__sqs_parse_receive_message(k_receive, strlen(k_receive),
                                                 OB__SQS_VERIFY_ATTR_MD5, &r,
                                                 NULL), 0);
  assert_int_equal(r.n, 2);
  m = &r.messages[0];
  assert_string_equal(m->message_id, "a1");
  assert_string_equal(m->receipt_handle, "AQEB1");
  assert_string_equal(m->body, "Gr\xc3\xbc\xc3\x9f" "e \"quoted\" \\ back\nnew"
                               "\ttab \xf0\x9f\x99\x82 \xe1\x88\xb4");
  assert_int_equal(m->body_len, strlen(m->body));
  assert_int_equal(m->receive_count, 2);
  assert_int_equal(m->sent_timestamp_ms, INT64_C(1764480511000));
  assert_int_equal(m->first_receive_timestamp_ms, INT64_C(1764480512345));
  assert_int_equal(m->nattributes, 4);
  assert_int_equal(m->nmessage_attributes, 3);
  assert_string_equal(m->message_attributes[2].name, "b");
  assert_int_equal(m->message_attributes[2].value_len, 3);
  assert_memory_equal(m->message_attributes[2].value, "\x01\x02\x03", 3);
  assert_null(m->group_id);
  m = &r.messages[1];
  assert_string_equal(m->group_id, "g");
  assert_string_equal(m->dedup_id, "d");
  assert_string_equal(m->sequence_number, "18849496460467696128");
  assert_int_equal(m->receive_count, 1);
  assert_int_equal(m->sent_timestamp_ms, -1);
  assert_null(m->md5_of_message_attributes);
  ob__sqs_receive_result_free(&r);
  ob__sqs_receive_result_free(NULL);
}

static void test_parse_receive_md5_mismatch(void** state) {
  char* text = strdup(k_receive);
  char* p;
  ob__sqs_receive_result_t r;
  (void)state;
  /* Corrupt the second body: the whole call fails, naming the message. */
  p = strstr(text, "\"second\"");
  p[1] = 'S';
  expect_fault(ob__sqs_parse_receive_message(text, strlen(text), 0, &r, D),
               OB_EIO, OB__SQS_FAULT_MD5, "Messages[1].MD5OfBody");
  assert_null(r.messages);
  assert_int_equal(r.n, 0);
  strcpy(text, k_receive);
  /* Corrupt an attribute value: only caught when asked for. */
  p = strstr(text, "\"abc\"");
  p[1] = 'A';
  assert_int_equal(ob__sqs_parse_receive_message(text, strlen(text), 0, &r,
                                                 NULL), 0);
  ob__sqs_receive_result_free(&r);
  expect_fault(ob__sqs_parse_receive_message(text, strlen(text),
                                             OB__SQS_VERIFY_ATTR_MD5, &r, D),
               OB_EIO, OB__SQS_FAULT_MD5, "Messages[0].MD5OfMessageAttributes");
  free(text);
}

static void test_parse_batch(void** state) {
  /* SendMessageBatch on a FIFO queue, one entry without a dedup id: HTTP
  ** 200 with one Successful and one Failed entry (what fauxqs answers:
  ** docs/sqs-protocol.md). */
  static const char mixed[] =
      "{\"Successful\":[{\"Id\":\"m0\",\"MessageId\":\"x-1\","
      "\"MD5OfMessageBody\":\"5d41402abc4b2a76b9719d911017c592\","
      "\"SequenceNumber\":\"00000000000000000007\"}],"
      "\"Failed\":[{\"Id\":\"m1\",\"SenderFault\":true,\"Code\":"
      "\"InvalidParameterValue\",\"Message\":\"The request must contain the "
      "parameter MessageDeduplicationId.\"}]}";
  ob__sqs_send_t sent[2];
  ob__sqs_batch_result_t r;
  const char* ids[3] = {"a", "b", "c"};
  (void)state;
  ob__sqs_send_init(&sent[0]);
  ob__sqs_send_init(&sent[1]);
  sent[0].id = "m0";
  sent[0].body = "hello";
  sent[0].body_len = 5;
  sent[1].id = "m1";
  sent[1].body = "x";
  sent[1].body_len = 1;
  assert_int_equal(ob__sqs_parse_batch(OB__SQS_SEND_MESSAGE_BATCH, mixed,
                                       strlen(mixed), sent, NULL, 2, &r, NULL),
                   0);
  assert_int_equal(r.nok, 1);
  assert_int_equal(r.nfailed, 1);
  assert_string_equal(r.ok[0].id, "m0");
  assert_string_equal(r.ok[0].sequence_number, "00000000000000000007");
  assert_string_equal(r.failed[0].id, "m1");
  assert_int_equal(r.failed[0].sender_fault, 1);
  assert_string_equal(r.failed[0].code, "InvalidParameterValue");
  ob__sqs_batch_result_free(&r);

  sent[0].body = "hellO";
  expect_fault(ob__sqs_parse_batch(OB__SQS_SEND_MESSAGE_BATCH, mixed,
                                   strlen(mixed), sent, NULL, 2, &r, D),
               OB_EIO, OB__SQS_FAULT_MD5, "Successful[0].MD5OfMessageBody");
  sent[0].body = "hello";
  sent[1].id = "m9";  /* the response answers an Id we never sent */
  expect_fault(ob__sqs_parse_batch(OB__SQS_SEND_MESSAGE_BATCH, mixed,
                                   strlen(mixed), sent, NULL, 2, &r, D),
               OB_EINVAL, OB__SQS_FAULT_BAD_VALUE, "Failed[0].Id");

  /* DeleteMessageBatch: Ids checked against the request. */
  {
    static const char del[] =
        "{\"Successful\":[{\"Id\":\"a\"},{\"Id\":\"c\"}],\"Failed\":[{\"Id\":"
        "\"b\",\"SenderFault\":false,\"Code\":\"InternalError\"}]}";
    static const char dup[] =
        "{\"Successful\":[{\"Id\":\"a\"},{\"Id\":\"a\"}],\"Failed\":[]}";
    static const char part[] = "{\"Successful\":[{\"Id\":\"a\"}],\"Failed\":[]}";
    assert_int_equal(ob__sqs_parse_batch(OB__SQS_DELETE_MESSAGE_BATCH, del,
                                         strlen(del), NULL, ids, 3, &r, NULL),
                     0);
    assert_int_equal(r.nok, 2);
    assert_null(r.ok[0].message_id);
    assert_int_equal(r.failed[0].sender_fault, 0);
    assert_string_equal(r.failed[0].message, "");
    ob__sqs_batch_result_free(&r);
    expect_fault(ob__sqs_parse_batch(OB__SQS_DELETE_MESSAGE_BATCH, dup,
                                     strlen(dup), NULL, ids, 3, &r, D),
                 OB_EINVAL, OB__SQS_FAULT_DUPLICATE, "Successful[1].Id");
    expect_fault(ob__sqs_parse_batch(OB__SQS_CHANGE_MESSAGE_VISIBILITY_BATCH,
                                     part, strlen(part), NULL, ids, 3, &r, D),
                 OB_EINVAL, OB__SQS_FAULT_MISSING, "Id b");
    /* Without Ids: no completeness check. */
    assert_int_equal(ob__sqs_parse_batch(OB__SQS_DELETE_MESSAGE_BATCH, part,
                                         strlen(part), NULL, NULL, 0, &r,
                                         NULL), 0);
    ob__sqs_batch_result_free(&r);
  }
  /* Wrong or missing Failed members. */
  expect_fault(ob__sqs_parse_batch(OB__SQS_DELETE_MESSAGE_BATCH,
                                   JS("{\"Failed\":[{\"Id\":\"a\",\"SenderFault\":"
                                   "\"true\",\"Code\":\"X\"}]}"), NULL,
                                   NULL, 0, &r, D),
               OB_EINVAL, OB__SQS_FAULT_WRONG_TYPE, "Failed[0].SenderFault");
  expect_fault(ob__sqs_parse_batch(OB__SQS_DELETE_MESSAGE_BATCH,
                                   JS("{\"Failed\":[{\"Id\":\"a\",\"SenderFault\":"
                                   "true}]}"), NULL, NULL, 0, &r, D),
               OB_EINVAL, OB__SQS_FAULT_MISSING, "Failed[0].Code");
  expect_fault(ob__sqs_parse_batch(OB__SQS_DELETE_MESSAGE_BATCH,
                                   JS("{\"Failed\":[{\"Id\":\"a\",\"Code\":\"X\"}]}"), NULL, NULL, 0, &r, D),
               OB_EINVAL, OB__SQS_FAULT_MISSING, "Failed[0].SenderFault");
  expect_fault(ob__sqs_parse_batch(OB__SQS_DELETE_MESSAGE_BATCH,
                                   JS("{\"Successful\":{}}"), NULL, NULL, 0,
                                   &r, D),
               OB_EINVAL, OB__SQS_FAULT_WRONG_TYPE, "Successful");
  expect_fault(ob__sqs_parse_batch(OB__SQS_SEND_MESSAGE_BATCH,
                                   JS("{\"Successful\":[{\"Id\":\"a\"}]}"),
                                   NULL, NULL, 0, &r, D),
               OB_EINVAL, OB__SQS_FAULT_MISSING, "Successful[0].MessageId");
  expect_fault(ob__sqs_parse_batch(OB__SQS_RECEIVE_MESSAGE, JS("{}"), NULL,
                                   NULL, 0, &r, D),
               OB_EINVAL, OB__SQS_FAULT_ARG, "op");
  {
    char many[512] = "{\"Successful\":[";
    for (int i = 0; i < 11; i++) {
      char e[32];
      snprintf(e, sizeof e, "%s{\"Id\":\"i%d\"}", i ? "," : "", i);
      strcat(many, e);
    }
    strcat(many, "]}");
    expect_fault(ob__sqs_parse_batch(OB__SQS_DELETE_MESSAGE_BATCH, many,
                                     strlen(many), NULL, NULL, 0, &r, D),
                 OB_ETOOBIG, OB__SQS_FAULT_TOO_MANY, "Successful");
  }
}

static void test_parse_small(void** state) {
  ob__sqs_attrs_result_t a;
  char* url;
  static const char attrs[] =
      "{\"Attributes\":{\"VisibilityTimeout\":\"30\",\"MaximumMessageSize\":"
      "\"1048576\",\"RedrivePolicy\":\"{\\\"deadLetterTargetArn\\\":\\\"arn:"
      "aws:sqs:us-east-1:000000000000:dlq\\\",\\\"maxReceiveCount\\\":2}\"}}";
  (void)state;
  assert_int_equal(ob__sqs_parse_empty(JS(""), NULL), 0);
  assert_int_equal(ob__sqs_parse_empty(JS(" \r\n"), NULL), 0);
  assert_int_equal(ob__sqs_parse_empty(JS("{}"), NULL), 0);
  assert_int_equal(ob__sqs_parse_empty(JS("{\"x\":1}"), NULL), 0);
  expect_fault(ob__sqs_parse_empty(JS("[]"), D), OB_EINVAL,
               OB__SQS_FAULT_BAD_JSON, "not an object");
  expect_fault(ob__sqs_parse_empty(JS("nope"), D), OB_EINVAL,
               OB__SQS_FAULT_BAD_JSON, "response");

  assert_int_equal(ob__sqs_parse_get_queue_url(
                       "{\"QueueUrl\":\"" QURL "\"}", strlen(QURL) + 15, &url,
                       NULL), 0);
  assert_string_equal(url, QURL);
  free(url);
  expect_fault(ob__sqs_parse_get_queue_url(JS("{}"), &url, D), OB_EINVAL,
               OB__SQS_FAULT_MISSING, "QueueUrl");
  assert_null(url);
  expect_fault(ob__sqs_parse_get_queue_url(JS("{\"QueueUrl\":\"\"}"), &url, D),
               OB_EINVAL, OB__SQS_FAULT_BAD_VALUE, "QueueUrl");

  assert_int_equal(ob__sqs_parse_get_queue_attributes(attrs, strlen(attrs), &a,
                                                      NULL), 0);
  assert_int_equal(a.n, 3);
  assert_string_equal(ob__sqs_attr_get(&a, "MaximumMessageSize"), "1048576");
  assert_non_null(strstr(ob__sqs_attr_get(&a, "RedrivePolicy"),
                         "\"maxReceiveCount\":2"));
  assert_null(ob__sqs_attr_get(&a, "Policy"));
  ob__sqs_attrs_result_free(&a);
  assert_int_equal(ob__sqs_parse_get_queue_attributes(JS("{}"), &a, NULL), 0);
  assert_int_equal(a.n, 0);
  ob__sqs_attrs_result_free(&a);
  expect_fault(ob__sqs_parse_get_queue_attributes(
                   JS("{\"Attributes\":{\"DelaySeconds\":0}}"), &a, D),
               OB_EINVAL, OB__SQS_FAULT_WRONG_TYPE, "Attributes.DelaySeconds");
}

/* ---------------------------------------------------------------------------
** Errors.
*/
static void test_parse_error_verbatim(void** state) {
  /* The AWS documentation's example (docs/sqs-protocol.md, "Errors"). */
  static const char body[] =
      "{\"__type\": \"com.amazonaws.sqs#QueueDoesNotExist\", \"message\": "
      "\"The specified queue does not exist.\"}";
  ob__sqs_error_t e;
  (void)state;
  assert_int_equal(ob__sqs_parse_error(400, body, strlen(body),
                                       "AWS.SimpleQueueService.NonExistentQueue;"
                                       "Sender", NULL, &e), 0);
  assert_int_equal(e.http_status, 400);
  assert_string_equal(e.code, "AWS.SimpleQueueService.NonExistentQueue");
  assert_string_equal(e.query_code, "AWS.SimpleQueueService.NonExistentQueue");
  assert_string_equal(e.type, "QueueDoesNotExist");
  assert_int_equal(e.sender_fault, 1);
  assert_string_equal(e.message, "The specified queue does not exist.");
  assert_true(ob__sqs_error_is(&e, "QueueDoesNotExist"));
  assert_true(ob__sqs_error_is(&e, "NonExistentQueue"));
  assert_false(ob__sqs_error_is(&e, "RequestThrottled"));

  /* Without the header: the body type is the code. */
  assert_int_equal(ob__sqs_parse_error(400, body, strlen(body), NULL, NULL,
                                       &e), 0);
  assert_string_equal(e.code, "QueueDoesNotExist");
  assert_int_equal(e.sender_fault, -1);

  /* 403 RequestThrottled, Receiver fault, "code"/"Message" spellings. */
  assert_int_equal(ob__sqs_parse_error(403,
                                       JS("{\"code\":\"RequestThrottled\","
                                       "\"Message\":\"slow down\"}"),
                                       " RequestThrottled ; Receiver", NULL,
                                       &e), 0);
  assert_string_equal(e.code, "RequestThrottled");
  assert_int_equal(e.sender_fault, 0);
  assert_string_equal(e.message, "slow down");

  /* A hostile __type, header or XML code: no control byte survives into
  ** the code (it reaches logs and `stats`). */
  assert_int_equal(ob__sqs_parse_error(400,
                                       JS("{\"__type\":\"x#Bad\\u001b[31mCode\"}"),
                                       NULL, "Evil\x1b]0;t\x07", &e), 0);
  assert_string_equal(e.type, "Bad?[31mCode");
  assert_string_equal(e.code, "Bad?[31mCode");
  assert_int_equal(ob__sqs_parse_error(400, "x", 1, "Q\x1bQ;Sender", NULL, &e),
                   0);
  assert_string_equal(e.query_code, "Q?Q");
}

static void test_parse_error_odd_bodies(void** state) {
  ob__sqs_error_t e;
  char* longmsg;
  char* body;
  (void)state;
  /* fauxqs on malformed JSON: a Fastify 500 body, not SQS-shaped. */
  assert_int_equal(ob__sqs_parse_error(500,
                                       JS("{\"statusCode\":500,\"error\":\"Internal "
                                       "Server Error\",\"message\":\"Unexpected "
                                       "token\"}"), NULL, NULL, &e), 0);
  assert_string_equal(e.code, "");
  assert_string_equal(e.type, "");
  assert_string_equal(e.message, "Unexpected token");
  /* A proxy's HTML page; an empty body; x-amzn-errortype fallback with the
  ** :http://... suffix some services add. */
  assert_int_equal(ob__sqs_parse_error(502, JS("<html>Bad gateway</html>"),
                                       NULL, NULL, &e), 0);
  assert_string_equal(e.code, "");
  assert_int_equal(ob__sqs_parse_error(503, NULL, 0, NULL,
                                       "ServiceUnavailable:http://internal."
                                       "amazon.com/coral/", &e), 0);
  assert_string_equal(e.code, "ServiceUnavailable");
  /* Sanitising __type: text after '#', cut at ':' and ','. */
  assert_int_equal(ob__sqs_parse_error(400,
                                       JS("{\"__type\":\"aws.protocoltests#FooError:"
                                       "http://internal.amazon.com/x\"}"),
                                       NULL, NULL, &e), 0);
  assert_string_equal(e.type, "FooError");
  assert_int_equal(ob__sqs_parse_error(400,
                                       JS("{\"__type\":\"BarError,baz\"}"), NULL,
                                       NULL, &e), 0);
  assert_string_equal(e.type, "BarError");
  /* Wrong types are ignored, not trusted. */
  assert_int_equal(ob__sqs_parse_error(400, JS("{\"__type\":5,\"message\":[1]}"), NULL, NULL, &e), 0);
  assert_string_equal(e.type, "");
  assert_string_equal(e.message, "");
  /* Long messages are truncated, deep bodies skipped, all without harm. */
  longmsg = big(5000, 'm');
  body = malloc(6000);
  assert_non_null(body);
  snprintf(body, 6000, "{\"message\":\"%s\"}", longmsg);
  assert_int_equal(ob__sqs_parse_error(400, body, strlen(body), NULL, NULL,
                                       &e), 0);
  assert_int_equal(strlen(e.message), sizeof e.message - 1);
  free(body);
  free(longmsg);
  body = big(100000, '[');
  assert_int_equal(ob__sqs_parse_error(400, body, 100000, "X;Sender", NULL,
                                       &e), 0);
  assert_string_equal(e.code, "X");
  free(body);
  /* An over-long x-amzn-query-error is truncated, never overrun. */
  body = big(300, ' ');
  memset(body + 1, 'Q', 200);
  body[250] = ';';
  assert_int_equal(ob__sqs_parse_error(400, NULL, 0, body, NULL, &e), 0);
  assert_int_equal(strlen(e.query_code), sizeof e.query_code - 1);
  assert_int_equal(e.query_code[0], 'Q');
  assert_int_equal(e.sender_fault, -1);
  free(body);
  assert_int_equal(ob__sqs_parse_error(400, NULL, 0, NULL, NULL, NULL),
                   OB_EINVAL);
}

/* What an answer's body was, and query-protocol XML read like JSON. */
static void test_parse_error_body_kinds(void** state) {
  ob__sqs_error_t e;
  (void)state;
  assert_int_equal(ob__sqs_parse_error(400, JS("{\"__type\":\"X\"}"), NULL,
                                       NULL, &e), 0);
  assert_int_equal(e.body, OB__SQS_BODY_JSON);
  assert_int_equal(ob__sqs_parse_error(400, JS(" \r\n"), NULL, NULL, &e), 0);
  assert_int_equal(e.body, OB__SQS_BODY_EMPTY);
  assert_int_equal(ob__sqs_parse_error(400, NULL, 0, NULL, NULL, &e), 0);
  assert_int_equal(e.body, OB__SQS_BODY_EMPTY);
  assert_int_equal(ob__sqs_parse_error(404, JS("The requested resource could "
                                               "not be found."), NULL, NULL,
                                       &e), 0);
  assert_int_equal(e.body, OB__SQS_BODY_OTHER);
  assert_int_equal(ob__sqs_parse_error(400, JS("[1]"), NULL, NULL, &e), 0);
  assert_int_equal(e.body, OB__SQS_BODY_OTHER);
  assert_int_equal(ob__sqs_parse_error(200, JS("\xEF\xBB\xBF\n<!DOCTYPE HTML>"
                                               "<html><body>login</body></html>"),
                                       NULL, NULL, &e), 0);
  assert_int_equal(e.body, OB__SQS_BODY_HTML);
  assert_int_equal(ob__sqs_parse_error(502, JS("<html>Bad gateway</html>"),
                                       NULL, NULL, &e), 0);
  assert_int_equal(e.body, OB__SQS_BODY_HTML);
  /* ElasticMQ (rest-sqs SQSException.toXml), and an ESC in the message. */
  assert_int_equal(
      ob__sqs_parse_error(400,
                          JS("<?xml version=\"1.0\"?><ErrorResponse xmlns=\"http://"
                             "queue.amazonaws.com/doc/2012-11-05/\"><Error><Type>"
                             "Sender</Type><Code>AWS.SimpleQueueService."
                             "NonExistentQueue</Code><Message>gone\x1b[31m"
                             "</Message><Detail/></Error><RequestId>0</RequestId>"
                             "</ErrorResponse>"),
                          NULL, NULL, &e),
      0);
  assert_int_equal(e.body, OB__SQS_BODY_XML);
  assert_string_equal(e.code, "AWS.SimpleQueueService.NonExistentQueue");
  assert_true(ob__sqs_error_is(&e, "NonExistentQueue"));
  assert_string_equal(e.message, "gone\\x1b[31m");
  assert_int_equal(e.sender_fault, 1);
  /* Unterminated elements are ignored. */
  assert_int_equal(ob__sqs_parse_error(400, JS("<Error><Code>Half"), NULL, NULL,
                                       &e), 0);
  assert_int_equal(e.body, OB__SQS_BODY_XML);
  assert_string_equal(e.code, "");
}

/* ob__sqs_not_json_api: which answers say "this is not the SQS JSON API"
** (docs/decisions/0014-not-the-sqs-json-api.md), and which stay SQS's own
** errors or outages. */
static int not_api(int status, const char* body, const char* query,
                   const char* ct, char* buf, size_t cap) {
  ob__sqs_error_t e;
  assert_int_equal(ob__sqs_parse_error(status, body, body ? strlen(body) : 0,
                                       query, NULL, &e), 0);
  return ob__sqs_not_json_api(&e, ct, "AmazonSQS.SendMessageBatch",
                              "https://sqs.test:4443/", buf, cap);
}

static void test_not_json_api(void** state) {
  char buf[768];
  (void)state;
  /* sqslite 2.1.1 (fastify 3), measured. */
  assert_int_equal(not_api(415, "{\"statusCode\":415,\"code\":\"FST_ERR_CTP_"
                                "INVALID_MEDIA_TYPE\",\"error\":\"Unsupported Media "
                                "Type\",\"message\":\"Unsupported Media Type: "
                                "application/x-amz-json-1.0\"}",
                           NULL, "application/json; charset=utf-8", buf,
                           sizeof buf), 1);
  assert_string_equal(buf, "the server does not speak SQS's JSON protocol "
                           "(HTTP 415 to AmazonSQS.SendMessageBatch); the "
                           "server said: Unsupported Media Type: "
                           "application/x-amz-json-1.0");
  assert_int_equal(not_api(405, NULL, NULL, NULL, buf, sizeof buf), 1);
  assert_int_equal(not_api(501, "<html>Not Implemented</html>", NULL,
                           "text/html", buf, sizeof buf), 1);
  assert_string_equal(buf, "the server does not speak SQS's JSON protocol "
                           "(HTTP 501 to AmazonSQS.SendMessageBatch)");
  /* Query-protocol XML (ElasticMQ before 1.4). */
  assert_int_equal(not_api(400, "<ErrorResponse><Error><Type>Sender</Type>"
                                "<Code>MissingAction</Code><Message>"
                                "MissingAction; see the SQS docs.</Message>"
                                "</Error></ErrorResponse>",
                           NULL, "text/xml", buf, sizeof buf), 1);
  assert_string_equal(buf, "the server does not speak SQS's JSON protocol: it "
                           "answered in XML, as servers of SQS's older query "
                           "protocol do (HTTP 400 MissingAction to "
                           "AmazonSQS.SendMessageBatch); the server said: "
                           "MissingAction; see the SQS docs.");
  /* An old LocalStack: 500 XML "unknown operation" (not an outage). */
  assert_int_equal(not_api(500, "<ErrorResponse><Error><Code>InternalError"
                                "</Code><Message>exception while calling sqs "
                                "with unknown operation</Message></Error>"
                                "</ErrorResponse>",
                           NULL, "text/xml", buf, sizeof buf), 1);
  /* floci's unknown operation; fauxqs's unknown action; JSON MissingAction. */
  assert_int_equal(not_api(404, "{\"__type\":\"UnknownOperationException\","
                                "\"message\":\"Unknown operation: AmazonSQS."
                                "SendMessageBatch\"}",
                           "UnknownOperationException;Sender",
                           "application/x-amz-json-1.0", buf, sizeof buf), 1);
  assert_string_equal(buf, "the server does not know the operation "
                           "AmazonSQS.SendMessageBatch (HTTP 404 "
                           "UnknownOperationException); the server said: "
                           "Unknown operation: AmazonSQS.SendMessageBatch");
  assert_int_equal(not_api(400, "{\"__type\":\"com.amazonaws.sqs#InvalidAction\","
                                "\"message\":\"Unknown action: X\"}",
                           NULL, "application/json", buf, sizeof buf), 1);
  assert_non_null(strstr(buf, "(HTTP 400 InvalidAction)"));
  assert_int_equal(not_api(400, "{\"__type\":\"com.amazonaws.sqs#MissingAction\"}",
                           NULL, "application/json", buf, sizeof buf), 1);
  assert_non_null(strstr(buf, "found no operation in the request for "
                              "AmazonSQS.SendMessageBatch (HTTP 400 "
                              "MissingAction)"));
  assert_int_equal(not_api(400, "{\"message\":\"Unknown Operation 'X'\"}", NULL,
                           "application/json", buf, sizeof buf), 1);
  /* Nothing at "/": ElasticMQ before 0.14.7, a fastify route miss. */
  assert_int_equal(not_api(404, "The requested resource could not be found.",
                           NULL, "text/plain", buf, sizeof buf), 1);
  assert_string_equal(buf, "the server has no SQS API at the endpoint's path / "
                           "(HTTP 404 to AmazonSQS.SendMessageBatch, endpoint "
                           "https://sqs.test:4443/)");
  assert_int_equal(not_api(404, "{\"message\":\"Route POST:/ not found\","
                                "\"error\":\"Not Found\",\"statusCode\":404}",
                           NULL, "application/json", buf, sizeof buf), 1);
  /* A 2xx that is not a JSON object; a 4xx page with no code. */
  assert_int_equal(not_api(200, "<!DOCTYPE html><html>Guest Wi-Fi</html>", NULL,
                           "text/html; charset=utf-8", buf, sizeof buf), 1);
  assert_non_null(strstr(buf, "the server's answer is not SQS's JSON (HTTP 200, "
                              "text/html, to AmazonSQS.SendMessageBatch)"));
  assert_int_equal(not_api(204, NULL, NULL, NULL, buf, sizeof buf), 1);
  assert_non_null(strstr(buf, "(HTTP 204, empty body, to "));
  assert_int_equal(not_api(403, "<html>Blocked by policy</html>", NULL,
                           "text/html", buf, sizeof buf), 1);
  assert_non_null(strstr(buf, "(HTTP 403, text/html, to "));
  /* Small buffers are truncated, never overrun. */
  assert_int_equal(not_api(415, NULL, NULL, NULL, buf, 10), 1);
  assert_string_equal(buf, "the serve");

  /* Not that: SQS's own errors, including its 404s and sender faults. */
  assert_int_equal(not_api(200, "{}", NULL, "application/x-amz-json-1.0", buf,
                           sizeof buf), 0);
  assert_int_equal(not_api(400, "{\"__type\":\"com.amazonaws.sqs#"
                                "InvalidParameterValue\",\"message\":\"bad\"}",
                           "AWS.SimpleQueueService.InvalidParameterValue;Sender",
                           "application/x-amz-json-1.0", buf, sizeof buf), 0);
  assert_string_equal(buf, "");
  assert_int_equal(not_api(404, "{\"__type\":\"com.amazonaws.sqs#"
                                "ReceiptHandleIsInvalid\"}",
                           "ReceiptHandleIsInvalid;Sender",
                           "application/x-amz-json-1.0", buf, sizeof buf), 0);
  assert_int_equal(not_api(404, NULL, "AWS.SimpleQueueService.NonExistentQueue;"
                           "Sender", NULL, buf, sizeof buf), 0);
  assert_int_equal(not_api(400, "{\"__type\":\"com.amazonaws.sqs#"
                                "UnsupportedOperation\"}", NULL,
                           "application/x-amz-json-1.0", buf, sizeof buf), 0);
  assert_int_equal(not_api(403, "{\"__type\":\"InvalidClientTokenId\"}", NULL,
                           "application/x-amz-json-1.0", buf, sizeof buf), 0);
  /* Outages and size refusals, whatever the body. */
  assert_int_equal(not_api(502, "<html>Bad gateway</html>", NULL, "text/html",
                           buf, sizeof buf), 0);
  assert_int_equal(not_api(503, "<Error><Code>ServiceUnavailable</Code></Error>",
                           NULL, "text/xml", buf, sizeof buf), 0);
  assert_int_equal(not_api(504, NULL, NULL, NULL, buf, sizeof buf), 0);
  assert_int_equal(not_api(500, "{\"__type\":\"InternalFailure\"}", NULL,
                           "application/x-amz-json-1.0", buf, sizeof buf), 0);
  assert_int_equal(not_api(413, "<html>Request Entity Too Large</html>", NULL,
                           "text/html", buf, sizeof buf), 0);
  assert_int_equal(not_api(429, NULL, NULL, NULL, buf, sizeof buf), 0);
  assert_int_equal(not_api(408, NULL, NULL, NULL, buf, sizeof buf), 0);
  assert_int_equal(not_api(301, "<html>Moved</html>", NULL, "text/html", buf,
                           sizeof buf), 0);
  assert_int_equal(ob__sqs_not_json_api(NULL, NULL, NULL, NULL, buf, sizeof buf),
                   0);
}

/* ---------------------------------------------------------------------------
** Hostile responses.
*/
static void test_hostile_structure(void** state) {
  ob__sqs_receive_result_t r;
  char* text;
  size_t n;
  (void)state;
  /* Depth: 16 levels are fine, 17 are refused before cJSON sees them. */
  text = malloc(200);
  assert_non_null(text);
  strcpy(text, "{\"x\":");
  for (int i = 0; i < 15; i++) strcat(text, "[");
  for (int i = 0; i < 15; i++) strcat(text, "]");
  strcat(text, "}");
  assert_int_equal(ob__sqs_parse_receive_message(text, strlen(text), 0, &r,
                                                 NULL), 0);
  ob__sqs_receive_result_free(&r);
  strcpy(text, "{\"x\":");
  for (int i = 0; i < 16; i++) strcat(text, "[");
  for (int i = 0; i < 16; i++) strcat(text, "]");
  strcat(text, "}");
  expect_fault(ob__sqs_parse_receive_message(text, strlen(text), 0, &r, D),
               OB_ETOOBIG, OB__SQS_FAULT_TOO_DEEP, "response");
  /* Brackets inside strings don't count. */
  strcpy(text, "{\"x\":\"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\\\"[[[[\"}");
  assert_int_equal(ob__sqs_parse_receive_message(text, strlen(text), 0, &r,
                                                 NULL), 0);
  ob__sqs_receive_result_free(&r);
  free(text);
  /* 1 MB of '{': refused in one linear pass, no recursion. */
  text = big(1000000, '{');
  expect_fault(ob__sqs_parse_receive_message(text, 1000000, 0, &r, D),
               OB_ETOOBIG, OB__SQS_FAULT_TOO_DEEP, "response");
  free(text);
  /* Over the response cap: refused without parsing. */
  n = OB__SQS_MAX_RESPONSE_BYTES + 1;
  text = big(n, ' ');
  expect_fault(ob__sqs_parse_receive_message(text, n, 0, &r, D), OB_ETOOBIG,
               OB__SQS_FAULT_TOO_BIG, "response");
  free(text);

  {
    static const struct {
      const char* json;
      int rc;
      ob__sqs_fault_t fault;
      const char* field;
    } cases[] = {
        {"", OB_EINVAL, OB__SQS_FAULT_BAD_JSON, "response"},
        {"{", OB_EINVAL, OB__SQS_FAULT_BAD_JSON, "response"},
        {"{} x", OB_EINVAL, OB__SQS_FAULT_BAD_JSON, "trailing data"},
        {"{}{}", OB_EINVAL, OB__SQS_FAULT_BAD_JSON, "trailing data"},
        {"[]", OB_EINVAL, OB__SQS_FAULT_BAD_JSON, "not an object"},
        {"\"Messages\"", OB_EINVAL, OB__SQS_FAULT_BAD_JSON, "not an object"},
        {"{\"Messages\":{}}", OB_EINVAL, OB__SQS_FAULT_WRONG_TYPE, "Messages"},
        {"{\"Messages\":\"[]\"}", OB_EINVAL, OB__SQS_FAULT_WRONG_TYPE,
         "Messages"},
        {"{\"Messages\":[1]}", OB_EINVAL, OB__SQS_FAULT_WRONG_TYPE,
         "Messages[0]"},
        {"{\"Messages\":[{}]}", OB_EINVAL, OB__SQS_FAULT_MISSING,
         "Messages[0].MessageId"},
        {"{\"Messages\":[{\"MessageId\":\"m\",\"ReceiptHandle\":\"r\","
         "\"MD5OfBody\":\"x\"}]}",
         OB_EINVAL, OB__SQS_FAULT_MISSING, "Messages[0].Body"},
        {"{\"Messages\":[{\"MessageId\":\"m\",\"ReceiptHandle\":\"r\","
         "\"MD5OfBody\":\"x\",\"Body\":5}]}",
         OB_EINVAL, OB__SQS_FAULT_WRONG_TYPE, "Messages[0].Body"},
        {"{\"Messages\":[{\"MessageId\":\"m\",\"ReceiptHandle\":null,"
         "\"MD5OfBody\":\"x\",\"Body\":\"b\"}]}",
         OB_EINVAL, OB__SQS_FAULT_MISSING, "Messages[0].ReceiptHandle"},
        {"{\"Messages\":[{\"MessageId\":\"m\",\"ReceiptHandle\":\"r\","
         "\"MD5OfBody\":\"92eb5ffee6ae2fec3ad71c777531578f\",\"Body\":\"b\","
         "\"Attributes\":[]}]}",
         OB_EINVAL, OB__SQS_FAULT_WRONG_TYPE, "Messages[0].Attributes"},
        {"{\"Messages\":[{\"MessageId\":\"m\",\"ReceiptHandle\":\"r\","
         "\"MD5OfBody\":\"92eb5ffee6ae2fec3ad71c777531578f\",\"Body\":\"b\","
         "\"Attributes\":{\"ApproximateReceiveCount\":2}}]}",
         OB_EINVAL, OB__SQS_FAULT_WRONG_TYPE,
         "Messages[0].Attributes.ApproximateReceiveCo"},
        {"{\"Messages\":[{\"MessageId\":\"m\",\"ReceiptHandle\":\"r\","
         "\"MD5OfBody\":\"92eb5ffee6ae2fec3ad71c777531578f\",\"Body\":\"b\","
         "\"Attributes\":{\"ApproximateReceiveCount\":\"x\"}}]}",
         OB_EINVAL, OB__SQS_FAULT_BAD_VALUE,
         "Messages[0].Attributes.ApproximateReceiveCount"},
        {"{\"Messages\":[{\"MessageId\":\"m\",\"ReceiptHandle\":\"r\","
         "\"MD5OfBody\":\"92eb5ffee6ae2fec3ad71c777531578f\",\"Body\":\"b\","
         "\"Attributes\":{\"SentTimestamp\":\"99999999999999999999999\"}}]}",
         OB_EINVAL, OB__SQS_FAULT_BAD_VALUE,
         "Messages[0].Attributes.SentTimestamp"},
        {"{\"Messages\":[{\"MessageId\":\"m\",\"ReceiptHandle\":\"r\","
         "\"MD5OfBody\":\"92eb5ffee6ae2fec3ad71c777531578f\",\"Body\":\"b\","
         "\"MessageAttributes\":{\"k\":{\"DataType\":\"Binary\","
         "\"BinaryValue\":\"!!!\"}}}]}",
         OB_EINVAL, OB__SQS_FAULT_BAD_VALUE,
         "Messages[0].MessageAttributes.k.BinaryValue"},
        {"{\"Messages\":[{\"MessageId\":\"m\",\"ReceiptHandle\":\"r\","
         "\"MD5OfBody\":\"92eb5ffee6ae2fec3ad71c777531578f\",\"Body\":\"b\","
         "\"MessageAttributes\":{\"k\":{\"DataType\":\"Weird\","
         "\"StringValue\":\"v\"}}}]}",
         OB_EINVAL, OB__SQS_FAULT_BAD_VALUE,
         "Messages[0].MessageAttributes.k.DataType"},
        {"{\"Messages\":[{\"MessageId\":\"m\",\"ReceiptHandle\":\"r\","
         "\"MD5OfBody\":\"92eb5ffee6ae2fec3ad71c777531578f\",\"Body\":\"b\","
         "\"MessageAttributes\":{\"k\":{\"DataType\":\"String\"}}}]}",
         OB_EINVAL, OB__SQS_FAULT_MISSING,
         "Messages[0].MessageAttributes.k.StringValue"},
        {"{\"Messages\":[{\"MessageId\":\"m\",\"ReceiptHandle\":\"r\","
         "\"MD5OfBody\":\"92eb5ffee6ae2fec3ad71c777531578f\",\"Body\":\"b\","
         "\"MessageAttributes\":{\"k\":\"v\"}}]}",
         OB_EINVAL, OB__SQS_FAULT_WRONG_TYPE,
         "Messages[0].MessageAttributes.k."},
        {"{\"Messages\":[{\"MessageId\":\"m\",\"ReceiptHandle\":\"r\","
         "\"MD5OfBody\":\"92eb5ffee6ae2fec3ad71c777531578f\",\"Body\":\"b\","
         "\"MD5OfMessageAttributes\":[]}]}",
         OB_EINVAL, OB__SQS_FAULT_WRONG_TYPE,
         "Messages[0].MD5OfMessageAttributes"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
      ob__sqs_diag_t d;
      int rc = ob__sqs_parse_receive_message(cases[i].json,
                                             strlen(cases[i].json), 0, &r, &d);
      if (rc != cases[i].rc || d.fault != cases[i].fault ||
          strcmp(d.field, cases[i].field) != 0)
        print_error("case %zu: rc %d fault %s field '%s'\n", i, rc,
                    ob__sqs_fault_name(d.fault), d.field);
      assert_int_equal(rc, cases[i].rc);
      assert_int_equal(d.fault, cases[i].fault);
      assert_string_equal(d.field, cases[i].field);
      assert_null(r.messages);
    }
  }
}

static void test_hostile_sizes(void** state) {
  ob__sqs_receive_result_t r;
  char* text;
  char* s;
  size_t cap = 64 * 1024 + 4 * 1024 * 1024;
  (void)state;
  text = malloc(cap);
  assert_non_null(text);
  /* A huge MessageId. */
  s = big(10000, 'i');
  snprintf(text, cap, "{\"Messages\":[{\"MessageId\":\"%s\",\"ReceiptHandle\":"
           "\"r\",\"MD5OfBody\":\"x\",\"Body\":\"b\"}]}", s);
  expect_fault(ob__sqs_parse_receive_message(text, strlen(text), 0, &r, D),
               OB_ETOOBIG, OB__SQS_FAULT_TOO_BIG, "Messages[0].MessageId");
  free(s);
  /* A body over 1 MiB. */
  s = big(OB__SQS_MAX_MESSAGE_BYTES + 1, 'b');
  snprintf(text, cap, "{\"Messages\":[{\"MessageId\":\"m\",\"ReceiptHandle\":"
           "\"r\",\"MD5OfBody\":\"x\",\"Body\":\"%s\"}]}", s);
  expect_fault(ob__sqs_parse_receive_message(text, strlen(text), 0, &r, D),
               OB_ETOOBIG, OB__SQS_FAULT_TOO_BIG, "Messages[0].Body");
  free(s);
  /* 11 messages; 11 message attributes. */
  {
    char* p = text;
    p += sprintf(p, "{\"Messages\":[");
    for (int i = 0; i < 11; i++)
      p += sprintf(p, "%s{\"MessageId\":\"m\",\"ReceiptHandle\":\"r\","
                   "\"MD5OfBody\":\"92eb5ffee6ae2fec3ad71c777531578f\","
                   "\"Body\":\"b\"}", i ? "," : "");
    sprintf(p, "]}");
    expect_fault(ob__sqs_parse_receive_message(text, strlen(text), 0, &r, D),
                 OB_ETOOBIG, OB__SQS_FAULT_TOO_MANY, "Messages");
    p = text;
    p += sprintf(p, "{\"Messages\":[{\"MessageId\":\"m\",\"ReceiptHandle\":"
                 "\"r\",\"MD5OfBody\":\"92eb5ffee6ae2fec3ad71c777531578f\","
                 "\"Body\":\"b\",\"MessageAttributes\":{");
    for (int i = 0; i < 11; i++)
      p += sprintf(p, "%s\"a%d\":{\"DataType\":\"String\",\"StringValue\":"
                   "\"v\"}", i ? "," : "", i);
    sprintf(p, "}}]}");
    expect_fault(ob__sqs_parse_receive_message(text, strlen(text), 0, &r, D),
                 OB_ETOOBIG, OB__SQS_FAULT_TOO_MANY,
                 "Messages[0].MessageAttributes");
  }
  free(text);
}

/* Random corruption of a valid response: never a crash, a leak (ASan /
** valgrind), or a success with inconsistent data: either 0 with every
** body matching its MD5 again, or a negative code with a fault set. */
static void test_hostile_mutations(void** state) {
  uint64_t x = 0x9E3779B97F4A7C15ULL;
  size_t n = strlen(k_receive);
  char* buf = malloc(n + 1);
  int ok = 0, refused = 0;
  (void)state;
  assert_non_null(buf);
  for (int iter = 0; iter < 20000; iter++) {
    ob__sqs_receive_result_t r;
    ob__sqs_diag_t d;
    size_t len = n;
    int rc, flips;
    memcpy(buf, k_receive, n + 1);
    x ^= x >> 12; x ^= x << 25; x ^= x >> 27;
    flips = 1 + (int)(x % 4);
    for (int f = 0; f < flips; f++) {
      x ^= x >> 12; x ^= x << 25; x ^= x >> 27;
      buf[(x >> 8) % n] = (char)(x >> 40);
    }
    x ^= x >> 12; x ^= x << 25; x ^= x >> 27;
    if (x % 5 == 0) len = (size_t)((x >> 16) % n);  /* truncation */
    memset(&d, 0, sizeof d);
    {
      /* An exact-size copy without a NUL: ASan flags any read past len. */
      char* exact = malloc(len ? len : 1);
      assert_non_null(exact);
      memcpy(exact, buf, len);
      rc = ob__sqs_parse_receive_message(exact, len, OB__SQS_VERIFY_ATTR_MD5,
                                         &r, &d);
      free(exact);  /* results point into the parse tree, not into it */
    }
    if (rc == 0) {
      for (size_t i = 0; i < r.n; i++) {
        char md5[33];
        assert_int_equal(ob__sqs_md5_hex(r.messages[i].body,
                                         r.messages[i].body_len, md5), 0);
        assert_true(strcasecmp(md5, r.messages[i].md5_of_body) == 0);
      }
      ok++;
      ob__sqs_receive_result_free(&r);
    } else {
      assert_true(rc < 0);
      assert_int_not_equal(d.fault, OB__SQS_FAULT_NONE);
      assert_null(r.messages);
      refused++;
    }
  }
  print_message("mutations: %d accepted (harmless bytes), %d refused\n", ok,
                refused);
  free(buf);
}

/* Build -> (fake SQS) -> parse: our own MD5s agree with our own bodies. */
static void test_roundtrip_send(void** state) {
  ob__sqs_send_t m;
  ob__sqs_send_result_t r;
  ob__sqs_attr_t a[2] = {{"n", "Number", "7", 1}, {"s", "String", "\xc3\xa9", 2}};
  char* req;
  char md5b[33], md5a[33], resp[256];
  cJSON* j;
  (void)state;
  ob__sqs_send_init(&m);
  m.body = "\xe2\x82\xac 12.50 \"EUR\"";
  m.body_len = strlen(m.body);
  m.attrs = a;
  m.nattrs = 2;
  assert_int_equal(ob__sqs_build_send_message(QURL, &m, &req, NULL, NULL), 0);
  /* What SQS would hash: the unescaped body it parsed from our JSON. */
  j = cJSON_Parse(req);
  assert_non_null(j);
  assert_int_equal(ob__sqs_md5_hex(
                       cJSON_GetObjectItemCaseSensitive(j, "MessageBody")
                           ->valuestring,
                       m.body_len, md5b), 0);
  cJSON_Delete(j);
  assert_int_equal(ob__sqs_md5_of_attributes(a, 2, md5a), 0);
  snprintf(resp, sizeof resp, "{\"MessageId\":\"id\",\"MD5OfMessageBody\":"
           "\"%s\",\"MD5OfMessageAttributes\":\"%s\"}", md5b, md5a);
  assert_int_equal(ob__sqs_parse_send_message(resp, strlen(resp), &m, &r,
                                              NULL), 0);
  ob__sqs_send_result_free(&r);
  free(req);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_targets),
      cmocka_unit_test(test_receive_matches_sdk_capture),
      cmocka_unit_test(test_send_message_body),
      cmocka_unit_test(test_send_message_escaping_roundtrip),
      cmocka_unit_test(test_send_message_refusals),
      cmocka_unit_test(test_send_message_batch),
      cmocka_unit_test(test_handle_requests),
      cmocka_unit_test(test_md5_vectors),
      cmocka_unit_test(test_parse_send_message),
      cmocka_unit_test(test_parse_receive),
      cmocka_unit_test(test_parse_receive_md5_mismatch),
      cmocka_unit_test(test_parse_batch),
      cmocka_unit_test(test_parse_small),
      cmocka_unit_test(test_parse_error_verbatim),
      cmocka_unit_test(test_parse_error_odd_bodies),
      cmocka_unit_test(test_parse_error_body_kinds),
      cmocka_unit_test(test_not_json_api),
      cmocka_unit_test(test_hostile_structure),
      cmocka_unit_test(test_hostile_sizes),
      cmocka_unit_test(test_hostile_mutations),
      cmocka_unit_test(test_roundtrip_send),
  };
  return cmocka_run_group_tests_name("sqs_codec", tests, NULL, NULL);
}
