/* CloudEvents encoding of outbox events, and decoding on the consumer side. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "core/relay/cloudevents.h"

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

static void test_round_trip(void** state) {
  ob_event_t ev = sample();
  size_t len;
  char* s = ob__cloudevent_encode(&ev, "urn:x", &len);
  ob__cloudevent_t ce;
  char reason[128];
  (void)state;
  assert_int_equal(ob__cloudevent_decode(s, len, &ce, reason, sizeof reason), 0);
  assert_string_equal(ce.id, ev.id);
  assert_string_equal(ce.type, ev.event_type);
  assert_int_equal(ce.data_len, ev.payload_len);
  assert_memory_equal(ce.data, ev.payload, ev.payload_len);
  free(s);
}

static void expect_reason(const char* body, const char* want) {
  ob__cloudevent_t ce;
  char reason[128] = "";
  assert_int_equal(ob__cloudevent_decode(body, strlen(body), &ce, reason, sizeof reason), -1);
  assert_string_equal(reason, want);
}

#define OK_ID "\"id\":\"0190b6d8-3ae7-7ca2-a653-6ff2d5a6f230\""

static void test_decode_refusals(void** state) {
  (void)state;
  expect_reason("nope", "body is not valid JSON");
  expect_reason("[]", "body is not a JSON object");
  expect_reason("{\"specversion\":\"0.3\"," OK_ID ",\"source\":\"s\",\"type\":\"T\",\"data\":{}}",
                "specversion must be \"1.0\"");
  expect_reason("{\"specversion\":\"1.0\",\"id\":\"42\",\"source\":\"s\",\"type\":\"T\",\"data\":{}}",
                "id must be a UUID (the event's stable id)");
  expect_reason("{\"specversion\":\"1.0\"," OK_ID ",\"source\":\"\",\"type\":\"T\",\"data\":{}}",
                "source must be a non-empty string");
  expect_reason("{\"specversion\":\"1.0\"," OK_ID ",\"source\":\"s\",\"type\":\"a b\",\"data\":{}}",
                "type must be printable ASCII");
  expect_reason("{\"specversion\":\"1.0\"," OK_ID ",\"source\":\"s\",\"type\":\"T\"}",
                "missing data");
  expect_reason("{\"specversion\":\"1.0\"," OK_ID ",\"source\":\"s\",\"type\":\"T\","
                "\"data_base64\":\"AA==\"}",
                "data_base64 is not supported");
  expect_reason("{\"specversion\":\"1.0\"," OK_ID ",\"source\":\"s\",\"type\":\"T\","
                "\"datacontenttype\":\"text/plain\",\"data\":{}}",
                "datacontenttype must be JSON");
  expect_reason("{\"specversion\":\"1.0\"," OK_ID "," OK_ID ",\"source\":\"s\",\"type\":\"T\","
                "\"data\":{}}",
                "duplicate CloudEvents attribute id");
}

static void test_decode_data_span(void** state) {
  const char* body = "{ \"data\" : [1, {\"a\":\"}\"}] ,\"specversion\":\"1.0\","
                     OK_ID ",\"source\":\"s\",\"type\":\"T\"}";
  ob__cloudevent_t ce;
  (void)state;
  assert_int_equal(ob__cloudevent_decode(body, strlen(body), &ce, NULL, 0), 0);
  assert_int_equal(ce.data_len, strlen("[1, {\"a\":\"}\"}]"));
  assert_memory_equal(ce.data, "[1, {\"a\":\"}\"}]", ce.data_len);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_encode_fields),
      cmocka_unit_test(test_encode_escapes_source),
      cmocka_unit_test(test_round_trip),
      cmocka_unit_test(test_decode_refusals),
      cmocka_unit_test(test_decode_data_span),
  };
  return cmocka_run_group_tests_name("cloudevents", tests, NULL, NULL);
}
