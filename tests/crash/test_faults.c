/* SPDX-License-Identifier: Apache-2.0 */
/* I/O errors, out-of-memory and a real full disk (T5, T6;
** docs/reliability.md, "I/O errors, out of memory, full disk").
**
**   ob-test-faults io        the I/O-error loop (faultvfs.c): for N = 1.. until
**                            a run sees no injection, fail VFS operation N
**                            once, then persistently
**   ob-test-faults oom       the out-of-memory loops (faultalloc.c): the k-th
**                            SQLite allocation, then the k-th allocation of
**                            oncebox itself (--wrap), once and persistently
**   ob-test-faults disk_full a real ENOSPC on a 512 KiB tmpfs (root; exit 77,
**                            "skipped", where mounting is not possible)
**
** Every run of a loop: the workload (ob_open on a copy of a golden database,
** or on no file; registrations; ob_enqueue x2, a redelivery, one
** ob_enqueue_many of 2; ob_run_once until idle; ob_close) with the fault
** armed. Calls after a failure go on with the same handle. Then, the fault
** cleared:
**   - each failing public call returned the specific code (OB_EIO for an
**     I/O error, OB_ENOMEM for memory) with a non-empty ob_errmsg/errbuf.
**     One allowance: ob_open returning OB_EPERM when the failed operation
**     was xOpen (SQLite reports SQLITE_CANTOPEN whatever errno was; ob_open
**     documents OB_EPERM/OB_EIO for file errors); counted and printed;
**   - no file descriptor and no SQLite memory is still held after ob_close;
**   - a new connection (stock unix VFS) finds PRAGMA integrity_check "ok",
**     the file in WAL mode, the schema complete or absent (a fresh file
**     whose migration never committed), and for every message either all
**     of (payout, outbox row, both dedup records, queue row gone) or none of
**     it (queue row still there); an ob_enqueue_many is all or nothing;
**     whatever a call reported committed is there;
**   - a NEW engine (never the failed handle) passes ob_check, runs the queue
**     to empty, and every message ends handled exactly once; nothing was
**     retried or moved to the failure store (all input is valid).
** A call that reported failure but whose transaction is found committed
** afterwards ("ambiguous commit": a failed xSync of the WAL whose frames
** the next open recovers) is allowed, as after a crash, and counted.
** Violations are counted by kind; up to 8 lines per kind (40 in all) and a
** list of distinct causes are printed; the test fails if any.
**
** Reproduce one injection point: OB_FAULTS_N=17 ob-test-faults io (both
** modes, both workloads); OB_FAULTS_TRACE=1 prints every VFS operation;
** OB_FAULTS_STRIDE=5 tries every 5th point only (set by tests/cross.sh).
** The loops run in /dev/shm when it is writable (fsync is free there),
** else $TMPDIR; OB_FAULTS_TMPDIR overrides.
*/
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "core/util/errbuf.h"
#include "tests/crash/faultalloc.h"
#include "storage/store.h" /* OB__SCHEMA_VERSION */
#include "tests/crash/faultvfs.h"
#include "tests/integration/engine_fixture.h"
#include "oncebox_payout.h"

#define REC_CONSUMER "test-ack-recorder"
#define MAX_PRINTED 40

/* ---- violations and tallies ---------------------------------------------- */

enum {
  V_CODE,       /* a failing call returned another code than expected */
  V_MSG,        /* ... with an empty message */
  V_PARTIAL,    /* a message or an ob_enqueue_many half-applied */
  V_LOST,       /* something reported committed is missing */
  V_DUP,        /* handled twice, delivered twice */
  V_INTEGRITY,  /* integrity_check / ob_check / schema */
  V_SPURIOUS,   /* a valid message retried or moved to the failure store */
  V_RESUME,     /* the new engine could not finish the work */
  V_LEAK,       /* a file or SQLite memory still held after ob_close */
  V_WAL,        /* ob_open succeeded but the file is not in WAL mode */
  V__COUNT
};

static const char* const v_names[V__COUNT] = {
    "wrong-error-code", "empty-message", "partial-effects",
    "lost",             "duplicates",    "integrity-failures",
    "spurious-retries", "resume-failures", "leaks", "wal-not-in-effect"};

static long long g_viol[V__COUNT];
static long long g_printed;
static char g_where[200]; /* the current run, for violation lines */
static long long g_codes[65]; /* failing calls by -code */

