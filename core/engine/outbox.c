/* SPDX-License-Identifier: Apache-2.0 */
/* Handing outbox events to a sink. The sink runs outside any transaction
** (a real one talks to the network); marks are committed afterwards, so a
** crash in between republishes: at-least-once, stated as such. */
#include <stdlib.h>
#include <string.h>

#include "core/engine/engine_int.h"
#include "core/util/assert.h"
#include "core/util/retry.h"

typedef struct pending_s {
  ob_event_t ev;
  char* buf;   /* one allocation holding every string of ev */
  int rc;      /* sink result */
} pending_t;

typedef struct collect_s {
  pending_t* items;
  size_t n;
  size_t cap;  /* items allocated: the max asked of ob__outbox_due */
  int oom;
} collect_t;

static char* put(char** cur, const char* s, size_t n) {
  char* at = *cur;
  memcpy(at, s, n);
  at[n] = '\0';
  *cur += n + 1;
  return at;
}

static int collect_cb(void* arg, const ob_event_t* ev) {
  collect_t* c = arg;
  pending_t* p;
  size_t lid = strlen(ev->id), lc = strlen(ev->causation_id),
         lt = strlen(ev->event_type), la = strlen(ev->aggregate_id),
         ltp = ev->traceparent ? strlen(ev->traceparent) : 0,
         lts = ev->tracestate ? strlen(ev->tracestate) : 0;
  char* cur;
  OB__ASSERT(c->n < c->cap);  /* ob__outbox_due returns at most max rows */
  p = &c->items[c->n];
  p->buf = malloc(lid + lc + lt + la + ev->payload_len + ltp + lts + 7);
  if (p->buf == NULL) {
    c->oom = 1;
    return 1;
  }
  cur = p->buf;
  p->ev = *ev;
  p->ev.id = put(&cur, ev->id, lid);
  p->ev.causation_id = put(&cur, ev->causation_id, lc);
  p->ev.event_type = put(&cur, ev->event_type, lt);
  p->ev.aggregate_id = put(&cur, ev->aggregate_id, la);
  p->ev.payload = put(&cur, ev->payload, ev->payload_len);
  if (ev->traceparent) p->ev.traceparent = put(&cur, ev->traceparent, ltp);
  if (ev->tracestate) p->ev.tracestate = put(&cur, ev->tracestate, lts);
  c->n++;
  return 0;
}

/* Outbox publication backoff: 1 s doubling to 5 min, +-10%. */
static const ob_retry_policy_t outbox_backoff = {0, 1000, 2.0, 300000, 0.1};

int ob_outbox_drain(ob_engine_t* e, ob_sink_cb sink, void* arg, size_t max,
                    size_t* published) {
  collect_t c;
  int rc;
  size_t ok = 0;
  int64_t now;

  if (published) *published = 0;
  if (e == NULL || sink == NULL || max == 0) return OB_EINVAL;
  if (e->db.in_tx) return OB_ESTATE;
  if (max > 1000) max = 1000;
  memset(&c, 0, sizeof c);
  c.items = calloc(max, sizeof *c.items);
  if (c.items == NULL) return OB_ENOMEM;
  c.cap = max;

  ob__deadlines_watch(e);
  now = ob__now(e);
  rc = ob__outbox_due(&e->db, now, max, collect_cb, &c);
  if (rc < 0) goto out;
  if (c.oom) {
    rc = OB_ENOMEM;
    goto out;
  }
  for (size_t i = 0; i < c.n; i++) c.items[i].rc = sink(arg, &c.items[i].ev);

  /* One transaction for all marks: one fsync per drained batch. */
  rc = ob__db_begin(&e->db);
  if (rc < 0) goto out;
  now = ob__now(e);
  for (size_t i = 0; i < c.n; i++) {
    pending_t* p = &c.items[i];
    if (p->rc == 0) {
      rc = ob__outbox_mark_published(&e->db, p->ev.id, now);
      ok++;
    } else {
      int64_t d = ob__retry_jitter(
          &outbox_backoff,
          ob__retry_base_delay(&outbox_backoff, p->ev.attempt_count < 1000
                                                     ? p->ev.attempt_count + 1
                                                     : 1000),
          e->opts.clock);
      rc = ob__outbox_mark_failed(&e->db, p->ev.id, now + d,
                                  ob_strerror(p->rc), now);
    }
    if (rc < 0) {
      ob__db_rollback(&e->db);
      ok = 0;
      goto out;
    }
  }
  /* The sink's publications are publications: `stats` gives their time
  ** (kept apart from the relays' connectivity, which a sink has none of). */
  if (ok > 0 &&
      (rc = ob__relay_status_set(&e->db, OB__SINK_STATUS_NAME, 1, now, NULL,
                                 now)) < 0) {
    ob__db_rollback(&e->db);
    ok = 0;
    goto out;
  }
  rc = ob__db_commit(&e->db);
  if (rc < 0) ok = 0;

out:
  for (size_t i = 0; i < c.n; i++) free(c.items[i].buf);
  free(c.items);
  if (published) *published = ok;
  return rc;
}

int ob_sink_enqueue(void* other_engine, const ob_event_t* ev) {
  ob_envelope_t env;
  memset(&env, 0, sizeof env);
  env.id = ev->id;
  env.type = ev->event_type;
  env.body = ev->payload;
  env.body_len = ev->payload_len;
  return ob_enqueue((ob_engine_t*)other_engine, &env);
}

int ob_outbox_list(ob_engine_t* e, int filter, size_t limit,
                   int (*cb)(void* arg, const ob_outbox_row_t* r), void* arg) {
  if (e == NULL || filter < OB_OUTBOX_ALL || filter > OB_OUTBOX_PARKED)
    return OB_EINVAL;
  return ob__outbox_list(&e->db, filter, limit, cb, arg);
}

int ob_outbox_retry_parked(ob_engine_t* e) {
  int n;
  if (e == NULL) return OB_EINVAL;
  n = ob__relay_retry_parked(&e->db, ob__now(e));
  if (n > 0 && e->hooks.wake) e->hooks.wake(e);
  return n;
}
