/* SPDX-License-Identifier: Apache-2.0 */
#include "core/util/clock_jump.h"

void ob__clock_mark(const ob_clock_t* c, ob__clock_mark_t* m) {
  m->wall = c->now_ms(c->ctx);
  m->has_mono = c->monotonic_ms != NULL;
  m->mono = m->has_mono ? c->monotonic_ms(c->ctx) : 0;
}

int64_t ob__clock_jump(const ob__clock_mark_t* before,
                       const ob__clock_mark_t* after) {
  int64_t wall = after->wall - before->wall, mono, jump, tolerance;
  /* A monotonic clock that went back is no clock to measure by. */
  if (!before->has_mono || !after->has_mono || after->mono < before->mono)
    return wall < -OB__CLOCK_JUMP_MIN_MS ? wall : 0;
  mono = after->mono - before->mono;
  jump = wall - mono;
  tolerance = OB__CLOCK_JUMP_MIN_MS + mono / 1000;
  return jump > tolerance || jump < -tolerance ? jump : 0;
}
