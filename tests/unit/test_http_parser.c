/* SPDX-License-Identifier: Apache-2.0 */
/*
** The response parser (platform/http/response.c) without sockets: valid
** framings, and every hostile case mapped to its specific error, fed whole
** and one byte at a time (the network may split anywhere), with memory
** bounded by the limits.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "platform/http/http_int.h"

static const ob__http_limits_t k_lim = {16384, 100, 1024 * 1024};

typedef struct {
  int rc;         /* final: 1 complete, or negative */
  size_t used;    /* bytes of the input that belong to the response */
  ob__http_parser_t p;
} run_t;

/* Feed s in pieces of `step` bytes (0: all at once); at the end of input
** signal EOF if `eof`. */
static void run(run_t* r, const char* s, size_t len, size_t step, int eof,
                int head) {
  size_t off = 0;
  ob__http_parser_init(&r->p, &k_lim, head);
  r->rc = 0;
  r->used = 0;
  while (off < len) {
    size_t n = step ? step : len;
    size_t used = 0;
    if (n > len - off) n = len - off;
    r->rc = ob__http_parser_feed(&r->p, s + off, n, &used);
    if (r->rc != 0) {
      r->used = off + used;
      return;
    }
    off += n;
  }
  r->used = off;
  if (eof) r->rc = ob__http_parser_eof(&r->p);
}

/* Same outcome whole and byte by byte. */
static int outcome(const char* s, int eof, int head) {
  run_t a, b;
  size_t len = strlen(s);
  run(&a, s, len, 0, eof, head);
  run(&b, s, len, 1, eof, head);
  if (a.rc != b.rc)
    fprintf(stderr, "whole %d (%s) vs bytewise %d (%s)\n", a.rc, a.p.detail,
            b.rc, b.p.detail);
  assert_int_equal(a.rc, b.rc);
  if (a.rc == 1) {
    assert_int_equal(a.used, b.used);
    assert_int_equal(a.p.body_len, b.p.body_len);
  }
  ob__http_parser_free(&a.p);
  ob__http_parser_free(&b.p);
  return a.rc;
}

static void test_content_length(void** state) {
  const char* s = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
                  "X-Empty:\r\nContent-Length: 5\r\n\r\nhelloNEXT";
  run_t r;
  ob__http_response_t res;
  (void)state;
  run(&r, s, strlen(s), 0, 0, 0);
  assert_int_equal(r.rc, 1);
  assert_int_equal(r.used, strlen(s) - 4);  /* "NEXT" is not ours */
  assert_int_equal(r.p.keep_alive, 1);
  assert_int_equal(ob__http_parser_response(&r.p, &res), 0);
  assert_int_equal(res.status, 200);
  assert_int_equal(res.nheaders, 3);
  assert_string_equal(res.headers[0].name, "Content-Type");
  assert_string_equal(res.headers[0].value, "text/plain");
  assert_string_equal(res.headers[1].name, "X-Empty");
  assert_string_equal(res.headers[1].value, "");
  assert_string_equal(ob__http_header_get(&res, "content-length"), "5");
  assert_null(ob__http_header_get(&res, "nope"));
  assert_int_equal(res.body_len, 5);
  assert_string_equal((const char*)res.body, "hello");
  ob__http_parser_free(&r.p);
  assert_int_equal(outcome(s, 0, 0), 1);
}

static void test_chunked_with_trailer(void** state) {
  const char* s = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                  "5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nX-T: t\r\n\r\n";
  run_t r;
  (void)state;
  run(&r, s, strlen(s), 1, 0, 0);
  assert_int_equal(r.rc, 1);
  assert_int_equal(r.p.body_len, 11);
  assert_memory_equal(r.p.body, "hello world", 11);
  assert_int_equal(r.p.nhdrs, 1);  /* the trailer is not a header */
  ob__http_parser_free(&r.p);
}

static void test_interim_responses_skipped(void** state) {
  const char* s = "HTTP/1.1 100 Continue\r\n\r\n"
                  "HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n"
                  "HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok";
  run_t r;
  (void)state;
  run(&r, s, strlen(s), 0, 0, 0);
  assert_int_equal(r.rc, 1);
  assert_int_equal(r.p.status, 201);
  assert_int_equal(r.p.nhdrs, 1);  /* only the final response's */
  ob__http_parser_free(&r.p);
  assert_int_equal(outcome(s, 0, 0), 1);
}

