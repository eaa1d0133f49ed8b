/* SPDX-License-Identifier: Apache-2.0 */
/* Telling a jump of the wall clock from time passing. Pure: the readings
** come from an ob_clock_t, so the rule is tested with a fake clock. */
#ifndef OB_CORE_CLOCK_JUMP_H
#define OB_CORE_CLOCK_JUMP_H

#include <stdint.h>

#include "oncebox.h"

/* One reading of a clock: its wall time and, when it has one, its
** monotonic time. */
typedef struct ob__clock_mark_s {
  int64_t wall;
  int64_t mono;
  int has_mono;
} ob__clock_mark_t;

/* The smallest jump acted upon; also how far a stored wall time may be
** ahead of a reader's clock without counting as written before the clock
** went back (another process read its clock a moment later, an NTP step). */
#define OB__CLOCK_JUMP_MIN_MS 1000

/* Read c. This function can't fail. */
void ob__clock_mark(const ob_clock_t* c, ob__clock_mark_t* m);

/*
** How far the wall clock jumped from `before` to `after`: its progress minus
** the monotonic clock's (< 0: set back, > 0: set forward), or 0 when that is
** within OB__CLOCK_JUMP_MIN_MS plus 0.1% of the monotonic interval (NTP
** slews the wall clock by at most 0.05%). Without a monotonic reading on
** both sides only a wall clock that went back can be told from time
** passing: then the result is how far it went back, else 0. This function
** can't fail.
*/
int64_t ob__clock_jump(const ob__clock_mark_t* before,
                       const ob__clock_mark_t* after);

#endif
