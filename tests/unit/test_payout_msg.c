/* SPDX-License-Identifier: Apache-2.0 */
/* PaymentCaptured parsing (every reason) and the MerchantPayoutCreated
** payload. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "modules/payout/payout_msg.h"
#include "core/util/json_check.h"

#define PID "3f2c1a9e-8b7d-4c6e-9f10-a1b2c3d4e5f6"
#define MID "7a8b9c0d-1e2f-4a3b-8c4d-5e6f7a8b9c0d"

/* A body with the amount's JSON text spliced in. */
static const char* body_amount(const char* amount) {
  static char buf[512];
  snprintf(buf, sizeof buf,
           "{\"paymentId\":\"" PID "\",\"merchantId\":\"" MID "\","
           "\"amountInMinorUnits\":%s,\"currency\":\"EUR\"}", amount);
  return buf;
}

/* Parse from an exact-size heap copy (no NUL after it: ASan sees overreads). */
static int parse_n(const char* body, size_t len, ob_payout__captured_t* out,
                   char* reason, size_t reason_len) {
  char* copy = malloc(len ? len : 1);
  int r;
  assert_non_null(copy);
  memcpy(copy, body, len);
  r = ob_payout__parse(copy, len, out, reason, reason_len);
  free(copy);
  return r;
}

static ob_payout__captured_t ok_n(const char* body, size_t len) {
  ob_payout__captured_t p;
  char reason[128] = "untouched";
  memset(&p, 0, sizeof p);
  if (parse_n(body, len, &p, reason, sizeof reason) != 0)
    fail_msg("rejected (%s): %.200s", reason, body);
  assert_string_equal(reason, "");
  return p;
}

static ob_payout__captured_t ok(const char* body) {
  return ok_n(body, strlen(body));
}

static void rejected_n(const char* body, size_t len, const char* want) {
  ob_payout__captured_t p, before;
  char reason[128];
  memset(&p, 0x77, sizeof p);
  before = p;
  assert_int_equal(parse_n(body, len, &p, reason, sizeof reason), -1);
  if (strcmp(reason, want) != 0)
    fail_msg("want \"%s\", got \"%s\" for %.200s", want, reason, body);
  assert_memory_equal(&p, &before, sizeof p); /* out untouched */
}

static void rejected(const char* body, const char* want) {
  rejected_n(body, strlen(body), want);
}

static void amount_rejected(const char* amount, const char* want) {
  rejected(body_amount(amount), want);
}

static int64_t amount_ok(const char* amount) {
  return ok(body_amount(amount)).amount_minor;
}

static void test_valid(void** state) {
  ob_payout__captured_t p;
  (void)state;
  p = ok(body_amount("1999"));
  assert_string_equal(p.payment_id, PID);
  assert_string_equal(p.merchant_id, MID);
  assert_int_equal(p.amount_minor, 1999);
  assert_string_equal(p.currency, "EUR");
  /* Any member order, whitespace everywhere. */
  p = ok(" \n{ \"currency\" : \"USD\" ,\t\"amountInMinorUnits\" : 1 ,"
         "\r\n\"merchantId\":\"" MID "\", \"paymentId\":\"" PID "\" } \n");
  assert_string_equal(p.currency, "USD");
  assert_int_equal(p.amount_minor, 1);
  assert_string_equal(p.payment_id, PID);
}

static void test_extra_fields_ignored(void** state) {
  ob_payout__captured_t p;
  (void)state;
  p = ok("{\"v\":2,\"paymentId\":\"" PID "\",\"note\":{\"paymentId\":1,"
         "\"currency\":[1,{\"x\":\"}\"}]},\"merchantId\":\"" MID "\","
         "\"amountInMinorUnits\":500,\"tags\":[\"a\",\"b\"],\"x\":null,"
         "\"x\":true,\"PaymentId\":\"nope\",\"currency\":\"GBP\","
         "\"s\":\"\\\"}, \\\"currency\\\": \\\"XXX\\\"\"}");
  assert_int_equal(p.amount_minor, 500);
  assert_string_equal(p.currency, "GBP");
  assert_string_equal(p.payment_id, PID);
}

static void test_uuid_normalized_to_lower(void** state) {
  ob_payout__captured_t p;
  (void)state;
  p = ok("{\"paymentId\":\"3F2C1A9E-8B7D-4C6E-9F10-A1B2C3D4E5F6\","
         "\"merchantId\":\"7a8B9c0D-1e2F-4a3B-8c4D-5e6F7a8B9c0D\","
         "\"amountInMinorUnits\":5,\"currency\":\"EUR\"}");
  assert_string_equal(p.payment_id, PID);
  assert_string_equal(p.merchant_id, MID);
}

