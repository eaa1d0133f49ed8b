/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers shared by the benchmarks; see bench_common.h. The raw
** SQLite loop is the one of bench_engine.c (same statements, same order). */
#include "tests/bench/bench_common.h"

#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <sqlite3.h>

#include "oncebox.h"
#include "oncebox_payout.h"
#include "tests/support/payment_gen.h"

#define TMPFS_MAGIC_ 0x01021994

/* ---- the VFS shim ------------------------------------------------------------ */

typedef struct shim_file_s {
  sqlite3_file base;
  int kind;            /* 0 other, 1 database, 2 wal */
  sqlite3_file* real;  /* the unix file, allocated right after this struct */
} shim_file_t;

bc_io_counts_t bc_io;

int64_t bc_io_syncs(void) {
  return bc_io.wal_syncs + bc_io.db_syncs + bc_io.other_syncs;
}
void (*bc_on_wal_sync)(void);

static sqlite3_vfs* g_unix;
static sqlite3_vfs g_shim;
static sqlite3_io_methods g_methods;

#define REAL(f) (((shim_file_t*)(f))->real)
#define FWD(f) REAL(f)->pMethods

static int s_close(sqlite3_file* f) { return FWD(f)->xClose(REAL(f)); }
static int s_read(sqlite3_file* f, void* b, int n, sqlite3_int64 off) {
  return FWD(f)->xRead(REAL(f), b, n, off);
}
static int s_write(sqlite3_file* f, const void* b, int n, sqlite3_int64 off) {
  bc_io.written += n;
  if (((shim_file_t*)f)->kind == 2) bc_io.wal_written += n;
  return FWD(f)->xWrite(REAL(f), b, n, off);
}
static int s_truncate(sqlite3_file* f, sqlite3_int64 size) {
  return FWD(f)->xTruncate(REAL(f), size);
}
static int s_sync(sqlite3_file* f, int flags) {
  int kind = ((shim_file_t*)f)->kind;
  int rc = FWD(f)->xSync(REAL(f), flags);
  if (kind == 2) {
    bc_io.wal_syncs++;
    if (rc == SQLITE_OK && bc_on_wal_sync) bc_on_wal_sync();
  } else if (kind == 1) {
    bc_io.db_syncs++;
  } else {
    bc_io.other_syncs++;
  }
  return rc;
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
  p->kind = (flags & SQLITE_OPEN_MAIN_DB) ? 1
            : (flags & SQLITE_OPEN_WAL)   ? 2
                                          : 0;
  rc = g_unix->xOpen(g_unix, name, p->real, flags, out_flags);
  /* SQLite calls xClose iff pMethods is set, even when xOpen failed. */
  p->base.pMethods = p->real->pMethods ? &g_methods : NULL;
  return rc;
}

void bc_shim_register(void) {
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
  g_shim = *g_unix;
  g_shim.pNext = NULL;
  g_shim.zName = "ob-bench-io-count";
  g_shim.szOsFile = (int)sizeof(shim_file_t) + g_unix->szOsFile;
  g_shim.xOpen = s_open;
  if (sqlite3_vfs_register(&g_shim, 1) != SQLITE_OK) {
    fprintf(stderr, "bench: cannot register the VFS shim\n");
    exit(1);
  }
}

/* ---- clocks --------------------------------------------------------------- */

