/* SPDX-License-Identifier: Apache-2.0 */
/*
** The engine clock: the time every persisted deadline and timestamp is
** written and judged in (docs/decisions/0019-one-engine-clock.md).
**
** It never goes back. It is the wall clock while the wall clock is ahead
** of it; when the wall clock falls behind (an RTC reset to 2000-01-01, a
** day back, an NTP step), it goes on from where it was at the pace of the
** clock's monotonic_ms. So a row written before a backward jump, attempted
** or not, is never "in the future": no column needs moving for that.
**
** Across restarts it starts from max(wall, the value recorded in the
** database). The value is recorded by the commit of any write transaction
** once the clock has advanced OB__CLOCK_JUMP_MIN_MS past what is recorded
** (storage's db_commit writes db->clock_pending), so no timestamp in the
** file is more than that ahead of the recorded value: after a crash and a
** flat RTC battery, a row waits at most that long extra.
**
** A forward jump is followed (the wall clock is the best guess of real
** time there is); deadlines.c measures it on this clock and moves the
** deadlines computed before it by the jump, as before.
**
** A clock without monotonic_ms (the tests' fake clocks) is trusted: the
** engine clock is the wall clock.
*/
#include "core/engine/engine_int.h"

void ob__eclock_open(ob_engine_t* e) {
  const ob_clock_t* c = e->opts.clock;
  ob__eclock_t* k = &e->eclock;
  int64_t wall = c->now_ms(c->ctx), stored = 0;
  if (ob__engine_clock_load(&e->db, &stored) < 0) stored = 0;
  k->base = wall > stored ? wall : stored;
  k->mono_base = c->monotonic_ms ? c->monotonic_ms(c->ctx) : 0;
  k->behind_ms = wall < stored ? stored - wall : 0;
  e->db.clock_stored = stored;
  e->db.clock_pending = 0;
}

int64_t ob__eclock_read(const ob_engine_t* ce) {
  /* Reading advances the clock's state; engines are never const objects
  ** (ob_open allocates them), so this cast is defined. */
  ob_engine_t* e = (ob_engine_t*)ce;
  const ob_clock_t* c = e->opts.clock;
  ob__eclock_t* k = &e->eclock;
  int64_t wall = c->now_ms(c->ctx), mono, run;
  if (c->monotonic_ms == NULL) return wall;
  mono = c->monotonic_ms(c->ctx);
  run = k->base + (mono - k->mono_base);
  if (wall >= run) {
    k->base = wall;
    k->mono_base = mono;
    k->behind_ms = 0;
    run = wall;
  } else {
    k->behind_ms = run - wall;
  }
  if (run > e->db.clock_stored + OB__CLOCK_JUMP_MIN_MS)
    e->db.clock_pending = run;
  return run;
}

int64_t ob__eclock_wall_behind(const ob_engine_t* e) {
  return e->eclock.behind_ms > OB__CLOCK_JUMP_MIN_MS ? e->eclock.behind_ms : 0;
}

void ob__eclock_mark(const ob_engine_t* e, ob__clock_mark_t* m) {
  const ob_clock_t* c = e->opts.clock;
  m->wall = ob__eclock_read(e);
  m->has_mono = c->monotonic_ms != NULL;
  m->mono = m->has_mono ? c->monotonic_ms(c->ctx) : 0;
}

/* Windows and limits (logs, health) run on monotonic_ms when there is
** one: see engine_int.h. */
int64_t ob__engine_steady_ms(const ob_engine_t* e) {
  const ob_clock_t* c = e->opts.clock;
  return c->monotonic_ms ? c->monotonic_ms(c->ctx) : c->now_ms(c->ctx);
}
