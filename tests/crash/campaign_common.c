/* SPDX-License-Identifier: Apache-2.0 */
/* What the two crash campaigns share; see campaign_common.h. */
#include "tests/crash/campaign_common.h"
#include "oncebox_payout.h"
#include "tests/support/testsupport.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

const char* const camp_kind_names[] = {"kill", "power", "torn"};

/* ---- small things -------------------------------------------------------- */

uint64_t camp_mix(uint64_t z) {
  z += 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

uint64_t camp_rnd(uint64_t* s) {
  *s += 0x9E3779B97F4A7C15ULL;
  return camp_mix(*s);
}

int64_t camp_mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void camp_make_uuid(uint64_t a, uint64_t b, uint64_t tail, char out[OB_UUID_BUFLEN]) {
  snprintf(out, OB_UUID_BUFLEN, "%08x-%04x-4%03x-%04x-%012llx", (unsigned)(a >> 32),
           (unsigned)((a >> 16) & 0xffff), (unsigned)(a & 0xfff),
           (unsigned)(0x8000 | (b & 0x3fff)),
           (unsigned long long)(tail & 0xffffffffffffULL));
}

void* camp_xcalloc(size_t n, size_t sz) {
  void* p = calloc(n ? n : 1, sz);
  if (p == NULL) {
    fprintf(stderr, "out of memory\n");
    exit(2);
  }
  return p;
}

char* camp_xstrdup(const char* s) {
  char* p = strdup(s);
  if (p == NULL) {
    fprintf(stderr, "out of memory\n");
    exit(2);
  }
  return p;
}

char* camp_path_join(const char* a, const char* b) {
  size_t n = strlen(a) + strlen(b) + 2;
  char* p = camp_xcalloc(n, 1);
  snprintf(p, n, "%s/%s", a, b);
  return p;
}

int camp_lookup(const char* s, const char* const* names, int n) {
  for (int i = 0; i < n; i++)
    if (strcmp(s, names[i]) == 0) return i;
  return -1;
}

void camp_vio(camp_common_t* cm, const char* fmt, ...) {
  va_list ap;
  if (cm->vlines++ >= CAMP_MAX_VIOLATION_LINES) {
    if (cm->vlines == CAMP_MAX_VIOLATION_LINES + 1)
      fprintf(stderr, "VIOLATION: (further lines suppressed; the summary "
              "counts them all)\n");
    return;
  }
  fprintf(stderr, "VIOLATION %s: ", cm->ctx);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

static int64_t sc_now(void* ctx) {
  struct timespec ts;
  (void)ctx;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sc_random(void* ctx, void* buf, size_t n) {
  camp_clock_t* sc = ctx;
  unsigned char* p = buf;
  for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(camp_rnd(&sc->s) >> 56);
}

void camp_clock_init(camp_clock_t* sc, uint64_t seed) {
  sc->s = seed;
  sc->clock.ctx = sc;
  sc->clock.now_ms = sc_now;
  sc->clock.random = sc_random;
  sc->clock.monotonic_ms = NULL;  /* seeded wall time only */
}

/* ---- events -------------------------------------------------------------- */

void camp_event_ids(uint64_t eseed, size_t i, char id[OB_UUID_BUFLEN], char pay[OB_UUID_BUFLEN]) {
  uint64_t h = camp_mix(eseed ^ (i * 8 + 1));
  camp_make_uuid(h, camp_mix(h), i, id);
  h = camp_mix(eseed ^ (i * 8 + 2));
  camp_make_uuid(h, camp_mix(h), camp_mix(h ^ 7), pay);
}

long camp_event_tail(const char* s) {
  char tail[13];
  unsigned long long i;
  if (s == NULL || strlen(s) != 36) return -1;
  memcpy(tail, s + 24, 12);
  tail[12] = '\0';
  i = strtoull(tail, NULL, 16);
  return i > LONG_MAX ? -1 : (long)i;
}

void camp_event_body(uint64_t eseed, size_t i, const char* pay, char* out,
                     size_t n) {
  static const char* const cur[] = {"EUR", "GBP", "USD", "CHF", "SEK"};
  char merchant[OB_UUID_BUFLEN];
  uint64_t h = camp_mix(eseed ^ (i * 8 + 3));
  camp_make_uuid(h, camp_mix(h), camp_mix(h ^ 3), merchant);
  snprintf(out, n,
           "{\"paymentId\":\"%s\",\"merchantId\":\"%s\","
           "\"amountInMinorUnits\":%llu,\"currency\":\"%s\"}",
           pay, merchant,
           (unsigned long long)(1 + camp_mix(eseed ^ (i * 8 + 4)) % 250000),
           cur[camp_mix(eseed ^ (i * 8 + 5)) % 5]);
}

/* ---- the worker ---------------------------------------------------------- */

void camp_write_rec(int fd, char type, const void* payload, size_t len) {
  char buf[3 + CAMP_MAX_ACKS * 36];
  uint16_t n = (uint16_t)len;
  const char* p = buf;
  size_t left = 3 + len;
  if (len > CAMP_MAX_ACKS * 36) _exit(W_OVERFLOW);
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

void camp_send_stats(int fd, int64_t second) {
  int64_t v[2] = {plsim_syncs(), second};
  camp_write_rec(fd, 'S', v, sizeof v);
}

static int recorder_cb(ob_tx_t* tx, const ob_message_t* msg, void* arg) {
  camp_recorder_t* r = arg;
  (void)tx;
  if (r->n >= r->max) _exit(W_OVERFLOW);
  memcpy(r->ids[r->n++], msg->id, 36);
  /* MUTANT ack-before-commit: acknowledged inside the transaction. */
  if (r->early) camp_write_rec(r->fd, 'A', r->ids[r->n - 1], 36);
  return OB_DONE;
}

void camp_register(ob_engine_t* e, camp_recorder_t* rec) {
  if (ob_register_payout(e) != 0 ||
      ob_register(e, OB_PAYOUT_MESSAGE_TYPE, CAMP_RECORDER, recorder_cb,
                  rec) != 0)
    _exit(W_OPEN_FAILED);
}

void camp_recorder_flush(camp_recorder_t* rec) {
  /* Committed: only now are these ids acknowledged. */
  if (!rec->early && rec->n > 0)
    camp_write_rec(rec->fd, 'A', rec->ids, (size_t)rec->n * 36);
}

sqlite3* camp_open_checkpointer(const char* db, const char* ctx) {
  sqlite3* ck = NULL;
  if (sqlite3_open_v2(db, &ck, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
    fprintf(stderr, "worker (%s): checkpointer: %s\n", ctx,
            ck ? sqlite3_errmsg(ck) : "out of memory");
    _exit(W_RUN_FAILED);
  }
  sqlite3_busy_timeout(ck, 10000);
  return ck;
}

int camp_checkpoint_mode(int n) {
  static const int modes[] = {SQLITE_CHECKPOINT_PASSIVE,
                              SQLITE_CHECKPOINT_PASSIVE, SQLITE_CHECKPOINT_FULL,
                              SQLITE_CHECKPOINT_RESTART,
                              SQLITE_CHECKPOINT_TRUNCATE};
  return modes[n % 5];
}

void camp_checkpoint(sqlite3* ck, int mode, const char* ctx) {
  int rc = sqlite3_wal_checkpoint_v2(ck, NULL, mode, NULL, NULL);
  if (rc != SQLITE_OK && rc != SQLITE_BUSY) {
    fprintf(stderr, "worker (%s): checkpoint: %s\n", ctx, sqlite3_errmsg(ck));
    _exit(W_RUN_FAILED);
  }
}

/* ---- the supervisor: run a worker, read its pipe ------------------------- */

static void take_records(camp_common_t* cm) {
  size_t off = 0;
  while (cm->slen - off >= 3) {
    char type = cm->stream[off];
    uint16_t len;
    memcpy(&len, cm->stream + off + 1, 2);
    if (cm->slen - off < 3 + (size_t)len) break;
    const char* p = cm->stream + off + 3;
    if (strchr(cm->id_types, type) != NULL && type != '\0') {
      for (size_t i = 0; i + 36 <= len; i += 36) {
        char id[OB_UUID_BUFLEN];
        memcpy(id, p + i, 36);
        id[36] = '\0';
        cm->on_id(cm, type, id);
      }
    } else if (type == 'O') {
      cm->w_opened = 1;
    } else if (type == 'S' && len == 16) {
      memcpy(&cm->w_stat[0], p, 8);
      memcpy(&cm->w_stat[1], p + 8, 8);
      cm->w_stats = 1;
    } else {
      fprintf(stderr, "harness: bad record from the worker\n");
      cm->harness++;
    }
    off += 3 + len;
  }
  memmove(cm->stream, cm->stream + off, cm->slen - off);
  cm->slen -= off;
}

static int read_pipe(camp_common_t* cm, int fd) {
  ssize_t r;
  do {
    r = read(fd, cm->stream + cm->slen, sizeof cm->stream - cm->slen);
  } while (r < 0 && errno == EINTR);
  if (r <= 0) return 0;
  cm->slen += (size_t)r;
  take_records(cm);
  return 1;
}

int camp_run_worker(camp_common_t* cm,
                    void (*child)(camp_common_t* cm, const void* cfg, int fd),
                    const void* cfg, const plsim_config_t* pc, int kill_ms,
                    int* hung) {
  int fds[2], status = 0, killed = 0;
  int64_t deadline;
  pid_t pid;
  *hung = 0;
  cm->slen = 0;
  cm->w_opened = cm->w_stats = 0;
  cm->w_stat[0] = cm->w_stat[1] = 0;
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
    /* The default VFS of the worker only, before ob_open. */
    if (pc != NULL && plsim_install(pc) != 0) _exit(PLSIM_EXIT_BROKEN);
    child(cm, cfg, fds[1]);
    _exit(0); /* not reached: child() _exits */
  }
  close(fds[1]);
  deadline = camp_mono_ms() + (kill_ms >= 0 ? kill_ms : CAMP_WATCHDOG_MS);
  for (;;) {
    int64_t now = camp_mono_ms();
    struct pollfd p = {fds[0], POLLIN, 0};
    int rc;
    if (now >= deadline) {
      kill(pid, SIGKILL);
      killed = 1;
      if (kill_ms < 0) *hung = 1;
      break;
    }
    rc = poll(&p, 1, (int)(deadline - now));
    if (rc > 0 && !read_pipe(cm, fds[0])) break; /* EOF: it ended */
  }
  if (killed)
    while (read_pipe(cm, fds[0])) {
    }
  close(fds[0]);
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (cm->slen != 0) {
    fprintf(stderr, "harness: torn record on the ack pipe\n");
    cm->harness++;
  }
  return status;
}

int camp_cycle_begin(camp_common_t* cm, uint64_t* cr) {
  int kind;
  cm->cycles++;
  *cr = camp_mix(cm->seed ^ camp_mix((uint64_t)cm->cycles * 0x51ED27ULL));
  kind = cm->mode == KIND_KILL || cm->mode == KIND_POWER ||
                 cm->mode == KIND_TORN
             ? cm->mode
             : (int)(camp_rnd(cr) % 3);
  if (kind == KIND_KILL) cm->k_kill++;
  else if (kind == KIND_POWER) cm->k_power++;
  else cm->k_torn++;
  return kind;
}

int camp_exit_kind(camp_common_t* cm, int status, int hung,
                   int (*code)(camp_common_t* cm, int exit_code)) {
  int rc;
  if (hung) {
    fprintf(stderr, "harness: worker hung (%s)\n", cm->ctx);
    cm->harness++;
    return -1;
  }
  if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) {
    cm->x_sigkill++;
    return 0;
  }
  if (!WIFEXITED(status)) {
    fprintf(stderr, "harness: worker died of signal %d (%s)\n",
            WTERMSIG(status), cm->ctx);
    cm->harness++;
    return -1;
  }
  if (WEXITSTATUS(status) == 0) {
    cm->x_clean++;
    return 0;
  }
  if (WEXITSTATUS(status) == PLSIM_EXIT_SYNC_CRASH) {
    cm->x_sync++;
    return 0;
  }
  rc = code(cm, WEXITSTATUS(status));
  if (rc != CAMP_EXIT_UNKNOWN) return rc;
  fprintf(stderr, "harness: worker exit %d (%s)\n", WEXITSTATUS(status),
          cm->ctx);
  cm->harness++;
  return -1;
}

int camp_restore(camp_common_t* cm, int torn, uint64_t torn_seed) {
  plsim_restore_stats_t rs;
  if (plsim_restore(cm->dir, torn, torn_seed, &rs) != 0) {
    cm->harness++;
    return -1;
  }
  cm->r_records += rs.records;
  cm->r_applied += rs.applied;
  cm->r_torn += rs.torn;
  cm->r_lost += rs.lost;
  return 0;
}

void camp_remove_db(camp_common_t* cm) {
  static const char* const suffix[] = {"", "-wal", "-shm", "-journal"};
  char p[PATH_MAX];
  plsim_forget(cm->dir);
  for (size_t i = 0; i < sizeof suffix / sizeof suffix[0]; i++) {
    snprintf(p, sizeof p, "%s%s", cm->db, suffix[i]);
    unlink(p);
  }
}

void camp_keep_failed_db(camp_common_t* cm) {
  char cmd[2 * PATH_MAX + 64];
  static int kept;
  /* A mutant is meant to fail: keep nothing behind in CI. */
  if (cm->mutant != 0 || kept++ >= 3) return;
  snprintf(cmd, sizeof cmd,
           "mkdir -p '%s/failed-%ld' && cp -p '%s'* '%s/failed-%ld/' "
           "2>/dev/null",
           cm->dir, cm->cycles, cm->db, cm->dir, cm->cycles);
  if (system(cmd) == 0)
    fprintf(stderr, "  (database kept in %s/failed-%ld)\n", cm->dir,
            cm->cycles);
  cm->keep = 1;
}

/* ---- the checker --------------------------------------------------------- */

sqlite3* camp_check_open(camp_common_t* cm, const char* pragmas) {
  sqlite3* db = NULL;
  sqlite3_stmt* st = NULL;
  int rc = sqlite3_open_v2(cm->db, &db, SQLITE_OPEN_READWRITE, NULL);
  int rows = 0, ok = 0;
  if (rc != SQLITE_OK) {
    camp_vio(cm, "integrity: open: %s",
             db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
    goto bad;
  }
  sqlite3_busy_timeout(db, 10000);
  if (sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL) !=
          SQLITE_OK ||
      sqlite3_exec(db, pragmas, NULL, NULL, NULL) != SQLITE_OK) {
    camp_vio(cm, "checker: configure: %s", sqlite3_errmsg(db));
    goto bad;
  }
  rc = sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL);
  if (rc != SQLITE_OK) {
    camp_vio(cm, "integrity: prepare integrity_check: %s", sqlite3_errmsg(db));
    goto bad;
  }
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    const char* t = (const char*)sqlite3_column_text(st, 0);
    rows++;
    if (t != NULL && strcmp(t, "ok") == 0) ok++;
    else camp_vio(cm, "integrity_check: %s", t ? t : "(null)");
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) {
    camp_vio(cm, "integrity_check failed to run: %s", sqlite3_errmsg(db));
    goto bad;
  }
  if (rows != 1 || ok != 1) goto bad;
  return db;

bad:
  if (db) sqlite3_close(db);
  return NULL;
}

int camp_scan(sqlite3* db, const char* sql,
              void (*row)(camp_common_t* cm, sqlite3_stmt* st),
              camp_common_t* cm) {
  sqlite3_stmt* st = NULL;
  int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
  if (rc != SQLITE_OK) {
    camp_vio(cm, "checker: prepare '%s': %s", sql, sqlite3_errmsg(db));
    return -1;
  }
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) row(cm, st);
  if (rc != SQLITE_DONE) {
    camp_vio(cm, "checker: '%s': %s", sql, sqlite3_errmsg(db));
    sqlite3_finalize(st);
    return -1;
  }
  sqlite3_finalize(st);
  return 0;
}

