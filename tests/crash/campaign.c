/* ob-crash-campaign: the crash and power-loss campaign (issue 6 items 1, 2
** and 7; RELIABILITY.md T1-T4, invariants I1-I5). See docs/reliability.md.
**
**   ob-crash-campaign --seed S --cycles N
**                     [--mode kill|power|torn|mixed|exhaustive]
**                     [--mutant sync-normal|ack-before-commit|split-claim]
**                     [--batch B] [--reset-every R] [--torn-seeds T]
**                     [--write-points] [--dir D] [--keep] [--quiet]
**                     [--stop-on-violation]
**
** A supervisor forks workers that run the real engine (ob_open, the payout
** module, ob_run_once) on one database and makes them die:
**   kill   SIGKILL after U(0,60 ms): a process crash, the files stay as the
**          OS holds them;
**   power  a power loss, strict: the worker runs on the plsim VFS shim
**          (plsim.h) and dies by SIGKILL after U(0,60 ms) or just before its
**          k-th sync (k in 1..80); then every file becomes what was synced;
**   torn   the same, then a random subset of the unsynced writes is applied,
**          torn per 512-byte sector;
**   mixed  one of the three per cycle, at random.
** After every cycle the supervisor opens the database with the stock VFS
** (query_only, no checkpoint on close) and checks:
**   integrity  PRAGMA integrity_check is "ok" (a failed prepare or step is a
**              failure, never "ok"); the engine reopens (ob_open, I5) in the
**              supervisor or in the next worker and goes on handling;
**   I1         every id the worker acked is present with its payout. A worker
**              reports an id only after ob_run_once returned 0 (COMMIT): a
**              second consumer "test-ack-recorder" notes the ids of the batch
**              and the worker writes them to a pipe afterwards. Also: every
**              delivery whose enqueue committed is still queued or handled
**              (none vanished);
**   I2         no event has two payouts or two outbox rows;
**   I3         dedup record (both consumers), payout and outbox row exist all
**              together or not at all, per event.
** Messages: PaymentCaptured events, a quarter of them delivered 2-3 times,
** plus redeliveries of acked events; batches of 1 (half the cycles) or 2-32
** (group commit). Workers also checkpoint through a second connection every
** few commits (the engine's own autocheckpoint is 1000 pages), so crashes hit
** checkpoints and WAL restarts too. The database is reset every R cycles
** (--reset-every, 200: about 13 MB, ~55 events a cycle at ~1.2 KB each;
** integrity_check and the scans cost in proportion), after a final drain
** that checks every delivery ends handled exactly once.
**
** exhaustive: a scripted workload (15 events, 20 deliveries: 5 duplicates;
** enqueue, handle at batch 1, checkpoint, reopen at batch 4, close) runs once
** to count its syncs S (and writes W); then for each k = 1..S it crashes
** before sync k and is checked after a strict restore and after T torn
** restores (--torn-seeds, 4), plus "the state is a prefix of the commits"
** and a drain. --write-points adds a torn crash before every write.
**
** Mutants (the harness must catch each; CI fails if one survives):
**   sync-normal        workers open with synchronous=NORMAL (run with power
**                      loss: kill mode alone cannot see it);
**   ack-before-commit  the worker reports an id from inside the handler,
**                      before COMMIT;
**   split-claim        the dedup claim commits in a transaction of its own
**                      (core/engine/engine.c, #ifdef OB_MUTANT_SPLIT_CLAIM),
**                      linked into the separate binary
**                      ob-crash-campaign-split-claim, which this one execs.
**   (published-before-ack, the relay's mutant, is killed by the relay's own
**   campaign: ob-crash-campaign-relay --mutant publish-before-2xx,
**   tests/crash/campaign_relay.c.)
**
** Everything random comes from --seed (printed); cycle N's parameters from
** (seed, N) alone. SIGKILL instants are real time, so a random campaign is
** reproducible in its parameters, not to the instruction (a crash before
** sync k depends on the state earlier kills left); exhaustive mode is
** exact.
** Exit status: 0 no violation, 1 violations, 2 the harness itself failed. */
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

#include <sqlite3.h>

#include "oncebox.h"
#include "tests/crash/plsim.h"

#define RECORDER "test-ack-recorder"
#define MAX_BATCH 100          /* acks of one batch fit one atomic pipe write */
#define KILL_MAX_MS 60         /* SIGKILL after U(0, 60 ms) */
#define SYNC_K_MAX 80          /* crash before sync k, k in 1..80 */
#define BACKLOG_LOW 300        /* top the queue up below this many rows */
#define TOPUP_MIN 200          /* new events per top-up: 200..400 */
#define TOPUP_SPAN 201
#define DUP_PERCENT 25         /* events delivered 2-3 times */
#define WATCHDOG_MS 60000      /* a worker that runs longer is hung */
#define MAX_VIOLATION_LINES 40
#define SCRIPT_EVENTS 15       /* exhaustive: 15 events, 20 deliveries */

/* Worker exit codes (besides 0, SIGKILL and the PLSIM_EXIT_* codes). */
#define W_OPEN_FAILED 10       /* ob_open failed: I5 */
#define W_RUN_FAILED 11        /* ob_run_once / checkpoint failed: I5 */
#define W_PIPE 12              /* harness */
#define W_UNEXPECTED 13        /* a valid message retried or failed */
#define W_DELAYED 14           /* harness: delayed rows */
#define W_OVERFLOW 15          /* harness */
#define W_ENQUEUE 16           /* exhaustive script: enqueue failed: I5 */

typedef enum { MODE_KILL, MODE_POWER, MODE_TORN, MODE_MIXED, MODE_EXHAUSTIVE } run_mode_t;
static const char* const mode_names[] = {"kill", "power", "torn", "mixed",
                                         "exhaustive"};
typedef enum {
  MUT_NONE,
  MUT_SYNC_NORMAL,
  MUT_ACK_BEFORE_COMMIT,
  MUT_SPLIT_CLAIM
} mutant_t;
static const char* const mutant_names[] = {"none", "sync-normal",
                                           "ack-before-commit", "split-claim"};
enum { KIND_KILL, KIND_POWER, KIND_TORN };
static const char* const kind_names[] = {"kill", "power", "torn"};

/* Per event, kept for the epoch (one database). */
enum {
  S_ENQ = 1,    /* a delivery of it was enqueued and committed */
  S_ACKED = 2,  /* the worker acked it after COMMIT */
  S_LOST = 4,   /* reported lost */
  S_XREP = 8,   /* reported not atomic */
  S_EREP = 16,  /* reported duplicated effect */
  S_VREP = 32   /* reported vanished */
};
/* Per event, found by one check. */
enum { C_DEDUP = 1, C_REC = 2, C_QUEUED = 4 };

typedef struct ev_s {
  char id[37];
  char pay[37];
} ev_t;

