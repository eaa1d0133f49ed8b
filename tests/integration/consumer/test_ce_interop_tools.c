/* SPDX-License-Identifier: Apache-2.0 */
/*
** The CloudEvents interop tools of the consumer tests, on their own:
** ci_send (tests/interop/ce_send.mjs: the CloudEvents SDK for JavaScript
** builds and serializes, the AWS SDK sends) and ci_check (ce_check.mjs: the
** AWS SDK receives, the CloudEvents SDK parses and validates) against
** fauxqs behind the SigV4-verifying TLS terminator. No oncebox engine: what
** one tool sends, the other must read back valid and unchanged; what is not
** a valid CloudEvent must be reported invalid, with the step that failed.
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

#include "tests/integration/consumer/ce_interop_util.h"
#include "tests/integration/consumer/consumer_test_util.h"
#include "tests/integration/sqs/sqs_test_util.h"

#define TYPE "com.example.payment.captured"
#define TRACEPARENT "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
#define TRACESTATE "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"
/* 00 01 22 5c 0a ff fe 80 7f 41: NUL, quote, backslash, newline, high
** bytes; 10 bytes, so the base64 ends in "==". */
#define BIN_HEX "0001225c0afffe807f41"
#define BIN_B64 "AAEiXAr//oB/QQ=="

static sq_server_t g_srv;
static const char* g_skip;

static int group_setup(void** state) {
  (void)state;
  g_skip = ci_skip_reason();
  if (g_skip != NULL) {
    printf("%s\n", g_skip);
    return 0;
  }
  return sq_server_start(&g_srv, "ce-interop", NULL);
}

static int group_teardown(void** state) {
  (void)state;
  if (g_skip == NULL) sq_server_stop(&g_srv);
  return 0;
}

static const char* str_of(const cJSON* o, const char* name) {
  const cJSON* v = cJSON_GetObjectItemCaseSensitive(o, name);
  if (!cJSON_IsString(v))
    fail_msg("member %s missing or not a string in %s", name,
             cJSON_PrintUnformatted(o));
  return v->valuestring;
}

static void absent(const cJSON* o, const char* name) {
  if (cJSON_GetObjectItemCaseSensitive(o, name) != NULL)
    fail_msg("member %s present in %s", name, cJSON_PrintUnformatted(o));
}

/* The line whose "id" is id; fails if none or two. */
static const cJSON* by_id(cJSON* const* ev, int n, const char* id) {
  const cJSON* hit = NULL;
  for (int i = 0; i < n; i++) {
    const cJSON* v = cJSON_GetObjectItemCaseSensitive(ev[i], "id");
    if (cJSON_IsString(v) && strcmp(v->valuestring, id) == 0) {
      if (hit != NULL) fail_msg("event id %s read twice", id);
      hit = ev[i];
    }
  }
  if (hit == NULL) fail_msg("event id %s not read", id);
  return hit;
}

