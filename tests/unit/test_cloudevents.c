/* SPDX-License-Identifier: Apache-2.0 */
/* CloudEvents encoding of outbox events, and decoding on the consumer side:
** every rule of ob__cloudevent_decode, events as the official cloudevents
** npm SDK (10.0.0) writes them, trace context both ways, and out of memory
** at every allocation (this executable is linked with --wrap=malloc). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/relay/cloudevents.h"

/* ---- out-of-memory injection: the k-th malloc while armed fails -------- */
void* __real_malloc(size_t n);
void* __wrap_malloc(size_t n);
static long g_fail_at; /* 0: disarmed */
static long g_mallocs;
void* __wrap_malloc(size_t n) {
  if (g_fail_at > 0 && ++g_mallocs == g_fail_at) return NULL;
  return __real_malloc(n);
}

#define TP "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

static ob_event_t sample(void) {
  ob_event_t ev;
  memset(&ev, 0, sizeof ev);
  ev.id = "01a22ee6-b000-7323-8af1-c3d534704dac";
  ev.causation_id = "0190b6d8-3ae7-7ca2-a653-6ff2d5a6f230";
  ev.event_type = "MerchantPayoutCreated";
  ev.aggregate_id = "5c4080b1-b5d2-4e91-8de8-ec0e119d7647";
  ev.payload = "{\"amountInMinorUnits\":9007199254740991,\"currency\":\"EUR\"}";
  ev.payload_len = strlen(ev.payload);
  ev.created_at_ms = 1796083200123LL;
  return ev;
}

/* Decode body, which must be accepted. */
static void ok(const char* body, ob__cloudevent_t* ce) {
  char reason[256] = "x";
  int rc = ob__cloudevent_decode(body, strlen(body), ce, reason, sizeof reason);
  if (rc != 0) fail_msg("refused (%d): %s\n  %s", rc, reason, body);
  assert_string_equal(reason, "");
  assert_non_null(ce->id);
  assert_non_null(ce->source);
  assert_non_null(ce->data);
  assert_int_equal(ce->data[ce->data_len], '\0');
}

static void expect_reason_n(const char* body, size_t len, const char* want) {
  ob__cloudevent_t ce;
  char reason[256] = "";
  int rc = ob__cloudevent_decode(body, len, &ce, reason, sizeof reason);
  if (rc != -1) fail_msg("accepted (%d): %.*s", rc, (int)len, body);
  if (strcmp(reason, want) != 0)
    fail_msg("got  \"%s\"\nwant \"%s\"\nfor %.*s", reason, want, (int)len,
             body);
  /* nothing to free, and freeing is still safe */
  assert_null(ce.id);
  assert_null(ce.source);
  assert_null(ce.content_type);
  assert_null(ce.data);
  ob__cloudevent_free(&ce);
}
static void expect_reason(const char* body, const char* want) {
  expect_reason_n(body, strlen(body), want);
}

#define HEAD "{\"specversion\":\"1.0\",\"id\":\"e1\",\"source\":\"urn:x\",\"type\":\"T\""
#define EV(rest) HEAD rest "}"

/* ---- encode ------------------------------------------------------------ */

static void test_encode_fields(void** state) {
  ob_event_t ev = sample();
  size_t len;
  char* s = ob__cloudevent_encode(&ev, "urn:oncebox:terminal:till-7", &len);
  (void)state;
  assert_non_null(s);
  assert_int_equal(strlen(s), len);
  cJSON* doc = cJSON_Parse(s);
  assert_non_null(doc);
  assert_string_equal(cJSON_GetObjectItem(doc, "specversion")->valuestring, "1.0");
  assert_string_equal(cJSON_GetObjectItem(doc, "id")->valuestring, ev.id);
  assert_string_equal(cJSON_GetObjectItem(doc, "source")->valuestring,
                      "urn:oncebox:terminal:till-7");
  assert_string_equal(cJSON_GetObjectItem(doc, "type")->valuestring, ev.event_type);
  assert_string_equal(cJSON_GetObjectItem(doc, "subject")->valuestring, ev.aggregate_id);
  assert_string_equal(cJSON_GetObjectItem(doc, "time")->valuestring,
                      "2026-12-01T00:00:00.123Z");
  assert_string_equal(cJSON_GetObjectItem(doc, "datacontenttype")->valuestring,
                      "application/json");
  cJSON_Delete(doc);
  /* The payload is embedded byte for byte: no float reformatting of 2^53-1. */
  assert_non_null(strstr(s, "\"data\":{\"amountInMinorUnits\":9007199254740991,"));
  free(s);
}

/* Without trace context (NULL or ""), the bytes are those written before
** trace context existed. */
static void test_encode_bytes_without_trace(void** state) {
  static const char want[] =
      "{\"specversion\":\"1.0\",\"id\":\"01a22ee6-b000-7323-8af1-c3d534704dac\","
      "\"source\":\"urn:x\",\"type\":\"MerchantPayoutCreated\",\"subject\":"
      "\"5c4080b1-b5d2-4e91-8de8-ec0e119d7647\",\"time\":"
      "\"2026-12-01T00:00:00.123Z\",\"datacontenttype\":\"application/json\","
      "\"data\":{\"amountInMinorUnits\":9007199254740991,\"currency\":\"EUR\"}}";
  ob_event_t ev = sample();
  size_t len;
  char* s;
  (void)state;
  s = ob__cloudevent_encode(&ev, "urn:x", &len);
  assert_string_equal(s, want);
  assert_int_equal(len, sizeof want - 1);
  free(s);
  ev.traceparent = "";
  ev.tracestate = "";
  s = ob__cloudevent_encode(&ev, "urn:x", NULL);
  assert_string_equal(s, want);
  free(s);
}