static void viol(int kind, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void viol(int kind, const char* fmt, ...) {
  va_list ap;
  g_viol[kind]++;
  /* At most 8 lines of one kind, MAX_PRINTED in all: one frequent kind must
  ** not hide the others. */
  if (g_viol[kind] > 8 || g_printed++ >= MAX_PRINTED) return;
  fprintf(stderr, "VIOLATION %s: %s: ", v_names[kind], g_where);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

/* Distinct kinds of wrong outcome ("ob_enqueue -> OB_EDB: prepare: out of
** memory"), with counts, printed after each loop. */
#define MAX_SIGS 48
static struct {
  char text[200];
  long long n;
} g_sigs[MAX_SIGS];
static int g_nsigs;

static void sig(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
static void sig(const char* fmt, ...) {
  char t[200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(t, sizeof t, fmt, ap);
  va_end(ap);
  for (int i = 0; i < g_nsigs; i++) {
    if (strcmp(g_sigs[i].text, t) == 0) {
      g_sigs[i].n++;
      return;
    }
  }
  if (g_nsigs == MAX_SIGS) return;
  snprintf(g_sigs[g_nsigs].text, sizeof g_sigs[g_nsigs].text, "%s", t);
  g_sigs[g_nsigs++].n = 1;
}

static void print_sigs(const char* loop) {
  for (int i = 0; i < g_nsigs; i++)
    printf("%s: x%lld  %s\n", loop, g_sigs[i].n, g_sigs[i].text);
}

/* Not a violation, but worth a line (the first 40). */
static long long g_notes;
static void note(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char* fmt, ...) {
  va_list ap;
  if (g_notes++ >= 40) return;
  printf("note: %s: ", g_where);
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  putchar('\n');
}

static long long total_violations(void) {
  long long n = 0;
  for (int i = 0; i < V__COUNT; i++) n += g_viol[i];
  return n;
}

static void reset_tallies(void) {
  memset(g_viol, 0, sizeof g_viol);
  memset(g_codes, 0, sizeof g_codes);
  g_printed = 0;
  g_notes = 0;
  g_nsigs = 0;
}

/* "0 partial-effects, 0 lost, ..." */
static void print_violations(void) {
  for (int i = 0; i < V__COUNT; i++)
    printf("%s%lld %s", i ? ", " : "", g_viol[i], v_names[i]);
}

static void print_codes(void) {
  int any = 0;
  for (int i = 1; i < 65; i++) {
    if (g_codes[i] == 0) continue;
    printf("%s%s x%lld", any++ ? ", " : "", ob_err_name(-i), g_codes[i]);
  }
  if (!any) printf("none");
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- the messages ----------------------------------------------------------- */

/* G1, G2 were handled and G3 enqueued in the golden database; M1..M4 are
** enqueued by the workload (M3 and M4 in one ob_enqueue_many). */
enum { G1, G2, G3, M1, M2, M3, M4, NMSG };
static char g_id[NMSG][OB_UUID_BUFLEN];
static char g_body[NMSG][256];

static int msg_index(const char* id) {
  for (int i = 0; i < NMSG; i++)
    if (strcmp(g_id[i], id) == 0) return i;
  return -1;
}

/* A second consumer of PaymentCaptured, registered after the payout module,
** so it runs only when the payout handler returned OB_DONE: it notes the
** ids of the batch in hand (no allocation: it also runs under the wrapped
** allocator). A batch's ids count as committed when ob_run_once returns 0.
** Its dedup record takes part in the atomicity check. */
static struct {
  int pending[64];
  int npending;
  int commits[NMSG]; /* committed handler runs per message, whole test run */
} g_rec;

static int recorder(ob_tx_t* tx, const ob_message_t* msg, void* arg) {
  int i = msg_index(msg->id);
  (void)tx;
  (void)arg;
  if (g_rec.npending < 64) g_rec.pending[g_rec.npending++] = i;
  return OB_DONE;
}

/* ---- one run ---------------------------------------------------------------- */

typedef struct ctx_s {
  char* dir;
  char* path;
  char* wal;
  char* shm;
  fake_clock_t clock;
  ob_options_t opts;
  unsigned char* golden;  /* the golden database's bytes */
  size_t golden_len;
  int expect;             /* OB_EIO, OB_ENOMEM, OB_ENOSPC */
  int use_fv;             /* the I/O-error shim is installed */
} ctx_t;

typedef struct run_s {
  int golden;              /* 1: started from the golden copy */
  int64_t close_from;      /* operations counted before ob_close began */
  int enq_att[NMSG];       /* ob_enqueue / ob_enqueue_many attempted */
  int enq_ok[NMSG];        /* ... and reported committed */
  int redeliver_att, redeliver_ok;
  int acked[NMSG];         /* handled by an ob_run_once that returned 0 */
  int maybe[NMSG];         /* handled in an ob_run_once that failed */
  int failed_calls;
  int retried, failed;     /* from ob_run_once results */
  int present[NMSG];       /* after the run: queued or handled */
  int ambiguous;           /* failed calls whose effect committed anyway */
  int spurious;            /* a spurious retry was already reported */
} run_t;

static void on_call(ctx_t* c, run_t* r, const char* call, int rc,
                    const char* msg) {
  if (rc >= 0) return;
  r->failed_calls++;
  if (-rc < 65) g_codes[-rc]++;
  if (rc == OB_EPERM && c->use_fv && fv_first_hit() == FV_OPEN &&
      strcmp(call, "ob_open") == 0) {
    /* open(2) failed: SQLite says SQLITE_CANTOPEN whatever errno was, and
    ** ob_open documents OB_EPERM/OB_EIO for file errors. Counted apart
    ** (g_codes) and reported, not a violation. */
  } else if (rc != c->expect) {
    viol(V_CODE, "%s returned %s (%s), expected %s: %s", call,
         ob_err_name(rc), ob_strerror(rc), ob_err_name(c->expect),
         msg ? msg : "(null)");
    sig("%s returned %s: %s", call, ob_err_name(rc), msg ? msg : "(null)");
  }
  if (msg == NULL || msg[0] == '\0') {
    viol(V_MSG, "%s returned %s with an empty message", call,
         ob_err_name(rc));
    sig("%s returned %s with an empty message", call, ob_err_name(rc));
  }
}

/* The armed counter of the loop running (operations or allocations). */
static int64_t (*g_ops_now)(void);

static int enqueue_one(ob_engine_t* e, int i) {
  ob_envelope_t env;
  memset(&env, 0, sizeof env);
  env.type = OB_PAYOUT_MESSAGE_TYPE;
  env.id = g_id[i];
  env.body = g_body[i];
  env.body_len = strlen(g_body[i]);
  return ob_enqueue(e, &env);
}

/* ob_run_once, with the recorder's ids settled by the outcome. Returns rc;
** *claimed gets res.claimed (0 on failure). */
static int run_once(ctx_t* c, run_t* r, ob_engine_t* e, int* claimed) {
  ob_batch_result_t res;
  int rc;
  g_rec.npending = 0;
  rc = ob_run_once(e, &res);
  *claimed = 0;
  if (rc == 0) {
    for (int k = 0; k < g_rec.npending; k++) {
      int i = g_rec.pending[k];
      if (i < 0) continue;
      r->acked[i] = 1;
      g_rec.commits[i]++;
    }
    r->retried += res.retried;
    r->failed += res.failed;
    *claimed = res.claimed;
  } else {
    for (int k = 0; k < g_rec.npending; k++)
      if (g_rec.pending[k] >= 0) r->maybe[g_rec.pending[k]] = 1;
    on_call(c, r, "ob_run_once", rc, ob_errmsg(e));
  }
  g_rec.npending = 0;
  return rc;
}

static int register_all(ob_engine_t* e, int* which) {
  int rc = ob_register_payout(e);
  *which = 0;
  if (rc < 0) return rc;
  *which = 1;
  return ob_register(e, OB_PAYOUT_MESSAGE_TYPE, REC_CONSUMER, recorder, NULL);
}

/* The workload the fault is armed for. Calls after a failure go on with the
** same handle (as the runner does), so "once" also tests that a handle
** stays usable and correct after an error. */
static void workload(ctx_t* c, run_t* r) {
  ob_engine_t* e = NULL;
  char err[512];
  int rc, which, claimed;

  err[0] = '\0';
  rc = ob_open(&e, &c->opts, err, sizeof err);
  on_call(c, r, "ob_open", rc, err);
  if (rc < 0) return;
  rc = register_all(e, &which);
  on_call(c, r, which ? "ob_register" : "ob_register_payout", rc,
          ob_errmsg(e));
  if (rc < 0) goto out; /* no handler: never handle without it */

  for (int i = M1; i <= M2; i++) {
    r->enq_att[i] = 1;
    rc = enqueue_one(e, i);
    r->enq_ok[i] = rc == 0;
    on_call(c, r, "ob_enqueue", rc, ob_errmsg(e));
  }
  if (r->golden) {
    /* A redelivery of an event the golden database handled already. */
    r->redeliver_att = 1;
    rc = enqueue_one(e, G1);
    r->redeliver_ok = rc == 0;
    on_call(c, r, "ob_enqueue (redelivery)", rc, ob_errmsg(e));

    ob_envelope_t env[2];
    int results[2];
    memset(env, 0, sizeof env);
    for (int k = 0; k < 2; k++) {
      env[k].type = OB_PAYOUT_MESSAGE_TYPE;
      env[k].id = g_id[M3 + k];
      env[k].body = g_body[M3 + k];
      env[k].body_len = strlen(g_body[M3 + k]);
    }
    r->enq_att[M3] = r->enq_att[M4] = 1;
    rc = ob_enqueue_many(e, env, 2, results);
    if (rc == 2) {
      r->enq_ok[M3] = r->enq_ok[M4] = 1;
    } else if (rc >= 0) {
      viol(V_PARTIAL, "ob_enqueue_many committed %d of 2 valid envelopes "
           "(results %d, %d)", rc, results[0], results[1]);
    }
    on_call(c, r, "ob_enqueue_many", rc, ob_errmsg(e));
  }
  /* Until idle; bounded, since a persistent fault fails every call. */
  for (int k = 0; k < 8; k++) {
    rc = run_once(c, r, e, &claimed);
    if (rc == 0 && claimed == 0) break;
  }
out:
  r->close_from = g_ops_now ? g_ops_now() : 0;
  ob_close(e);
}

/* ---- checking the files ------------------------------------------------------ */

typedef struct mstate_s {
  long long P, O, D, R, Q, att, F;
  char last_error[200];
} mstate_t;

/* The payout module's table comes with its own migration after oncebox's
** schema: a fault in between leaves a file without it, and then without a
** payout. */
#define STATE_REST                                                          \
      " (SELECT count(*) FROM outbox_event WHERE causation_id=?1"           \
      "   AND event_type='" OB_PAYOUT_EVENT_TYPE "'),"                      \
      " (SELECT count(*) FROM processed_message WHERE consumer_name='"      \
      OB_PAYOUT_CONSUMER "' AND message_id=?1),"                            \
      " (SELECT count(*) FROM processed_message WHERE consumer_name='"      \
      REC_CONSUMER "' AND message_id=?1),"                                  \
      " (SELECT count(*) FROM queue WHERE message_id=?1),"                  \
      " (SELECT coalesce(max(attempts), 0) FROM queue WHERE message_id=?1),"\
      " (SELECT count(*) FROM failed_message WHERE message_id=?1),"         \
      " (SELECT group_concat(last_error) FROM queue WHERE message_id=?1"    \
      "   AND last_error IS NOT NULL)"

static int read_state(sqlite3* db, int i, mstate_t* s) {
  static const char* sql =
      "SELECT (SELECT count(*) FROM merchant_payout WHERE source_event_id=?1),"
      STATE_REST;
  static const char* no_table = "SELECT 0," STATE_REST;
  sqlite3_stmt* st = NULL;
  int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
  if (rc == SQLITE_ERROR &&
      strstr(sqlite3_errmsg(db), "no such table: merchant_payout") != NULL)
    rc = sqlite3_prepare_v2(db, no_table, -1, &st, NULL);
  if (rc != SQLITE_OK) return rc;
  sqlite3_bind_text(st, 1, g_id[i], -1, SQLITE_STATIC);
  rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    s->P = sqlite3_column_int64(st, 0);
    s->O = sqlite3_column_int64(st, 1);
    s->D = sqlite3_column_int64(st, 2);
    s->R = sqlite3_column_int64(st, 3);
    s->Q = sqlite3_column_int64(st, 4);
    s->att = sqlite3_column_int64(st, 5);
    s->F = sqlite3_column_int64(st, 6);
    snprintf(s->last_error, sizeof s->last_error, "%s",
             sqlite3_column_text(st, 7)
                 ? (const char*)sqlite3_column_text(st, 7)
                 : "");
    rc = SQLITE_OK;
  }
  sqlite3_finalize(st);
  return rc;
}

static long long q_int(sqlite3* db, const char* sql, int* ok) {
  sqlite3_stmt* st;
  long long v = -1;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
    *ok = 0;
    return -1;
  }
  if (sqlite3_step(st) == SQLITE_ROW)
    v = sqlite3_column_int64(st, 0);
  else
    *ok = 0;
  sqlite3_finalize(st);
  return v;
}

/* integrity_check must return exactly one row, "ok". */
static int integrity_ok(sqlite3* db, char* why, size_t n) {
  sqlite3_stmt* st;
  int rows = 0, ok = 1, rc;
  ob__errbuf_set(why, n, 0, "?");
  if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL) !=
      SQLITE_OK) {
    return ob__errbuf_set(why, n, 0, "prepare: %s", sqlite3_errmsg(db));
  }
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    const char* t = (const char*)sqlite3_column_text(st, 0);
    if (rows++ == 0 && t && strcmp(t, "ok") == 0) continue;
    ok = 0;
    ob__errbuf_set(why, n, 0, "%s", t ? t : "(null)");
  }
  if (rc != SQLITE_DONE) {
    ok = 0;
    ob__errbuf_set(why, n, 0, "step: %s", sqlite3_errmsg(db));
  }
  sqlite3_finalize(st);
  return ok && rows == 1;
}

