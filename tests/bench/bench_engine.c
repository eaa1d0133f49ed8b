/* SPDX-License-Identifier: Apache-2.0 */
/* ob-bench-engine: oncebox against the raw SQLite limit (docs/performance.md,
** "Handling against the raw SQLite limit").
**
**   ob-bench-engine [-n N] [-g N] [-b B] [-r R] [-s SEED] [-d S]
**
** Four variants, each in a fresh process (re-executed from /proc/self/exe,
** so its peak RSS is its own), on a fresh database in $TMPDIR or /tmp, WAL
** and synchronous=FULL:
**   (a) raw SQLite: the engine's statements hand-written with prepared
**       statements: BEGIN IMMEDIATE; SELECT the next queue row(s); per row
**       INSERT processed_message .. ON CONFLICT DO NOTHING (sqlite3_changes()), INSERT
**       merchant_payout, INSERT outbox_event, DELETE the queue row; COMMIT.
**       One message per transaction, then B (100) per transaction.
**   (b) oncebox through its public API: ob_enqueue_many up front, then an
**       ob_run_once loop with the payout module, batch_size 1, then B.
** The same N PaymentCaptured messages (seeded) feed both. Enqueueing is NOT
** part of the handling figure; it is timed on its own (1000 messages per
** transaction for both) and an end-to-end figure adds the two.
**
** The disk's limit is measured in the same run, once per round between the
** variants (tests/bench/disk_limit.c, about S seconds per loop): 4 KiB
** write+fdatasync per second, and bytes per second in 1 MiB
** write+fdatasync chunks. At batch 1 each variant's commits per second are
** set against the first; at batch B its messages per second against the
** second divided by its bytes per message.
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
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <sqlite3.h>

#include "oncebox.h"
#include "oncebox_payout.h"
#include "tests/bench/bench_common.h"
#include "tests/bench/disk_limit.h"
#include "tests/support/payment_gen.h"


/* ---- one variant, in the child -------------------------------------------- */

typedef struct result_s {
  int ok;
  int64_t n;
  double enqueue_s, handle_s, handle_cpu_s;
  int64_t enqueue_syncs, handle_syncs;
  int64_t handle_bytes;
} result_t;

static void die_ob(ob_engine_t* e, int rc, const char* what) {
  fprintf(stderr, "bench: %s: %s: %s\n", what, ob_err_name(rc), ob_errmsg(e));
  exit(1);
}

/* (a): the engine's statements (storage/queue.c, processed.c, ...), by hand:
** bc_run_raw, at synchronous=FULL. */
static void run_raw(const char* path, int64_t n, int batch, uint64_t seed,
                    result_t* res) {
  bc_raw_result_t r;
  bc_run_raw(path, n, batch, 2, seed, &r);
  res->ok = r.ok;
  res->n = r.n;
  res->enqueue_s = r.enqueue_s;
  res->handle_s = r.handle_s;
  res->handle_cpu_s = r.handle_cpu_s;
  res->enqueue_syncs = r.enqueue_syncs;
  res->handle_syncs = r.handle_syncs;
  res->handle_bytes = r.handle_bytes;
}

/* (b): oncebox through its public API. */
static void run_oncebox(const char* path, int64_t n, int batch, uint64_t seed,
                        result_t* res) {
  ob_options_t o;
  ob_engine_t* e = NULL;
  ob_stats_t st;
  ob_payout_stats_t ps;
  int64_t done = 0;
  double t0, cpu0;
  char err[256];
  int rc;

  ob_options_init(&o);
  o.db_path = path;
  o.batch_size = batch;
  if ((rc = ob_open(&e, &o, err, sizeof err)) < 0) {
    fprintf(stderr, "bench: open: %s\n", err);
    exit(1);
  }
  if ((rc = ob_register_payout(e)) < 0) die_ob(e, rc, "register");

  memset(&bc_io, 0, sizeof bc_io);
  t0 = ts_mono_s();
  if ((rc = bc_enqueue_payments(e, n, seed)) < 0) die_ob(e, rc, "enqueue");
  res->enqueue_s = ts_mono_s() - t0;
  res->enqueue_syncs = bc_io_syncs();

  memset(&bc_io, 0, sizeof bc_io);
  t0 = ts_mono_s();
  cpu0 = bc_cpu_s();
  for (;;) {
    ob_batch_result_t r;
    rc = ob_run_once(e, &r);
    if (rc < 0) die_ob(e, rc, "ob_run_once");
    if (r.claimed == 0) break;
    done += r.handled;
  }
  res->handle_s = ts_mono_s() - t0;
  res->handle_cpu_s = bc_cpu_s() - cpu0;
  res->handle_syncs = bc_io_syncs();
  res->handle_bytes = bc_io.written;
  res->n = done;

  if ((rc = ob_stats(e, &st)) < 0) die_ob(e, rc, "stats");
  if ((rc = ob_payout_stats(e, &ps)) < 0) die_ob(e, rc, "payout stats");
  res->ok = ps.payouts == n && st.outbox_unpublished == n &&
            st.queue_ready + st.queue_delayed == 0 && st.failed == 0 &&
            done == n;
  ob_close(e);
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
  /* --child VARIANT N BATCH SEED DIR FD */
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
  fd = atoi(argv[7]);
  snprintf(path, sizeof path, "%s/bench-%d.db", argv[6], v);
  memset(&res, 0, sizeof res);
  bc_shim_register();
  if (variants[v].raw) run_raw(path, n, batch, seed, &res);
  else run_oncebox(path, n, batch, seed, &res);
  if (write(fd, &res, sizeof res) != (ssize_t)sizeof res) return 1;
  return res.ok ? 0 : 3;
}

