/* SPDX-License-Identifier: Apache-2.0 */
/* ob-bench-sweep: handling throughput against batch size and durability
** setting, oncebox beside the raw SQLite limit of the same statements, and
** the cost of each message (docs/performance.md, "Throughput against batch
** size and durability" and "Cost per message").
**
**   ob-bench-sweep [-b LIST] [-m F] [-r R] [-s SEED] [-o CSV] [-O CSV]
**
** For each synchronous setting (FULL, then NORMAL) and each batch size B
** (default 1,10,100,1000): (a) raw SQLite, the engine's statements by hand,
** B messages per transaction (bench_common.c, as bench_engine.c's (a)) and
** (b) oncebox through its public API, batch_size B, the payout module.
** Each point runs in its own freshly exec'd process on a fresh database in
** $TMPDIR or /tmp, after enqueueing its N messages (1000 per transaction,
** not timed). N grows with B so that every point runs long enough and
** commits at least 20 batches: 1000, 3000, 10000, 20000 (times -m).
** Runs are interleaved (every point once, then again) and the order of (a)
** and (b) alternates; medians are reported.
**
** Per message, from the handling phase of (b):
**   fsync/commit  xSync calls through a counting VFS shim (WAL, and the
**                 database file at checkpoints) per committed batch;
**   KiB/msg       bytes SQLite handed to write(2) (xWrite: WAL frames and
**                 checkpoint copies) and the kernel's write_bytes of the
**                 process (/proc/self/io: page-cache pages it dirtied, what
**                 reaches the device, file-system journal not included).
** -o writes one CSV line per point (the plot's input), -O one per run. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "oncebox.h"
#include "oncebox_payout.h"
#include "tests/bench/bench_common.h"

#define MAX_BATCHES 8
#define MAX_REPS 16

typedef struct result_s {
  int ok;
  int64_t n, commits;
  double handle_s;
  bc_io_counts_t io;
  int64_t kernel_write_bytes, wchar;
} result_t;

/* ---- children ---------------------------------------------------------------- */

static void run_oncebox(const char* path, int64_t n, int batch, int sync,
                        uint64_t seed, result_t* res) {
  ob_options_t o;
  ob_engine_t* e = NULL;
  ob_stats_t st;
  ob_payout_stats_t ps;
  bc_proc_io_t io0, io1;
  double t0;
  char err[256];
  int rc;

  ob_options_init(&o);
  o.db_path = path;
  o.batch_size = batch;
  o.synchronous = sync == 1 ? OB_SYNC_NORMAL : OB_SYNC_FULL;
  if ((rc = ob_open(&e, &o, err, sizeof err)) < 0) {
    fprintf(stderr, "bench: open: %s\n", err);
    exit(1);
  }
  if ((rc = ob_register_payout(e)) < 0) exit(1);
  if (bc_enqueue_payments(e, n, seed) < 0) {
    fprintf(stderr, "bench: enqueue: %s\n", ob_errmsg(e));
    exit(1);
  }
  memset(&bc_io, 0, sizeof bc_io);
  bc_proc_io(0, &io0);
  t0 = bc_mono_s();
  for (;;) {
    ob_batch_result_t r;
    if ((rc = ob_run_once(e, &r)) < 0) {
      fprintf(stderr, "bench: ob_run_once: %s\n", ob_errmsg(e));
      exit(1);
    }
    if (r.claimed == 0) break;
    res->n += r.handled;
    res->commits++;
  }
  res->handle_s = bc_mono_s() - t0;
  bc_proc_io(0, &io1);
  res->io = bc_io;
  res->kernel_write_bytes = io1.write_bytes - io0.write_bytes;
  res->wchar = io1.wchar - io0.wchar;
  if (ob_stats(e, &st) < 0 || ob_payout_stats(e, &ps) < 0) exit(1);
  res->ok = ps.payouts == n && st.outbox_unpublished == n &&
            st.queue_ready + st.queue_delayed == 0 && st.failed == 0 &&
            res->n == n;
  ob_close(e);
}

