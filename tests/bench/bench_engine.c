/* ob-bench-engine: oncebox against the raw SQLite limit (issue 2, Benchmark).
**
**   ob-bench-engine [-n N] [-g N] [-b B] [-r R] [-s SEED]
**
** Four variants, each in a fresh process (re-executed from /proc/self/exe,
** so its peak RSS is its own), on a fresh database in $TMPDIR or /tmp, WAL
** and synchronous=FULL:
**   (a) raw SQLite: the engine's statements hand-written with prepared
**       statements: BEGIN IMMEDIATE; SELECT the next queue row(s); per row
**       INSERT processed_message .. ON CONFLICT DO NOTHING RETURNING, INSERT
**       merchant_payout, INSERT outbox_event, DELETE the queue row; COMMIT.
**       One message per transaction, then B (100) per transaction.
**   (b) oncebox through its public API: ob_enqueue_many up front, then an
**       ob_run_once loop with the payout module, batch_size 1, then B.
** The same N PaymentCaptured messages (seeded) feed both. Enqueueing is NOT
** part of the handling figure; it is timed on its own (1000 messages per
** transaction for both) and an end-to-end figure adds the two.
**
** fsyncs are counted by a VFS shim registered as the default VFS: it wraps
** "unix" and counts xSync calls (each is one fdatasync, plus one directory
** fsync the first time a new file is synced). No LD_PRELOAD. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/statfs.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <sqlite3.h>

#include "oncebox.h"
#include "tests/support/payment_gen.h"

#define ENQUEUE_CHUNK 1000
#define TMPFS_MAGIC_ 0x01021994

/* ---- counting fsyncs: a VFS shim over "unix" ----------------------------- */

typedef struct shim_file_s {
  sqlite3_file base;
  sqlite3_file* real;  /* the unix file, allocated right after this struct */
} shim_file_t;

static sqlite3_vfs* g_unix;
static sqlite3_vfs g_shim;
static sqlite3_io_methods g_methods;
static int64_t g_syncs;
static int64_t g_written;  /* bytes through xWrite: WAL, db at checkpoint */

#define REAL(f) (((shim_file_t*)(f))->real)
#define FWD(f) REAL(f)->pMethods

static int s_close(sqlite3_file* f) { return FWD(f)->xClose(REAL(f)); }
static int s_read(sqlite3_file* f, void* b, int n, sqlite3_int64 off) {
  return FWD(f)->xRead(REAL(f), b, n, off);
}
static int s_write(sqlite3_file* f, const void* b, int n, sqlite3_int64 off) {
  g_written += n;
  return FWD(f)->xWrite(REAL(f), b, n, off);
}
static int s_truncate(sqlite3_file* f, sqlite3_int64 size) {
  return FWD(f)->xTruncate(REAL(f), size);
}
static int s_sync(sqlite3_file* f, int flags) {
  g_syncs++;
  return FWD(f)->xSync(REAL(f), flags);
}
static int s_file_size(sqlite3_file* f, sqlite3_int64* size) {
  return FWD(f)->xFileSize(REAL(f), size);
}
static int s_lock(sqlite3_file* f, int l) { return FWD(f)->xLock(REAL(f), l); }
static int s_unlock(sqlite3_file* f, int l) {
  return FWD(f)->xUnlock(REAL(f), l);
}
static int s_check_reserved(sqlite3_file* f, int* out) {
  return FWD(f)->xCheckReservedLock(REAL(f), out);
}
static int s_file_control(sqlite3_file* f, int op, void* arg) {
  return FWD(f)->xFileControl(REAL(f), op, arg);
}
static int s_sector_size(sqlite3_file* f) {
  return FWD(f)->xSectorSize(REAL(f));
}
static int s_device_chars(sqlite3_file* f) {
  return FWD(f)->xDeviceCharacteristics(REAL(f));
}
static int s_shm_map(sqlite3_file* f, int pg, int sz, int ext,
                     void volatile** pp) {
  return FWD(f)->xShmMap(REAL(f), pg, sz, ext, pp);
}
static int s_shm_lock(sqlite3_file* f, int off, int n, int flags) {
  return FWD(f)->xShmLock(REAL(f), off, n, flags);
}
static void s_shm_barrier(sqlite3_file* f) { FWD(f)->xShmBarrier(REAL(f)); }
static int s_shm_unmap(sqlite3_file* f, int del) {
  return FWD(f)->xShmUnmap(REAL(f), del);
}
static int s_fetch(sqlite3_file* f, sqlite3_int64 off, int amt, void** pp) {
  return FWD(f)->xFetch(REAL(f), off, amt, pp);
}
static int s_unfetch(sqlite3_file* f, sqlite3_int64 off, void* p) {
  return FWD(f)->xUnfetch(REAL(f), off, p);
}