static void remove_db(const char* dir, int v) {
  char p[4200];
  snprintf(p, sizeof p, "%s/bench-%d.db", dir, v);
  bc_remove_db(p);
}

static int run_variant(int v, int64_t n, int batch, uint64_t seed,
                       const char* dir, sample_t* out) {
  struct rusage ru;
  char sv[16], sn[32], sb[16], ss[32], what[32];
  const char* args[] = {sv, sn, sb, ss, dir, NULL};
  int status, rc;

  snprintf(sv, sizeof sv, "%d", v);
  snprintf(sn, sizeof sn, "%" PRId64, n);
  snprintf(sb, sizeof sb, "%d", batch);
  snprintf(ss, sizeof ss, "%" PRIu64, seed);
  snprintf(what, sizeof what, "variant %d", v);
  memset(out, 0, sizeof *out);
  rc = bc_run_child("ob-bench-engine", args, &out->r, sizeof out->r, &ru,
                    &status, what);
  remove_db(dir, v);
  out->maxrss_kib = ru.ru_maxrss;
  if (rc == 0) return 0;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 3)
    fprintf(stderr, "bench: variant %d: wrong counts after handling\n", v);
  return -1;
}

typedef struct summary_s {
  int64_t n;
  double rate, rate_min, rate_max, e2e_rate, enq_rate, kib_per_msg;
  double syncs_per_msg, e2e_syncs_per_msg;
  double rss_mib;
  double cpu_us_per_msg;  /* user + system CPU while handling */
} summary_t;

static void summarize(sample_t* s, int reps, summary_t* out) {
  double rate[64], e2e[64], enq[64], rss[64], cpu[64];
  for (int i = 0; i < reps; i++) {
    const result_t* r = &s[i].r;
    rate[i] = (double)r->n / r->handle_s;
    e2e[i] = (double)r->n / (r->handle_s + r->enqueue_s);
    enq[i] = (double)r->n / r->enqueue_s;
    rss[i] = (double)s[i].maxrss_kib / 1024.0;
    cpu[i] = r->handle_cpu_s * 1e6 / (double)r->n;
  }
  out->n = s[0].r.n;
  out->rate = bc_median(rate, reps);
  out->rate_min = rate[0];          /* sorted by bc_median() */
  out->rate_max = rate[reps - 1];
  out->kib_per_msg =
      (double)s[0].r.handle_bytes / 1024.0 / (double)s[0].r.n;
  out->e2e_rate = bc_median(e2e, reps);
  out->enq_rate = bc_median(enq, reps);
  out->rss_mib = bc_median(rss, reps);
  out->cpu_us_per_msg = bc_median(cpu, reps);
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
          "  -d S     seconds of each disk-limit loop per round (1)\n"
          "The databases go to $TMPDIR or /tmp; use a real disk, not tmpfs.\n");
}

