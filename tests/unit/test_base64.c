/* SPDX-License-Identifier: Apache-2.0 */
/* Strict base64 decoding (core/util/base64.c): RFC 4648's test vectors
** (section 10) and each refusal. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "core/util/base64.h"

static void decodes(const char* s, const char* want) {
  unsigned char out[64];
  size_t n = 99;
  char reason[128] = "";
  assert_true(OB__BASE64_DECODED_MAX(strlen(s)) <= sizeof out);
  if (ob__base64_decode(s, strlen(s), out, &n, reason, sizeof reason) != 0)
    fail_msg("'%s' refused: %s", s, reason);
  assert_int_equal(n, strlen(want));
  assert_memory_equal(out, want, n);
}

static void refused(const char* s, const char* want) {
  unsigned char out[64];
  size_t n;
  char reason[160] = "";
  assert_int_equal(ob__base64_decode(s, strlen(s), out, &n, reason,
                                     sizeof reason),
                   -1);
  assert_string_equal(reason, want);
}

static void test_rfc4648_vectors(void** state) {
  (void)state;
  decodes("", "");
  decodes("Zg==", "f");
  decodes("Zm8=", "fo");
  decodes("Zm9v", "foo");
  decodes("Zm9vYg==", "foob");
  decodes("Zm9vYmE=", "fooba");
  decodes("Zm9vYmFy", "foobar");
  decodes("+/+/", "\xfb\xff\xbf");
  /* non-zero pad bits are accepted (section 3.5 allows either) */
  decodes("Zh==", "f");
}

static void test_exact_size(void** state) {
  unsigned char out[OB__BASE64_DECODED_MAX(8)];
  size_t n;
  (void)state;
  assert_int_equal(sizeof out, 6);
  assert_int_equal(ob__base64_decode("AAEC/w==", 8, out, &n, NULL, 0), 0);
  assert_int_equal(n, 4);
  assert_memory_equal(out, "\x00\x01\x02\xff", 4);
  assert_int_equal(ob__base64_decode(NULL, 0, NULL, &n, NULL, 0), 0);
  assert_int_equal(n, 0);
}

static void test_refusals(void** state) {
  (void)state;
  refused("Zg=", "its length, 3, is not a multiple of 4 (base64 must be "
                 "padded with '=')");
  refused("Zg", "its length, 2, is not a multiple of 4 (base64 must be "
                "padded with '=')");
  refused("Zm9vY", "its length, 5, is not a multiple of 4 (base64 must be "
                   "padded with '=')");
  refused("Zg==Zg==", "'=' at byte 2 is padding before the end");
  refused("Z===", "'=' at byte 1 is padding before the end");
  refused("====", "'=' at byte 0 is padding before the end");
  refused("Zm=v", "'=' at byte 2 is padding before the end");
  refused("Zm9v\r\nYmFy", "whitespace (0x0d) at byte 4 is not allowed in "
                          "base64");
  refused(" Zm9v", "whitespace (0x20) at byte 0 is not allowed in base64");
  refused("Zm9v\t", "whitespace (0x09) at byte 4 is not allowed in base64");
  refused("-_==", "'-' at byte 0 is of the URL-safe alphabet (base64 here is "
                  "the standard one, with '+' and '/')");
  refused("Zm9.", "'.' at byte 3 is not a base64 character");
  refused("Zm9\x01", "the byte 0x01 at byte 3 is not a base64 character");
  refused("Zm9\xff", "the byte 0xff at byte 3 is not a base64 character");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rfc4648_vectors),
      cmocka_unit_test(test_exact_size),
      cmocka_unit_test(test_refusals),
  };
  return cmocka_run_group_tests_name("base64", tests, NULL, NULL);
}