static int s_open(sqlite3_vfs* vfs, const char* name, sqlite3_file* f,
                  int flags, int* out_flags) {
  shim_file_t* p = (shim_file_t*)f;
  int rc;
  (void)vfs;
  p->real = (sqlite3_file*)(p + 1);
  rc = g_unix->xOpen(g_unix, name, p->real, flags, out_flags);
  /* SQLite calls xClose iff pMethods is set, even when xOpen failed. */
  p->base.pMethods = p->real->pMethods ? &g_methods : NULL;
  return rc;
}

static void shim_register(void) {
  static const sqlite3_io_methods m = {
      3, s_close, s_read, s_write, s_truncate, s_sync, s_file_size, s_lock,
      s_unlock, s_check_reserved, s_file_control, s_sector_size,
      s_device_chars, s_shm_map, s_shm_lock, s_shm_barrier, s_shm_unmap,
      s_fetch, s_unfetch};
  g_unix = sqlite3_vfs_find("unix");
  if (g_unix == NULL) {
    fprintf(stderr, "bench: no unix VFS\n");
    exit(1);
  }
  g_methods = m;
  /* Every other method (pAppData included) stays unix's own. */
  g_shim = *g_unix;
  g_shim.pNext = NULL;
  g_shim.zName = "ob-bench-sync-count";
  g_shim.szOsFile = (int)sizeof(shim_file_t) + g_unix->szOsFile;
  g_shim.xOpen = s_open;
  if (sqlite3_vfs_register(&g_shim, 1) != SQLITE_OK) {
    fprintf(stderr, "bench: cannot register the VFS shim\n");
    exit(1);
  }
}

/* ---- timing (messages come from tests/support/payment_gen.c) ------------- */

static int64_t wall_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- one variant, in the child -------------------------------------------- */

typedef struct result_s {
  int ok;
  int64_t n;
  double enqueue_s, handle_s;
  int64_t enqueue_syncs, handle_syncs;
  int64_t handle_bytes;
} result_t;

static void die_sql(sqlite3* db, const char* what) {
  fprintf(stderr, "bench: %s: %s\n", what, sqlite3_errmsg(db));
  exit(1);
}

static void die_ob(ob_engine_t* e, int rc, const char* what) {
  fprintf(stderr, "bench: %s: %s: %s\n", what, ob_err_name(rc), ob_errmsg(e));
  exit(1);
}

static void exec_or_die(sqlite3* db, const char* sql) {
  if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK) die_sql(db, sql);
}

static sqlite3_stmt* prep(sqlite3* db, const char* sql) {
  sqlite3_stmt* st = NULL;
  if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL) !=
      SQLITE_OK)
    die_sql(db, sql);
  return st;
}

/* Step a statement that may return one row; returns 1 if it did. */
static int step_once(sqlite3* db, sqlite3_stmt* st, const char* what) {
  int rc = sqlite3_step(st), row = rc == SQLITE_ROW;
  if (row) rc = sqlite3_step(st);
  if (rc != SQLITE_DONE) die_sql(db, what);
  sqlite3_reset(st);
  return row;
}

