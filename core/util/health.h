/* SPDX-License-Identifier: Apache-2.0 */
/* The health verdict (docs/operations.md, "Health"): pure rules over the
** figures of one read and, for a running engine, its process counters.
** One function for the HTTP listener's /health and `oncebox health`, so
** the two agree wherever they see the same figures. */
#ifndef OB_CORE_UTIL_HEALTH_H
#define OB_CORE_UTIL_HEALTH_H

#include <stddef.h>
#include <stdint.h>

#include "oncebox.h"

/* The reasons, as bits of ob__health_t.reasons (names in the JSON). */
enum {
  OB__HEALTH_DB_NOT_WRITABLE = 1 << 0,  /* "db_not_writable" */
  OB__HEALTH_DISK_RESERVE = 1 << 1,     /* "disk_reserve" */
  OB__HEALTH_RELAY_FAILING = 1 << 2,    /* "relay_failing" */
  OB__HEALTH_EFFECTS_UNKNOWN = 1 << 3,  /* "effects_unknown" */
  OB__HEALTH_FAILURES = 1 << 4,         /* "failures" */
  OB__HEALTH_RETRIES = 1 << 5,          /* "retries" */
  OB__HEALTH_LAST = OB__HEALTH_RETRIES
};

typedef struct ob__health_input_s {
  const ob_stats_t* stats;         /* required: one read's figures */
  const ob_counters_t* counters;   /* a running engine's; NULL: one-shot */
  int write_probe;                 /* a one-shot write check: 1 ok, 0
                                   ** failed, -1 not made */
  int write_probe_error;           /* its code when it failed */
  int64_t now_ms;                  /* wall clock of the verdict */
  int64_t relay_failing_ms;        /* ob_metrics_options_t's thresholds */
  int64_t write_error_ms;
  int effects_unknown_max;
  /* The count rules (a running engine only; period_ms 0: off). */
  int64_t period_ms;
  int failed_max;                  /* negative: this rule off */
  int retried_max;
  int64_t failed_in_period;        /* given up on in the last period */
  int64_t retried_in_period;       /* rescheduled in the last period */
} ob__health_input_t;

typedef struct ob__health_s {
  unsigned reasons;                /* OB__HEALTH_* bits; 0: healthy */
  int64_t relay_failing_for_ms;    /* how long, when RELAY_FAILING */
} ob__health_t;

/* The verdict for in. This function can't fail (a NULL stats is healthy
** of nothing: reasons 0). Rules:
**   db_not_writable: write_probe is 0, or the counters hold a write error
**     with no commit since, for at least write_error_ms;
**   disk_reserve: space_level >= 1 (the size cap's reserve refuses new
**     messages of ordinary types);
**   relay_failing (threshold > 0): the counters' requests have failed for
**     at least relay_failing_ms, or the relay's last record says offline or
**     an error while the oldest unpublished event is at least that old;
**   effects_unknown: more effects in state unknown than effects_unknown_max
**     (money whose outcome no one knows yet);
**   failures / retries (period_ms > 0, maximum >= 0): more messages given
**     up on, or more attempts rescheduled, in the last period than the
**     maximum. */
void ob__health_eval(const ob__health_input_t* in, ob__health_t* out);

/* The reason's JSON name for one bit, "" for another value. */
const char* ob__health_reason_name(unsigned bit);

/* The /health body: {"status":"ok"|"unhealthy","reasons":[...],
** "checks":{...},"time":"..."} and a newline, malloc'd and NUL-terminated
** (the caller frees it); NULL when out of memory. No free text from peers
** or the database is copied in (the relay's error words may echo a
** server), only names and figures. */
char* ob__health_json(const ob__health_input_t* in, const ob__health_t* h);

#endif /* OB_CORE_UTIL_HEALTH_H */