/* What the first message state must be: HANDLED before the run (golden
** G1, G2), QUEUED before (golden G3), NEW (enqueued by this run), or NONE
** (never enqueued in this scenario). */
enum { K_HANDLED, K_QUEUED, K_NEW, K_NONE };

static int kind_of(const run_t* r, int i) {
  if (r->golden && (i == G1 || i == G2)) return K_HANDLED;
  if (r->golden && i == G3) return K_QUEUED;
  if (r->enq_att[i]) return K_NEW;
  return K_NONE;
}

/* Open the files with the stock unix VFS and check them. final: after the
** new engine drained the queue. */
static void check_files(ctx_t* c, run_t* r, int final) {
  sqlite3* db = NULL;
  char why[512];
  int ok = 1, version;
  long long sumQ = 0;
  const char* when = final ? "after resuming" : "after the fault";

  if (!r->golden && !final && access(c->path, F_OK) != 0) {
    /* ob_open failed before it created the file: nothing may exist. */
    for (int i = 0; i < NMSG; i++) {
      if (r->enq_ok[i] || r->acked[i])
        viol(V_LOST, "%s: %s reported committed, there is no database",
             when, g_id[i]);
      r->present[i] = 0;
    }
    return;
  }
  if (sqlite3_open_v2(c->path, &db, SQLITE_OPEN_READWRITE, "unix") !=
      SQLITE_OK) {
    viol(V_INTEGRITY, "%s: cannot open the database: %s", when,
         db ? sqlite3_errmsg(db) : "?");
    sqlite3_close(db);
    return;
  }
  if (!integrity_ok(db, why, sizeof why)) {
    viol(V_INTEGRITY, "%s: integrity_check: %s", when, why);
    sqlite3_close(db);
    return;
  }
  version = (int)q_int(db, "PRAGMA user_version", &ok);
  if (!ok || (version != 0 && version != OB__SCHEMA_VERSION) ||
      (r->golden && version != OB__SCHEMA_VERSION)) {
    viol(V_INTEGRITY, "%s: user_version %d", when, version);
    sqlite3_close(db);
    return;
  }
  if (version == 0) {
    /* The migration never committed: an empty database, legitimately. */
    long long tables = q_int(db, "SELECT count(*) FROM sqlite_schema", &ok);
    if (!ok || tables != 0)
      viol(V_PARTIAL, "%s: user_version 0 but %lld schema rows (a "
           "half-applied migration)", when, tables);
    if (final) viol(V_RESUME, "the new engine left no schema");
    for (int i = 0; i < NMSG; i++) {
      if (r->enq_ok[i]) viol(V_LOST, "enqueue of %s reported committed, the "
                             "database is empty", g_id[i]);
      if (r->acked[i]) viol(V_LOST, "handling of %s reported committed, the "
                            "database is empty", g_id[i]);
      r->present[i] = 0;
    }
    sqlite3_close(db);
    return;
  }

  {
    /* WAL must be what the file says, not only what the engine asked. */
    sqlite3_stmt* st;
    int wal = 0;
    if (sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &st, NULL) ==
        SQLITE_OK) {
      if (sqlite3_step(st) == SQLITE_ROW) {
        const char* m = (const char*)sqlite3_column_text(st, 0);
        wal = m && strcmp(m, "wal") == 0;
      }
      sqlite3_finalize(st);
    }
    if (!wal) {
      viol(V_WAL, "%s: the database is not in WAL mode although every "
           "ob_open succeeded", when);
      sig("ob_open returned 0, the database is not in WAL mode");
    }
  }
  for (int i = 0; i < NMSG; i++) {
    mstate_t s;
    int kind = kind_of(r, i), H, rc;
    memset(&s, 0, sizeof s);
    rc = read_state(db, i, &s);
    if (rc != SQLITE_OK) {
      viol(V_INTEGRITY, "%s: reading %s: %s", when, g_id[i],
           sqlite3_errmsg(db));
      break;
    }
    sumQ += s.Q;
    if (s.P > 1 || s.O > 1 || s.D > 1 || s.R > 1)
      viol(V_DUP, "%s: %s has %lld payouts, %lld outbox rows, %lld+%lld "
           "dedup records", when, g_id[i], s.P, s.O, s.D, s.R);
    if (!(s.P == s.O && s.O == s.D && s.D == s.R))
      viol(V_PARTIAL, "%s: %s half-applied: payout %lld, outbox %lld, "
           "dedup %lld, recorder dedup %lld, queued %lld", when, g_id[i],
           s.P, s.O, s.D, s.R, s.Q);
    if (s.F > 0 || s.att > 0) {
      r->spurious = 1;
      viol(V_SPURIOUS, "%s: %s: %lld in the failure store, queue attempts "
           "%lld, last error: %s", when, g_id[i], s.F, s.att,
           s.last_error);
      sig("a valid message was rescheduled as a retry, reason: %s",
          s.last_error);
    }
    H = s.P > 0;
    if (final) {
      int want = kind == K_HANDLED || kind == K_QUEUED || r->present[i];
      if (want && (!H || s.Q != 0))
        viol(V_RESUME, "%s: %s: handled %d, still queued %lld", when,
             g_id[i], H, s.Q);
      if (!want && (H || s.Q != 0))
        viol(V_LOST, "%s: %s appeared: handled %d, queued %lld", when,
             g_id[i], H, s.Q);
      if (g_rec.commits[i] > 1 ||
          (kind == K_HANDLED && g_rec.commits[i] != 0))
        viol(V_DUP, "%s: %s handled %d times", when, g_id[i],
             g_rec.commits[i]);
      continue;
    }
    r->present[i] = H || s.Q > 0;
    switch (kind) {
      case K_HANDLED:
        if (!H) viol(V_LOST, "%s: %s was handled before the run: gone",
                     when, g_id[i]);
        if (s.Q > (r->redeliver_att && i == G1 ? 1 : 0))
          viol(V_DUP, "%s: %s queued %lld times", when, g_id[i], s.Q);
        if (i == G1 && !r->redeliver_ok && s.Q > 0) r->ambiguous++;
        break;
      case K_QUEUED:
      case K_NEW:
        if (H && s.Q > 0)
          viol(V_PARTIAL, "%s: %s handled but its queue row is still there",
               when, g_id[i]);
        if (s.Q > 1)
          viol(V_DUP, "%s: %s queued %lld times", when, g_id[i], s.Q);
        if (!H && s.Q == 0 && (kind == K_QUEUED || r->enq_ok[i]))
          viol(V_LOST, "%s: %s was committed to the queue: gone", when,
               g_id[i]);
        if (kind == K_NEW && !r->enq_ok[i] && (H || s.Q > 0)) {
          r->ambiguous++; /* its enqueue failed but committed */
          note("%s: the enqueue of %s reported failure, but it committed",
               when, g_id[i]);
        }
        if (H && !r->acked[i] && r->maybe[i]) {
          r->ambiguous++; /* its ob_run_once failed but committed */
          note("%s: the ob_run_once that handled %s reported failure, but "
               "it committed", when, g_id[i]);
        }
        break;
      default:
        if (H || s.Q > 0)
          viol(V_LOST, "%s: %s was never enqueued but is there", when,
               g_id[i]);
    }
    if (r->acked[i] && !H)
      viol(V_LOST, "%s: ob_run_once reported %s committed: not handled",
           when, g_id[i]);
  }
  if (!final && r->golden && r->present[M3] != r->present[M4])
    viol(V_PARTIAL, "%s: ob_enqueue_many half-applied (%d, %d)", when,
         r->present[M3], r->present[M4]);
  if (q_int(db, "SELECT count(*) FROM queue", &ok) != sumQ || !ok)
    viol(V_INTEGRITY, "%s: queue rows of unknown messages", when);
  if (q_int(db, "SELECT count(*) FROM failed_message", &ok) != 0 || !ok)
    viol(V_SPURIOUS, "%s: rows in the failure store", when);
  sqlite3_close(db);
}

