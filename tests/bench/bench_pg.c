/* SPDX-License-Identifier: Apache-2.0 */
/* ob-bench-pg: the head office's throughput (issue 20; docs/postgresql.md,
** "Throughput"). Messages per second with 1, 2 and 4 consumer processes on
** one database, side by side in one run:
**   (a) oncebox on PostgreSQL (a server of the bench's own: initdb, a Unix
**       socket, fsync=on, synchronous_commit=on; support/pg_server.h);
**   (b) oncebox on SQLite, a file on the same file system as that server's
**       data directory, WAL with synchronous=FULL;
**   (c) pg-boss (npm, tests/bench/pgboss/) on the same server, its handler
**       doing the same work per message in one transaction per batch.
**
**   ob-bench-pg [-n N] [-r R] [-b B] [-k LIST] [-s SEED]
**
** Every variant and round: a fresh database holding the same N seeded
** PaymentCaptured messages (enqueued first, not timed), then K processes
** started at once, each handling batches of B until it finds nothing left;
** timed from the first fork to the last exit (oncebox's open counted;
** pg-boss's start-up not: in pg-boss's favour). Each oncebox process runs
** the payout module (dedup claim, payout, outbox row, the queue row's
** delete, one transaction per batch). R rounds rotate the variants'
** order; medians are printed, with the ratios measured side by side.
** Needs PostgreSQL 15's server programs; pg-boss is skipped (with why)
** without node >= 20 or tests/bench/pgboss/node_modules (npm ci there). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "oncebox.h"
#include "oncebox_payout.h"
#include "oncebox_postgresql.h"
#include "tests/bench/bench_common.h"
#include "tests/support/pg_server.h"

#ifndef OB_BENCH_SOURCE_DIR
#define OB_BENCH_SOURCE_DIR "."
#endif

#define MAX_REPS 16
#define MAX_K 8

enum { V_PG, V_SQLITE, V_PGBOSS, NVARIANTS };
static const char* const variant_name[NVARIANTS] = {
    "oncebox/postgresql", "oncebox/sqlite", "pg-boss/postgresql"};

static pg_server_t g_srv;
static char g_dir[600];
static int g_seq;

/* One consumer process: batches of `batch` until nothing is left. */
static void worker(const char* db, int batch) {
  ob_options_t o;
  ob_engine_t* e = NULL;
  char err[512];
  ob_options_init(&o);
  o.db_path = db;
  o.batch_size = batch;
  o.busy_timeout_ms = 30000;
  if (ob_open(&e, &o, err, sizeof err) != 0) {
    fprintf(stderr, "worker: ob_open: %s\n", err);
    _exit(2);
  }
  if (ob_register_payout(e) != 0) _exit(3);
  for (;;) {
    ob_batch_result_t r;
    int rc = ob_run_once(e, &r);
    if (rc == OB_EBUSY) continue;
    if (rc != 0) {
      fprintf(stderr, "worker: %s: %s\n", ob_err_name(rc), ob_errmsg(e));
      _exit(4);
    }
    if (r.claimed == 0) break;
  }
  ob_close(e);
  _exit(0);
}

static int64_t payouts(const char* db) {
  ob_options_t o;
  ob_engine_t* e = NULL;
  ob_payout_stats_t ps;
  char err[512];
  ob_options_init(&o);
  o.db_path = db;
  if (ob_open(&e, &o, err, sizeof err) != 0) {
    fprintf(stderr, "bench_pg: ob_open %s\n", err);
    exit(1);
  }
  if (ob_register_payout(e) != 0 || ob_payout_stats(e, &ps) != 0) {
    fprintf(stderr, "bench_pg: payout stats: %s\n", ob_errmsg(e));
    exit(1);
  }
  ob_close(e);
  return ps.payouts;
}

/* A fresh database of variant v (its connection string or path in out),
** with n messages queued unless v is pg-boss's (its script enqueues). */
static void fresh_db(int v, int64_t n, uint64_t seed, char* out, size_t sz,
                     char* name, size_t namesz) {
  snprintf(name, namesz, "bench_%d_%d", (int)getpid(), ++g_seq);
  if (v == V_SQLITE) {
    snprintf(out, sz, "%s/%s.db", g_dir, name);
  } else if (pg_server_create_db(&g_srv, name, out, sz) != 0) {
    fprintf(stderr, "bench_pg: CREATE DATABASE %s failed\n", name);
    exit(1);
  }
  if (v != V_PGBOSS) {
    ob_options_t o;
    ob_engine_t* e = NULL;
    char err[512];
    ob_options_init(&o);
    o.db_path = out;
    if (ob_open(&e, &o, err, sizeof err) != 0 ||
        bc_enqueue_payments(e, n, seed) != 0) {
      fprintf(stderr, "bench_pg: enqueue into %s: %s\n", name, err);
      exit(1);
    }
    ob_close(e);
  }
}

