/* SPDX-License-Identifier: Apache-2.0 */
/* UUID parsing, formatting and UUIDv7 generation. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "core/util/uuid.h"
#include "tests/support/testsupport.h"

#define T0 1700000000123LL /* 2023-11-14T22:13:20.123Z */

static const uint8_t sample_bytes[16] = {
  0x01, 0x90, 0xf3, 0xa4, 0x7b, 0x2c, 0x7d, 0xef,
  0x81, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef
};
static const char sample[] = "0190f3a4-7b2c-7def-8123-456789abcdef";

static int64_t ts_of(const uint8_t b[16]) {
  int64_t t = 0;
  int i;
  for (i = 0; i < 6; i++) t = t << 8 | b[i];
  return t;
}

static void parse_text(const char* s, uint8_t b[16]) {
  assert_int_equal(ob__uuid_parse(s, b), 0);
}

static void test_parse_valid(void** state) {
  uint8_t b[16];
  (void)state;
  parse_text(sample, b);
  assert_memory_equal(b, sample_bytes, 16);
  parse_text("0190F3A4-7B2C-7DEF-8123-456789ABCDEF", b);
  assert_memory_equal(b, sample_bytes, 16);
  parse_text("0190f3A4-7b2C-7DeF-8123-456789AbCdEf", b);
  assert_memory_equal(b, sample_bytes, 16);
  parse_text("00000000-0000-0000-0000-000000000000", b);
  assert_int_equal(b[0] | b[15], 0);
  parse_text("ffffffff-ffff-ffff-ffff-ffffffffffff", b);
  assert_int_equal(b[0] & b[15], 0xff);
}

static void test_parse_invalid(void** state) {
  static const char* const bad[] = {
    "",
    "0190f3a4-7b2c-7def-8123-456789abcde",     /* 35: too short */
    "0190f3a4-7b2c-7def-8123-456789abcdef0",   /* 37: too long */
    "0190f3a4-7b2c-7def-8123-456789abcdeg",    /* bad char */
    "0190f3a4-7b2c-7def-8123-456789abcde ",
    "0190f3a4x7b2c-7def-8123-456789abcdef",    /* dash replaced */
    "0190f3a47b2c7def8123456789abcdef",        /* no dashes */
    "0190f3a47-b2c-7def-8123-456789abcdef",    /* dash misplaced */
    "{0190f3a4-7b2c-7def-8123-456789abcdef}",  /* braces */
    "0190f3a4-7b2c-7def-8123-456789abcdef}",
    "0190f3a4-7b2c-7def-8123-456789abcdefxyz", /* trailing garbage */
    "0190f3a4-7b2c-7def-8123-456789abcdef\n",
    " 0190f3a4-7b2c-7def-8123-456789abcdef",   /* leading space */
    "urn:uuid:0190f3a4-7b2c-7def-8123-456789abcdef",
    "+190f3a4-7b2c-7def-8123-456789abcdef",
    "0190f3a4-7b2c-7def-8123-456789abcd\xc3\xa9",
  };
  uint8_t b[16], before[16];
  size_t i;
  (void)state;
  memset(before, 0x5A, sizeof before);
  for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    memcpy(b, before, sizeof b);
    if (ob__uuid_parse(bad[i], b) != -1) fail_msg("accepted: %s", bad[i]);
    assert_memory_equal(b, before, 16); /* out untouched on failure */
  }
  assert_int_equal(ob__uuid_parse(NULL, b), -1);
}

/* A NUL inside the text ends it: the parser must not read past it. */
static void test_parse_stops_at_nul(void** state) {
  char s[OB_UUID_BUFLEN];
  uint8_t b[16];
  int i;
  (void)state;
  for (i = 0; i < 36; i++) {
    memcpy(s, sample, sizeof s);
    s[i] = '\0';
    assert_int_equal(ob__uuid_parse(s, b), -1);
  }
}

static void test_format(void** state) {
  char out[OB_UUID_BUFLEN];
  uint8_t b[16];
  (void)state;
  memset(out, 'x', sizeof out);
  ob__uuid_format(sample_bytes, out);
  assert_string_equal(out, sample);
  parse_text(out, b);
  assert_memory_equal(b, sample_bytes, 16);
}

