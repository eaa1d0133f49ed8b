/* SPDX-License-Identifier: Apache-2.0 */
/*
** The latency invariant (sim.h): in service mode, a payment the engine
** accepted (ob_enqueue returned 0, no delay) is handled, its payout
** committed, within SIM_LATENCY_MS of simulated time, whatever the network
** does, as long as the engine stayed up and its disk healthy all along
** (no kill, no write refused for a full disk, no I/O error).
**
** Why 5 s: an enqueue wakes the runner at once (its wake hook arms the
** work timer at 0, cancelling any storage backoff), and the runner then
** handles one batch per loop turn; the poll interval (5 minutes here) is
** only a safety net for writes by other processes, and the network is never
** on the handling path. A transaction takes milliseconds of simulated time,
** so 5 s leaves room for a backlog and is far below the poll a lost wake
** falls back to.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oncebox.h"
#include "tests/sim/sim.h"

typedef struct pending_s {
  char pay[40];
  int64_t due;
  uint64_t epoch;
} pending_t;

struct sim_latency_s {
  sim_oracle_t* oracle;
  pending_t* p;     /* in order of due time (appended in time order) */
  size_t head, n, cap;
  int64_t checked, excused, late;
};

sim_latency_t* sim_latency_new(sim_oracle_t* oracle) {
  sim_latency_t* l = calloc(1, sizeof *l);
  if (l != NULL) l->oracle = oracle;
  return l;
}

void sim_latency_free(sim_latency_t* l) {
  if (l == NULL) return;
  free(l->p);
  free(l);
}

void sim_latency_accepted(sim_latency_t* l, const char* payment_id,
                          uint64_t epoch) {
  if (l->n == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 256;
    pending_t* p = realloc(l->p, cap * sizeof *p);
    if (p == NULL) abort();
    l->p = p;
    l->cap = cap;
  }
  snprintf(l->p[l->n].pay, sizeof l->p[0].pay, "%s", payment_id);
  l->p[l->n].due = sim_mono_ms() + SIM_LATENCY_MS;
  l->p[l->n].epoch = epoch;
  l->n++;
}

int64_t sim_latency_next(const sim_latency_t* l) {
  return l->head < l->n ? l->p[l->head].due : INT64_MAX;
}

typedef struct {
  const char* pay;
  int found;
} find_t;

static int row(void* arg, const ob_value_t* c, size_t n) {
  (void)c;
  (void)n;
  ((find_t*)arg)->found = 1;
  return 0;
}

static int find_fn(ob_tx_t* tx, void* arg) {
  find_t* f = arg;
  ob_value_t v[1] = {OB_VTEXT(f->pay)};
  return ob_tx_exec(tx,
                    "SELECT 1 FROM merchant_payout WHERE source_payment_id = ?",
                    v, 1, row, f) < 0;
}

void sim_latency_check(sim_latency_t* l, ob_engine_t* e, uint64_t epoch) {
  while (l->head < l->n && l->p[l->head].due <= sim_mono_ms()) {
    pending_t* p = &l->p[l->head++];
    find_t f = {p->pay, 0};
    if (e == NULL || p->epoch != epoch) {
      l->excused++;
      continue;
    }
    l->checked++;
    if (ob_read(e, find_fn, &f) != 0) {
      l->excused++;
      continue;
    }
    if (!f.found) {
      l->late++;
      sim_oracle_violation(l->oracle, "accepted-payment-not-handled-in-time",
                           "payment %s accepted at %lld ms (the engine up, "
                           "its disk healthy), no payout %d ms later",
                           p->pay, (long long)(p->due - SIM_LATENCY_MS),
                           SIM_LATENCY_MS);
    }
  }
  if (l->head == l->n) l->head = l->n = 0;
}

void sim_latency_stats(const sim_latency_t* l, int64_t* checked,
                       int64_t* excused, int64_t* late) {
  *checked = l->checked;
  *excused = l->excused;
  *late = l->late;
}