/* k oncebox processes on db; seconds from the first fork to the last exit. */
static double run_oncebox(const char* db, int k, int batch, int64_t n) {
  pid_t pids[MAX_K];
  double t0, t1;
  fflush(NULL);
  t0 = bc_mono_s();
  for (int i = 0; i < k; i++) {
    pids[i] = fork();
    if (pids[i] < 0) {
      perror("fork");
      exit(1);
    }
    if (pids[i] == 0) worker(db, batch);
  }
  for (int i = 0; i < k; i++) {
    int st;
    if (waitpid(pids[i], &st, 0) != pids[i] || !WIFEXITED(st) ||
        WEXITSTATUS(st) != 0) {
      fprintf(stderr, "bench_pg: worker %d failed (status 0x%x)\n", i, st);
      exit(1);
    }
  }
  t1 = bc_mono_s();
  if (payouts(db) != n) {
    fprintf(stderr, "bench_pg: %lld payouts, want %lld\n",
            (long long)payouts(db), (long long)n);
    exit(1);
  }
  return t1 - t0;
}

static const char* pgboss_missing(void) {
  static char why[256];
  struct stat sb;
  int st = system("node -e 'process.exit(Number(process.versions.node"
                  ".split(\".\")[0]) >= 20 ? 0 : 1)' 2>/dev/null");
  if (st != 0) return "node >= 20 not found";
  snprintf(why, sizeof why, "%s/tests/bench/pgboss/node_modules/pg-boss",
           OB_BENCH_SOURCE_DIR);
  if (stat(why, &sb) != 0)
    return "tests/bench/pgboss/node_modules missing (npm ci there)";
  return NULL;
}

static double run_pgboss(const char* dbname, const char* ndjson, int k,
                         int batch, int64_t n) {
  char cmd[2048], line[512];
  FILE* p;
  double seconds = -1;
  snprintf(cmd, sizeof cmd,
           "node '%s/tests/bench/pgboss/pgboss_bench.mjs' '%s' %d '%s' '%s'"
           " '%s' %lld %d %d",
           OB_BENCH_SOURCE_DIR, g_srv.dir, g_srv.port, dbname, g_srv.user,
           ndjson, (long long)n, k, batch);
  fflush(NULL);
  p = popen(cmd, "r");
  if (p == NULL) return -1;
  while (fgets(line, sizeof line, p) != NULL) {
    const char* s = strstr(line, "\"seconds\":");
    if (s != NULL) seconds = strtod(s + 10, NULL);
  }
  if (pclose(p) != 0 || seconds <= 0) {
    fprintf(stderr, "bench_pg: pg-boss run failed\n");
    exit(1);
  }
  return seconds;
}

static int parse_list(const char* s, int* out, int max) {
  int n = 0;
  while (*s && n < max) {
    char* end;
    long v = strtol(s, &end, 10);
    if (end == s || v < 1 || v > MAX_K) return -1;
    out[n++] = (int)v;
    s = *end == ',' ? end + 1 : end;
  }
  return n;
}

