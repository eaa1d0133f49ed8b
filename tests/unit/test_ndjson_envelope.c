/* SPDX-License-Identifier: Apache-2.0 */
/* One line of `enqueue --ndjson` (core/util/ndjson_envelope.c) and the
** queue URL rule shared by the relay and the consumer
** (core/sqs/sqs_queue_url.c). Pure functions: no database. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "core/sqs/sqs.h"
#include "core/util/ndjson_envelope.h"

#define ID "0190b6d8-3ae7-7ca2-a653-6ff2d5a6f230"

static void accepted(const char* line, ob__ndjson_envelope_t* env) {
  const char* why = "unset";
  int rc = ob__ndjson_envelope_parse(line, strlen(line), env, &why);
  if (rc != 0) fail_msg("refused '%s': %s", line, why ? why : "(null)");
  assert_null(why);
}

static void refused_n(const char* line, size_t len, const char* reason) {
  ob__ndjson_envelope_t env;
  const char* why = NULL;
  static const ob__ndjson_envelope_t zero;
  assert_int_equal(ob__ndjson_envelope_parse(line, len, &env, &why), -1);
  assert_non_null(why);
  if (strstr(why, reason) == NULL)
    fail_msg("'%.*s': reason '%s' lacks '%s'", (int)len, line, why, reason);
  assert_memory_equal(&env, &zero, sizeof env);
}

static void refused(const char* line, const char* reason) {
  refused_n(line, strlen(line), reason);
}

static void test_fields_exact(void** state) {
  ob__ndjson_envelope_t env;
  (void)state;
  accepted("{\"id\":\"" ID "\",\"type\":\"PaymentCaptured\",\"queue\":\"q\","
           "\"headers\":{\"h\" : 1},\"body\":{\"amountInMinorUnits\":"
           "9007199254740991, \"x\":1e400}}",
           &env);
  assert_string_equal(env.id, ID);
  assert_string_equal(env.type, "PaymentCaptured");
  assert_string_equal(env.queue, "q");
  assert_string_equal(env.headers, "{\"h\" : 1}");
  /* The bytes of the line, not a re-serialisation: no 9.00719925474099e+15. */
  assert_string_equal(env.body,
                      "{\"amountInMinorUnits\":9007199254740991, \"x\":1e400}");
  assert_int_equal(env.body_len, strlen(env.body));
  ob__ndjson_envelope_free(&env);
  assert_null(env.mem);
}

static void test_string_body_decoded(void** state) {
  ob__ndjson_envelope_t env;
  static const char want[] = "a\0b\xc3\xa9\xf0\x9f\x98\x80\"\\/\b\t";
  (void)state;
  accepted("{\"id\":\"" ID "\",\"type\":\"Pay\\u006dent\",\"body\":"
           "\"a\\u0000b\\u00e9\\ud83d\\ude00\\\"\\\\\\/\\b\\t\"}",
           &env);
  assert_string_equal(env.type, "Payment");
  assert_null(env.queue);
  assert_null(env.headers);
  assert_int_equal(env.body_len, sizeof want - 1);
  assert_memory_equal(env.body, want, sizeof want - 1);
  ob__ndjson_envelope_free(&env);
}

static void test_whitespace_around_values(void** state) {
  ob__ndjson_envelope_t env;
  (void)state;
  accepted(" { \"body\" : [1, 2] , \"type\" : \"T\" , \"id\" : \"" ID "\" } ",
           &env);
  assert_string_equal(env.body, "[1, 2]");
  ob__ndjson_envelope_free(&env);
}

