/* SPDX-License-Identifier: Apache-2.0 */
/* ob-crash-campaign-relay: the crash and power-loss campaign of the outbox
** relay: every committed outbox row reaches SQS at least once (invariant I4),
** and the publish-before-2xx mutant is caught (T4d; both in the list at the
** top of docs/reliability.md). See docs/reliability.md, "The relay under
** kill -9 and power loss".
**
**   ob-crash-campaign-relay --seed S --cycles N
**                           [--mode kill|power|torn|mixed]
**                           [--mutant publish-before-2xx]
**                           [--reset-every R] [--kill-max-ms M]
**                           [--dir D] [--keep] [--quiet] [--stop-on-violation]
**
** The SQS side is the relay tests' server (tests/integration/sqs/
** sqs_server.mjs: fauxqs behind a TLS terminator that verifies every SigV4
** signature), started with their helpers (sq_server_start, rf_setenv); the
** engine reaches it as https://localhost:PORT with the test CA, through the
** AWS environment variables, as a terminal would.
**
** A supervisor forks workers. A worker opens the database (on the plsim VFS
** shim in the power modes), enables the relay (ob_relay_enable, lease 1 s,
** backoffs 50-200 ms, ordered or not) and attaches the engine to a libuv
** loop. On the same loop an idle handle handles the queue of
** PaymentCaptured messages the supervisor keeps topped up: one ob_run_once
** per loop iteration (batch 1 or 2-32) and a kick of the relay after each
** commit that emitted events, as platform/loop/runner.c does (the engine is
** opened with no_handling so that the runner's own timer does not also
** handle; see handle_cb for why not a timer). So the relay publishes the
** MerchantPayoutCreated rows while further messages are handled, and its
** claims and marks (synchronous=NORMAL) interleave with the handling
** commits (FULL) and, in 2 cycles of 3, with checkpoints of a second
** connection every 2-21 commits. Acks: a second consumer notes the ids of
** a batch, and the worker writes them to a pipe only after ob_run_once
** returned 0 (COMMIT), as in campaign.c. The worker dies:
**   kill   SIGKILL after U(0, M ms) (M = --kill-max-ms, 400);
**   power  half the cycles SIGKILL after U(0, M ms), half a crash just
**          before the k-th sync (k in 1..60; SIGKILL after 1 s if it has
**          not happened by then); then plsim_restore, strict;
**   torn   the same with a torn restore;
**   mixed  one of the three per cycle (default).
** A worker that is not killed ends by itself once the queue is empty and
** every outbox row is published (rows claimed by a dead worker wait out
** their 1 s lease first).
**
** After every cycle the supervisor receives everything new from the SQS
** queue (visibility timeout 12 h: a message received once is not seen
** again; nothing is deleted) and checks the database (stock VFS, read-only
** as in campaign.c):
**   integrity        PRAGMA integrity_check is "ok";
**   unbacked mark    every outbox row marked published is already in SQS
**                    (the relay marks a row only after SQS answered 2xx,
**                    so SQS had it before the mark committed);
**   durability       an outbox row once seen after a crash is still there
**                    with the same id; every acked event has its outbox row;
**                    no committed delivery vanished unhandled;
**   no phantom       every message in SQS is a well-formed CloudEvent of an
**                    event whose outbox row exists, with that row's id;
**   no surprise      no row parked, no message failed, no engine error.
** Every R cycles (--reset-every, 100) and at the end, a clean final worker
** (no crash, stock VFS) handles and publishes everything; then the last
** messages are received and the epoch is judged: every event whose outbox
** row was committed (seen in a check or in the final database, or acked)
** must be in SQS at least once ("lost" counts those that are not), every
** row must be marked published; copies beyond the first are counted as
** duplicated-in-SQS (at-least-once allows them: consumers dedup by the
** CloudEvents id). Each epoch has a new database and a new SQS queue.
**
** Mutant: --mutant publish-before-2xx execs ob-crash-campaign-relay-publish-
** before-2xx, linked with the library built with OB_MUTANT_PUBLISH_BEFORE_2XX
** (platform/relay/relay.c marks claimed rows published before sending
** them). The campaign must report lost events for it (ctest
** crash_relay_mutant_publish_before_2xx).
**
** Everything random comes from --seed; a cycle's parameters from (seed,
** cycle) alone. SIGKILL instants are real time, so a run is reproducible in
** its parameters, not to the instruction.
** Exit status: 0 no violation, 1 violations, 2 the harness failed, 77 the
** SQS server cannot run here (no Node.js >= 20 or no fauxqs). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <sqlite3.h>
#include <uv.h>

#include "core/engine/engine_int.h" /* ob__engine_kick_components */
#include "oncebox.h"
#include "oncebox_payout.h"
#include "tests/crash/campaign_common.h"
#include "tests/crash/plsim.h"
#include "tests/integration/relay/relay_fixture.h"

#define SOURCE "urn:oncebox:crash-relay"
#define MAX_BATCH 32           /* handling batch: 1 or 2-32 */
#define KILL_MAX_MS 400        /* default --kill-max-ms */
#define SYNC_K_MAX 60          /* crash before sync k, k in 1..60 */
#define FALLBACK_KILL_MS 1000  /* ... else SIGKILL after 1 s */
#define BACKLOG_LOW 120        /* top the queue up below this many rows */
#define TOPUP_MIN 100          /* new events per top-up: 100..250 */
#define TOPUP_SPAN 151
#define DUP_PERCENT 20         /* events delivered twice */
#define FINAL_DEADLINE_MS 45000 /* the final worker gives up after this */
#define VISIBILITY_S 43200     /* a received message is not seen again */

/* Worker exit codes of this campaign (the shared ones, 10-15, and their
** meaning: campaign_common.h; here W_OPEN_FAILED also covers
** ob_relay_enable and ob_attach). */
#define W_ENGINE_ERROR 16      /* the engine logged an error */
#define W_DRAIN_TIMEOUT 17     /* final worker: not everything published */