/* A time-ordered id, as the engine's UUIDv7 (here: ms + counter). */
static void uuid7(uint64_t* s, uint64_t* seq, char out[37]) {
  uint64_t ms = (uint64_t)wall_ms(), b = ts_rnd(s), q = (*seq)++;
  snprintf(out, 37, "%08x-%04x-7%03x-%04x-%012llx", (unsigned)(ms >> 16),
           (unsigned)(ms & 0xffff), (unsigned)((q >> 16) & 0xfff),
           (unsigned)(0x8000 | (q & 0x3fff)),
           (unsigned long long)(b & 0xffffffffffffULL));
}

typedef struct raw_row_s {
  int64_t rowid;
  char id[37];
  char body[256];
  int body_len;
} raw_row_t;

/* (a): the engine's statements (storage/queue.c, processed.c, ...), by hand. */
static void run_raw(const char* path, int64_t n, int batch, uint64_t seed,
                    result_t* res) {
  ob_options_t o;
  ob_engine_t* e = NULL;
  sqlite3* db = NULL;
  sqlite3_stmt *ins, *sel, *claim, *pay, *out, *del;
  raw_row_t* rows = calloc((size_t)batch, sizeof *rows);
  ts_gen_t g;
  uint64_t idrng = seed ^ 0x5bd1e995, seq = 0;
  int64_t done = 0;
  double t0;
  char err[256];
  int rc;

  if (rows == NULL) exit(1);
  /* The schema, byte for byte the engine's: let ob_open create it (not
  ** timed), then close it and never use oncebox again in this process. */
  ob_options_init(&o);
  o.db_path = path;
  if ((rc = ob_open(&e, &o, err, sizeof err)) < 0) {
    fprintf(stderr, "bench: schema: %s\n", err);
    exit(1);
  }
  ob_close(e);

  if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
                      NULL) != SQLITE_OK)
    die_sql(db, "open");
  sqlite3_busy_timeout(db, 5000);
  /* The engine's pragmas (storage/db.c). */
  exec_or_die(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
                  "PRAGMA foreign_keys=ON; PRAGMA temp_store=MEMORY;"
                  "PRAGMA journal_size_limit=4194304;"
                  "PRAGMA wal_autocheckpoint=1000;");
  ins = prep(db, "INSERT INTO queue(queue_name, message_id, type, headers,"
                 " body, available_at, created_at)"
                 " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
  sel = prep(db, "SELECT id, queue_name, message_id, type, headers, body,"
                 " attempts, first_failed_at, created_at FROM queue"
                 " WHERE available_at <= ?1 AND (lease_until IS NULL OR"
                 " lease_until <= ?1) ORDER BY available_at, id LIMIT ?2");
  claim = prep(db, "INSERT INTO processed_message(consumer_name, message_id,"
                   " processed_at) VALUES (?1, ?2, ?3)"
                   " ON CONFLICT DO NOTHING RETURNING 1");
  pay = prep(db, "INSERT INTO merchant_payout(id, source_payment_id,"
                 " merchant_id, amount_minor, currency, source_event_id,"
                 " created_at) VALUES (?1,?2,?3,?4,?5,?6,?7)"
                 " ON CONFLICT(source_payment_id) DO NOTHING RETURNING 1");
  out = prep(db, "INSERT INTO outbox_event(id, causation_id, event_type,"
                 " aggregate_id, payload, created_at, next_attempt_at)"
                 " VALUES (?1,?2,?3,?4,?5,?6,?6)");
  del = prep(db, "DELETE FROM queue WHERE id = ?1");

  /* Enqueue, ENQUEUE_CHUNK per transaction, as ob_enqueue_many below. */
  ts_gen_init(&g, seed);
  g_syncs = 0;
  t0 = ts_mono_s();
  for (int64_t i = 0; i < n;) {
    int64_t now = wall_ms();
    exec_or_die(db, "BEGIN IMMEDIATE");
    for (int k = 0; k < ENQUEUE_CHUNK && i < n; k++, i++) {
      ts_msg_t m;
      ts_gen_next(&g, &m);
      sqlite3_bind_text(ins, 1, "default", -1, SQLITE_STATIC);
      sqlite3_bind_text(ins, 2, m.id, -1, SQLITE_STATIC);
      sqlite3_bind_text(ins, 3, OB_PAYOUT_MESSAGE_TYPE, -1, SQLITE_STATIC);
      sqlite3_bind_null(ins, 4);
      sqlite3_bind_blob(ins, 5, m.body, (int)m.body_len, SQLITE_STATIC);
      sqlite3_bind_int64(ins, 6, now);
      sqlite3_bind_int64(ins, 7, now);
      step_once(db, ins, "enqueue");
    }
    exec_or_die(db, "COMMIT");
  }
  res->enqueue_s = ts_mono_s() - t0;
  res->enqueue_syncs = g_syncs;

  g_syncs = 0;
  g_written = 0;
  t0 = ts_mono_s();
  for (;;) {
    int64_t now;
    int got = 0;
    exec_or_die(db, "BEGIN IMMEDIATE");
    now = wall_ms();
    sqlite3_bind_int64(sel, 1, now);
    sqlite3_bind_int(sel, 2, batch);
    while ((rc = sqlite3_step(sel)) == SQLITE_ROW) {
      raw_row_t* r = &rows[got++];
      r->rowid = sqlite3_column_int64(sel, 0);
      snprintf(r->id, sizeof r->id, "%s", sqlite3_column_text(sel, 2));
      r->body_len = sqlite3_column_bytes(sel, 5);
      if (r->body_len >= (int)sizeof r->body) die_sql(db, "body too long");
      memcpy(r->body, sqlite3_column_blob(sel, 5), (size_t)r->body_len);
      r->body[r->body_len] = '\0';
    }
    if (rc != SQLITE_DONE) die_sql(db, "select");
    sqlite3_reset(sel);
    if (got == 0) {
      exec_or_die(db, "COMMIT");
      break;
    }
    for (int i = 0; i < got; i++) {
      raw_row_t* r = &rows[i];
      sqlite3_bind_text(claim, 1, OB_PAYOUT_CONSUMER, -1, SQLITE_STATIC);
      sqlite3_bind_text(claim, 2, r->id, -1, SQLITE_STATIC);
      sqlite3_bind_int64(claim, 3, now);
      if (step_once(db, claim, "claim")) {
        cJSON* j = cJSON_ParseWithLength(r->body, (size_t)r->body_len);
        const char* payment = cJSON_GetStringValue(
            cJSON_GetObjectItemCaseSensitive(j, "paymentId"));
        const char* merchant = cJSON_GetStringValue(
            cJSON_GetObjectItemCaseSensitive(j, "merchantId"));
        const char* currency = cJSON_GetStringValue(
            cJSON_GetObjectItemCaseSensitive(j, "currency"));
        const cJSON* amount =
            cJSON_GetObjectItemCaseSensitive(j, "amountInMinorUnits");
        char payout_id[37], event_id[37], payload[320];
        int64_t minor;
        if (!payment || !merchant || !currency || !cJSON_IsNumber(amount)) {
          fprintf(stderr, "bench: bad body %s\n", r->body);
          exit(1);
        }
        minor = (int64_t)cJSON_GetNumberValue(amount);
        uuid7(&idrng, &seq, payout_id);
        sqlite3_bind_text(pay, 1, payout_id, -1, SQLITE_STATIC);
        sqlite3_bind_text(pay, 2, payment, -1, SQLITE_STATIC);
        sqlite3_bind_text(pay, 3, merchant, -1, SQLITE_STATIC);
        sqlite3_bind_int64(pay, 4, minor);
        sqlite3_bind_text(pay, 5, currency, -1, SQLITE_STATIC);
        sqlite3_bind_text(pay, 6, r->id, -1, SQLITE_STATIC);
        sqlite3_bind_int64(pay, 7, now);
        if (!step_once(db, pay, "payout")) die_sql(db, "payout conflict");
        snprintf(payload, sizeof payload,
                 "{\"payoutId\":\"%s\",\"paymentId\":\"%s\","
                 "\"merchantId\":\"%s\",\"amountInMinorUnits\":%" PRId64
                 ",\"currency\":\"%s\"}",
                 payout_id, payment, merchant, minor, currency);
        uuid7(&idrng, &seq, event_id);
        sqlite3_bind_text(out, 1, event_id, -1, SQLITE_STATIC);
        sqlite3_bind_text(out, 2, r->id, -1, SQLITE_STATIC);
        sqlite3_bind_text(out, 3, OB_PAYOUT_EVENT_TYPE, -1, SQLITE_STATIC);
        sqlite3_bind_text(out, 4, payment, -1, SQLITE_STATIC);
        sqlite3_bind_text(out, 5, payload, -1, SQLITE_STATIC);
        sqlite3_bind_int64(out, 6, now);
        step_once(db, out, "outbox");
        cJSON_Delete(j);
      }
      sqlite3_bind_int64(del, 1, r->rowid);
      step_once(db, del, "ack");
      done++;
    }
    exec_or_die(db, "COMMIT");
  }
  res->handle_s = ts_mono_s() - t0;
  res->handle_syncs = g_syncs;
  res->handle_bytes = g_written;
  res->n = done;

  {
    sqlite3_stmt* c = prep(db, "SELECT (SELECT count(*) FROM merchant_payout)"
                               " + (SELECT count(*) FROM outbox_event),"
                               " (SELECT count(*) FROM queue)");
    if (sqlite3_step(c) != SQLITE_ROW) die_sql(db, "count");
    res->ok = sqlite3_column_int64(c, 0) == 2 * n &&
              sqlite3_column_int64(c, 1) == 0 && done == n;
    sqlite3_finalize(c);
  }
  sqlite3_finalize(ins);
  sqlite3_finalize(sel);
  sqlite3_finalize(claim);
  sqlite3_finalize(pay);
  sqlite3_finalize(out);
  sqlite3_finalize(del);
  sqlite3_close(db);
  free(rows);
}

