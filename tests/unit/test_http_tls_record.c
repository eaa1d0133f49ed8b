/* SPDX-License-Identifier: Apache-2.0 */
/*
** The record sniffer (platform/http/tls_record.c) on hand-made server
** flights: what the failure messages need is found in the clear, the same
** whether the bytes come at once or one by one, and nothing is read once
** the records are encrypted.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "platform/http/tls_record.h"

typedef struct {
  uint8_t b[40000];
  size_t n;
} flight_t;

static void put(flight_t* f, const void* p, size_t n) {
  assert_true(f->n + n <= sizeof f->b);
  memcpy(f->b + f->n, p, n);
  f->n += n;
}

static void record(flight_t* f, int type, const uint8_t* body, size_t n) {
  uint8_t h[5] = {(uint8_t)type, 3, 3, (uint8_t)(n >> 8), (uint8_t)n};
  put(f, h, 5);
  put(f, body, n);
}

/* A handshake message: type, 24-bit length, body. */
static size_t hs(uint8_t* out, int type, const uint8_t* body, size_t n) {
  out[0] = (uint8_t)type;
  out[1] = (uint8_t)(n >> 16);
  out[2] = (uint8_t)(n >> 8);
  out[3] = (uint8_t)n;
  memcpy(out + 4, body, n);
  return 4 + n;
}

/* A ServerHello body; supported_versions when sv != 0; random all 0x11
** unless hrr. */
static size_t hello_body(uint8_t* b, unsigned legacy, unsigned suite,
                         unsigned sv, int hrr) {
  static const uint8_t k_hrr[32] = {
      0xCF, 0x21, 0xAD, 0x74, 0xE5, 0x9A, 0x61, 0x11, 0xBE, 0x1D, 0x8C,
      0x02, 0x1E, 0x65, 0xB8, 0x91, 0xC2, 0xA2, 0x11, 0x16, 0x7A, 0xBB,
      0x8C, 0x5E, 0x07, 0x9E, 0x09, 0xE2, 0xC8, 0xA8, 0x33, 0x9C};
  size_t n = 0;
  b[n++] = (uint8_t)(legacy >> 8);
  b[n++] = (uint8_t)legacy;
  if (hrr)
    memcpy(b + n, k_hrr, 32);
  else
    memset(b + n, 0x11, 32);
  n += 32;
  b[n++] = 32; /* session id */
  memset(b + n, 0x22, 32);
  n += 32;
  b[n++] = (uint8_t)(suite >> 8);
  b[n++] = (uint8_t)suite;
  b[n++] = 0; /* compression */
  if (sv) {
    /* extensions: renegotiation_info (empty), then supported_versions */
    static const uint8_t ext[] = {0x00, 0x0e, 0xff, 0x01, 0x00, 0x01, 0x00,
                                  0x00, 0x2b, 0x00, 0x02, 0, 0};
    memcpy(b + n, ext, sizeof ext);
    b[n + 11] = (uint8_t)(sv >> 8);
    b[n + 12] = (uint8_t)sv;
    n += sizeof ext;
  }
  return n;
}

/* Feed the flight whole, and again one byte at a time: same findings. */
static void sniff_both(const flight_t* f, ob__tls_sniff_t* s) {
  ob__tls_sniff_t one;
  ob__tls_sniff_init(s);
  ob__tls_sniff_feed(s, f->b, f->n);
  ob__tls_sniff_init(&one);
  for (size_t i = 0; i < f->n; i++) ob__tls_sniff_feed(&one, f->b + i, 1);
  assert_int_equal(one.alert, s->alert);
  assert_int_equal(one.alert_after_hello, s->alert_after_hello);
  assert_int_equal(one.hello, s->hello);
  assert_int_equal(one.hrr, s->hrr);
  assert_int_equal(one.version, s->version);
  assert_int_equal(one.suite, s->suite);
  assert_int_equal(one.ske_group, s->ske_group);
  assert_int_equal(one.ske_sigalg, s->ske_sigalg);
  assert_int_equal(one.split_type, s->split_type);
  assert_int_equal(one.split_len, s->split_len);
  assert_int_equal(one.encrypted, s->encrypted);
}

static void test_alert_before_hello(void** state) {
  flight_t f = {.n = 0};
  ob__tls_sniff_t s;
  const uint8_t alert[2] = {2, 70};
  (void)state;
  record(&f, 21, alert, 2);
  sniff_both(&f, &s);
  assert_int_equal(s.alert, 70);
  assert_int_equal(s.alert_level, 2);
  assert_false(s.alert_after_hello);
  assert_false(s.hello);
  assert_string_equal(ob__tls_alert_name(s.alert), "protocol_version");
}