/* ob-crash-campaign-relay-publish-before-2xx: this file linked with the
** library built with OB_MUTANT_PUBLISH_BEFORE_2XX. */
#ifdef OB_CAMPAIGN_RELAY_MUTANT_BUILD
#define IN_MUTANT_BINARY 1
#else
#define IN_MUTANT_BINARY 0
#endif

/* kill, power and torn are KIND_KILL, KIND_POWER and KIND_TORN. */
typedef enum { MODE_KILL, MODE_POWER, MODE_TORN, MODE_MIXED } run_mode_t;
static const char* const mode_names[] = {"kill", "power", "torn", "mixed"};
typedef enum { MUT_NONE, MUT_PUBLISH_BEFORE_2XX } mutant_t;
static const char* const mutant_names[] = {"none", "publish-before-2xx"};

/* Per event, kept for the epoch. */
enum {
  S_ENQ = 1,    /* a delivery of it was enqueued and committed */
  S_ACKED = 2,  /* the worker acked it after COMMIT */
  S_REP = 4,    /* a durability violation was reported for it */
  S_UREP = 8,   /* an unbacked mark was reported for it */
  S_PREP = 16   /* a phantom was reported for it */
};
/* Per event, found by one check. */
enum { C_ROW = 1, C_QUEUED = 2, C_PUB = 4 };

typedef struct ev_s {
  char id[OB_UUID_BUFLEN];   /* message id = causation id of its outbox row */
  char pay[OB_UUID_BUFLEN];  /* payment id = aggregate id */
  char oid[OB_UUID_BUFLEN];  /* its outbox row's id, once seen after a crash ("" not yet) */
  char sid[OB_UUID_BUFLEN];  /* the CloudEvents id SQS has for it ("" none) */
  uint32_t nsqs; /* copies in SQS */
} ev_t;

typedef struct wcfg_s {
  int shim;              /* run on plsim */
  int64_t crash_sync;    /* plsim crash point */
  int batch;
  int ordered;           /* relay option */
  int ckpt_every;        /* checkpoint via a 2nd connection every N commits */
  int final;             /* the final drain: no crash, a deadline */
  uint64_t seed;         /* the worker's random source (UUIDv7) */
} wcfg_t;

typedef struct camp_s {
  camp_common_t cm;          /* first: callbacks cast &c->cm back to c */
  /* options */
  int kill_max_ms;
  uint64_t rng;

  /* the SQS server and the epoch's queue */
  sq_server_t srv;
  char* queue_url;

  /* the current epoch (database + queue) */
  int epoch;
  uint64_t eseed;
  ev_t* ev;
  uint8_t *st, *cf;
  size_t nev, cap;
  int64_t backlog;
  long epoch_cycles;

  /* totals (the current worker's records: cm, w_stat = syncs, commits) */
  int64_t attempted, deliveries, dup_deliveries, acked;
  int64_t events, published_rows, in_sqs, sqs_messages, dup_sqs;
  int64_t lost, unbacked, vanished, phantoms, integrity, unexpected,
      undrained;
  long x_fail;
  long cut_publishing;       /* crashes that left the relay mid-way */
  int64_t ms_worker, ms_restore, ms_sqs, ms_check, ms_final;
} camp_t;

static int64_t violations(const camp_t* c) {
  return c->lost + c->unbacked + c->vanished + c->phantoms + c->integrity +
         c->unexpected + c->undrained;
}

/* ---- events of the epoch --------------------------------------------------- */

static void ensure_events(camp_t* c, size_t n) {
  size_t cap;
  if (n <= c->cap) return;
  cap = c->cap ? c->cap : 4096;
  while (cap < n) cap *= 2;
  c->ev = realloc(c->ev, cap * sizeof *c->ev);
  c->st = realloc(c->st, cap);
  c->cf = realloc(c->cf, cap);
  if (!c->ev || !c->st || !c->cf) {
    fprintf(stderr, "out of memory\n");
    exit(2);
  }
  c->cap = cap;
}

/* Event i of the epoch: its id ends with i in hex, so a row maps back. */
static size_t new_event(camp_t* c) {
  size_t i = c->nev;
  ensure_events(c, i + 1);
  memset(&c->ev[i], 0, sizeof c->ev[i]);
  camp_event_ids(c->eseed, i, c->ev[i].id, c->ev[i].pay);
  c->st[i] = 0;
  c->cf[i] = 0;
  return c->nev++;
}

static long event_index(const camp_t* c, const char* s) {
  long i = camp_event_tail(s);
  if (i < 0 || (size_t)i >= c->nev || memcmp(c->ev[i].id, s, 36) != 0)
    return -1;
  return i;
}

/* Enqueue `events` new events (a fifth of them twice), shuffled, in one
** transaction through e. Returns 0 or the engine's error. */
static int top_up(camp_t* c, ob_engine_t* e, size_t events) {
  ob_envelope_t* envs;
  int* results;
  char (*bodies)[256];
  size_t* list;
  size_t n = 0;
  int rc;
  list = camp_xcalloc(events * 2, sizeof *list);
  for (size_t i = 0; i < events; i++) {
    size_t idx = new_event(c);
    list[n++] = idx;
    if (camp_rnd(&c->rng) % 100 < DUP_PERCENT) list[n++] = idx;
  }
  for (size_t i = n; i > 1; i--) {
    size_t j = (size_t)(camp_rnd(&c->rng) % i), t = list[i - 1];
    list[i - 1] = list[j];
    list[j] = t;
  }
  envs = camp_xcalloc(n, sizeof *envs);
  results = camp_xcalloc(n, sizeof *results);
  bodies = camp_xcalloc(n, sizeof *bodies);
  for (size_t i = 0; i < n; i++) {
    camp_event_body(c->eseed, list[i], c->ev[list[i]].pay, bodies[i],
                    sizeof bodies[i]);
    envs[i].id = c->ev[list[i]].id;
    envs[i].type = OB_PAYOUT_MESSAGE_TYPE;
    envs[i].body = bodies[i];
    envs[i].body_len = strlen(bodies[i]);
  }
  rc = ob_enqueue_many(e, envs, n, results);
  if (rc == (int)n) {
    for (size_t i = 0; i < n; i++) {
      if (!(c->st[list[i]] & S_ENQ)) c->attempted++;
      else c->dup_deliveries++;
      c->st[list[i]] |= S_ENQ;
    }
    c->deliveries += (int64_t)n;
    c->backlog += (int64_t)n;
    rc = 0;
  } else {
    rc = rc < 0 ? rc : OB_EINVAL;
  }
  free(list);
  free(envs);
  free(results);
  free(bodies);
  return rc;
}

