/* SPDX-License-Identifier: Apache-2.0 */
/* ob-bench-growth: what a terminal's history costs each new message (issue
** 19: bytes written and CPU per message, and the rate, at 10k, 100k and 500k
** rows of history; a terminal holds 30 days of dedup records).
**
**   ob-bench-growth [-H LIST] [-n N] [-b B] [-r R] [-s SEED]
**
** For each history size H: a template database is built once through the
** public API (H PaymentCaptured messages enqueued and handled with the
** payout module at batch 1000, their outbox events drained to a sink that
** accepts everything, so H processed_message, H merchant_payout and H
** published outbox_event rows, as a terminal that synced would hold; built
** at synchronous=NORMAL, which only changes how long the building takes).
** Each run copies the template, and in a freshly exec'd process opens it at
** synchronous=FULL, enqueues N new messages (1000 per transaction, not
** timed) and handles them at batch_size B. Measured over the handling:
**   msg/s            N / wall time
**   KiB/msg SQLite   bytes through xWrite (WAL frames, checkpoint copies)
**   KiB/msg kernel   the process's write_bytes (/proc/self/io): page-cache
**                    pages it dirtied, what reaches the device (the file
**                    system's journal not included)
**   CPU us/msg       user + system time of the process
** Runs are interleaved (every size once, then again, order rotated) and
** medians reported; each ratio is to the smallest history of the same run. */
#include <errno.h>
#include <fcntl.h>
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

#define MAX_SIZES 8
#define MAX_REPS 32
#define HISTORY_SEED_OFFSET 1000003u /* the history's ids never meet the run's */

typedef struct result_s {
  int ok;
  int64_t n;
  double handle_s, cpu_s, sys_s;
  int64_t xwrite_bytes, wal_bytes, kernel_bytes;
} result_t;

static void die_ob(ob_engine_t* e, int rc, const char* what) {
  fprintf(stderr, "bench: %s: %s: %s\n", what, ob_err_name(rc),
          e ? ob_errmsg(e) : "");
  exit(1);
}

static int accept_all(void* arg, const ob_event_t* ev) {
  (void)arg;
  (void)ev;
  return 0;
}

/* user + system seconds so far; *sys the system part. */
static double cpu_now_s(double* sys) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  *sys = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + *sys;
}

static void open_engine(ob_engine_t** e, const char* path, ob_sync_t sync,
                        int batch) {
  ob_options_t o;
  char err[256];
  int rc;
  ob_options_init(&o);
  o.db_path = path;
  o.synchronous = sync;
  o.batch_size = batch;
  if ((rc = ob_open(e, &o, err, sizeof err)) < 0) {
    fprintf(stderr, "bench: open %s: %s\n", path, err);
    exit(1);
  }
  if ((rc = ob_register_payout(*e)) < 0) die_ob(*e, rc, "register");
}

static int64_t handle_all(ob_engine_t* e) {
  int64_t done = 0;
  for (;;) {
    ob_batch_result_t r;
    int rc = ob_run_once(e, &r);
    if (rc < 0) die_ob(e, rc, "ob_run_once");
    if (r.claimed == 0) return done;
    done += r.handled;
  }
}

/* The template: H messages of history, handled and published. */
static void build_history(const char* path, int64_t h, uint64_t seed) {
  ob_engine_t* e = NULL;
  ob_stats_t st;
  size_t published;
  int rc;
  bc_remove_db(path);
  open_engine(&e, path, OB_SYNC_NORMAL, 1000);
  for (int64_t left = h; left > 0;) {
    int64_t k = left < 50000 ? left : 50000;
    if ((rc = bc_enqueue_payments(e, k, seed + (uint64_t)left)) < 0)
      die_ob(e, rc, "enqueue history");
    if (handle_all(e) != k) die_ob(e, OB_EDB, "history not all handled");
    left -= k;
  }
  do {
    if ((rc = ob_outbox_drain(e, accept_all, NULL, 10000, &published)) < 0)
      die_ob(e, rc, "drain history");
  } while (published > 0);
  if ((rc = ob_stats(e, &st)) < 0) die_ob(e, rc, "stats");
  if (st.outbox_unpublished != 0) die_ob(e, OB_EDB, "history not published");
  ob_close(e);
}