static void test_encode_escapes_source(void** state) {
  ob_event_t ev = sample();
  char* s = ob__cloudevent_encode(&ev, "urn:\"odd\"\\\n", NULL);
  (void)state;
  cJSON* doc = cJSON_Parse(s);
  assert_non_null(doc);
  assert_string_equal(cJSON_GetObjectItem(doc, "source")->valuestring, "urn:\"odd\"\\\n");
  cJSON_Delete(doc);
  free(s);
}

static void test_encode_trace(void** state) {
  ob_event_t ev = sample();
  char* s;
  cJSON* doc;
  (void)state;
  ev.traceparent = TP;
  ev.tracestate = "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE";
  s = ob__cloudevent_encode(&ev, "urn:x", NULL);
  doc = cJSON_Parse(s);
  assert_non_null(doc);
  assert_string_equal(cJSON_GetObjectItem(doc, "traceparent")->valuestring, TP);
  assert_string_equal(cJSON_GetObjectItem(doc, "tracestate")->valuestring,
                      ev.tracestate);
  cJSON_Delete(doc);
  free(s);
  /* each only when set */
  ev.tracestate = NULL;
  s = ob__cloudevent_encode(&ev, "urn:x", NULL);
  assert_non_null(strstr(s, "\"traceparent\":\"" TP "\""));
  assert_null(strstr(s, "tracestate"));
  free(s);
}

/* The engine clock's time says so (decision 0019): an Integer extension
** attribute, only when the wall clock was behind; the decoder ignores it. */
static void test_encode_wall_behind(void** state) {
  ob_event_t ev = sample();
  ob__cloudevent_t ce;
  char err[128];
  char* s;
  cJSON* doc;
  cJSON* a;
  (void)state;
  s = ob__cloudevent_encode(&ev, "urn:x", NULL);
  assert_null(strstr(s, "obwallbehindms"));
  free(s);
  ev.wall_behind_ms = 86400000;
  s = ob__cloudevent_encode(&ev, "urn:x", NULL);
  doc = cJSON_Parse(s);
  assert_non_null(doc);
  a = cJSON_GetObjectItem(doc, "obwallbehindms");
  assert_non_null(a);
  assert_true(cJSON_IsNumber(a));
  assert_true(a->valuedouble == 86400000.0);
  cJSON_Delete(doc);
  assert_int_equal(ob__cloudevent_decode(s, strlen(s), &ce, err, sizeof err), 0);
  ob__cloudevent_free(&ce);
  free(s);
}

/* ---- round trips ------------------------------------------------------- */

static void test_round_trip(void** state) {
  ob_event_t ev = sample();
  size_t len;
  char* s = ob__cloudevent_encode(&ev, "urn:x", &len);
  ob__cloudevent_t ce;
  (void)state;
  ok(s, &ce);
  assert_string_equal(ce.id, ev.id);
  assert_string_equal(ce.source, "urn:x");
  assert_string_equal(ce.type, ev.event_type);
  assert_string_equal(ce.content_type, "application/json");
  assert_int_equal(ce.data_is_json, 1);
  assert_int_equal(ce.data_len, ev.payload_len);
  assert_memory_equal(ce.data, ev.payload, ev.payload_len);
  assert_string_equal(ce.traceparent, "");
  assert_string_equal(ce.tracestate, "");
  assert_int_equal(ce.trace_dropped, 0);
  ob__cloudevent_free(&ce);
  ob__cloudevent_free(&ce); /* idempotent */
  ob__cloudevent_free(NULL);
  free(s);
}

static void test_round_trip_trace(void** state) {
  ob_event_t ev = sample();
  ob__cloudevent_t ce;
  char* s;
  (void)state;
  ev.traceparent = TP;
  ev.tracestate = "rojo=00f067aa0ba902b7";
  s = ob__cloudevent_encode(&ev, "https://pos.example/till/7", NULL);
  ok(s, &ce);
  assert_string_equal(ce.traceparent, TP);
  assert_string_equal(ce.tracestate, "rojo=00f067aa0ba902b7");
  assert_int_equal(ce.trace_dropped, 0);
  assert_string_equal(ce.source, "https://pos.example/till/7");
  ob__cloudevent_free(&ce);
  free(s);
}

/* A source of any length: both ways. The decoder once decoded every string
** into a 256-byte buffer and refused a longer source with "source must be
** a non-empty string". */
static void test_long_sources(void** state) {
  static const size_t sizes[] = {255, 256, 300, 5000};
  (void)state;
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    size_t n = sizes[k];
    char* src = malloc(n + 1);
    ob_event_t ev = sample();
    ob__cloudevent_t ce;
    char* s;
    memcpy(src, "urn:oncebox:", 12);
    for (size_t i = 12; i < n; i++) src[i] = (char)('a' + i % 26);
    src[n] = '\0';
    s = ob__cloudevent_encode(&ev, src, NULL);
    assert_non_null(s);
    ok(s, &ce);
    assert_int_equal(strlen(ce.source), n);
    assert_string_equal(ce.source, src);
    ob__cloudevent_free(&ce);
    free(s);
    /* and with an escape in it ('/' as \/), which decodes shorter */
    s = malloc(n + 128);
    snprintf(s, n + 128,
             "{\"specversion\":\"1.0\",\"id\":\"1\",\"type\":\"T\","
             "\"source\":\"%s\\/x\"}",
             src);
    ok(s, &ce);
    assert_int_equal(strlen(ce.source), n + 2);
    assert_memory_equal(ce.source, src, n);
    assert_string_equal(ce.source + n, "/x");
    ob__cloudevent_free(&ce);
    free(s);
    free(src);
  }
}