static void test_normalize(void** state) {
  char out[OB_UUID_BUFLEN], inplace[OB_UUID_BUFLEN] = "0190F3A4-7B2C-7DEF-8123-456789ABCDEF";
  (void)state;
  assert_int_equal(ob__uuid_normalize("0190F3A4-7B2C-7DEF-8123-456789ABCDEF",
                                      out), 0);
  assert_string_equal(out, sample);
  assert_int_equal(ob__uuid_normalize(inplace, inplace), 0);
  assert_string_equal(inplace, sample);
  memset(out, 'x', sizeof out);
  assert_int_equal(ob__uuid_normalize("{0190f3a4-7b2c-7def-8123-456789abcdef}",
                                       out), -1);
  assert_int_equal(out[0], 'x');
}

static void test_v7_layout(void** state) {
  fake_clock_t fc;
  ob__uuid7_gen_t g;
  char s[OB_UUID_BUFLEN];
  uint8_t b[16];
  int i;
  (void)state;
  memset(&g, 0, sizeof g);
  fake_clock_init(&fc, T0, 42);
  for (i = 0; i < 1000; i++) {
    ob__uuid7_next(&g, &fc.clock, s);
    assert_int_equal(strlen(s), 36);
    assert_int_equal(ob_uuid_valid(s), 1);
    parse_text(s, b);
    assert_int_equal(b[6] >> 4, 7);         /* version 7 */
    assert_int_equal(b[8] >> 6, 2);         /* variant 0b10 */
    assert_int_equal(s[14], '7');
    assert_true(strchr("89ab", s[19]) != NULL);
    assert_int_equal(ts_of(b), fc.now);     /* timestamp = clock ms */
    assert_memory_equal(g.last, b, 16);
    fake_clock_advance(&fc, i % 3);
  }
  /* The 48-bit field really holds the ms: a clock value with every byte
  ** distinct shows up byte for byte. */
  fake_clock_init(&fc, 0x0102030405A6LL, 7);
  memset(&g, 0, sizeof g);
  ob__uuid7_next(&g, &fc.clock, s);
  assert_memory_equal(s, "01020304-05a6-7", 15);
}

/* Strictly increasing: as text (lower-case hex sorts like the bytes) and as
** bytes. */
static void assert_increasing(const char* prev, const char* cur) {
  uint8_t a[16], b[16];
  parse_text(prev, a);
  parse_text(cur, b);
  if (memcmp(a, b, 16) >= 0) fail_msg("%s !< %s", prev, cur);
  assert_true(strcmp(prev, cur) < 0);
}

static void test_v7_monotonic_same_ms(void** state) {
  fake_clock_t fc;
  ob__uuid7_gen_t g;
  char prev[OB_UUID_BUFLEN], cur[OB_UUID_BUFLEN];
  uint8_t b[16];
  uint32_t low_first = 0, low_differs = 0;
  int i;
  (void)state;
  memset(&g, 0, sizeof g);
  fake_clock_init(&fc, T0, 1);
  ob__uuid7_next(&g, &fc.clock, prev);
  parse_text(prev, b);
  low_first = (uint32_t)b[12] << 24 | b[13] << 16 | b[14] << 8 | b[15];
  for (i = 0; i < 100000; i++) {
    ob__uuid7_next(&g, &fc.clock, cur);
    assert_increasing(prev, cur);
    parse_text(cur, b);
    assert_int_equal(ts_of(b), T0);
    if (((uint32_t)b[12] << 24 | b[13] << 16 | b[14] << 8 | b[15]) !=
        low_first)
      low_differs++;
    memcpy(prev, cur, sizeof prev);
  }
  /* The low 32 bits stay random within the millisecond. */
  assert_true(low_differs > 99000);
}

static void test_v7_monotonic_clock_steps_back(void** state) {
  fake_clock_t fc;
  ob__uuid7_gen_t g;
  char prev[OB_UUID_BUFLEN], cur[OB_UUID_BUFLEN];
  uint8_t b[16];
  int64_t max_ms = T0;
  int i;
  (void)state;
  memset(&g, 0, sizeof g);
  fake_clock_init(&fc, T0, 99);
  ob__uuid7_next(&g, &fc.clock, prev);
  for (i = 0; i < 100000; i++) {
    /* Mostly forward, every 97th call a jump back of up to ~1 hour. */
    if (i % 97 == 0)
      fake_clock_advance(&fc, -(int64_t)(i % 3600) * 1000 - 1);
    else if (i % 5 == 0)
      fake_clock_advance(&fc, 1);
    ob__uuid7_next(&g, &fc.clock, cur);
    assert_increasing(prev, cur);
    parse_text(cur, b);
    if (fc.now > max_ms) max_ms = fc.now;
    /* Never behind the newest time seen, never invented ahead of it. */
    assert_int_equal(ts_of(b), max_ms);
    memcpy(prev, cur, sizeof prev);
  }
  /* Once the clock passes the last timestamp again, ids follow it. */
  fc.now = max_ms + 5;
  ob__uuid7_next(&g, &fc.clock, cur);
  assert_increasing(prev, cur);
  parse_text(cur, b);
  assert_int_equal(ts_of(b), max_ms + 5);
}

