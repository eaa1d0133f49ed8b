/* SPDX-License-Identifier: Apache-2.0 */
/* RFC 3986 URI-reference syntax (core/util/uri_ref.c): RFC 3986's own
** examples, IP literals, and every refusal with its sentence. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/uri_ref.h"

static void valid(const char* s) {
  char reason[256] = "x";
  int rc = ob__uri_reference_check(s, strlen(s), reason, sizeof reason);
  if (rc != 0) fail_msg("'%s' refused: %s", s, reason);
  assert_string_equal(reason, "");
}

static void invalid(const char* s, size_t n, const char* want) {
  char reason[256] = "";
  int rc = ob__uri_reference_check(s, n, reason, sizeof reason);
  if (rc != -1) fail_msg("'%.*s' accepted", (int)n, s);
  if (want != NULL && strcmp(reason, want) != 0)
    fail_msg("'%.*s': got \"%s\", want \"%s\"", (int)n, s, reason, want);
  assert_true(reason[0] != '\0');
}
#define INVALID(s, want) invalid(s, sizeof(s) - 1, want)

/* RFC 3986 section 1.1.2. */
static void test_rfc_examples_1_1_2(void** state) {
  (void)state;
  valid("ftp://ftp.is.co.za/rfc/rfc1808.txt");
  valid("http://www.ietf.org/rfc/rfc2396.txt");
  valid("ldap://[2001:db8::7]/c=GB?objectClass?one");
  valid("mailto:John.Doe@example.com");
  valid("news:comp.infosystems.www.servers.unix");
  valid("tel:+1-816-555-1212");
  valid("telnet://192.0.2.16:80/");
  valid("urn:oasis:names:specification:docbook:dtd:xml:4.1.2");
  /* Section 3's example, and 3.2.1's. */
  valid("foo://example.com:8042/over/there?name=ferret#nose");
  valid("urn:example:animal:ferret:nose");
  valid("ftp://user:password@host/");
}

/* RFC 3986 section 5.4: the base and every reference of 5.4.1 and 5.4.2. */
static void test_rfc_examples_5_4(void** state) {
  static const char* const refs[] = {
      "http://a/b/c/d;p?q",
      /* 5.4.1 normal */
      "g:h", "g", "./g", "g/", "/g", "//g", "?y", "g?y", "#s", "g#s",
      "g?y#s", ";x", "g;x", "g;x?y#s", "", ".", "./", "..", "../", "../g",
      "../..", "../../", "../../g",
      /* 5.4.2 abnormal */
      "../../../g", "../../../../g", "/./g", "/../g", "g.", ".g", "g..",
      "..g", "./../g", "./g/.", "g/./h", "g/../h", "g;x=1/./y", "g;x=1/../y",
      "g?y/./x", "g?y/../x", "g#s/./x", "g#s/../x", "http:g"};
  (void)state;
  for (size_t i = 0; i < sizeof refs / sizeof refs[0]; i++) valid(refs[i]);
}

/* What CloudEvents sources look like (spec.md's examples among them). */
static void test_cloudevents_sources(void** state) {
  (void)state;
  valid("https://github.com/cloudevents");
  valid("mailto:cncf-wg-serverless@lists.cncf.io");
  valid("urn:uuid:6e8bc430-9c3a-11d9-9669-0800200c9a66");
  valid("/cloudevents/spec/pull/123");
  valid("/sensors/tn-1234567/alerts");
  valid("1-555-123-4567");
  valid("/mycontext");
  valid("urn:oncebox:terminal:till-7");
  valid("arn:aws:sqs:eu-west-1:123456789012:orders");
  valid("https://example.com/a%20b?q=%C3%A9#frag/?x");
  valid("a%3Ab");      /* an encoded ':' is fine in a first segment */
  valid("./a:b");      /* and a ':' after the first segment */
  valid("a/b:c");
  valid("a?b:c");
  valid("a#b:c");
  valid("s://");       /* empty authority and path */
  valid("s:");         /* empty hier-part */
  valid("//u@h:/p");   /* empty port */
  valid("//:1");       /* empty host */
  valid("//h?#");
}