/* ---- refusals ---------------------------------------------------------- */

#define OK_ID "\"id\":\"0190b6d8-3ae7-7ca2-a653-6ff2d5a6f230\""

static void test_decode_refusals(void** state) {
  (void)state;
  expect_reason("nope", "body is not valid JSON");
  expect_reason("[]", "body is not a JSON object");
  expect_reason("{\"specversion\":\"0.3\"," OK_ID ",\"source\":\"s\",\"type\":\"T\",\"data\":{}}",
                "specversion must be \"1.0\"");
  expect_reason("{\"id\":\"1\",\"source\":\"s\",\"type\":\"T\"}",
                "specversion must be \"1.0\"");
  expect_reason("{\"specversion\":\"1.0\",\"id\":\"\",\"source\":\"s\",\"type\":\"T\",\"data\":{}}",
                "id must be a non-empty string");
  expect_reason("{\"specversion\":\"1.0\",\"id\":42,\"source\":\"s\",\"type\":\"T\"}",
                "id must be a non-empty string");
  expect_reason("{\"specversion\":\"1.0\",\"id\":null,\"source\":\"s\",\"type\":\"T\"}",
                "id must be a non-empty string");
  expect_reason("{\"specversion\":\"1.0\",\"source\":\"s\",\"type\":\"T\"}",
                "id must be a non-empty string");
  expect_reason("{\"specversion\":\"1.0\"," OK_ID ",\"source\":\"\",\"type\":\"T\",\"data\":{}}",
                "source must be a non-empty string");
  expect_reason("{\"specversion\":\"1.0\"," OK_ID ",\"type\":\"T\"}",
                "source must be a non-empty string");
  expect_reason("{\"specversion\":\"1.0\"," OK_ID ",\"source\":\"s\",\"type\":\"a b\",\"data\":{}}",
                "type must be printable ASCII");
  expect_reason("{\"specversion\":\"1.0\"," OK_ID ",\"source\":\"s\",\"type\":\"\"}",
                "type must be 1..128 characters");
  expect_reason("{\"specversion\":\"1.0\"," OK_ID ",\"source\":\"s\"}",
                "type must be 1..128 characters");
  expect_reason("{\"specversion\":\"1.0\"," OK_ID ",\"source\":\"s\",\"type\":\"caf\\u00e9\"}",
                "type must be printable ASCII");
  expect_reason("{\"specversion\":\"1.0\"," OK_ID "," OK_ID ",\"source\":\"s\",\"type\":\"T\","
                "\"data\":{}}",
                "duplicate CloudEvents attribute id");
  expect_reason(EV(",\"subject\":\"a\",\"subject\":\"b\""),
                "duplicate CloudEvents attribute subject");
  expect_reason(EV(",\"data\":1,\"data_base64\":\"AA==\""),
                "data and data_base64 are both present (a CloudEvent has at "
                "most one)");
  expect_reason(EV(",\"data\":null,\"data_base64\":\"AA==\""),
                "data and data_base64 are both present (a CloudEvent has at "
                "most one)");
}

static void test_type_length(void** state) {
  char body[512], t[200];
  ob__cloudevent_t ce;
  (void)state;
  memset(t, 'T', 128);
  t[128] = '\0';
  snprintf(body, sizeof body,
           "{\"specversion\":\"1.0\",\"id\":\"1\",\"source\":\"s\","
           "\"type\":\"%s\"}", t);
  ok(body, &ce);
  assert_int_equal(strlen(ce.type), 128);
  ob__cloudevent_free(&ce);
  t[128] = 'T';
  t[129] = '\0';
  snprintf(body, sizeof body,
           "{\"specversion\":\"1.0\",\"id\":\"1\",\"source\":\"s\","
           "\"type\":\"%s\"}", t);
  expect_reason(body, "type must be 1..128 characters");
}