static int64_t g_count; /* camp_count's result, set by row_count */
static void row_count(camp_common_t* cm, sqlite3_stmt* st) {
  (void)cm;
  g_count = sqlite3_column_int64(st, 0);
}

int camp_count(sqlite3* db, const char* sql, camp_common_t* cm, int64_t* out) {
  int rc;
  g_count = -1;
  rc = camp_scan(db, sql, row_count, cm);
  *out = g_count;
  return rc;
}

/* ---- main ---------------------------------------------------------------- */

int camp_parse_args(camp_common_t* cm, const camp_cli_t* cli, int argc,
                    char** argv, int* have_cycles) {
  static const struct option common[] = {
      {"seed", required_argument, NULL, 's'},
      {"cycles", required_argument, NULL, 'n'},
      {"mode", required_argument, NULL, 'm'},
      {"mutant", required_argument, NULL, 'M'},
      {"reset-every", required_argument, NULL, 'r'},
      {"dir", required_argument, NULL, 'd'},
      {"keep", no_argument, NULL, 'k'},
      {"quiet", no_argument, NULL, 'q'},
      {"stop-on-violation", no_argument, NULL, 'x'},
      {"help", no_argument, NULL, 'h'}};
  enum { NCOMMON = sizeof common / sizeof common[0], MAX_OPTS = 32 };
  struct option longopts[MAX_OPTS];
  size_t n = 0;
  int opt, have_seed = 0;

  for (size_t i = 0; i < NCOMMON; i++) longopts[n++] = common[i];
  for (size_t i = 0; cli->extra && cli->extra[i].name && n < MAX_OPTS - 1; i++)
    longopts[n++] = cli->extra[i];
  memset(&longopts[n], 0, sizeof longopts[n]);
  *have_cycles = 0;
  while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
    switch (opt) {
      case 's': cm->seed = strtoull(optarg, NULL, 0); have_seed = 1; break;
      case 'n': cm->cycles_wanted = atol(optarg); *have_cycles = 1; break;
      case 'm':
        cm->mode = camp_lookup(optarg, cli->mode_names, cli->nmodes);
        if (cm->mode < 0) {
          cli->usage(stderr);
          return 2;
        }
        break;
      case 'M':
        cm->mutant = camp_lookup(optarg, cli->mutant_names, cli->nmutants);
        if (cm->mutant < 0) {
          if (cli->bad_mutant) cli->bad_mutant(optarg);
          cli->usage(stderr);
          return 2;
        }
        break;
      case 'r': cm->reset_every = atoi(optarg); break;
      case 'd': cm->dir = camp_xstrdup(optarg); break;
      case 'k': cm->keep = 1; break;
      case 'q': cm->quiet = 1; break;
      case 'x': cm->stop_on_violation = 1; break;
      case 'h': cli->usage(stdout); return 0;
      case '?': cli->usage(stderr); return 2;
      default:
        if (cli->option(cm, opt, optarg) != 0) {
          cli->usage(stderr);
          return 2;
        }
    }
  }
  if (!have_seed || cm->cycles_wanted < 0 || cm->reset_every < 1 ||
      optind != argc) {
    cli->usage(stderr);
    return 2;
  }
  /* Under an emulator (tests/cross.sh) a cycle costs ten times as much: a
  ** share of the cycles asked for, the same seed, so the same first ones. */
  {
    const char* pct = getenv("OB_CAMPAIGN_CYCLES_PERCENT");
    if (pct != NULL && atol(pct) > 0 && atol(pct) < 100 && *have_cycles) {
      long want = cm->cycles_wanted * atol(pct) / 100;
      cm->cycles_wanted = want < 10 ? 10 : want;
      fprintf(stderr, "campaign: OB_CAMPAIGN_CYCLES_PERCENT=%s: %ld cycles\n",
              pct, cm->cycles_wanted);
    }
  }
  return -1;
}