/* The copy's pages reach the disk before the run, and leave the page
** cache: its writeback is not the run's, and the run starts as a terminal
** after a reboot does, its pages read in by its own reads (on Linux 6.16+,
** the size of the page-cache folios that reads and writes create decides
** how many bytes a 2 KiB page write dirties). */
static int flush_file(const char* path) {
  int fd = open(path, O_RDWR | O_CLOEXEC), rc;
  if (fd < 0) return -1;
  rc = fsync(fd);
  if (rc == 0 && getenv("OB_BENCH_KEEP_CACHE") == NULL)
    rc = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0 ? 0 : -1;
  close(fd);
  return rc;
}

static int child_main(int argc, char** argv) {
  /* --child TEMPLATE RUNDB N BATCH SEED FD */
  result_t res;
  ob_engine_t* e = NULL;
  bc_proc_io_t io0, io1;
  ob_stats_t st;
  int64_t n;
  int batch, fd, rc;
  double t0, c0, s0, s1;
  if (argc != 8) return 2;
  n = strtoll(argv[4], NULL, 10);
  batch = atoi(argv[5]);
  fd = atoi(argv[7]);
  memset(&res, 0, sizeof res);
  bc_remove_db(argv[3]);
  if (bc_copy_file(argv[2], argv[3]) < 0 || flush_file(argv[3]) < 0) return 1;
  bc_shim_register();
  open_engine(&e, argv[3], OB_SYNC_FULL, batch);
  if ((rc = bc_enqueue_payments(e, n, strtoull(argv[6], NULL, 10))) < 0)
    die_ob(e, rc, "enqueue");
  memset(&bc_io, 0, sizeof bc_io);
  if (bc_proc_io(0, &io0) < 0) return 1;
  c0 = cpu_now_s(&s0);
  t0 = bc_mono_s();
  res.n = handle_all(e);
  res.handle_s = bc_mono_s() - t0;
  res.cpu_s = cpu_now_s(&s1) - c0;
  res.sys_s = s1 - s0;
  if (bc_proc_io(0, &io1) < 0) return 1;
  res.xwrite_bytes = bc_io.written;
  res.wal_bytes = bc_io.wal_written;
  res.kernel_bytes = io1.write_bytes - io0.write_bytes;
  if ((rc = ob_stats(e, &st)) < 0) die_ob(e, rc, "stats");
  res.ok = res.n == n && st.failed == 0 && st.queue_ready == 0;
  ob_close(e);
  bc_remove_db(argv[3]);
  if (write(fd, &res, sizeof res) != (ssize_t)sizeof res) return 1;
  return res.ok ? 0 : 3;
}

static int run_one(const char* tmpl, const char* rundb, int64_t n, int batch,
                   uint64_t seed, result_t* out) {
  char sn[32], sb[16], ss[32], what[4300];
  const char* args[] = {tmpl, rundb, sn, sb, ss, NULL};
  snprintf(sn, sizeof sn, "%" PRId64, n);
  snprintf(sb, sizeof sb, "%d", batch);
  snprintf(ss, sizeof ss, "%" PRIu64, seed);
  snprintf(what, sizeof what, "run on %s", tmpl);
  return bc_run_child("ob-bench-growth", args, out, sizeof *out, NULL, NULL,
                      what);
}

static void usage(FILE* f) {
  fprintf(f,
          "usage: ob-bench-growth [-H LIST] [-n N] [-b B] [-r R] [-s SEED]\n"
          "  -H LIST  rows of history, comma-separated (10000,100000,500000)\n"
          "  -n N     new messages handled in each run (20000)\n"
          "  -b B     batch_size (100)\n"
          "  -r R     runs of each size, medians reported (3)\n"
          "  -s SEED  message generator seed (20261202)\n"
          "The databases go to $TMPDIR or /tmp; use a real disk, not tmpfs.\n");
}

