/* SPDX-License-Identifier: Apache-2.0 */
/* Counts of what happened in the last period (health's "more than N
** failures in the last minute", Fluent Bit's HC_Period): a ring of
** OB__RECENT_SLOTS time slots of period / OB__RECENT_SLOTS each, so a sum
** is exact to one slot and adding costs a division and two stores. Pure:
** the caller passes the time (a monotonic clock where it has one). */
#ifndef OB_CORE_UTIL_RECENT_H
#define OB_CORE_UTIL_RECENT_H

#include <stdint.h>

#define OB__RECENT_SLOTS 60

/* What is counted (the ring keeps one count of each per slot). */
enum {
  OB__RECENT_FAILED = 0,   /* given up on: failure store, parked events */
  OB__RECENT_RETRIED = 1,  /* handling attempts rescheduled with backoff */
  OB__RECENT_KINDS = 2
};

typedef struct ob__recent_s {
  int64_t period_ms;
  int64_t width_ms;                       /* of one slot */
  int64_t slot[OB__RECENT_SLOTS];         /* which slot (time / width) */
  int64_t count[OB__RECENT_SLOTS][OB__RECENT_KINDS];
} ob__recent_t;

/* Empty r for a period of period_ms (at least 1; smaller values are
** taken as 1). This function can't fail. */
void ob__recent_init(ob__recent_t* r, int64_t period_ms);

/* Count n of kind at time now_ms (n <= 0 or a bad kind: nothing). */
void ob__recent_add(ob__recent_t* r, int64_t now_ms, int kind, int64_t n);

/* How many of kind were counted in the period ending at now_ms, to within
** one slot (the oldest slot is counted whole). A time that went backwards
** past a slot leaves that slot out rather than counting it twice. */
int64_t ob__recent_sum(const ob__recent_t* r, int64_t now_ms, int kind);

#endif /* OB_CORE_UTIL_RECENT_H */