typedef struct wcfg_s {
  int shim;              /* run on plsim */
  int64_t crash_sync;    /* plsim crash points */
  int64_t crash_write;
  int verify;            /* plsim self-verification */
  int batch;
  int ckpt_every;        /* checkpoint via a 2nd connection every N commits */
  int script;            /* exhaustive: the scripted workload */
  uint64_t seed;         /* the worker's random source (UUIDv7) */
} wcfg_t;

typedef struct camp_s {
  /* options */
  uint64_t seed;
  long cycles_wanted;
  int mode, mutant, batch, reset_every, torn_seeds, write_points;
  int quiet, stop_on_violation, keep, own_dir;
  char* dir;
  char* db;
  uint64_t rng;

  /* the current epoch (database) */
  int epoch;
  uint64_t eseed;
  ev_t* ev;
  uint8_t *st, *cf, *npay, *nout;
  size_t nev, cap;
  int64_t backlog;
  long epoch_cycles;
  char ctx[200];             /* the cycle being checked, for messages */

  /* the pipe from the current worker */
  char stream[1 << 16];
  size_t slen;
  int w_opened, w_stats;
  int64_t w_syncs, w_writes;
  size_t* order;             /* exhaustive: acked event indexes, in order */
  size_t norder, order_cap;

  /* totals */
  int64_t attempted, deliveries, dup_deliveries, acked;
  int64_t lost_acked, lost_vanished, dup_effects, atomicity, integrity;
  int64_t unexpected, harness, not_prefix;
  long cycles, k_kill, k_power, k_torn;
  long x_sigkill, x_sync, x_write, x_clean, x_open_fail;
  long lost_cycles;
  int64_t r_records, r_applied, r_torn, r_lost;
  long vlines;
  int64_t t0;
  int64_t epoch_v0;          /* violations() when the epoch began */
  int64_t ms_worker, ms_restore, ms_check, ms_reopen; /* where time goes */
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
  return c->lost_acked + c->lost_vanished + c->dup_effects + c->atomicity +
         c->integrity + c->unexpected + c->not_prefix;
}

/* A clock with the real time and a seeded random source (UUIDv7 ids). */
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
  c->npay = realloc(c->npay, cap);
  c->nout = realloc(c->nout, cap);
  if (!c->ev || !c->st || !c->cf || !c->npay || !c->nout) {
    fprintf(stderr, "out of memory\n");
    exit(2);
  }
  memset(c->st + c->cap, 0, cap - c->cap);
  c->cap = cap;
}

/* Event i of the epoch: its id ends with i in hex, so a row maps back. */
static size_t new_event(camp_t* c) {
  size_t i = c->nev;
  uint64_t h;
  ensure_events(c, i + 1);
  h = mix(c->eseed ^ (i * 8 + 1));
  make_uuid(h, mix(h), i, c->ev[i].id);
  h = mix(c->eseed ^ (i * 8 + 2));
  make_uuid(h, mix(h), mix(h ^ 7), c->ev[i].pay);
  c->st[i] = 0;
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

/* Enqueue deliveries list[0..n) through e in transactions of up to 500;
** mark them enqueued once committed. Returns 0 or the engine's error. */
static int enqueue_list(camp_t* c, ob_engine_t* e, const size_t* list,
                        size_t n) {
  static ob_envelope_t envs[500];
  static int results[500];
  static char bodies[500][256];
  for (size_t off = 0; off < n; off += 500) {
    size_t k = n - off < 500 ? n - off : 500;
    int rc;
    for (size_t i = 0; i < k; i++) {
      size_t idx = list[off + i];
      body_of(c, idx, bodies[i], sizeof bodies[i]);
      memset(&envs[i], 0, sizeof envs[i]);
      envs[i].id = c->ev[idx].id;
      envs[i].type = OB_PAYOUT_MESSAGE_TYPE;
      envs[i].body = bodies[i];
      envs[i].body_len = strlen(bodies[i]);
    }
    rc = ob_enqueue_many(e, envs, k, results);
    if (rc != (int)k) return rc < 0 ? rc : OB_EINVAL;
    for (size_t i = 0; i < k; i++) {
      size_t idx = list[off + i];
      if (!(c->st[idx] & S_ENQ)) c->attempted++;
      else c->dup_deliveries++;
      c->st[idx] |= S_ENQ;
    }
    c->deliveries += (int64_t)k;
  }
  return 0;
}

/* New events, a quarter of them 2-3 times, and a few redeliveries of acked
** ones, shuffled. */
static size_t make_traffic(camp_t* c, size_t** list, size_t events) {
  size_t n = 0, cap = events * 3 + events / 10 + 8;
  size_t redeliver = events / 20;
  *list = xcalloc(cap, sizeof **list);
  for (size_t i = 0; i < events; i++) {
    size_t idx = new_event(c);
    int copies = rnd(&c->rng) % 100 < DUP_PERCENT ? 2 + (int)(rnd(&c->rng) % 2)
                                                 : 1;
    for (int k = 0; k < copies; k++) (*list)[n++] = idx;
  }
  for (size_t i = 0; i < redeliver && c->nev > events; i++) {
    size_t old = c->nev - events, idx = 0;
    for (int tries = 0; tries < 8; tries++) {
      idx = (size_t)(rnd(&c->rng) % old);
      if (c->st[idx] & S_ACKED) break;
    }
    (*list)[n++] = idx;
  }
  for (size_t i = n; i > 1; i--) {
    size_t j = (size_t)(rnd(&c->rng) % i), t = (*list)[i - 1];
    (*list)[i - 1] = (*list)[j];
    (*list)[j] = t;
  }
  return n;
}

/* ---- the engine in the supervisor (stock VFS) ------------------------------- */

static int quiet_recorder(ob_tx_t* tx, const ob_message_t* m, void* arg) {
  (void)tx;
  (void)m;
  (void)arg;
  return OB_DONE;
}

static ob_engine_t* open_engine(camp_t* c, int batch, seeded_clock_t* sc,
                                char* err, size_t errlen) {
  ob_options_t o;
  ob_engine_t* e = NULL;
  ob_options_init(&o);
  o.db_path = c->db;
  o.batch_size = batch;
  o.busy_timeout_ms = 10000;
  seeded_clock_init(sc, rnd(&c->rng));
  o.clock = &sc->clock;
  if (ob_open(&e, &o, err, errlen) < 0) return NULL;
  return e;
}

static void print_ob_violation(void* arg, const char* v) {
  camp_t* c = arg;
  vio(c, "ob_check: %s", v);
}

/* ---- the worker --------------------------------------------------------------- */

typedef struct recorder_s {
  char ids[MAX_BATCH][36];
  int n;
  int fd;
  int early; /* the ack-before-commit mutant */
} recorder_t;

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
  /* MUTANT ack-before-commit: acknowledged inside the transaction. */
  if (r->early) write_rec(r->fd, 'A', r->ids[r->n - 1], 36);
  return OB_DONE;
}