int main(int argc, char** argv) {
  int64_t sizes[MAX_SIZES], n = 20000;
  int nsizes = 0, batch = 100, reps = 3, c;
  uint64_t seed = 20261202;
  const char* hlist = "10000,100000,500000";
  const char* base = getenv("TMPDIR");
  char dir[4096], tmpl[MAX_SIZES][4200], rundb[4200];
  result_t res[MAX_SIZES][MAX_REPS];

  if (argc >= 2 && strcmp(argv[1], "--child") == 0)
    return child_main(argc, argv);
  while ((c = getopt(argc, argv, "H:n:b:r:s:h")) != -1) {
    switch (c) {
      case 'H': hlist = optarg; break;
      case 'n': n = strtoll(optarg, NULL, 10); break;
      case 'b': batch = atoi(optarg); break;
      case 'r': reps = atoi(optarg); break;
      case 's': seed = strtoull(optarg, NULL, 10); break;
      case 'h': usage(stdout); return 0;
      default: usage(stderr); return 2;
    }
  }
  for (const char* p = hlist; *p && nsizes < MAX_SIZES;) {
    char* end;
    long long v = strtoll(p, &end, 10);
    if (end == p || v < 0) {
      usage(stderr);
      return 2;
    }
    sizes[nsizes++] = v;
    p = *end == ',' ? end + 1 : end;
    if (*end != ',' && *end != '\0') {
      usage(stderr);
      return 2;
    }
  }
  if (nsizes == 0 || n < 1 || batch < 1 || batch > 10000 || reps < 1 ||
      reps > MAX_REPS) {
    usage(stderr);
    return 2;
  }
  snprintf(dir, sizeof dir, "%s/ob-growth-XXXXXX",
           base && *base ? base : "/tmp");
  if (mkdtemp(dir) == NULL) {
    perror("mkdtemp");
    return 1;
  }
  printf("oncebox %s growth benchmark, SQLite %s\n", ob_version(),
         sqlite3_libversion());
  printf("databases in %s%s; %" PRId64 " new messages per run at batch_size "
         "%d, synchronous=FULL; %d run%s per size, medians\n",
         dir,
         bc_is_tmpfs(dir)
             ? " (tmpfs: fsync is free here, figures are NOT meaningful)"
             : "",
         n, batch, reps, reps > 1 ? "s" : "");
  fflush(stdout);
  for (int i = 0; i < nsizes; i++) {
    double t0 = bc_mono_s();
    snprintf(tmpl[i], sizeof tmpl[i], "%s/history-%" PRId64 ".db", dir,
             sizes[i]);
    build_history(tmpl[i], sizes[i], seed + HISTORY_SEED_OFFSET);
    printf("  history of %" PRId64 " built in %.1f s\n", sizes[i],
           bc_mono_s() - t0);
    fflush(stdout);
  }
  snprintf(rundb, sizeof rundb, "%s/run.db", dir);
  for (int r = 0; r < reps; r++)
    for (int k = 0; k < nsizes; k++) {
      int i = (k + r) % nsizes;
      if (run_one(tmpl[i], rundb, n, batch, seed, &res[i][r]) < 0) return 1;
    }

  printf("\n  %-10s %8s %15s %7s %10s %8s %10s %9s %7s %8s\n", "history",
         "msg/s", "(min-max)", "ratio", "KiB/msg", "of which", "KiB/msg",
         "CPU", "ratio", "system");
  printf("  %-10s %8s %15s %7s %10s %8s %10s %9s %7s %8s\n", "rows", "", "",
         "", "SQLite", "WAL", "kernel", "us/msg", "", "us/msg");
  {
    double rate0 = 0, cpu0 = 0;
    for (int i = 0; i < nsizes; i++) {
      double rate[MAX_REPS], xw[MAX_REPS], ww[MAX_REPS], kw[MAX_REPS];
      double cpu[MAX_REPS], sys[MAX_REPS];
      double mr, mc;
      char range[40];
      for (int r = 0; r < reps; r++) {
        const result_t* x = &res[i][r];
        rate[r] = (double)x->n / x->handle_s;
        xw[r] = (double)x->xwrite_bytes / 1024.0 / (double)x->n;
        ww[r] = (double)x->wal_bytes / 1024.0 / (double)x->n;
        kw[r] = (double)x->kernel_bytes / 1024.0 / (double)x->n;
        cpu[r] = x->cpu_s * 1e6 / (double)x->n;
        sys[r] = x->sys_s * 1e6 / (double)x->n;
      }
      mr = bc_median(rate, reps);
      snprintf(range, sizeof range, "(%.0f-%.0f)", rate[0], rate[reps - 1]);
      mc = bc_median(cpu, reps);
      if (i == 0) {
        rate0 = mr;
        cpu0 = mc;
      }
      printf("  %-10" PRId64 " %8.0f %15s %7.2f %10.1f %8.1f %10.1f %9.1f "
             "%7.2f %8.1f\n",
             sizes[i], mr, range, mr / rate0, bc_median(xw, reps),
             bc_median(ww, reps), bc_median(kw, reps), mc, mc / cpu0,
             bc_median(sys, reps));
    }
  }
  printf("\nratio: to the first history size of the same run (rate, then CPU "
         "per message)\n");
  for (int i = 0; i < nsizes; i++) bc_remove_db(tmpl[i]);
  rmdir(dir);
  return 0;
}
