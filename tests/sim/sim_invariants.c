/* SPDX-License-Identifier: Apache-2.0 */
/*
** The oracle (sim.h). Safety: one payout per payment (the database), one
** published payout event per payment (SQS), ob_check clean. At the end,
** after the world healed: every acknowledged payment has its payout, from
** its own message, and the payout's event reached SQS with the id of its
** outbox row; every outbox row reached SQS; nothing left in the queue.
*/
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "oncebox_payout.h"
#include "tests/sim/sim.h"

/* A string map, open addressing (keys and values owned). */
typedef struct smap_s {
  char** k;
  char** v;
  size_t cap, n;
} smap_t;

static uint64_t hs(const char* s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

static char** slot(smap_t* m, const char* k) {
  size_t i = (size_t)(hs(k) & (m->cap - 1));
  while (m->k[i] && strcmp(m->k[i], k) != 0) i = (i + 1) & (m->cap - 1);
  return &m->k[i];
}

static const char* smap_get(smap_t* m, const char* k) {
  char** s;
  if (m->cap == 0) return NULL;
  s = slot(m, k);
  return *s ? m->v[s - m->k] : NULL;
}

static void smap_put(smap_t* m, const char* k, const char* v) {
  char** s;
  if (m->n * 2 >= m->cap) {
    smap_t b = {NULL, NULL, m->cap ? m->cap * 2 : 1024, 0};
    b.k = calloc(b.cap, sizeof *b.k);
    b.v = calloc(b.cap, sizeof *b.v);
    if (b.k == NULL || b.v == NULL) abort();
    for (size_t i = 0; i < m->cap; i++)
      if (m->k[i]) {
        char** t = slot(&b, m->k[i]);
        *t = m->k[i];
        b.v[t - b.k] = m->v[i];
        b.n++;
      }
    free(m->k);
    free(m->v);
    *m = b;
  }
  s = slot(m, k);
  if (*s) {
    free(m->v[s - m->k]);
  } else {
    *s = strdup(k);
    m->n++;
  }
  m->v[s - m->k] = strdup(v);
}

static void smap_free(smap_t* m) {
  for (size_t i = 0; i < m->cap; i++) {
    free(m->k[i]);
    free(m->v[i]);
  }
  free(m->k);
  free(m->v);
}

#define MAX_KINDS 16

struct sim_oracle_s {
  smap_t acked;       /* payment id -> message id */
  char** order;       /* payment ids in ack order */
  size_t norder, cap;
  smap_t published;   /* payment id -> payout event id (SQS) */
  smap_t events;      /* every event id SQS accepted -> type */
  smap_t fifo_last;   /* "group G" -> the last seq accepted in G */
  smap_t payouts;     /* payment id -> payout id (the step checks) */
  int64_t payout_rowid;  /* the last payout row they read */
  size_t sqs_seen;    /* SQS bodies already read */
  struct {
    char kind[48];
    char first[512];
    int n;
  } v[MAX_KINDS];
  int nkinds, total;
};

sim_oracle_t* sim_oracle_new(void) { return calloc(1, sizeof(sim_oracle_t)); }

void sim_oracle_free(sim_oracle_t* o) {
  if (o == NULL) return;
  smap_free(&o->acked);
  smap_free(&o->published);
  smap_free(&o->events);
  smap_free(&o->fifo_last);
  smap_free(&o->payouts);
  for (size_t i = 0; i < o->norder; i++) free(o->order[i]);
  free(o->order);
  free(o);
}

size_t sim_oracle_npayments(const sim_oracle_t* o) { return o->norder; }

void sim_oracle_violation(sim_oracle_t* o, const char* kind, const char* fmt,
                          ...) {
  int i;
  va_list ap;
  o->total++;
  for (i = 0; i < o->nkinds; i++)
    if (strcmp(o->v[i].kind, kind) == 0) break;
  if (i == o->nkinds) {
    if (o->nkinds == MAX_KINDS) return;
    o->nkinds++;
    snprintf(o->v[i].kind, sizeof o->v[i].kind, "%s", kind);
    va_start(ap, fmt);
    vsnprintf(o->v[i].first, sizeof o->v[i].first, fmt, ap);
    va_end(ap);
    sim_trace("VIOLATION %s: %s", kind, o->v[i].first);
  }
  o->v[i].n++;
}

int sim_oracle_violations(const sim_oracle_t* o) { return o->total; }

void sim_oracle_print(const sim_oracle_t* o) {
  for (int i = 0; i < o->nkinds; i++)
    printf("VIOLATION %s (%d): %s\n", o->v[i].kind, o->v[i].n, o->v[i].first);
}

void sim_oracle_acked(sim_oracle_t* o, const char* payment_id,
                      const char* msg_id) {
  if (smap_get(&o->acked, payment_id) == NULL) {
    if (o->norder == o->cap) {
      size_t cap = o->cap ? o->cap * 2 : 1024;
      char** n = realloc(o->order, cap * sizeof *n);
      if (n == NULL) abort();
      o->order = n;
      o->cap = cap;
    }
    o->order[o->norder++] = strdup(payment_id);
  }
  smap_put(&o->acked, payment_id, msg_id);
}

/* FIFO: the order of each group's events as SQS accepted them (the relay
** promises it per aggregate when ordered): the first copy of each event
** must carry a higher "seq" in its data than every earlier one of the
** group. Resends after the deduplication window repeat an event; they
** are not a new position. */
static void fifo_order(sim_oracle_t* o, const char* group, const cJSON* id,
                       const cJSON* data) {
  const cJSON* seq = cJSON_GetObjectItemCaseSensitive(data, "seq");
  char key[200];
  const char* last;
  if (!cJSON_IsNumber(seq) || smap_get(&o->events, id->valuestring)) return;
  snprintf(key, sizeof key, "group %s", group);
  last = smap_get(&o->fifo_last, key);
  if (last != NULL && atof(last) >= seq->valuedouble)
    sim_oracle_violation(o, "fifo-group-out-of-order",
                         "group %s: event %s (seq %.0f) after seq %s", group,
                         id->valuestring, seq->valuedouble, last);
  else {
    char v[32];
    snprintf(v, sizeof v, "%.0f", seq->valuedouble);
    smap_put(&o->fifo_last, key, v);
  }
}

static void one_body(void* arg, const char* queue, const char* group,
                     const char* body) {
  sim_oracle_t* o = arg;
  cJSON* ev;
  const cJSON *id, *type, *data, *pid;
  const char* seen;
  ev = cJSON_Parse(body);
  id = cJSON_GetObjectItemCaseSensitive(ev, "id");
  type = cJSON_GetObjectItemCaseSensitive(ev, "type");
  data = cJSON_GetObjectItemCaseSensitive(ev, "data");
  pid = cJSON_GetObjectItemCaseSensitive(data, "paymentId");
  if (!cJSON_IsString(id) || !cJSON_IsString(type)) {
    sim_oracle_violation(o, "sqs-body-not-cloudevent", "%.200s", body);
    cJSON_Delete(ev);
    return;
  }
  (void)queue;
  if (group[0] != '\0') fifo_order(o, group, id, data);
  smap_put(&o->events, id->valuestring, type->valuestring);
  if (strcmp(type->valuestring, OB_PAYOUT_EVENT_TYPE) == 0 &&
      cJSON_IsString(pid)) {
    seen = smap_get(&o->published, pid->valuestring);
    if (seen && strcmp(seen, id->valuestring) != 0)
      sim_oracle_violation(o, "two-payout-events-published",
                           "payment %s: events %s and %s", pid->valuestring,
                           seen, id->valuestring);
    else if (!seen)
      smap_put(&o->published, pid->valuestring, id->valuestring);
  }
  cJSON_Delete(ev);
}

/* Messages are only appended: read from where the last scan stopped. */
void sim_oracle_scan_sqs(sim_oracle_t* o, const sim_sqs_t* q) {
  o->sqs_seen = sim_sqs_sent(q, o->sqs_seen, one_body, o);
}

/* ---- database checks ---------------------------------------------------- */

/* One payout per payment: the rows added since the last step (by rowid),
** each against the payout already seen for its payment. */
static int payout_seen(void* arg, const ob_value_t* c, size_t n) {
  sim_oracle_t* o = arg;
  char pay[64], id[64];
  const char* seen;
  (void)n;
  snprintf(pay, sizeof pay, "%.*s", (int)c[1].n, (const char*)c[1].p);
  snprintf(id, sizeof id, "%.*s", (int)c[2].n, (const char*)c[2].p);
  if (c[0].i > o->payout_rowid) o->payout_rowid = c[0].i;
  seen = smap_get(&o->payouts, pay);
  if (seen != NULL && strcmp(seen, id) != 0)
    sim_oracle_violation(o, "two-payouts-for-a-payment",
                         "payment %s: payouts %s and %s", pay, seen, id);
  else if (seen == NULL)
    smap_put(&o->payouts, pay, id);
  return 0;
}

static int step_fn(ob_tx_t* tx, void* arg) {
  sim_oracle_t* o = arg;
  ob_value_t v[1] = {OB_VINT(o->payout_rowid)};
  return ob_tx_exec(tx,
                    "SELECT rowid, source_payment_id, id FROM merchant_payout "
                    "WHERE rowid > ? ORDER BY rowid",
                    v, 1, payout_seen, o) < 0;
}

void sim_oracle_check_step(sim_oracle_t* o, ob_engine_t* e) {
  int rc = ob_read(e, step_fn, o);
  if (rc != 0) sim_trace("check: read failed %d", rc);
}

typedef struct {
  sim_oracle_t* o;
  smap_t payouts;   /* payment -> source event id */
  smap_t outbox;    /* payout event id -> payment (aggregate) */
  int64_t outbox_rows;
} final_t;

static int payout_row(void* arg, const ob_value_t* c, size_t n) {
  final_t* f = arg;
  char p[64], ev[64];
  (void)n;
  snprintf(p, sizeof p, "%.*s", (int)c[0].n, (const char*)c[0].p);
  snprintf(ev, sizeof ev, "%.*s", (int)c[1].n, (const char*)c[1].p);
  smap_put(&f->payouts, p, ev);
  return 0;
}

static int outbox_row(void* arg, const ob_value_t* c, size_t n) {
  final_t* f = arg;
  char id[64], agg[64];
  (void)n;
  snprintf(id, sizeof id, "%.*s", (int)c[0].n, (const char*)c[0].p);
  snprintf(agg, sizeof agg, "%.*s", (int)c[1].n, (const char*)c[1].p);
  f->outbox_rows++;
  if (smap_get(&f->o->events, id) == NULL)
    sim_oracle_violation(f->o, "outbox-event-never-reached-sqs",
                         "event %s (%.*s, aggregate %s) is not in SQS", id,
                         (int)c[2].n, (const char*)c[2].p, agg);
  if (c[2].n == strlen(OB_PAYOUT_EVENT_TYPE) &&
      memcmp(c[2].p, OB_PAYOUT_EVENT_TYPE, c[2].n) == 0)
    smap_put(&f->outbox, agg, id);
  return 0;
}

static int final_fn(ob_tx_t* tx, void* arg) {
  final_t* f = arg;
  if (ob_tx_exec(tx, "SELECT source_payment_id, source_event_id FROM "
                     "merchant_payout", NULL, 0, payout_row, f) < 0)
    return 1;
  if (ob_tx_exec(tx, "SELECT id, aggregate_id, event_type FROM outbox_event",
                 NULL, 0, outbox_row, f) < 0)
    return 1;
  return 0;
}

static void on_check(void* arg, const char* line) {
  sim_oracle_violation(arg, "ob_check", "%s", line);
}

void sim_oracle_check_final(sim_oracle_t* o, ob_engine_t* e) {
  final_t f;
  ob_stats_t st;
  int rc;
  memset(&f, 0, sizeof f);
  f.o = o;
  rc = ob_check(e, on_check, o);
  if (rc < 0)
    sim_oracle_violation(o, "ob_check-failed", "ob_check: %s (%s)",
                         ob_err_name(rc), ob_errmsg(e));
  if (ob_read(e, final_fn, &f) != 0) {
    sim_oracle_violation(o, "final-read-failed", "%s", ob_errmsg(e));
  }
  for (size_t i = 0; i < o->norder; i++) {
    const char* pay = o->order[i];
    const char* msg = smap_get(&o->acked, pay);
    const char* src = smap_get(&f.payouts, pay);
    const char* ev = smap_get(&f.outbox, pay);
    const char* pub = smap_get(&o->published, pay);
    if (src == NULL) {
      sim_oracle_violation(o, "liveness-acked-payment-not-paid",
                           "payment %s (message %s) acknowledged, no payout "
                           "after the world healed", pay, msg);
      continue;
    }
    if (strcmp(src, msg) != 0)
      sim_oracle_violation(o, "payout-from-wrong-message",
                           "payment %s paid by %s, enqueued as %s", pay, src,
                           msg);
    if (pub == NULL)
      sim_oracle_violation(o, "liveness-payout-event-not-published",
                           "payment %s: payout event %s not in SQS after the "
                           "world healed", pay, ev ? ev : "(no outbox row)");
    else if (ev != NULL && strcmp(pub, ev) != 0)
      sim_oracle_violation(o, "published-under-another-id",
                           "payment %s: outbox %s, SQS %s", pay, ev, pub);
  }
  if (ob_stats(e, &st) == 0) {
    if (st.queue_ready + st.queue_in_hand > 0)
      sim_oracle_violation(o, "liveness-queue-not-drained",
                           "%lld ready, %lld in hand, %lld delayed rows left "
                           "after the world healed", (long long)st.queue_ready,
                           (long long)st.queue_in_hand,
                           (long long)st.queue_delayed);
    if (st.outbox_unpublished > 0)
      sim_oracle_violation(o, "liveness-outbox-not-drained",
                           "%lld outbox rows unpublished (%lld due) after the "
                           "world healed", (long long)st.outbox_unpublished,
                           (long long)st.outbox_due);
  }
  smap_free(&f.payouts);
  smap_free(&f.outbox);
}