static void check_cb(void* arg, const char* v) {
  viol(V_INTEGRITY, "ob_check %s: %s", (const char*)arg, v);
}

/* A new engine on the files (fault cleared): ob_check, drain, ob_check. */
static void resume(ctx_t* c, run_t* r) {
  ob_engine_t* e = NULL;
  char err[512];
  int rc, which, claimed, n;

  rc = ob_open(&e, &c->opts, err, sizeof err);
  if (rc < 0) {
    viol(V_RESUME, "ob_open after the fault: %s: %s", ob_err_name(rc), err);
    return;
  }
  rc = register_all(e, &which);
  if (rc < 0) {
    viol(V_RESUME, "register after the fault: %s", ob_err_name(rc));
    ob_close(e);
    return;
  }
  n = ob_check(e, check_cb, "before resuming");
  if (n < 0)
    viol(V_INTEGRITY, "ob_check: %s: %s", ob_err_name(n), ob_errmsg(e));
  for (int k = 0; k < 100; k++) {
    int64_t at;
    rc = run_once(c, r, e, &claimed);
    if (rc < 0) {
      viol(V_RESUME, "ob_run_once after the fault: %s: %s", ob_err_name(rc),
           ob_errmsg(e));
      break;
    }
    if (claimed > 0) continue;
    /* A message rescheduled by the run (a spurious retry, counted) would
    ** wait: let its time come. */
    if (ob_next_due(e, &at) != 0) break;
    if (at <= c->clock.now) {
      viol(V_RESUME, "a due message is not claimed");
      break;
    }
    c->clock.now = at;
  }
  if ((r->retried || r->failed) && !r->spurious)
    viol(V_SPURIOUS, "%d retries, %d moved to the failure store (all input "
         "is valid)", r->retried, r->failed);
  n = ob_check(e, check_cb, "after resuming");
  if (n < 0)
    viol(V_INTEGRITY, "ob_check: %s: %s", ob_err_name(n), ob_errmsg(e));
  ob_close(e);
}

/* ---- the fixture --------------------------------------------------------- */

static void remove_db(ctx_t* c) {
  unlink(c->path);
  unlink(c->wal);
  unlink(c->shm);
}

static void write_file(const char* path, const unsigned char* b, size_t n) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  size_t off = 0;
  if (fd < 0) fail_msg("open %s: %s", path, strerror(errno));
  while (off < n) {
    ssize_t w = write(fd, b + off, n - off);
    if (w <= 0) fail_msg("write %s: %s", path, strerror(errno));
    off += (size_t)w;
  }
  close(fd);
}

static unsigned char* read_whole(const char* path, size_t* n) {
  struct stat sb;
  unsigned char* b;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0 || fstat(fd, &sb) != 0) fail_msg("open %s", path);
  b = malloc((size_t)sb.st_size + 1);
  if (b == NULL ||
      read(fd, b, (size_t)sb.st_size) != (ssize_t)sb.st_size)
    fail_msg("read %s", path);
  close(fd);
  *n = (size_t)sb.st_size;
  return b;
}

/* A directory on tmpfs when there is one (fsync is free there: the loops
** run thousands of transactions), else $TMPDIR. $OB_FAULTS_TMPDIR wins. */
static char* work_dir(const char* tag) {
  const char* base = getenv("OB_FAULTS_TMPDIR");
  char buf[4096];
  if ((base == NULL || *base == '\0') && access("/dev/shm", W_OK) == 0)
    base = "/dev/shm";
  if (base == NULL || *base == '\0') return ts_mkdtemp(tag);
  snprintf(buf, sizeof buf, "%s/oncebox-%s-XXXXXX", base, tag);
  if (mkdtemp(buf) == NULL) return ts_mkdtemp(tag);
  return strdup(buf);
}

static void clock_reset(ctx_t* c) {
  /* Every run sees the same clock and random bytes, so the number of
  ** operations is the same from one N to the next. */
  fake_clock_init(&c->clock, FX_T0 + 3600 * 1000, 42);
}

static void ctx_init(ctx_t* c, const char* tag, int expect) {
  memset(c, 0, sizeof *c);
  c->dir = work_dir(tag);
  c->path = ts_path(c->dir, "t.db");
  c->wal = ts_path(c->dir, "t.db-wal");
  c->shm = ts_path(c->dir, "t.db-shm");
  c->expect = expect;
  clock_reset(c);
  ob_options_init(&c->opts);
  c->opts.db_path = c->path;
  c->opts.clock = &c->clock.clock;
  c->opts.batch_size = 2;
}

static void ctx_free(ctx_t* c) {
  free(c->path);
  free(c->wal);
  free(c->shm);
  free(c->golden);
  ts_rmdir(c->dir);
  memset(c, 0, sizeof *c);
}

/* The golden database: G1 and G2 handled, G3 queued; one file, no WAL. */
static void make_golden(ctx_t* c) {
  ob_engine_t* e = NULL;
  char err[512];
  int which, claimed;
  run_t r;
  memset(&r, 0, sizeof r);
  remove_db(c);
  fake_clock_init(&c->clock, FX_T0, 42);
  if (ob_open(&e, &c->opts, err, sizeof err) != 0) fail_msg("golden: %s", err);
  assert_int_equal(register_all(e, &which), 0);
  for (int i = G1; i <= G3; i++) assert_int_equal(enqueue_one(e, i), 0);
  assert_int_equal(run_once(c, &r, e, &claimed), 0);
  assert_int_equal(claimed, 2);
  ob_close(e);
  assert_true(access(c->wal, F_OK) != 0);
  c->golden = read_whole(c->path, &c->golden_len);
  memset(g_rec.commits, 0, sizeof g_rec.commits);
}

static void prepare_files(ctx_t* c, int golden) {
  remove_db(c);
  if (golden) write_file(c->path, c->golden, c->golden_len);
  clock_reset(c);
  memset(g_rec.commits, 0, sizeof g_rec.commits);
}

/* ---- the loops --------------------------------------------------------------- */

typedef struct arm_s {
  const char* name;
  void (*arm)(int64_t n, int persistent);
  void (*disarm)(void);
  int64_t (*ops)(void);
  int64_t (*hits)(void);
} arm_t;

typedef struct loop_stats_s {
  long long runs, surfaced, absorbed, absorbed_in_close, ambiguous;
  int64_t total[2]; /* N_total per mode: operations of a clean run */
  long long first_hit[FV__COUNT];
  long long absorbed_hit[FV__COUNT]; /* first failed op of absorbed runs */
} loop_stats_t;