/* String attributes: no C0/C1 control character, no noncharacter; the
** reason names the attribute. */
static void test_string_attributes(void** state) {
  (void)state;
  expect_reason("{\"specversion\":\"1.0\",\"id\":\"a\\u0000b\",\"source\":\"s\",\"type\":\"T\"}",
                "id holds the control character U+0000 at byte 1 (a "
                "CloudEvents String has none)");
  expect_reason("{\"specversion\":\"1.0\",\"id\":\"a\\nb\",\"source\":\"s\",\"type\":\"T\"}",
                "id holds the control character U+000A at byte 1 (a "
                "CloudEvents String has none)");
  expect_reason("{\"specversion\":\"1.0\",\"id\":\"\x7f\",\"source\":\"s\",\"type\":\"T\"}",
                "id holds the control character U+007F at byte 0 (a "
                "CloudEvents String has none)");
  expect_reason("{\"specversion\":\"1.0\",\"id\":\"\\u0085\",\"source\":\"s\",\"type\":\"T\"}",
                "id holds the control character U+0085 at byte 0 (a "
                "CloudEvents String has none)");
  expect_reason("{\"specversion\":\"1.0\",\"id\":\"x\xc2\x9f\",\"source\":\"s\",\"type\":\"T\"}",
                "id holds the control character U+009F at byte 1 (a "
                "CloudEvents String has none)");
  expect_reason("{\"specversion\":\"1.0\",\"id\":\"\\uFFFF\",\"source\":\"s\",\"type\":\"T\"}",
                "id holds the noncharacter U+FFFF at byte 0 (a CloudEvents "
                "String has none)");
  expect_reason("{\"specversion\":\"1.0\",\"id\":\"\\ufdd0\",\"source\":\"s\",\"type\":\"T\"}",
                "id holds the noncharacter U+FDD0 at byte 0 (a CloudEvents "
                "String has none)");
  expect_reason("{\"specversion\":\"1.0\",\"id\":\"\\ud83f\\udffe\",\"source\":\"s\",\"type\":\"T\"}",
                "id holds the noncharacter U+1FFFE at byte 0 (a CloudEvents "
                "String has none)");
  expect_reason("{\"specversion\":\"1.0\",\"id\":\"1\",\"source\":\"urn:\\t\",\"type\":\"T\"}",
                "source holds the control character U+0009 at byte 4 (a "
                "CloudEvents String has none)");
  expect_reason("{\"specversion\":\"1.0\",\"id\":\"1\",\"source\":\"s\",\"type\":\"T\\r\"}",
                "type holds the control character U+000D at byte 1 (a "
                "CloudEvents String has none)");
  expect_reason(EV(",\"subject\":\"x\\u001fy\""),
                "subject holds the control character U+001F at byte 1 (a "
                "CloudEvents String has none)");
  expect_reason(EV(",\"subject\":\"\""), "subject must be a non-empty string");
  expect_reason(EV(",\"subject\":7"), "subject must be a non-empty string");
  expect_reason(EV(",\"datacontenttype\":\"text/plain\\u0000\""),
                "datacontenttype holds the control character U+0000 at byte "
                "10 (a CloudEvents String has none)");
  expect_reason(EV(",\"datacontenttype\":\"\""),
                "datacontenttype must be a non-empty string");
  expect_reason(EV(",\"datacontenttype\":[]"),
                "datacontenttype must be a non-empty string");
  {
    /* allowed: U+00A0 right after the C1 range, U+FFFD, an emoji */
    ob__cloudevent_t ce;
    ok(EV(",\"subject\":\"\\u00a0\\ufffd\\ud83d\\ude00\",\"subject2\":\"\\u0001\""),
       &ce);
    ob__cloudevent_free(&ce);
  }
}

/* source is a URI-reference (RFC 3986): the sentence says where it is not. */
static void test_source_uri_reference(void** state) {
  static const char* const good[] = {
      "urn:x", "/mycontext", "https://github.com/cloudevents",
      "mailto:cncf-wg-serverless@lists.cncf.io",
      "urn:uuid:6e8bc430-9c3a-11d9-9669-0800200c9a66",
      "/sensors/tn-1234567/alerts", "1-555-123-4567", "//[::1]:8080/x",
      "a%20b", "?q#f"};
  (void)state;
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    char body[256];
    ob__cloudevent_t ce;
    snprintf(body, sizeof body,
             "{\"specversion\":\"1.0\",\"id\":\"1\",\"source\":\"%s\","
             "\"type\":\"T\"}", good[i]);
    ok(body, &ce);
    assert_string_equal(ce.source, good[i]);
    ob__cloudevent_free(&ce);
  }
  expect_reason("{\"specversion\":\"1.0\",\"id\":\"1\",\"source\":\"urn:pos terminal 7\",\"type\":\"T\"}",
                "source is not a URI-reference: a space at byte 7 is not "
                "allowed in a URI-reference (percent-encode it as %20)");
  expect_reason("{\"specversion\":\"1.0\",\"id\":\"1\",\"source\":\"https://example.com/my events\",\"type\":\"T\"}",
                "source is not a URI-reference: a space at byte 22 is not "
                "allowed in a URI-reference (percent-encode it as %20)");
  expect_reason("{\"specversion\":\"1.0\",\"id\":\"1\",\"source\":\"a%zz\",\"type\":\"T\"}",
                "source is not a URI-reference: '%' at byte 1 is not "
                "followed by two hex digits");
  expect_reason("{\"specversion\":\"1.0\",\"id\":\"1\",\"source\":\"/caf\\u00e9\",\"type\":\"T\"}",
                "source is not a URI-reference: a non-ASCII byte (0xc3) at "
                "byte 4 is not allowed in a URI-reference (percent-encode "
                "each UTF-8 byte, here as %C3)");
  expect_reason("{\"specversion\":\"1.0\",\"id\":\"1\",\"source\":\"1a:b\",\"type\":\"T\"}",
                "source is not a URI-reference: ':' at byte 2 is not allowed "
                "in the first segment of a relative reference (the text "
                "before it is not a scheme: a letter, then letters, digits, "
                "'+', '-' or '.')");
  {
    /* at the end of a 5000-byte source: the offset is exact */
    size_t n = 5000;
    char* body = malloc(n + 128);
    int k = snprintf(body, 128, "{\"specversion\":\"1.0\",\"id\":\"1\",\"type\":\"T\",\"source\":\"urn:");
    memset(body + k, 'a', n - 4);
    body[k + n - 4 - 1] = '|';
    strcpy(body + k + n - 4, "\"}");
    expect_reason(body, "source is not a URI-reference: '|' at byte 4999 is "
                        "not allowed in the path of a URI-reference "
                        "(percent-encode it as %7C)");
    free(body);
  }
}

