/* SPDX-License-Identifier: Apache-2.0 */
/* Cleaning what peers send back (core/util/peer_text.c). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/peer_text.h"

static const char* clean(const char* in) {
  static char out[1024];
  return ob__peer_text(in, strlen(in), out, sizeof out);
}

/* A held credential is redacted wherever it appears, and its token part
** ("Bearer x": x) too; forgetting it stops that. */
static void test_held_values(void** state) {
  (void)state;
  assert_int_equal(ob__secret_hold("Bearer sk_test_abcdef123456"), 0);
  assert_int_equal(ob__secret_hold("wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY"), 0);
  assert_string_equal(clean("echo: sk_test_abcdef123456 was sent"),
                      "echo: [redacted] was sent");
  assert_string_equal(clean("k=wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY."),
                      "k=[redacted].");
  ob__secret_forget("Bearer sk_test_abcdef123456");
  assert_string_equal(clean("echo: sk_test_abcdef123456"),
                      "echo: sk_test_abcdef123456");
  ob__secret_forget("wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY");
  /* Short values are not held: they would redact ordinary words. */
  assert_int_equal(ob__secret_hold("abc"), 0);
  assert_string_equal(clean("abc"), "abc");
}

/* Fields that carry credentials by name, whatever their value: echoed
** headers, JSON members, a SigV4 signature, a bearer token. */
static void test_fields_by_name(void** state) {
  (void)state;
  assert_string_equal(clean("Authorization: Bearer xyz12345\r\nHost: a"),
                      "Authorization: [redacted]\\x0d\\x0aHost: a");
  assert_string_equal(clean("x-amz-security-token: IQoJb3JpZ2luX2VjE"),
                      "x-amz-security-token: [redacted]");
  assert_string_equal(clean("{\"authorization\":\"Basic dXNlcjpwYXNz\"}"),
                      "{\"authorization\":\"[redacted]\"}");
  assert_string_equal(clean("Credential=AKID/x, Signature=0123abcd"),
                      "Credential=AKID/x, Signature=[redacted]");
  assert_string_equal(clean("use Bearer tok_abcdef for that"),
                      "use Bearer [redacted] for that");
  /* Ordinary words stay. */
  assert_string_equal(clean("The request signature we calculated does not "
                            "match"),
                      "The request signature we calculated does not match");
  assert_string_equal(clean("unauthorized"), "unauthorized");
}

/* One escaping rule: control characters, DEL, C1 controls and invalid
** UTF-8 become \xNN; valid UTF-8 stays. */
static void test_escaping(void** state) {
  (void)state;
  assert_string_equal(clean("a\x1b[31mb\x07\x7f"), "a\\x1b[31mb\\x07\\x7f");
  assert_string_equal(clean("x\r\n2026-01-01T00:00:00Z info FAKE"),
                      "x\\x0d\\x0a2026-01-01T00:00:00Z info FAKE");
  assert_string_equal(clean("caf\xc3\xa9 \xe2\x82\xac"), "caf\xc3\xa9 \xe2\x82\xac");
  assert_string_equal(clean("\xc2\x9b" "2J"), "\\xc2\\x9b2J");  /* C1 CSI */
  assert_string_equal(clean("\xff\xc0\xaf"), "\\xff\\xc0\\xaf");
  {
    char out[8];
    ob__peer_text("abcdefghijkl", 12, out, sizeof out);
    assert_string_equal(out, "abcdefg");  /* truncated, NUL-terminated */
    ob__peer_text("\x01\x02\x03", 3, out, sizeof out);
    assert_string_equal(out, "\\x01");  /* never half an escape */
  }
}

/* The stored form keeps bytes but not credentials. */
static void test_redact_keeps_json(void** state) {
  size_t n = 0;
  char* r;
  static const char body[] =
      "{\"id\":\"ch_1\",\"x\":\"Authorization: Bearer abcdefgh\"}";
  (void)state;
  r = ob__peer_redact(body, sizeof body - 1, &n);
  assert_non_null(r);
  assert_string_equal(r, "{\"id\":\"ch_1\",\"x\":\"Authorization: [redacted]\"}");
  assert_int_equal(n, strlen(r));
  free(r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_held_values),
      cmocka_unit_test(test_fields_by_name),
      cmocka_unit_test(test_escaping),
      cmocka_unit_test(test_redact_keeps_json),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