static ob_engine_t* worker_open(camp_t* c, int batch, seeded_clock_t* sc) {
  ob_options_t o;
  ob_engine_t* e = NULL;
  char err[512];
  ob_options_init(&o);
  o.db_path = c->db;
  o.batch_size = batch;
  o.busy_timeout_ms = 10000;
  o.clock = &sc->clock;
  if (c->mutant == MUT_SYNC_NORMAL) o.synchronous = OB_SYNC_NORMAL; /* MUTANT */
  if (ob_open(&e, &o, err, sizeof err) < 0) {
    fprintf(stderr, "worker (%s): ob_open: %s\n", c->ctx, err);
    _exit(W_OPEN_FAILED);
  }
  return e;
}

static void worker_register(ob_engine_t* e, recorder_t* rec) {
  if (ob_register_payout(e) != 0 ||
      ob_register(e, OB_PAYOUT_MESSAGE_TYPE, RECORDER, recorder_cb, rec) != 0)
    _exit(W_OPEN_FAILED);
}

static void checkpoint(camp_t* c, sqlite3* ck, int mode) {
  int rc = sqlite3_wal_checkpoint_v2(ck, NULL, mode, NULL, NULL);
  if (rc != SQLITE_OK && rc != SQLITE_BUSY) {
    fprintf(stderr, "worker (%s): checkpoint: %s\n", c->ctx,
            sqlite3_errmsg(ck));
    _exit(W_RUN_FAILED);
  }
}