/* ---- data -------------------------------------------------------------- */

static void test_decode_data_span(void** state) {
  const char* body = "{ \"data\" : [1, {\"a\":\"}\"}] ,\"specversion\":\"1.0\","
                     OK_ID ",\"source\":\"s\",\"type\":\"T\"}";
  ob__cloudevent_t ce;
  (void)state;
  assert_int_equal(ob__cloudevent_decode(body, strlen(body), &ce, NULL, 0), 0);
  assert_int_equal(ce.data_len, strlen("[1, {\"a\":\"}\"}]"));
  assert_memory_equal(ce.data, "[1, {\"a\":\"}\"}]", ce.data_len);
  assert_int_equal(ce.data_is_json, 1);
  assert_null(ce.content_type);
  ob__cloudevent_free(&ce);
}

static void data_is(const char* body, const char* bytes, size_t n, int json) {
  ob__cloudevent_t ce;
  ok(body, &ce);
  if (ce.data_len != n || memcmp(ce.data, bytes, n) != 0)
    fail_msg("data '%.*s' (%zu), want '%.*s' (%zu)\n  %s", (int)ce.data_len,
             ce.data, ce.data_len, (int)n, bytes, n, body);
  assert_int_equal(ce.data_is_json, json);
  ob__cloudevent_free(&ce);
}
#define DATA_IS(body, lit, json) data_is(body, lit, sizeof(lit) - 1, json)

static void test_content_types(void** state) {
  (void)state;
  /* JSON content types: the raw JSON text, a string with its quotes */
  DATA_IS(EV(",\"data\":\"s\""), "\"s\"", 1);
  DATA_IS(EV(",\"datacontenttype\":\"application/json\",\"data\":\"s\""),
          "\"s\"", 1);
  DATA_IS(EV(",\"datacontenttype\":\"application/json; charset=utf-8\",\"data\":\"s\""),
          "\"s\"", 1);
  DATA_IS(EV(",\"datacontenttype\":\"Application/JSON\",\"data\":\"s\""),
          "\"s\"", 1);
  DATA_IS(EV(",\"datacontenttype\":\"application/cloudevents+json\",\"data\":\"s\""),
          "\"s\"", 1);
  DATA_IS(EV(",\"datacontenttype\":\"application/vnd.api+JSON ;v=1\",\"data\":\"s\""),
          "\"s\"", 1);
  DATA_IS(EV(",\"datacontenttype\":\"text/json\",\"data\":\"s\""), "\"s\"", 1);
  DATA_IS(EV(",\"datacontenttype\":null,\"data\":\"s\""), "\"s\"", 1);
  DATA_IS(EV(",\"data\":null"), "null", 1);
  DATA_IS(EV(",\"data\": {\"a\" : [ 1 ] } \n"), "{\"a\" : [ 1 ] }", 1);
  /* not JSON: a string's decoded bytes */
  DATA_IS(EV(",\"datacontenttype\":\"text/plain\",\"data\":\"hello\""), "hello",
          0);
  DATA_IS(EV(",\"datacontenttype\":\"text/plain\",\"data\":\"a\\nb\\u00e9\\ud83d\\ude00\\\"\""),
          "a\nb\xc3\xa9\xf0\x9f\x98\x80\"", 0);
  DATA_IS(EV(",\"datacontenttype\":\"application/octet-stream\",\"data\":\"x\\u0000y\""),
          "x\0y", 0);
  DATA_IS(EV(",\"datacontenttype\":\"application/jsonx\",\"data\":\"s\""), "s",
          0);
  DATA_IS(EV(",\"datacontenttype\":\"application/json-seq\",\"data\":\"s\""),
          "s", 0);
  DATA_IS(EV(",\"datacontenttype\":\"json\",\"data\":\"s\""), "s", 0);
  DATA_IS(EV(",\"datacontenttype\":\"text/plain\",\"data\":\"\""), "", 0);
  /* not JSON and not a string: the raw JSON text */
  DATA_IS(EV(",\"datacontenttype\":\"text/plain\",\"data\":{\"a\":1}"),
          "{\"a\":1}", 1);
  DATA_IS(EV(",\"datacontenttype\":\"text/plain\",\"data\":12.5"), "12.5", 1);
  DATA_IS(EV(",\"datacontenttype\":\"text/plain\",\"data\":null"), "null", 1);
  /* neither data nor data_base64 */
  DATA_IS(EV(""), "", 0);
  DATA_IS(EV(",\"datacontenttype\":\"text/plain\""), "", 0);
  DATA_IS(EV(",\"data_base64\":null"), "", 0);
  {
    ob__cloudevent_t ce;
    ok(EV(",\"datacontenttype\":\"text/plain; charset=utf-8\",\"data\":\"x\""), &ce);
    assert_string_equal(ce.content_type, "text/plain; charset=utf-8");
    ob__cloudevent_free(&ce);
  }
}