/* ---- the worker --------------------------------------------------------------- */

typedef struct worker_s {
  camp_t* c;
  const wcfg_t* w;
  int fd;
  ob_engine_t* e;
  camp_recorder_t rec;
  sqlite3* ck;
  uv_idle_t idle;    /* handling */
  uv_timer_t timer;  /* then: waiting for the relay */
  int commits;
  int64_t deadline;
} worker_t;

static const char* g_wctx; /* the worker's cycle, for its messages */
static int64_t g_t0;       /* when it started */

/* An error the engine logs in a worker (the relay cannot record results,
** a claim fails, ...) never happens on a healthy system: fail the cycle. */
static void worker_log(void* ctx, ob_log_level_t level, const char* msg) {
  int quiet = *(const int*)ctx;
  if (level == OB_LOG_ERROR) {
    fprintf(stderr, "worker (%s): engine error: %s\n", g_wctx, msg);
    _exit(W_ENGINE_ERROR);
  }
  if (!quiet)
    fprintf(stderr, "worker (%s) [%lld ms]: %s\n", g_wctx,
            (long long)(camp_mono_ms() - g_t0), msg);
}

static void detached(ob_engine_t* e, void* arg) {
  (void)e;
  (void)arg;
}

/* Queue empty: has the relay published everything? Then stop. */
static void done_cb(uv_timer_t* t) {
  worker_t* wk = t->data;
  ob_stats_t st;
  int rc = ob_stats(wk->e, &st);
  if (rc < 0) {
    fprintf(stderr, "worker (%s): ob_stats: %s\n", g_wctx, ob_errmsg(wk->e));
    _exit(W_RUN_FAILED);
  }
  if (st.outbox_unpublished - st.outbox_parked == 0) {
    /* Everything published (parked rows are the checker's business). */
    uv_close((uv_handle_t*)&wk->idle, NULL);
    uv_close((uv_handle_t*)t, NULL);
    ob_detach(wk->e, detached, NULL);
    return;
  }
  if (wk->w->final && camp_mono_ms() > wk->deadline) {
    fprintf(stderr, "worker (%s): %lld outbox rows still unpublished after "
            "%d s\n", g_wctx, (long long)st.outbox_unpublished,
            FINAL_DEADLINE_MS / 1000);
    camp_send_stats(wk->fd, wk->commits);
    _exit(W_DRAIN_TIMEOUT);
  }
  uv_timer_start(t, done_cb, 20, 0);
}

/* One handling transaction per loop iteration, as runner.c's work_cb means
** to (acks after COMMIT, a kick of the relay, periodic checkpoints). An
** idle handle, not runner.c's timer re-armed with 0 from its own callback:
** libuv 1.44.2 (Debian 12) runs such a timer again in the same pass,
** without polling I/O in between (libuv issue #4245, changed upstream by
** PR #4250), so the relay's replies would wait until the whole queue is
** handled and it would hardly ever be killed while publishing. */
static void handle_cb(uv_idle_t* h) {
  worker_t* wk = h->data;
  ob_batch_result_t res;
  int64_t at;
  int rc;

  wk->rec.n = 0;
  rc = ob_run_once(wk->e, &res);
  if (rc == OB_EBUSY) return; /* again next iteration */
  if (rc < 0) {
    fprintf(stderr, "worker (%s): ob_run_once: %s: %s\n", g_wctx,
            ob_err_name(rc), ob_errmsg(wk->e));
    _exit(W_RUN_FAILED);
  }
  camp_recorder_flush(&wk->rec);
  if (res.failed > 0 || res.retried > 0) {
    fprintf(stderr, "worker (%s): a valid message was %s\n", g_wctx,
            res.failed ? "moved to the failure store" : "retried");
    _exit(W_UNEXPECTED);
  }
  if (res.claimed > 0) {
    /* New outbox rows: wake the relay, as the runner does. */
    if (res.handled > 0) ob__engine_kick_components(wk->e, NULL);
    wk->commits++;
    if (wk->ck != NULL && wk->commits % wk->w->ckpt_every == 0)
      camp_checkpoint(wk->ck,
                      camp_checkpoint_mode(wk->commits / wk->w->ckpt_every),
                      g_wctx);
    return;
  }
  rc = ob_next_due(wk->e, &at);
  if (rc != OB_ENOTFOUND) {
    fprintf(stderr, "worker (%s): delayed messages in the queue\n", g_wctx);
    _exit(W_DELAYED);
  }
  /* The supervisor adds nothing while a worker runs: handling is over. */
  uv_idle_stop(h);
  uv_timer_start(&wk->timer, done_cb, 0, 0);
}

