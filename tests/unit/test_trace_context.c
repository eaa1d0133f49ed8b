/* SPDX-License-Identifier: Apache-2.0 */
/* W3C Trace Context values (core/util/trace_context.c): the
** specification's examples, each rule of traceparent and tracestate, and
** child spans. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/trace_context.h"

#define W3C "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

static int parse(const char* s, char out[OB__TRACEPARENT_LEN + 1]) {
  return ob__traceparent_parse(s, strlen(s), out);
}

static void refused(const char* s) {
  char out[OB__TRACEPARENT_LEN + 1];
  memset(out, 'x', sizeof out);
  if (parse(s, out) != 0) fail_msg("accepted: '%s'", s);
  assert_string_equal(out, "");
}

static void test_traceparent_examples(void** state) {
  char out[OB__TRACEPARENT_LEN + 1];
  (void)state;
  assert_int_equal(strlen(W3C), OB__TRACEPARENT_LEN);
  assert_int_equal(parse(W3C, out), 1);
  assert_string_equal(out, W3C);
  /* "caller didn't sample", and the extension's example */
  assert_int_equal(
      parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", out), 1);
  assert_int_equal(
      parse("00-0af7651916cd43dd8448eb211c80319c-b9c7c989f97918e1-01", out), 1);
  assert_string_equal(
      out, "00-0af7651916cd43dd8448eb211c80319c-b9c7c989f97918e1-01");
  /* Any flags byte is valid syntax (only the sampled bit has a meaning). */
  assert_int_equal(
      parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-ff", out), 1);
  /* n, not the NUL */
  assert_int_equal(ob__traceparent_parse(W3C "-", OB__TRACEPARENT_LEN, out),
                   1);
}

static void test_traceparent_refusals(void** state) {
  (void)state;
  refused("");
  refused("00-00000000000000000000000000000000-00f067aa0ba902b7-01");
  refused("00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01");
  refused("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01");
  refused("00-4bf92f3577b34da6a3ce929d0e0e4736-00F067AA0BA902B7-01");
  refused("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0A");
  refused("0A-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  refused("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  refused("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x");
  refused("0g-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  /* short: a character missing from each field in turn */
  refused("0-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  refused("00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01");
  refused("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b-01");
  refused("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1");
  /* version 00 is exactly 55 characters */
  refused(W3C "-");
  refused(W3C "-what-the-future-will-add");
  refused(W3C " ");
  refused(" " W3C);
  /* separators */
  refused("00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  refused("00-4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7-01");
  refused("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7_01");
}

/* A higher version: at least 55 characters, '-' after the flags if longer,
** re-expressed as 00. */
static void test_traceparent_future_version(void** state) {
  char out[OB__TRACEPARENT_LEN + 1];
  (void)state;
  assert_int_equal(
      parse("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", out), 1);
  assert_string_equal(out, W3C);
  assert_int_equal(
      parse("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-09-what-"
            "the-future-will-add",
            out),
      1);
  assert_string_equal(
      out, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-09");
  assert_int_equal(
      parse("fe-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-", out),
      1);
  assert_string_equal(out, W3C);
  refused("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01.x");
  refused("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0");
  refused("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-011");
  refused("cc-00000000000000000000000000000000-00f067aa0ba902b7-01-x");
}

static int ts(const char* s) { return ob__tracestate_valid(s, strlen(s)); }

static void test_tracestate(void** state) {
  char big[OB__TRACESTATE_MAX + 2];
  char many[600];
  size_t n = 0;
  (void)state;
  /* W3C's examples */
  assert_true(ts("rojo=00f067aa0ba902b7"));
  assert_true(ts("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"));
  assert_true(ts("congo=t61rcWkgMzE"));
  /* CloudEvents' distributed-tracing example */
  assert_true(ts("rojo=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01,"
                 "congo=lZWRzIHRoNhcm5hbCBwbGVhc3VyZS4"));
  /* an older draft's example ends a value with '=', which values exclude */
  assert_false(ts("congo=BleGNlZWRzIHRohbCBwbGVhc3VyZS4="));
  assert_true(ts("vendorname1=opaqueValue1,vendorname2=opaqueValue2"));
  /* optional spaces, empty members, a multi-tenant key, a value with
  ** inner and leading spaces */
  assert_true(ts(" a=1 , b=2 "));
  assert_true(ts("a=1,,b=2,"));
  assert_true(ts("tenant@system=x"));
  assert_true(ts("0tenant@sys-_*/=x"));
  assert_true(ts("a-b_c*d/e=v"));
  assert_true(ts("a= v w"));
  assert_true(ts("a=!\"#$%&'()*+-./:;<>?@[\\]^_`{|}~"));
  /* refused */
  assert_false(ts(""));
  assert_false(ts(" "));
  assert_false(ts(",,"));
  assert_false(ts("a"));
  assert_false(ts("=v"));
  assert_false(ts("a="));
  assert_false(ts("a= "));
  assert_false(ts("a=b=c"));
  assert_false(ts("A=1"));      /* keys are lower case */
  assert_false(ts("1a=1"));     /* a simple-key begins with a letter */
  assert_false(ts("_a=1"));
  assert_false(ts("a@1=1"));    /* a system-id begins with a letter */
  assert_false(ts("@a=1"));
  assert_false(ts("a@=1"));
  assert_false(ts("a@b@c=1"));
  assert_false(ts("t@abcdefghijklmno=1")); /* system-id of 15 */
  assert_true(ts("t@abcdefghijklmn=1"));   /* of 14 */
  assert_false(ts("a=1,a=2"));  /* one entry per key */
  assert_false(ts("a=1\t"));    /* tab is not printable ASCII */
  assert_false(ts("a=\x7f"));
  assert_false(ts("a=caf\xc3\xa9"));
  assert_false(ob__tracestate_valid("a=b\0c", 5));
  /* 512 characters: fine; 513: too long */
  memset(big, 'v', sizeof big);
  big[0] = 'a';
  big[1] = '=';
  assert_false(ob__tracestate_valid(big, OB__TRACESTATE_MAX)); /* value > 256 */
  memcpy(big, "a=", 2);
  memset(big + 2, 'v', 256);
  big[258] = ',';
  memcpy(big + 259, "b=", 2);
  memset(big + 261, 'w', OB__TRACESTATE_MAX - 261);
  assert_true(ob__tracestate_valid(big, OB__TRACESTATE_MAX));
  big[OB__TRACESTATE_MAX] = 'w';
  assert_false(ob__tracestate_valid(big, OB__TRACESTATE_MAX + 1));
  /* 32 members: fine; 33: too many */
  for (int i = 0; i < 33; i++) {
    n += (size_t)snprintf(many + n, sizeof many - n, "%sk%d=v", i ? "," : "",
                          i);
    if (i == 31) assert_true(ob__tracestate_valid(many, n));
  }
  assert_false(ob__tracestate_valid(many, n));
  /* a key of 256 is the longest */
  {
    char k[300];
    memset(k, 'k', 257);
    memcpy(k + 256, "=v", 3);
    assert_true(ts(k));
    memset(k, 'k', 257);
    memcpy(k + 257, "=v", 3);
    assert_false(ts(k));
  }
}

static void test_child(void** state) {
  char out[OB__TRACEPARENT_LEN + 1], again[OB__TRACEPARENT_LEN + 1];
  static const unsigned char span[8] = {0xb9, 0xc7, 0xc9, 0x89,
                                        0xf9, 0x79, 0x18, 0xe1};
  static const unsigned char zero[8] = {0};
  (void)state;
  ob__traceparent_child(W3C, span, out);
  assert_string_equal(out,
                      "00-4bf92f3577b34da6a3ce929d0e0e4736-b9c7c989f97918e1-01");
  assert_int_equal(ob__traceparent_parse(out, strlen(out), again), 1);
  ob__traceparent_child(W3C, zero, out);
  assert_string_equal(out,
                      "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000001-01");
  assert_int_equal(ob__traceparent_parse(out, strlen(out), again), 1);
  /* in place, flags kept */
  strcpy(out, "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00");
  ob__traceparent_child(out, span, out);
  assert_string_equal(out,
                      "00-0af7651916cd43dd8448eb211c80319c-b9c7c989f97918e1-00");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_traceparent_examples),
      cmocka_unit_test(test_traceparent_refusals),
      cmocka_unit_test(test_traceparent_future_version),
      cmocka_unit_test(test_tracestate),
      cmocka_unit_test(test_child),
  };
  return cmocka_run_group_tests_name("trace_context", tests, NULL, NULL);
}
