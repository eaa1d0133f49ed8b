/* SPDX-License-Identifier: Apache-2.0 */
/*
** The observed clock: the time this engine has seen pass, which retention
** counts instead of the wall clock (docs/field.md).
**
** It starts from the value engines recorded before (retention_clock, or the
** wall clock on a new database) and advances with the clock's monotonic_ms
** while the engine runs. A wall clock set forward by 40 days (a terminal
** without NTP, an RTC reset) moves nothing here, so no dedup record goes
** before it has been kept retention_ms of observed time; the time an engine
** was off is not observed, so a shutdown only keeps records longer.
** Dedup records are stamped max(wall, observed): a wall clock set back
** does not make new records look older than they are.
*/
#include <stdlib.h>

#include "core/engine/engine_int.h"

/* The component of this file's log records (ob__log). */
#undef OB__LOG_COMPONENT
#define OB__LOG_COMPONENT "clock"

/* A difference between wall and monotonic progress above this is a jump. */
#define JUMP_WARN_MS 60000

void ob__observed_init(ob_engine_t* e) {
  const ob_clock_t* c = e->opts.clock;
  int64_t wall = c->now_ms(c->ctx), r;
  int rc = ob__observed_clock_load(&e->db, &r);
  if (rc != 0) r = wall;
  e->observed_base = r;
  e->observed_mono_base = c->monotonic_ms ? c->monotonic_ms(c->ctx) : 0;
  e->observed_wall_base = wall;
  e->observed_skew_seen = 0;
  /* Recorded once per database, then at each ob_gc: an open (every
  ** `oncebox enqueue`) costs no write. */
  if (rc == OB_ENOTFOUND) (void)ob__observed_clock_store(&e->db, r);
}

int64_t ob__observed_now(const ob_engine_t* e) {
  const ob_clock_t* c = e->opts.clock;
  if (c->monotonic_ms == NULL) return ob__now(e);
  return e->observed_base + (c->monotonic_ms(c->ctx) - e->observed_mono_base);
}

int64_t ob__retention_stamp(const ob_engine_t* e) {
  int64_t wall = ob__now(e), seen = ob__observed_now(e);
  return wall > seen ? wall : seen;
}

/* Record the observed clock and warn about a wall-clock jump; returns the
** time observed now. One caller, ob_gc: the periodic collection (the loop's
** gc timer, `oncebox gc`) keeps the recorded value current; a value not
** recorded only keeps records longer after a restart, the safe side, as a
** shutdown does. */
static int64_t observed_checkpoint(ob_engine_t* e) {
  const ob_clock_t* c = e->opts.clock;
  int64_t seen = ob__observed_now(e);
  if (c->monotonic_ms != NULL) {
    int64_t skew = (c->now_ms(c->ctx) - e->observed_wall_base) -
                   (c->monotonic_ms(c->ctx) - e->observed_mono_base);
    if (llabs(skew - e->observed_skew_seen) > JUMP_WARN_MS) {
      ob__log(e, OB_LOG_WARN, "the wall clock jumped by %+lld s since this "
              "engine started (or since the last jump); retention counts "
              "the time observed passing, so no record is deleted early",
              (long long)((skew - e->observed_skew_seen) / 1000));
      e->observed_skew_seen = skew;
    }
  }
  (void)ob__observed_clock_store(&e->db, seen);
  return seen;
}

/* ---- the collection: retention counts observed time ---------------------- */

/* Delete up to gc_batch dedup records and published events older than
** retention_ms before `seen` (observed time). */
static int sweep(ob_engine_t* e, int64_t seen, int64_t* deleted) {
  int64_t n = 0;
  int rc = ob__retention_sweep(&e->db, seen - e->opts.retention_ms,
                               e->opts.gc_batch, &n);
  if (deleted) *deleted = n;
  return rc;
}

int ob__retention_expired(ob_engine_t* e, int64_t* deleted) {
  return sweep(e, ob__observed_now(e), deleted);
}

int ob_gc(ob_engine_t* e, int64_t* deleted) {
  if (e == NULL) return OB_EINVAL;
  /* The observed clock, not the wall's: see the top of this file. */
  return sweep(e, observed_checkpoint(e), deleted);
}
