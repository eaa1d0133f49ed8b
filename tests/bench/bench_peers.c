/* SPDX-License-Identifier: Apache-2.0 */
/* ob-bench-peers: oncebox against the queues people would pick instead, on
** the same workload and durability (docs/performance.md, "Peers").
**
**   ob-bench-peers [-n N] [-r R] [-g B] [-s SEED] [-o CSV] [-S]
**
** The same N PaymentCaptured messages (seeded; written once as NDJSON for
** the peers) are handled by:
**   (a) oncebox, public API, the payout module, batch_size 1 (one message
**       per transaction, as the peers);
**   (b) oncebox, batch_size B (100): group commit, oncebox's own answer to
**       throughput at FULL;
**   (c) plainjob (npm) on better-sqlite3 (tests/bench/peers/
**       plainjob_bench.mjs, pinned in tests/bench/peers/package.json);
**   (d) Symfony Messenger's Doctrine transport on SQLite, Debian's
**       php-symfony-messenger (tests/bench/peers/symfony_bench.php).
** Every variant: its own freshly started process, a fresh database in
** $TMPDIR or /tmp, WAL with synchronous=FULL, enqueue first (not timed),
** then handling timed until the N-th message is handled and acked. Each
** peer's handler does oncebox's payout work in one transaction (dedup claim
** INSERT .. ON CONFLICT DO NOTHING RETURNING, body checks, payout row,
** outbox row with its JSON payload, UUIDv7 ids) on tables with oncebox's
** DDL (tests/bench/peers/schema.sql); the peer's framework then acks in
** its own way (plainjob: an UPDATE; Messenger: a DELETE), after the
** handler's commit. Runs rotate the order; medians are reported.
**
** -S: fsyncs per message of each variant, counted by strace -f -c on a
** separate, untimed pair of runs (N1 = 200 and N2 = 400 messages): the
** difference over N2 - N1, so set-up and enqueue commits cancel out.
**
** A peer that cannot run (node < 20, tests/bench/peers/node_modules
** missing, php or the Symfony packages missing) is reported as skipped with
** the reason; tests/bench/peers/install.sh installs them. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <sqlite3.h>

#include "oncebox.h"
#include "oncebox_payout.h"
#include "tests/bench/bench_common.h"

#ifndef OB_BENCH_SOURCE_DIR
#define OB_BENCH_SOURCE_DIR "."
#endif

#define MAX_REPS 16
#define SYMFONY_AUTOLOAD \
  "/usr/share/php/Symfony/Component/Messenger/Bridge/Doctrine/autoload.php"

enum { V_OB1, V_OBG, V_PJ, V_SF, NV };

typedef struct result_s {
  int ok;
  int64_t n;
  double seconds;
} result_t;

/* ---- child: oncebox ---------------------------------------------------------- */

static int oncebox_child(const char* path, int64_t n, int batch,
                         uint64_t seed, int fd) {
  ob_options_t o;
  ob_engine_t* e = NULL;
  ob_stats_t st;
  ob_payout_stats_t ps;
  result_t res;
  double t0;
  char err[256];

  memset(&res, 0, sizeof res);
  ob_options_init(&o);
  o.db_path = path;
  o.batch_size = batch;
  if (ob_open(&e, &o, err, sizeof err) < 0) {
    fprintf(stderr, "bench: open: %s\n", err);
    return 1;
  }
  if (ob_register_payout(e) < 0) return 1;
  if (bc_enqueue_payments(e, n, seed) < 0) {
    fprintf(stderr, "bench: enqueue: %s\n", ob_errmsg(e));
    return 1;
  }
  t0 = bc_mono_s();
  for (;;) {
    ob_batch_result_t r;
    if (ob_run_once(e, &r) < 0) {
      fprintf(stderr, "bench: ob_run_once: %s\n", ob_errmsg(e));
      return 1;
    }
    if (r.claimed == 0) break;
    res.n += r.handled;
  }
  res.seconds = bc_mono_s() - t0;
  if (ob_stats(e, &st) < 0 || ob_payout_stats(e, &ps) < 0) return 1;
  res.ok = ps.payouts == n && st.outbox_unpublished == n &&
           st.queue_ready + st.queue_delayed == 0 && st.failed == 0 &&
           res.n == n;
  ob_close(e);
  if (fd >= 0 && write(fd, &res, sizeof res) != (ssize_t)sizeof res) return 1;
  return res.ok ? 0 : 3;
}