/* (b): oncebox through its public API. */
static void run_oncebox(const char* path, int64_t n, int batch, uint64_t seed,
                        result_t* res) {
  ob_options_t o;
  ob_engine_t* e = NULL;
  ob_envelope_t* envs = calloc(ENQUEUE_CHUNK, sizeof *envs);
  ts_msg_t* msgs = calloc(ENQUEUE_CHUNK, sizeof *msgs);
  int* results = calloc(ENQUEUE_CHUNK, sizeof *results);
  ob_stats_t st;
  ts_gen_t g;
  int64_t done = 0;
  double t0;
  char err[256];
  int rc;

  if (envs == NULL || msgs == NULL || results == NULL) exit(1);
  ob_options_init(&o);
  o.db_path = path;
  o.batch_size = batch;
  if ((rc = ob_open(&e, &o, err, sizeof err)) < 0) {
    fprintf(stderr, "bench: open: %s\n", err);
    exit(1);
  }
  if ((rc = ob_register_payout(e)) < 0) die_ob(e, rc, "register");

  ts_gen_init(&g, seed);
  g_syncs = 0;
  t0 = ts_mono_s();
  for (int64_t i = 0; i < n;) {
    int k = 0;
    for (; k < ENQUEUE_CHUNK && i < n; k++, i++) {
      ts_gen_next(&g, &msgs[k]);
      memset(&envs[k], 0, sizeof envs[k]);
      envs[k].id = msgs[k].id;
      envs[k].type = OB_PAYOUT_MESSAGE_TYPE;
      envs[k].body = msgs[k].body;
      envs[k].body_len = msgs[k].body_len;
    }
    rc = ob_enqueue_many(e, envs, (size_t)k, results);
    if (rc != k) die_ob(e, rc < 0 ? rc : OB_EINVAL, "enqueue");
  }
  res->enqueue_s = ts_mono_s() - t0;
  res->enqueue_syncs = g_syncs;

  g_syncs = 0;
  g_written = 0;
  t0 = ts_mono_s();
  for (;;) {
    ob_batch_result_t r;
    rc = ob_run_once(e, &r);
    if (rc < 0) die_ob(e, rc, "ob_run_once");
    if (r.claimed == 0) break;
    done += r.handled;
  }
  res->handle_s = ts_mono_s() - t0;
  res->handle_syncs = g_syncs;
  res->handle_bytes = g_written;
  res->n = done;

  if ((rc = ob_stats(e, &st)) < 0) die_ob(e, rc, "stats");
  res->ok = st.payouts == n && st.outbox_unpublished == n &&
            st.queue_ready + st.queue_delayed == 0 && st.failed == 0 &&
            done == n;
  ob_close(e);
  free(envs);
  free(msgs);
  free(results);
}