/* Six events, one per spec; each comes back valid, as sent, once. */
static void test_round_trip(void** state) {
  char src300[301];
  char specs[4096];
  char ids[6][80];
  char** lines = NULL;
  cJSON* ev[6];
  int invalid = -1, n;
  char* url;
  (void)state;
  if (g_skip != NULL) skip();

  memcpy(src300, "urn:oncebox:", 12);
  memset(src300 + 12, 'a', 288);
  src300[300] = '\0';
  snprintf(
      specs, sizeof specs,
      "["
      "{\"id\":\"1\",\"source\":\"urn:oncebox:test\",\"type\":\"" TYPE "\","
      "\"subject\":\"payment/1\",\"datacontenttype\":\"application/json\","
      "\"time\":\"2026-03-04T05:06:07.089Z\","
      "\"data\":{\"paymentId\":\"p-1\",\"amountInMinorUnits\":12500,"
      "\"nested\":[1,\"two\",null,true]}},"
      "{\"id\":\"2\",\"source\":\"urn:oncebox:test\",\"type\":\"" TYPE "\","
      "\"datacontenttype\":\"application/json\",\"data\":{\"paymentId\":\"p-2\"}},"
      "{\"id\":\"3\",\"source\":\"urn:oncebox:test\",\"type\":\"" TYPE "\","
      "\"datacontenttype\":\"application/octet-stream\",\"binary\":\"" BIN_HEX "\"},"
      "{\"id\":\"4\",\"source\":\"urn:oncebox:test\",\"type\":\"" TYPE "\","
      "\"datacontenttype\":\"text/plain\","
      "\"data\":\"hello, \\\"w\\u00f6rld\\\"\\n\\ttab\"},"
      "{\"id\":\"5\",\"source\":\"urn:oncebox:test\",\"type\":\"" TYPE "\","
      "\"traceparent\":\"" TRACEPARENT "\",\"tracestate\":\"" TRACESTATE "\","
      "\"data\":{\"k\":1}},"
      "{\"id\":\"6\",\"source\":\"%s\",\"type\":\"" TYPE "\",\"data\":{}}"
      "]",
      src300);

  url = ct_new_queue(&g_srv, NULL);
  memset(ids, 0, sizeof ids);
  assert_int_equal(ci_send(&g_srv, url, specs, ids, 6), 6);
  for (int i = 0; i < 6; i++) {
    assert_true(ids[i][0] != '\0');
    for (int j = 0; j < i; j++) assert_string_not_equal(ids[i], ids[j]);
  }

  n = ci_check(&g_srv, url, 6, 15000, &lines, &invalid);
  assert_int_equal(n, 6);
  assert_int_equal(invalid, 0);
  for (int i = 0; i < n; i++) {
    const cJSON* f;
    ev[i] = cJSON_Parse(lines[i]);
    if (ev[i] == NULL) fail_msg("not JSON: %s", lines[i]);
    if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ev[i], "valid")))
      fail_msg("invalid: %s", lines[i]);
    assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(ev[i], "error")));
    assert_string_equal(str_of(ev[i], "specversion"), "1.0");
    assert_string_equal(str_of(ev[i], "type"), TYPE);
    /* Nothing made up by the parse: the body had every attribute. */
    f = cJSON_GetObjectItemCaseSensitive(ev[i], "filled");
    assert_true(cJSON_IsArray(f));
    assert_int_equal(cJSON_GetArraySize(f), 0);
  }
  for (int k = 0; k < 6; k++) {
    char id[4];
    const cJSON* e;
    snprintf(id, sizeof id, "%d", k + 1);
    e = by_id(ev, n, id);
    /* The MessageId ce_send reported for spec k is the one read with it. */
    assert_string_equal(str_of(e, "messageId"), ids[k]);
    assert_string_equal(str_of(e, "source"),
                        k == 5 ? src300 : "urn:oncebox:test");
  }
  {
    const cJSON* e = by_id(ev, n, "1");
    char* d = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(e, "data"));
    assert_string_equal(d, "{\"paymentId\":\"p-1\",\"amountInMinorUnits\":12500,"
                           "\"nested\":[1,\"two\",null,true]}");
    free(d);
    assert_string_equal(str_of(e, "subject"), "payment/1");
    assert_string_equal(str_of(e, "datacontenttype"), "application/json");
    assert_string_equal(str_of(e, "time"), "2026-03-04T05:06:07.089Z");
    absent(e, "data_base64");
    absent(e, "traceparent");
  }
  {
    const cJSON* e = by_id(ev, n, "3");
    assert_string_equal(str_of(e, "data_base64"), BIN_B64);
    assert_string_equal(str_of(e, "datacontenttype"),
                        "application/octet-stream");
    absent(e, "data");
    /* The body itself carries data_base64 only, as the SDK wrote it. */
    assert_non_null(strstr(str_of(e, "body"), "\"data_base64\":\"" BIN_B64 "\""));
    assert_null(strstr(str_of(e, "body"), "\"data\":"));
  }
  {
    const cJSON* e = by_id(ev, n, "4");
    assert_string_equal(str_of(e, "datacontenttype"), "text/plain");
    assert_string_equal(str_of(e, "data"), "hello, \"w\xc3\xb6rld\"\n\ttab");
  }
  {
    const cJSON* e = by_id(ev, n, "5");
    const cJSON* x = cJSON_GetObjectItemCaseSensitive(e, "extensions");
    assert_string_equal(str_of(e, "traceparent"), TRACEPARENT);
    assert_string_equal(str_of(e, "tracestate"), TRACESTATE);
    assert_non_null(strstr(str_of(e, "body"),
                           "\"traceparent\":\"" TRACEPARENT "\""));
    assert_true(cJSON_IsObject(x));
    assert_int_equal(cJSON_GetArraySize(x), 0);
  }
  for (int i = 0; i < n; i++) cJSON_Delete(ev[i]);
  ci_lines_free(lines, n);
  /* ce_check deleted what it read. */
  assert_int_equal(ct_queue_depth(&g_srv, url, NULL, NULL), 0);
  free(url);
}