/* Keys and strings are compared after unescaping. */
static void test_escapes(void** state) {
  ob_payout__captured_t p;
  (void)state;
  p = ok("{\"payment\\u0049d\":\"" PID "\",\"merchantId\":\"" MID "\","
         "\"amountInMinorUnits\":5,\"currency\":\"\\u0045U\\u0052\"}");
  assert_string_equal(p.payment_id, PID);
  assert_string_equal(p.currency, "EUR");
  /* U+0149's low byte is 'I': must not read as paymentId. */
  rejected("{\"payment\\u0149d\":\"" PID "\",\"merchantId\":\"" MID "\","
           "\"amountInMinorUnits\":5,\"currency\":\"EUR\"}",
           "missing field paymentId");
  /* "paymentId\u0000" is another key; a C-string compare would see
  ** paymentId. */
  rejected("{\"paymentId\\u0000\":\"" PID "\",\"merchantId\":\"" MID "\","
           "\"amountInMinorUnits\":5,\"currency\":\"EUR\"}",
           "missing field paymentId");
  rejected("{\"paymentId\":\"" PID "\\u0000x\",\"merchantId\":\"" MID "\","
           "\"amountInMinorUnits\":5,\"currency\":\"EUR\"}",
           "paymentId is not a UUID");
  rejected("{\"paymentId\":\"" PID "\",\"merchantId\":\"" MID "\","
           "\"amountInMinorUnits\":5,\"currency\":\"EU\\u0000\"}",
           "currency must be three upper-case letters (ISO 4217)");
  rejected("{\"paymentId\":\"" PID "\",\"merchantId\":\"" MID "\","
           "\"amountInMinorUnits\":5,\"currency\":\"E\\u00c9R\"}",
           "currency must be three upper-case letters (ISO 4217)");
}

static void test_size_limit(void** state) {
  char* big = malloc(5000);
  const char* head = body_amount("7");
  size_t hl = strlen(head);
  (void)state;
  assert_non_null(big);
  /* Exactly 4096 bytes (valid JSON padded with whitespace) passes... */
  memcpy(big, head, hl);
  memset(big + hl, ' ', 4096 - hl);
  assert_int_equal(ok_n(big, 4096).amount_minor, 7);
  /* ...one more byte does not, whatever it is. */
  memset(big + hl, ' ', 5000 - hl);
  rejected_n(big, 4097, "body is 4097 bytes, over the 4096-byte limit");
  rejected_n(big, 5000, "body is 5000 bytes, over the 4096-byte limit");
  free(big);
}

static void test_not_json(void** state) {
  ob_payout__captured_t p;
  char reason[64];
  (void)state;
  rejected("", "body is not valid JSON");
  rejected("{", "body is not valid JSON");
  rejected("{\"paymentId\":", "body is not valid JSON");
  rejected("paymentId=1", "body is not valid JSON");
  rejected(body_amount("01"), "body is not valid JSON");
  rejected(body_amount("0001e0"), "body is not valid JSON");
  rejected(body_amount("NaN"), "body is not valid JSON");
  rejected(body_amount("Infinity"), "body is not valid JSON");
  rejected(body_amount("+5"), "body is not valid JSON");
  rejected(body_amount("5,"), "body is not valid JSON");
  assert_int_equal(ob_payout__parse(NULL, 0, &p, reason,
                                              sizeof reason), -1);
  assert_string_equal(reason, "body is not valid JSON");
}

static void test_not_object(void** state) {
  (void)state;
  rejected("[]", "body is not a JSON object");
  rejected(" [{\"paymentId\":1}]", "body is not a JSON object");
  rejected("\"{}\"", "body is not a JSON object");
  rejected("42", "body is not a JSON object");
  rejected("null", "body is not a JSON object");
}

static void test_missing_fields(void** state) {
  (void)state;
  rejected("{}", "missing field paymentId");
  rejected("{\"merchantId\":\"" MID "\",\"amountInMinorUnits\":5,"
           "\"currency\":\"EUR\"}", "missing field paymentId");
  rejected("{\"paymentId\":\"" PID "\",\"amountInMinorUnits\":5,"
           "\"currency\":\"EUR\"}", "missing field merchantId");
  rejected("{\"paymentId\":\"" PID "\",\"merchantId\":\"" MID "\","
           "\"currency\":\"EUR\"}", "missing field amountInMinorUnits");
  rejected("{\"paymentId\":\"" PID "\",\"merchantId\":\"" MID "\","
           "\"amountInMinorUnits\":5}", "missing field currency");
  /* Names are case-sensitive; the nested one does not count. */
  rejected("{\"paymentid\":\"" PID "\",\"merchantId\":\"" MID "\","
           "\"amountInMinorUnits\":5,\"currency\":\"EUR\"}",
           "missing field paymentId");
  rejected("{\"x\":{\"paymentId\":\"" PID "\"},\"merchantId\":\"" MID "\","
           "\"amountInMinorUnits\":5,\"currency\":\"EUR\"}",
           "missing field paymentId");
}

