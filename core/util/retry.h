/* SPDX-License-Identifier: Apache-2.0 */
/* Retry decisions (Symfony Messenger's strategy). Pure. */
#ifndef OB_CORE_RETRY_H
#define OB_CORE_RETRY_H

#include <stdint.h>
#include "oncebox.h"

/* Every delay saturates here instead of overflowing: far beyond any useful
** wait (~73 million years), and now_ms + delay still fits in int64. */
#define OB__RETRY_DELAY_MAX (INT64_MAX / 4)

/* 0 if p is usable (max_retries >= 0, delay_ms >= 0, multiplier >= 1,
** max_delay_ms >= 0, 0 <= jitter <= 1), else -1. */
int ob__retry_policy_check(const ob_retry_policy_t* p);

/* Delay of retry number n (1 = first retry) before jitter:
** delay_ms * multiplier^(n-1), capped by max_delay_ms if > 0, saturating at
** OB__RETRY_DELAY_MAX instead of overflowing. n < 1 counts as 1. */
int64_t ob__retry_base_delay(const ob_retry_policy_t* p, int n);

/* Apply jitter: uniform in [d*(1-jitter), d*(1+jitter)] using 8 bytes of
** c->random (none when jitter is 0), rounded to the nearest ms; never
** negative, at most OB__RETRY_DELAY_MAX. */
int64_t ob__retry_jitter(const ob_retry_policy_t* p, int64_t d,
                         const ob_clock_t* c);

typedef enum {
  OB__RETRY_AGAIN = 0,    /* reschedule after *delay_out ms */
  OB__RETRY_GIVE_UP = 1   /* budget exhausted: move to the failure store */
} ob__retry_verdict_t;

/* Decide what happens to a message whose handler asked for a retry (or
** failed with a transient error). attempts = retries already made (0 on the
** first delivery). requested_delay_ms >= 0 overrides the computed delay
** (still no jitter added: the handler named it; clamped to
** OB__RETRY_DELAY_MAX). forced ignores the budget. Otherwise the delay is
** ob__retry_jitter(ob__retry_base_delay(p, attempts + 1)). On GIVE_UP
** *delay_out is 0. delay_out may be NULL. This function can't fail. */
ob__retry_verdict_t ob__retry_decide(const ob_retry_policy_t* p, int attempts,
                                     int forced, int64_t requested_delay_ms,
                                     const ob_clock_t* c, int64_t* delay_out);

/*
** How long a loop driver waits after its failures-th consecutive storage
** failure (disk full, I/O error, lock held elsewhere; failures >= 1): 100 ms
** doubling, at most OB__STORAGE_BACKOFF_MAX_MS. The one rule for the
** runner, the relay, the SQS consumer and every effects executor. This
** function can't fail.
*/
#define OB__STORAGE_BACKOFF_MAX_MS 30000
int64_t ob__storage_backoff_ms(int failures);

#endif