double bc_cpu_s(void) {
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
         (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

double bc_mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int64_t bc_wall_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- /proc ---------------------------------------------------------------- */

int bc_proc_io(pid_t pid, bc_proc_io_t* out) {
  char path[64], line[128];
  FILE* f;
  long long v;
  int got = 0;
  if (pid == 0) snprintf(path, sizeof path, "/proc/self/io");
  else snprintf(path, sizeof path, "/proc/%d/io", (int)pid);
  memset(out, 0, sizeof *out);
  if ((f = fopen(path, "r")) == NULL) return -1;
  while (fgets(line, sizeof line, f)) {
    if (sscanf(line, "wchar: %lld", &v) == 1) out->wchar = v, got++;
    else if (sscanf(line, "write_bytes: %lld", &v) == 1)
      out->write_bytes = v, got++;
  }
  fclose(f);
  return got == 2 ? 0 : -1;
}

static long field_of(const char* path, const char* field) {
  char line[256];
  size_t fl = strlen(field);
  long v = -1;
  FILE* f = fopen(path, "r");
  if (f == NULL) return -1;
  while (fgets(line, sizeof line, f))
    if (strncmp(line, field, fl) == 0 && line[fl] == ':') {
      v = strtol(line + fl + 1, NULL, 10);
      break;
    }
  fclose(f);
  return v;
}

long bc_proc_status_kib(pid_t pid, const char* field) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
  return field_of(path, field);
}

int bc_proc_cpu(pid_t pid, bc_proc_cpu_t* out) {
  char dir[64], path[384], buf[1024];
  DIR* d;
  struct dirent* de;
  long tck = sysconf(_SC_CLK_TCK);
  memset(out, 0, sizeof *out);
  snprintf(dir, sizeof dir, "/proc/%d/task", (int)pid);
  if ((d = opendir(dir)) == NULL) return -1;
  while ((de = readdir(d)) != NULL) {
    FILE* f;
    char* p;
    unsigned long ut = 0, st = 0;
    if (de->d_name[0] == '.') continue;
    snprintf(path, sizeof path, "%s/%s/stat", dir, de->d_name);
    if ((f = fopen(path, "r")) == NULL) continue;
    if (fgets(buf, sizeof buf, f) == NULL) buf[0] = '\0';
    fclose(f);
    /* Fields after "(comm)": state is field 3; utime 14, stime 15. */
    if ((p = strrchr(buf, ')')) == NULL) continue;
    if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
               &ut, &st) != 2)
      continue;
    out->cpu_s += (double)(ut + st) / (double)tck;
    snprintf(path, sizeof path, "%s/%s/status", dir, de->d_name);
    out->vol_cs += field_of(path, "voluntary_ctxt_switches");
    out->invol_cs += field_of(path, "nonvoluntary_ctxt_switches");
    out->threads++;
  }
  closedir(d);
  return out->threads > 0 ? 0 : -1;
}

/* ---- statistics ------------------------------------------------------------- */

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

double bc_median(double* v, int n) {
  if (n <= 0) return 0;
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double bc_percentile(double* v, int n, double p) {
  /* Nearest rank on sorted data. */
  int k;
  if (n <= 0) return 0;
  k = (int)((p / 100.0) * n + 0.999999);
  if (k < 1) k = 1;
  if (k > n) k = n;
  return v[k - 1];
}

/* ---- files ---------------------------------------------------------------- */

int bc_enqueue_payments(ob_engine_t* e, int64_t n, uint64_t seed) {
  ob_envelope_t* envs = calloc(BC_ENQUEUE_CHUNK, sizeof *envs);
  ts_msg_t* msgs = calloc(BC_ENQUEUE_CHUNK, sizeof *msgs);
  int* results = calloc(BC_ENQUEUE_CHUNK, sizeof *results);
  ts_gen_t g;
  int rc = 0;
  if (envs == NULL || msgs == NULL || results == NULL) rc = OB_ENOMEM;
  ts_gen_init(&g, seed);
  for (int64_t i = 0; rc == 0 && i < n;) {
    int k = 0;
    for (; k < BC_ENQUEUE_CHUNK && i < n; k++, i++) {
      ts_gen_next(&g, &msgs[k]);
      memset(&envs[k], 0, sizeof envs[k]);
      envs[k].id = msgs[k].id;
      envs[k].type = OB_PAYOUT_MESSAGE_TYPE;
      envs[k].body = msgs[k].body;
      envs[k].body_len = msgs[k].body_len;
    }
    rc = ob_enqueue_many(e, envs, (size_t)k, results);
    rc = rc == k ? 0 : rc < 0 ? rc : OB_EINVAL;
  }
  free(envs);
  free(msgs);
  free(results);
  return rc;
}

int bc_write_ndjson(const char* path, int64_t n, uint64_t seed) {
  FILE* f = fopen(path, "w");
  ts_gen_t g;
  if (f == NULL) return -1;
  ts_gen_init(&g, seed);
  for (int64_t i = 0; i < n; i++) {
    ts_msg_t m;
    ts_gen_next(&g, &m);
    fprintf(f, "{\"id\":\"%s\",\"type\":\"%s\",\"body\":\"", m.id,
            OB_PAYOUT_MESSAGE_TYPE);
    for (size_t k = 0; k < m.body_len; k++) {
      if (m.body[k] == '"' || m.body[k] == '\\') fputc('\\', f);
      fputc(m.body[k], f);
    }
    fputs("\"}\n", f);
  }
  return fclose(f);
}

void bc_remove_db(const char* path) {
  static const char* const sfx[] = {"", "-wal", "-shm"};
  char p[4200];
  for (int i = 0; i < 3; i++) {
    snprintf(p, sizeof p, "%s%s", path, sfx[i]);
    unlink(p);
  }
}

int bc_run_child(const char* name, const char* const* args, void* out,
                 size_t len, struct rusage* ru, int* status, const char* what) {
  const char* argv[32];
  char sfd[16];
  int fds[2], n = 0, st = -1;
  pid_t pid;
  ssize_t got;
  struct rusage unused;

  argv[n++] = name;
  argv[n++] = "--child";
  while (*args != NULL && n < 30) argv[n++] = *args++;
  if (*args != NULL || pipe(fds) != 0) return -1;
  snprintf(sfd, sizeof sfd, "%d", fds[1]);
  argv[n++] = sfd;
  argv[n] = NULL;
  fflush(stdout);
  pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return -1;
  }
  if (pid == 0) {
    close(fds[0]);
    execv("/proc/self/exe", (char* const*)argv);
    _exit(127);
  }
  close(fds[1]);
  memset(out, 0, len);
  got = read(fds[0], out, len);
  close(fds[0]);
  if (wait4(pid, &st, 0, ru ? ru : &unused) != pid) return -1;
  if (status) *status = st;
  if (got != (ssize_t)len || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    fprintf(stderr, "bench: %s failed (status 0x%x)\n", what, st);
    return -1;
  }
  return 0;
}