/* ---- the parent -------------------------------------------------------------- */

static const char* g_src = OB_BENCH_SOURCE_DIR;

typedef struct sample_s {
  double rate;
  long maxrss_kib;
} sample_t;

static void build_argv(int v, const char* db, const char* ndjson, int64_t n,
                       int group, uint64_t seed, int fd, char bufs[6][4200],
                       const char* argv[12]) {
  int k = 0;
  snprintf(bufs[0], sizeof bufs[0], "%" PRId64, n);
  if (v == V_OB1 || v == V_OBG) {
    snprintf(bufs[1], sizeof bufs[1], "%d", v == V_OB1 ? 1 : group);
    snprintf(bufs[2], sizeof bufs[2], "%" PRIu64, seed);
    snprintf(bufs[3], sizeof bufs[3], "%d", fd);
    argv[k++] = "/proc/self/exe";
    argv[k++] = "--child";
    argv[k++] = db;
    argv[k++] = bufs[0];
    argv[k++] = bufs[1];
    argv[k++] = bufs[2];
    argv[k++] = bufs[3];
  } else if (v == V_PJ) {
    snprintf(bufs[1], sizeof bufs[1], "%s/tests/bench/peers/plainjob_bench.mjs",
             g_src);
    argv[k++] = "node";
    argv[k++] = bufs[1];
    argv[k++] = db;
    argv[k++] = ndjson;
    argv[k++] = bufs[0];
  } else {
    snprintf(bufs[1], sizeof bufs[1], "%s/tests/bench/peers/symfony_bench.php",
             g_src);
    argv[k++] = "php";
    argv[k++] = bufs[1];
    argv[k++] = db;
    argv[k++] = ndjson;
    argv[k++] = bufs[0];
  }
  argv[k] = NULL;
}

/* Run variant v once; its rate into *out. Returns 0 or -1. */
static int run_variant(int v, const char* dir, const char* ndjson, int64_t n,
                       int group, uint64_t seed, sample_t* out) {
  char db[4200], bufs[6][4200], text[4096];
  const char* argv[12];
  int fds[2], status;
  pid_t pid;
  struct rusage ru;
  ssize_t got = 0, k;
  result_t res;

  snprintf(db, sizeof db, "%s/peer-%d.db", dir, v);
  bc_remove_db(db);
  if (pipe(fds) != 0) return -1;
  build_argv(v, db, ndjson, n, group, seed, fds[1], bufs, argv);
  fflush(stdout);
  fflush(stderr);
  if ((pid = fork()) < 0) return -1;
  if (pid == 0) {
    close(fds[0]);
    if (v == V_PJ || v == V_SF) {
      dup2(fds[1], 1);
      close(fds[1]);
    }
    execvp(argv[0], (char* const*)argv);
    _exit(127);
  }
  close(fds[1]);
  memset(&res, 0, sizeof res);
  if (v == V_OB1 || v == V_OBG) {
    got = read(fds[0], &res, sizeof res);
  } else {
    while (got < (ssize_t)sizeof text - 1 &&
           (k = read(fds[0], text + got, sizeof text - 1 - (size_t)got)) > 0)
      got += k;
    text[got > 0 ? got : 0] = '\0';
  }
  close(fds[0]);
  if (wait4(pid, &status, 0, &ru) != pid) return -1;
  bc_remove_db(db);
  out->maxrss_kib = ru.ru_maxrss;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "bench: variant %d failed (status 0x%x)\n", v, status);
    return -1;
  }
  if (v == V_OB1 || v == V_OBG) {
    if (got != (ssize_t)sizeof res || !res.ok) return -1;
    out->rate = (double)res.n / res.seconds;
  } else {
    cJSON* j = cJSON_Parse(text);
    double secs = cJSON_GetNumberValue(cJSON_GetObjectItem(j, "seconds"));
    double nn = cJSON_GetNumberValue(cJSON_GetObjectItem(j, "n"));
    if (j == NULL || !(secs > 0) || nn != (double)n) {
      fprintf(stderr, "bench: variant %d said: %s\n", v, text);
      cJSON_Delete(j);
      return -1;
    }
    out->rate = nn / secs;
    cJSON_Delete(j);
  }
  return 0;
}