static void test_data_base64(void** state) {
  (void)state;
  DATA_IS(EV(",\"data_base64\":\"AAEC/w==\""), "\x00\x01\x02\xff", 0);
  DATA_IS(EV(",\"data_base64\":\"aGVsbG8=\""), "hello", 0);
  DATA_IS(EV(",\"data_base64\":\"aGVsbG8h\""), "hello!", 0);
  DATA_IS(EV(",\"data_base64\":\"aGk=\""), "hi", 0);
  DATA_IS(EV(",\"data_base64\":\"\""), "", 0);
  DATA_IS(EV(",\"data_base64\":\"AAEC\\/w==\""), "\x00\x01\x02\xff", 0);
  DATA_IS(EV(",\"datacontenttype\":\"application/json\",\"data_base64\":\"e30=\""),
          "{}", 0);
  DATA_IS(EV(",\"data\":null,\"data_base64\":null"), "null", 1);
  expect_reason(EV(",\"data_base64\":\"AAEC/w=\""),
                "data_base64 is not base64: its length, 7, is not a multiple "
                "of 4 (base64 must be padded with '=')");
  expect_reason(EV(",\"data_base64\":\"AAEC/w\""),
                "data_base64 is not base64: its length, 6, is not a multiple "
                "of 4 (base64 must be padded with '=')");
  expect_reason(EV(",\"data_base64\":\"AAEC\\n/w==\""),
                "data_base64 is not base64: whitespace (0x0a) at byte 4 is "
                "not allowed in base64");
  expect_reason(EV(",\"data_base64\":\"AAEC /w=\""),
                "data_base64 is not base64: whitespace (0x20) at byte 4 is "
                "not allowed in base64");
  expect_reason(EV(",\"data_base64\":\"AAEC_w==\""),
                "data_base64 is not base64: '_' at byte 4 is of the URL-safe "
                "alphabet (base64 here is the standard one, with '+' and '/')");
  expect_reason(EV(",\"data_base64\":\"AA==AA==\""),
                "data_base64 is not base64: '=' at byte 2 is padding before "
                "the end");
  expect_reason(EV(",\"data_base64\":\"AA*A\""),
                "data_base64 is not base64: '*' at byte 2 is not a base64 "
                "character");
  expect_reason(EV(",\"data_base64\":\"\\u00e9AAA\""),
                "data_base64 is not base64: the byte 0xc3 at byte 0 is not a "
                "base64 character");
  expect_reason(EV(",\"data_base64\":[1]"),
                "data_base64 must be a string (base64)");
}