/* One run of the workload with the fault at n, then the checks. Returns
** the number of injected failures (0: the run went through clean). */
static int64_t one_run(ctx_t* c, const arm_t* a, int golden, int64_t n,
                       int persistent, loop_stats_t* ls) {
  run_t r;
  int64_t hits;
  sqlite3_int64 mem0;
  memset(&r, 0, sizeof r);
  r.golden = golden;
  snprintf(g_where, sizeof g_where, "%s, %s, %s, N=%lld", a->name,
           golden ? "golden" : "fresh", persistent ? "persistent" : "once",
           (long long)n);
  prepare_files(c, golden);
  mem0 = sqlite3_memory_used();
  g_ops_now = a->ops;
  a->arm(n, persistent);
  workload(c, &r);
  a->disarm();
  hits = a->hits();
  if (c->use_fv) {
    if (hits > 0 && fv_first_hit() < FV__COUNT) {
      ls->first_hit[fv_first_hit()]++;
      snprintf(g_where + strlen(g_where), sizeof g_where - strlen(g_where),
               " (first failed: %s)", fv_op_name(fv_first_hit()));
    }
    if (fv_open_files() != 0)
      viol(V_LEAK, "%d files still open after ob_close", fv_open_files());
  }
  if (sqlite3_memory_used() > mem0)
    viol(V_LEAK, "SQLite holds %lld more bytes after ob_close",
         (long long)(sqlite3_memory_used() - mem0));
  if (hits > 0) {
    ls->runs++;
    if (r.failed_calls > 0) {
      ls->surfaced++;
    } else {
      ls->absorbed++;
      if (n > r.close_from)
        ls->absorbed_in_close++;
      else if (c->use_fv)
        note("absorbed before ob_close: no call failed");
      if (c->use_fv && fv_first_hit() < FV__COUNT)
        ls->absorbed_hit[fv_first_hit()]++;
    }
  } else if (r.failed_calls > 0) {
    viol(V_CODE, "%d calls failed without an injected fault",
         r.failed_calls);
  }
  check_files(c, &r, 0);
  resume(c, &r);
  check_files(c, &r, 1);
  ls->ambiguous += r.ambiguous;
  return hits;
}

/* N = 1.. until a run sees no injection, once and persistent. Every
** OB_FAULTS_STRIDE-th N only when that is set (tests/cross.sh: under qemu
** the whole loop takes ten times as long; the stride keeps points spread
** over the whole workload, first and last included). */
static void fault_loop(ctx_t* c, const arm_t* a, int golden,
                       loop_stats_t* ls) {
  const char* only = getenv("OB_FAULTS_N"); /* reproduce one N */
  const char* stride_s = getenv("OB_FAULTS_STRIDE");
  int64_t stride = stride_s && atoll(stride_s) > 1 ? atoll(stride_s) : 1;
  for (int persistent = 0; persistent <= 1; persistent++) {
    int64_t n;
    if (only != NULL && *only != '\0') {
      one_run(c, a, golden, atoll(only), persistent, ls);
      continue;
    }
    /* A clean counting run first: N_total, and the workload must pass its
    ** own checks without a fault. */
    one_run(c, a, golden, 0, persistent, ls);
    ls->total[persistent] = a->ops();
    for (n = 1; n < 1000000; n += stride) {
      /* The last point of the clean run is always among them. */
      if (stride > 1 && n > ls->total[persistent] &&
          n - stride < ls->total[persistent])
        (void)one_run(c, a, golden, ls->total[persistent], persistent, ls);
      if (one_run(c, a, golden, n, persistent, ls) == 0) break;
    }
    if (stride == 1 && n - 1 != ls->total[persistent])
      printf("note: %s %s %s: the clean run made %lld operations, the loop "
             "ended at N=%lld\n", a->name, golden ? "golden" : "fresh",
             persistent ? "persistent" : "once",
             (long long)ls->total[persistent], (long long)n);
  }
}

/* ---- the I/O-error loop ---------------------------------------------------- */

static const arm_t g_arm_io = {"io-error", fv_arm, fv_disarm, fv_ops,
                               fv_hits};

static void test_io_errors(void** state) {
  ctx_t c;
  loop_stats_t fresh, golden;
  double t0 = now_s();
  (void)state;
  reset_tallies();
  memset(&fresh, 0, sizeof fresh);
  memset(&golden, 0, sizeof golden);
  ctx_init(&c, "faults-io", OB_EIO);
  c.use_fv = 1;
  make_golden(&c);
  fault_loop(&c, &g_arm_io, 1, &golden);
  fault_loop(&c, &g_arm_io, 0, &fresh);

  printf("io-error loop: %lld + %lld injection points (golden + fresh "
         "workload) x 2 modes = %lld injected runs: %lld surfaced as an "
         "error, %lld absorbed (%lld of them inside ob_close), %lld "
         "ambiguous commits; ",
         (long long)golden.total[0], (long long)fresh.total[0],
         golden.runs + fresh.runs, golden.surfaced + fresh.surfaced,
         golden.absorbed + fresh.absorbed,
         golden.absorbed_in_close + fresh.absorbed_in_close,
         golden.ambiguous + fresh.ambiguous);
  print_violations();
  printf("; failing calls: ");
  print_codes();
  printf("; %.1f s\n", now_s() - t0);
  printf("io-error loop: first failed operation: ");
  for (int k = 0; k < FV__COUNT; k++)
    printf("%s%s %lld", k ? ", " : "", fv_op_name((fv_op_t)k),
           golden.first_hit[k] + fresh.first_hit[k]);
  printf("\n");
  print_sigs("io-error loop");
  printf("io-error loop: absorbed (no call failed; SQLite or ob_close "
         "ignored it): ");
  for (int k = 0; k < FV__COUNT; k++)
    printf("%s%s %lld", k ? ", " : "", fv_op_name((fv_op_t)k),
           golden.absorbed_hit[k] + fresh.absorbed_hit[k]);
  printf("\n");
  ctx_free(&c);
  assert_int_equal(total_violations(), 0);
}

/* ---- the out-of-memory loops ---------------------------------------------- */

static void arm_sqlite(int64_t n, int persistent) {
  fa_arm(FA_SQLITE, n, persistent);
}
static void arm_libc(int64_t n, int persistent) {
  fa_arm(FA_LIBC, n, persistent);
}
static const arm_t g_arm_sqlite = {"sqlite-malloc", arm_sqlite, fa_disarm,
                                   fa_count, fa_hits};
static const arm_t g_arm_libc = {"oncebox-malloc", arm_libc, fa_disarm,
                                 fa_count, fa_hits};

/* fresh may be NULL (the SQLite loop runs the golden workload only: its
** K_total is ~1,900 allocations, and the CI budget is tight). */
static void oom_summary(const char* what, const loop_stats_t* g,
                        const loop_stats_t* f, double t) {
  loop_stats_t z;
  memset(&z, 0, sizeof z);
  if (f == NULL) f = &z;
  printf("oom loop (%s): K_total %lld (golden workload)", what,
         (long long)g->total[0]);
  if (f != &z) printf(" + %lld (fresh)", (long long)f->total[0]);
  printf(" allocations x 2 modes = %lld injected runs: %lld surfaced as an "
         "error, %lld absorbed (%lld of them inside ob_close), %lld "
         "ambiguous commits; ",
         g->runs + f->runs, g->surfaced + f->surfaced,
         g->absorbed + f->absorbed,
         g->absorbed_in_close + f->absorbed_in_close,
         g->ambiguous + f->ambiguous);
  print_violations();
  printf("; failing calls: ");
  print_codes();
  printf("; %.1f s\n", t);
  print_sigs("oom loop");
}

static void test_oom(void** state) {
  ctx_t c;
  loop_stats_t golden, fresh;
  long long bad = 0;
  double t0;
  (void)state;
  ctx_init(&c, "faults-oom", OB_ENOMEM);
  make_golden(&c);

  reset_tallies();
  memset(&golden, 0, sizeof golden);
  t0 = now_s();
  fault_loop(&c, &g_arm_sqlite, 1, &golden);
  oom_summary("SQLite allocator, SQLITE_CONFIG_MALLOC", &golden, NULL,
              now_s() - t0);
  bad += total_violations();

  if (!fa_libc_available()) {
    printf("oom loop (oncebox allocations): skipped: the test was linked "
           "without -Wl,--wrap (FA_WITH_WRAP=0)\n");
  } else {
    reset_tallies();
    memset(&golden, 0, sizeof golden);
    memset(&fresh, 0, sizeof fresh);
    t0 = now_s();
    fault_loop(&c, &g_arm_libc, 1, &golden);
    fault_loop(&c, &g_arm_libc, 0, &fresh);
    if (golden.total[0] == 0)
      viol(V_CODE, "the --wrap allocator counted no allocation: the link "
           "option is not in effect");
    oom_summary("oncebox malloc/calloc/realloc/strdup, --wrap", &golden,
                &fresh, now_s() - t0);
    bad += total_violations();
  }
  ctx_free(&c);
  assert_int_equal(bad, 0);
}