int main(int argc, char** argv) {
  int64_t n1 = 5000, n2 = 50000;
  int group = 100, reps = 3, c;
  uint64_t seed = 20261130;
  const char* base = getenv("TMPDIR");
  char dir[4096];
  sample_t samples[NVARIANTS][64];
  summary_t sum[NVARIANTS];
  double disk_s = 1.0, fsync_rate[64], bandwidth[64], fsync_med, bw_med;

  if (argc >= 2 && strcmp(argv[1], "--child") == 0)
    return child_main(argc, argv);
  while ((c = getopt(argc, argv, "n:g:b:r:s:d:h")) != -1) {
    switch (c) {
      case 'n': n1 = strtoll(optarg, NULL, 10); break;
      case 'g': n2 = strtoll(optarg, NULL, 10); break;
      case 'b': group = atoi(optarg); break;
      case 'r': reps = atoi(optarg); break;
      case 's': seed = strtoull(optarg, NULL, 10); break;
      case 'd': disk_s = atof(optarg); break;
      case 'h': usage(stdout); return 0;
      default: usage(stderr); return 2;
    }
  }
  if (n1 < 1 || n2 < 1 || group < 2 || group > 10000 || reps < 1 ||
      reps > 64 || !(disk_s > 0 && disk_s <= 60)) {
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
         bc_is_tmpfs(dir)
             ? " (tmpfs: fsync is free here, figures are NOT meaningful)"
             : "",
         seed, reps, reps > 1 ? "s" : "");
  fflush(stdout);

  /* Interleave the variants run by run, alternating which goes first, so
  ** a noisy neighbour hurts both sides alike. */
  for (int r = 0; r < reps; r++) {
    bc_disk_limit_t lim;
    for (int k = 0; k < NVARIANTS; k++) {
      int v = r % 2 ? (k ^ 1) : k;
      int grp = variants[v].group;
      if (run_variant(v, grp ? n2 : n1, grp ? group : 1,
                      seed, dir, &samples[v][r]) < 0) {
        rmdir(dir);
        return 1;
      }
      /* The disk between the one-per-transaction and the group runs. */
      if (k == 1) {
        if (bc_disk_limit(dir, disk_s, &lim) < 0) {
          rmdir(dir);
          return 1;
        }
        fsync_rate[r] = lim.fsyncs_per_s;
        bandwidth[r] = lim.bytes_per_s;
      }
    }
  }
  rmdir(dir);
  for (int v = 0; v < NVARIANTS; v++) summarize(samples[v], reps, &sum[v]);
  fsync_med = bc_median(fsync_rate, reps);
  bw_med = bc_median(bandwidth, reps);

  printf("\nhandling (dedup claim + payout + outbox row + ack, enqueue NOT "
         "timed)\n");
  printf("  %-34s %8s %8s %15s %9s %9s %9s %10s\n", "variant", "messages",
         "msg/s", "(min-max)", "fsync/msg", "KiB/msg", "peak RSS",
         "CPU us/msg");
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
      printf("  %-34s %8" PRId64 " %8.0f %15s %9.3f %9.2f %5.1f MiB %10.1f\n",
             k ? lb : la, x->n, x->rate, range, x->syncs_per_msg,
             x->kib_per_msg, x->rss_mib, x->cpu_us_per_msg);
    }
    printf("  %-34s %8s %8.2f %50s %10.2f\n", "    ratio (b)/(a)", "",
           b->rate / a->rate, "", b->cpu_us_per_msg / a->cpu_us_per_msg);
  }
  printf("  group-commit speedup (batch %d vs 1): raw x%.1f, oncebox x%.1f\n",
         group, sum[2].rate / sum[0].rate, sum[3].rate / sum[1].rate);

  printf("\nend to end (enqueue in %d-message transactions + handling)\n",
         BC_ENQUEUE_CHUNK);
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
  printf("\nagainst the disk (measured in the same run: %.0f 4 KiB "
         "write+fdatasync/s, %.1f MiB/s in 1 MiB write+fdatasync chunks)\n",
         fsync_med, bw_med / 1048576.0);
  printf("  %-34s %10s %10s %10s\n", "variant", "msg/s", "limit", "of limit");
  for (int v = 0; v < NVARIANTS; v++) {
    const summary_t* s = &sum[v];
    /* batch 1: one commit per message, each at least one flush; batch B:
    ** the bytes each message costs, at the disk's durable bandwidth. */
    double limit = variants[v].group
                       ? bw_med / (s->kib_per_msg * 1024.0)
                       : fsync_med;
    char l[64];
    snprintf(l, sizeof l, "%s, %s %d", variants[v].label,
             variants[v].raw ? "msg/tx" : "batch_size",
             variants[v].group ? group : 1);
    printf("  %-34s %10.0f %10.0f %10.2f\n", l, s->rate, limit,
           s->rate / limit);
  }
  printf("  limit at batch 1: commits/s = fsyncs/s; at batch %d: MiB/s / "
         "(KiB/msg)\n", group);
  printf("\nfsyncs: xSync calls through a counting VFS shim over \"unix\" "
         "(fdatasync each);\nKiB/msg: bytes through xWrite while handling "
         "(WAL frames, checkpoint writes);\npeak RSS: ru_maxrss of the "
         "variant's own process (fresh exec), enqueue included.\n");
  return 0;
}