static void worker_main(camp_t* c, const wcfg_t* w, int fd) {
  camp_clock_t sc;
  worker_t wk;
  ob_options_t o;
  ob_relay_options_t ro;
  uv_loop_t loop;
  char err[512];
  int rc;

  memset(&wk, 0, sizeof wk);
  wk.c = c;
  wk.w = w;
  wk.fd = fd;
  g_wctx = c->cm.ctx;
  g_t0 = camp_mono_ms();
  camp_clock_init(&sc, w->seed);
  ob_options_init(&o);
  o.db_path = c->cm.db;
  o.batch_size = w->batch;
  o.busy_timeout_ms = 10000;
  o.clock = &sc.clock;
  o.no_handling = 1; /* handle_cb handles; the runner only runs the relay */
  o.log = worker_log;
  o.log_ctx = &c->cm.quiet;
  o.log_level = OB_LOG_WARN;
  if (ob_open(&wk.e, &o, err, sizeof err) < 0) {
    fprintf(stderr, "worker (%s): ob_open: %s\n", c->cm.ctx, err);
    _exit(W_OPEN_FAILED);
  }
  camp_write_rec(fd, 'O', "", 0);
  wk.rec.max = MAX_BATCH;
  wk.rec.fd = fd;
  camp_register(wk.e, &wk.rec);
  ob_relay_options_init(&ro);
  ro.queue_url = c->queue_url;
  ro.source = SOURCE;
  ro.ordered = w->ordered;
  ro.park_after = 10;
  ro.backoff_base_ms = 50;
  ro.backoff_cap_ms = 200;
  ro.probe.base_ms = 50;
  ro.probe.cap_ms = 200;
  ro.lease_ms = 1000; /* the minimum: a dead worker's claims expire soon */
  rc = ob_relay_enable(wk.e, &ro, err, sizeof err);
  if (rc != 0) {
    fprintf(stderr, "worker (%s): ob_relay_enable: %s (%s)\n", c->cm.ctx, err,
            ob_err_name(rc));
    _exit(W_OPEN_FAILED);
  }
  if (w->ckpt_every > 0) wk.ck = camp_open_checkpointer(c->cm.db, c->cm.ctx);
  if (uv_loop_init(&loop) != 0) _exit(W_OPEN_FAILED);
  rc = ob_attach(wk.e, &loop);
  if (rc != 0) {
    fprintf(stderr, "worker (%s): ob_attach: %s: %s\n", c->cm.ctx,
            ob_err_name(rc), ob_errmsg(wk.e));
    _exit(W_OPEN_FAILED);
  }
  wk.deadline = camp_mono_ms() + FINAL_DEADLINE_MS;
  uv_timer_init(&loop, &wk.timer);
  uv_idle_init(&loop, &wk.idle);
  wk.timer.data = wk.idle.data = &wk;
  uv_idle_start(&wk.idle, handle_cb);
  uv_run(&loop, UV_RUN_DEFAULT);
  if (wk.ck) sqlite3_close(wk.ck);
  ob_close(wk.e);
  uv_loop_close(&loop);
  camp_send_stats(fd, wk.commits);
  _exit(0);
}

/* ---- the supervisor: run a worker, read its pipe ---------------------------- */

/* The worker's 'A' records: ids acked after COMMIT. */
static void on_id(camp_common_t* cm, char type, const char* id) {
  camp_t* c = (camp_t*)cm;
  long idx = event_index(c, id);
  (void)type;
  if (idx < 0) {
    fprintf(stderr, "harness: the worker reported unknown id %s\n", id);
    c->cm.harness++;
    return;
  }
  if (!(c->st[idx] & S_ACKED)) {
    c->st[idx] |= S_ACKED;
    c->acked++;
  }
}

static void worker_child(camp_common_t* cm, const void* cfg, int fd) {
  worker_main((camp_t*)cm, cfg, fd);
}

/* Run a worker as camp_run_worker does, on plsim if w->shim. */
static int run_worker(camp_t* c, const wcfg_t* w, int kill_ms, int* hung) {
  plsim_config_t pc;
  memset(&pc, 0, sizeof pc);
  pc.crash_at_sync = w->crash_sync;
  return camp_run_worker(&c->cm, worker_child, w, w->shim ? &pc : NULL,
                         kill_ms, hung);
}

/* ---- SQS: receive what is new ------------------------------------------------ */

static const char* attr_value(const ob__sqs_message_t* m, const char* name) {
  for (size_t k = 0; k < m->nmessage_attributes; k++)
    if (strcmp(m->message_attributes[k].name, name) == 0)
      return m->message_attributes[k].value;
  return NULL;
}

