/* ob-crash-campaign-relay: the crash and power-loss campaign of the outbox
** relay (issue 6, RELIABILITY.md I4 and T4d). See docs/reliability.md,
** "The relay under kill -9 and power loss".
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
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <sqlite3.h>
#include <uv.h>

#include "core/engine/engine_int.h" /* ob__engine_kick_components */
#include "oncebox.h"
#include "tests/crash/plsim.h"
#include "tests/integration/relay/relay_fixture.h"

#define RECORDER "test-ack-recorder"
#define SOURCE "urn:oncebox:crash-relay"
#define MAX_BATCH 32           /* handling batch: 1 or 2-32 */
#define KILL_MAX_MS 400        /* default --kill-max-ms */
#define SYNC_K_MAX 60          /* crash before sync k, k in 1..60 */
#define FALLBACK_KILL_MS 1000  /* ... else SIGKILL after 1 s */
#define BACKLOG_LOW 120        /* top the queue up below this many rows */
#define TOPUP_MIN 100          /* new events per top-up: 100..250 */
#define TOPUP_SPAN 151
#define DUP_PERCENT 20         /* events delivered twice */
#define WATCHDOG_MS 60000      /* a worker that runs longer is hung */
#define FINAL_DEADLINE_MS 45000 /* the final worker gives up after this */
#define VISIBILITY_S 43200     /* a received message is not seen again */
#define MAX_VIOLATION_LINES 40

/* Worker exit codes (besides 0, SIGKILL and the PLSIM_EXIT_* codes). */
#define W_OPEN_FAILED 10       /* ob_open / ob_relay_enable / attach failed */
#define W_RUN_FAILED 11        /* ob_run_once / checkpoint failed */
#define W_PIPE 12              /* harness */
#define W_UNEXPECTED 13        /* a valid message retried or failed */
#define W_DELAYED 14           /* harness: delayed rows */
#define W_OVERFLOW 15          /* harness */
#define W_ENGINE_ERROR 16      /* the engine logged an error */
#define W_DRAIN_TIMEOUT 17     /* final worker: not everything published */

typedef enum { MODE_KILL, MODE_POWER, MODE_TORN, MODE_MIXED } run_mode_t;
static const char* const mode_names[] = {"kill", "power", "torn", "mixed"};
typedef enum { MUT_NONE, MUT_PUBLISH_BEFORE_2XX } mutant_t;
static const char* const mutant_names[] = {"none", "publish-before-2xx"};
enum { KIND_KILL, KIND_POWER, KIND_TORN };
static const char* const kind_names[] = {"kill", "power", "torn"};

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
  char id[37];   /* message id = causation id of its outbox row */
  char pay[37];  /* payment id = aggregate id */
  char oid[37];  /* its outbox row's id, once seen after a crash ("" not yet) */
  char sid[37];  /* the CloudEvents id SQS has for it ("" none) */
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
  /* options */
  uint64_t seed;
  long cycles_wanted;
  int mode, mutant, reset_every, kill_max_ms;
  int quiet, stop_on_violation, keep, own_dir;
  char* dir;
  char* db;
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
  char ctx[200];

  /* the pipe from the current worker */
  char stream[1 << 16];
  size_t slen;
  int w_opened, w_stats;
  int64_t w_syncs, w_commits;

  /* totals */
  int64_t attempted, deliveries, dup_deliveries, acked;
  int64_t events, published_rows, in_sqs, sqs_messages, dup_sqs;
  int64_t lost, unbacked, vanished, phantoms, integrity, unexpected,
      undrained, harness;
  long cycles, k_kill, k_power, k_torn;
  long x_sigkill, x_sync, x_clean, x_fail;
  long cut_publishing;       /* crashes that left the relay mid-way */
  int64_t r_records, r_applied, r_torn, r_lost;
  long vlines;
  int64_t t0;
  int64_t ms_worker, ms_restore, ms_sqs, ms_check, ms_final;
} camp_t;

/* ---- small things -------------------------------------------------------- */