static void test_too_many_interim(void** state) {
  char s[4096] = "";
  (void)state;
  for (int i = 0; i < 20; i++) strcat(s, "HTTP/1.1 100 Continue\r\n\r\n");
  assert_int_equal(outcome(s, 0, 0), OB__HTTP_E_BAD_RESPONSE);
}

static void test_switching_protocols_refused(void** state) {
  (void)state;
  assert_int_equal(outcome("HTTP/1.1 101 Switching Protocols\r\n"
                           "Upgrade: h2c\r\nConnection: Upgrade\r\n\r\n",
                           0, 0),
                   OB__HTTP_E_BAD_RESPONSE);
}

static void test_head_has_no_body(void** state) {
  const char* s = "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n";
  (void)state;
  assert_int_equal(outcome(s, 0, 1), 1);
  assert_int_equal(outcome(s, 0, 0), 0);  /* GET: 1000 bytes still due */
}

static void test_no_content_statuses(void** state) {
  (void)state;
  assert_int_equal(outcome("HTTP/1.1 204 No Content\r\n\r\n", 0, 0), 1);
  assert_int_equal(outcome("HTTP/1.1 304 Not Modified\r\nETag: x\r\n\r\n", 0, 0),
                   1);
}

static void test_body_until_close(void** state) {
  const char* s = "HTTP/1.0 200 OK\r\n\r\nbody until close";
  run_t r;
  (void)state;
  run(&r, s, strlen(s), 0, 1, 0);
  assert_int_equal(r.rc, 1);
  assert_int_equal(r.p.keep_alive, 0);
  assert_int_equal(r.p.body_len, 16);
  ob__http_parser_free(&r.p);
  assert_int_equal(outcome(s, 1, 0), 1);
  assert_int_equal(outcome("HTTP/1.1 200 OK\r\n\r\nno length", 1, 0), 1);
}

static void test_connection_close_not_kept(void** state) {
  const char* s = "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
  run_t r;
  (void)state;
  run(&r, s, strlen(s), 0, 0, 0);
  assert_int_equal(r.rc, 1);
  assert_int_equal(r.p.keep_alive, 0);
  ob__http_parser_free(&r.p);
}

static void test_truncation_is_eof(void** state) {
  (void)state;
  assert_int_equal(
      outcome("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nabc", 1, 0),
      OB__HTTP_E_EOF);
  assert_int_equal(outcome("HTTP/1.1 200 OK\r\nContent-Le", 1, 0),
                   OB__HTTP_E_EOF);
  assert_int_equal(
      outcome("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
              1, 0),
      OB__HTTP_E_EOF);
  assert_int_equal(outcome("", 1, 0), OB__HTTP_E_EOF);
}

static void test_content_length_attacks(void** state) {
  (void)state;
  assert_int_equal(
      outcome("HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\n",
              0, 0),
      OB__HTTP_E_BAD_CONTENT_LENGTH);
  assert_int_equal(outcome("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", 0, 0),
                   OB__HTTP_E_BAD_CONTENT_LENGTH);
  assert_int_equal(outcome("HTTP/1.1 200 OK\r\nContent-Length: 1 2\r\n\r\n", 0, 0),
                   OB__HTTP_E_BAD_CONTENT_LENGTH);
  assert_int_equal(outcome("HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\n\r\n", 0, 0),
                   OB__HTTP_E_BAD_CONTENT_LENGTH);
  assert_int_equal(outcome("HTTP/1.1 200 OK\r\nContent-Length: 0x10\r\n\r\n", 0, 0),
                   OB__HTTP_E_BAD_CONTENT_LENGTH);
  /* Duplicates are refused, even when equal (llhttp is strict; fine). */
  assert_int_equal(outcome("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"
                           "Content-Length: 3\r\n\r\nokk",
                           0, 0),
                   OB__HTTP_E_BAD_CONTENT_LENGTH);
  assert_int_equal(outcome("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"
                           "Content-Length: 2\r\n\r\nok",
                           0, 0),
                   OB__HTTP_E_BAD_CONTENT_LENGTH);
  /* Valid number, larger than the body cap: refused before any body. */
  assert_int_equal(
      outcome("HTTP/1.1 200 OK\r\nContent-Length: 1099511627776\r\n\r\n", 0, 0),
      OB__HTTP_E_BODY_TOO_BIG);
}

