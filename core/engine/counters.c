/* SPDX-License-Identifier: Apache-2.0 */
/* Process counters (ob_counters): what this engine did since ob_open. In
** memory only: counting must not cost the hot path a row or a page. */
#include <string.h>

#include "core/engine/engine_host.h"
#include "core/engine/engine_int.h"

const char* ob_outcome_name(int outcome) {
  static const char* const names[OB_OUTCOME_COUNT] = {
      "done", "duplicate", "retried", "failed", "waiting"};
  return outcome >= 0 && outcome < OB_OUTCOME_COUNT ? names[outcome] : "?";
}

static int64_t wall_ms(const ob_engine_t* e) {
  return e->opts.clock->now_ms(e->opts.clock->ctx);
}

void ob__counters_batch(ob_engine_t* e, int input, const ob_batch_result_t* r) {
  ob_counters_t* c = &e->counters;
  int64_t* h = c->handled[input == OB_INPUT_SQS ? OB_INPUT_SQS : OB_INPUT_QUEUE];
  int64_t n = (int64_t)r->handled + r->duplicates + r->retried + r->failed +
              r->waiting;
  c->batches++;
  c->last_write_error = 0;
  c->write_failing_since_ms = 0;
  h[OB_OUTCOME_DONE] += r->handled;
  h[OB_OUTCOME_DUPLICATE] += r->duplicates;
  h[OB_OUTCOME_RETRIED] += r->retried;
  h[OB_OUTCOME_FAILED] += r->failed;
  h[OB_OUTCOME_WAITING] += r->waiting;
  if (n > 0) c->last_handled_at_ms = wall_ms(e);
  ob__engine_recent_add(e, OB__RECENT_FAILED, r->failed);
  ob__engine_recent_add(e, OB__RECENT_RETRIED, r->retried);
}

/* The period runs on ob__engine_steady_ms: a wall clock set back or
** forward neither empties nor floods the window. */
void ob__engine_recent_enable(ob_engine_t* e, int64_t period_ms) {
  ob__recent_init(&e->recent, period_ms);
  e->recent_on = 1;
}

void ob__engine_recent_add(ob_engine_t* e, int kind, int64_t n) {
  if (e->recent_on && n > 0)
    ob__recent_add(&e->recent, ob__engine_steady_ms(e), kind, n);
}

int64_t ob__engine_recent_sum(const ob_engine_t* e, int kind) {
  return e->recent_on
             ? ob__recent_sum(&e->recent, ob__engine_steady_ms(e), kind)
             : 0;
}

void ob__counters_write_error(ob_engine_t* e, int rc) {
  ob_counters_t* c = &e->counters;
  c->write_errors++;
  c->last_write_error = rc;
  if (c->write_failing_since_ms == 0) c->write_failing_since_ms = wall_ms(e);
}

ob_counters_t* ob__engine_counters(ob_engine_t* e) {
  return &e->counters;
}

int ob_counters(const ob_engine_t* e, ob_counters_t* c) {
  if (e == NULL || c == NULL) return OB_EINVAL;
  *c = e->counters;
  return 0;
}
