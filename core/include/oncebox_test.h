/* SPDX-License-Identifier: Apache-2.0 */
/*
** oncebox test support for an embedder's own tests: a fake clock whose wall
** time moves only when the test says so, with a seeded, deterministic
** random source. Pure code (no I/O, no clock reads); linked into the
** library like every other part, so a test needs nothing beyond this
** header and the library.
**
**   ob_fake_clock_t fc;
**   ob_fake_clock_init(&fc, 1796083200000LL, 7);
**   o.clock = ob_fake_clock(&fc);         (ob_options_t, before ob_open)
**   ... ob_fake_clock_advance(&fc, 60000); ...
**
** Threading: like the engine, one thread. The clock must outlive every
** engine opened with it (the engine keeps the pointer).
*/
#ifndef ONCEBOX_TEST_H
#define ONCEBOX_TEST_H

#include <stdint.h>

#include "oncebox.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A fake clock in caller storage (stack, static, inside a fixture); no
** teardown. Its members are here only so the caller can allocate it: they
** are private, and may change in any release. Read the time with
** ob_fake_clock_now and move it with ob_fake_clock_set or
** ob_fake_clock_advance. */
typedef struct ob_fake_clock_s {
  ob_clock_t clock;  /* private: what ob_fake_clock returns */
  int64_t now;       /* private: the wall time now_ms returns */
  uint64_t state;    /* private: the random source's state (never 0) */
} ob_fake_clock_t;

/* Initialise fc at wall time start_ms (milliseconds since the Unix epoch,
** any value) with the random source seeded by seed: the same seed gives
** the same bytes in the same order (seed 0 stands for one fixed non-zero
** seed). Overwrites whatever fc held. This function can't fail. */
OB_EXTERN void ob_fake_clock_init(ob_fake_clock_t* fc, int64_t start_ms,
                                  uint64_t seed);

/* Move the wall time by ms (negative: back). The engine sees the new time
** at its next clock read. This function can't fail. */
OB_EXTERN void ob_fake_clock_advance(ob_fake_clock_t* fc, int64_t ms);

/* Set the wall time to now_ms. This function can't fail. */
OB_EXTERN void ob_fake_clock_set(ob_fake_clock_t* fc, int64_t now_ms);

/* The wall time now_ms would return. This function can't fail. */
OB_EXTERN int64_t ob_fake_clock_now(const ob_fake_clock_t* fc);

/* The ob_clock_t of fc, for ob_options_t.clock. Owned by fc (valid while fc
** is). Its now_ms returns the fake wall time; its random fills the buffer
** from fc's seeded source; its monotonic_ms is NULL, so the engine trusts
** now_ms not to jump and counts every ob_fake_clock_advance (or _set
** forward) as time passed, retention included. This function can't
** fail. */
OB_EXTERN const ob_clock_t* ob_fake_clock(ob_fake_clock_t* fc);

#ifdef __cplusplus
}
#endif

#endif
