/* SPDX-License-Identifier: Apache-2.0 */
/* The disk-full policy's arithmetic. Thresholds, from the cap down:
**
**   cap - reserve/4   handling pauses (the rest is for publish marks)
**   cap - reserve/2   critical messages stop
**   cap - reserve     other messages stop
**
** so that a full database still handles what it holds, publishes it and
** gives space back, which needs a few pages of its own. */
#include "core/util/space_policy.h"

#include "oncebox.h"

/* A configured cap's WAL room is never below this (decision 0017): a small
** cap was sized by an operator who knows the disk. */
#define OB__WAL_ROOM_MIN (1024LL * 1024)

int64_t ob__space_reserve(int64_t cap, int64_t asked) {
  int64_t r;
  if (cap <= 0) return 0;
  if (asked != OB_RESERVE_AUTO) return asked;
  r = cap / 8;
  if (r < OB__RESERVE_MIN) r = OB__RESERVE_MIN;
  if (r > OB__RESERVE_MAX) r = OB__RESERVE_MAX;
  if (r > cap / 2) r = cap / 2;
  return r;
}

ob__space_level_t ob__space_level(int64_t used, int64_t cap, int64_t reserve) {
  if (cap <= 0) return OB__SPACE_OK;
  if (used >= cap - reserve / 4) return OB__SPACE_PAUSED;
  if (used >= cap - reserve / 2) return OB__SPACE_REFUSING;
  if (used >= cap - reserve) return OB__SPACE_CRITICAL;
  return OB__SPACE_OK;
}

int ob__space_admits(ob__space_level_t level, int critical) {
  return level == OB__SPACE_OK || (level == OB__SPACE_CRITICAL && critical);
}

int ob__space_judge(int64_t used, int64_t bytes, int64_t cap, int64_t reserve,
                    int critical, ob__space_level_t* level) {
  *level = ob__space_level(used + bytes + OB__SPACE_ROW_SLACK, cap, reserve);
  return ob__space_admits(*level, critical);
}

int64_t ob__space_reclaim_target(int64_t cap, int64_t reserve) {
  if (cap <= 0) return 0;
  if (reserve <= 0) return cap - cap / 8;
  return cap - reserve - reserve / 2;
}

int64_t ob__space_fs_bytes(int64_t blocks, int64_t bfree, int64_t bavail,
                           int64_t frsize) {
  int64_t usable;
  if (blocks <= 0 || frsize <= 0 || bfree < 0 || bavail < 0 || bfree > blocks)
    return 0;
  if (bavail > bfree) bavail = bfree;
  usable = blocks - (bfree - bavail);
  if (usable > INT64_MAX / frsize) return INT64_MAX / 2;
  return usable * frsize;
}

void ob__space_default(int64_t fs_bytes, ob__space_default_t* out) {
  out->cap = 0;
  out->wal_bytes = 0;
  if (fs_bytes <= 0) return;
  /* Divide first: no overflow whatever the filesystem's size. */
  out->cap = fs_bytes / OB__DEFAULT_CAP_DEN * OB__DEFAULT_CAP_NUM +
             fs_bytes % OB__DEFAULT_CAP_DEN * OB__DEFAULT_CAP_NUM /
                 OB__DEFAULT_CAP_DEN;
  out->wal_bytes = out->cap / 4;
  if (out->wal_bytes > OB__DEFAULT_WAL_MAX)
    out->wal_bytes = OB__DEFAULT_WAL_MAX;
}

int64_t ob__space_wal_room(int64_t cap, int derived) {
  int64_t room;
  if (cap <= 0) return 0;
  room = cap / 4;
  if (derived) return room > OB__DEFAULT_WAL_MAX ? OB__DEFAULT_WAL_MAX : room;
  return room < OB__WAL_ROOM_MIN ? OB__WAL_ROOM_MIN : room;
}

const char* ob__space_level_name(ob__space_level_t level) {
  switch (level) {
    case OB__SPACE_OK: return "accepting";
    case OB__SPACE_CRITICAL: return "refusing all but critical types";
    case OB__SPACE_REFUSING: return "refusing new messages";
    case OB__SPACE_PAUSED: return "refusing new messages, handling paused";
  }
  return "?";
}