static void test_ip_literals(void** state) {
  static const char* const ok[] = {
      "//[::]", "//[::1]", "//[1::]", "//[1:2:3:4:5:6:7:8]",
      "//[1:2:3:4:5:6:7::]", "//[::2:3:4:5:6:7:8]", "//[1::8]",
      "//[1:2:3:4:5:6:1.2.3.4]", "//[::ffff:192.0.2.128]", "//[::1.2.3.4]",
      "//[1::2:3:4:5:6:7]", "//[fe80::ABCD:ef01]", "//[v1.x]",
      "//[vF.a:b!$]", "//[2001:db8::7]:8080/x", "//u:p@[::1]:1"};
  (void)state;
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) valid(ok[i]);
  INVALID("//[]", "the IP literal at byte 2 is not a valid IPv6 address");
  INVALID("//[1:2:3:4:5:6:7]",
          "the IP literal at byte 2 is not a valid IPv6 address");
  INVALID("//[1:2:3:4:5:6:7:8:9]", NULL);
  INVALID("//[::1:2:3:4:5:6:7:8]", NULL);
  INVALID("//[1:2:3:4:5:6:7:8::]", NULL);
  INVALID("//[1::2::3]", NULL);
  INVALID("//[:::]", NULL);
  INVALID("//[:1::]", NULL);
  INVALID("//[1::2:]", NULL);
  INVALID("//[12345::]", NULL);
  INVALID("//[1.2.3.4]", NULL);
  INVALID("//[::1.2.3]", NULL);
  INVALID("//[::1.2.3.256]", NULL);
  INVALID("//[::01.2.3.4]", NULL);
  INVALID("//[::1.2.3.4:5]", NULL);
  INVALID("//[1:2:3:4:5:6:7:1.2.3.4]", NULL);
  INVALID("//[v.x]",
          "the IP literal at byte 2 is not a valid IPvFuture ('v', hex "
          "digits, '.', then at least one character)");
  INVALID("//[v1.]", NULL);
  INVALID("//[v1x]", NULL);
  INVALID("//[::1%25eth0]",
          "'%' at byte 6 is not allowed in the IP literal of a URI-reference "
          "(it holds an IPv6 address or an IPvFuture)");
  INVALID("//[::1",
          "'[' at byte 2 opens an IP literal that has no closing ']'");
  INVALID("//[::1]x",
          "'x' at byte 7 is not allowed after an IP literal (only ':' and a "
          "port may follow it)");
  INVALID("//[::1]]", NULL);
  INVALID("//a[::1]",
          "'[' at byte 3 is not allowed in the host of a URI-reference "
          "(percent-encode it as %5B)");
  INVALID("/[x]", "'[' at byte 1 is not allowed in the path of a "
                  "URI-reference (percent-encode it as %5B)");
}

