/* SPDX-License-Identifier: Apache-2.0 */
/* The disk-full policy (docs/field.md, "A disk that fills while offline"):
** where, below the database's size cap, new messages stop, critical ones
** stop, and handling pauses. Pure arithmetic, unit-tested. */
#ifndef OB_CORE_UTIL_SPACE_POLICY_H
#define OB_CORE_UTIL_SPACE_POLICY_H

#include <stdint.h>

/* From the least to the most constrained. */
typedef enum {
  OB__SPACE_OK = 0,        /* everything is accepted */
  OB__SPACE_CRITICAL = 1,  /* in the reserve: only critical types enter */
  OB__SPACE_REFUSING = 2,  /* past half the reserve: no new message enters */
  OB__SPACE_PAUSED = 3     /* the last quarter: handling pauses too, so
                           ** publish marks and reclaiming keep room */
} ob__space_level_t;

#define OB__RESERVE_MIN (64 * 1024)
#define OB__RESERVE_MAX (64LL * 1024 * 1024)

/* The reserve in force for cap and the asked value (OB_RESERVE_AUTO: an
** eighth of the cap within [OB__RESERVE_MIN, OB__RESERVE_MAX], never more
** than half the cap). 0 when cap is 0 (no cap, no policy). */
int64_t ob__space_reserve(int64_t cap, int64_t asked);

/* The level for `used` bytes (pages in use times the page size). */
ob__space_level_t ob__space_level(int64_t used, int64_t cap, int64_t reserve);

/* 1 if a new message may enter at level (critical: its type is marked). */
int ob__space_admits(ob__space_level_t level, int critical);

/* How far reclaiming brings `used` down once it starts: one and a half
** reserves below the cap (an eighth of the cap without a reserve), so that
** new messages are accepted again for a while, not one at a time. */
int64_t ob__space_reclaim_target(int64_t cap, int64_t reserve);

/* Short words for a level, for stats and errors. */
const char* ob__space_level_name(ob__space_level_t level);

#endif