/* Bodies that are not valid CloudEvents are read as invalid, with the step
** that failed; a spec the SDK refuses sends nothing; --keep leaves the
** messages in the queue, visible; a short read says how many came. */
static void test_invalid_reported(void** state) {
  static const char* const specs =
      "["
      "{\"raw\":\"not json\"},"
      "{\"raw\":\"{\\\"specversion\\\":\\\"1.0\\\",\\\"source\\\":\\\"urn:x\\\","
      "\\\"type\\\":\\\"t\\\"}\"},"
      "{\"raw\":\"{\\\"specversion\\\":\\\"1.0\\\",\\\"id\\\":\\\"x\\\","
      "\\\"source\\\":\\\"urn:x\\\",\\\"type\\\":\\\"t\\\",\\\"data_base64\\\":"
      "\\\"AAE\\\"}\"},"
      "{\"raw\":\"{\\\"specversion\\\":\\\"0.9\\\",\\\"id\\\":\\\"y\\\","
      "\\\"source\\\":\\\"urn:x\\\",\\\"type\\\":\\\"t\\\"}\"},"
      "{\"id\":\"ok\",\"source\":\"urn:x\",\"type\":\"t\","
      "\"messageAttributes\":{\"eventType\":{\"DataType\":\"String\","
      "\"StringValue\":\"t\"}}}"
      "]";
  static const char* const want[] = {"toEvent: ", "body schema: ",
                                     "body data_base64: ", "validate: false",
                                     NULL};
  char** lines = NULL;
  int invalid = -1, n;
  long visible = -1;
  char* url;
  (void)state;
  if (g_skip != NULL) skip();

  url = ct_new_queue(&g_srv, NULL);
  /* A number as id: the SDK's validation refuses it; nothing is sent. */
  assert_int_equal(
      ci_send(&g_srv, url,
              "[{\"id\":\"a\",\"source\":\"urn:x\",\"type\":\"t\"},"
              "{\"id\":7,\"source\":\"urn:x\",\"type\":\"t\"}]",
              NULL, 0),
      -1);
  assert_int_equal(ct_queue_depth(&g_srv, url, NULL, NULL), 0);

  assert_int_equal(ci_send(&g_srv, url, specs, NULL, 0), 5);
  n = ci_check_ex(&g_srv, url, 5, 15000, CI_CHECK_KEEP, &lines, &invalid);
  assert_int_equal(n, 5);
  assert_int_equal(invalid, 4);
  ci_lines_free(lines, n);
  assert_int_equal(ct_queue_depth(&g_srv, url, &visible, NULL), 5);
  assert_int_equal(visible, 5);

  n = ci_check(&g_srv, url, 6, 1500, &lines, &invalid);
  assert_int_equal(n, 5);
  assert_int_equal(invalid, 4);
  for (int i = 0; i < n; i++) {
    cJSON* e = cJSON_Parse(lines[i]);
    const char* body = str_of(e, "body");
    const cJSON* err = cJSON_GetObjectItemCaseSensitive(e, "error");
    int k = strcmp(body, "not json") == 0       ? 0
            : strstr(body, "\"id\"") == NULL    ? 1
            : strstr(body, "data_base64")       ? 2
            : strstr(body, "\"0.9\"")           ? 3
                                                : 4;
    if (k < 4) {
      assert_true(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(e, "valid")));
      assert_true(cJSON_IsString(err));
      if (strncmp(err->valuestring, want[k], strlen(want[k])) != 0)
        fail_msg("body %s: error %s, wanted %s...", body, err->valuestring,
                 want[k]);
    } else {
      assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "valid")));
      assert_string_equal(
          str_of(cJSON_GetObjectItemCaseSensitive(e, "attributes"),
                 "eventType"),
          "t");
    }
    if (k == 1) {
      /* The SDK's parse made an id up; the line says so. */
      char* f = cJSON_PrintUnformatted(
          cJSON_GetObjectItemCaseSensitive(e, "filled"));
      assert_string_equal(f, "[\"id\",\"time\"]");
      free(f);
    }
    cJSON_Delete(e);
  }
  ci_lines_free(lines, n);
  assert_int_equal(ct_queue_depth(&g_srv, url, NULL, NULL), 0);
  free(url);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_round_trip),
      cmocka_unit_test(test_invalid_reported),
  };
  return cmocka_run_group_tests_name("ce_interop_tools", tests, group_setup,
                                     group_teardown);
}