int main(int argc, char** argv) {
  int64_t n = 5000;
  int reps = 3, batch = 16, ks[MAX_K] = {1, 2, 4}, nk = 3, c;
  uint64_t seed = 20261203;
  double secs[NVARIANTS][MAX_K][MAX_REPS];
  const char* skip;
  const char* no_boss;
  char ndjson[600];

  /* The dialect's archive, linked in: no plugin folder needed. */
  if (ob_postgresql_register(ndjson, sizeof ndjson) != 0) {
    fprintf(stderr, "bench_pg: %s\n", ndjson);
    return 1;
  }
  while ((c = getopt(argc, argv, "n:r:b:k:s:")) != -1) {
    switch (c) {
      case 'n': n = strtoll(optarg, NULL, 10); break;
      case 'r': reps = atoi(optarg); break;
      case 'b': batch = atoi(optarg); break;
      case 'k': nk = parse_list(optarg, ks, MAX_K); break;
      case 's': seed = strtoull(optarg, NULL, 0); break;
      default:
        fprintf(stderr, "usage: ob-bench-pg [-n N] [-r R] [-b B] [-k LIST]"
                        " [-s SEED]\n");
        return 2;
    }
  }
  if (n < 1 || reps < 1 || reps > MAX_REPS || batch < 1 || nk < 1) {
    fprintf(stderr, "ob-bench-pg: bad arguments\n");
    return 2;
  }
  skip = pg_server_start(&g_srv);
  if (skip != NULL) {
    printf("ob-bench-pg: %s\n", skip);
    return 0;
  }
  /* The SQLite files next to the server's data directory: one disk. */
  snprintf(g_dir, sizeof g_dir, "%s/sqlite", g_srv.dir);
  if (mkdir(g_dir, 0700) != 0) {
    perror(g_dir);
    return 1;
  }
  snprintf(ndjson, sizeof ndjson, "%s/messages.ndjson", g_srv.dir);
  if (bc_write_ndjson(ndjson, n, seed) != 0) return 1;
  /* pg-boss's worker processes run as us, reading the file: as root the
  ** server's directory is the server user's, so let us read it. */
  (void)chmod(g_srv.dir, 0755);
  (void)chmod(ndjson, 0644);
  no_boss = pgboss_missing();

  printf("ob-bench-pg: %lld messages, batch %d, %d round(s), seed %llu; "
         "%s%s\n", (long long)n, batch, reps, (unsigned long long)seed,
         g_srv.dir, bc_is_tmpfs(g_srv.dir) ? " (tmpfs: fsync costs nothing "
                                               "here, figures are not a disk's)"
                                             : "");
  if (no_boss) printf("  pg-boss skipped: %s\n", no_boss);
  /* Not timed: the server's first database and the page cache warm up. */
  for (int v = V_PG; v <= V_SQLITE; v++) {
    char db[1400], name[64];
    fresh_db(v, n < 500 ? n : 500, seed, db, sizeof db, name, sizeof name);
    (void)run_oncebox(db, 1, batch, n < 500 ? n : 500);
    if (v == V_SQLITE) bc_remove_db(db);
  }
  for (int r = 0; r < reps; r++) {
    for (int ki = 0; ki < nk; ki++) {
      for (int j = 0; j < NVARIANTS; j++) {
        int v = (j + r) % NVARIANTS;  /* rotate the order */
        char db[1400], name[64];
        if (v == V_PGBOSS && no_boss) {
          secs[v][ki][r] = -1;
          continue;
        }
        fresh_db(v, n, seed, db, sizeof db, name, sizeof name);
        secs[v][ki][r] = v == V_PGBOSS
                             ? run_pgboss(name, ndjson, ks[ki], batch, n)
                             : run_oncebox(db, ks[ki], batch, n);
        fprintf(stderr, "  round %d, %d process(es), %s: %.2f s\n", r + 1,
                ks[ki], variant_name[v], secs[v][ki][r]);
        if (v == V_SQLITE) bc_remove_db(db);
      }
    }
  }

  printf("\n  processes | %-20s | %-20s | %-20s | pg/sqlite | pg/pg-boss\n",
         variant_name[V_PG], variant_name[V_SQLITE], variant_name[V_PGBOSS]);
  for (int ki = 0; ki < nk; ki++) {
    double rate[NVARIANTS], vs_sqlite[MAX_REPS], vs_boss[MAX_REPS];
    double r_sqlite, r_boss = -1;
    /* A ratio per round (the variants ran back to back), then the median. */
    for (int r = 0; r < reps; r++) {
      vs_sqlite[r] = secs[V_SQLITE][ki][r] / secs[V_PG][ki][r];
      vs_boss[r] = secs[V_PGBOSS][ki][r] / secs[V_PG][ki][r];
    }
    r_sqlite = bc_median(vs_sqlite, reps);
    if (secs[V_PGBOSS][ki][0] > 0) r_boss = bc_median(vs_boss, reps);
    for (int v = 0; v < NVARIANTS; v++) {
      double m = secs[v][ki][0] < 0 ? -1 : bc_median(secs[v][ki], reps);
      rate[v] = m > 0 ? (double)n / m : -1;
    }
    printf("  %9d | %14.0f msg/s | %14.0f msg/s | ", ks[ki], rate[V_PG],
           rate[V_SQLITE]);
    if (rate[V_PGBOSS] > 0)
      printf("%14.0f msg/s | %9.2f | %10.2f\n", rate[V_PGBOSS], r_sqlite,
             r_boss);
    else
      printf("%20s | %9.2f | %10s\n", "skipped", r_sqlite, "-");
  }
  printf("  (medians of %d round(s); a ratio is the median of the rounds'"
         " own ratios, > 1: PostgreSQL faster)\n", reps);
  return pg_server_stop(&g_srv) == 0 ? 0 : 1;
}