/* ---- the parent: run each variant in its own process ---------------------- */

typedef struct variant_s {
  const char* label;
  int raw;
  int group;   /* 0: one message per transaction, 1: group commit */
} variant_t;

static const variant_t variants[] = {
    {"(a) raw SQLite", 1, 0},
    {"(b) oncebox", 0, 0},
    {"(a) raw SQLite", 1, 1},
    {"(b) oncebox", 0, 1},
};
#define NVARIANTS 4

typedef struct sample_s {
  result_t r;
  long maxrss_kib;
} sample_t;

static int child_main(int argc, char** argv) {
  /* --child VARIANT N BATCH SEED FD DIR */
  result_t res;
  char path[4096];
  int v, fd, batch;
  int64_t n;
  uint64_t seed;
  if (argc != 8) return 2;
  v = atoi(argv[2]);
  n = strtoll(argv[3], NULL, 10);
  batch = atoi(argv[4]);
  seed = strtoull(argv[5], NULL, 10);
  fd = atoi(argv[6]);
  snprintf(path, sizeof path, "%s/bench-%d.db", argv[7], v);
  memset(&res, 0, sizeof res);
  shim_register();
  if (variants[v].raw) run_raw(path, n, batch, seed, &res);
  else run_oncebox(path, n, batch, seed, &res);
  if (write(fd, &res, sizeof res) != (ssize_t)sizeof res) return 1;
  return res.ok ? 0 : 3;
}

