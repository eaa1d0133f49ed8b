/* SPDX-License-Identifier: Apache-2.0 */
/* Counts over the last period (core/util/recent.h). */
#include "core/util/recent.h"

#include <string.h>

/* The slot of a time: floor division, so times before the epoch of the
** clock (a fake clock at 0, a monotonic one) are slots too. */
static int64_t slot_of(const ob__recent_t* r, int64_t t) {
  int64_t q = t / r->width_ms;
  return (t % r->width_ms < 0) ? q - 1 : q;
}

static int ring_index(int64_t slot) {
  int64_t i = slot % OB__RECENT_SLOTS;
  return (int)(i < 0 ? i + OB__RECENT_SLOTS : i);
}

void ob__recent_init(ob__recent_t* r, int64_t period_ms) {
  memset(r, 0, sizeof *r);
  if (period_ms < 1) period_ms = 1;
  r->period_ms = period_ms;
  r->width_ms = (period_ms + OB__RECENT_SLOTS - 1) / OB__RECENT_SLOTS;
  for (int i = 0; i < OB__RECENT_SLOTS; i++) r->slot[i] = INT64_MIN;
}

void ob__recent_add(ob__recent_t* r, int64_t now_ms, int kind, int64_t n) {
  int64_t s;
  int i;
  if (n <= 0 || kind < 0 || kind >= OB__RECENT_KINDS) return;
  s = slot_of(r, now_ms);
  i = ring_index(s);
  if (r->slot[i] != s) {  /* a slot a whole ring old: reuse it */
    r->slot[i] = s;
    memset(r->count[i], 0, sizeof r->count[i]);
  }
  r->count[i][kind] += n;
}

int64_t ob__recent_sum(const ob__recent_t* r, int64_t now_ms, int kind) {
  int64_t now = slot_of(r, now_ms), sum = 0;
  /* The slots that overlap (now - period, now]. */
  int64_t oldest = slot_of(r, now_ms - r->period_ms + 1);
  if (kind < 0 || kind >= OB__RECENT_KINDS) return 0;
  for (int i = 0; i < OB__RECENT_SLOTS; i++)
    if (r->slot[i] >= oldest && r->slot[i] <= now) sum += r->count[i][kind];
  return sum;
}
