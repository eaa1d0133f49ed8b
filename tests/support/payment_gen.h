/* SPDX-License-Identifier: Apache-2.0 */
/* Seeded PaymentCaptured traffic for tests and benchmarks: the same seed
** gives the same messages in every run and every program. */
#ifndef OB_TEST_PAYMENT_GEN_H
#define OB_TEST_PAYMENT_GEN_H

#include <stddef.h>
#include <stdint.h>

#include "oncebox.h"

#define TS_GEN_MERCHANTS 40

typedef struct ts_msg_s {
  char id[OB_UUID_BUFLEN];      /* event id (UUIDv4 from the seed) */
  char body[224];   /* PaymentCaptured JSON */
  size_t body_len;
} ts_msg_t;

typedef struct ts_gen_s {
  uint64_t rng;
  char merchants[TS_GEN_MERCHANTS][OB_UUID_BUFLEN];
} ts_gen_t;

/* xorshift64*: the next 64 random bits of state s. */
uint64_t ts_rnd(uint64_t* s);
/* A version-4-shaped UUID from state s. */
void ts_uuid4(uint64_t* s, char out[OB_UUID_BUFLEN]);
void ts_gen_init(ts_gen_t* g, uint64_t seed);
/* The next message: a new event id, a new payment, one of the merchants. */
void ts_gen_next(ts_gen_t* g, ts_msg_t* m);
/* Monotonic seconds, for benchmarks. */
double ts_mono_s(void);

#endif