/* fdatasync + fsync calls of one run of variant v under strace -f -c. */
static long strace_syncs(int v, const char* dir, const char* ndjson,
                         int64_t n, int group, uint64_t seed) {
  char db[4200], bufs[6][4200], out[4300], line[512];
  const char* argv[12];
  const char* sargv[24];
  int status, k = 0;
  pid_t pid;
  long total = 0;
  FILE* f;

  snprintf(db, sizeof db, "%s/strace-%d.db", dir, v);
  snprintf(out, sizeof out, "%s/strace-%d.txt", dir, v);
  bc_remove_db(db);
  build_argv(v, db, ndjson, n, group, seed, -1, bufs, argv);
  if (v == V_OB1 || v == V_OBG) {
    /* A fresh image of this program, by path (strace execs it). */
    static char self[4096];
    ssize_t m = readlink("/proc/self/exe", self, sizeof self - 1);
    if (m <= 0) return -1;
    self[m] = '\0';
    argv[0] = self;
  }
  sargv[k++] = "strace";
  sargv[k++] = "-f";
  sargv[k++] = "-c";
  sargv[k++] = "-o";
  sargv[k++] = out;
  sargv[k++] = "-e";
  sargv[k++] = "trace=fsync,fdatasync";
  for (int i = 0; argv[i]; i++) sargv[k++] = argv[i];
  sargv[k] = NULL;
  fflush(stdout);
  if ((pid = fork()) < 0) return -1;
  if (pid == 0) {
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0) dup2(null, 1);
    execvp(sargv[0], (char* const*)sargv);
    _exit(127);
  }
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
      WEXITSTATUS(status) != 0) {
    bc_remove_db(db);
    return -1;
  }
  bc_remove_db(db);
  if ((f = fopen(out, "r")) == NULL) return -1;
  while (fgets(line, sizeof line, f)) {
    /* "% time  seconds  usecs/call  calls  errors syscall" */
    char name[64];
    double pct, secs;
    long usecs, calls;
    if (sscanf(line, "%lf %lf %ld %ld", &pct, &secs, &usecs, &calls) == 4) {
      char* last = strrchr(line, ' ');
      if (last && sscanf(last + 1, "%63s", name) == 1 &&
          (strcmp(name, "fsync") == 0 || strcmp(name, "fdatasync") == 0))
        total += calls;
    }
  }
  fclose(f);
  unlink(out);
  return total;
}

/* NULL if variant v can run here, else why not. */
static const char* skip_reason(int v) {
  static char why[4400];
  char p[4300];
  struct stat st;
  if (v == V_PJ) {
    FILE* f = popen("node --version 2>/dev/null", "r");
    int major = 0;
    if (f == NULL || fscanf(f, "v%d", &major) != 1) major = 0;
    if (f) pclose(f);
    if (major < 20) return "node >= 20 not found (better-sqlite3 12 needs it)";
    snprintf(p, sizeof p,
             "%s/tests/bench/peers/node_modules/better-sqlite3/build/Release/"
             "better_sqlite3.node", g_src);
    if (stat(p, &st) != 0) {
      snprintf(why, sizeof why, "%s missing (run tests/bench/peers/install.sh)",
               p);
      return why;
    }
    return NULL;
  }
  if (v == V_SF) {
    if (system("php -r 'exit(extension_loaded(\"pdo_sqlite\") ? 0 : 1);' "
               ">/dev/null 2>&1") != 0)
      return "php with pdo_sqlite not found (run tests/bench/peers/install.sh)";
    if (stat(SYMFONY_AUTOLOAD, &st) != 0)
      return "php-symfony-doctrine-messenger not installed (run "
             "tests/bench/peers/install.sh)";
  }
  return NULL;
}