/* ---- a real full disk ------------------------------------------------------ */

#define FULL_SIZE "512k"
#define FULL_SIZE_BIG "2m"

static char* g_mnt;
static int g_mounted;

/* Unmount and remove the mount point; async-signal-safe (no free). */
static void unmount_now(void) {
  if (g_mounted && umount2(g_mnt, MNT_DETACH) == 0) g_mounted = 0;
  if (g_mnt != NULL && !g_mounted) rmdir(g_mnt);
}

static void unmount_at_exit(void) {
  if (g_mounted) {
    unmount_now();
    if (g_mounted) fprintf(stderr, "umount %s: %s\n", g_mnt, strerror(errno));
  } else {
    unmount_now();
  }
  free(g_mnt);
  g_mnt = NULL;
}

static void on_signal(int sig) {
  unmount_now();
  signal(sig, SIG_DFL);
  raise(sig);
}

/* Mount a 512 KiB tmpfs, in a mount namespace of this process when
** possible: then even a SIGKILL cannot leave it mounted. Returns NULL and
** the reason in why when this machine does not allow it. */
static const char* mount_small_tmpfs(char* why, size_t n) {
  if (geteuid() != 0) {
    ob__errbuf_set(why, n, 0, "not root (mount needs CAP_SYS_ADMIN)");
    return NULL;
  }
  g_mnt = ts_mkdtemp("faults-full");
  atexit(unmount_at_exit);
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  signal(SIGABRT, on_signal);
  if (unshare(CLONE_NEWNS) == 0) {
    /* Our mounts must not propagate back to the host's namespace. */
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
      ob__errbuf_set(why, n, 0, "mount --make-rprivate /: %s",
                     strerror(errno));
      return NULL;
    }
  }
  if (mount("tmpfs", g_mnt, "tmpfs", MS_NOSUID | MS_NODEV,
            "size=" FULL_SIZE ",mode=0700") != 0) {
    ob__errbuf_set(why, n, 0,
                   "mount -t tmpfs -o size=" FULL_SIZE " tmpfs %s: %s", g_mnt,
                   strerror(errno));
    return NULL;
  }
  g_mounted = 1;
  return g_mnt;
}

static long long free_bytes(const char* dir) {
  struct statvfs sv;
  if (statvfs(dir, &sv) != 0) return -1;
  return (long long)sv.f_bavail * (long long)sv.f_frsize;
}

/* Fill all but `leave` bytes of the mount with a file. Returns its size. */
static long long make_filler(const char* path, long long leave) {
  static char block[4096];
  long long want = free_bytes(g_mnt) - leave, done = 0;
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) fail_msg("filler: %s", strerror(errno));
  memset(block, 0x5a, sizeof block);
  while (done < want) {
    size_t k = want - done < (long long)sizeof block ? (size_t)(want - done)
                                                     : sizeof block;
    ssize_t w = write(fd, block, k);
    if (w <= 0) break;
    done += w;
  }
  close(fd);
  return done;
}

/* Messages of the full-disk test: ids and bodies by number. */
#define FULL_MAX 400
static char g_fid[FULL_MAX][OB_UUID_BUFLEN];
static char g_fbody[FULL_MAX][256];
static int g_fenq_ok[FULL_MAX];   /* ob_enqueue reported committed */
static int g_fenq_att[FULL_MAX];
static int g_fcommits[FULL_MAX];  /* committed handler runs */
static int g_fpending[64], g_fnpending;

static int full_index(const char* id) {
  for (int i = 0; i < FULL_MAX; i++)
    if (strcmp(g_fid[i], id) == 0) return i;
  return -1;
}

static int full_recorder(ob_tx_t* tx, const ob_message_t* msg, void* arg) {
  (void)tx;
  (void)arg;
  if (g_fnpending < 64) g_fpending[g_fnpending++] = full_index(msg->id);
  return OB_DONE;
}

static int full_enqueue(ob_engine_t* e, int i) {
  ob_envelope_t env;
  int rc;
  memset(&env, 0, sizeof env);
  env.type = OB_PAYOUT_MESSAGE_TYPE;
  env.id = g_fid[i];
  env.body = g_fbody[i];
  env.body_len = strlen(g_fbody[i]);
  g_fenq_att[i] = 1;
  rc = ob_enqueue(e, &env);
  if (rc == 0) g_fenq_ok[i] = 1;
  return rc;
}

static int full_run_once(ob_engine_t* e, int* claimed) {
  ob_batch_result_t res;
  int rc;
  g_fnpending = 0;
  rc = ob_run_once(e, &res);
  *claimed = rc == 0 ? res.claimed : 0;
  if (rc == 0) {
    for (int k = 0; k < g_fnpending; k++)
      if (g_fpending[k] >= 0) g_fcommits[g_fpending[k]]++;
    if (res.retried || res.failed)
      viol(V_SPURIOUS, "ob_run_once: %d retried, %d failed", res.retried,
           res.failed);
  }
  g_fnpending = 0;
  return rc;
}

/* The failing call must be OB_ENOSPC with a message. */
static void full_expect(const char* call, int rc, const char* msg) {
  if (rc >= 0) return;
  if (-rc < 65) g_codes[-rc]++;
  if (rc != OB_ENOSPC)
    viol(V_CODE, "%s returned %s, expected OB_ENOSPC: %s", call,
         ob_err_name(rc), msg);
  if (msg == NULL || msg[0] == '\0')
    viol(V_MSG, "%s returned %s with an empty message", call,
         ob_err_name(rc));
}

/* Every message 0..n-1: all-or-nothing, nothing reported committed
** missing. drained: everything enqueued must be handled exactly once. */
static void full_check(const char* path, int n, int drained,
                       const char* when) {
  sqlite3* db = NULL;
  sqlite3_stmt* st = NULL;
  char why[512];
  snprintf(g_where, sizeof g_where, "disk-full, %s", when);
  if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, "unix") != SQLITE_OK) {
    viol(V_INTEGRITY, "open: %s", db ? sqlite3_errmsg(db) : "?");
    sqlite3_close(db);
    return;
  }
  if (!integrity_ok(db, why, sizeof why)) {
    viol(V_INTEGRITY, "integrity_check: %s", why);
    sqlite3_close(db);
    return;
  }
  if (sqlite3_prepare_v2(
          db,
          "SELECT (SELECT count(*) FROM merchant_payout WHERE "
          "source_event_id=?1), (SELECT count(*) FROM outbox_event WHERE "
          "causation_id=?1), (SELECT count(*) FROM processed_message WHERE "
          "consumer_name='" OB_PAYOUT_CONSUMER "' AND message_id=?1), "
          "(SELECT count(*) FROM processed_message WHERE consumer_name='"
          REC_CONSUMER "' AND message_id=?1), (SELECT count(*) FROM queue "
          "WHERE message_id=?1), (SELECT count(*) FROM failed_message WHERE "
          "message_id=?1)",
          -1, &st, NULL) != SQLITE_OK) {
    viol(V_INTEGRITY, "prepare: %s", sqlite3_errmsg(db));
    sqlite3_close(db);
    return;
  }
  for (int i = 0; i < n; i++) {
    long long P, O, D, R, Q, F;
    sqlite3_bind_text(st, 1, g_fid[i], -1, SQLITE_STATIC);
    if (sqlite3_step(st) != SQLITE_ROW) {
      viol(V_INTEGRITY, "read %s: %s", g_fid[i], sqlite3_errmsg(db));
      break;
    }
    P = sqlite3_column_int64(st, 0);
    O = sqlite3_column_int64(st, 1);
    D = sqlite3_column_int64(st, 2);
    R = sqlite3_column_int64(st, 3);
    Q = sqlite3_column_int64(st, 4);
    F = sqlite3_column_int64(st, 5);
    sqlite3_reset(st);
    if (!(P == O && O == D && D == R) || (P > 0 && Q > 0))
      viol(V_PARTIAL, "message %d half-applied: payout %lld, outbox %lld, "
           "dedup %lld+%lld, queued %lld", i, P, O, D, R, Q);
    if (P > 1 || Q > 1 || g_fcommits[i] > 1)
      viol(V_DUP, "message %d: payouts %lld, queued %lld, handled %d times",
           i, P, Q, g_fcommits[i]);
    if (F > 0) viol(V_SPURIOUS, "message %d in the failure store", i);
    if (g_fenq_ok[i] && P == 0 && Q == 0)
      viol(V_LOST, "message %d: enqueue reported committed: gone", i);
    if (g_fcommits[i] > 0 && P == 0)
      viol(V_LOST, "message %d: handling reported committed: gone", i);
    if (!g_fenq_att[i] && (P > 0 || Q > 0))
      viol(V_LOST, "message %d was never enqueued but is there", i);
    if (drained && g_fenq_ok[i] && (P != 1 || Q != 0 || g_fcommits[i] != 1))
      viol(V_RESUME, "message %d not handled exactly once after resuming: "
           "payouts %lld, queued %lld, handled %d times", i, P, Q,
           g_fcommits[i]);
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
}

