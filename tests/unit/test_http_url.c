/* SPDX-License-Identifier: Apache-2.0 */
/* URL parsing and the HTTP error table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "platform/http/http_int.h"

static void test_valid_urls(void** state) {
  ob__http_url_t u;
  (void)state;

  assert_int_equal(ob__http_url_parse("https://sqs.us-east-1.amazonaws.com/", &u), 0);
  assert_int_equal(u.tls, 1);
  assert_string_equal(u.host, "sqs.us-east-1.amazonaws.com");
  assert_int_equal(u.port, 443);
  assert_int_equal(u.target_len, 1);
  assert_memory_equal(u.target, "/", 1);

  assert_int_equal(ob__http_url_parse("HTTPS://SQS.Test:8443/a/b?c=d#frag", &u), 0);
  assert_string_equal(u.host, "sqs.test");
  assert_int_equal(u.port, 8443);
  assert_int_equal(u.target_len, 8);
  assert_memory_equal(u.target, "/a/b?c=d", 8);

  assert_int_equal(ob__http_url_parse("http://127.0.0.1:4566", &u), 0);
  assert_int_equal(u.tls, 0);
  assert_string_equal(u.host, "127.0.0.1");
  assert_int_equal(u.port, 4566);
  assert_int_equal(u.target_len, 0);

  assert_int_equal(ob__http_url_parse("http://localhost", &u), 0);
  assert_int_equal(u.port, 80);

  /* Names that merely contain digits stay names. */
  assert_int_equal(ob__http_url_parse("https://a1.b2c/", &u), 0);
  assert_int_equal(ob__http_url_parse("https://1.2.3.example/", &u), 0);
  assert_int_equal(ob__http_url_parse("https://[::1]:4433/x", &u), 0);
  assert_string_equal(u.host, "::1");
  assert_int_equal(u.port, 4433);

  assert_int_equal(ob__http_url_parse("https://h?x=1", &u), 0);
  assert_string_equal(u.host, "h");
  assert_int_equal(u.target_len, 4);
}

static void test_invalid_urls(void** state) {
  static const char* const bad[] = {
      "", "ftp://x/", "https//x/", "https://", "https:///path", "https://:443/",
      "https://a:0/", "https://a:65536/", "https://a:/", "https://a:12x/",
      "https://user@host/", "https://user:pw@host/", "https://a b/",
      "https://a/\x01", "https://a/\x7f", "https://a/\xc3\xa9",
      "https://[::1/", "https://[zz]/", "https://ex!ample.com/",
      "https://a/b c", " https://a/", "https://a/\r\nHost: evil",
      /* A numeric last label must be a dotted quad: inet_aton would read
      ** these as 127.0.0.1, 127.0.0.8 and 127.0.0.1 while the certificate
      ** check saw a DNS name. */
      "https://127.1/", "https://127.0.0.010/", "https://0x7f.0.0.1/",
      "https://127.0.0.0x1/", "https://1.2.3.4.5/", "https://4294967295/",
      "https://127.0.0.1./",
      /* Brackets hold an IPv6 address only (found by fuzz_http_url: the
      ** bracketed text came out unbracketed as another host). */
      "http://[127.0.0.17.0.0.1]/", "https://[127.0.0.1]/", "https://[]/",
      "https://[1:2:3]/", "https://[::1::2]/",
  };
  char longhost[300];
  ob__http_url_t u;
  (void)state;

  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    if (ob__http_url_parse(bad[i], &u) != OB__HTTP_E_URL)
      fail_msg("accepted bad URL #%zu: %s", i, bad[i]);
  }
  assert_int_equal(ob__http_url_parse(NULL, &u), OB__HTTP_E_URL);
  memcpy(longhost, "https://", 8);
  memset(longhost + 8, 'a', 256);
  strcpy(longhost + 8 + 256, "/");
  assert_int_equal(ob__http_url_parse(longhost, &u), OB__HTTP_E_URL);
  longhost[8 + 255] = '/';
  longhost[8 + 256] = '\0';
  assert_int_equal(ob__http_url_parse(longhost, &u), 0);  /* 255 is fine */
}

static void test_error_table(void** state) {
  int codes[] = {
#define XX(name, code, text) code,
      OB__HTTP_ERRNO_MAP(XX)
#undef XX
  };
  size_t n = sizeof codes / sizeof codes[0];
  (void)state;

  for (size_t i = 0; i < n; i++) {
    /* Outside oncebox.h's range, inside ours, unique, named. */
    assert_true(codes[i] <= -100 && codes[i] >= -139);
    for (size_t j = i + 1; j < n; j++) assert_int_not_equal(codes[i], codes[j]);
    assert_string_not_equal(ob__http_strerror(codes[i]), "unknown error");
    assert_memory_equal(ob__http_err_name(codes[i]), "OB__HTTP_E_", 11);
  }
  assert_string_equal(ob__http_err_name(OB__HTTP_E_TLS_EXPIRED),
                      "OB__HTTP_E_TLS_EXPIRED");
  assert_string_equal(ob__http_strerror(OB_EINVAL), ob_strerror(OB_EINVAL));
  assert_string_equal(ob__http_err_name(OB_ENOMEM), "OB_ENOMEM");
  assert_string_equal(ob__http_strerror(-138), "unknown error");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_valid_urls),
      cmocka_unit_test(test_invalid_urls),
      cmocka_unit_test(test_error_table),
  };
  return cmocka_run_group_tests_name("http_url", tests, NULL, NULL);
}
