/* SPDX-License-Identifier: Apache-2.0 */
/* ob-crash-campaign: the crash and power-loss campaign (T1-T4, invariants
** I1-I5: the list at the top of docs/reliability.md). See
** docs/reliability.md.
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
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "oncebox.h"
#include "oncebox_payout.h"
#include "tests/crash/campaign_common.h"
#include "tests/crash/plsim.h"

#define MAX_BATCH CAMP_MAX_ACKS /* a batch's acks: one atomic pipe write */
#define KILL_MAX_MS 60         /* SIGKILL after U(0, 60 ms) */
#define SYNC_K_MAX 80          /* crash before sync k, k in 1..80 */
#define BACKLOG_LOW 300        /* top the queue up below this many rows */
#define TOPUP_MIN 200          /* new events per top-up: 200..400 */
#define TOPUP_SPAN 201
#define DUP_PERCENT 25         /* events delivered 2-3 times */
#define SCRIPT_EVENTS 15       /* exhaustive: 15 events, 20 deliveries */

/* Worker exit codes of this campaign (the shared ones, 10-15, and their
** meaning: campaign_common.h). */
#define W_ENQUEUE 16           /* exhaustive script: enqueue failed: I5 */

/* ob-crash-campaign-split-claim: this file linked with the split-claim
** mutant library (core/engine/engine.c, OB_MUTANT_SPLIT_CLAIM). */
#ifdef OB_CAMPAIGN_SPLIT_CLAIM_BUILD
#define IN_MUTANT_BINARY 1
#else
#define IN_MUTANT_BINARY 0
#endif

/* kill, power and torn are KIND_KILL, KIND_POWER and KIND_TORN. */
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
  char id[OB_UUID_BUFLEN];
  char pay[OB_UUID_BUFLEN];
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
  camp_common_t cm;          /* first: callbacks cast &c->cm back to c */
  /* options */
  int batch, torn_seeds, write_points;
  uint64_t rng;

  /* the current epoch (database) */
  int epoch;
  uint64_t eseed;
  ev_t* ev;
  uint8_t *st, *cf, *npay, *nout;
  size_t nev, cap;
  int64_t backlog;
  long epoch_cycles;

  /* the current worker: cm.w_stat = its syncs and writes */
  size_t* order;             /* exhaustive: acked event indexes, in order */
  size_t norder, order_cap;

  /* totals */
  int64_t attempted, deliveries, dup_deliveries, acked;
  int64_t lost_acked, lost_vanished, dup_effects, atomicity, integrity;
  int64_t unexpected, not_prefix;
  long x_write, x_open_fail;
  long lost_cycles;
  int64_t epoch_v0;          /* violations() when the epoch began */
  int64_t ms_worker, ms_restore, ms_check, ms_reopen; /* where time goes */
} camp_t;

static int64_t violations(const camp_t* c) {
  return c->lost_acked + c->lost_vanished + c->dup_effects + c->atomicity +
         c->integrity + c->unexpected + c->not_prefix;
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
  ensure_events(c, i + 1);
  camp_event_ids(c->eseed, i, c->ev[i].id, c->ev[i].pay);
  c->st[i] = 0;
  return c->nev++;
}