static void test_must_be_string(void** state) {
  (void)state;
  rejected("{\"paymentId\":123,\"merchantId\":\"" MID "\","
           "\"amountInMinorUnits\":5,\"currency\":\"EUR\"}",
           "field paymentId must be a string");
  rejected("{\"paymentId\":\"" PID "\",\"merchantId\":null,"
           "\"amountInMinorUnits\":5,\"currency\":\"EUR\"}",
           "field merchantId must be a string");
  rejected("{\"paymentId\":[\"" PID "\"],\"merchantId\":\"" MID "\","
           "\"amountInMinorUnits\":5,\"currency\":\"EUR\"}",
           "field paymentId must be a string");
  rejected("{\"paymentId\":\"" PID "\",\"merchantId\":\"" MID "\","
           "\"amountInMinorUnits\":5,\"currency\":978}",
           "field currency must be a string");
}

static void test_not_uuid(void** state) {
  (void)state;
  rejected("{\"paymentId\":\"abc\",\"merchantId\":\"" MID "\","
           "\"amountInMinorUnits\":5,\"currency\":\"EUR\"}",
           "paymentId is not a UUID");
  rejected("{\"paymentId\":\"\",\"merchantId\":\"" MID "\","
           "\"amountInMinorUnits\":5,\"currency\":\"EUR\"}",
           "paymentId is not a UUID");
  rejected("{\"paymentId\":\"" PID "\",\"merchantId\":\"{" MID "}\","
           "\"amountInMinorUnits\":5,\"currency\":\"EUR\"}",
           "merchantId is not a UUID");
  rejected("{\"paymentId\":\"" PID "\",\"merchantId\":\" " MID "\","
           "\"amountInMinorUnits\":5,\"currency\":\"EUR\"}",
           "merchantId is not a UUID");
  rejected("{\"paymentId\":\"3f2c1a9e8b7d4c6e9f10a1b2c3d4e5f6\","
           "\"merchantId\":\"" MID "\",\"amountInMinorUnits\":5,"
           "\"currency\":\"EUR\"}", "paymentId is not a UUID");
}

static void test_duplicates(void** state) {
  (void)state;
  rejected("{\"paymentId\":\"" PID "\",\"merchantId\":\"" MID "\","
           "\"amountInMinorUnits\":5,\"currency\":\"EUR\","
           "\"currency\":\"USD\"}", "duplicate field currency");
  rejected("{\"paymentId\":\"" PID "\",\"paymentId\":\"" PID "\"}",
           "duplicate field paymentId");
  /* Reported before anything else, even an identical repeat. */
  rejected("{\"amountInMinorUnits\":5,\"amountInMinorUnits\":5}",
           "duplicate field amountInMinorUnits");
  rejected("{\"merchantId\":1,\"merch\\u0061ntId\":2}",
           "duplicate field merchantId");
}

static void test_amount_integers(void** state) {
  (void)state;
  assert_int_equal(amount_ok("1"), 1);
  assert_int_equal(amount_ok("9007199254740991"), OB_PAYOUT__MAX_AMOUNT);
  /* Decision: any number whose value is an integer is accepted (JSON has
  ** one number type; JSON Schema's "integer" agrees), judged exactly from
  ** the text, never through a double. */
  assert_int_equal(amount_ok("1e3"), 1000);
  assert_int_equal(amount_ok("1E+3"), 1000);
  assert_int_equal(amount_ok("1000.0"), 1000);
  assert_int_equal(amount_ok("1.5e1"), 15);
  assert_int_equal(amount_ok("10e-1"), 1);
  assert_int_equal(amount_ok("0.00012e5"), 12);
  assert_int_equal(amount_ok("9.007199254740991e15"), OB_PAYOUT__MAX_AMOUNT);
  assert_int_equal(amount_ok("90071992547409910e-1"), OB_PAYOUT__MAX_AMOUNT);
}

