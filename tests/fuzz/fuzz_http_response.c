/* SPDX-License-Identifier: Apache-2.0 */
/*
** Fuzz target: the HTTP/1.1 response parser (platform/http/response.c on
** llhttp): status line, headers, Content-Length and chunked framing,
** trailers, interim 1xx responses, caps, EOF handling.
**
** Input: one flags byte, then the bytes the server sends.
**   flags bit 0   HEAD request (no body whatever the headers say)
**   flags bit 1   small limits (512-byte header, 8 fields, 4 KiB body), so
**                 the caps are reachable with small inputs
**   flags bits 2-7 seed of the random split used for the second run
** Up to 4 responses are read from the stream one after the other (what
** follows a complete response is handed to a fresh parser, as a pipelined
** stream would be); when the input ends before a response is complete the
** peer "closes" (ob__http_parser_eof).
**
** Properties checked, beyond "no crash, no ASan/UBSan report, no leak":
**   - the outcome does not depend on how the network splits the bytes: the
**     stream is parsed fed whole, fed in pseudo-random pieces, and fed one
**     byte at a time, and the results (codes, bytes used, status, headers,
**     body) must agree (byte by byte only up to 2 KiB). Exception: the raw-header-bytes guard in
**     ob__http_parser_feed only looks between feeds, so an outcome of
**     OB__HTTP_E_HEADER_TOO_BIG is allowed to differ.
**   - a complete response has a final status 200..999, at most max_headers
**     headers whose names are RFC 9110 tokens and whose values hold no CR or
**     LF, a body within max_body_bytes that is NUL-terminated, and no body
**     for HEAD.
**   - an error is a negative OB__HTTP_E_* / OB_E* code with a NUL-terminated
**     detail.
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform/http/http_int.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

#define MAX_RESPONSES 4

typedef struct {
  int rc;            /* 1 complete, or a negative code */
  size_t used;       /* bytes of the stream this response took */
  int status;
  size_t nheaders;
  uint64_t hdr_hash;
  size_t body_len;
  uint64_t body_hash;
  int keep_alive;
} resp_t;

typedef struct {
  resp_t r[MAX_RESPONSES];
  size_t n;
} outcome_t;

static void fail(const char* what, const char* detail) {
  fprintf(stderr, "fuzz_http_response: property violated: %s%s%s\n", what,
          detail ? ": " : "", detail ? detail : "");
  abort();
}

/* Known open bugs (see OB_FUZZ_OPEN_CRASHERS in CMakeLists.txt) can be
** tolerated by id through OB_FUZZ_TOLERATE="id1,id2" so that a long run
** keeps looking for new ones; run_fuzzers.sh sets it. Replay tests never do. */
static int tolerated(const char* id) {
  const char* t = getenv("OB_FUZZ_TOLERATE");
  size_t n = strlen(id);
  for (const char* p = t; p && (p = strstr(p, id)) != NULL; p += n)
    if ((p == t || p[-1] == ',') && (p[n] == '\0' || p[n] == ','))
      return 1;
  return 0;
}

static uint64_t fnv(uint64_t h, const void* p, size_t n) {
  const unsigned char* s = p;
  for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 1099511628211u;
  return h;
}

static int tchar(unsigned char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
         (ch >= '0' && ch <= '9') ||
         (ch != 0 && strchr("!#$%&'*+-.^_`|~", ch) != NULL);
}

static uint64_t rng_next(uint64_t* s) {
  uint64_t x = *s;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *s = x;
  return x * 2685821657736338717u;
}

/* Check a finished parser and record what it produced. */
static void record(ob__http_parser_t* p, const ob__http_limits_t* lim,
                   int head, int rc, resp_t* out) {
  ob__http_response_t res;
  memset(out, 0, sizeof *out);
  out->rc = rc;
  if (rc < 0) {
    if (memchr(p->detail, '\0', sizeof p->detail) == NULL)
      fail("detail not NUL-terminated", NULL);
    if (ob__http_strerror(rc) == NULL) fail("no text for the code", NULL);
    if (rc < -139) fail("code out of range", p->detail);
  } else if (rc != 1) {
    fail("unexpected return", NULL);
  }
  /* Also after an error: the client builds a response for every outcome. */
  if (ob__http_parser_response(p, &res) != 0) return; /* OB_ENOMEM */
  if (res.body == NULL) fail("body is NULL", NULL);
  if (res.body[res.body_len] != '\0') fail("body not NUL-terminated", NULL);
  if (res.body_len > lim->max_body_bytes) fail("body over the cap", NULL);
  if (res.nheaders > lim->max_headers) fail("too many headers", NULL);
  if (rc != 1) return;

  if (res.status < 200 || res.status > 999) fail("final status", NULL);
  if (head && res.body_len != 0) fail("body on a HEAD response", NULL);
  out->status = res.status;
  out->nheaders = res.nheaders;
  out->body_len = res.body_len;
  out->body_hash = fnv(14695981039346656037u, res.body, res.body_len);
  out->keep_alive = p->keep_alive;
  out->hdr_hash = 14695981039346656037u;
  for (size_t i = 0; i < res.nheaders; i++) {
    const char* n = res.headers[i].name;
    const char* v = res.headers[i].value;
    if (n == NULL || v == NULL) fail("NULL header", NULL);
    /* Open: response.c accepts a header line ":value" (no name). */
    if (*n == '\0' && !tolerated("http_empty_field_name"))
      fail("empty header name", NULL);
    for (const char* c = n; *c; c++)
      if (!tchar((unsigned char)*c)) fail("header name not a token", n);
    if (strpbrk(v, "\r\n") != NULL) fail("CR or LF in a header value", n);
    out->hdr_hash = fnv(out->hdr_hash, n, strlen(n) + 1);
    out->hdr_hash = fnv(out->hdr_hash, v, strlen(v) + 1);
  }
}