int camp_mutant_binary(const camp_common_t* cm, char** argv, int mutant,
                       const char* name, const char* program,
                       int in_mutant_binary) {
  char self[PATH_MAX], target[PATH_MAX + 64];
  ssize_t n;
  char* slash;
  if (in_mutant_binary) {
    if (cm->mutant == mutant) return -1;
    fprintf(stderr, "this binary is linked with the %s MUTANT library; run "
            "%s instead\n", name, program);
    return 2;
  }
  if (cm->mutant != mutant) return -1;
  n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) {
    perror("readlink /proc/self/exe");
    exit(2);
  }
  self[n] = '\0';
  slash = strrchr(self, '/');
  if (slash) *slash = '\0';
  snprintf(target, sizeof target, "%s/%s-%s", self, program, name);
  fflush(stdout);
  ts_exec_built(target, argv);
  fprintf(stderr, "cannot run %s: %s\n", target, strerror(errno));
  exit(2);
}

int camp_make_dir(camp_common_t* cm, const char* prefix) {
  if (cm->dir == NULL) {
    const char* base = getenv("TMPDIR");
    char buf[PATH_MAX];
    snprintf(buf, sizeof buf, "%s/%s-XXXXXX", base && *base ? base : "/tmp",
             prefix);
    if (mkdtemp(buf) == NULL) {
      perror("mkdtemp");
      return 2;
    }
    cm->dir = camp_xstrdup(buf);
    cm->own_dir = 1;
  } else if (mkdir(cm->dir, 0700) != 0 && errno != EEXIST) {
    perror(cm->dir);
    return 2;
  }
  cm->db = camp_path_join(cm->dir, "campaign.db");
  return 0;
}

int camp_finish(camp_common_t* cm, int64_t violations) {
  int rc;
  if (cm->harness > 0) {
    printf("RESULT: HARNESS FAILURE (%lld problems): the campaign proves "
           "nothing\n", (long long)cm->harness);
    rc = 2;
  } else if (violations > 0) {
    printf("RESULT: %lld VIOLATIONS%s\n", (long long)violations,
           cm->mutant ? " (the mutant was killed)" : "");
    rc = 1;
  } else {
    printf("RESULT: 0 violations%s\n",
           cm->mutant ? " (the MUTANT SURVIVED)" : "");
    rc = 0;
  }
  if (!cm->keep && cm->own_dir) {
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", cm->dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", cm->dir);
  } else if (cm->keep) {
    printf("kept: %s\n", cm->dir);
  }
  free(cm->db);
  free(cm->dir);
  cm->db = cm->dir = NULL;
  return rc;
}