/* ---- what the official cloudevents npm SDK (10.0.0) writes ----------- */
/* Bodies as new CloudEvent({...}).toString() printed them (and
** HTTP.structured's body), with their generated ids and times. */
static void test_npm_sdk_events(void** state) {
  ob__cloudevent_t ce;
  (void)state;
  /* data: new Uint8Array([0, 1, 2, 255]) */
  ok("{\"id\":\"86f34d6f-ae50-4d6a-a8b6-5effe20844d6\",\"time\":\"2026-12-01T22:48:38.983Z\","
     "\"type\":\"t\",\"source\":\"urn:x\",\"specversion\":\"1.0\",\"data_base64\":\"AAEC/w==\"}",
     &ce);
  assert_int_equal(ce.data_len, 4);
  assert_memory_equal(ce.data, "\x00\x01\x02\xff", 4);
  assert_int_equal(ce.data_is_json, 0);
  assert_string_equal(ce.id, "86f34d6f-ae50-4d6a-a8b6-5effe20844d6");
  assert_null(ce.content_type);
  ob__cloudevent_free(&ce);
  /* datacontenttype: "text/plain", data: "hello" */
  ok("{\"id\":\"1a3049a7-3fbc-43a6-8aac-34e34844b682\",\"time\":\"2026-12-01T23:12:29.189Z\","
     "\"type\":\"t\",\"source\":\"urn:x\",\"specversion\":\"1.0\",\"datacontenttype\":\"text/plain\","
     "\"data\":\"hello\"}",
     &ce);
  assert_int_equal(ce.data_len, 5);
  assert_string_equal(ce.data, "hello");
  assert_int_equal(ce.data_is_json, 0);
  assert_string_equal(ce.content_type, "text/plain");
  ob__cloudevent_free(&ce);
  /* sequential ids "1" and "2": no UUID needed */
  ok("{\"id\":\"1\",\"time\":\"2026-12-01T23:12:29.191Z\",\"type\":\"com.example.t\","
     "\"source\":\"/pos/1\",\"specversion\":\"1.0\",\"data\":{\"a\":1}}",
     &ce);
  assert_string_equal(ce.id, "1");
  assert_string_equal(ce.source, "/pos/1");
  assert_string_equal(ce.data, "{\"a\":1}");
  assert_int_equal(ce.data_is_json, 1);
  ob__cloudevent_free(&ce);
  ok("{\"id\":\"2\",\"time\":\"2026-12-01T23:12:29.191Z\",\"type\":\"com.example.t\","
     "\"source\":\"/pos/1\",\"specversion\":\"1.0\",\"data\":{\"a\":2}}",
     &ce);
  assert_string_equal(ce.id, "2");
  ob__cloudevent_free(&ce);
  /* a unicode id, raw UTF-8 as JSON.stringify leaves it; data: null */
  ok("{\"id\":\"\xc3\xbcn\xc3\xaf" "c\xc3\xb8" "d\xc3\xa9-\xe2\x9c\x93-\xf0\x9f\x98\x80\","
     "\"time\":\"2026-12-01T23:12:29.191Z\",\"type\":\"t\",\"source\":\"urn:x\","
     "\"specversion\":\"1.0\",\"data\":null}",
     &ce);
  assert_string_equal(ce.id, "\xc3\xbcn\xc3\xaf" "c\xc3\xb8" "d\xc3\xa9-\xe2\x9c\x93-\xf0\x9f\x98\x80");
  assert_string_equal(ce.data, "null");
  assert_int_equal(ce.data_is_json, 1);
  ob__cloudevent_free(&ce);
  /* the same id \u-escaped decodes to the same bytes */
  ok("{\"id\":\"\\u00fcn\\u00efc\\u00f8d\\u00e9-\\u2713-\\ud83d\\ude00\",\"type\":\"t\","
     "\"source\":\"urn:x\",\"specversion\":\"1.0\"}",
     &ce);
  assert_string_equal(ce.id, "\xc3\xbcn\xc3\xaf" "c\xc3\xb8" "d\xc3\xa9-\xe2\x9c\x93-\xf0\x9f\x98\x80");
  ob__cloudevent_free(&ce);
  /* traceparent and tracestate, after data */
  ok("{\"id\":\"1882c41a-a7a2-44dd-a407-d123be9be0c1\",\"time\":\"2026-12-01T23:12:29.191Z\","
     "\"type\":\"t\",\"source\":\"urn:x\",\"specversion\":\"1.0\",\"data\":{},"
     "\"traceparent\":\"" TP "\",\"tracestate\":\"rojo=00f067aa0ba902b7\"}",
     &ce);
  assert_string_equal(ce.traceparent, TP);
  assert_string_equal(ce.tracestate, "rojo=00f067aa0ba902b7");
  assert_int_equal(ce.trace_dropped, 0);
  ob__cloudevent_free(&ce);
  /* no data at all */
  ok("{\"id\":\"fc13fc0e-d0e8-4dcf-854b-b8623d7b528a\",\"time\":\"2026-12-01T23:12:29.191Z\","
     "\"type\":\"t\",\"source\":\"urn:x\",\"specversion\":\"1.0\"}",
     &ce);
  assert_int_equal(ce.data_len, 0);
  assert_string_equal(ce.data, "");
  assert_int_equal(ce.data_is_json, 0);
  ob__cloudevent_free(&ce);
  /* application/xml with a string */
  ok("{\"id\":\"7ddec2f1-a897-4dad-bcd6-4f8bad018c0b\",\"time\":\"2026-12-01T23:12:29.191Z\","
     "\"type\":\"t\",\"source\":\"urn:x\",\"specversion\":\"1.0\","
     "\"datacontenttype\":\"application/xml\",\"data\":\"<much wow=\\\"xml\\\"/>\"}",
     &ce);
  assert_string_equal(ce.data, "<much wow=\"xml\"/>");
  assert_int_equal(ce.data_is_json, 0);
  ob__cloudevent_free(&ce);
  /* a string without datacontenttype: JSON, quotes kept */
  ok("{\"id\":\"ff30959b-a647-45eb-91a0-8f4f2a2181ff\",\"time\":\"2026-12-01T23:12:29.191Z\","
     "\"type\":\"t\",\"source\":\"urn:x\",\"specversion\":\"1.0\",\"data\":\"just a string\"}",
     &ce);
  assert_string_equal(ce.data, "\"just a string\"");
  assert_int_equal(ce.data_is_json, 1);
  ob__cloudevent_free(&ce);
  /* json-format 3.2's XML example (with its null extension) */
  ok("{\n    \"specversion\" : \"1.0\",\n    \"type\" : \"com.example.someevent\",\n"
     "    \"source\" : \"/mycontext\",\n    \"id\" : \"B234-1234-1234\",\n"
     "    \"time\" : \"2018-04-05T17:31:00Z\",\n    \"comexampleextension1\" : \"value\",\n"
     "    \"comexampleothervalue\" : 5,\n    \"unsetextension\": null,\n"
     "    \"datacontenttype\" : \"application/xml\",\n    \"data\" : \"<much wow=\\\"xml\\\"/>\"\n}",
     &ce);
  assert_string_equal(ce.id, "B234-1234-1234");
  assert_string_equal(ce.data, "<much wow=\"xml\"/>");
  ob__cloudevent_free(&ce);
}

/* ---- trace context ----------------------------------------------------- */

static void trace_is(const char* body, const char* tp, const char* ts,
                     int dropped) {
  ob__cloudevent_t ce;
  ok(body, &ce);
  if (strcmp(ce.traceparent, tp) != 0 || strcmp(ce.tracestate, ts) != 0 ||
      ce.trace_dropped != dropped)
    fail_msg("got '%s' '%s' %d, want '%s' '%s' %d\n  %s", ce.traceparent,
             ce.tracestate, ce.trace_dropped, tp, ts, dropped, body);
  ob__cloudevent_free(&ce);
}