static void test_refusals(void** state) {
  static const char nul_line[] = "{\"id\":\"" ID "\",\"type\":\"T\0\",\"body\":1}";
  (void)state;
  refused_n(nul_line, sizeof nul_line - 1, "a NUL byte");
  refused("{\"id\":\"" ID "\",\"type\":\"T\",\"body\":1} x", "more after");
  refused("{\"id\":\"" ID "\",\"type\":\"T\",\"body\":\"\x01\"}", "not valid JSON");
  refused("{\"id\":\"" ID "\",\"type\":\"T\",\"body\":\"\xff\"}", "not valid JSON");
  refused("[1]", "not a JSON object");
  refused("{\"id\":\"" ID "\",\"id\":\"" ID "\",\"type\":\"T\",\"body\":1}",
          "duplicate field \"id\"");
  refused("{\"id\":\"" ID "\",\"type\":\"T\",\"body\":1,\"hedaers\":{}}",
          "unknown field");
  refused("{\"type\":\"T\",\"body\":1}", "missing string field \"id\"");
  refused("{\"id\":5,\"type\":\"T\",\"body\":1}", "missing string field \"id\"");
  refused("{\"id\":\"x\",\"type\":\"T\",\"body\":1}", "\"id\" is not a UUID");
  refused("{\"id\":\"" ID "\",\"body\":1}", "missing string field \"type\"");
  refused("{\"id\":\"" ID "\",\"type\":\"T\"}", "missing field \"body\"");
  refused("{\"id\":\"" ID "\",\"type\":\"\",\"body\":1}", "1..128");
  refused("{\"id\":\"" ID "\",\"type\":\"a\\u0000\",\"body\":1}",
          "\"type\" must not contain");
  refused("{\"id\":\"" ID "\",\"type\":\"T\",\"queue\":\"q\\u0000\",\"body\":1}",
          "queue name must not contain");
  refused("{\"id\":\"" ID "\",\"type\":\"T\",\"queue\":1,\"body\":1}",
          "\"queue\" must be a string");
  refused("{\"id\":\"" ID "\",\"type\":\"T\",\"headers\":[],\"body\":1}",
          "\"headers\" must be an object");
}

/* The type's length limit, at its edges: 1 and 128 characters are accepted,
** 0 and 129 refused (the reason names the range). */
static void test_type_length_edges(void** state) {
  static const size_t lens[] = {1, 127, 128, 129};
  (void)state;
  for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
    char type[130];
    char line[256];
    ob__ndjson_envelope_t env;
    memset(type, 'T', lens[i]);
    type[lens[i]] = '\0';
    snprintf(line, sizeof line,
             "{\"id\":\"" ID "\",\"type\":\"%s\",\"body\":1}", type);
    if (lens[i] <= 128) {
      accepted(line, &env);
      assert_int_equal(strlen(env.type), lens[i]);
      assert_string_equal(env.type, type);
      ob__ndjson_envelope_free(&env);
    } else {
      refused(line, "\"type\" must be 1..128 characters");
    }
  }
  /* Escapes count as the characters they decode to: 128 of them as \u0054
  ** are 128 characters, one more is too many. */
  {
    char line[1024];
    size_t w = (size_t)snprintf(line, sizeof line,
                                "{\"id\":\"" ID "\",\"type\":\"");
    ob__ndjson_envelope_t env;
    for (int k = 0; k < 128; k++) w += (size_t)snprintf(line + w, sizeof line - w, "\\u0054");
    snprintf(line + w, sizeof line - w, "\",\"body\":1}");
    accepted(line, &env);
    assert_int_equal(strlen(env.type), 128);
    ob__ndjson_envelope_free(&env);
    snprintf(line + w, sizeof line - w, "\\u0054\",\"body\":1}");
    refused(line, "1..128");
  }
}

static void test_queue_url_rule(void** state) {
  (void)state;
  assert_null(ob__sqs_queue_url_problem(
      "https://sqs.eu-west-1.amazonaws.com/123456789012/q"));
  assert_null(ob__sqs_queue_url_problem("http://127.0.0.1:4566/000000000000/q"));
  assert_non_null(strstr(ob__sqs_queue_url_problem("ftp://x/q"), "http(s)"));
  assert_non_null(strstr(ob__sqs_queue_url_problem(""), "empty"));
  assert_non_null(strstr(ob__sqs_queue_url_problem(
                             "https://user:pw@sqs.example/1/q"),
                         "user information"));
  /* An @ after the host is a path character, not user information. */
  assert_null(ob__sqs_queue_url_problem("https://sqs.example/1/q@x"));
  assert_non_null(strstr(ob__sqs_queue_url_problem("https://sqs.example/1/q\nx"),
                         "printable ASCII"));
  assert_non_null(strstr(ob__sqs_queue_url_problem("https:///1/q"), "no host"));
  {
    char big[OB__SQS_QUEUE_URL_MAX + 2];
    memset(big, 'q', sizeof big - 1);
    memcpy(big, "https://s/", 10);
    big[sizeof big - 1] = '\0';
    assert_non_null(strstr(ob__sqs_queue_url_problem(big), "2048"));
    big[sizeof big - 2] = '\0';
    assert_null(ob__sqs_queue_url_problem(big));
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fields_exact),
      cmocka_unit_test(test_string_body_decoded),
      cmocka_unit_test(test_whitespace_around_values),
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_type_length_edges),
      cmocka_unit_test(test_queue_url_rule),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