/* Run the queue to empty on engine e. Returns 0 or the failing code. */
static int full_drain(ob_engine_t* e, const char* when) {
  int claimed = 0, rc;
  for (int k = 0; k < 1000; k++) {
    rc = full_run_once(e, &claimed);
    if (rc < 0) {
      viol(V_RESUME, "%s: ob_run_once: %s: %s (%lld bytes free)", when,
           ob_err_name(rc), ob_errmsg(e), free_bytes(g_mnt));
      return rc;
    }
    if (claimed == 0) return 0;
  }
  viol(V_RESUME, "%s: the queue never emptied", when);
  return OB_ESTATE;
}

static long long file_size(const char* path) {
  struct stat sb;
  return stat(path, &sb) == 0 ? (long long)sb.st_size : 0;
}

static ob_engine_t* full_open(const ob_options_t* o, const char* when) {
  ob_engine_t* e = NULL;
  char err[512];
  int rc = ob_open(&e, o, err, sizeof err);
  if (rc != 0) {
    viol(V_RESUME, "%s: ob_open: %s: %s", when, ob_err_name(rc), err);
    return NULL;
  }
  assert_int_equal(ob_register_payout(e), 0);
  assert_int_equal(ob_register(e, OB_PAYOUT_MESSAGE_TYPE, REC_CONSUMER,
                               full_recorder, NULL), 0);
  rc = ob_check(e, check_cb, (void*)when);
  if (rc < 0) viol(V_INTEGRITY, "%s: ob_check: %s", when, ob_err_name(rc));
  return e;
}