static int child_main(char** argv) {
  /* --child IMPL SYNC BATCH N SEED PATH FD */
  result_t res;
  int raw = atoi(argv[2]), sync = atoi(argv[3]), batch = atoi(argv[4]);
  int64_t n = strtoll(argv[5], NULL, 10);
  uint64_t seed = strtoull(argv[6], NULL, 10);
  int fd = atoi(argv[8]);
  memset(&res, 0, sizeof res);
  bc_shim_register();
  if (raw) {
    bc_raw_result_t r;
    /* The kernel's write_bytes is not split between enqueue and handling
    ** here: only SQLite's own counts are reported for (a). */
    bc_run_raw(argv[7], n, batch, sync, seed, &r);
    res.ok = r.ok;
    res.n = r.n;
    res.commits = r.commits;
    res.handle_s = r.handle_s;
    res.io = bc_io;
    res.kernel_write_bytes = -1;
    res.wchar = -1;
  } else {
    run_oncebox(argv[7], n, batch, sync, seed, &res);
  }
  if (write(fd, &res, sizeof res) != (ssize_t)sizeof res) return 1;
  return res.ok ? 0 : 3;
}

/* ---- the parent ---------------------------------------------------------------- */

typedef struct sample_s {
  result_t r;
  long maxrss_kib;
} sample_t;

static int run_point(int raw, int sync, int batch, int64_t n, uint64_t seed,
                     const char* dir, sample_t* out) {
  struct rusage ru;
  char a[5][32], path[4200], what[64];
  const char* args[] = {a[0], a[1], a[2], a[3], a[4], path, NULL};
  int rc;

  snprintf(path, sizeof path, "%s/sweep.db", dir);
  bc_remove_db(path);
  snprintf(a[0], 32, "%d", raw);
  snprintf(a[1], 32, "%d", sync);
  snprintf(a[2], 32, "%d", batch);
  snprintf(a[3], 32, "%" PRId64, n);
  snprintf(a[4], 32, "%" PRIu64, seed);
  snprintf(what, sizeof what, "%s sync=%d batch=%d", raw ? "raw" : "oncebox",
           sync, batch);
  memset(out, 0, sizeof *out);
  rc = bc_run_child("ob-bench-sweep", args, &out->r, sizeof out->r, &ru, NULL,
                    what);
  bc_remove_db(path);
  out->maxrss_kib = ru.ru_maxrss;
  return rc;
}

static int parse_list(const char* s, int* out, int max) {
  int n = 0;
  char* end;
  while (*s && n < max) {
    long v = strtol(s, &end, 10);
    if (end == s || v < 1 || v > 10000) return -1;
    out[n++] = (int)v;
    s = *end == ',' ? end + 1 : end;
    if (*end && *end != ',') return -1;
  }
  return n;
}

static int64_t default_n(int batch) {
  if (batch <= 1) return 1000;
  if (batch <= 10) return 3000;
  if (batch <= 100) return 10000;
  return batch * 20 > 20000 ? batch * 20 : 20000;
}

static void usage(FILE* f) {
  fprintf(f,
          "usage: ob-bench-sweep [-b LIST] [-m F] [-r R] [-s SEED] [-o CSV] "
          "[-O CSV]\n"
          "  -b LIST  batch sizes (1,10,100,1000)\n"
          "  -m F     scale the messages per point (1.0: 1000, 3000, 10000, "
          "20000)\n"
          "  -r R     runs of each point, medians reported (3)\n"
          "  -s SEED  message generator seed (20261130)\n"
          "  -o CSV   write one line per point (the plot's input)\n"
          "  -O CSV   write one line per run\n"
          "The databases go to $TMPDIR or /tmp; use a real disk, not tmpfs.\n");
}

