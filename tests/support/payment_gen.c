/* SPDX-License-Identifier: Apache-2.0 */
#include "tests/support/payment_gen.h"

#include <stdio.h>
#include <time.h>

uint64_t ts_rnd(uint64_t* s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 2685821657736338717ULL;
}

void ts_uuid4(uint64_t* s, char out[OB_UUID_BUFLEN]) {
  uint64_t a = ts_rnd(s), b = ts_rnd(s);
  snprintf(out, OB_UUID_BUFLEN, "%08x-%04x-4%03x-%04x-%012llx", (unsigned)(a >> 32),
           (unsigned)((a >> 16) & 0xffff), (unsigned)(a & 0xfff),
           (unsigned)(0x8000 | ((b >> 48) & 0x3fff)),
           (unsigned long long)(b & 0xffffffffffffULL));
}

void ts_gen_init(ts_gen_t* g, uint64_t seed) {
  g->rng = seed * 0x9E3779B97F4A7C15ULL + 1;
  for (int i = 0; i < TS_GEN_MERCHANTS; i++) ts_uuid4(&g->rng, g->merchants[i]);
}

void ts_gen_next(ts_gen_t* g, ts_msg_t* m) {
  static const char* const cur[] = {"EUR", "EUR", "GBP", "USD", "CHF"};
  char payment[OB_UUID_BUFLEN];
  int n;
  ts_uuid4(&g->rng, m->id);
  ts_uuid4(&g->rng, payment);
  n = snprintf(m->body, sizeof m->body,
               "{\"paymentId\":\"%s\",\"merchantId\":\"%s\","
               "\"amountInMinorUnits\":%llu,\"currency\":\"%s\"}",
               payment, g->merchants[ts_rnd(&g->rng) % TS_GEN_MERCHANTS],
               (unsigned long long)(100 + ts_rnd(&g->rng) % 49900),
               cur[ts_rnd(&g->rng) % 5]);
  m->body_len = (size_t)n;
}

double ts_mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