static void test_cl_with_te(void** state) {
  (void)state;
  assert_int_equal(outcome("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n"
                           "Transfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
                           0, 0),
                   OB__HTTP_E_BAD_FRAMING);
  assert_int_equal(outcome("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
                           "Content-Length: 5\r\n\r\n2\r\nok\r\n0\r\n\r\n",
                           0, 0),
                   OB__HTTP_E_BAD_FRAMING);
  assert_int_equal(outcome("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n"
                           "Content-Length: 2\r\n\r\nok",
                           0, 0),
                   OB__HTTP_E_BAD_FRAMING);
}

static void test_bad_chunks(void** state) {
  (void)state;
  const char* h = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
  const char* bodies[] = {"zz\r\nok\r\n0\r\n\r\n",
                          "fffffffffffffffffffff\r\nok\r\n0\r\n\r\n",
                          "-5\r\nhello\r\n0\r\n\r\n", " 5\r\nhello\r\n0\r\n\r\n"};
  for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
    char s[256];
    snprintf(s, sizeof s, "%s%s", h, bodies[i]);
    assert_int_equal(outcome(s, 0, 0), OB__HTTP_E_BAD_CHUNK);
  }
}

static void test_garbage(void** state) {
  (void)state;
  assert_int_equal(outcome("HELLO WORLD\r\n\r\n", 0, 0), OB__HTTP_E_BAD_RESPONSE);
  assert_int_equal(outcome("HTTP/1.1 2000 OK\r\n\r\n", 0, 0),
                   OB__HTTP_E_BAD_RESPONSE);
  assert_int_equal(outcome("HTTP/1.1 abc OK\r\n\r\n", 0, 0),
                   OB__HTTP_E_BAD_RESPONSE);
  assert_int_equal(outcome("HTTP/9.9 200 OK\r\n\r\n", 0, 0),
                   OB__HTTP_E_BAD_RESPONSE);
  /* Debian's non-strict llhttp lets these through; response.c does not. */
  assert_int_equal(outcome("HTTP/1.1 200 OK\r\nBad Header: x\r\n\r\n", 0, 0),
                   OB__HTTP_E_BAD_RESPONSE);
  assert_int_equal(outcome("HTTP/1.1 200 OK\r\nX\x01: x\r\n\r\n", 0, 0),
                   OB__HTTP_E_BAD_RESPONSE);
  assert_int_equal(outcome("HTTP/1.1 20 OK\r\n\r\n", 0, 0),
                   OB__HTTP_E_BAD_RESPONSE);
}

static void test_long_header_line(void** state) {
  size_t n = 64 * 1024;
  char* s = malloc(n + 128);
  run_t r;
  (void)state;
  size_t h;
  strcpy(s, "HTTP/1.1 200 OK\r\nX-Long: ");
  h = strlen(s);
  memset(s + h, 'a', n);
  strcpy(s + h + n, "\r\nContent-Length: 0\r\n\r\n");
  run(&r, s, strlen(s), 0, 0, 0);
  assert_int_equal(r.rc, OB__HTTP_E_HEADER_TOO_BIG);
  assert_true(r.p.hcap <= 32 * 1024);  /* bounded: nothing near 64 KiB kept */
  ob__http_parser_free(&r.p);
  run(&r, s, strlen(s), 1000, 0, 0);
  assert_int_equal(r.rc, OB__HTTP_E_HEADER_TOO_BIG);
  ob__http_parser_free(&r.p);
  free(s);
}

static void test_many_headers(void** state) {
  size_t cap = 100000 * 16 + 64;
  char* s = malloc(cap);
  size_t off;
  run_t r;
  (void)state;
  off = (size_t)sprintf(s, "HTTP/1.1 200 OK\r\n");
  for (int i = 0; i < 100000; i++) off += (size_t)sprintf(s + off, "X-H%d: v\r\n", i);
  strcpy(s + off, "Content-Length: 0\r\n\r\n");
  run(&r, s, strlen(s), 4096, 0, 0);
  assert_int_equal(r.rc, OB__HTTP_E_HEADER_TOO_BIG);
  assert_true(r.p.hdrs_cap <= 128);
  ob__http_parser_free(&r.p);
  free(s);
}