int bc_is_tmpfs(const char* path) {
  struct statfs s;
  return statfs(path, &s) == 0 && s.f_type == TMPFS_MAGIC_;
}

/* ---- the raw SQLite limit ---------------------------------------------------- */

static void die_sql(sqlite3* db, const char* what) {
  fprintf(stderr, "bench: %s: %s\n", what, sqlite3_errmsg(db));
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

/* 1 if the statement returned a row or changed exactly one (an insert that
** did not conflict: the engine reads sqlite3_changes(), not RETURNING,
** whose ephemeral b-tree costs more than the insert). */
static int step_once(sqlite3* db, sqlite3_stmt* st, const char* what) {
  int rc = sqlite3_step(st), row = rc == SQLITE_ROW;
  if (row) rc = sqlite3_step(st);
  if (rc != SQLITE_DONE) die_sql(db, what);
  sqlite3_reset(st);
  return row || sqlite3_changes(db) == 1;
}

static void uuid7(uint64_t* s, uint64_t* seq, char out[OB_UUID_BUFLEN]) {
  uint64_t ms = (uint64_t)bc_wall_ms(), b = ts_rnd(s), q = (*seq)++;
  snprintf(out, OB_UUID_BUFLEN, "%08x-%04x-7%03x-%04x-%012llx", (unsigned)(ms >> 16),
           (unsigned)(ms & 0xffff), (unsigned)((q >> 16) & 0xfff),
           (unsigned)(0x8000 | (q & 0x3fff)),
           (unsigned long long)(b & 0xffffffffffffULL));
}

typedef struct raw_row_s {
  int64_t rowid;
  char id[OB_UUID_BUFLEN];
  char body[256];
  int body_len;
} raw_row_t;

void bc_run_raw(const char* path, int64_t n, int batch, int synchronous,
                uint64_t seed, bc_raw_result_t* res) {
  ob_options_t o;
  ob_engine_t* e = NULL;
  sqlite3* db = NULL;
  sqlite3_stmt *ins, *sel, *claim, *pay, *out, *del;
  raw_row_t* rows = calloc((size_t)batch, sizeof *rows);
  ts_gen_t g;
  uint64_t idrng = seed ^ 0x5bd1e995, seq = 0;
  int64_t done = 0;
  double t0, cpu0;
  char err[256];
  int rc;

  memset(res, 0, sizeof *res);
  if (rows == NULL) exit(1);
  ob_options_init(&o);
  o.db_path = path;
  if ((rc = ob_open(&e, &o, err, sizeof err)) < 0) {
    fprintf(stderr, "bench: schema: %s\n", err);
    exit(1);
  }
  /* The payout module's table is its own schema (modules/payout). */
  if ((rc = ob_register_payout(e)) < 0) {
    fprintf(stderr, "bench: schema: %s\n", ob_errmsg(e));
    exit(1);
  }
  ob_close(e);

  if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
                      NULL) != SQLITE_OK)
    die_sql(db, "open");
  sqlite3_busy_timeout(db, 5000);
  exec_or_die(db, "PRAGMA journal_mode=WAL; PRAGMA foreign_keys=ON;"
                  "PRAGMA temp_store=MEMORY;"
                  /* The engine's WAL policy (storage/store.h), so the
                  ** two differ only in the code around the statements. */
                  "PRAGMA journal_size_limit=16777216;"
                  "PRAGMA wal_autocheckpoint=8000;");
  exec_or_die(db, synchronous == 1 ? "PRAGMA synchronous=NORMAL"
                                   : "PRAGMA synchronous=FULL");
  ins = prep(db, "INSERT INTO queue(queue_name, message_id, type, headers,"
                 " body, available_at, created_at)"
                 " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
  sel = prep(db, "SELECT id, queue_name, message_id, type, headers, body,"
                 " attempts, first_failed_at, created_at FROM queue"
                 " WHERE available_at <= ?1 AND (lease_until IS NULL OR"
                 " lease_until <= ?1) ORDER BY available_at, id LIMIT ?2");
  /* source_ref 0: a local message (storage/processed.c's claim, without
  ** the look for schema-9 records a fresh database does not have). */
  claim = prep(db, "INSERT INTO processed_message(consumer_name, message_id,"
                   " source_ref, processed_at) VALUES (?1, ?2, 0, ?3)"
                   " ON CONFLICT DO NOTHING");
  pay = prep(db, "INSERT INTO merchant_payout(id, source_payment_id,"
                 " merchant_id, amount_minor, currency, source_event_id,"
                 " created_at) VALUES (?1,?2,?3,?4,?5,?6,?7)"
                 " ON CONFLICT(source_payment_id) DO NOTHING");
  out = prep(db, "INSERT INTO outbox_event(id, causation_id, event_type,"
                 " aggregate_id, payload, created_at, next_attempt_at)"
                 " VALUES (?1,?2,?3,?4,?5,?6,?6)");
  del = prep(db, "DELETE FROM queue WHERE id = ?1");

  ts_gen_init(&g, seed);
  memset(&bc_io, 0, sizeof bc_io);
  t0 = bc_mono_s();
  for (int64_t i = 0; i < n;) {
    int64_t now = bc_wall_ms();
    exec_or_die(db, "BEGIN IMMEDIATE");
    for (int k = 0; k < BC_ENQUEUE_CHUNK && i < n; k++, i++) {
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
  res->enqueue_s = bc_mono_s() - t0;
  res->enqueue_syncs = bc_io_syncs();

  memset(&bc_io, 0, sizeof bc_io);
  t0 = bc_mono_s();
  cpu0 = bc_cpu_s();
  for (;;) {
    int64_t now;
    int got = 0;
    exec_or_die(db, "BEGIN IMMEDIATE");
    now = bc_wall_ms();
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
        char payout_id[OB_UUID_BUFLEN], event_id[OB_UUID_BUFLEN], payload[320];
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
    res->commits++;
  }
  res->handle_s = bc_mono_s() - t0;
  res->handle_cpu_s = bc_cpu_s() - cpu0;
  res->handle_syncs = bc_io_syncs();
  res->handle_bytes = bc_io.written;
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

int bc_copy_file(const char* from, const char* to) {
  FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
  char buf[1 << 16];
  size_t n;
  int rc = 0;
  if (a == NULL || b == NULL) rc = -1;
  while (rc == 0 && (n = fread(buf, 1, sizeof buf, a)) > 0)
    if (fwrite(buf, 1, n, b) != n) rc = -1;
  if (a) fclose(a);
  if (b && fclose(b) != 0) rc = -1;
  return rc;
}

void bc_point_aws_at(int port, const char* ca, const char* akid,
                     const char* secret, const char* region) {
  char url[64];
  snprintf(url, sizeof url, "https://localhost:%d", port);
  setenv("AWS_ENDPOINT_URL_SQS", url, 1);
  setenv("AWS_ACCESS_KEY_ID", akid, 1);
  setenv("AWS_SECRET_ACCESS_KEY", secret, 1);
  setenv("AWS_REGION", region, 1);
  setenv("AWS_CA_BUNDLE", ca, 1);
  setenv("ONCEBOX_SOURCE", "urn:oncebox:bench-terminal", 1);
  unsetenv("AWS_PROFILE");
  unsetenv("AWS_SESSION_TOKEN");
  unsetenv("AWS_CONFIG_FILE");
  unsetenv("AWS_SHARED_CREDENTIALS_FILE");
  unsetenv("ONCEBOX_OUTBOX_QUEUE_URL");
}