/*
** The database is created on the empty tmpfs and closed first (a device
** that has run before: the schema is in the database file, not in the WAL).
** Round 1, enqueueing fills the disk: a filler leaves 32 KiB, ob_enqueue
** until one fails; on the full disk also one ob_run_once and one
** ob_enqueue_many. Check. The filler goes; the SAME engine resends the
** refused messages and drains the queue (ADR 0005: it resumes by itself).
** Between the rounds the engine is closed (the close checkpoints and
** deletes the WAL, which only grows until then) and a new one opened.
** Round 2, handling fills the disk: 8 messages enqueued with space, a filler
** leaves 8 KiB, ob_run_once until one fails. Check. The filler goes; the
** same engine drains; a new engine finds nothing left.
** Round 3, the WAL alone fills the disk: the same engine enqueues and
** handles until a call fails, then retries ob_run_once on that handle as
** the runner would (printed: nothing frees the WAL's space while the
** engine stays open). A new engine after ob_close (which checkpoints)
** finishes; if the close could not checkpoint, the tmpfs is remounted at
** 2 MiB first.
*/
static void test_disk_full(void** state) {
  char* db_path;
  char* wal_path;
  char* filler;
  fake_clock_t clk;
  ob_options_t o;
  ob_engine_t* e = NULL;
  int rc, next = 0, claimed, round1_at = -1, round2_calls = 0;
  int round1_run_rc, round1_many_rc, round2_rc = 0;
  long long filler1, filler2, wal_full1, wal_drained1, wal_full2, wal3;
  int round3_handled = 0, round3_retry_fail = 0;
  double t0 = now_s();
  (void)state;
  reset_tallies();
  snprintf(g_where, sizeof g_where, "disk-full");
  for (int i = 0; i < FULL_MAX; i++) {
    snprintf(g_fid[i], sizeof g_fid[i], "0190b6d8-3ae7-7ca2-a653-%012d",
             1000 + i);
    fx_payment(1000 + i, g_fbody[i]);
  }
  db_path = ts_path(g_mnt, "full.db");
  wal_path = ts_path(g_mnt, "full.db-wal");
  filler = ts_path(g_mnt, "filler");
  fake_clock_init(&clk, FX_T0, 7);
  ob_options_init(&o);
  o.db_path = db_path;
  o.clock = &clk.clock;
  o.batch_size = 2;
  /* The real full disk, not the default cap a 512 KiB filesystem would get
  ** (docs/decisions/0021-default-cap.md): the path an explicit "no cap" and
  ** another program filling the disk still take. */
  o.max_db_bytes = OB_NO_DB_CAP;
  /* A device that has run before: the schema is in the database file (the
  ** close checkpointed it), not in a WAL that a full disk would pin. */
  e = full_open(&o, "creating the database on the empty tmpfs");
  if (e == NULL) fail_msg("ob_open on the empty tmpfs failed");
  ob_close(e);
  if (file_size(wal_path) != 0) fail_msg("the WAL survived ob_close");
  printf("disk-full: database %lld bytes after the migration, %lld bytes "
         "free\n", file_size(db_path), free_bytes(g_mnt));
  e = full_open(&o, "opening before round 1");
  if (e == NULL) fail_msg("ob_open failed");

  /* ---- round 1: ob_enqueue hits the full disk ---- */
  snprintf(g_where, sizeof g_where, "disk-full, round 1");
  filler1 = make_filler(filler, 32 * 1024);
  for (next = 0; next < 100; next++) {
    rc = full_enqueue(e, next);
    if (rc < 0) {
      full_expect("ob_enqueue", rc, ob_errmsg(e));
      printf("disk-full round 1: ob_enqueue of message %d: %s: %s\n", next,
             ob_err_name(rc), ob_errmsg(e));
      round1_at = next++;
      break;
    }
  }
  if (round1_at < 0) fail_msg("ob_enqueue never failed on a full disk");
  round1_run_rc = full_run_once(e, &claimed);
  full_expect("ob_run_once", round1_run_rc, ob_errmsg(e));
  {
    ob_envelope_t env[2];
    int results[2];
    memset(env, 0, sizeof env);
    for (int k = 0; k < 2; k++) {
      env[k].type = OB_PAYOUT_MESSAGE_TYPE;
      env[k].id = g_fid[next + k];
      env[k].body = g_fbody[next + k];
      env[k].body_len = strlen(g_fbody[next + k]);
      g_fenq_att[next + k] = 1;
    }
    round1_many_rc = ob_enqueue_many(e, env, 2, results);
    if (round1_many_rc == 2)
      g_fenq_ok[next] = g_fenq_ok[next + 1] = 1;
    else if (round1_many_rc >= 0)
      viol(V_PARTIAL, "ob_enqueue_many committed %d of 2", round1_many_rc);
    full_expect("ob_enqueue_many", round1_many_rc, ob_errmsg(e));
    next += 2;
  }
  wal_full1 = file_size(wal_path);
  printf("disk-full round 1: on the full disk ob_run_once: %s, "
         "ob_enqueue_many: %s (%lld bytes free, WAL %lld bytes)\n",
         ob_err_name(round1_run_rc), ob_err_name(round1_many_rc),
         free_bytes(g_mnt), wal_full1);
  full_check(db_path, next, 0, "round 1, disk full");
  unlink(filler);
  snprintf(g_where, sizeof g_where, "disk-full, round 1, space freed");
  for (int i = 0; i < next; i++) {
    if (g_fenq_ok[i]) continue;
    rc = full_enqueue(e, i); /* the producer resends what was refused */
    if (rc < 0)
      viol(V_RESUME, "re-enqueue of %d after freeing space: %s: %s", i,
           ob_err_name(rc), ob_errmsg(e));
  }
  full_drain(e, "round 1, after freeing space");
  full_check(db_path, next, 1, "round 1, resumed");
  wal_drained1 = file_size(wal_path);
  printf("disk-full round 1: after freeing %lld bytes the same engine "
         "drained the queue; the WAL grew from %lld to %lld bytes (it is "
         "checkpointed only at 1000 pages or at close)\n",
         filler1, wal_full1, wal_drained1);
  ob_close(e);
  printf("disk-full: after ob_close: WAL %lld bytes, database %lld, %lld "
         "bytes free\n", file_size(wal_path), file_size(db_path),
         free_bytes(g_mnt));
  e = full_open(&o, "between the rounds");
  if (e == NULL) fail_msg("cannot reopen between the rounds");
  snprintf(g_where, sizeof g_where, "disk-full, between the rounds");
  for (int i = 0; i < next; i++) {
    if (g_fenq_ok[i]) continue;
    rc = full_enqueue(e, i);
    if (rc < 0)
      viol(V_RESUME, "re-enqueue of %d after reopening: %s: %s", i,
           ob_err_name(rc), ob_errmsg(e));
  }
  full_drain(e, "between the rounds");
  full_check(db_path, next, 1, "between the rounds");

  /* ---- round 2: ob_run_once hits the full disk ---- */
  snprintf(g_where, sizeof g_where, "disk-full, round 2");
  for (int k = 0; k < 8; k++, next++) {
    rc = full_enqueue(e, next);
    if (rc < 0)
      viol(V_RESUME, "enqueue with space: %s: %s (%lld bytes free)",
           ob_err_name(rc), ob_errmsg(e), free_bytes(g_mnt));
  }
  filler2 = make_filler(filler, 8 * 1024);
  for (round2_calls = 1; round2_calls <= 20; round2_calls++) {
    round2_rc = full_run_once(e, &claimed);
    if (round2_rc < 0 || claimed == 0) break;
  }
  if (round2_rc >= 0) fail_msg("ob_run_once never failed on a full disk");
  full_expect("ob_run_once", round2_rc, ob_errmsg(e));
  wal_full2 = file_size(wal_path);
  printf("disk-full round 2: ob_run_once call %d: %s: %s (WAL %lld bytes)\n",
         round2_calls, ob_err_name(round2_rc), ob_errmsg(e), wal_full2);
  full_check(db_path, next, 0, "round 2, disk full");
  unlink(filler);
  full_drain(e, "round 2, after freeing space");
  full_check(db_path, next, 1, "round 2, resumed");
  ob_close(e);

  /* ---- a new engine: nothing left, ob_check clean ---- */
  e = full_open(&o, "reopened after round 2");
  if (e != NULL) {
    full_drain(e, "reopened after round 2");
    ob_close(e);
  }
  full_check(db_path, next, 1, "reopened after round 2");

  /* ---- round 3: the WAL alone fills the disk ---- */
  snprintf(g_where, sizeof g_where, "disk-full, round 3");
  e = full_open(&o, "round 3");
  if (e == NULL) fail_msg("cannot open for round 3");
  for (; next < FULL_MAX; next++, round3_handled++) {
    rc = full_enqueue(e, next);
    for (int k = 0; rc == 0 && k < 10; k++) {
      rc = full_run_once(e, &claimed);
      if (rc == 0 && claimed == 0) break;
    }
    if (rc < 0) {
      full_expect("ob_enqueue/ob_run_once", rc, ob_errmsg(e));
      next++;
      break;
    }
  }
  wal3 = file_size(wal_path);
  full_check(db_path, next, 0, "round 3, the WAL filled the disk");
  /* What the runner does on OB_ENOSPC: back off and call ob_run_once again
  ** on the same handle. Nothing frees space in between. */
  for (int k = 0; k < 3; k++) {
    int rrc = full_run_once(e, &claimed);
    full_expect("ob_run_once (retry on the same handle)", rrc, ob_errmsg(e));
    round3_retry_fail += rrc < 0;
  }
  ob_close(e);
  e = NULL;
  printf("disk-full round 3: the same engine handled %d messages until its "
         "WAL filled the disk (WAL %lld bytes, database %lld); %d of 3 "
         "retries of ob_run_once on that handle failed too; ob_close "
         "checkpointed: WAL %lld bytes, %lld bytes free\n", round3_handled,
         wal3, file_size(db_path), round3_retry_fail, file_size(wal_path),
         free_bytes(g_mnt));
  if (file_size(wal_path) > 0) {
    /* The close could not checkpoint (the database file must grow): space
    ** comes back by a bigger mount. */
    if (mount("tmpfs", g_mnt, "tmpfs", MS_REMOUNT | MS_NOSUID | MS_NODEV,
              "size=" FULL_SIZE_BIG) != 0)
      fail_msg("remount size=" FULL_SIZE_BIG ": %s", strerror(errno));
    printf("disk-full round 3: remounted with size=" FULL_SIZE_BIG "\n");
  }
  e = full_open(&o, "round 3, reopened");
  if (e != NULL) {
    for (int i = 0; i < next; i++) {
      if (g_fenq_ok[i]) continue;
      rc = full_enqueue(e, i);
      if (rc < 0)
        viol(V_RESUME, "round 3: re-enqueue of %d: %s: %s", i,
             ob_err_name(rc), ob_errmsg(e));
    }
    full_drain(e, "round 3, reopened");
    ob_close(e);
  }
  full_check(db_path, next, 1, "round 3, resumed");
  {
    int handled = 0, enq = 0;
    for (int i = 0; i < next; i++) {
      handled += g_fcommits[i] == 1;
      enq += g_fenq_ok[i];
    }
    printf("disk-full: tmpfs " FULL_SIZE "; round 1: ob_enqueue refused "
           "message %d, then ob_run_once %s, ob_enqueue_many %s; round 2: "
           "ob_run_once refused (call %d); round 3: the WAL filled the disk "
           "after %d messages; %d of %d committed messages handled exactly "
           "once; ",
           round1_at, ob_err_name(round1_run_rc), ob_err_name(round1_many_rc),
           round2_calls, round3_handled, handled, enq);
    print_violations();
    printf("; failing calls: ");
    print_codes();
    printf("; fillers %lld + %lld bytes; %.1f s\n", filler1, filler2,
           now_s() - t0);
    if (handled != enq)
      viol(V_RESUME, "%d committed messages, %d handled exactly once", enq,
           handled);
  }
  free(db_path);
  free(wal_path);
  free(filler);
  assert_int_equal(total_violations(), 0);
}

/* ---- main ------------------------------------------------------------------ */

int main(int argc, char** argv) {
  /* First of all: SQLite's allocator can only be replaced before
  ** sqlite3_initialize(). */
  int rc = fa_sqlite_install();
  const char* what = argc > 1 ? argv[1] : "";
  if (rc != 0) {
    fprintf(stderr, "SQLITE_CONFIG_MALLOC: %d\n", rc);
    return 1;
  }
  if (sqlite3_initialize() != SQLITE_OK) return 1;
  setvbuf(stdout, NULL, _IOLBF, 0);

  for (int i = 0; i < NMSG; i++) {
    fx_event(100 + i, g_id[i]);
    fx_payment(100 + i, g_body[i]);
  }
  if (strcmp(what, "io") == 0) {
    const struct CMUnitTest t[] = {cmocka_unit_test(test_io_errors)};
    if (fv_install() != 0) {
      fprintf(stderr, "faultvfs: cannot register\n");
      return 1;
    }
    return cmocka_run_group_tests_name("faults_io", t, NULL, NULL);
  }
  if (strcmp(what, "oom") == 0) {
    const struct CMUnitTest t[] = {cmocka_unit_test(test_oom)};
    return cmocka_run_group_tests_name("faults_oom", t, NULL, NULL);
  }
  if (strcmp(what, "disk_full") == 0) {
    const struct CMUnitTest t[] = {cmocka_unit_test(test_disk_full)};
    char why[512];
    if (mount_small_tmpfs(why, sizeof why) == NULL) {
      printf("disk-full: skipped: %s\n", why);
      return 77;
    }
    return cmocka_run_group_tests_name("faults_disk_full", t, NULL, NULL);
  }
  fprintf(stderr, "usage: %s io|oom|disk_full\n", argv[0]);
  return 2;
}