/* Small headers, but more of them than max_headers. */
static void test_header_count_cap(void** state) {
  char s[8192];
  size_t off = (size_t)sprintf(s, "HTTP/1.1 200 OK\r\n");
  (void)state;
  for (int i = 0; i < 150; i++) off += (size_t)sprintf(s + off, "a%d:b\r\n", i);
  strcpy(s + off, "\r\n");
  assert_int_equal(outcome(s, 0, 0), OB__HTTP_E_HEADER_TOO_BIG);
}

static void test_whitespace_flood_bounded(void** state) {
  size_t n = 100000;
  char* s = malloc(n + 64);
  run_t r;
  (void)state;
  strcpy(s, "HTTP/1.1 200 OK\r\nX:");
  memset(s + 19, ' ', n);
  s[19 + n] = '\0';
  run(&r, s, strlen(s), 4096, 0, 0);
  assert_int_equal(r.rc, OB__HTTP_E_HEADER_TOO_BIG);
  ob__http_parser_free(&r.p);
  free(s);
}

static void test_endless_body_capped(void** state) {
  ob__http_parser_t p;
  char chunk[65536];
  size_t used;
  int rc = 0;
  size_t total = 0;
  const char* h = "HTTP/1.1 200 OK\r\n\r\n";
  (void)state;
  memset(chunk, 'x', sizeof chunk);
  ob__http_parser_init(&p, &k_lim, 0);
  assert_int_equal(ob__http_parser_feed(&p, h, strlen(h), &used), 0);
  while (rc == 0 && total < 64u * 1024 * 1024) {
    rc = ob__http_parser_feed(&p, chunk, sizeof chunk, &used);
    total += sizeof chunk;
  }
  assert_int_equal(rc, OB__HTTP_E_BODY_TOO_BIG);
  assert_true(p.body_len <= k_lim.max_body_bytes);
  assert_true(p.body_cap <= k_lim.max_body_bytes);
  assert_true(total <= k_lim.max_body_bytes + sizeof chunk);
  ob__http_parser_free(&p);
}

static void test_error_is_sticky(void** state) {
  ob__http_parser_t p;
  size_t used;
  const char* bad = "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n";
  const char* good = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
  (void)state;
  ob__http_parser_init(&p, &k_lim, 0);
  assert_int_equal(ob__http_parser_feed(&p, bad, strlen(bad), &used),
                   OB__HTTP_E_BAD_CONTENT_LENGTH);
  assert_int_equal(ob__http_parser_feed(&p, good, strlen(good), &used),
                   OB__HTTP_E_BAD_CONTENT_LENGTH);
  assert_int_equal(ob__http_parser_eof(&p), OB__HTTP_E_BAD_CONTENT_LENGTH);
  assert_non_null(strstr(p.detail, "Content-Length"));
  ob__http_parser_free(&p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_content_length),
      cmocka_unit_test(test_chunked_with_trailer),
      cmocka_unit_test(test_interim_responses_skipped),
      cmocka_unit_test(test_too_many_interim),
      cmocka_unit_test(test_switching_protocols_refused),
      cmocka_unit_test(test_head_has_no_body),
      cmocka_unit_test(test_no_content_statuses),
      cmocka_unit_test(test_body_until_close),
      cmocka_unit_test(test_connection_close_not_kept),
      cmocka_unit_test(test_truncation_is_eof),
      cmocka_unit_test(test_content_length_attacks),
      cmocka_unit_test(test_cl_with_te),
      cmocka_unit_test(test_bad_chunks),
      cmocka_unit_test(test_garbage),
      cmocka_unit_test(test_long_header_line),
      cmocka_unit_test(test_many_headers),
      cmocka_unit_test(test_header_count_cap),
      cmocka_unit_test(test_whitespace_flood_bounded),
      cmocka_unit_test(test_endless_body_capped),
      cmocka_unit_test(test_error_is_sticky),
  };
  return cmocka_run_group_tests_name("http_parser", tests, NULL, NULL);
}