static void test_amount_not_integer(void** state) {
  static const char* const v[] = {
    "1.5", "0.5", "1e-3", "-1.5", "1.0000000000000001", "0.00012e4",
    /* As doubles these three round to integers: */
    "9007199254740990.5", "4503599627370497.5", "1.00000000000000001e3",
    "\"1000\"", "true", "false", "null", "[1000]", "{\"v\":1000}",
  };
  size_t i;
  (void)state;
  for (i = 0; i < sizeof v / sizeof v[0]; i++)
    amount_rejected(v[i], "amountInMinorUnits must be an integer");
}

static void test_amount_not_positive(void** state) {
  static const char* const v[] = {
    "0", "-0", "-0.0", "0e10", "0.000", "-1", "-9007199254740991",
    "-9223372036854775808", "-1e3",
  };
  size_t i;
  (void)state;
  for (i = 0; i < sizeof v / sizeof v[0]; i++)
    amount_rejected(v[i], "amountInMinorUnits must be > 0");
}

static void test_amount_overflow(void** state) {
  static const char* const v[] = {
    "9223372036854775808", "-9223372036854775809", "18446744073709551616",
    "99999999999999999999999", "1e19", "1e400", "1e999999999999999999",
    "9223372036854775808.0",
  };
  size_t i;
  (void)state;
  for (i = 0; i < sizeof v / sizeof v[0]; i++)
    amount_rejected(v[i], "amountInMinorUnits overflows int64");
}

static void test_amount_exceeds(void** state) {
  static const char* const v[] = {
    "9007199254740992", "9007199254740993", "9223372036854775807",
    "1e16", "9.007199254740992e15",
  };
  size_t i;
  (void)state;
  for (i = 0; i < sizeof v / sizeof v[0]; i++)
    amount_rejected(v[i], "amountInMinorUnits exceeds 9007199254740991");
}

static void test_currency(void** state) {
  static const char* const v[] = {"usd", "Usd", "US", "USDX", "", "U$D",
                                  "U D", "\\u00c9UR",
                                  "\\u0155SD" /* low byte is 'U' */};
  char body[256];
  size_t i;
  (void)state;
  for (i = 0; i < sizeof v / sizeof v[0]; i++) {
    snprintf(body, sizeof body,
             "{\"paymentId\":\"" PID "\",\"merchantId\":\"" MID "\","
             "\"amountInMinorUnits\":5,\"currency\":\"%s\"}", v[i]);
    rejected(body, "currency must be three upper-case letters (ISO 4217)");
  }
  assert_string_equal(ok(body_amount("5")).currency, "EUR");
}

static void test_bad_bytes(void** state) {
  char body[256];
  int n;
  (void)state;
  /* Invalid UTF-8 in an ignored field, in a checked one, a NUL inside. */
  rejected("{\"x\":\"\xff\",\"paymentId\":\"" PID "\",\"merchantId\":\"" MID
           "\",\"amountInMinorUnits\":5,\"currency\":\"EUR\"}",
           "body is not valid JSON");
  rejected("{\"paymentId\":\"" PID "\",\"merchantId\":\"" MID "\","
           "\"amountInMinorUnits\":5,\"currency\":\"E\xc3\x28\"}",
           "body is not valid JSON");
  n = snprintf(body, sizeof body, "%s", body_amount("5"));
  body[20] = '\0';
  rejected_n(body, (size_t)n, "body is not valid JSON");
  n = snprintf(body, sizeof body, "%s", body_amount("5"));
  body[n - 1] = '\0'; /* the closing brace */
  rejected_n(body, (size_t)n, "body is not valid JSON");
  /* Valid UTF-8 elsewhere is fine. */
  assert_int_equal(ok("{\"note\":\"caf\xc3\xa9\",\"paymentId\":\"" PID "\","
                      "\"merchantId\":\"" MID "\",\"amountInMinorUnits\":5,"
                      "\"currency\":\"EUR\"}").amount_minor, 5);
}

static void test_nesting(void** state) {
  char body[1024], deep[200];
  int i, n;
  (void)state;
  /* The body object is depth 1: an extra field may nest 63 more. */
  for (n = 0, i = 0; i < 63; i++) deep[n++] = '[';
  for (i = 0; i < 63; i++) deep[n++] = ']';
  deep[n] = '\0';
  snprintf(body, sizeof body, "{\"x\":%s,%s", deep, body_amount("5") + 1);
  assert_int_equal(ok(body).amount_minor, 5);
  snprintf(body, sizeof body, "{\"x\":[%s],%s", deep, body_amount("5") + 1);
  rejected(body, "body is not valid JSON");
}

