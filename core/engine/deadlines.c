/* SPDX-License-Identifier: Apache-2.0 */
/*
** Persisted deadlines against a wall clock that jumps (docs/field.md,
** "Clocks that jump"). A retry's available_at, a relay claim, an outbox
** row's or an effect's next attempt and an effect lease are wall-clock
** times because they outlive the process; each row also records the wall
** time its deadlines were computed at (clock_ref, storage/store.h).
**
**   - Back: a row whose clock_ref is ahead of the clock (by more than
**     OB__CLOCK_JUMP_MIN_MS) was computed before the clock went back. Its
**     deadlines move by the jump this engine measured on its monotonic
**     clock, which keeps each exactly; when none was measured (at open,
**     after a restart, on a clock without monotonic_ms) by the whole lead
**     of clock_ref, so each is due its full length from now: a day is not
**     waited out, and nothing becomes due earlier than its own delay (a
**     message scheduled 2 days ahead stays 2 days ahead).
**   - Forward: a jump this engine measured moves the deadlines of rows
**     computed before it (clock_ref <= now - jump) by the jump: a lease
**     taken before it still runs its length of real time, so no engine
**     that saw the jump judges a live holder's lease expired.
**
** Checked at open and by every verb that reads deadlines (two clock reads;
** the database only when something jumped). The updates are idempotent
** across processes: a moved row's clock_ref is the mover's now.
*/
#include <stdlib.h>

#include "core/engine/engine_int.h"

/* The component of this file's log records (ob__log). */
#undef OB__LOG_COMPONENT
#define OB__LOG_COMPONENT "clock"

static long long secs(int64_t ms) {
  return (long long)((llabs(ms) + 500) / 1000);
}

/* Apply what is pending; 0, or < 0 to try again at the next check. */
static int apply(ob_engine_t* e, int64_t now) {
  int64_t jump = e->jump_pending, ahead = 0;
  int n = 0, rc;
  if (jump > 0) {
    n = ob__deadlines_shift(&e->db, now, jump);
    if (n < 0) return n;
    ob__log(e, OB_LOG_WARN, "clock went forward %lld s: %d deadlines computed "
            "before it keep their length", secs(jump), n);
  } else {
    rc = ob__deadlines_ahead(&e->db, now, OB__CLOCK_JUMP_MIN_MS, &ahead);
    if (rc < 0) return rc;
    if (ahead > 0) {
      n = ob__deadlines_rebase(&e->db, now, jump, OB__CLOCK_JUMP_MIN_MS);
      if (n < 0) return n;
    }
    if (jump < 0 || n > 0)
      ob__log(e, OB_LOG_WARN, "clock went back %lld s: re-based %d deadlines",
              secs(jump < 0 ? jump : ahead - now), n);
  }
  e->jump_pending = 0;
  e->probe_pending = 0;
  if (n > 0) {
    /* A component may sleep until a deadline that just moved. */
    ob__engine_kick_components(e, NULL);
    if (e->hooks.wake) e->hooks.wake(e);
  }
  return 0;
}

/* The wall clock going back moves nothing (the engine clock runs on), but
** the operator should know that the terminal's clock is wrong. */
static void note_wall(ob_engine_t* e) {
  ob__clock_mark_t wall;
  int64_t back;
  ob__clock_mark(e->opts.clock, &wall);
  back = ob__clock_jump(&e->wall_mark, &wall);
  e->wall_mark = wall;
  if (back < 0)
    ob__log(e, OB_LOG_WARN, "clock went back %lld s: the engine clock runs "
            "on, %lld s ahead of it; no deadline moves", secs(back),
            secs(ob__eclock_wall_behind(e)));
}

void ob__deadlines_watch(ob_engine_t* e) {
  ob__clock_mark_t now;
  int64_t jump;
  ob__eclock_mark(e, &now);
  note_wall(e);
  jump = ob__clock_jump(&e->clock_mark, &now);
  e->clock_mark = now;
  if (jump != 0) {
    e->jump_pending += jump;
    e->probe_pending = 1;
  }
  /* Inside a transaction the next check outside one applies it. */
  if (!e->probe_pending || e->db.in_tx) return;
  if (apply(e, now.wall) < 0)
    ob__log(e, OB_LOG_DEBUG, "deadlines not re-based yet (retried at the "
            "next check): %s", e->db.errmsg);
}

void ob__deadlines_open(ob_engine_t* e) {
  int64_t behind;
  ob__clock_mark(e->opts.clock, &e->wall_mark);
  ob__eclock_mark(e, &e->clock_mark);
  behind = ob__eclock_wall_behind(e);
  if (behind > 0)
    ob__log(e, OB_LOG_WARN, "clock went back %lld s (behind the engine clock "
            "this database recorded): the engine clock runs on from there; "
            "no deadline moves", secs(behind));
  e->jump_pending = 0;
  e->probe_pending = 1;  /* rows may come from a clock ahead of ours */
  ob__deadlines_watch(e);
}
