/* SPDX-License-Identifier: Apache-2.0 */
/* The fake clock of oncebox_test.h: wall time set by the test, random bytes
** from xorshift64* (the same generator tests/support always used, so seeded
** tests keep their bytes). */
#include "oncebox_test.h"

static int64_t fake_now(void* ctx) {
  return ((ob_fake_clock_t*)ctx)->now;
}

static void fake_random(void* ctx, void* buf, size_t len) {
  ob_fake_clock_t* fc = ctx;
  unsigned char* p = buf;
  for (size_t i = 0; i < len; i++) {
    fc->state ^= fc->state >> 12;
    fc->state ^= fc->state << 25;
    fc->state ^= fc->state >> 27;
    p[i] = (unsigned char)((fc->state * 2685821657736338717ULL) >> 56);
  }
}

void ob_fake_clock_init(ob_fake_clock_t* fc, int64_t start_ms, uint64_t seed) {
  fc->now = start_ms;
  fc->state = seed ? seed : 0x9E3779B97F4A7C15ULL;
  fc->clock.ctx = fc;
  fc->clock.now_ms = fake_now;
  fc->clock.random = fake_random;
  fc->clock.monotonic_ms = NULL;  /* now_ms is trusted not to jump */
}

void ob_fake_clock_advance(ob_fake_clock_t* fc, int64_t ms) {
  fc->now += ms;
}

void ob_fake_clock_set(ob_fake_clock_t* fc, int64_t now_ms) {
  fc->now = now_ms;
}

int64_t ob_fake_clock_now(const ob_fake_clock_t* fc) {
  return fc->now;
}

const ob_clock_t* ob_fake_clock(ob_fake_clock_t* fc) {
  return &fc->clock;
}