/* Parse the stream; mode 0 whole, 1 random pieces, 2 byte by byte. */
static void run(const char* s, size_t len, const ob__http_limits_t* lim,
                int head, int mode, uint64_t seed, outcome_t* oc) {
  size_t off = 0;
  uint64_t rs = seed * 0x9E3779B97F4A7C15u + 1;
  memset(oc, 0, sizeof *oc);
  while (oc->n < MAX_RESPONSES && off < len) {
    ob__http_parser_t p;
    size_t start = off;
    int rc = 0;
    ob__http_parser_init(&p, lim, head);
    while (off < len) {
      size_t n = len - off, used = 0;
      if (mode == 1) {
        uint64_t r = rng_next(&rs);
        size_t piece = 1 + (size_t)((r >> 8) % ((r & 3) == 0 ? 200 : 7));
        if (piece < n) n = piece;
      } else if (mode == 2) {
        n = 1;
      }
      rc = ob__http_parser_feed(&p, s + off, n, &used);
      if (used > n) fail("used > len", NULL);
      if (rc == 0 && used != n) fail("need-more did not use every byte", NULL);
      off += used;
      if (rc != 0) break;
    }
    if (rc == 0) {
      rc = ob__http_parser_eof(&p);
      if (rc == 0) fail("eof returned 0", NULL);
      /* Once settled, the parser keeps its answer. */
      if (ob__http_parser_eof(&p) != rc) fail("eof not sticky", NULL);
    }
    record(&p, lim, head, rc, &oc->r[oc->n]);
    oc->r[oc->n].used = off - start;
    oc->n++;
    ob__http_parser_free(&p);
    if (rc != 1) break;
    if (off == start) break; /* nothing consumed: stop */
  }
}

static int has_header_too_big(const outcome_t* o) {
  for (size_t i = 0; i < o->n; i++)
    if (o->r[i].rc == OB__HTTP_E_HEADER_TOO_BIG) return 1;
  return 0;
}

static void compare(const outcome_t* a, const outcome_t* b, const char* what) {
  if (has_header_too_big(a) || has_header_too_big(b)) return;
  if (a->n != b->n) fail("split changed the number of responses", what);
  for (size_t i = 0; i < a->n; i++) {
    const resp_t* x = &a->r[i];
    const resp_t* y = &b->r[i];
    if (x->rc != y->rc) {
      char d[96];
      snprintf(d, sizeof d, "%s: response %zu: %d vs %d", what, i, x->rc,
               y->rc);
      fail("split changed the outcome", d);
    }
    if (x->rc != 1) continue;
    if (x->used != y->used || x->status != y->status ||
        x->nheaders != y->nheaders || x->hdr_hash != y->hdr_hash ||
        x->body_len != y->body_len || x->body_hash != y->body_hash ||
        x->keep_alive != y->keep_alive)
      fail("split changed the response", what);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const ob__http_limits_t normal = {16384, 100, 1024 * 1024};
  static const ob__http_limits_t small = {512, 8, 4096};
  const ob__http_limits_t* lim;
  outcome_t whole, pieces, bytes;
  int head;
  char* s;
  size_t len;

  if (size < 1 || size > 256 * 1024) return 0;
  head = data[0] & 1;
  lim = (data[0] & 2) ? &small : &normal;
  len = size - 1;
  /* A private exact-size copy: the parser must not read past len. */
  s = malloc(len ? len : 1);
  if (s == NULL) return 0;
  memcpy(s, data + 1, len);

  run(s, len, lim, head, 0, 0, &whole);
  run(s, len, lim, head, 1, data[0] >> 2, &pieces);
  compare(&whole, &pieces, "random pieces");
  if (len <= 2048) { /* one feed per byte: the costly run */
    run(s, len, lim, head, 2, 0, &bytes);
    compare(&whole, &bytes, "byte by byte");
  }
  free(s);
  return 0;
}