/* A TLS 1.2 flight: ServerHello and ServerKeyExchange in one record, then
** a ChangeCipherSpec; a 2-byte alert after it is still seen (it would be
** longer if encrypted), a handshake record is not read. */
static void test_tls12_hello_and_key_exchange(void** state) {
  flight_t f = {.n = 0};
  ob__tls_sniff_t s;
  uint8_t body[200], rec[600];
  size_t n, r = 0;
  /* named_curve secp224r1, a 3-byte point, SHA-1 + ECDSA */
  const uint8_t ske[] = {3, 0x00, 0x15, 3, 9, 9, 9, 0x02, 0x03, 0, 2, 7, 7};
  const uint8_t ccs[1] = {1};
  const uint8_t alert[2] = {2, 40};
  (void)state;
  n = hello_body(body, 0x0303, 0xC02F, 0, 0);
  r += hs(rec + r, 2, body, n);
  r += hs(rec + r, 12, ske, sizeof ske);
  record(&f, 22, rec, r);
  record(&f, 20, ccs, 1);
  r = hs(rec, 2, body, n); /* would read as a second ServerHello */
  rec[4 + 2 + 32 + 1 + 32] = 0x99;
  record(&f, 22, rec, r);
  record(&f, 21, alert, 2);
  sniff_both(&f, &s);
  assert_true(s.hello);
  assert_int_equal(s.version, 0x0303);
  assert_int_equal(s.suite, 0xC02F);
  assert_true(s.ske && s.ske_named);
  assert_int_equal(s.ske_group, 0x0015);
  assert_int_equal(s.ske_sigalg, 0x0203);
  assert_true(s.encrypted);
  assert_int_equal(s.alert, 40);
  assert_true(s.alert_after_hello);
  assert_int_equal(s.split_type, -1);
}

/* TLS 1.3: the version from supported_versions, and nothing read after
** the ServerHello (the encrypted flight is application_data records; a
** handshake record there is not parsed). An HRR first is not the hello. */
static void test_tls13_hello(void** state) {
  flight_t f = {.n = 0};
  ob__tls_sniff_t s;
  uint8_t body[200], rec[600];
  size_t n, r;
  const uint8_t ccs[1] = {1};
  const uint8_t junk[40] = {0};
  (void)state;
  n = hello_body(body, 0x0303, 0x1302, 0x0304, 1);
  r = hs(rec, 2, body, n);
  record(&f, 22, rec, r);
  record(&f, 20, ccs, 1);
  n = hello_body(body, 0x0303, 0x1301, 0x0304, 0);
  r = hs(rec, 2, body, n);
  record(&f, 22, rec, r);
  record(&f, 23, junk, sizeof junk);
  n = hello_body(body, 0x0303, 0xC02F, 0, 0);
  r = hs(rec, 2, body, n);
  record(&f, 22, rec, r);
  sniff_both(&f, &s);
  assert_int_equal(s.hrr, 1);
  assert_true(s.hello);
  assert_int_equal(s.version, 0x0304);
  assert_int_equal(s.suite, 0x1301);
  assert_true(s.encrypted);
  assert_int_equal(s.alert, -1);
  assert_string_equal(ob__tls_version_name(s.version), "TLS 1.3");
}

static void test_old_version(void** state) {
  flight_t f = {.n = 0};
  ob__tls_sniff_t s;
  uint8_t body[200], rec[600];
  size_t n, r;
  (void)state;
  n = hello_body(body, 0x0302, 0xC013, 0, 0);
  r = hs(rec, 2, body, n);
  record(&f, 22, rec, r);
  sniff_both(&f, &s);
  assert_int_equal(s.version, 0x0302);
  assert_string_equal(ob__tls_version_name(s.version), "TLS 1.1");
}

/* A Certificate message of 20000 bytes in two records. */
static void test_split_message(void** state) {
  static uint8_t cert[20000], rec[20004];
  flight_t f = {.n = 0};
  ob__tls_sniff_t s;
  size_t r;
  (void)state;
  memset(cert, 0x30, sizeof cert);
  r = hs(rec, 11, cert, sizeof cert);
  record(&f, 22, rec, 16384);
  record(&f, 22, rec + 16384, r - 16384);
  sniff_both(&f, &s);
  assert_int_equal(s.split_type, 11);
  assert_int_equal(s.split_len, 20000);
}

/* Not TLS (an HTTP answer on a TLS port): sniffing stops, nothing found. */
static void test_not_tls(void** state) {
  ob__tls_sniff_t s;
  const char* http = "HTTP/1.1 400 Bad Request\r\n\r\n";
  (void)state;
  ob__tls_sniff_init(&s);
  ob__tls_sniff_feed(&s, (const uint8_t*)http, strlen(http));
  assert_true(s.lost);
  assert_false(s.hello);
  assert_int_equal(s.alert, -1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_alert_before_hello),
      cmocka_unit_test(test_tls12_hello_and_key_exchange),
      cmocka_unit_test(test_tls13_hello),
      cmocka_unit_test(test_old_version),
      cmocka_unit_test(test_split_message),
      cmocka_unit_test(test_not_tls),
  };
  return cmocka_run_group_tests_name("http_tls_record", tests, NULL, NULL);
}
