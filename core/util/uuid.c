/* SPDX-License-Identifier: Apache-2.0 */
/* UUID text and UUIDv7 generation (RFC 9562). */
#include "core/util/uuid.h"

#include <string.h>

#include "core/util/assert.h"

/* UUIDv7 layout (RFC 9562 section 5.7), 128 bits, big-endian:
**   48 unix_ts_ms | 4 ver=0111 | 12 rand_a | 2 var=10 | 62 rand_b
** Monotonicity uses RFC 9562 section 6.2 method 1 (fixed-length dedicated
** counter): a 42-bit counter fills rand_a and the top 30 bits of rand_b, the
** low 32 bits of rand_b are fresh random bytes for every id. The counter is
** seeded randomly at each new millisecond with its top bit clear (the RFC's
** rollover guard), so at least 2^41 ids fit in one millisecond before the
** timestamp has to be bumped. */
#define UUID7_SEQ_BITS 42
#define UUID7_SEQ_MAX ((UINT64_C(1) << UUID7_SEQ_BITS) - 1)
#define UUID7_TS_MAX ((INT64_C(1) << 48) - 1)

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

int ob__uuid_parse(const char* s, uint8_t out[16]) {
  uint8_t b[16];
  int i, n = 0;
  if (s == NULL) return -1;
  for (i = 0; i < OB_UUID_STRLEN; i++) {
    int hi, lo;
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (s[i] != '-') return -1;
      continue;
    }
    /* s[i] may be the terminating NUL: hexval rejects it before we read on. */
    if ((hi = hexval(s[i])) < 0) return -1;
    i++;
    if ((lo = hexval(s[i])) < 0) return -1;
    b[n++] = (uint8_t)(hi << 4 | lo);
  }
  if (s[OB_UUID_STRLEN] != '\0') return -1;
  memcpy(out, b, sizeof b);
  return 0;
}

void ob__uuid_format(const uint8_t in[16], char out[OB_UUID_BUFLEN]) {
  static const char hex[] = "0123456789abcdef";
  int i, o = 0;
  for (i = 0; i < 16; i++) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out[o++] = '-';
    out[o++] = hex[in[i] >> 4];
    out[o++] = hex[in[i] & 15];
  }
  OB__ASSERT(o == OB_UUID_STRLEN);
  out[o] = '\0';
}

int ob__uuid_normalize(const char* s, char out[OB_UUID_BUFLEN]) {
  uint8_t b[16];
  /* Parse fully before writing: out may be s itself. */
  if (ob__uuid_parse(s, b) != 0) return -1;
  ob__uuid_format(b, out);
  return 0;
}

static uint64_t random_bits(const ob_clock_t* c, int nbytes) {
  uint8_t buf[8] = {0};
  uint64_t v = 0;
  int i;
  c->random(c->ctx, buf, (size_t)nbytes);
  for (i = 0; i < nbytes; i++) v = v << 8 | buf[i];
  return v;
}

static uint64_t seed_seq(const ob_clock_t* c) {
  return random_bits(c, 6) & (UUID7_SEQ_MAX >> 1);
}

void ob__uuid7_next(ob__uuid7_gen_t* g, const ob_clock_t* c, char out[OB_UUID_BUFLEN]) {
  ob__uuid7_next_at(g, c, c->now_ms(c->ctx), out);
}

void ob__uuid7_next_at(ob__uuid7_gen_t* g, const ob_clock_t* c, int64_t now,
                       char out[OB_UUID_BUFLEN]) {
  uint64_t rand_a, rand_b;
  uint8_t b[16];
  int i;

  /* A clock before 1970 or after the year 10889 cannot be encoded; at the
  ** upper bound monotonicity is lost, which we accept. */
  if (now < 0) now = 0;
  if (now > UUID7_TS_MAX) now = UUID7_TS_MAX;

  if (now > g->last_ms) {
    g->last_ms = now;
    g->last_seq = seed_seq(c);
  } else if (g->last_seq < UUID7_SEQ_MAX) {
    /* Same millisecond, or the clock stepped back: keep the last timestamp
    ** and count up, so the id still sorts after the previous one. */
    g->last_seq++;
  } else {
    /* Counter exhausted: borrow the next millisecond. Ids run ahead of the
    ** clock by the borrowed amount until the clock catches up. */
    if (g->last_ms < UUID7_TS_MAX) g->last_ms++;
    g->last_seq = seed_seq(c);
  }

  /* 42 bits: the top 12 go to rand_a, which must not spill into the
  ** version nibble. */
  OB__ASSERT(g->last_seq <= UUID7_SEQ_MAX);
  rand_a = g->last_seq >> 30;
  rand_b = (g->last_seq & ((UINT64_C(1) << 30) - 1)) << 32 | random_bits(c, 4);
  for (i = 0; i < 6; i++)
    b[i] = (uint8_t)((uint64_t)g->last_ms >> (40 - 8 * i));
  b[6] = (uint8_t)(0x70 | rand_a >> 8);
  b[7] = (uint8_t)rand_a;
  b[8] = (uint8_t)(0x80 | rand_b >> 56);
  for (i = 9; i < 16; i++) b[i] = (uint8_t)(rand_b >> (8 * (15 - i)));

  memcpy(g->last, b, sizeof b);
  ob__uuid_format(b, out);
}