static const char* jstr(const cJSON* o, const char* name) {
  const cJSON* v = cJSON_GetObjectItemCaseSensitive(o, name);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int streq(const char* a, const char* b) {
  return a != NULL && b != NULL && strcmp(a, b) == 0;
}

/* One message from SQS: a CloudEvent of a known event, always with the same
** id for that event. */
static void take_message(camp_t* c, const ob__sqs_message_t* m) {
  const char* cause = attr_value(m, "causationId");
  long i = event_index(c, cause);
  cJSON* ev = cJSON_ParseWithLength(m->body, m->body_len);
  const char* id = jstr(ev, "id");
  const cJSON* data = cJSON_GetObjectItemCaseSensitive(ev, "data");
  c->sqs_messages++;
  if (i < 0 || ev == NULL || id == NULL || strlen(id) != 36 ||
      !streq(jstr(ev, "specversion"), "1.0") ||
      !streq(jstr(ev, "source"), SOURCE) ||
      !streq(jstr(ev, "type"), OB_PAYOUT_EVENT_TYPE) ||
      !streq(jstr(ev, "subject"), c->ev[i].pay) ||
      !streq(jstr(data, "paymentId"), c->ev[i].pay) ||
      !streq(attr_value(m, "aggregateId"), c->ev[i].pay)) {
    c->phantoms++;
    camp_vio(&c->cm,
             "PHANTOM: a message in SQS that is no event of this epoch, or "
             "malformed: causationId %s, body %.*s",
             cause ? cause : "(none)",
             (int)(m->body_len > 300 ? 300 : m->body_len), m->body);
    cJSON_Delete(ev);
    return;
  }
  if (c->ev[i].sid[0] == '\0') {
    memcpy(c->ev[i].sid, id, OB_UUID_BUFLEN);
  } else if (strcmp(c->ev[i].sid, id) != 0 && !(c->st[i] & S_PREP)) {
    c->st[i] |= S_PREP;
    c->phantoms++;
    camp_vio(&c->cm, "PHANTOM: event %s is in SQS under two ids, %s and %s",
        c->ev[i].id, c->ev[i].sid, id);
  }
  c->ev[i].nsqs++;
  cJSON_Delete(ev);
}

/* Receive every message that became visible since the last call (the
** relay's workers are dead now). 0, or -1 (harness) if SQS failed. */
static int sqs_collect(camp_t* c) {
  static const char* const mattrs[] = {"All"};
  uv_loop_t loop;
  sq_clock_t clock;
  ob__sqs_client_config_t cfg;
  ob__sqs_client_t* cl = NULL;
  char err[256];
  int ret = 0;

  uv_loop_init(&loop);
  sq_clock_init(&clock, 0, -1);
  sq_client_config(&c->srv, &cfg, SQ_SECRET, &clock.clock);
  if (ob__sqs_client_open(&cl, &loop, &cfg, err, sizeof err) != 0) {
    fprintf(stderr, "harness: SQS client: %s\n", err);
    c->cm.harness++;
    uv_loop_close(&loop);
    return -1;
  }
  for (;;) {
    ob__sqs_receive_t p;
    ob__sqs_req_t req;
    sq_done_t done;
    size_t n;
    int st;
    ob__sqs_receive_init(&p);
    p.queue_url = c->queue_url;
    p.message_attribute_names = mattrs;
    p.nmessage_attribute_names = 1;
    p.max_messages = 10;
    p.visibility_timeout = VISIBILITY_S;
    p.wait_time_seconds = 0;
    memset(&req, 0, sizeof req);
    memset(&done, 0, sizeof done);
    req.data = &done;
    st = ob__sqs_receive_message(cl, &req, &p, sq_cb);
    if (st == 0) st = sq_wait(&loop, &req);
    if (st != 0) {
      fprintf(stderr, "harness: ReceiveMessage: %s (%s)\n", req.detail,
              ob__sqs_err_name(st));
      c->cm.harness++;
      ob__sqs_req_cleanup(&req);
      ret = -1;
      break;
    }
    n = req.receive.n;
    for (size_t i = 0; i < n; i++) take_message(c, &req.receive.messages[i]);
    ob__sqs_req_cleanup(&req);
    if (n == 0) break;
  }
  ob__sqs_client_close(cl, NULL, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  uv_loop_close(&loop);
  return ret;
}

/* ---- the checker (stock VFS, read-only) ------------------------------------- */

typedef struct chk_s {
  int bad;              /* integrity failure (incl. a checker failure) */
  int64_t queue, failed, rows, published, parked;
} chk_t;

static chk_t* g_chk;   /* the check in progress, for the row callbacks */

static void row_outbox(camp_common_t* cm, sqlite3_stmt* st) {
  camp_t* c = (camp_t*)cm;
  const char* id = (const char*)sqlite3_column_text(st, 0);
  const char* cause = (const char*)sqlite3_column_text(st, 1);
  const char* type = (const char*)sqlite3_column_text(st, 2);
  const char* agg = (const char*)sqlite3_column_text(st, 3);
  int published = sqlite3_column_type(st, 4) != SQLITE_NULL;
  int parked = sqlite3_column_type(st, 5) != SQLITE_NULL;
  long i = event_index(c, cause);
  g_chk->rows++;
  if (i < 0 || id == NULL || strlen(id) != 36 ||
      !streq(type, OB_PAYOUT_EVENT_TYPE) || !streq(agg, c->ev[i].pay)) {
    c->unexpected++;
    camp_vio(&c->cm, "outbox row %s for an unknown event (cause %s)",
             id ? id : "(null)", cause ? cause : "(null)");
    return;
  }
  if (c->cf[i] & C_ROW) {
    c->unexpected++;
    camp_vio(&c->cm, "event %s has two outbox rows", c->ev[i].id);
    return;
  }
  c->cf[i] |= C_ROW;
  if (c->ev[i].oid[0] == '\0') {
    memcpy(c->ev[i].oid, id, OB_UUID_BUFLEN); /* seen after a crash: durable from now on */
  } else if (strcmp(c->ev[i].oid, id) != 0 && !(c->st[i] & S_REP)) {
    c->st[i] |= S_REP;
    c->vanished++;
    camp_vio(&c->cm, "LOST outbox row %s of event %s: now %s", c->ev[i].oid,
             c->ev[i].id, id);
  }
  if (published) {
    g_chk->published++;
    c->cf[i] |= C_PUB;
    /* Marked only after SQS answered 2xx: SQS must have it already. */
    if ((c->ev[i].nsqs == 0 || strcmp(c->ev[i].sid, id) != 0) &&
        !(c->st[i] & S_UREP)) {
      c->st[i] |= S_UREP;
      c->unbacked++;
      camp_vio(&c->cm,
               "outbox row %s (event %s) is marked published but SQS does not "
               "have it",
               id, c->ev[i].id);
    }
  }
  if (parked) {
    g_chk->parked++;
    c->unexpected++;
    camp_vio(&c->cm, "outbox row %s was parked: %s", id,
        sqlite3_column_text(st, 6) ? (const char*)sqlite3_column_text(st, 6)
                                   : "(no error)");
  }
}

static void row_queue(camp_common_t* cm, sqlite3_stmt* st) {
  camp_t* c = (camp_t*)cm;
  const char* id = (const char*)sqlite3_column_text(st, 0);
  long i = event_index(c, id);
  g_chk->queue++;
  if (i < 0) {
    c->unexpected++;
    camp_vio(&c->cm, "queue row for an unknown event %s", id ? id : "(null)");
    return;
  }
  c->cf[i] |= C_QUEUED;
}

/* Check the database as the crash (and restore) left it, against what SQS
** holds now. */
static void check(camp_t* c, chk_t* r) {
  sqlite3* db;
  memset(r, 0, sizeof *r);
  g_chk = r;
  if (c->nev > 0) memset(c->cf, 0, c->nev);

  db = camp_check_open(&c->cm, "PRAGMA query_only=1");
  if (db == NULL) goto bad;
  /* One read transaction: the scans agree with each other. The schema was
  ** committed by the supervisor before the first worker ran. */
  if (sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK ||
      camp_scan(db, "SELECT id, causation_id, event_type, aggregate_id,"
               " published_at, parked_at, last_error FROM outbox_event",
                row_outbox, &c->cm) != 0 ||
      camp_scan(db, "SELECT message_id FROM queue", row_queue, &c->cm) != 0 ||
      camp_count(db, "SELECT count(*) FROM failed_message", &c->cm,
                 &r->failed) != 0)
    goto bad;
  sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
  sqlite3_close(db);
  db = NULL;
  c->backlog = r->queue;

  if (r->failed != 0) {
    c->unexpected += r->failed;
    camp_vio(&c->cm, "%lld valid messages in the failure store",
             (long long)r->failed);
  }
  for (size_t i = 0; i < c->nev; i++) {
    ev_t* ev = &c->ev[i];
    if (c->cf[i] & C_ROW) continue;
    if (c->st[i] & S_REP) continue;
    if (ev->oid[0] != '\0') {
      /* Seen after an earlier crash, so it was durable: gone now. */
      c->st[i] |= S_REP;
      c->vanished++;
      camp_vio(&c->cm,
               "LOST outbox row %s of event %s: it was there after an earlier "
               "crash",
               ev->oid, ev->id);
    } else if (c->st[i] & S_ACKED) {
      c->st[i] |= S_REP;
      c->vanished++;
      camp_vio(&c->cm, "LOST acked event %s: no outbox row", ev->id);
    } else if ((c->st[i] & S_ENQ) && !(c->cf[i] & C_QUEUED)) {
      c->st[i] |= S_REP;
      c->vanished++;
      camp_vio(&c->cm,
               "LOST delivery of event %s: enqueued, no longer queued, never "
               "handled",
               ev->id);
    } else if (ev->nsqs > 0 && !(c->st[i] & S_PREP)) {
      /* The relay reads only committed (hence durable) rows. */
      c->st[i] |= S_PREP;
      c->phantoms++;
      camp_vio(&c->cm,
               "PHANTOM: event %s is in SQS as %s, but no outbox row of it "
               "was ever committed",
               ev->id, ev->sid);
    }
  }
  return;

bad:
  if (db) sqlite3_close(db);
  r->bad = 1;
  c->integrity++;
}

/* ---- epochs -------------------------------------------------------------------- */

/* The supervisor's engine (stock VFS): reopen after a crash (I5) and top
** the queue up when it runs low. */
static int reopen_top_up(camp_t* c, int force) {
  ob_options_t o;
  ob_engine_t* e = NULL;
  camp_clock_t sc;
  char err[512];
  int rc;
  if (!force && c->backlog >= BACKLOG_LOW) return 0;
  ob_options_init(&o);
  o.db_path = c->cm.db;
  o.busy_timeout_ms = 10000;
  camp_clock_init(&sc, camp_rnd(&c->rng));
  o.clock = &sc.clock;
  if (ob_open(&e, &o, err, sizeof err) < 0) {
    camp_vio(&c->cm, "I5: the engine does not reopen: %s", err);
    c->integrity++;
    return -1;
  }
  rc = top_up(c, e, TOPUP_MIN + (size_t)(camp_rnd(&c->rng) % TOPUP_SPAN));
  if (rc != 0) {
    camp_vio(&c->cm, "I5: enqueue after reopen: %s: %s", ob_err_name(rc),
             ob_errmsg(e));
    c->integrity++;
    ob_close(e);
    return -1;
  }
  ob_close(e);
  return 0;
}

static void epoch_begin(camp_t* c) {
  char name[64];
  camp_remove_db(&c->cm);
  c->epoch++;
  c->eseed = camp_mix(c->cm.seed ^ camp_mix((uint64_t)c->epoch * 0xE90C4ULL));
  c->rng = camp_mix(c->eseed ^ 0x7AFF1CULL);
  c->nev = 0;
  c->backlog = 0;
  c->epoch_cycles = 0;
  snprintf(c->cm.ctx, sizeof c->cm.ctx, "epoch %d start", c->epoch);
  free(c->queue_url);
  snprintf(name, sizeof name, "crash-relay-%llx-e%d",
           (unsigned long long)(c->cm.seed & 0xffffffffULL), c->epoch);
  c->queue_url = sq_create_queue(&c->srv, name, NULL);
  if (c->queue_url == NULL) {
    fprintf(stderr, "harness: cannot create the SQS queue %s\n", name);
    c->cm.harness++;
    return;
  }
  if (reopen_top_up(c, 1) != 0) {
    fprintf(stderr, "harness: cannot create the database %s\n", c->cm.db);
    c->cm.harness++;
  }
}

/* The exit codes of this campaign's workers (camp_exit_kind). */
static int exit_code(camp_common_t* cm, int code) {
  camp_t* c = (camp_t*)cm;
  switch (code) {
    case W_OPEN_FAILED:
    case W_RUN_FAILED:
    case W_ENGINE_ERROR:
      camp_vio(&c->cm, "I5: the engine failed in the worker (exit %d)", code);
      c->integrity++;
      c->x_fail++;
      return 1;
    case W_UNEXPECTED:
      camp_vio(&c->cm, "a valid message was retried or failed in the worker");
      c->unexpected++;
      c->x_fail++;
      return 1;
    case W_DRAIN_TIMEOUT:
      /* Judged by the final check: what is not in SQS is lost. */
      c->undrained++;
      camp_vio(&c->cm, "the final worker could not publish everything in %d s",
               FINAL_DEADLINE_MS / 1000);
      return 1;
    default: return CAMP_EXIT_UNKNOWN;
  }
}

/* The end of an epoch: a clean worker handles and publishes everything;
** then every committed event must be in SQS. */
static void epoch_end(camp_t* c) {
  wcfg_t w;
  chk_t r;
  int hung, status;
  int64_t t = camp_mono_ms(), v_before = violations(c);
  memset(&w, 0, sizeof w);
  w.final = 1;
  w.batch = 32;
  w.seed = camp_rnd(&c->rng);
  snprintf(c->cm.ctx, sizeof c->cm.ctx, "epoch %d final drain", c->epoch);
  status = run_worker(c, &w, -1, &hung);
  if (camp_exit_kind(&c->cm, status, hung, exit_code) < 0) return;
  if (sqs_collect(c) != 0) return;
  check(c, &r);
  c->ms_final += camp_mono_ms() - t;
  if (r.bad) return;
  c->published_rows += r.published;
  for (size_t i = 0; i < c->nev; i++) {
    ev_t* ev = &c->ev[i];
    int committed = ev->oid[0] != '\0' || (c->st[i] & S_ACKED);
    if ((c->st[i] & S_ENQ) && !(c->cf[i] & C_ROW) && !(c->st[i] & S_REP)) {
      c->st[i] |= S_REP;
      c->vanished++;
      camp_vio(&c->cm, "LOST delivery of event %s: never handled", ev->id);
    }
    if ((c->cf[i] & C_ROW) && !(c->cf[i] & C_PUB) && !(c->st[i] & S_REP)) {
      c->undrained++;
      camp_vio(&c->cm,
               "outbox row %s (event %s) still unpublished after the final "
               "drain",
               ev->oid, ev->id);
    }
    if (ev->nsqs > 0) {
      c->in_sqs++;
      c->dup_sqs += ev->nsqs - 1;
    }
    if (!committed) continue;
    c->events++;
    if (ev->nsqs == 0) {
      c->lost++;
      camp_vio(
          &c->cm,
          "LOST event %s (outbox id %s, %s): committed to the outbox, "
          "never reached SQS",
          ev->id, ev->oid[0] ? ev->oid : "unknown",
          (c->cf[i] & C_PUB) ? "marked published" : "not marked published");
    }
  }
  if (violations(c) > v_before) camp_keep_failed_db(&c->cm);
}

/* ---- the random campaign --------------------------------------------------------- */

static void random_cycle(camp_t* c) {
  wcfg_t w;
  chk_t r;
  int kind, kill_ms = -1, hung, status;
  int64_t t, v_before = violations(c), m_before;
  uint64_t torn_seed, cr;
  char crash[48];

  memset(&w, 0, sizeof w);
  kind = camp_cycle_begin(&c->cm, &cr);
  if (kind == KIND_KILL || camp_rnd(&cr) % 2 == 0) {
    kill_ms = (int)(camp_rnd(&cr) % ((uint64_t)c->kill_max_ms + 1));
    snprintf(crash, sizeof crash, "SIGKILL after %d ms", kill_ms);
  } else {
    w.crash_sync = 1 + (int64_t)(camp_rnd(&cr) % SYNC_K_MAX);
    /* A worker that makes fewer syncs ends by itself or, waiting for a
    ** dead worker's claims, is killed after FALLBACK_KILL_MS. */
    kill_ms = FALLBACK_KILL_MS;
    snprintf(crash, sizeof crash, "crash before sync %lld",
             (long long)w.crash_sync);
  }
  w.shim = kind != KIND_KILL;
  w.batch = camp_rnd(&cr) % 2 ? 1 : 2 + (int)(camp_rnd(&cr) % (MAX_BATCH - 1));
  w.ordered = (int)(camp_rnd(&cr) % 2);
  w.ckpt_every = camp_rnd(&cr) % 3 == 0 ? 0 : 2 + (int)(camp_rnd(&cr) % 20);
  w.seed = camp_rnd(&cr);
  torn_seed = camp_rnd(&cr);

  c->epoch_cycles++;
  snprintf(c->cm.ctx, sizeof c->cm.ctx,
           "cycle %ld (epoch %d, %s, %s, batch %d, %sordered, checkpoint "
           "every %d, torn seed %llu)",
           c->cm.cycles, c->epoch, camp_kind_names[kind], crash, w.batch,
           w.ordered ? "" : "un", w.ckpt_every,
           (unsigned long long)torn_seed);

  t = camp_mono_ms();
  status = run_worker(c, &w, kill_ms, &hung);
  c->ms_worker += camp_mono_ms() - t;
  if (camp_exit_kind(&c->cm, status, hung, exit_code) < 0) return;

  t = camp_mono_ms();
  if (kind != KIND_KILL &&
      camp_restore(&c->cm, kind == KIND_TORN, torn_seed) != 0)
    return;
  c->ms_restore += camp_mono_ms() - t;

  t = camp_mono_ms();
  m_before = c->sqs_messages;
  if (sqs_collect(c) != 0) return;
  c->ms_sqs += camp_mono_ms() - t;

  t = camp_mono_ms();
  check(c, &r);
  /* The worker died while the relay had published some rows and not yet
  ** the others. */
  if (!r.bad && !(WIFEXITED(status) && WEXITSTATUS(status) == 0) &&
      c->sqs_messages > m_before && r.rows > r.published)
    c->cut_publishing++;
  if (!r.bad) reopen_top_up(c, 0);
  c->ms_check += camp_mono_ms() - t;
  if (violations(c) > v_before) camp_keep_failed_db(&c->cm);
  if (r.bad) {
    /* A broken database proves nothing more: judge what SQS has, start
    ** over. */
    epoch_begin(c);
  }
}

static void progress(camp_t* c, int force) {
  static int64_t last;
  int64_t now = camp_mono_ms();
  if (c->cm.quiet || (!force && now - last < 10000)) return;
  last = now;
  fprintf(stderr,
          "  [%.0f s] cycles %ld (kill %ld, power %ld, torn %ld), epoch %d, "
          "acked %lld, SQS messages %lld, violations %lld\n",
          (double)(now - c->cm.t0) / 1000.0, c->cm.cycles, c->cm.k_kill,
          c->cm.k_power, c->cm.k_torn, c->epoch, (long long)c->acked,
          (long long)c->sqs_messages, (long long)violations(c));
}

static void random_campaign(camp_t* c) {
  epoch_begin(c);
  while (c->cm.cycles < c->cm.cycles_wanted && c->cm.harness == 0) {
    if (c->cm.stop_on_violation && violations(c) > 0) break;
    if (c->epoch_cycles >= c->cm.reset_every) {
      epoch_end(c);
      if (c->cm.harness > 0) return;
      epoch_begin(c);
      if (c->cm.harness > 0) return;
    }
    random_cycle(c);
    progress(c, 0);
  }
  if (c->cm.harness == 0) epoch_end(c);
}

/* ---- main ----------------------------------------------------------------------- */

static void usage(FILE* f) {
  fprintf(f,
          "usage: ob-crash-campaign-relay --seed S --cycles N\n"
          "         [--mode kill|power|torn|mixed] (mixed)\n"
          "         [--mutant publish-before-2xx]\n"
          "         [--reset-every R] (100 cycles per database and queue)\n"
          "         [--kill-max-ms M] (SIGKILL after U(0, M ms); %d)\n"
          "         [--dir D] [--keep] [--quiet] [--stop-on-violation]\n"
          "exit status: 0 no violation, 1 violations, 2 harness failure,\n"
          "             77 skipped (no Node.js >= 20 or no fauxqs)\n",
          KILL_MAX_MS);
}

/* --kill-max-ms. */
static int option(camp_common_t* cm, int opt, const char* arg) {
  if (opt != 'K') return -1;
  ((camp_t*)cm)->kill_max_ms = atoi(arg);
  return 0;
}

int main(int argc, char** argv) {
  static const struct option extra[] = {
      {"kill-max-ms", required_argument, NULL, 'K'}, {NULL, 0, NULL, 0}};
  static const camp_cli_t cli = {mode_names, 4, mutant_names, 2, extra,
                                 option, NULL, usage};
  camp_t* c = camp_xcalloc(1, sizeof *c);
  const char* skip;
  int have_cycles, rc;
  double secs;

  c->cm.mode = MODE_MIXED;
  c->cm.reset_every = 100;
  c->kill_max_ms = KILL_MAX_MS;
  rc = camp_parse_args(&c->cm, &cli, argc, argv, &have_cycles);
  if (rc >= 0) return rc;
  if (!have_cycles || c->kill_max_ms < 1) {
    usage(stderr);
    return 2;
  }
  rc = camp_mutant_binary(&c->cm, argv, MUT_PUBLISH_BEFORE_2XX,
                          "publish-before-2xx", "ob-crash-campaign-relay",
                          IN_MUTANT_BINARY);
  if (rc >= 0) return rc;

  /* The relay tests' server: fauxqs behind the SigV4-verifying terminator. */
  if (getenv("OB_SOURCE_DIR") == NULL) {
    /* Outside ctest: the source tree this binary was built from. */
    setenv("OB_SOURCE_DIR", OB_CAMPAIGN_SOURCE_DIR, 1);
  }
  skip = sq_skip_reason();
  if (skip != NULL) {
    printf("ob-crash-campaign-relay: %s\n", skip);
    return 77;
  }

  if (camp_make_dir(&c->cm, "ob-crash-campaign-relay") != 0) return 2;
  c->cm.id_types = "A";
  c->cm.on_id = on_id;
  c->cm.t0 = camp_mono_ms();
  if (sq_server_start(&c->srv, "crash-relay", NULL) != 0) {
    printf("RESULT: HARNESS FAILURE: the SQS server did not start\n");
    return 2;
  }
  /* The workers inherit these: the relay reads the AWS configuration from
  ** the environment, as on a terminal. */
  rf_setenv(&c->srv);
  rf_set_endpoint(c->srv.port);

  printf(
      "ob-crash-campaign-relay: seed %llu, mode %s, %ld cycles, mutant "
      "%s, SIGKILL after U(0, %d ms), database and queue reset every %d "
      "cycles, dir %s, SQS server on port %d\n",
      (unsigned long long)c->cm.seed, mode_names[c->cm.mode],
      c->cm.cycles_wanted, mutant_names[c->cm.mutant], c->kill_max_ms,
      c->cm.reset_every, c->cm.dir, c->srv.port);
  printf(
      "reproduce: ob-crash-campaign-relay --seed %llu --cycles %ld --mode "
      "%s%s%s\n",
      (unsigned long long)c->cm.seed, c->cm.cycles_wanted,
      mode_names[c->cm.mode], c->cm.mutant ? " --mutant " : "",
      c->cm.mutant ? mutant_names[c->cm.mutant] : "");
  fflush(stdout);

  random_campaign(c);
  sq_server_stop(&c->srv);

  secs = (double)(camp_mono_ms() - c->cm.t0) / 1000.0;
  progress(c, 1);
  printf(
      "relay: cycles %ld (kill %ld, power %ld, torn %ld), events %lld, "
      "published-rows %lld, in SQS %lld, lost %lld, duplicated-in-SQS "
      "%lld, integrity-failures %lld\n",
      c->cm.cycles, c->cm.k_kill, c->cm.k_power, c->cm.k_torn,
      (long long)c->events, (long long)c->published_rows, (long long)c->in_sqs,
      (long long)c->lost, (long long)c->dup_sqs, (long long)c->integrity);
  printf(
      "details: seed %llu, %.1f s (%.1f cycles/s), %d databases and "
      "queues; workers ended by SIGKILL %ld, crash before sync %ld, clean "
      "exit %ld, engine failure %ld; crashed while the relay was "
      "publishing (some of the cycle's rows in SQS, some not) %ld; "
      "deliveries %lld (%lld duplicated), "
      "acked %lld, SQS messages %lld; violations: marked-published-not-in-"
      "SQS %lld, outbox-rows-vanished %lld, phantoms-in-SQS %lld, "
      "unexpected %lld, undrained %lld; torn restores replayed %lld "
      "pending records (%lld whole, %lld torn, %lld lost)\n",
      (unsigned long long)c->cm.seed, secs,
      secs > 0 ? (double)c->cm.cycles / secs : 0.0, c->epoch, c->cm.x_sigkill,
      c->cm.x_sync, c->cm.x_clean, c->x_fail, c->cut_publishing,
      (long long)c->deliveries, (long long)c->dup_deliveries,
      (long long)c->acked, (long long)c->sqs_messages, (long long)c->unbacked,
      (long long)c->vanished, (long long)c->phantoms, (long long)c->unexpected,
      (long long)c->undrained, (long long)c->cm.r_records,
      (long long)c->cm.r_applied, (long long)c->cm.r_torn,
      (long long)c->cm.r_lost);
  printf("time: workers %.1f s, restores %.1f s, SQS receives %.1f s, "
         "checks+top-ups %.1f s, final drains %.1f s\n",
         (double)c->ms_worker / 1000.0, (double)c->ms_restore / 1000.0,
         (double)c->ms_sqs / 1000.0, (double)c->ms_check / 1000.0,
         (double)c->ms_final / 1000.0);
  rc = camp_finish(&c->cm, violations(c));
  free(c->ev);
  free(c->st);
  free(c->cf);
  free(c->queue_url);
  free(c);
  return rc;
}