static sqlite3* open_checkpointer(camp_t* c) {
  sqlite3* ck = NULL;
  if (sqlite3_open_v2(c->db, &ck, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
    fprintf(stderr, "worker (%s): checkpointer: %s\n", c->ctx,
            ck ? sqlite3_errmsg(ck) : "out of memory");
    _exit(W_RUN_FAILED);
  }
  sqlite3_busy_timeout(ck, 10000);
  return ck;
}

/* ob_run_once until the queue is empty (max_commits < 0) or max_commits
** batches committed. Acks go to the pipe after each successful return. */
static int worker_handle(camp_t* c, ob_engine_t* e, recorder_t* rec,
                         sqlite3* ck, int ckpt_every, int max_commits) {
  int commits = 0;
  static const int modes[] = {SQLITE_CHECKPOINT_PASSIVE,
                              SQLITE_CHECKPOINT_PASSIVE, SQLITE_CHECKPOINT_FULL,
                              SQLITE_CHECKPOINT_RESTART,
                              SQLITE_CHECKPOINT_TRUNCATE};
  while (max_commits < 0 || commits < max_commits) {
    ob_batch_result_t res;
    int64_t at;
    int rc;
    rec->n = 0;
    rc = ob_run_once(e, &res);
    if (rc == OB_EBUSY) continue;
    if (rc < 0) {
      fprintf(stderr, "worker (%s): ob_run_once: %s: %s\n", c->ctx,
              ob_err_name(rc), ob_errmsg(e));
      _exit(W_RUN_FAILED);
    }
    /* Committed: only now are these ids acknowledged. */
    if (!rec->early && rec->n > 0)
      write_rec(rec->fd, 'A', rec->ids, (size_t)rec->n * 36);
    if (res.failed > 0 || res.retried > 0) {
      fprintf(stderr, "worker (%s): a valid message was %s\n", c->ctx,
              res.failed ? "moved to the failure store" : "retried");
      _exit(W_UNEXPECTED);
    }
    if (res.claimed == 0) {
      rc = ob_next_due(e, &at);
      if (rc == OB_ENOTFOUND) break;
      _exit(W_DELAYED);
    }
    commits++;
    if (ck != NULL && ckpt_every > 0 && commits % ckpt_every == 0)
      checkpoint(c, ck, modes[(commits / ckpt_every) % 5]);
  }
  return commits;
}

static void worker_stats(int fd) {
  int64_t v[2] = {plsim_syncs(), plsim_writes()};
  write_rec(fd, 'S', v, sizeof v);
}

/* The random campaign's worker: handle the queue until killed or empty. */
static void worker_main(camp_t* c, const wcfg_t* w, int fd) {
  seeded_clock_t sc;
  recorder_t rec;
  sqlite3* ck = NULL;
  ob_engine_t* e;
  memset(&rec, 0, sizeof rec);
  rec.fd = fd;
  rec.early = c->mutant == MUT_ACK_BEFORE_COMMIT;
  seeded_clock_init(&sc, w->seed);
  e = worker_open(c, w->batch, &sc);
  write_rec(fd, 'O', "", 0);
  worker_register(e, &rec);
  if (w->ckpt_every > 0) ck = open_checkpointer(c);
  worker_handle(c, e, &rec, ck, w->ckpt_every, -1);
  if (ck) sqlite3_close(ck);
  ob_close(e);
  worker_stats(fd);
  _exit(0);
}

/* Exhaustive: enqueue deliveries [from, to) of the script and report them. */
static void script_enqueue(camp_t* c, ob_engine_t* e, const size_t* list,
                           size_t from, size_t to, int fd) {
  char ids[SCRIPT_EVENTS + 8][36];
  size_t n = 0;
  if (enqueue_list(c, e, list + from, to - from) != 0) {
    fprintf(stderr, "worker (%s): enqueue: %s\n", c->ctx, ob_errmsg(e));
    _exit(W_ENQUEUE);
  }
  for (size_t i = from; i < to; i++) memcpy(ids[n++], c->ev[list[i]].id, 36);
  write_rec(fd, 'E', ids, n * 36);
}

/* The scripted workload: a fresh database; 12 deliveries enqueued, six
** batches of 1, a checkpoint by a second connection, 8 more deliveries, the
** engine closed (WAL deleted) and reopened at batch 4, the rest handled, a
** clean close. */
static const size_t script_list[] = {0, 1, 2, 3, 2,  4,  5,  6,  5,  7,
                                     8, 9, 8, 10, 11, 12, 11, 13, 14, 14};

static void script_main(camp_t* c, const wcfg_t* w, int fd) {
  seeded_clock_t sc;
  recorder_t rec;
  sqlite3* ck;
  ob_engine_t* e;
  memset(&rec, 0, sizeof rec);
  rec.fd = fd;
  rec.early = c->mutant == MUT_ACK_BEFORE_COMMIT;
  seeded_clock_init(&sc, w->seed);
  e = worker_open(c, 1, &sc);
  write_rec(fd, 'O', "", 0);
  worker_register(e, &rec);
  script_enqueue(c, e, script_list, 0, 12, fd);
  worker_handle(c, e, &rec, NULL, 0, 6);
  ck = open_checkpointer(c);
  checkpoint(c, ck, SQLITE_CHECKPOINT_PASSIVE);
  sqlite3_close(ck);
  script_enqueue(c, e, script_list, 12, 20, fd);
  ob_close(e);
  e = worker_open(c, 4, &sc);
  worker_register(e, &rec);
  worker_handle(c, e, &rec, NULL, 0, -1);
  ob_close(e);
  worker_stats(fd);
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
    if (type == 'A' || type == 'E') {
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
        if (type == 'E') {
          if (!(c->st[idx] & S_ENQ)) c->attempted++;
          else c->dup_deliveries++;
          c->deliveries++;
          c->st[idx] |= S_ENQ;
        } else if (!(c->st[idx] & S_ACKED)) {
          c->st[idx] |= S_ACKED;
          c->acked++;
          if (c->order) {
            if (c->norder == c->order_cap) {
              c->order_cap = c->order_cap ? c->order_cap * 2 : 64;
              c->order = realloc(c->order, c->order_cap * sizeof *c->order);
              if (!c->order) exit(2);
            }
            c->order[c->norder++] = (size_t)idx;
          }
        }
      }
    } else if (type == 'O') {
      c->w_opened = 1;
    } else if (type == 'S' && len == 16) {
      memcpy(&c->w_syncs, p, 8);
      memcpy(&c->w_writes, p + 8, 8);
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
  c->w_syncs = c->w_writes = 0;
  if (pipe(fds) != 0) {
    perror("pipe");
    exit(2);
  }
  fflush(stdout);
  fflush(stderr);
  /* No SQLite connection is open in the supervisor here. */
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
      pc.crash_at_write = w->crash_write;
      pc.verify = w->verify;
      /* The default VFS of the worker only, before ob_open. */
      if (plsim_install(&pc) != 0) _exit(PLSIM_EXIT_BROKEN);
    }
    if (w->script) script_main(c, w, fds[1]);
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

/* ---- the checker (stock VFS, read-only) ------------------------------------- */

typedef struct chk_s {
  int bad;            /* integrity failure (incl. a checker failure) */
  int64_t queue, failed, payouts, outbox, dedup;
  int64_t new_lost;   /* violations found by this check */
} chk_t;

/* Run sql; call row() per row. A failed prepare or step is a failure. */
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

static void unknown_row(camp_t* c, const char* table, const char* a,
                        const char* b) {
  c->atomicity++;
  vio(c, "%s row for an unknown event: %s / %s", table, a ? a : "(null)",
      b ? b : "(null)");
}

static void row_dedup(camp_t* c, sqlite3_stmt* st) {
  const char* consumer = (const char*)sqlite3_column_text(st, 0);
  const char* id = (const char*)sqlite3_column_text(st, 1);
  long i = event_index(c, id);
  if (i < 0 || consumer == NULL) {
    unknown_row(c, "processed_message", consumer, id);
  } else if (strcmp(consumer, OB_PAYOUT_CONSUMER) == 0) {
    c->cf[i] |= C_DEDUP;
  } else if (strcmp(consumer, RECORDER) == 0) {
    c->cf[i] |= C_REC;
  } else {
    unknown_row(c, "processed_message", consumer, id);
  }
}

static void row_payout(camp_t* c, sqlite3_stmt* st) {
  const char* id = (const char*)sqlite3_column_text(st, 0);
  const char* pay = (const char*)sqlite3_column_text(st, 1);
  long i = event_index(c, id);
  if (i < 0 || pay == NULL || strcmp(pay, c->ev[i].pay) != 0) {
    unknown_row(c, "merchant_payout", id, pay);
    return;
  }
  if (c->npay[i] < 255) c->npay[i]++;
}

static void row_outbox(camp_t* c, sqlite3_stmt* st) {
  const char* id = (const char*)sqlite3_column_text(st, 0);
  const char* type = (const char*)sqlite3_column_text(st, 1);
  const char* agg = (const char*)sqlite3_column_text(st, 2);
  long i = event_index(c, id);
  if (i < 0 || type == NULL || strcmp(type, OB_PAYOUT_EVENT_TYPE) != 0 ||
      agg == NULL || strcmp(agg, c->ev[i].pay) != 0) {
    unknown_row(c, "outbox_event", id, agg);
    return;
  }
  if (c->nout[i] < 255) c->nout[i]++;
}

static void row_queue(camp_t* c, sqlite3_stmt* st) {
  const char* id = (const char*)sqlite3_column_text(st, 0);
  long i = event_index(c, id);
  if (i < 0) {
    unknown_row(c, "queue", id, NULL);
    return;
  }
  c->cf[i] |= C_QUEUED;
}

static int64_t g_count;
static void row_count(camp_t* c, sqlite3_stmt* st) {
  (void)c;
  g_count = sqlite3_column_int64(st, 0);
}

/* Check the database as the crash (and restore) left it. */
static void check(camp_t* c, chk_t* r) {
  sqlite3* db = NULL;
  sqlite3_stmt* st = NULL;
  int rc, lost_before = (int)(c->lost_acked + c->lost_vanished);
  memset(r, 0, sizeof *r);
  if (c->nev > 0) {
    memset(c->cf, 0, c->nev);
    memset(c->npay, 0, c->nev);
    memset(c->nout, 0, c->nev);
  }

  /* Read-write, so that a hot rollback journal (a crash while the database
  ** was being created, before WAL) is rolled back as any opener would; but
  ** no statement writes (query_only) and no checkpoint on close: a hot WAL
  ** stays for the next worker to recover. */
  rc = sqlite3_open_v2(c->db, &db, SQLITE_OPEN_READWRITE, NULL);
  if (rc != SQLITE_OK) {
    vio(c, "integrity: open: %s", db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
    goto bad;
  }
  sqlite3_busy_timeout(db, 10000);
  if (sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL) !=
          SQLITE_OK ||
      sqlite3_exec(db, "PRAGMA query_only=1; PRAGMA mmap_size=1073741824",
                   NULL, NULL, NULL) != SQLITE_OK) {
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
  /* One read transaction: the scans agree with each other. */
  if (sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
    vio(c, "checker: BEGIN: %s", sqlite3_errmsg(db));
    goto bad;
  }
  /* A crash before the schema was committed leaves an empty database:
  ** valid, and then nothing may have been acked or enqueued. */
  g_count = -1;
  if (scan(db, "PRAGMA user_version", row_count, c) != 0) goto bad;
  if (g_count == 0) {
    g_count = -1;
    if (scan(db, "SELECT count(*) FROM sqlite_schema", row_count, c) != 0)
      goto bad;
    if (g_count != 0) {
      vio(c, "integrity: user_version 0 but %lld schema objects",
          (long long)g_count);
      goto bad;
    }
    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    sqlite3_close(db);
    db = NULL;
    goto evaluate;
  }
  if (scan(db, "SELECT consumer_name, message_id FROM processed_message",
           row_dedup, c) != 0 ||
      scan(db, "SELECT source_event_id, source_payment_id FROM merchant_payout",
           row_payout, c) != 0 ||
      scan(db, "SELECT causation_id, event_type, aggregate_id"
               " FROM outbox_event", row_outbox, c) != 0 ||
      scan(db, "SELECT message_id FROM queue", row_queue, c) != 0)
    goto bad;
  g_count = -1;
  if (scan(db, "SELECT count(*) FROM queue", row_count, c) != 0) goto bad;
  r->queue = g_count;
  g_count = -1;
  if (scan(db, "SELECT count(*) FROM failed_message", row_count, c) != 0)
    goto bad;
  r->failed = g_count;
  sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
  sqlite3_close(db);
  db = NULL;
  c->backlog = r->queue;

evaluate:
  if (r->failed != 0) {
    c->unexpected += r->failed;
    vio(c, "%lld valid messages in the failure store", (long long)r->failed);
  }
  for (size_t i = 0; i < c->nev; i++) {
    int d = (c->cf[i] & C_DEDUP) != 0, rec = (c->cf[i] & C_REC) != 0;
    int p = c->npay[i] > 0, o = c->nout[i] > 0;
    r->payouts += c->npay[i];
    r->outbox += c->nout[i];
    r->dedup += d;
    /* I2: one effect per event, however often it was delivered. */
    if ((c->npay[i] > 1 || c->nout[i] > 1) && !(c->st[i] & S_EREP)) {
      c->st[i] |= S_EREP;
      c->dup_effects += (c->npay[i] > 1 ? c->npay[i] - 1 : 0) +
                        (c->nout[i] > 1 ? c->nout[i] - 1 : 0);
      vio(c, "event %s: %d payouts, %d outbox rows", c->ev[i].id, c->npay[i],
          c->nout[i]);
    }
    /* I3: all or nothing. */
    if ((d || rec || p || o) && !(d && rec && p && o) &&
        !(c->st[i] & S_XREP)) {
      c->st[i] |= S_XREP;
      c->atomicity++;
      vio(c, "event %s not atomic: dedup %d, recorder dedup %d, payout %d, "
          "outbox %d", c->ev[i].id, d, rec, p, o);
    }
    /* I1: acked means durable. */
    if ((c->st[i] & S_ACKED) && !p && !(c->st[i] & S_LOST)) {
      c->st[i] |= S_LOST;
      c->lost_acked++;
      vio(c, "LOST acked event %s (no payout)", c->ev[i].id);
    }
    /* ... and a committed enqueue is never dropped unhandled. */
    if ((c->st[i] & S_ENQ) && !p && !(c->cf[i] & C_QUEUED) &&
        !(c->st[i] & (S_VREP | S_LOST))) {
      c->st[i] |= S_VREP;
      c->lost_vanished++;
      vio(c, "LOST delivery of event %s: enqueued, no longer queued, never "
          "handled", c->ev[i].id);
    }
  }
  r->new_lost = c->lost_acked + c->lost_vanished - lost_before;
  return;

bad:
  if (st) sqlite3_finalize(st);
  if (db) sqlite3_close(db);
  r->bad = 1;
  c->integrity++;
}

/* I5 in the supervisor: the engine opens, its own check agrees, and it
** takes more work. Returns 0, or -1 (counted) if it cannot. */
static int reopen(camp_t* c, int engine_check, int topup, int drain,
                  int my_violations) {
  seeded_clock_t sc;
  char err[512];
  ob_engine_t* e = open_engine(c, drain ? 64 : 1, &sc, err, sizeof err);
  int rc;
  if (e == NULL) {
    vio(c, "I5: the engine does not reopen: %s", err);
    c->integrity++;
    return -1;
  }
  if (engine_check) {
    rc = ob_check(e, my_violations ? NULL : print_ob_violation, c);
    if (rc < 0) {
      vio(c, "I5: ob_check cannot run: %s", ob_errmsg(e));
      c->integrity++;
      ob_close(e);
      return -1;
    }
    if (rc > 0 && !my_violations) {
      /* The engine's checker sees what this one does not: one is wrong. */
      fprintf(stderr, "harness: ob_check reports %d violations the campaign "
              "checker missed (%s)\n", rc, c->ctx);
      c->harness++;
    }
  }
  if (topup && c->backlog < BACKLOG_LOW) {
    size_t* list;
    size_t n = make_traffic(c, &list,
                            TOPUP_MIN + (size_t)(rnd(&c->rng) % TOPUP_SPAN));
    rc = enqueue_list(c, e, list, n);
    free(list);
    if (rc != 0) {
      vio(c, "I5: enqueue after reopen: %s: %s", ob_err_name(rc),
          ob_errmsg(e));
      c->integrity++;
      ob_close(e);
      return -1;
    }
    c->backlog += (int64_t)n;
  }
  if (drain) {
    ob_batch_result_t res;
    if (ob_register_payout(e) != 0 ||
        ob_register(e, OB_PAYOUT_MESSAGE_TYPE, RECORDER, quiet_recorder,
                    NULL) != 0) {
      c->harness++;
      ob_close(e);
      return -1;
    }
    do {
      rc = ob_run_once(e, &res);
      if (rc < 0) {
        vio(c, "I5: the engine cannot continue: %s: %s", ob_err_name(rc),
            ob_errmsg(e));
        c->integrity++;
        ob_close(e);
        return -1;
      }
    } while (res.claimed > 0);
  }
  ob_close(e);
  return 0;
}

/* Drain the queue in the supervisor and check that every delivery that was
** queued or handled ends handled exactly once (the end state of an epoch). */
static void drain_check(camp_t* c) {
  chk_t r;
  check(c, &r);
  if (r.bad) return;
  if (reopen(c, 0, 0, 1, 0) != 0) return;
  check(c, &r);
  if (r.bad) return;
  if (r.queue != 0) {
    vio(c, "%lld rows still queued after the drain", (long long)r.queue);
    c->harness++;
  }
  for (size_t i = 0; i < c->nev; i++)
    if ((c->st[i] & S_ENQ) && c->npay[i] == 0 && !(c->st[i] & (S_LOST | S_VREP))) {
      c->st[i] |= S_VREP;
      c->lost_vanished++;
      vio(c, "LOST delivery of event %s: never handled", c->ev[i].id);
    }
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

static void epoch_begin(camp_t* c) {
  remove_db(c);
  c->epoch++;
  c->eseed = mix(c->seed ^ mix((uint64_t)c->epoch * 0xE90C4ULL));
  c->rng = mix(c->eseed ^ 0x7AFF1CULL); /* the epoch's traffic */
  c->nev = 0;
  c->backlog = 0;
  c->epoch_cycles = 0;
  c->epoch_v0 = violations(c);
  snprintf(c->ctx, sizeof c->ctx, "epoch %d start", c->epoch);
  if (reopen(c, 0, 1, 0, 0) != 0) {
    fprintf(stderr, "harness: cannot create the database %s\n", c->db);
    exit(2);
  }
}

/* ---- the random campaign --------------------------------------------------------- */

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
    case PLSIM_EXIT_WRITE_CRASH: c->x_write++; return 0;
    case W_OPEN_FAILED:
    case W_RUN_FAILED:
    case W_ENQUEUE:
      vio(c, "I5: the engine failed in the worker (exit %d)",
          WEXITSTATUS(status));
      c->integrity++;
      c->x_open_fail++;
      return 1;
    case W_UNEXPECTED:
      vio(c, "a valid message was retried or failed in the worker");
      c->unexpected++;
      return 1;
    default:
      fprintf(stderr, "harness: worker exit %d (%s)\n", WEXITSTATUS(status),
              c->ctx);
      c->harness++;
      return -1;
  }
}

static void add_restore_stats(camp_t* c, const plsim_restore_stats_t* s) {
  c->r_records += s->records;
  c->r_applied += s->applied;
  c->r_torn += s->torn;
  c->r_lost += s->lost;
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

static void random_cycle(camp_t* c) {
  wcfg_t w;
  chk_t r;
  int kind, kill_ms = -1, hung, status, ek, skip_open, engine_check, rc;
  int64_t t;
  uint64_t torn_seed;
  int64_t v_before = violations(c);
  char crash[48];

  uint64_t cr;

  memset(&w, 0, sizeof w);
  /* Every parameter of cycle N comes from (seed, N) alone, so a cycle's
  ** parameters do not depend on what earlier cycles did. */
  c->cycles++;
  cr = mix(c->seed ^ mix((uint64_t)c->cycles * 0x51ED27ULL));
  kind = c->mode == MODE_KILL    ? KIND_KILL
         : c->mode == MODE_POWER ? KIND_POWER
         : c->mode == MODE_TORN  ? KIND_TORN
                                 : (int)(rnd(&cr) % 3);
  if (kind == KIND_KILL || rnd(&cr) % 2 == 0) {
    kill_ms = (int)(rnd(&cr) % (KILL_MAX_MS + 1));
    snprintf(crash, sizeof crash, "SIGKILL after %d ms", kill_ms);
  } else {
    w.crash_sync = 1 + (int64_t)(rnd(&cr) % SYNC_K_MAX);
    snprintf(crash, sizeof crash, "crash before sync %lld",
             (long long)w.crash_sync);
  }
  w.shim = kind != KIND_KILL;
  w.batch = rnd(&cr) % 2 ? 1 : 2 + (int)(rnd(&cr) % 31);
  if (c->batch > 0) w.batch = c->batch;
  w.ckpt_every = rnd(&cr) % 3 == 0 ? 0 : 4 + (int)(rnd(&cr) % 40);
  w.seed = rnd(&cr);
  torn_seed = rnd(&cr);
  skip_open = rnd(&cr) % 3 == 0;
  engine_check = rnd(&cr) % 20 == 0;

  c->epoch_cycles++;
  if (kind == KIND_KILL) c->k_kill++;
  else if (kind == KIND_POWER) c->k_power++;
  else c->k_torn++;
  snprintf(c->ctx, sizeof c->ctx,
           "cycle %ld (epoch %d, %s, %s, batch %d, checkpoint every %d, "
           "torn seed %llu)",
           c->cycles, c->epoch, kind_names[kind], crash, w.batch, w.ckpt_every,
           (unsigned long long)torn_seed);

  t = mono_ms();
  status = run_worker(c, &w, kill_ms, &hung);
  c->ms_worker += mono_ms() - t;
  ek = exit_kind(c, status, hung);
  if (ek < 0) return;

  t = mono_ms();
  if (kind == KIND_KILL) {
    /* A process crash: the OS keeps everything; nothing to restore. */
  } else {
    plsim_restore_stats_t rs;
    if (plsim_restore(c->dir, kind == KIND_TORN, torn_seed, &rs) != 0) {
      c->harness++;
      return;
    }
    add_restore_stats(c, &rs);
  }
  c->ms_restore += mono_ms() - t;

  t = mono_ms();
  check(c, &r);
  c->ms_check += mono_ms() - t;
  if (r.new_lost > 0) c->lost_cycles++;
  if (r.bad) {
    keep_failed_db(c);
    epoch_begin(c); /* a broken database proves nothing more */
    return;
  }
  /* I5: a third of the time the next worker reopens the crashed database
  ** itself (WAL recovery under the shim); otherwise the supervisor does,
  ** and tops the queue up. */
  if (!skip_open || c->backlog < BACKLOG_LOW || engine_check) {
    t = mono_ms();
    rc = reopen(c, engine_check, 1, 0, violations(c) > c->epoch_v0);
    c->ms_reopen += mono_ms() - t;
    if (rc != 0) {
      keep_failed_db(c);
      epoch_begin(c);
      return;
    }
  }
  if (violations(c) > v_before) keep_failed_db(c);
}

static void progress(camp_t* c, int force) {
  static int64_t last;
  int64_t now = mono_ms();
  if (c->quiet || (!force && now - last < 10000)) return;
  last = now;
  fprintf(stderr,
          "  [%.0f s] cycles %ld (kill %ld, power %ld, torn %ld), epoch %d, "
          "acked %lld, violations %lld\n",
          (double)(now - c->t0) / 1000.0, c->cycles, c->k_kill, c->k_power,
          c->k_torn, c->epoch, (long long)c->acked,
          (long long)violations(c));
}

static void random_campaign(camp_t* c) {
  epoch_begin(c);
  while (c->cycles < c->cycles_wanted) {
    if (c->harness > 0) return;
    if (c->stop_on_violation && violations(c) > 0) break;
    if (c->epoch_cycles >= c->reset_every) {
      snprintf(c->ctx, sizeof c->ctx, "epoch %d final drain", c->epoch);
      drain_check(c);
      epoch_begin(c);
    }
    random_cycle(c);
    progress(c, 0);
  }
  if (c->harness == 0) {
    snprintf(c->ctx, sizeof c->ctx, "epoch %d final drain", c->epoch);
    drain_check(c);
  }
}

/* ---- exhaustive crash points --------------------------------------------------- */

static void exh_reset(camp_t* c, uint64_t eseed) {
  remove_db(c);
  c->eseed = eseed;
  c->nev = 0;
  c->norder = 0;
  for (int i = 0; i < SCRIPT_EVENTS; i++) new_event(c);
}

/* The handled set must be a prefix of the reference run's commit order. */
static void prefix_check(camp_t* c, const size_t* ref, size_t nref) {
  size_t m = 0;
  for (size_t i = 0; i < c->nev; i++) m += c->npay[i] > 0;
  for (size_t i = 0; i < m && i < nref; i++)
    if (c->npay[ref[i]] == 0) {
      c->not_prefix++;
      vio(c, "the state is not a prefix of the commits: %zu events handled "
          "but event %s (commit #%zu) is not", m, c->ev[ref[i]].id, i + 1);
      return;
    }
  if (m > nref) {
    c->not_prefix++;
    vio(c, "%zu events handled, more than the reference run's %zu", m, nref);
  }
}

static void exh_case(camp_t* c, uint64_t eseed, int64_t k_sync,
                     int64_t k_write, int torn, uint64_t torn_seed,
                     const size_t* ref, size_t nref) {
  wcfg_t w;
  chk_t r;
  int hung, status, ek;
  plsim_restore_stats_t rs;
  int64_t v_before = violations(c);
  exh_reset(c, eseed);
  memset(&w, 0, sizeof w);
  w.shim = 1;
  w.script = 1;
  w.crash_sync = k_sync;
  w.crash_write = k_write;
  w.seed = mix(eseed ^ (uint64_t)k_sync ^ ((uint64_t)k_write << 20));
  c->cycles++;
  if (torn) c->k_torn++;
  else c->k_power++;
  if (torn)
    snprintf(c->ctx, sizeof c->ctx, "exhaustive: crash before %s %lld, torn "
             "restore, seed %llu", k_sync ? "sync" : "write",
             (long long)(k_sync ? k_sync : k_write),
             (unsigned long long)torn_seed);
  else
    snprintf(c->ctx, sizeof c->ctx, "exhaustive: crash before sync %lld, "
             "strict restore", (long long)k_sync);
  status = run_worker(c, &w, -1, &hung);
  ek = exit_kind(c, status, hung);
  if (ek < 0) return;
  if (ek == 0 && !(WIFEXITED(status) &&
                   WEXITSTATUS(status) == (k_sync ? PLSIM_EXIT_SYNC_CRASH
                                                  : PLSIM_EXIT_WRITE_CRASH))) {
    fprintf(stderr, "harness: the scripted workload is not deterministic: "
            "no crash point at %s\n", c->ctx);
    c->harness++;
    return;
  }
  if (plsim_restore(c->dir, torn, torn_seed, &rs) != 0) {
    c->harness++;
    return;
  }
  add_restore_stats(c, &rs);
  check(c, &r);
  if (r.new_lost > 0) c->lost_cycles++;
  if (r.bad) return;
  prefix_check(c, ref, nref);
  /* I5 and the end state: reopen, check, drain, check again. */
  if (reopen(c, 1, 0, 0, violations(c) > v_before) != 0) return;
  drain_check(c);
}

static void exhaustive(camp_t* c) {
  wcfg_t w;
  chk_t r;
  int hung, status;
  uint64_t eseed = mix(c->seed ^ 0xE4A);
  size_t* ref;
  size_t nref;
  int64_t S, W;

  /* The reference run: no crash, the simulator verifying itself. */
  exh_reset(c, eseed);
  c->order = xcalloc(64, sizeof *c->order);
  c->order_cap = 64;
  memset(&w, 0, sizeof w);
  w.shim = 1;
  w.script = 1;
  w.verify = 1;
  w.seed = mix(eseed);
  snprintf(c->ctx, sizeof c->ctx, "exhaustive: reference run");
  status = run_worker(c, &w, -1, &hung);
  if (hung || !WIFEXITED(status) || WEXITSTATUS(status) != 0 || !c->w_stats) {
    fprintf(stderr, "harness: the reference run failed (status 0x%x)\n",
            status);
    c->harness++;
    return;
  }
  S = c->w_syncs;
  W = c->w_writes;
  nref = c->norder;
  ref = xcalloc(nref, sizeof *ref);
  memcpy(ref, c->order, nref * sizeof *ref);
  if (plsim_restore(c->dir, 0, 0, NULL) != 0) {
    c->harness++;
    free(ref);
    return;
  }
  check(c, &r);
  if (nref != SCRIPT_EVENTS || r.bad || r.payouts != SCRIPT_EVENTS ||
      r.queue != 0) {
    fprintf(stderr, "harness: the reference run handled %zu of %d events "
            "(payouts %lld, queue %lld)\n", nref, SCRIPT_EVENTS,
            (long long)r.payouts, (long long)r.queue);
    /* With a mutant this may be the mutant's doing; go on and count. */
    if (c->mutant == MUT_NONE) c->harness++;
  }
  printf("exhaustive: the scripted workload (%d events, %zu deliveries) "
         "makes S = %lld syncs and W = %lld writes; %d torn seeds per "
         "crash point%s\n", SCRIPT_EVENTS,
         sizeof script_list / sizeof script_list[0], (long long)S,
         (long long)W, c->torn_seeds,
         c->write_points ? ", plus a torn crash before every write" : "");
  fflush(stdout);
  if (c->mutant == MUT_NONE && c->harness > 0) {
    free(ref);
    return;
  }
  for (int64_t k = 1; k <= S; k++) {
    exh_case(c, eseed, k, 0, 0, 0, ref, nref);
    for (int t = 1; t <= c->torn_seeds; t++)
      exh_case(c, eseed, k, 0, 1, mix(c->seed ^ ((uint64_t)k << 8) ^ (uint64_t)t),
               ref, nref);
    if (c->harness > 0) break;
    if (c->stop_on_violation && violations(c) > 0) break;
    progress(c, 0);
  }
  for (int64_t k = 1; c->write_points && k <= W && c->harness == 0; k++) {
    exh_case(c, eseed, 0, k, 1, mix(c->seed ^ ((uint64_t)k << 24)), ref, nref);
    if (c->stop_on_violation && violations(c) > 0) break;
    progress(c, 0);
  }
  free(ref);
}

/* ---- main ----------------------------------------------------------------------- */

static void usage(FILE* f) {
  fprintf(f,
          "usage: ob-crash-campaign --seed S --cycles N\n"
          "         [--mode kill|power|torn|mixed|exhaustive] (mixed)\n"
          "         [--mutant sync-normal|ack-before-commit|split-claim]\n"
          "         [--batch B] (1..%d; default: 1 or 2-32 at random)\n"
          "         [--reset-every R] (200 cycles per database)\n"
          "         [--torn-seeds T] (exhaustive: 4) [--write-points]\n"
          "         [--dir D] [--keep] [--quiet] [--stop-on-violation]\n"
          "exit status: 0 no violation, 1 violations, 2 harness failure\n",
          MAX_BATCH);
}

static int lookup(const char* s, const char* const* names, int n) {
  for (int i = 0; i < n; i++)
    if (strcmp(s, names[i]) == 0) return i;
  return -1;
}

#ifndef OB_CAMPAIGN_SPLIT_CLAIM_BUILD
/* The split-claim mutant lives in its own binary (a mutant library). */
static void exec_split_claim(char** argv) {
  char self[PATH_MAX], target[PATH_MAX + 32];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  char* slash;
  if (n <= 0) {
    perror("readlink /proc/self/exe");
    exit(2);
  }
  self[n] = '\0';
  slash = strrchr(self, '/');
  if (slash) *slash = '\0';
  snprintf(target, sizeof target, "%s/ob-crash-campaign-split-claim", self);
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
      {"batch", required_argument, NULL, 'b'},
      {"reset-every", required_argument, NULL, 'r'},
      {"torn-seeds", required_argument, NULL, 't'},
      {"write-points", no_argument, NULL, 'w'},
      {"dir", required_argument, NULL, 'd'},
      {"keep", no_argument, NULL, 'k'},
      {"quiet", no_argument, NULL, 'q'},
      {"stop-on-violation", no_argument, NULL, 'x'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  camp_t* c = xcalloc(1, sizeof *c);
  int opt, have_seed = 0, have_cycles = 0, rc;
  double secs;

  c->mode = MODE_MIXED;
  c->reset_every = 200;
  c->torn_seeds = 4;
  while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
    switch (opt) {
      case 's': c->seed = strtoull(optarg, NULL, 0); have_seed = 1; break;
      case 'n': c->cycles_wanted = atol(optarg); have_cycles = 1; break;
      case 'm':
        c->mode = lookup(optarg, mode_names, 5);
        if (c->mode < 0) {
          usage(stderr);
          return 2;
        }
        break;
      case 'M':
        c->mutant = lookup(optarg, mutant_names, 4);
        if (c->mutant < 0) {
          if (strcmp(optarg, "published-before-ack") == 0)
            fprintf(stderr, "published-before-ack is the relay's mutant; "
                    "run ob-crash-campaign-relay --mutant "
                    "publish-before-2xx\n");
          usage(stderr);
          return 2;
        }
        break;
      case 'b': c->batch = atoi(optarg); break;
      case 'r': c->reset_every = atoi(optarg); break;
      case 't': c->torn_seeds = atoi(optarg); break;
      case 'w': c->write_points = 1; break;
      case 'd': c->dir = xstrdup(optarg); break;
      case 'k': c->keep = 1; break;
      case 'q': c->quiet = 1; break;
      case 'x': c->stop_on_violation = 1; break;
      case 'h': usage(stdout); return 0;
      default: usage(stderr); return 2;
    }
  }
  if (!have_seed || (!have_cycles && c->mode != MODE_EXHAUSTIVE) ||
      c->cycles_wanted < 0 || c->batch < 0 || c->batch > MAX_BATCH ||
      c->reset_every < 1 || c->torn_seeds < 0 || optind != argc) {
    usage(stderr);
    return 2;
  }
#ifdef OB_CAMPAIGN_SPLIT_CLAIM_BUILD
  if (c->mutant != MUT_SPLIT_CLAIM) {
    fprintf(stderr, "this binary is linked with the split-claim MUTANT "
            "library; run ob-crash-campaign instead\n");
    return 2;
  }
#else
  if (c->mutant == MUT_SPLIT_CLAIM) exec_split_claim(argv);
#endif

  if (c->dir == NULL) {
    const char* base = getenv("TMPDIR");
    char buf[PATH_MAX];
    snprintf(buf, sizeof buf, "%s/ob-crash-campaign-XXXXXX",
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
  c->rng = c->seed * 0x9E3779B97F4A7C15ULL + 0x1234567ULL;
  c->t0 = mono_ms();
  printf("ob-crash-campaign: seed %llu, mode %s, %s%ld cycles, mutant %s, "
         "batch %s, database reset every %d cycles, dir %s\n",
         (unsigned long long)c->seed, mode_names[c->mode],
         c->mode == MODE_EXHAUSTIVE ? "(ignored) " : "", c->cycles_wanted,
         mutant_names[c->mutant], c->batch ? "fixed" : "1 or 2-32",
         c->reset_every, c->dir);
  printf("reproduce: ob-crash-campaign --seed %llu --cycles %ld --mode %s%s%s\n",
         (unsigned long long)c->seed, c->cycles_wanted, mode_names[c->mode],
         c->mutant ? " --mutant " : "", c->mutant ? mutant_names[c->mutant] : "");
  fflush(stdout);

  if (c->mode == MODE_EXHAUSTIVE) exhaustive(c);
  else random_campaign(c);

  secs = (double)(mono_ms() - c->t0) / 1000.0;
  progress(c, 1);
  printf("attempted %lld, acked %lld, lost %lld, duplicated-deliveries %lld, "
         "duplicated-effects %lld, atomicity-violations %lld, "
         "integrity-failures %lld, cycles %ld (kill %ld, power %ld, torn %ld)\n",
         (long long)c->attempted, (long long)c->acked,
         (long long)(c->lost_acked + c->lost_vanished),
         (long long)c->dup_deliveries, (long long)c->dup_effects,
         (long long)(c->atomicity + c->not_prefix), (long long)c->integrity,
         c->cycles, c->k_kill, c->k_power, c->k_torn);
  printf("details: seed %llu, %.1f s (%.1f cycles/s), %d databases; workers "
         "ended by SIGKILL %ld, crash before sync %ld, crash before write %ld, "
         "clean exit %ld, engine failure %ld; lost: acked %lld in %ld cycles, "
         "enqueued-and-vanished %lld; unexpected failures %lld; torn restores "
         "replayed %lld pending records (%lld whole, %lld torn, %lld lost); "
         "deliveries %lld\n",
         (unsigned long long)c->seed, secs, secs > 0 ? c->cycles / secs : 0.0,
         c->mode == MODE_EXHAUSTIVE ? (int)c->cycles : c->epoch, c->x_sigkill,
         c->x_sync, c->x_write, c->x_clean, c->x_open_fail,
         (long long)c->lost_acked, c->lost_cycles,
         (long long)c->lost_vanished, (long long)c->unexpected,
         (long long)c->r_records, (long long)c->r_applied,
         (long long)c->r_torn, (long long)c->r_lost,
         (long long)c->deliveries);
  if (c->mode != MODE_EXHAUSTIVE)
    printf("time: workers %.1f s, restores %.1f s, checks %.1f s, "
           "reopen+enqueue %.1f s\n", (double)c->ms_worker / 1000.0,
           (double)c->ms_restore / 1000.0, (double)c->ms_check / 1000.0,
           (double)c->ms_reopen / 1000.0);
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
  free(c->npay);
  free(c->nout);
  free(c->order);
  free(c->db);
  free(c->dir);
  free(c);
  return rc;
}