static void test_reason_buffer(void** state) {
  ob_payout__captured_t p;
  char small[8];
  (void)state;
  memset(small, 'x', sizeof small);
  assert_int_equal(ob_payout__parse("[]", 2, &p, small,
                                              sizeof small), -1);
  assert_string_equal(small, "body is"); /* truncated, NUL-terminated */
  assert_int_equal(ob_payout__parse("[]", 2, &p, NULL, 0), -1);
  assert_int_equal(ob_payout__parse("[]", 2, NULL, small, 0), -1);
  assert_int_equal(small[0], 'b'); /* reason_len 0: nothing written */
  assert_int_equal(ob_payout__parse(body_amount("5"),
                                              strlen(body_amount("5")), NULL,
                                              NULL, 0), 0);
}

static void test_payload_round_trip(void** state) {
  const char* payout = "0190f3a4-7b2c-7def-8123-456789abcdef";
  ob_payout__captured_t p = ok(body_amount("9007199254740991")), q;
  cJSON *j, *f;
  char* s;
  (void)state;
  s = ob_payout__event_payload(payout, &p);
  assert_non_null(s);
  assert_int_equal(ob__json_is_object(s, strlen(s)), 1);
  /* Printed exactly, not as 9.00719925474099e+15 (cJSON's own printing). */
  assert_non_null(strstr(s, "\"amountInMinorUnits\":9007199254740991,"));
  assert_string_equal(s, "{\"payoutId\":\"" "0190f3a4-7b2c-7def-8123-"
                      "456789abcdef\",\"paymentId\":\"" PID "\","
                      "\"merchantId\":\"" MID "\","
                      "\"amountInMinorUnits\":9007199254740991,"
                      "\"currency\":\"EUR\"}");

  j = cJSON_Parse(s);
  assert_non_null(j);
  f = cJSON_GetObjectItemCaseSensitive(j, "payoutId");
  assert_true(cJSON_IsString(f));
  assert_string_equal(f->valuestring, payout);
  f = cJSON_GetObjectItemCaseSensitive(j, "paymentId");
  assert_string_equal(f->valuestring, PID);
  f = cJSON_GetObjectItemCaseSensitive(j, "merchantId");
  assert_string_equal(f->valuestring, MID);
  f = cJSON_GetObjectItemCaseSensitive(j, "amountInMinorUnits");
  assert_true(cJSON_IsNumber(f));
  assert_true(f->valuedouble == 9007199254740991.0);
  f = cJSON_GetObjectItemCaseSensitive(j, "currency");
  assert_string_equal(f->valuestring, "EUR");
  assert_int_equal(cJSON_GetArraySize(j), 5);
  cJSON_Delete(j);

  /* Our own parser reads the payload back (payoutId is an extra field). */
  q = ok(s);
  assert_memory_equal(&p, &q, sizeof p);
  free(s);
}

static void test_payload_escaping(void** state) {
  ob_payout__captured_t p = ok(body_amount("42"));
  const char* odd = "a\"b\\c\n\x01/";
  cJSON* j;
  char* s;
  (void)state;
  s = ob_payout__event_payload(odd, &p);
  assert_non_null(s);
  assert_int_equal(ob__json_valid(s, strlen(s)), 1);
  j = cJSON_Parse(s);
  assert_non_null(j);
  assert_string_equal(cJSON_GetObjectItemCaseSensitive(j, "payoutId")
                          ->valuestring, odd);
  assert_true(cJSON_GetObjectItemCaseSensitive(j, "amountInMinorUnits")
                  ->valuedouble == 42.0);
  cJSON_Delete(j);
  free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_valid),
    cmocka_unit_test(test_extra_fields_ignored),
    cmocka_unit_test(test_uuid_normalized_to_lower),
    cmocka_unit_test(test_escapes),
    cmocka_unit_test(test_size_limit),
    cmocka_unit_test(test_not_json),
    cmocka_unit_test(test_not_object),
    cmocka_unit_test(test_missing_fields),
    cmocka_unit_test(test_must_be_string),
    cmocka_unit_test(test_not_uuid),
    cmocka_unit_test(test_duplicates),
    cmocka_unit_test(test_amount_integers),
    cmocka_unit_test(test_amount_not_integer),
    cmocka_unit_test(test_amount_not_positive),
    cmocka_unit_test(test_amount_overflow),
    cmocka_unit_test(test_amount_exceeds),
    cmocka_unit_test(test_currency),
    cmocka_unit_test(test_bad_bytes),
    cmocka_unit_test(test_nesting),
    cmocka_unit_test(test_reason_buffer),
    cmocka_unit_test(test_payload_round_trip),
    cmocka_unit_test(test_payload_escaping),
  };
  return cmocka_run_group_tests_name("payout_msg", tests, NULL, NULL);
}