static void test_refusals(void** state) {
  (void)state;
  INVALID("https://example.com/a path with spaces",
          "a space at byte 21 is not allowed in a URI-reference "
          "(percent-encode it as %20)");
  INVALID("urn:pos terminal 7/till number 24",
          "a space at byte 7 is not allowed in a URI-reference "
          "(percent-encode it as %20)");
  INVALID("a%2xb", "'%' at byte 1 is not followed by two hex digits");
  INVALID("http:%4", "'%' at byte 5 is not followed by two hex digits");
  INVALID("x?%", "'%' at byte 2 is not followed by two hex digits");
  INVALID("x#%G0", "'%' at byte 2 is not followed by two hex digits");
  invalid("ab\0c", 4,
          "a NUL byte at byte 2 is not allowed in a URI-reference");
  INVALID("a\nb", "a control character (0x0a) at byte 1 is not allowed in a "
                  "URI-reference");
  INVALID("a\x7f", "a control character (0x7f) at byte 1 is not allowed in "
                   "a URI-reference");
  INVALID("/caf\xc3\xa9",
          "a non-ASCII byte (0xc3) at byte 4 is not allowed in a "
          "URI-reference (percent-encode each UTF-8 byte, here as %C3)");
  INVALID("http://exa\"mple.com",
          "'\"' at byte 10 is not allowed in the host of a URI-reference "
          "(percent-encode it as %22)");
  INVALID("/a<b>", "'<' at byte 2 is not allowed in the path of a "
                   "URI-reference (percent-encode it as %3C)");
  INVALID("/a?b c", "a space at byte 4 is not allowed in a URI-reference "
                    "(percent-encode it as %20)");
  INVALID("/a?b{", "'{' at byte 4 is not allowed in the query of a "
                   "URI-reference (percent-encode it as %7B)");
  INVALID("/a#b#c", "'#' at byte 4 is not allowed in the fragment of a "
                    "URI-reference (percent-encode it as %23)");
  INVALID("/a\\b", "'\\' at byte 2 is not allowed in the path of a "
                   "URI-reference (percent-encode it as %5C)");
  INVALID("s://u[@h", "'[' at byte 5 is not allowed in the userinfo of a "
                      "URI-reference (percent-encode it as %5B)");
  INVALID("s://u@h@i", "'@' at byte 7 is not allowed in the host of a "
                       "URI-reference (percent-encode it as %40)");
  INVALID("http://h:8o/", "'o' at byte 10 is not allowed in the port of a "
                          "URI-reference (a port is digits only)");
  INVALID("http://h:1:2", NULL);
  INVALID("http://h:-1", NULL);
  /* path-noscheme: a relative-ref's first segment holds no ':'. */
  INVALID(":a", "':' at byte 0 cannot begin a URI-reference (the scheme "
                "before it would be empty)");
  INVALID("1a:b", "':' at byte 2 is not allowed in the first segment of a "
                  "relative reference (the text before it is not a scheme: "
                  "a letter, then letters, digits, '+', '-' or '.')");
  INVALID("my_scheme:x", NULL);
  INVALID("a%20b:c", NULL);
  INVALID("-a:b", NULL);
}

/* No length limit: a 5000-byte source, and a long one refused at its end. */
static void test_long(void** state) {
  size_t n = 5000;
  char* s = malloc(n + 1);
  char reason[128];
  (void)state;
  assert_non_null(s);
  memcpy(s, "urn:x:", 6);
  memset(s + 6, 'a', n - 6);
  s[n] = '\0';
  valid(s);
  s[n - 1] = ' ';
  assert_int_equal(ob__uri_reference_check(s, n, reason, sizeof reason), -1);
  assert_string_equal(reason, "a space at byte 4999 is not allowed in a "
                              "URI-reference (percent-encode it as %20)");
  free(s);
}

/* The buffer contract: NULL or 0 writes nothing, truncation terminates. */
static void test_reason_buffer(void** state) {
  char small[8];
  (void)state;
  assert_int_equal(ob__uri_reference_check("a b", 3, NULL, 0), -1);
  assert_int_equal(ob__uri_reference_check("ab", 2, NULL, 0), 0);
  memset(small, 'x', sizeof small);
  assert_int_equal(ob__uri_reference_check("a b", 3, small, 0), -1);
  assert_int_equal(small[0], 'x');
  assert_int_equal(ob__uri_reference_check("a b", 3, small, sizeof small), -1);
  assert_string_equal(small, "a space");
  /* n, not the NUL: "ab" of "ab cd". */
  assert_int_equal(ob__uri_reference_check("ab cd", 2, NULL, 0), 0);
  assert_int_equal(ob__uri_reference_check(NULL, 0, NULL, 0), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rfc_examples_1_1_2),
      cmocka_unit_test(test_rfc_examples_5_4),
      cmocka_unit_test(test_cloudevents_sources),
      cmocka_unit_test(test_ip_literals),
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_long),
      cmocka_unit_test(test_reason_buffer),
  };
  return cmocka_run_group_tests_name("uri_ref", tests, NULL, NULL);
}
