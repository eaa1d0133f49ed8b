/* SPDX-License-Identifier: Apache-2.0 */
/* Strict JSON validation. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/json_check.h"

/* Check text in an exact-size heap copy with no NUL after it, so that
** AddressSanitizer catches any read past len. */
static int valid_n(const char* text, size_t len) {
  char* copy = malloc(len ? len : 1);
  int r;
  assert_non_null(copy);
  memcpy(copy, text, len);
  r = ob__json_valid(copy, len);
  free(copy);
  return r;
}

static int valid(const char* text) {
  return valid_n(text, strlen(text));
}

static const char* const good[] = {
  "0", "-0", "1", "-1", "123", "0.5", "-0.0", "1e3", "1E+2", "1e-2",
  "1.25e10", "-12.5E-3", "9007199254740993", "1e999",
  "true", "false", "null",
  "\"\"", "\"abc\"", "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"", "\"\\u0041\\u00e9\"",
  "\"\\u0000\"", "\"\\uD83D\\uDE00\"", "\"\\ud83d\\ude00\"",
  "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf\"",
  "\"\x7f\"", "\"\xef\xbf\xbf\"", "\"\xed\x9f\xbf\"", "\"\xee\x80\x80\"",
  "[]", "{}", "[ ]", "{ }", "[1,2,3]", "[[],{}]", "{\"a\":1}",
  "{\"a\":{\"b\":[1,{\"c\":null}]},\"a\":2}",
  " \t\r\n[ 1 , \"x\" ] \n", "{ \"k\" : \"v\" , \"k2\" : [ true ] }",
};

static const char* const bad[] = {
  "", " ", "\n",
  /* numbers */
  "01", "-01", "00", "1.", ".5", "+1", "-", "1e", "1e+", "1.e3", "--1",
  "0x10", "1_000", "NaN", "Infinity", "-Infinity", "nan", "1.5.2",
  /* literals */
  "nul", "tru", "True", "NULL", "truex", "none",
  /* structure */
  "[", "]", "{", "}", "[1,]", "[,1]", "[1 2]", "{\"a\":1,}", "{a:1}",
  "{'a':1}", "{\"a\"}", "{\"a\":}", "{\"a\" 1}", "{1:2}", "1 2", "[1]x",
  "[1]]", "{\"a\":1}}", "// c\n1", "/* c */ 1", "[1,\n]",
  /* strings */
  "\"abc", "'abc'", "\"\\x\"", "\"\\u12\"", "\"\\u12g4\"", "\"\\U0041\"",
  "\"a\x01\"", "\"a\tb\"", "\"a\nb\"", "\"\x7f\x1f\"",
  /* unpaired surrogate escapes (cJSON refuses them) */
  "\"\\ud800\"", "\"\\udc00\"", "\"\\ud800\\u0041\"", "\"\\ud800x\"",
  "\"\\udbff\\udbff\"",
  /* whitespace that is not JSON whitespace, BOM */
  "\x01 1", "\f1", "\v1", "1\f", "\xc2\xa0" "1", "\xef\xbb\xbf" "1",
  /* invalid UTF-8 */
  "\"\xff\"", "\"\x80\"", "\"\xc0\xaf\"", "\"\xc1\xbf\"", "\"\xe0\x80\xaf\"",
  "\"\xed\xa0\x80\"", "\"\xf0\x80\x80\xaf\"", "\"\xf4\x90\x80\x80\"",
  "\"\xf5\x80\x80\x80\"", "\"\xe2\x82\"", "\"\xe2\x82", "\"\xc3\"",
  "\"\xc3\x28\"", "\xc3\xa9",
};

static void test_valid_documents(void** state) {
  size_t i;
  (void)state;
  for (i = 0; i < sizeof good / sizeof good[0]; i++)
    if (!valid(good[i])) fail_msg("rejected valid: %s", good[i]);
}

static void test_invalid_documents(void** state) {
  size_t i;
  (void)state;
  for (i = 0; i < sizeof bad / sizeof bad[0]; i++)
    if (valid(bad[i])) fail_msg("accepted invalid #%zu: %s", i, bad[i]);
}

/* The header promises nothing we accept is refused by cJSON, which the
** rest of oncebox may use to read the same text. */
static void test_valid_implies_cjson_parses(void** state) {
  size_t i;
  (void)state;
  for (i = 0; i < sizeof good / sizeof good[0]; i++) {
    cJSON* j = cJSON_ParseWithLength(good[i], strlen(good[i]) + 1);
    if (j == NULL) fail_msg("cJSON refuses: %s", good[i]);
    cJSON_Delete(j);
  }
}