int main(int argc, char** argv) {
  static const int syncs[2] = {2, 1};
  static const char* const sync_name[3] = {"", "NORMAL", "FULL"};
  int batches[MAX_BATCHES] = {1, 10, 100, 1000}, nb = 4, reps = 3, c;
  double scale = 1.0;
  uint64_t seed = 20261130;
  const char *csv = NULL, *csv_runs = NULL, *base = getenv("TMPDIR");
  char dir[4096];
  static sample_t s[2][MAX_BATCHES][2][MAX_REPS];  /* sync, batch, raw?, rep */
  FILE* runs = NULL;

  if (argc == 9 && strcmp(argv[1], "--child") == 0) return child_main(argv);
  while ((c = getopt(argc, argv, "b:m:r:s:o:O:h")) != -1) {
    switch (c) {
      case 'b':
        if ((nb = parse_list(optarg, batches, MAX_BATCHES)) < 1) {
          usage(stderr);
          return 2;
        }
        break;
      case 'm': scale = atof(optarg); break;
      case 'r': reps = atoi(optarg); break;
      case 's': seed = strtoull(optarg, NULL, 10); break;
      case 'o': csv = optarg; break;
      case 'O': csv_runs = optarg; break;
      case 'h': usage(stdout); return 0;
      default: usage(stderr); return 2;
    }
  }
  if (reps < 1 || reps > MAX_REPS || scale <= 0 || scale > 100) {
    usage(stderr);
    return 2;
  }
  snprintf(dir, sizeof dir, "%s/ob-bench-sweep-XXXXXX",
           base && *base ? base : "/tmp");
  if (mkdtemp(dir) == NULL) {
    perror("mkdtemp");
    return 1;
  }
  if (csv_runs && (runs = fopen(csv_runs, "w")) == NULL) {
    perror(csv_runs);
    return 1;
  }
  if (runs)
    fprintf(runs, "sync,batch,variant,rep,messages,commits,seconds,msg_per_s,"
                  "wal_syncs,db_syncs,other_syncs,sqlite_written_bytes,"
                  "kernel_write_bytes,wchar,maxrss_kib\n");

  printf("oncebox %s batch/durability sweep, SQLite %s\n", ob_version(),
         sqlite3_libversion());
  printf("databases in %s%s; WAL; seed %" PRIu64 "; %d run%s of each point, "
         "medians\n", dir,
         bc_is_tmpfs(dir) ? " (tmpfs: fsync is free here, figures are NOT "
                            "meaningful)" : "",
         seed, reps, reps > 1 ? "s" : "");
  fflush(stdout);

  for (int r = 0; r < reps; r++) {
    for (int si = 0; si < 2; si++)
      for (int bi = 0; bi < nb; bi++) {
        int64_t n = (int64_t)(default_n(batches[bi]) * scale);
        if (n < batches[bi]) n = batches[bi];
        for (int k = 0; k < 2; k++) {
          int raw = (r + bi + k) % 2;
          sample_t* x = &s[si][bi][raw][r];
          if (run_point(raw, syncs[si], batches[bi], n, seed + (uint64_t)r,
                        dir, x) < 0) {
            rmdir(dir);
            return 1;
          }
          if (runs)
            fprintf(runs,
                    "%s,%d,%s,%d,%" PRId64 ",%" PRId64 ",%.4f,%.1f,%" PRId64
                    ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64
                    ",%" PRId64 ",%ld\n",
                    sync_name[syncs[si]], batches[bi],
                    raw ? "raw" : "oncebox", r + 1, x->r.n, x->r.commits,
                    x->r.handle_s, (double)x->r.n / x->r.handle_s,
                    x->r.io.wal_syncs, x->r.io.db_syncs, x->r.io.other_syncs,
                    x->r.io.written, x->r.kernel_write_bytes, x->r.wchar,
                    x->maxrss_kib);
        }
      }
    printf("run %d of %d done\n", r + 1, reps);
    fflush(stdout);
  }
  rmdir(dir);
  if (runs) fclose(runs);

  {
    FILE* out = NULL;
    if (csv && (out = fopen(csv, "w")) == NULL) {
      perror(csv);
      return 1;
    }
    if (out)
      fprintf(out, "sync,batch,messages,raw_msg_per_s,oncebox_msg_per_s,"
                   "ratio,oncebox_fsync_per_commit,oncebox_fsync_per_msg,"
                   "oncebox_sqlite_kib_per_msg,oncebox_kernel_kib_per_msg,"
                   "raw_sqlite_kib_per_msg,oncebox_peak_rss_mib\n");
    printf("\nhandling (dedup claim + payout + outbox row + ack), msg/s, "
           "medians of %d\n", reps);
    printf("  %-6s %6s %7s %9s %9s %6s %8s %9s %9s %9s %8s\n", "sync",
           "batch", "msgs", "raw", "oncebox", "ratio", "x batch1",
           "fsync/cmt", "fsync/msg", "KiB/msg", "(kernel)");
    for (int si = 0; si < 2; si++) {
      double ob1 = 0;
      for (int bi = 0; bi < nb; bi++) {
        double ra[MAX_REPS], rb[MAX_REPS], rss[MAX_REPS];
        const result_t* f = &s[si][bi][0][0].r;  /* oncebox, first run */
        const result_t* fr = &s[si][bi][1][0].r;  /* raw, first run */
        double raw_rate, ob_rate, fpc, fpm, kib, kkib, rkib;
        for (int r = 0; r < reps; r++) {
          ra[r] = (double)s[si][bi][1][r].r.n / s[si][bi][1][r].r.handle_s;
          rb[r] = (double)s[si][bi][0][r].r.n / s[si][bi][0][r].r.handle_s;
          rss[r] = (double)s[si][bi][0][r].maxrss_kib / 1024.0;
        }
        raw_rate = bc_median(ra, reps);
        ob_rate = bc_median(rb, reps);
        if (bi == 0) ob1 = ob_rate;
        /* Counts are deterministic up to checkpoint timing: first run's. */
        fpc = (double)(f->io.wal_syncs + f->io.db_syncs + f->io.other_syncs) /
              (double)f->commits;
        fpm = (double)(f->io.wal_syncs + f->io.db_syncs + f->io.other_syncs) /
              (double)f->n;
        kib = (double)f->io.written / 1024.0 / (double)f->n;
        kkib = (double)f->kernel_write_bytes / 1024.0 / (double)f->n;
        rkib = (double)fr->io.written / 1024.0 / (double)fr->n;
        printf("  %-6s %6d %7" PRId64 " %9.0f %9.0f %6.2f %8.1f %9.3f %9.4f "
               "%9.2f %8.2f\n",
               sync_name[syncs[si]], batches[bi], f->n, raw_rate, ob_rate,
               ob_rate / raw_rate, ob_rate / ob1, fpc, fpm, kib, kkib);
        if (out)
          fprintf(out, "%s,%d,%" PRId64 ",%.1f,%.1f,%.3f,%.3f,%.4f,%.2f,%.2f,"
                       "%.2f,%.1f\n",
                  sync_name[syncs[si]], batches[bi], f->n, raw_rate, ob_rate,
                  ob_rate / raw_rate, fpc, fpm, kib, kkib, rkib,
                  bc_median(rss, reps));
      }
    }
    if (out) fclose(out);
  }
  printf("\nraw: the engine's statements by hand (bench_common.c); ratio: "
         "oncebox / raw;\nx batch1: oncebox's rate over its own rate at the "
         "first batch size, same setting;\nfsync/cmt, fsync/msg: xSync calls "
         "(WAL commits + checkpoint syncs) per committed\nbatch and per "
         "message while handling; KiB/msg: bytes through SQLite's xWrite\n"
         "(WAL frames + checkpoint copies); (kernel): write_bytes of "
         "/proc/self/io, page\ngranularity. NORMAL is --unsafe-sync-normal: "
         "an acked message can be lost on\npower loss; it is here to show "
         "what FULL costs, not as a setting to run.\n");
  return 0;
}