static uint64_t mix(uint64_t z) {
  z += 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

static uint64_t rnd(uint64_t* s) {
  *s += 0x9E3779B97F4A7C15ULL;
  return mix(*s);
}

static int64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void make_uuid(uint64_t a, uint64_t b, uint64_t tail, char out[37]) {
  snprintf(out, 37, "%08x-%04x-4%03x-%04x-%012llx", (unsigned)(a >> 32),
           (unsigned)((a >> 16) & 0xffff), (unsigned)(a & 0xfff),
           (unsigned)(0x8000 | (b & 0x3fff)),
           (unsigned long long)(tail & 0xffffffffffffULL));
}

static void* xcalloc(size_t n, size_t sz) {
  void* p = calloc(n ? n : 1, sz);
  if (p == NULL) {
    fprintf(stderr, "out of memory\n");
    exit(2);
  }
  return p;
}

static char* xstrdup(const char* s) {
  char* p = strdup(s);
  if (p == NULL) {
    fprintf(stderr, "out of memory\n");
    exit(2);
  }
  return p;
}

static char* path_join(const char* a, const char* b) {
  size_t n = strlen(a) + strlen(b) + 2;
  char* p = xcalloc(n, 1);
  snprintf(p, n, "%s/%s", a, b);
  return p;
}

static void vio(camp_t* c, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void vio(camp_t* c, const char* fmt, ...) {
  va_list ap;
  if (c->vlines++ >= MAX_VIOLATION_LINES) {
    if (c->vlines == MAX_VIOLATION_LINES + 1)
      fprintf(stderr, "VIOLATION: (further lines suppressed; the summary "
              "counts them all)\n");
    return;
  }
  fprintf(stderr, "VIOLATION %s: ", c->ctx);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

static int64_t violations(const camp_t* c) {
  return c->lost + c->unbacked + c->vanished + c->phantoms + c->integrity +
         c->unexpected + c->undrained;
}

/* A clock with the real time (the relay's leases and backoffs are real)
** and a seeded random source (UUIDv7 ids, claim tokens). */
typedef struct seeded_clock_s {
  ob_clock_t clock;
  uint64_t s;
} seeded_clock_t;

static int64_t sc_now(void* ctx) {
  struct timespec ts;
  (void)ctx;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sc_random(void* ctx, void* buf, size_t n) {
  seeded_clock_t* sc = ctx;
  unsigned char* p = buf;
  for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(rnd(&sc->s) >> 56);
}

static void seeded_clock_init(seeded_clock_t* sc, uint64_t seed) {
  sc->s = seed;
  sc->clock.ctx = sc;
  sc->clock.now_ms = sc_now;
  sc->clock.random = sc_random;
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
  uint64_t h;
  ensure_events(c, i + 1);
  memset(&c->ev[i], 0, sizeof c->ev[i]);
  h = mix(c->eseed ^ (i * 8 + 1));
  make_uuid(h, mix(h), i, c->ev[i].id);
  h = mix(c->eseed ^ (i * 8 + 2));
  make_uuid(h, mix(h), mix(h ^ 7), c->ev[i].pay);
  c->st[i] = 0;
  c->cf[i] = 0;
  return c->nev++;
}

static long event_index(const camp_t* c, const char* s) {
  char tail[13];
  unsigned long long i;
  if (s == NULL || strlen(s) != 36) return -1;
  memcpy(tail, s + 24, 12);
  tail[12] = '\0';
  i = strtoull(tail, NULL, 16);
  if (i >= c->nev || memcmp(c->ev[i].id, s, 36) != 0) return -1;
  return (long)i;
}

static void body_of(const camp_t* c, size_t i, char* out, size_t n) {
  static const char* const cur[] = {"EUR", "GBP", "USD", "CHF", "SEK"};
  char merchant[37];
  uint64_t h = mix(c->eseed ^ (i * 8 + 3));
  make_uuid(h, mix(h), mix(h ^ 3), merchant);
  snprintf(out, n,
           "{\"paymentId\":\"%s\",\"merchantId\":\"%s\","
           "\"amountInMinorUnits\":%llu,\"currency\":\"%s\"}",
           c->ev[i].pay, merchant,
           (unsigned long long)(1 + mix(c->eseed ^ (i * 8 + 4)) % 250000),
           cur[mix(c->eseed ^ (i * 8 + 5)) % 5]);
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
  list = xcalloc(events * 2, sizeof *list);
  for (size_t i = 0; i < events; i++) {
    size_t idx = new_event(c);
    list[n++] = idx;
    if (rnd(&c->rng) % 100 < DUP_PERCENT) list[n++] = idx;
  }
  for (size_t i = n; i > 1; i--) {
    size_t j = (size_t)(rnd(&c->rng) % i), t = list[i - 1];
    list[i - 1] = list[j];
    list[j] = t;
  }
  envs = xcalloc(n, sizeof *envs);
  results = xcalloc(n, sizeof *results);
  bodies = xcalloc(n, sizeof *bodies);
  for (size_t i = 0; i < n; i++) {
    body_of(c, list[i], bodies[i], sizeof bodies[i]);
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

typedef struct recorder_s {
  char ids[MAX_BATCH][36];
  int n;
} recorder_t;

typedef struct worker_s {
  camp_t* c;
  const wcfg_t* w;
  int fd;
  ob_engine_t* e;
  recorder_t rec;
  sqlite3* ck;
  uv_idle_t idle;    /* handling */
  uv_timer_t timer;  /* then: waiting for the relay */
  int commits;
  int64_t deadline;
} worker_t;

static void write_rec(int fd, char type, const void* payload, size_t len) {
  char buf[3 + MAX_BATCH * 36];
  uint16_t n = (uint16_t)len;
  const char* p = buf;
  size_t left = 3 + len;
  if (len > MAX_BATCH * 36) _exit(W_OVERFLOW);
  buf[0] = type;
  memcpy(buf + 1, &n, 2);
  memcpy(buf + 3, payload, len);
  /* Under PIPE_BUF: one write, never torn by a SIGKILL. */
  while (left > 0) {
    ssize_t w = write(fd, p, left);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) _exit(W_PIPE);
    p += w;
    left -= (size_t)w;
  }
}

static int recorder_cb(ob_tx_t* tx, const ob_message_t* msg, void* arg) {
  recorder_t* r = arg;
  (void)tx;
  if (r->n >= MAX_BATCH) _exit(W_OVERFLOW);
  memcpy(r->ids[r->n++], msg->id, 36);
  return OB_DONE;
}

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
            (long long)(mono_ms() - g_t0), msg);
}

static void worker_stats(worker_t* wk) {
  int64_t v[2] = {plsim_syncs(), wk->commits};
  write_rec(wk->fd, 'S', v, sizeof v);
}

static void checkpoint(worker_t* wk, int mode) {
  int rc = sqlite3_wal_checkpoint_v2(wk->ck, NULL, mode, NULL, NULL);
  if (rc != SQLITE_OK && rc != SQLITE_BUSY) {
    fprintf(stderr, "worker (%s): checkpoint: %s\n", g_wctx,
            sqlite3_errmsg(wk->ck));
    _exit(W_RUN_FAILED);
  }
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
  if (wk->w->final && mono_ms() > wk->deadline) {
    fprintf(stderr, "worker (%s): %lld outbox rows still unpublished after "
            "%d s\n", g_wctx, (long long)st.outbox_unpublished,
            FINAL_DEADLINE_MS / 1000);
    worker_stats(wk);
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
  static const int modes[] = {SQLITE_CHECKPOINT_PASSIVE,
                              SQLITE_CHECKPOINT_PASSIVE, SQLITE_CHECKPOINT_FULL,
                              SQLITE_CHECKPOINT_RESTART,
                              SQLITE_CHECKPOINT_TRUNCATE};
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
  /* Committed: only now are these ids acknowledged. */
  if (wk->rec.n > 0)
    write_rec(wk->fd, 'A', wk->rec.ids, (size_t)wk->rec.n * 36);
  if (res.failed > 0 || res.retried > 0) {
    fprintf(stderr, "worker (%s): a valid message was %s\n", g_wctx,
            res.failed ? "moved to the failure store" : "retried");
    _exit(W_UNEXPECTED);
  }
  if (res.claimed > 0) {
    /* New outbox rows: wake the relay, as the runner does. */
    if (res.handled > 0) ob__engine_kick_components(wk->e);
    wk->commits++;
    if (wk->ck != NULL && wk->commits % wk->w->ckpt_every == 0)
      checkpoint(wk, modes[(wk->commits / wk->w->ckpt_every) % 5]);
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
  seeded_clock_t sc;
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
  g_wctx = c->ctx;
  g_t0 = mono_ms();
  seeded_clock_init(&sc, w->seed);
  ob_options_init(&o);
  o.db_path = c->db;
  o.batch_size = w->batch;
  o.busy_timeout_ms = 10000;
  o.clock = &sc.clock;
  o.no_handling = 1; /* handle_cb handles; the runner only runs the relay */
  o.log = worker_log;
  o.log_ctx = &c->quiet;
  o.log_level = OB_LOG_WARN;
  if (ob_open(&wk.e, &o, err, sizeof err) < 0) {
    fprintf(stderr, "worker (%s): ob_open: %s\n", c->ctx, err);
    _exit(W_OPEN_FAILED);
  }
  write_rec(fd, 'O', "", 0);
  if (ob_register_payout(wk.e) != 0 ||
      ob_register(wk.e, OB_PAYOUT_MESSAGE_TYPE, RECORDER, recorder_cb,
                  &wk.rec) != 0)
    _exit(W_OPEN_FAILED);
  ob_relay_options_init(&ro);
  ro.queue_url = c->queue_url;
  ro.source = SOURCE;
  ro.ordered = w->ordered;
  ro.park_after = 10;
  ro.backoff_base_ms = 50;
  ro.backoff_cap_ms = 200;
  ro.probe_base_ms = 50;
  ro.probe_cap_ms = 200;
  ro.lease_ms = 1000; /* the minimum: a dead worker's claims expire soon */
  rc = ob_relay_enable(wk.e, &ro, err, sizeof err);
  if (rc != 0) {
    fprintf(stderr, "worker (%s): ob_relay_enable: %s (%s)\n", c->ctx, err,
            ob_err_name(rc));
    _exit(W_OPEN_FAILED);
  }
  if (w->ckpt_every > 0) {
    if (sqlite3_open_v2(c->db, &wk.ck, SQLITE_OPEN_READWRITE, NULL) !=
        SQLITE_OK) {
      fprintf(stderr, "worker (%s): checkpointer: %s\n", c->ctx,
              wk.ck ? sqlite3_errmsg(wk.ck) : "out of memory");
      _exit(W_RUN_FAILED);
    }
    sqlite3_busy_timeout(wk.ck, 10000);
  }
  if (uv_loop_init(&loop) != 0) _exit(W_OPEN_FAILED);
  rc = ob_attach(wk.e, &loop);
  if (rc != 0) {
    fprintf(stderr, "worker (%s): ob_attach: %s: %s\n", c->ctx,
            ob_err_name(rc), ob_errmsg(wk.e));
    _exit(W_OPEN_FAILED);
  }
  wk.deadline = mono_ms() + FINAL_DEADLINE_MS;
  uv_timer_init(&loop, &wk.timer);
  uv_idle_init(&loop, &wk.idle);
  wk.timer.data = wk.idle.data = &wk;
  uv_idle_start(&wk.idle, handle_cb);
  uv_run(&loop, UV_RUN_DEFAULT);
  if (wk.ck) sqlite3_close(wk.ck);
  ob_close(wk.e);
  uv_loop_close(&loop);
  worker_stats(&wk);
  _exit(0);
}

/* ---- the supervisor: run a worker, read its pipe ---------------------------- */

static void take_records(camp_t* c) {
  size_t off = 0;
  while (c->slen - off >= 3) {
    char type = c->stream[off];
    uint16_t len;
    memcpy(&len, c->stream + off + 1, 2);
    if (c->slen - off < 3 + (size_t)len) break;
    const char* p = c->stream + off + 3;
    if (type == 'A') {
      for (size_t i = 0; i + 36 <= len; i += 36) {
        char id[37];
        long idx;
        memcpy(id, p + i, 36);
        id[36] = '\0';
        idx = event_index(c, id);
        if (idx < 0) {
          fprintf(stderr, "harness: the worker reported unknown id %s\n", id);
          c->harness++;
          continue;
        }
        if (!(c->st[idx] & S_ACKED)) {
          c->st[idx] |= S_ACKED;
          c->acked++;
        }
      }
    } else if (type == 'O') {
      c->w_opened = 1;
    } else if (type == 'S' && len == 16) {
      memcpy(&c->w_syncs, p, 8);
      memcpy(&c->w_commits, p + 8, 8);
      c->w_stats = 1;
    } else {
      fprintf(stderr, "harness: bad record from the worker\n");
      c->harness++;
    }
    off += 3 + len;
  }
  memmove(c->stream, c->stream + off, c->slen - off);
  c->slen -= off;
}

static int read_pipe(camp_t* c, int fd) {
  ssize_t r;
  do {
    r = read(fd, c->stream + c->slen, sizeof c->stream - c->slen);
  } while (r < 0 && errno == EINTR);
  if (r <= 0) return 0;
  c->slen += (size_t)r;
  take_records(c);
  return 1;
}

/* Fork a worker; SIGKILL it kill_ms after the fork (kill_ms < 0: let it run
** to its end, with a watchdog). Returns its wait status; *hung if the
** watchdog fired. */
static int run_worker(camp_t* c, const wcfg_t* w, int kill_ms, int* hung) {
  int fds[2], status = 0, killed = 0;
  int64_t deadline;
  pid_t pid;
  *hung = 0;
  c->slen = 0;
  c->w_opened = c->w_stats = 0;
  c->w_syncs = c->w_commits = 0;
  if (pipe(fds) != 0) {
    perror("pipe");
    exit(2);
  }
  fflush(stdout);
  fflush(stderr);
  /* No SQLite connection and no loop is open in the supervisor here. */
  pid = fork();
  if (pid < 0) {
    perror("fork");
    exit(2);
  }
  if (pid == 0) {
    close(fds[0]);
    if (w->shim) {
      plsim_config_t pc;
      memset(&pc, 0, sizeof pc);
      pc.crash_at_sync = w->crash_sync;
      /* The default VFS of the worker only, before ob_open. */
      if (plsim_install(&pc) != 0) _exit(PLSIM_EXIT_BROKEN);
    }
    worker_main(c, w, fds[1]);
  }
  close(fds[1]);
  deadline = mono_ms() + (kill_ms >= 0 ? kill_ms : WATCHDOG_MS);
  for (;;) {
    int64_t now = mono_ms();
    struct pollfd p = {fds[0], POLLIN, 0};
    int rc;
    if (now >= deadline) {
      kill(pid, SIGKILL);
      killed = 1;
      if (kill_ms < 0) *hung = 1;
      break;
    }
    rc = poll(&p, 1, (int)(deadline - now));
    if (rc > 0 && !read_pipe(c, fds[0])) break; /* EOF: it ended */
  }
  if (killed)
    while (read_pipe(c, fds[0])) {
    }
  close(fds[0]);
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (c->slen != 0) {
    fprintf(stderr, "harness: torn record on the ack pipe\n");
    c->harness++;
  }
  return status;
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
    vio(c, "PHANTOM: a message in SQS that is no event of this epoch, or "
        "malformed: causationId %s, body %.*s", cause ? cause : "(none)",
        (int)(m->body_len > 300 ? 300 : m->body_len), m->body);
    cJSON_Delete(ev);
    return;
  }
  if (c->ev[i].sid[0] == '\0') {
    memcpy(c->ev[i].sid, id, 37);
  } else if (strcmp(c->ev[i].sid, id) != 0 && !(c->st[i] & S_PREP)) {
    c->st[i] |= S_PREP;
    c->phantoms++;
    vio(c, "PHANTOM: event %s is in SQS under two ids, %s and %s",
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
  ob_sqs_client_config_t cfg;
  ob_sqs_client_t* cl = NULL;
  char err[256];
  int ret = 0;

  uv_loop_init(&loop);
  sq_clock_init(&clock, 0, -1);
  sq_client_config(&c->srv, &cfg, SQ_SECRET, &clock.clock);
  if (ob_sqs_client_open(&cl, &loop, &cfg, err, sizeof err) != 0) {
    fprintf(stderr, "harness: SQS client: %s\n", err);
    c->harness++;
    uv_loop_close(&loop);
    return -1;
  }
  for (;;) {
    ob__sqs_receive_t p;
    ob_sqs_req_t req;
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
    st = ob_sqs_receive_message(cl, &req, &p, sq_cb);
    if (st == 0) st = sq_wait(&loop, &req);
    if (st != 0) {
      fprintf(stderr, "harness: ReceiveMessage: %s (%s)\n", req.detail,
              ob_sqs_err_name(st));
      c->harness++;
      ob_sqs_req_cleanup(&req);
      ret = -1;
      break;
    }
    n = req.receive.n;
    for (size_t i = 0; i < n; i++) take_message(c, &req.receive.messages[i]);
    ob_sqs_req_cleanup(&req);
    if (n == 0) break;
  }
  ob_sqs_client_close(cl, NULL, NULL);
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

static int scan(sqlite3* db, const char* sql,
                void (*row)(camp_t*, sqlite3_stmt*), camp_t* c) {
  sqlite3_stmt* st = NULL;
  int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
  if (rc != SQLITE_OK) {
    vio(c, "checker: prepare '%s': %s", sql, sqlite3_errmsg(db));
    return -1;
  }
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) row(c, st);
  if (rc != SQLITE_DONE) {
    vio(c, "checker: '%s': %s", sql, sqlite3_errmsg(db));
    sqlite3_finalize(st);
    return -1;
  }
  sqlite3_finalize(st);
  return 0;
}

static void row_outbox(camp_t* c, sqlite3_stmt* st) {
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
    vio(c, "outbox row %s for an unknown event (cause %s)", id ? id : "(null)",
        cause ? cause : "(null)");
    return;
  }
  if (c->cf[i] & C_ROW) {
    c->unexpected++;
    vio(c, "event %s has two outbox rows", c->ev[i].id);
    return;
  }
  c->cf[i] |= C_ROW;
  if (c->ev[i].oid[0] == '\0') {
    memcpy(c->ev[i].oid, id, 37); /* seen after a crash: durable from now on */
  } else if (strcmp(c->ev[i].oid, id) != 0 && !(c->st[i] & S_REP)) {
    c->st[i] |= S_REP;
    c->vanished++;
    vio(c, "LOST outbox row %s of event %s: now %s", c->ev[i].oid, c->ev[i].id,
        id);
  }
  if (published) {
    g_chk->published++;
    c->cf[i] |= C_PUB;
    /* Marked only after SQS answered 2xx: SQS must have it already. */
    if ((c->ev[i].nsqs == 0 || strcmp(c->ev[i].sid, id) != 0) &&
        !(c->st[i] & S_UREP)) {
      c->st[i] |= S_UREP;
      c->unbacked++;
      vio(c, "outbox row %s (event %s) is marked published but SQS does not "
          "have it", id, c->ev[i].id);
    }
  }
  if (parked) {
    g_chk->parked++;
    c->unexpected++;
    vio(c, "outbox row %s was parked: %s", id,
        sqlite3_column_text(st, 6) ? (const char*)sqlite3_column_text(st, 6)
                                   : "(no error)");
  }
}

static void row_queue(camp_t* c, sqlite3_stmt* st) {
  const char* id = (const char*)sqlite3_column_text(st, 0);
  long i = event_index(c, id);
  g_chk->queue++;
  if (i < 0) {
    c->unexpected++;
    vio(c, "queue row for an unknown event %s", id ? id : "(null)");
    return;
  }
  c->cf[i] |= C_QUEUED;
}

static int64_t g_count;
static void row_count(camp_t* c, sqlite3_stmt* st) {
  (void)c;
  g_count = sqlite3_column_int64(st, 0);
}

/* Check the database as the crash (and restore) left it, against what SQS
** holds now. */
static void check(camp_t* c, chk_t* r) {
  sqlite3* db = NULL;
  sqlite3_stmt* st = NULL;
  int rc;
  memset(r, 0, sizeof *r);
  g_chk = r;
  if (c->nev > 0) memset(c->cf, 0, c->nev);

  /* Read-write, so that a hot rollback journal is rolled back as any opener
  ** would; but query_only and no checkpoint on close: a hot WAL stays for
  ** the next worker to recover. */
  rc = sqlite3_open_v2(c->db, &db, SQLITE_OPEN_READWRITE, NULL);
  if (rc != SQLITE_OK) {
    vio(c, "integrity: open: %s", db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
    goto bad;
  }
  sqlite3_busy_timeout(db, 10000);
  if (sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL) !=
          SQLITE_OK ||
      sqlite3_exec(db, "PRAGMA query_only=1", NULL, NULL, NULL) != SQLITE_OK) {
    vio(c, "checker: configure: %s", sqlite3_errmsg(db));
    goto bad;
  }
  rc = sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL);
  if (rc != SQLITE_OK) {
    vio(c, "integrity: prepare integrity_check: %s", sqlite3_errmsg(db));
    goto bad;
  }
  {
    int rows = 0, ok = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
      const char* t = (const char*)sqlite3_column_text(st, 0);
      rows++;
      if (t != NULL && strcmp(t, "ok") == 0) ok++;
      else vio(c, "integrity_check: %s", t ? t : "(null)");
    }
    sqlite3_finalize(st);
    st = NULL;
    if (rc != SQLITE_DONE) {
      vio(c, "integrity_check failed to run: %s", sqlite3_errmsg(db));
      goto bad;
    }
    if (rows != 1 || ok != 1) goto bad;
  }
  /* One read transaction: the scans agree with each other. The schema was
  ** committed by the supervisor before the first worker ran. */
  if (sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK ||
      scan(db, "SELECT id, causation_id, event_type, aggregate_id,"
               " published_at, parked_at, last_error FROM outbox_event",
           row_outbox, c) != 0 ||
      scan(db, "SELECT message_id FROM queue", row_queue, c) != 0)
    goto bad;
  g_count = -1;
  if (scan(db, "SELECT count(*) FROM failed_message", row_count, c) != 0)
    goto bad;
  r->failed = g_count;
  sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
  sqlite3_close(db);
  db = NULL;
  c->backlog = r->queue;

  if (r->failed != 0) {
    c->unexpected += r->failed;
    vio(c, "%lld valid messages in the failure store", (long long)r->failed);
  }
  for (size_t i = 0; i < c->nev; i++) {
    ev_t* ev = &c->ev[i];
    if (c->cf[i] & C_ROW) continue;
    if (c->st[i] & S_REP) continue;
    if (ev->oid[0] != '\0') {
      /* Seen after an earlier crash, so it was durable: gone now. */
      c->st[i] |= S_REP;
      c->vanished++;
      vio(c, "LOST outbox row %s of event %s: it was there after an earlier "
          "crash", ev->oid, ev->id);
    } else if (c->st[i] & S_ACKED) {
      c->st[i] |= S_REP;
      c->vanished++;
      vio(c, "LOST acked event %s: no outbox row", ev->id);
    } else if ((c->st[i] & S_ENQ) && !(c->cf[i] & C_QUEUED)) {
      c->st[i] |= S_REP;
      c->vanished++;
      vio(c, "LOST delivery of event %s: enqueued, no longer queued, never "
          "handled", ev->id);
    } else if (ev->nsqs > 0 && !(c->st[i] & S_PREP)) {
      /* The relay reads only committed (hence durable) rows. */
      c->st[i] |= S_PREP;
      c->phantoms++;
      vio(c, "PHANTOM: event %s is in SQS as %s, but no outbox row of it "
          "was ever committed", ev->id, ev->sid);
    }
  }
  return;

bad:
  if (st) sqlite3_finalize(st);
  if (db) sqlite3_close(db);
  r->bad = 1;
  c->integrity++;
}

/* ---- epochs -------------------------------------------------------------------- */

static void remove_db(camp_t* c) {
  static const char* const suffix[] = {"", "-wal", "-shm", "-journal"};
  char p[PATH_MAX];
  plsim_forget(c->dir);
  for (size_t i = 0; i < sizeof suffix / sizeof suffix[0]; i++) {
    snprintf(p, sizeof p, "%s%s", c->db, suffix[i]);
    unlink(p);
  }
}

/* The supervisor's engine (stock VFS): reopen after a crash (I5) and top
** the queue up when it runs low. */
static int reopen_top_up(camp_t* c, int force) {
  ob_options_t o;
  ob_engine_t* e = NULL;
  seeded_clock_t sc;
  char err[512];
  int rc;
  if (!force && c->backlog >= BACKLOG_LOW) return 0;
  ob_options_init(&o);
  o.db_path = c->db;
  o.busy_timeout_ms = 10000;
  seeded_clock_init(&sc, rnd(&c->rng));
  o.clock = &sc.clock;
  if (ob_open(&e, &o, err, sizeof err) < 0) {
    vio(c, "I5: the engine does not reopen: %s", err);
    c->integrity++;
    return -1;
  }
  rc = top_up(c, e, TOPUP_MIN + (size_t)(rnd(&c->rng) % TOPUP_SPAN));
  if (rc != 0) {
    vio(c, "I5: enqueue after reopen: %s: %s", ob_err_name(rc), ob_errmsg(e));
    c->integrity++;
    ob_close(e);
    return -1;
  }
  ob_close(e);
  return 0;
}

static void epoch_begin(camp_t* c) {
  char name[64];
  remove_db(c);
  c->epoch++;
  c->eseed = mix(c->seed ^ mix((uint64_t)c->epoch * 0xE90C4ULL));
  c->rng = mix(c->eseed ^ 0x7AFF1CULL);
  c->nev = 0;
  c->backlog = 0;
  c->epoch_cycles = 0;
  snprintf(c->ctx, sizeof c->ctx, "epoch %d start", c->epoch);
  free(c->queue_url);
  snprintf(name, sizeof name, "crash-relay-%llx-e%d",
           (unsigned long long)(c->seed & 0xffffffffULL), c->epoch);
  c->queue_url = sq_create_queue(&c->srv, name, NULL);
  if (c->queue_url == NULL) {
    fprintf(stderr, "harness: cannot create the SQS queue %s\n", name);
    c->harness++;
    return;
  }
  if (reopen_top_up(c, 1) != 0) {
    fprintf(stderr, "harness: cannot create the database %s\n", c->db);
    c->harness++;
  }
}

static int exit_kind(camp_t* c, int status, int hung) {
  if (hung) {
    fprintf(stderr, "harness: worker hung (%s)\n", c->ctx);
    c->harness++;
    return -1;
  }
  if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) {
    c->x_sigkill++;
    return 0;
  }
  if (!WIFEXITED(status)) {
    fprintf(stderr, "harness: worker died of signal %d (%s)\n",
            WTERMSIG(status), c->ctx);
    c->harness++;
    return -1;
  }
  switch (WEXITSTATUS(status)) {
    case 0: c->x_clean++; return 0;
    case PLSIM_EXIT_SYNC_CRASH: c->x_sync++; return 0;
    case W_OPEN_FAILED:
    case W_RUN_FAILED:
    case W_ENGINE_ERROR:
      vio(c, "I5: the engine failed in the worker (exit %d)",
          WEXITSTATUS(status));
      c->integrity++;
      c->x_fail++;
      return 1;
    case W_UNEXPECTED:
      vio(c, "a valid message was retried or failed in the worker");
      c->unexpected++;
      c->x_fail++;
      return 1;
    case W_DRAIN_TIMEOUT:
      /* Judged by the final check: what is not in SQS is lost. */
      c->undrained++;
      vio(c, "the final worker could not publish everything in %d s",
          FINAL_DEADLINE_MS / 1000);
      return 1;
    default:
      fprintf(stderr, "harness: worker exit %d (%s)\n", WEXITSTATUS(status),
              c->ctx);
      c->harness++;
      return -1;
  }
}

static void keep_failed_db(camp_t* c) {
  char cmd[2 * PATH_MAX + 64];
  static int kept;
  /* A mutant is meant to fail: keep nothing behind in CI. */
  if (c->mutant != MUT_NONE || kept++ >= 3) return;
  snprintf(cmd, sizeof cmd, "mkdir -p '%s/failed-%ld' && cp -p '%s'* '%s/failed-%ld/' 2>/dev/null",
           c->dir, c->cycles, c->db, c->dir, c->cycles);
  if (system(cmd) == 0)
    fprintf(stderr, "  (database kept in %s/failed-%ld)\n", c->dir, c->cycles);
  c->keep = 1;
}

/* The end of an epoch: a clean worker handles and publishes everything;
** then every committed event must be in SQS. */
static void epoch_end(camp_t* c) {
  wcfg_t w;
  chk_t r;
  int hung, status;
  int64_t t = mono_ms(), v_before = violations(c);
  memset(&w, 0, sizeof w);
  w.final = 1;
  w.batch = 32;
  w.seed = rnd(&c->rng);
  snprintf(c->ctx, sizeof c->ctx, "epoch %d final drain", c->epoch);
  status = run_worker(c, &w, -1, &hung);
  if (exit_kind(c, status, hung) < 0) return;
  if (sqs_collect(c) != 0) return;
  check(c, &r);
  c->ms_final += mono_ms() - t;
  if (r.bad) return;
  c->published_rows += r.published;
  for (size_t i = 0; i < c->nev; i++) {
    ev_t* ev = &c->ev[i];
    int committed = ev->oid[0] != '\0' || (c->st[i] & S_ACKED);
    if ((c->st[i] & S_ENQ) && !(c->cf[i] & C_ROW) && !(c->st[i] & S_REP)) {
      c->st[i] |= S_REP;
      c->vanished++;
      vio(c, "LOST delivery of event %s: never handled", ev->id);
    }
    if ((c->cf[i] & C_ROW) && !(c->cf[i] & C_PUB) && !(c->st[i] & S_REP)) {
      c->undrained++;
      vio(c, "outbox row %s (event %s) still unpublished after the final "
          "drain", ev->oid, ev->id);
    }
    if (ev->nsqs > 0) {
      c->in_sqs++;
      c->dup_sqs += ev->nsqs - 1;
    }
    if (!committed) continue;
    c->events++;
    if (ev->nsqs == 0) {
      c->lost++;
      vio(c, "LOST event %s (outbox id %s, %s): committed to the outbox, "
          "never reached SQS", ev->id, ev->oid[0] ? ev->oid : "unknown",
          (c->cf[i] & C_PUB) ? "marked published" : "not marked published");
    }
  }
  if (violations(c) > v_before) keep_failed_db(c);
}

/* ---- the random campaign --------------------------------------------------------- */

static void add_restore_stats(camp_t* c, const plsim_restore_stats_t* s) {
  c->r_records += s->records;
  c->r_applied += s->applied;
  c->r_torn += s->torn;
  c->r_lost += s->lost;
}

static void random_cycle(camp_t* c) {
  wcfg_t w;
  chk_t r;
  int kind, kill_ms = -1, hung, status;
  int64_t t, v_before = violations(c), m_before;
  uint64_t torn_seed, cr;
  char crash[48];

  memset(&w, 0, sizeof w);
  /* Every parameter of cycle N comes from (seed, N) alone. */
  c->cycles++;
  cr = mix(c->seed ^ mix((uint64_t)c->cycles * 0x51ED27ULL));
  kind = c->mode == MODE_KILL    ? KIND_KILL
         : c->mode == MODE_POWER ? KIND_POWER
         : c->mode == MODE_TORN  ? KIND_TORN
                                 : (int)(rnd(&cr) % 3);
  if (kind == KIND_KILL || rnd(&cr) % 2 == 0) {
    kill_ms = (int)(rnd(&cr) % ((uint64_t)c->kill_max_ms + 1));
    snprintf(crash, sizeof crash, "SIGKILL after %d ms", kill_ms);
  } else {
    w.crash_sync = 1 + (int64_t)(rnd(&cr) % SYNC_K_MAX);
    /* A worker that makes fewer syncs ends by itself or, waiting for a
    ** dead worker's claims, is killed after FALLBACK_KILL_MS. */
    kill_ms = FALLBACK_KILL_MS;
    snprintf(crash, sizeof crash, "crash before sync %lld",
             (long long)w.crash_sync);
  }
  w.shim = kind != KIND_KILL;
  w.batch = rnd(&cr) % 2 ? 1 : 2 + (int)(rnd(&cr) % (MAX_BATCH - 1));
  w.ordered = (int)(rnd(&cr) % 2);
  w.ckpt_every = rnd(&cr) % 3 == 0 ? 0 : 2 + (int)(rnd(&cr) % 20);
  w.seed = rnd(&cr);
  torn_seed = rnd(&cr);

  c->epoch_cycles++;
  if (kind == KIND_KILL) c->k_kill++;
  else if (kind == KIND_POWER) c->k_power++;
  else c->k_torn++;
  snprintf(c->ctx, sizeof c->ctx,
           "cycle %ld (epoch %d, %s, %s, batch %d, %sordered, checkpoint "
           "every %d, torn seed %llu)",
           c->cycles, c->epoch, kind_names[kind], crash, w.batch,
           w.ordered ? "" : "un", w.ckpt_every,
           (unsigned long long)torn_seed);

  t = mono_ms();
  status = run_worker(c, &w, kill_ms, &hung);
  c->ms_worker += mono_ms() - t;
  if (exit_kind(c, status, hung) < 0) return;

  t = mono_ms();
  if (kind != KIND_KILL) {
    plsim_restore_stats_t rs;
    if (plsim_restore(c->dir, kind == KIND_TORN, torn_seed, &rs) != 0) {
      c->harness++;
      return;
    }
    add_restore_stats(c, &rs);
  }
  c->ms_restore += mono_ms() - t;

  t = mono_ms();
  m_before = c->sqs_messages;
  if (sqs_collect(c) != 0) return;
  c->ms_sqs += mono_ms() - t;

  t = mono_ms();
  check(c, &r);
  /* The worker died while the relay had published some rows and not yet
  ** the others. */
  if (!r.bad && !(WIFEXITED(status) && WEXITSTATUS(status) == 0) &&
      c->sqs_messages > m_before && r.rows > r.published)
    c->cut_publishing++;
  if (!r.bad) reopen_top_up(c, 0);
  c->ms_check += mono_ms() - t;
  if (violations(c) > v_before) keep_failed_db(c);
  if (r.bad) {
    /* A broken database proves nothing more: judge what SQS has, start
    ** over. */
    epoch_begin(c);
  }
}

static void progress(camp_t* c, int force) {
  static int64_t last;
  int64_t now = mono_ms();
  if (c->quiet || (!force && now - last < 10000)) return;
  last = now;
  fprintf(stderr,
          "  [%.0f s] cycles %ld (kill %ld, power %ld, torn %ld), epoch %d, "
          "acked %lld, SQS messages %lld, violations %lld\n",
          (double)(now - c->t0) / 1000.0, c->cycles, c->k_kill, c->k_power,
          c->k_torn, c->epoch, (long long)c->acked,
          (long long)c->sqs_messages, (long long)violations(c));
}

static void random_campaign(camp_t* c) {
  epoch_begin(c);
  while (c->cycles < c->cycles_wanted && c->harness == 0) {
    if (c->stop_on_violation && violations(c) > 0) break;
    if (c->epoch_cycles >= c->reset_every) {
      epoch_end(c);
      if (c->harness > 0) return;
      epoch_begin(c);
      if (c->harness > 0) return;
    }
    random_cycle(c);
    progress(c, 0);
  }
  if (c->harness == 0) epoch_end(c);
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

static int lookup(const char* s, const char* const* names, int n) {
  for (int i = 0; i < n; i++)
    if (strcmp(s, names[i]) == 0) return i;
  return -1;
}

#ifndef OB_CAMPAIGN_RELAY_MUTANT_BUILD
/* The mutant lives in its own binary (a mutant library). */
static void exec_mutant(char** argv) {
  char self[PATH_MAX], target[PATH_MAX + 48];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  char* slash;
  if (n <= 0) {
    perror("readlink /proc/self/exe");
    exit(2);
  }
  self[n] = '\0';
  slash = strrchr(self, '/');
  if (slash) *slash = '\0';
  snprintf(target, sizeof target,
           "%s/ob-crash-campaign-relay-publish-before-2xx", self);
  fflush(stdout);
  execv(target, argv);
  fprintf(stderr, "cannot run %s: %s\n", target, strerror(errno));
  exit(2);
}
#endif

int main(int argc, char** argv) {
  static const struct option longopts[] = {
      {"seed", required_argument, NULL, 's'},
      {"cycles", required_argument, NULL, 'n'},
      {"mode", required_argument, NULL, 'm'},
      {"mutant", required_argument, NULL, 'M'},
      {"reset-every", required_argument, NULL, 'r'},
      {"kill-max-ms", required_argument, NULL, 'K'},
      {"dir", required_argument, NULL, 'd'},
      {"keep", no_argument, NULL, 'k'},
      {"quiet", no_argument, NULL, 'q'},
      {"stop-on-violation", no_argument, NULL, 'x'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  camp_t* c = xcalloc(1, sizeof *c);
  const char* skip;
  int opt, have_seed = 0, have_cycles = 0, rc;
  double secs;

  c->mode = MODE_MIXED;
  c->reset_every = 100;
  c->kill_max_ms = KILL_MAX_MS;
  while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
    switch (opt) {
      case 's': c->seed = strtoull(optarg, NULL, 0); have_seed = 1; break;
      case 'n': c->cycles_wanted = atol(optarg); have_cycles = 1; break;
      case 'm':
        c->mode = lookup(optarg, mode_names, 4);
        if (c->mode < 0) {
          usage(stderr);
          return 2;
        }
        break;
      case 'M':
        c->mutant = lookup(optarg, mutant_names, 2);
        if (c->mutant < 0) {
          usage(stderr);
          return 2;
        }
        break;
      case 'r': c->reset_every = atoi(optarg); break;
      case 'K': c->kill_max_ms = atoi(optarg); break;
      case 'd': c->dir = xstrdup(optarg); break;
      case 'k': c->keep = 1; break;
      case 'q': c->quiet = 1; break;
      case 'x': c->stop_on_violation = 1; break;
      case 'h': usage(stdout); return 0;
      default: usage(stderr); return 2;
    }
  }
  if (!have_seed || !have_cycles || c->cycles_wanted < 0 ||
      c->reset_every < 1 || c->kill_max_ms < 1 || optind != argc) {
    usage(stderr);
    return 2;
  }
#ifdef OB_CAMPAIGN_RELAY_MUTANT_BUILD
  if (c->mutant != MUT_PUBLISH_BEFORE_2XX) {
    fprintf(stderr, "this binary is linked with the publish-before-2xx "
            "MUTANT library; run ob-crash-campaign-relay instead\n");
    return 2;
  }
#else
  if (c->mutant == MUT_PUBLISH_BEFORE_2XX) exec_mutant(argv);
#endif

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

  if (c->dir == NULL) {
    const char* base = getenv("TMPDIR");
    char buf[PATH_MAX];
    snprintf(buf, sizeof buf, "%s/ob-crash-campaign-relay-XXXXXX",
             base && *base ? base : "/tmp");
    if (mkdtemp(buf) == NULL) {
      perror("mkdtemp");
      return 2;
    }
    c->dir = xstrdup(buf);
    c->own_dir = 1;
  } else if (mkdir(c->dir, 0700) != 0 && errno != EEXIST) {
    perror(c->dir);
    return 2;
  }
  c->db = path_join(c->dir, "campaign.db");
  c->t0 = mono_ms();
  if (sq_server_start(&c->srv, "crash-relay", NULL) != 0) {
    printf("RESULT: HARNESS FAILURE: the SQS server did not start\n");
    return 2;
  }
  /* The workers inherit these: the relay reads the AWS configuration from
  ** the environment, as on a terminal. */
  rf_setenv(&c->srv);
  rf_set_endpoint(c->srv.port);

  printf("ob-crash-campaign-relay: seed %llu, mode %s, %ld cycles, mutant "
         "%s, SIGKILL after U(0, %d ms), database and queue reset every %d "
         "cycles, dir %s, SQS server on port %d\n",
         (unsigned long long)c->seed, mode_names[c->mode], c->cycles_wanted,
         mutant_names[c->mutant], c->kill_max_ms, c->reset_every, c->dir,
         c->srv.port);
  printf("reproduce: ob-crash-campaign-relay --seed %llu --cycles %ld --mode "
         "%s%s%s\n",
         (unsigned long long)c->seed, c->cycles_wanted, mode_names[c->mode],
         c->mutant ? " --mutant " : "", c->mutant ? mutant_names[c->mutant] : "");
  fflush(stdout);

  random_campaign(c);
  sq_server_stop(&c->srv);

  secs = (double)(mono_ms() - c->t0) / 1000.0;
  progress(c, 1);
  printf("relay: cycles %ld (kill %ld, power %ld, torn %ld), events %lld, "
         "published-rows %lld, in SQS %lld, lost %lld, duplicated-in-SQS "
         "%lld, integrity-failures %lld\n",
         c->cycles, c->k_kill, c->k_power, c->k_torn, (long long)c->events,
         (long long)c->published_rows, (long long)c->in_sqs,
         (long long)c->lost, (long long)c->dup_sqs, (long long)c->integrity);
  printf("details: seed %llu, %.1f s (%.1f cycles/s), %d databases and "
         "queues; workers ended by SIGKILL %ld, crash before sync %ld, clean "
         "exit %ld, engine failure %ld; crashed while the relay was "
         "publishing (some of the cycle's rows in SQS, some not) %ld; "
         "deliveries %lld (%lld duplicated), "
         "acked %lld, SQS messages %lld; violations: marked-published-not-in-"
         "SQS %lld, outbox-rows-vanished %lld, phantoms-in-SQS %lld, "
         "unexpected %lld, undrained %lld; torn restores replayed %lld "
         "pending records (%lld whole, %lld torn, %lld lost)\n",
         (unsigned long long)c->seed, secs,
         secs > 0 ? (double)c->cycles / secs : 0.0, c->epoch, c->x_sigkill,
         c->x_sync, c->x_clean, c->x_fail, c->cut_publishing,
         (long long)c->deliveries,
         (long long)c->dup_deliveries, (long long)c->acked,
         (long long)c->sqs_messages, (long long)c->unbacked,
         (long long)c->vanished, (long long)c->phantoms,
         (long long)c->unexpected, (long long)c->undrained,
         (long long)c->r_records, (long long)c->r_applied,
         (long long)c->r_torn, (long long)c->r_lost);
  printf("time: workers %.1f s, restores %.1f s, SQS receives %.1f s, "
         "checks+top-ups %.1f s, final drains %.1f s\n",
         (double)c->ms_worker / 1000.0, (double)c->ms_restore / 1000.0,
         (double)c->ms_sqs / 1000.0, (double)c->ms_check / 1000.0,
         (double)c->ms_final / 1000.0);
  if (c->harness > 0) {
    printf("RESULT: HARNESS FAILURE (%lld problems): the campaign proves "
           "nothing\n", (long long)c->harness);
    rc = 2;
  } else if (violations(c) > 0) {
    printf("RESULT: %lld VIOLATIONS%s\n", (long long)violations(c),
           c->mutant ? " (the mutant was killed)" : "");
    rc = 1;
  } else {
    printf("RESULT: 0 violations%s\n",
           c->mutant ? " (the MUTANT SURVIVED)" : "");
    rc = 0;
  }
  if (!c->keep && c->own_dir) {
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", c->dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", c->dir);
  } else if (c->keep) {
    printf("kept: %s\n", c->dir);
  }
  free(c->ev);
  free(c->st);
  free(c->cf);
  free(c->queue_url);
  free(c->db);
  free(c->dir);
  free(c);
  return rc;
}