static void test_nul_bytes(void** state) {
  (void)state;
  assert_int_equal(valid_n("1\0", 2), 0);
  assert_int_equal(valid_n("\0" "1", 2), 0);
  assert_int_equal(valid_n("\"a\0b\"", 5), 0);
  assert_int_equal(valid_n("{\"a\":1}\0", 8), 0);
  assert_int_equal(valid_n("[1,\0 2]", 7), 0);
  /* A NUL just past len is not part of the text. */
  assert_int_equal(ob__json_valid("1\0garbage", 1), 1);
  /* A NULL pointer is never valid, even with len 0. */
  assert_int_equal(ob__json_valid(NULL, 0), 0);
  assert_int_equal(ob__json_valid(NULL, 5), 0);
}

/* Every prefix of a valid document is either invalid or a complete value
** itself; none reads past its length. */
static void test_truncations(void** state) {
  const char* doc = "{\"a\":[1,-2.5e+3,\"x\\u00e9\\ud83d\\ude00\","
                    "true,false,null,{}],\"b\":\"\xe2\x82\xac\"}";
  size_t n = strlen(doc), i;
  (void)state;
  assert_int_equal(valid(doc), 1);
  for (i = 0; i < n; i++) assert_int_equal(valid_n(doc, i), 0);
  assert_int_equal(valid_n("123", 2), 1); /* "12" is complete */
}

static char* nested(int depth, char open, char close) {
  char* s = malloc((size_t)depth * 2 + 1);
  assert_non_null(s);
  memset(s, open, (size_t)depth);
  memset(s + depth, close, (size_t)depth);
  s[depth * 2] = '\0';
  return s;
}

static void test_depth_limit(void** state) {
  char* s;
  char buf[1024];
  int i, n = 0;
  (void)state;
  assert_int_equal(OB__JSON_MAX_DEPTH, 64);
  s = nested(64, '[', ']');
  assert_int_equal(valid(s), 1);
  free(s);
  s = nested(65, '[', ']');
  assert_int_equal(valid(s), 0);
  free(s);
  /* Objects count the same: {"a":{"a":...1...}} */
  for (i = 0; i < 64; i++) n += sprintf(buf + n, "{\"a\":");
  n += sprintf(buf + n, "1");
  for (i = 0; i < 64; i++) n += sprintf(buf + n, "}");
  assert_int_equal(valid(buf), 1);
  memmove(buf + 1, buf, (size_t)n + 1);
  buf[0] = '[';
  strcat(buf, "]");
  assert_int_equal(valid(buf), 0);
  /* Depth is nesting, not a count of containers: siblings don't add up. */
  n = sprintf(buf, "[");
  for (i = 0; i < 100; i++) n += sprintf(buf + n, "%s[[]]", i ? "," : "");
  sprintf(buf + n, "]");
  assert_int_equal(valid(buf), 1);
  /* Very deep input is refused quickly, without exhausting the stack. */
  s = nested(1000000, '[', ']');
  assert_int_equal(valid(s), 0);
  free(s);
  s = nested(1000000, '{', '}');
  assert_int_equal(valid(s), 0);
  free(s);
}

static void test_is_object(void** state) {
  (void)state;
  assert_int_equal(ob__json_is_object("{}", 2), 1);
  assert_int_equal(ob__json_is_object(" \n{\"a\":[1]} ", 12), 1);
  assert_int_equal(ob__json_is_object("[]", 2), 0);
  assert_int_equal(ob__json_is_object("\"{}\"", 4), 0);
  assert_int_equal(ob__json_is_object("null", 4), 0);
  assert_int_equal(ob__json_is_object("{", 1), 0);
  assert_int_equal(ob__json_is_object("{} {}", 5), 0);
  assert_int_equal(ob__json_is_object("", 0), 0);
}

static void test_scan(void** state) {
  (void)state;
  assert_int_equal(ob__json_scan("[1] x", 5), 4);
  assert_int_equal(ob__json_scan(" \"a\" : 1", 8), 5);
  assert_int_equal(ob__json_scan("{\"a\":1},{}", 10), 7);
  assert_int_equal(ob__json_scan("12,", 3), 2);
  assert_int_equal(ob__json_scan("x", 1), 0);
  assert_int_equal(ob__json_scan("[1,", 3), 0);
  assert_int_equal(ob__json_scan("", 0), 0);
  assert_int_equal(ob__json_scan(NULL, 3), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_valid_documents),
    cmocka_unit_test(test_invalid_documents),
    cmocka_unit_test(test_valid_implies_cjson_parses),
    cmocka_unit_test(test_nul_bytes),
    cmocka_unit_test(test_truncations),
    cmocka_unit_test(test_depth_limit),
    cmocka_unit_test(test_is_object),
    cmocka_unit_test(test_scan),
  };
  return cmocka_run_group_tests_name("json_check", tests, NULL, NULL);
}