static long event_index(const camp_t* c, const char* s) {
  long i = camp_event_tail(s);
  if (i < 0 || (size_t)i >= c->nev || memcmp(c->ev[i].id, s, 36) != 0)
    return -1;
  return i;
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
      camp_event_body(c->eseed, idx, c->ev[idx].pay, bodies[i],
                      sizeof bodies[i]);
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
  *list = camp_xcalloc(cap, sizeof **list);
  for (size_t i = 0; i < events; i++) {
    size_t idx = new_event(c);
    int copies = camp_rnd(&c->rng) % 100 < DUP_PERCENT
                     ? 2 + (int)(camp_rnd(&c->rng) % 2)
                     : 1;
    for (int k = 0; k < copies; k++) (*list)[n++] = idx;
  }
  for (size_t i = 0; i < redeliver && c->nev > events; i++) {
    size_t old = c->nev - events, idx = 0;
    for (int tries = 0; tries < 8; tries++) {
      idx = (size_t)(camp_rnd(&c->rng) % old);
      if (c->st[idx] & S_ACKED) break;
    }
    (*list)[n++] = idx;
  }
  for (size_t i = n; i > 1; i--) {
    size_t j = (size_t)(camp_rnd(&c->rng) % i), t = (*list)[i - 1];
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

static ob_engine_t* open_engine(camp_t* c, int batch, camp_clock_t* sc,
                                char* err, size_t errlen) {
  ob_options_t o;
  ob_engine_t* e = NULL;
  ob_options_init(&o);
  o.db_path = c->cm.db;
  o.batch_size = batch;
  o.busy_timeout_ms = 10000;
  camp_clock_init(sc, camp_rnd(&c->rng));
  o.clock = &sc->clock;
  if (ob_open(&e, &o, err, errlen) < 0) return NULL;
  return e;
}

static void print_ob_violation(void* arg, const char* v) {
  camp_t* c = arg;
  camp_vio(&c->cm, "ob_check: %s", v);
}

/* ---- the worker --------------------------------------------------------------- */

static ob_engine_t* worker_open(camp_t* c, int batch, camp_clock_t* sc) {
  ob_options_t o;
  ob_engine_t* e = NULL;
  char err[512];
  ob_options_init(&o);
  o.db_path = c->cm.db;
  o.batch_size = batch;
  o.busy_timeout_ms = 10000;
  o.clock = &sc->clock;
  if (c->cm.mutant == MUT_SYNC_NORMAL)
    o.synchronous = OB_SYNC_NORMAL; /* MUTANT */
  if (ob_open(&e, &o, err, sizeof err) < 0) {
    fprintf(stderr, "worker (%s): ob_open: %s\n", c->cm.ctx, err);
    _exit(W_OPEN_FAILED);
  }
  return e;
}

/* ob_run_once until the queue is empty (max_commits < 0) or max_commits
** batches committed. Acks go to the pipe after each successful return. */
static int worker_handle(camp_t* c, ob_engine_t* e, camp_recorder_t* rec,
                         sqlite3* ck, int ckpt_every, int max_commits) {
  int commits = 0;
  while (max_commits < 0 || commits < max_commits) {
    ob_batch_result_t res;
    int64_t at;
    int rc;
    rec->n = 0;
    rc = ob_run_once(e, &res);
    if (rc == OB_EBUSY) continue;
    if (rc < 0) {
      fprintf(stderr, "worker (%s): ob_run_once: %s: %s\n", c->cm.ctx,
              ob_err_name(rc), ob_errmsg(e));
      _exit(W_RUN_FAILED);
    }
    camp_recorder_flush(rec);
    if (res.failed > 0 || res.retried > 0) {
      fprintf(stderr, "worker (%s): a valid message was %s\n", c->cm.ctx,
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
      camp_checkpoint(ck, camp_checkpoint_mode(commits / ckpt_every),
                      c->cm.ctx);
  }
  return commits;
}

/* A recorder for this worker (ack-before-commit: early acks). */
static void recorder_init(camp_t* c, camp_recorder_t* rec, int fd) {
  memset(rec, 0, sizeof *rec);
  rec->max = MAX_BATCH;
  rec->fd = fd;
  rec->early = c->cm.mutant == MUT_ACK_BEFORE_COMMIT;
}

/* The random campaign's worker: handle the queue until killed or empty. */
static void worker_main(camp_t* c, const wcfg_t* w, int fd) {
  camp_clock_t sc;
  camp_recorder_t rec;
  sqlite3* ck = NULL;
  ob_engine_t* e;
  recorder_init(c, &rec, fd);
  camp_clock_init(&sc, w->seed);
  e = worker_open(c, w->batch, &sc);
  camp_write_rec(fd, 'O', "", 0);
  camp_register(e, &rec);
  if (w->ckpt_every > 0) ck = camp_open_checkpointer(c->cm.db, c->cm.ctx);
  worker_handle(c, e, &rec, ck, w->ckpt_every, -1);
  if (ck) sqlite3_close(ck);
  ob_close(e);
  camp_send_stats(fd, plsim_writes());
  _exit(0);
}

/* Exhaustive: enqueue deliveries [from, to) of the script and report them. */
static void script_enqueue(camp_t* c, ob_engine_t* e, const size_t* list,
                           size_t from, size_t to, int fd) {
  char ids[SCRIPT_EVENTS + 8][36];
  size_t n = 0;
  if (enqueue_list(c, e, list + from, to - from) != 0) {
    fprintf(stderr, "worker (%s): enqueue: %s\n", c->cm.ctx, ob_errmsg(e));
    _exit(W_ENQUEUE);
  }
  for (size_t i = from; i < to; i++) memcpy(ids[n++], c->ev[list[i]].id, 36);
  camp_write_rec(fd, 'E', ids, n * 36);
}

/* The scripted workload: a fresh database; 12 deliveries enqueued, six
** batches of 1, a checkpoint by a second connection, 8 more deliveries, the
** engine closed (WAL deleted) and reopened at batch 4, the rest handled, a
** clean close. */
static const size_t script_list[] = {0, 1, 2, 3, 2,  4,  5,  6,  5,  7,
                                     8, 9, 8, 10, 11, 12, 11, 13, 14, 14};

static void script_main(camp_t* c, const wcfg_t* w, int fd) {
  camp_clock_t sc;
  camp_recorder_t rec;
  sqlite3* ck;
  ob_engine_t* e;
  recorder_init(c, &rec, fd);
  camp_clock_init(&sc, w->seed);
  e = worker_open(c, 1, &sc);
  camp_write_rec(fd, 'O', "", 0);
  camp_register(e, &rec);
  script_enqueue(c, e, script_list, 0, 12, fd);
  worker_handle(c, e, &rec, NULL, 0, 6);
  ck = camp_open_checkpointer(c->cm.db, c->cm.ctx);
  camp_checkpoint(ck, SQLITE_CHECKPOINT_PASSIVE, c->cm.ctx);
  sqlite3_close(ck);
  script_enqueue(c, e, script_list, 12, 20, fd);
  ob_close(e);
  e = worker_open(c, 4, &sc);
  camp_register(e, &rec);
  worker_handle(c, e, &rec, NULL, 0, -1);
  ob_close(e);
  camp_send_stats(fd, plsim_writes());
  _exit(0);
}

/* ---- the supervisor: run a worker, read its pipe ---------------------------- */

/* The worker's records: 'E' ids enqueued (the script), 'A' ids acked. */
static void on_id(camp_common_t* cm, char type, const char* id) {
  camp_t* c = (camp_t*)cm;
  long idx = event_index(c, id);
  if (idx < 0) {
    fprintf(stderr, "harness: the worker reported unknown id %s\n", id);
    c->cm.harness++;
    return;
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

/* In the forked child: the scripted workload or the random one. */
static void worker_child(camp_common_t* cm, const void* cfg, int fd) {
  const wcfg_t* w = cfg;
  if (w->script) script_main((camp_t*)cm, w, fd);
  worker_main((camp_t*)cm, w, fd);
}

/* Run a worker as camp_run_worker does, on plsim if w->shim. */
static int run_worker(camp_t* c, const wcfg_t* w, int kill_ms, int* hung) {
  plsim_config_t pc;
  memset(&pc, 0, sizeof pc);
  pc.crash_at_sync = w->crash_sync;
  pc.crash_at_write = w->crash_write;
  pc.verify = w->verify;
  return camp_run_worker(&c->cm, worker_child, w, w->shim ? &pc : NULL,
                         kill_ms, hung);
}

/* ---- the checker (stock VFS, read-only) ------------------------------------- */

typedef struct chk_s {
  int bad;            /* integrity failure (incl. a checker failure) */
  int64_t queue, failed, payouts, outbox, dedup;
  int64_t new_lost;   /* violations found by this check */
} chk_t;

static void unknown_row(camp_t* c, const char* table, const char* a,
                        const char* b) {
  c->atomicity++;
  camp_vio(&c->cm, "%s row for an unknown event: %s / %s", table,
           a ? a : "(null)", b ? b : "(null)");
}

static void row_dedup(camp_common_t* cm, sqlite3_stmt* st) {
  camp_t* c = (camp_t*)cm;
  const char* consumer = (const char*)sqlite3_column_text(st, 0);
  const char* id = (const char*)sqlite3_column_text(st, 1);
  long i = event_index(c, id);
  if (i < 0 || consumer == NULL) {
    unknown_row(c, "processed_message", consumer, id);
  } else if (strcmp(consumer, OB_PAYOUT_CONSUMER) == 0) {
    c->cf[i] |= C_DEDUP;
  } else if (strcmp(consumer, CAMP_RECORDER) == 0) {
    c->cf[i] |= C_REC;
  } else {
    unknown_row(c, "processed_message", consumer, id);
  }
}

static void row_payout(camp_common_t* cm, sqlite3_stmt* st) {
  camp_t* c = (camp_t*)cm;
  const char* id = (const char*)sqlite3_column_text(st, 0);
  const char* pay = (const char*)sqlite3_column_text(st, 1);
  long i = event_index(c, id);
  if (i < 0 || pay == NULL || strcmp(pay, c->ev[i].pay) != 0) {
    unknown_row(c, "merchant_payout", id, pay);
    return;
  }
  if (c->npay[i] < 255) c->npay[i]++;
}

static void row_outbox(camp_common_t* cm, sqlite3_stmt* st) {
  camp_t* c = (camp_t*)cm;
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

static void row_queue(camp_common_t* cm, sqlite3_stmt* st) {
  camp_t* c = (camp_t*)cm;
  const char* id = (const char*)sqlite3_column_text(st, 0);
  long i = event_index(c, id);
  if (i < 0) {
    unknown_row(c, "queue", id, NULL);
    return;
  }
  c->cf[i] |= C_QUEUED;
}

/* Check the database as the crash (and restore) left it. */
static void check(camp_t* c, chk_t* r) {
  sqlite3* db;
  int64_t n;
  int lost_before = (int)(c->lost_acked + c->lost_vanished);
  memset(r, 0, sizeof *r);
  if (c->nev > 0) {
    memset(c->cf, 0, c->nev);
    memset(c->npay, 0, c->nev);
    memset(c->nout, 0, c->nev);
  }

  /* No statement writes (query_only); the scans read a lot (mmap). */
  db = camp_check_open(&c->cm,
                       "PRAGMA query_only=1; PRAGMA mmap_size=1073741824");
  if (db == NULL) goto bad;
  /* One read transaction: the scans agree with each other. */
  if (sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
    camp_vio(&c->cm, "checker: BEGIN: %s", sqlite3_errmsg(db));
    goto bad;
  }
  /* A crash before the schema was committed leaves an empty database:
  ** valid, and then nothing may have been acked or enqueued. */
  if (camp_count(db, "PRAGMA user_version", &c->cm, &n) != 0) goto bad;
  if (n == 0) {
    if (camp_count(db, "SELECT count(*) FROM sqlite_schema", &c->cm, &n) != 0)
      goto bad;
    if (n != 0) {
      camp_vio(&c->cm, "integrity: user_version 0 but %lld schema objects",
               (long long)n);
      goto bad;
    }
    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    sqlite3_close(db);
    db = NULL;
    goto evaluate;
  }
  /* The payout module's table comes with its own migration, which commits
  ** after oncebox's schema: a crash between the two leaves no table, and
  ** then no payout either (the handler is registered after it). */
  if (camp_count(db, "SELECT count(*) FROM sqlite_schema WHERE type ="
                     " 'table' AND name = 'merchant_payout'", &c->cm,
                 &n) != 0)
    goto bad;
  if (camp_scan(db, "SELECT consumer_name, message_id FROM processed_message",
                row_dedup, &c->cm) != 0 ||
      (n > 0 && camp_scan(db, "SELECT source_event_id, source_payment_id"
                              " FROM merchant_payout", row_payout,
                          &c->cm) != 0) ||
      camp_scan(db, "SELECT causation_id, event_type, aggregate_id"
                    " FROM outbox_event", row_outbox, &c->cm) != 0 ||
      camp_scan(db, "SELECT message_id FROM queue", row_queue, &c->cm) != 0 ||
      camp_count(db, "SELECT count(*) FROM queue", &c->cm, &r->queue) != 0 ||
      camp_count(db, "SELECT count(*) FROM failed_message", &c->cm,
                 &r->failed) != 0)
    goto bad;
  sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
  sqlite3_close(db);
  db = NULL;
  c->backlog = r->queue;

evaluate:
  if (r->failed != 0) {
    c->unexpected += r->failed;
    camp_vio(&c->cm, "%lld valid messages in the failure store",
             (long long)r->failed);
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
      camp_vio(&c->cm, "event %s: %d payouts, %d outbox rows", c->ev[i].id,
               c->npay[i], c->nout[i]);
    }
    /* I3: all or nothing. */
    if ((d || rec || p || o) && !(d && rec && p && o) &&
        !(c->st[i] & S_XREP)) {
      c->st[i] |= S_XREP;
      c->atomicity++;
      camp_vio(&c->cm,
               "event %s not atomic: dedup %d, recorder dedup %d, payout %d, "
               "outbox %d",
               c->ev[i].id, d, rec, p, o);
    }
    /* I1: acked means durable. */
    if ((c->st[i] & S_ACKED) && !p && !(c->st[i] & S_LOST)) {
      c->st[i] |= S_LOST;
      c->lost_acked++;
      camp_vio(&c->cm, "LOST acked event %s (no payout)", c->ev[i].id);
    }
    /* ... and a committed enqueue is never dropped unhandled. */
    if ((c->st[i] & S_ENQ) && !p && !(c->cf[i] & C_QUEUED) &&
        !(c->st[i] & (S_VREP | S_LOST))) {
      c->st[i] |= S_VREP;
      c->lost_vanished++;
      camp_vio(&c->cm,
               "LOST delivery of event %s: enqueued, no longer queued, never "
               "handled",
               c->ev[i].id);
    }
  }
  r->new_lost = c->lost_acked + c->lost_vanished - lost_before;
  return;

bad:
  if (db) sqlite3_close(db);
  r->bad = 1;
  c->integrity++;
}

/* I5 in the supervisor: the engine opens, its own check agrees, and it
** takes more work. Returns 0, or -1 (counted) if it cannot. */
static int reopen(camp_t* c, int engine_check, int topup, int drain,
                  int my_violations) {
  camp_clock_t sc;
  char err[512];
  ob_engine_t* e = open_engine(c, drain ? 64 : 1, &sc, err, sizeof err);
  int rc;
  if (e == NULL) {
    camp_vio(&c->cm, "I5: the engine does not reopen: %s", err);
    c->integrity++;
    return -1;
  }
  /* Before the check: the payout module registers its invariants with it. */
  if (ob_register_payout(e) != 0) {
    c->cm.harness++;
    ob_close(e);
    return -1;
  }
  if (engine_check) {
    rc = ob_check(e, my_violations ? NULL : print_ob_violation, c);
    if (rc < 0) {
      camp_vio(&c->cm, "I5: ob_check cannot run: %s", ob_errmsg(e));
      c->integrity++;
      ob_close(e);
      return -1;
    }
    if (rc > 0 && !my_violations) {
      /* The engine's checker sees what this one does not: one is wrong. */
      fprintf(stderr, "harness: ob_check reports %d violations the campaign "
              "checker missed (%s)\n", rc, c->cm.ctx);
      c->cm.harness++;
    }
  }
  if (topup && c->backlog < BACKLOG_LOW) {
    size_t* list;
    size_t n = make_traffic(
        c, &list, TOPUP_MIN + (size_t)(camp_rnd(&c->rng) % TOPUP_SPAN));
    rc = enqueue_list(c, e, list, n);
    free(list);
    if (rc != 0) {
      camp_vio(&c->cm, "I5: enqueue after reopen: %s: %s", ob_err_name(rc),
          ob_errmsg(e));
      c->integrity++;
      ob_close(e);
      return -1;
    }
    c->backlog += (int64_t)n;
  }
  if (drain) {
    ob_batch_result_t res;
    if (ob_register(e, OB_PAYOUT_MESSAGE_TYPE, CAMP_RECORDER, quiet_recorder,
                    NULL) != 0) {
      c->cm.harness++;
      ob_close(e);
      return -1;
    }
    do {
      rc = ob_run_once(e, &res);
      if (rc < 0) {
        camp_vio(&c->cm, "I5: the engine cannot continue: %s: %s",
                 ob_err_name(rc), ob_errmsg(e));
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
    camp_vio(&c->cm, "%lld rows still queued after the drain",
             (long long)r.queue);
    c->cm.harness++;
  }
  for (size_t i = 0; i < c->nev; i++)
    if ((c->st[i] & S_ENQ) && c->npay[i] == 0 && !(c->st[i] & (S_LOST | S_VREP))) {
      c->st[i] |= S_VREP;
      c->lost_vanished++;
      camp_vio(&c->cm, "LOST delivery of event %s: never handled", c->ev[i].id);
    }
}

/* ---- epochs -------------------------------------------------------------------- */

static void epoch_begin(camp_t* c) {
  camp_remove_db(&c->cm);
  c->epoch++;
  c->eseed = camp_mix(c->cm.seed ^ camp_mix((uint64_t)c->epoch * 0xE90C4ULL));
  c->rng = camp_mix(c->eseed ^ 0x7AFF1CULL); /* the epoch's traffic */
  c->nev = 0;
  c->backlog = 0;
  c->epoch_cycles = 0;
  c->epoch_v0 = violations(c);
  snprintf(c->cm.ctx, sizeof c->cm.ctx, "epoch %d start", c->epoch);
  if (reopen(c, 0, 1, 0, 0) != 0) {
    fprintf(stderr, "harness: cannot create the database %s\n", c->cm.db);
    exit(2);
  }
}

/* ---- the random campaign --------------------------------------------------------- */

/* The exit codes of this campaign's workers (camp_exit_kind). */
static int exit_code(camp_common_t* cm, int code) {
  camp_t* c = (camp_t*)cm;
  switch (code) {
    case PLSIM_EXIT_WRITE_CRASH: c->x_write++; return 0;
    case W_OPEN_FAILED:
    case W_RUN_FAILED:
    case W_ENQUEUE:
      camp_vio(&c->cm, "I5: the engine failed in the worker (exit %d)", code);
      c->integrity++;
      c->x_open_fail++;
      return 1;
    case W_UNEXPECTED:
      camp_vio(&c->cm, "a valid message was retried or failed in the worker");
      c->unexpected++;
      return 1;
    default: return CAMP_EXIT_UNKNOWN;
  }
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
  kind = camp_cycle_begin(&c->cm, &cr);
  if (kind == KIND_KILL || camp_rnd(&cr) % 2 == 0) {
    kill_ms = (int)(camp_rnd(&cr) % (KILL_MAX_MS + 1));
    snprintf(crash, sizeof crash, "SIGKILL after %d ms", kill_ms);
  } else {
    w.crash_sync = 1 + (int64_t)(camp_rnd(&cr) % SYNC_K_MAX);
    snprintf(crash, sizeof crash, "crash before sync %lld",
             (long long)w.crash_sync);
  }
  w.shim = kind != KIND_KILL;
  w.batch = camp_rnd(&cr) % 2 ? 1 : 2 + (int)(camp_rnd(&cr) % 31);
  if (c->batch > 0) w.batch = c->batch;
  w.ckpt_every = camp_rnd(&cr) % 3 == 0 ? 0 : 4 + (int)(camp_rnd(&cr) % 40);
  w.seed = camp_rnd(&cr);
  torn_seed = camp_rnd(&cr);
  skip_open = camp_rnd(&cr) % 3 == 0;
  engine_check = camp_rnd(&cr) % 20 == 0;

  c->epoch_cycles++;
  snprintf(c->cm.ctx, sizeof c->cm.ctx,
           "cycle %ld (epoch %d, %s, %s, batch %d, checkpoint every %d, "
           "torn seed %llu)",
           c->cm.cycles, c->epoch, camp_kind_names[kind], crash, w.batch,
           w.ckpt_every, (unsigned long long)torn_seed);

  t = camp_mono_ms();
  status = run_worker(c, &w, kill_ms, &hung);
  c->ms_worker += camp_mono_ms() - t;
  ek = camp_exit_kind(&c->cm, status, hung, exit_code);
  if (ek < 0) return;

  t = camp_mono_ms();
  if (kind == KIND_KILL) {
    /* A process crash: the OS keeps everything; nothing to restore. */
  } else if (camp_restore(&c->cm, kind == KIND_TORN, torn_seed) != 0) {
    return;
  }
  c->ms_restore += camp_mono_ms() - t;

  t = camp_mono_ms();
  check(c, &r);
  c->ms_check += camp_mono_ms() - t;
  if (r.new_lost > 0) c->lost_cycles++;
  if (r.bad) {
    camp_keep_failed_db(&c->cm);
    epoch_begin(c); /* a broken database proves nothing more */
    return;
  }
  /* I5: a third of the time the next worker reopens the crashed database
  ** itself (WAL recovery under the shim); otherwise the supervisor does,
  ** and tops the queue up. */
  if (!skip_open || c->backlog < BACKLOG_LOW || engine_check) {
    t = camp_mono_ms();
    rc = reopen(c, engine_check, 1, 0, violations(c) > c->epoch_v0);
    c->ms_reopen += camp_mono_ms() - t;
    if (rc != 0) {
      camp_keep_failed_db(&c->cm);
      epoch_begin(c);
      return;
    }
  }
  if (violations(c) > v_before) camp_keep_failed_db(&c->cm);
}

static void progress(camp_t* c, int force) {
  static int64_t last;
  int64_t now = camp_mono_ms();
  if (c->cm.quiet || (!force && now - last < 10000)) return;
  last = now;
  fprintf(stderr,
          "  [%.0f s] cycles %ld (kill %ld, power %ld, torn %ld), epoch %d, "
          "acked %lld, violations %lld\n",
          (double)(now - c->cm.t0) / 1000.0, c->cm.cycles, c->cm.k_kill,
          c->cm.k_power, c->cm.k_torn, c->epoch, (long long)c->acked,
          (long long)violations(c));
}

static void random_campaign(camp_t* c) {
  epoch_begin(c);
  while (c->cm.cycles < c->cm.cycles_wanted) {
    if (c->cm.harness > 0) return;
    if (c->cm.stop_on_violation && violations(c) > 0) break;
    if (c->epoch_cycles >= c->cm.reset_every) {
      snprintf(c->cm.ctx, sizeof c->cm.ctx, "epoch %d final drain", c->epoch);
      drain_check(c);
      epoch_begin(c);
    }
    random_cycle(c);
    progress(c, 0);
  }
  if (c->cm.harness == 0) {
    snprintf(c->cm.ctx, sizeof c->cm.ctx, "epoch %d final drain", c->epoch);
    drain_check(c);
  }
}

/* ---- exhaustive crash points --------------------------------------------------- */

static void exh_reset(camp_t* c, uint64_t eseed) {
  camp_remove_db(&c->cm);
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
      camp_vio(&c->cm,
               "the state is not a prefix of the commits: %zu events handled "
               "but event %s (commit #%zu) is not",
               m, c->ev[ref[i]].id, i + 1);
      return;
    }
  if (m > nref) {
    c->not_prefix++;
    camp_vio(&c->cm, "%zu events handled, more than the reference run's %zu", m,
             nref);
  }
}

static void exh_case(camp_t* c, uint64_t eseed, int64_t k_sync,
                     int64_t k_write, int torn, uint64_t torn_seed,
                     const size_t* ref, size_t nref) {
  wcfg_t w;
  chk_t r;
  int hung, status, ek;
  int64_t v_before = violations(c);
  exh_reset(c, eseed);
  memset(&w, 0, sizeof w);
  w.shim = 1;
  w.script = 1;
  w.crash_sync = k_sync;
  w.crash_write = k_write;
  w.seed = camp_mix(eseed ^ (uint64_t)k_sync ^ ((uint64_t)k_write << 20));
  c->cm.cycles++;
  if (torn) c->cm.k_torn++;
  else c->cm.k_power++;
  if (torn)
    snprintf(c->cm.ctx, sizeof c->cm.ctx,
             "exhaustive: crash before %s %lld, torn "
             "restore, seed %llu",
             k_sync ? "sync" : "write", (long long)(k_sync ? k_sync : k_write),
             (unsigned long long)torn_seed);
  else
    snprintf(c->cm.ctx, sizeof c->cm.ctx, "exhaustive: crash before sync %lld, "
             "strict restore", (long long)k_sync);
  status = run_worker(c, &w, -1, &hung);
  ek = camp_exit_kind(&c->cm, status, hung, exit_code);
  if (ek < 0) return;
  if (ek == 0 && !(WIFEXITED(status) &&
                   WEXITSTATUS(status) == (k_sync ? PLSIM_EXIT_SYNC_CRASH
                                                  : PLSIM_EXIT_WRITE_CRASH))) {
    fprintf(stderr, "harness: the scripted workload is not deterministic: "
            "no crash point at %s\n", c->cm.ctx);
    c->cm.harness++;
    return;
  }
  if (camp_restore(&c->cm, torn, torn_seed) != 0) return;
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
  uint64_t eseed = camp_mix(c->cm.seed ^ 0xE4A);
  size_t* ref;
  size_t nref;
  int64_t S, W;

  /* The reference run: no crash, the simulator verifying itself. */
  exh_reset(c, eseed);
  c->order = camp_xcalloc(64, sizeof *c->order);
  c->order_cap = 64;
  memset(&w, 0, sizeof w);
  w.shim = 1;
  w.script = 1;
  w.verify = 1;
  w.seed = camp_mix(eseed);
  snprintf(c->cm.ctx, sizeof c->cm.ctx, "exhaustive: reference run");
  status = run_worker(c, &w, -1, &hung);
  if (hung || !WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
      !c->cm.w_stats) {
    fprintf(stderr, "harness: the reference run failed (status 0x%x)\n",
            status);
    c->cm.harness++;
    return;
  }
  S = c->cm.w_stat[0];
  W = c->cm.w_stat[1];
  nref = c->norder;
  ref = camp_xcalloc(nref, sizeof *ref);
  memcpy(ref, c->order, nref * sizeof *ref);
  if (plsim_restore(c->cm.dir, 0, 0, NULL) != 0) {
    c->cm.harness++;
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
    if (c->cm.mutant == MUT_NONE) c->cm.harness++;
  }
  printf("exhaustive: the scripted workload (%d events, %zu deliveries) "
         "makes S = %lld syncs and W = %lld writes; %d torn seeds per "
         "crash point%s\n", SCRIPT_EVENTS,
         sizeof script_list / sizeof script_list[0], (long long)S,
         (long long)W, c->torn_seeds,
         c->write_points ? ", plus a torn crash before every write" : "");
  fflush(stdout);
  if (c->cm.mutant == MUT_NONE && c->cm.harness > 0) {
    free(ref);
    return;
  }
  for (int64_t k = 1; k <= S; k++) {
    exh_case(c, eseed, k, 0, 0, 0, ref, nref);
    for (int t = 1; t <= c->torn_seeds; t++)
      exh_case(c, eseed, k, 0, 1,
               camp_mix(c->cm.seed ^ ((uint64_t)k << 8) ^ (uint64_t)t), ref,
               nref);
    if (c->cm.harness > 0) break;
    if (c->cm.stop_on_violation && violations(c) > 0) break;
    progress(c, 0);
  }
  for (int64_t k = 1; c->write_points && k <= W && c->cm.harness == 0; k++) {
    exh_case(c, eseed, 0, k, 1, camp_mix(c->cm.seed ^ ((uint64_t)k << 24)), ref,
             nref);
    if (c->cm.stop_on_violation && violations(c) > 0) break;
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

static void bad_mutant(const char* name) {
  if (strcmp(name, "published-before-ack") == 0)
    fprintf(stderr, "published-before-ack is the relay's mutant; "
            "run ob-crash-campaign-relay --mutant publish-before-2xx\n");
}

/* --batch, --torn-seeds, --write-points. */
static int option(camp_common_t* cm, int opt, const char* arg) {
  camp_t* c = (camp_t*)cm;
  switch (opt) {
    case 'b': c->batch = atoi(arg); return 0;
    case 't': c->torn_seeds = atoi(arg); return 0;
    case 'w': c->write_points = 1; return 0;
    default: return -1;
  }
}

int main(int argc, char** argv) {
  static const struct option extra[] = {
      {"batch", required_argument, NULL, 'b'},
      {"torn-seeds", required_argument, NULL, 't'},
      {"write-points", no_argument, NULL, 'w'},
      {NULL, 0, NULL, 0}};
  static const camp_cli_t cli = {mode_names, 5, mutant_names, 4, extra,
                                 option, bad_mutant, usage};
  camp_t* c = camp_xcalloc(1, sizeof *c);
  int have_cycles, rc;
  double secs;

  c->cm.mode = MODE_MIXED;
  c->cm.reset_every = 200;
  c->torn_seeds = 4;
  rc = camp_parse_args(&c->cm, &cli, argc, argv, &have_cycles);
  if (rc >= 0) return rc;
  if ((!have_cycles && c->cm.mode != MODE_EXHAUSTIVE) || c->batch < 0 ||
      c->batch > MAX_BATCH || c->torn_seeds < 0) {
    usage(stderr);
    return 2;
  }
  rc = camp_mutant_binary(&c->cm, argv, MUT_SPLIT_CLAIM, "split-claim",
                          "ob-crash-campaign", IN_MUTANT_BINARY);
  if (rc >= 0) return rc;
  if (camp_make_dir(&c->cm, "ob-crash-campaign") != 0) return 2;
  c->cm.id_types = "AE";
  c->cm.on_id = on_id;
  c->rng = c->cm.seed * 0x9E3779B97F4A7C15ULL + 0x1234567ULL;
  c->cm.t0 = camp_mono_ms();
  printf("ob-crash-campaign: seed %llu, mode %s, %s%ld cycles, mutant %s, "
         "batch %s, database reset every %d cycles, dir %s\n",
         (unsigned long long)c->cm.seed, mode_names[c->cm.mode],
         c->cm.mode == MODE_EXHAUSTIVE ? "(ignored) " : "", c->cm.cycles_wanted,
         mutant_names[c->cm.mutant], c->batch ? "fixed" : "1 or 2-32",
         c->cm.reset_every, c->cm.dir);
  printf(
      "reproduce: ob-crash-campaign --seed %llu --cycles %ld --mode %s%s%s\n",
      (unsigned long long)c->cm.seed, c->cm.cycles_wanted,
      mode_names[c->cm.mode], c->cm.mutant ? " --mutant " : "",
      c->cm.mutant ? mutant_names[c->cm.mutant] : "");
  fflush(stdout);

  if (c->cm.mode == MODE_EXHAUSTIVE) exhaustive(c);
  else random_campaign(c);

  secs = (double)(camp_mono_ms() - c->cm.t0) / 1000.0;
  progress(c, 1);
  printf("attempted %lld, acked %lld, lost %lld, duplicated-deliveries %lld, "
         "duplicated-effects %lld, atomicity-violations %lld, "
         "integrity-failures %lld, cycles %ld (kill %ld, power %ld, torn %ld)\n",
         (long long)c->attempted, (long long)c->acked,
         (long long)(c->lost_acked + c->lost_vanished),
         (long long)c->dup_deliveries, (long long)c->dup_effects,
         (long long)(c->atomicity + c->not_prefix), (long long)c->integrity,
         c->cm.cycles, c->cm.k_kill, c->cm.k_power, c->cm.k_torn);
  printf(
      "details: seed %llu, %.1f s (%.1f cycles/s), %d databases; workers "
      "ended by SIGKILL %ld, crash before sync %ld, crash before write %ld, "
      "clean exit %ld, engine failure %ld; lost: acked %lld in %ld cycles, "
      "enqueued-and-vanished %lld; unexpected failures %lld; torn restores "
      "replayed %lld pending records (%lld whole, %lld torn, %lld lost); "
      "deliveries %lld\n",
      (unsigned long long)c->cm.seed, secs,
      secs > 0 ? c->cm.cycles / secs : 0.0,
      c->cm.mode == MODE_EXHAUSTIVE ? (int)c->cm.cycles : c->epoch,
      c->cm.x_sigkill, c->cm.x_sync, c->x_write, c->cm.x_clean, c->x_open_fail,
      (long long)c->lost_acked, c->lost_cycles, (long long)c->lost_vanished,
      (long long)c->unexpected, (long long)c->cm.r_records,
      (long long)c->cm.r_applied, (long long)c->cm.r_torn,
      (long long)c->cm.r_lost, (long long)c->deliveries);
  if (c->cm.mode != MODE_EXHAUSTIVE)
    printf("time: workers %.1f s, restores %.1f s, checks %.1f s, "
           "reopen+enqueue %.1f s\n", (double)c->ms_worker / 1000.0,
           (double)c->ms_restore / 1000.0, (double)c->ms_check / 1000.0,
           (double)c->ms_reopen / 1000.0);
  rc = camp_finish(&c->cm, violations(c));
  free(c->ev);
  free(c->st);
  free(c->cf);
  free(c->npay);
  free(c->nout);
  free(c->order);
  free(c);
  return rc;
}