static void test_v7_counter_overflow_bumps_ms(void** state) {
  fake_clock_t fc;
  ob__uuid7_gen_t g;
  char prev[OB_UUID_BUFLEN], cur[OB_UUID_BUFLEN];
  uint8_t b[16];
  (void)state;
  memset(&g, 0, sizeof g);
  fake_clock_init(&fc, T0, 5);
  ob__uuid7_next(&g, &fc.clock, prev);
  g.last_seq = (UINT64_C(1) << 42) - 2; /* one increment left */
  ob__uuid7_next(&g, &fc.clock, cur);
  parse_text(cur, b);
  assert_int_equal(ts_of(b), T0);
  assert_int_equal(b[6] & 0x0f, 0x0f); /* counter all ones in rand_a */
  assert_int_equal(b[7], 0xff);
  memcpy(prev, cur, sizeof prev);
  ob__uuid7_next(&g, &fc.clock, cur); /* exhausted: borrow T0 + 1 */
  assert_increasing(prev, cur);
  parse_text(cur, b);
  assert_int_equal(ts_of(b), T0 + 1);
  assert_int_equal(g.last_ms, T0 + 1);
  /* The clock is still at T0: the next id keeps counting in T0 + 1. */
  memcpy(prev, cur, sizeof prev);
  ob__uuid7_next(&g, &fc.clock, cur);
  assert_increasing(prev, cur);
  parse_text(cur, b);
  assert_int_equal(ts_of(b), T0 + 1);
}

/* A new millisecond reseeds the counter with its top bit clear, so at least
** 2^41 ids fit before a bump. */
static void test_v7_seed_headroom(void** state) {
  fake_clock_t fc;
  ob__uuid7_gen_t g;
  char s[OB_UUID_BUFLEN];
  uint8_t b[16];
  int i, top_set = 0;
  uint64_t seeds_or = 0;
  (void)state;
  memset(&g, 0, sizeof g);
  fake_clock_init(&fc, T0, 11);
  for (i = 0; i < 2000; i++) {
    fake_clock_advance(&fc, 1);
    ob__uuid7_next(&g, &fc.clock, s);
    parse_text(s, b);
    if (b[6] & 0x08) top_set++;
    assert_true(g.last_seq < (UINT64_C(1) << 41));
    seeds_or |= g.last_seq;
  }
  assert_int_equal(top_set, 0);
  assert_int_equal(seeds_or, (UINT64_C(1) << 41) - 1); /* really random */
}

static void test_v7_same_seed_same_ids(void** state) {
  fake_clock_t a, b, c;
  ob__uuid7_gen_t ga, gb, gc;
  char sa[OB_UUID_BUFLEN], sb[OB_UUID_BUFLEN], sc[OB_UUID_BUFLEN];
  int i, differ = 0;
  (void)state;
  memset(&ga, 0, sizeof ga);
  memset(&gb, 0, sizeof gb);
  memset(&gc, 0, sizeof gc);
  fake_clock_init(&a, T0, 1234);
  fake_clock_init(&b, T0, 1234);
  fake_clock_init(&c, T0, 1235);
  for (i = 0; i < 1000; i++) {
    ob__uuid7_next(&ga, &a.clock, sa);
    ob__uuid7_next(&gb, &b.clock, sb);
    ob__uuid7_next(&gc, &c.clock, sc);
    assert_string_equal(sa, sb);
    if (strcmp(sa, sc) != 0) differ++;
    if (i % 10 == 0) {
      fake_clock_advance(&a, 1);
      fake_clock_advance(&b, 1);
      fake_clock_advance(&c, 1);
    }
  }
  assert_int_equal(differ, 1000);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_parse_valid),
    cmocka_unit_test(test_parse_invalid),
    cmocka_unit_test(test_parse_stops_at_nul),
    cmocka_unit_test(test_format),
    cmocka_unit_test(test_normalize),
    cmocka_unit_test(test_v7_layout),
    cmocka_unit_test(test_v7_monotonic_same_ms),
    cmocka_unit_test(test_v7_monotonic_clock_steps_back),
    cmocka_unit_test(test_v7_counter_overflow_bumps_ms),
    cmocka_unit_test(test_v7_seed_headroom),
    cmocka_unit_test(test_v7_same_seed_same_ids),
  };
  return cmocka_run_group_tests_name("uuid", tests, NULL, NULL);
}