static void remove_db(const char* dir, int v) {
  static const char* const sfx[] = {"", "-wal", "-shm"};
  char p[4200];
  for (int i = 0; i < 3; i++) {
    snprintf(p, sizeof p, "%s/bench-%d.db%s", dir, v, sfx[i]);
    unlink(p);
  }
}

static int run_variant(int v, int64_t n, int batch, uint64_t seed,
                       const char* dir, sample_t* out) {
  int fds[2], status;
  pid_t pid;
  struct rusage ru;
  char sv[16], sn[32], sb[16], ss[32], sfd[16];
  ssize_t got;

  if (pipe(fds) != 0) return -1;
  snprintf(sv, sizeof sv, "%d", v);
  snprintf(sn, sizeof sn, "%" PRId64, n);
  snprintf(sb, sizeof sb, "%d", batch);
  snprintf(ss, sizeof ss, "%" PRIu64, seed);
  snprintf(sfd, sizeof sfd, "%d", fds[1]);
  fflush(stdout);
  pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    close(fds[0]);
    /* A fresh image: the peak RSS is this variant's alone. */
    execl("/proc/self/exe", "ob-bench-engine", "--child", sv, sn, sb, ss, sfd,
          dir, (char*)NULL);
    _exit(127);
  }
  close(fds[1]);
  memset(out, 0, sizeof *out);
  got = read(fds[0], &out->r, sizeof out->r);
  close(fds[0]);
  if (wait4(pid, &status, 0, &ru) != pid) return -1;
  remove_db(dir, v);
  out->maxrss_kib = ru.ru_maxrss;
  if (got != (ssize_t)sizeof out->r || !WIFEXITED(status) ||
      WEXITSTATUS(status) != 0) {
    fprintf(stderr, "bench: variant %d failed (status 0x%x)%s\n", v, status,
            got == (ssize_t)sizeof out->r && !out->r.ok
                ? ": wrong counts after handling" : "");
    return -1;
  }
  return 0;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static double median(double* v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

typedef struct summary_s {
  int64_t n;
  double rate, rate_min, rate_max, e2e_rate, enq_rate, kib_per_msg;
  double syncs_per_msg, e2e_syncs_per_msg;
  double rss_mib;
} summary_t;

static void summarize(sample_t* s, int reps, summary_t* out) {
  double rate[64], e2e[64], enq[64], rss[64];
  for (int i = 0; i < reps; i++) {
    const result_t* r = &s[i].r;
    rate[i] = (double)r->n / r->handle_s;
    e2e[i] = (double)r->n / (r->handle_s + r->enqueue_s);
    enq[i] = (double)r->n / r->enqueue_s;
    rss[i] = (double)s[i].maxrss_kib / 1024.0;
  }
  out->n = s[0].r.n;
  out->rate = median(rate, reps);
  out->rate_min = rate[0];          /* sorted by median() */
  out->rate_max = rate[reps - 1];
  out->kib_per_msg =
      (double)s[0].r.handle_bytes / 1024.0 / (double)s[0].r.n;
  out->e2e_rate = median(e2e, reps);
  out->enq_rate = median(enq, reps);
  out->rss_mib = median(rss, reps);
  /* fsync counts are deterministic; report the first run's. */
  out->syncs_per_msg = (double)s[0].r.handle_syncs / (double)s[0].r.n;
  out->e2e_syncs_per_msg =
      (double)(s[0].r.handle_syncs + s[0].r.enqueue_syncs) / (double)s[0].r.n;
}

static void usage(FILE* f) {
  fprintf(f,
          "usage: ob-bench-engine [-n N] [-g N] [-b B] [-r R] [-s SEED]\n"
          "  -n N     messages for the one-per-transaction runs (5000)\n"
          "  -g N     messages for the group-commit runs (50000)\n"
          "  -b B     messages per transaction with group commit (100)\n"
          "  -r R     runs of each variant, medians reported (3)\n"
          "  -s SEED  message generator seed (20261130)\n"
          "The databases go to $TMPDIR or /tmp; use a real disk, not tmpfs.\n");
}

int main(int argc, char** argv) {
  int64_t n1 = 5000, n2 = 50000;
  int group = 100, reps = 3, c;
  uint64_t seed = 20261130;
  const char* base = getenv("TMPDIR");
  char dir[4096];
  struct statfs sfs;
  sample_t samples[NVARIANTS][64];
  summary_t sum[NVARIANTS];

  if (argc >= 2 && strcmp(argv[1], "--child") == 0)
    return child_main(argc, argv);
  while ((c = getopt(argc, argv, "n:g:b:r:s:h")) != -1) {
    switch (c) {
      case 'n': n1 = strtoll(optarg, NULL, 10); break;
      case 'g': n2 = strtoll(optarg, NULL, 10); break;
      case 'b': group = atoi(optarg); break;
      case 'r': reps = atoi(optarg); break;
      case 's': seed = strtoull(optarg, NULL, 10); break;
      case 'h': usage(stdout); return 0;
      default: usage(stderr); return 2;
    }
  }
  if (n1 < 1 || n2 < 1 || group < 2 || group > 10000 || reps < 1 ||
      reps > 64) {
    usage(stderr);
    return 2;
  }
  snprintf(dir, sizeof dir, "%s/ob-bench-XXXXXX", base && *base ? base : "/tmp");
  if (mkdtemp(dir) == NULL) {
    perror("mkdtemp");
    return 1;
  }

  printf("oncebox %s engine benchmark, SQLite %s\n", ob_version(),
         sqlite3_libversion());
  printf("databases in %s%s; WAL, synchronous=FULL; seed %" PRIu64
         "; %d run%s of each variant, medians\n",
         dir,
         statfs(dir, &sfs) == 0 && sfs.f_type == TMPFS_MAGIC_
             ? " (tmpfs: fsync is free here, figures are NOT meaningful)"
             : "",
         seed, reps, reps > 1 ? "s" : "");
  fflush(stdout);

  /* Interleave the variants run by run, alternating which goes first, so
  ** a noisy neighbour hurts both sides alike. */
  for (int r = 0; r < reps; r++) {
    for (int k = 0; k < NVARIANTS; k++) {
      int v = r % 2 ? (k ^ 1) : k;
      int grp = variants[v].group;
      if (run_variant(v, grp ? n2 : n1, grp ? group : 1,
                      seed, dir, &samples[v][r]) < 0) {
        rmdir(dir);
        return 1;
      }
    }
  }
  rmdir(dir);
  for (int v = 0; v < NVARIANTS; v++) summarize(samples[v], reps, &sum[v]);

  printf("\nhandling (dedup claim + payout + outbox row + ack, enqueue NOT "
         "timed)\n");
  printf("  %-34s %8s %8s %15s %9s %9s %9s\n", "variant", "messages",
         "msg/s", "(min-max)", "fsync/msg", "KiB/msg", "peak RSS");
  for (int g = 0; g < 2; g++) {
    const summary_t* a = &sum[2 * g];
    const summary_t* b = &sum[2 * g + 1];
    char la[64], lb[64];
    snprintf(la, sizeof la, "%s, %d msg/tx", variants[2 * g].label,
             g ? group : 1);
    snprintf(lb, sizeof lb, "%s, batch_size %d", variants[2 * g + 1].label,
             g ? group : 1);
    for (int k = 0; k < 2; k++) {
      const summary_t* x = k ? b : a;
      char range[32];
      snprintf(range, sizeof range, "(%.0f-%.0f)", x->rate_min, x->rate_max);
      printf("  %-34s %8" PRId64 " %8.0f %15s %9.3f %9.2f %5.1f MiB\n",
             k ? lb : la, x->n, x->rate, range, x->syncs_per_msg,
             x->kib_per_msg, x->rss_mib);
    }
    printf("  %-34s %8s %8.2f\n", "    ratio (b)/(a)", "", b->rate / a->rate);
  }
  printf("  group-commit speedup (batch %d vs 1): raw x%.1f, oncebox x%.1f\n",
         group, sum[2].rate / sum[0].rate, sum[3].rate / sum[1].rate);

  printf("\nend to end (enqueue in %d-message transactions + handling)\n",
         ENQUEUE_CHUNK);
  printf("  %-34s %10s %10s %10s\n", "variant", "enqueue/s", "e2e msg/s",
         "fsync/msg");
  for (int g = 0; g < 2; g++) {
    for (int k = 0; k < 2; k++) {
      const summary_t* s = &sum[2 * g + k];
      char l[64];
      snprintf(l, sizeof l, "%s, %s %d", variants[2 * g + k].label,
               k ? "batch_size" : "msg/tx", g ? group : 1);
      printf("  %-34s %10.0f %10.0f %10.3f\n", l, s->enq_rate, s->e2e_rate,
             s->e2e_syncs_per_msg);
    }
    printf("  %-34s %10s %10.2f\n", "    ratio (b)/(a)", "",
           sum[2 * g + 1].e2e_rate / sum[2 * g].e2e_rate);
  }
  printf("\nfsyncs: xSync calls through a counting VFS shim over \"unix\" "
         "(fdatasync each);\nKiB/msg: bytes through xWrite while handling "
         "(WAL frames, checkpoint writes);\npeak RSS: ru_maxrss of the "
         "variant's own process (fresh exec), enqueue included.\n");
  return 0;
}