static void usage(FILE* f) {
  fprintf(f,
          "usage: ob-bench-peers [-n N] [-r R] [-g B] [-s SEED] [-o CSV] [-S]\n"
          "  -n N     messages per run (2000)\n"
          "  -r R     runs of each variant, medians reported (3)\n"
          "  -g B     oncebox's group-commit batch size for (b) (100)\n"
          "  -s SEED  message generator seed (20261130)\n"
          "  -o CSV   write one line per variant\n"
          "  -S       also count fsyncs per message with strace (untimed)\n");
}

int main(int argc, char** argv) {
  static const char* const label[NV] = {
      "(a) oncebox, batch_size 1", "(b) oncebox, group commit",
      "(c) plainjob 0.0.14, better-sqlite3", "(d) Symfony Messenger 5.4, Doctrine"};
  static const char* const key[NV] = {"oncebox-batch1", "oncebox-group",
                                      "plainjob", "symfony-messenger"};
  int64_t n = 2000;
  int reps = 3, group = 100, c, with_strace = 0;
  uint64_t seed = 20261130;
  const char *csv = NULL, *base = getenv("TMPDIR"), *why[NV];
  char dir[4096], ndjson[4200];
  sample_t s[NV][MAX_REPS];
  double rate[NV], rss[NV], fsync_pm[NV];
  int failed = 0;

  if (argc == 7 && strcmp(argv[1], "--child") == 0)
    return oncebox_child(argv[2], strtoll(argv[3], NULL, 10), atoi(argv[4]),
                         strtoull(argv[5], NULL, 10), atoi(argv[6]));
  while ((c = getopt(argc, argv, "n:r:g:s:o:Sh")) != -1) {
    switch (c) {
      case 'n': n = strtoll(optarg, NULL, 10); break;
      case 'r': reps = atoi(optarg); break;
      case 'g': group = atoi(optarg); break;
      case 's': seed = strtoull(optarg, NULL, 10); break;
      case 'o': csv = optarg; break;
      case 'S': with_strace = 1; break;
      case 'h': usage(stdout); return 0;
      default: usage(stderr); return 2;
    }
  }
  if (n < 10 || reps < 1 || reps > MAX_REPS || group < 2 || group > 10000) {
    usage(stderr);
    return 2;
  }
  if (getenv("OB_SOURCE_DIR")) g_src = getenv("OB_SOURCE_DIR");
  snprintf(dir, sizeof dir, "%s/ob-bench-peers-XXXXXX",
           base && *base ? base : "/tmp");
  if (mkdtemp(dir) == NULL) {
    perror("mkdtemp");
    return 1;
  }
  snprintf(ndjson, sizeof ndjson, "%s/messages.ndjson", dir);
  if (bc_write_ndjson(ndjson, n > 400 ? n : 400, seed) != 0) {
    perror(ndjson);
    return 1;
  }
  for (int v = 0; v < NV; v++) why[v] = skip_reason(v);

  printf("oncebox %s against its peers, SQLite %s (oncebox, PHP), node ",
         ob_version(), sqlite3_libversion());
  fflush(stdout);
  if (system("node --version 2>/dev/null") != 0) printf("?\n");
  printf("%" PRId64 " messages per run, %d run%s of each variant (order "
         "rotates), medians; seed %" PRIu64 "\n", n, reps, reps > 1 ? "s" : "",
         seed);
  printf("databases in %s%s; WAL, synchronous=FULL everywhere\n", dir,
         bc_is_tmpfs(dir) ? " (tmpfs: fsync is free here, figures are NOT "
                            "meaningful)" : "");
  for (int v = 0; v < NV; v++)
    if (why[v]) printf("skipped %s: %s\n", key[v], why[v]);
  fflush(stdout);

  for (int r = 0; r < reps && !failed; r++) {
    for (int k = 0; k < NV && !failed; k++) {
      int v = (k + r) % NV;
      if (why[v]) continue;
      failed = run_variant(v, dir, ndjson, n, group, seed, &s[v][r]) != 0;
    }
    if (!failed) {
      printf("run %d:", r + 1);
      for (int v = 0; v < NV; v++)
        if (!why[v]) printf(" %s %.0f/s", key[v], s[v][r].rate);
      printf("\n");
      fflush(stdout);
    }
  }
  for (int v = 0; v < NV && !failed; v++) {
    double x[MAX_REPS], m[MAX_REPS];
    fsync_pm[v] = -1;
    if (why[v]) continue;
    for (int r = 0; r < reps; r++) {
      x[r] = s[v][r].rate;
      m[r] = (double)s[v][r].maxrss_kib / 1024.0;
    }
    rate[v] = bc_median(x, reps);
    rss[v] = bc_median(m, reps);
  }
  if (!failed && with_strace) {
    if (system("strace -V >/dev/null 2>&1") != 0) {
      printf("strace not found: no fsync counts (apt-get install strace)\n");
    } else {
      for (int v = 0; v < NV; v++) {
        long a, b;
        if (why[v]) continue;
        a = strace_syncs(v, dir, ndjson, 200, group, seed);
        b = strace_syncs(v, dir, ndjson, 400, group, seed);
        if (a >= 0 && b >= 0) fsync_pm[v] = (double)(b - a) / 200.0;
      }
    }
  }
  unlink(ndjson);
  rmdir(dir);
  if (failed) return 1;

  printf("\nhandling %" PRId64 " PaymentCaptured (dedup claim + payout + outbox "
         "row + ack), synchronous=FULL\n", n);
  printf("  %-40s %9s %10s %10s %9s %9s\n", "variant", "msg/s", "(a)/this",
         "(b)/this", "fsync/msg", "peak RSS");
  for (int v = 0; v < NV; v++) {
    char l[96], fs[16];
    if (v == V_OBG) snprintf(l, sizeof l, "(b) oncebox, batch_size %d", group);
    else snprintf(l, sizeof l, "%s", label[v]);
    if (why[v]) {
      printf("  %-40s skipped: %s\n", l, why[v]);
      continue;
    }
    if (fsync_pm[v] >= 0) snprintf(fs, sizeof fs, "%.2f", fsync_pm[v]);
    else snprintf(fs, sizeof fs, "-");
    printf("  %-40s %9.0f %10.2f %10.2f %9s %5.1f MiB\n", l, rate[v],
           rate[V_OB1] / rate[v], rate[V_OBG] / rate[v], fs, rss[v]);
  }
  if (csv) {
    FILE* f = fopen(csv, "w");
    if (f == NULL) {
      perror(csv);
      return 1;
    }
    fprintf(f, "variant,messages,msg_per_s,oncebox_batch1_over_this,"
               "oncebox_group_over_this,fsync_per_msg,peak_rss_mib,skipped\n");
    for (int v = 0; v < NV; v++) {
      if (why[v]) {
        fprintf(f, "%s,%" PRId64 ",,,,,,\"%s\"\n", key[v], n, why[v]);
        continue;
      }
      fprintf(f, "%s,%" PRId64 ",%.1f,%.3f,%.3f,%.3f,%.1f,\n", key[v], n,
              rate[v], rate[V_OB1] / rate[v], rate[V_OBG] / rate[v],
              fsync_pm[v], rss[v]);
    }
    fclose(f);
  }
  printf("\n(a)/this, (b)/this: oncebox's rate over the variant's, measured in "
         "this run.\nfsync/msg: fsync + fdatasync calls per message (strace "
         "-f -c, runs of 400 minus\nruns of 200 messages, untimed); peak RSS: "
         "ru_maxrss of the variant's process,\nits runtime included (node, "
         "php). The peers ack outside the handler's\ntransaction (their "
         "design); oncebox acks inside it.\n");
  return 0;
}