static void test_trace_context(void** state) {
  (void)state;
  trace_is(EV(""), "", "", 0);
  trace_is(EV(",\"traceparent\":\"" TP "\""), TP, "", 0);
  trace_is(EV(",\"traceparent\":\"" TP "\",\"tracestate\":\"a=1,b=2\""), TP,
           "a=1,b=2", 0);
  /* a later version: carried as 00 */
  trace_is(EV(",\"traceparent\":\"cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-xyz\""),
           TP, "", 0);
  /* null: absent; empty tracestate: carries nothing */
  trace_is(EV(",\"traceparent\":null,\"tracestate\":null"), "", "", 0);
  trace_is(EV(",\"traceparent\":\"" TP "\",\"tracestate\":\"\""), TP, "", 0);
  /* dropped, never refused */
  trace_is(EV(",\"traceparent\":\"00-00000000000000000000000000000000-00f067aa0ba902b7-01\""),
           "", "", 1);
  trace_is(EV(",\"traceparent\":\"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01\","
              "\"tracestate\":\"a=1\""),
           "", "", 1);
  trace_is(EV(",\"traceparent\":\"\""), "", "", 1);
  trace_is(EV(",\"traceparent\":55"), "", "", 1);
  trace_is(EV(",\"traceparent\":\"" TP "\\n\""), "", "", 1);
  trace_is(EV(",\"tracestate\":\"a=1\""), "", "", 1);
  trace_is(EV(",\"traceparent\":\"" TP "\",\"tracestate\":\"A=1\""), TP, "", 1);
  trace_is(EV(",\"traceparent\":\"" TP "\",\"tracestate\":{}"), TP, "", 1);
  trace_is(EV(",\"traceparent\":\"" TP "\",\"tracestate\":\"a=1,a=2\""), TP, "",
           1);
  /* a duplicate member: which one counts is unclear, so neither */
  trace_is(EV(",\"traceparent\":\"" TP "\",\"traceparent\":\"" TP "\""), "", "",
           1);
  /* the longest tracestate carried, and one byte more */
  {
    char body[1200], st[OB__TRACESTATE_MAX + 2];
    memcpy(st, "a=", 2);
    memset(st + 2, 'v', 256);
    st[258] = ',';
    memcpy(st + 259, "b=", 2);
    memset(st + 261, 'w', OB__TRACESTATE_MAX - 261);
    st[OB__TRACESTATE_MAX] = '\0';
    snprintf(body, sizeof body, EV(",\"traceparent\":\"%s\",\"tracestate\":\"%s\""),
             TP, st);
    trace_is(body, TP, st, 0);
    st[OB__TRACESTATE_MAX] = 'w';
    st[OB__TRACESTATE_MAX + 1] = '\0';
    snprintf(body, sizeof body, EV(",\"traceparent\":\"%s\",\"tracestate\":\"%s\""),
             TP, st);
    trace_is(body, TP, "", 1);
  }
}

/* ---- buffers and memory ------------------------------------------------ */

static void test_reason_buffer(void** state) {
  ob__cloudevent_t ce;
  char small[6];
  const char* bad = "{\"specversion\":\"2.0\"}";
  (void)state;
  memset(small, 'x', sizeof small);
  assert_int_equal(ob__cloudevent_decode(bad, strlen(bad), &ce, small, 0), -1);
  assert_int_equal(small[0], 'x');
  assert_int_equal(ob__cloudevent_decode(bad, strlen(bad), &ce, NULL, 0), -1);
  assert_int_equal(
      ob__cloudevent_decode(bad, strlen(bad), &ce, small, sizeof small), -1);
  assert_string_equal(small, "specv");
  /* len, not the NUL: a body cut short is not JSON */
  assert_int_equal(ob__cloudevent_decode(EV(""), strlen(EV("")) - 1, &ce,
                                         NULL, 0),
                   -1);
}

/* Every allocation of a decode that makes many, failed in turn: OB_ENOMEM
** with its reason, nothing left allocated (ASan and cmocka's checks), and
** the struct empty. */
static void test_out_of_memory(void** state) {
  const char* body =
      EV(",\"subject\":\"s\",\"datacontenttype\":\"text/plain\",\"data_base64\":\"aGk=\","
         "\"traceparent\":\"" TP "\",\"tracestate\":\"a=1\"");
  const char* body2 = EV(",\"datacontenttype\":\"text/plain\",\"data\":\"hi\"");
  const char* body3 = EV("");
  const char* bodies[] = {body, body2, body3};
  (void)state;
  for (size_t b = 0; b < 3; b++) {
    long k;
    for (k = 1;; k++) {
      ob__cloudevent_t ce;
      char reason[128] = "";
      int rc;
      g_mallocs = 0;
      g_fail_at = k;
      rc = ob__cloudevent_decode(bodies[b], strlen(bodies[b]), &ce, reason,
                                 sizeof reason);
      g_fail_at = 0;
      if (rc == 0) {
        ob__cloudevent_free(&ce);
        break;
      }
      assert_int_equal(rc, OB_ENOMEM);
      assert_string_equal(reason, "out of memory decoding a CloudEvent");
      assert_null(ce.id);
      assert_null(ce.data);
      ob__cloudevent_free(&ce);
    }
    assert_true(k > 3); /* it did fail some */
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_encode_fields),
      cmocka_unit_test(test_encode_bytes_without_trace),
      cmocka_unit_test(test_encode_escapes_source),
      cmocka_unit_test(test_encode_trace),
      cmocka_unit_test(test_encode_wall_behind),
      cmocka_unit_test(test_round_trip),
      cmocka_unit_test(test_round_trip_trace),
      cmocka_unit_test(test_long_sources),
      cmocka_unit_test(test_decode_refusals),
      cmocka_unit_test(test_type_length),
      cmocka_unit_test(test_string_attributes),
      cmocka_unit_test(test_source_uri_reference),
      cmocka_unit_test(test_decode_data_span),
      cmocka_unit_test(test_content_types),
      cmocka_unit_test(test_data_base64),
      cmocka_unit_test(test_npm_sdk_events),
      cmocka_unit_test(test_trace_context),
      cmocka_unit_test(test_reason_buffer),
      cmocka_unit_test(test_out_of_memory),
  };
  return cmocka_run_group_tests_name("cloudevents", tests, NULL, NULL);
}
