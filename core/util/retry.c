/* SPDX-License-Identifier: Apache-2.0 */
/* Retry decisions: backoff, cap, jitter (Symfony Messenger's strategy). */
#include "core/util/retry.h"

#include <limits.h>
#include <math.h>

#include "core/util/assert.h"

int ob__retry_policy_check(const ob_retry_policy_t* p) {
  if (p == NULL) return -1;
  if (p->max_retries < 0 || p->delay_ms < 0 || p->max_delay_ms < 0) return -1;
  /* Written so that NaN fails every test. */
  if (!(p->multiplier >= 1.0) || !isfinite(p->multiplier)) return -1;
  if (!(p->jitter >= 0.0 && p->jitter <= 1.0)) return -1;
  return 0;
}

static int64_t clamp_delay(double d) {
  if (!(d > 0.0)) return 0; /* also NaN */
  if (d >= (double)OB__RETRY_DELAY_MAX) return OB__RETRY_DELAY_MAX;
  return (int64_t)(d + 0.5);
}

int64_t ob__retry_base_delay(const ob_retry_policy_t* p, int n) {
  int64_t d = p->delay_ms, cap = p->max_delay_ms;
  double x;
  if (d <= 0) return 0;
  if (d > OB__RETRY_DELAY_MAX) d = OB__RETRY_DELAY_MAX;
  if (n > 1 && p->multiplier != 1.0) {
    /* pow() grows to +inf rather than wrapping; clamp_delay saturates. */
    x = (double)d * pow(p->multiplier, (double)(n - 1));
    d = clamp_delay(x);
  }
  if (cap > 0 && d > cap)
    d = cap > OB__RETRY_DELAY_MAX ? OB__RETRY_DELAY_MAX : cap;
  return d;
}

int64_t ob__retry_jitter(const ob_retry_policy_t* p, int64_t d,
                         const ob_clock_t* c) {
  unsigned char b[8];
  uint64_t u = 0;
  double j = p->jitter, unit;
  int i;
  if (d <= 0) return 0;
  if (d > OB__RETRY_DELAY_MAX) d = OB__RETRY_DELAY_MAX;
  if (!(j > 0.0) || c == NULL || c->random == NULL) return d;
  c->random(c->ctx, b, sizeof b);
  for (i = 0; i < 8; i++) u = u << 8 | b[i];
  /* Top 53 bits give a uniform double in [0, 1) with no rounding bias. */
  unit = (double)(u >> 11) * 0x1.0p-53;
  return clamp_delay((double)d * (1.0 - j + 2.0 * j * unit));
}

ob__retry_verdict_t ob__retry_decide(const ob_retry_policy_t* p, int attempts,
                                     int forced, int64_t requested_delay_ms,
                                     const ob_clock_t* c, int64_t* delay_out) {
  int64_t d;
  int n;
  if (attempts < 0) attempts = 0;
  if (!forced && attempts >= p->max_retries) {
    if (delay_out) *delay_out = 0;
    return OB__RETRY_GIVE_UP;
  }
  if (requested_delay_ms >= 0) {
    /* The handler named the delay: no jitter, only the overflow clamp. */
    d = requested_delay_ms > OB__RETRY_DELAY_MAX ? OB__RETRY_DELAY_MAX
                                                 : requested_delay_ms;
  } else {
    /* A forced retry may run for ever: attempts + 1 must not overflow. */
    n = attempts < INT_MAX ? attempts + 1 : INT_MAX;
    d = ob__retry_jitter(p, ob__retry_base_delay(p, n), c);
  }
  /* now + d must not overflow where the retry is scheduled. */
  OB__ASSERT(d >= 0 && d <= OB__RETRY_DELAY_MAX);
  if (delay_out) *delay_out = d;
  return OB__RETRY_AGAIN;
}

int64_t ob__storage_backoff_ms(int failures) {
  int64_t d;
  if (failures < 1) failures = 1;
  if (failures > 9) failures = 9;
  d = INT64_C(100) << failures;
  return d > OB__STORAGE_BACKOFF_MAX_MS ? OB__STORAGE_BACKOFF_MAX_MS : d;
}
