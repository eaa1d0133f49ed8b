/* SPDX-License-Identifier: Apache-2.0 */
/* ob-bench-latency: latency from enqueue to durable commit under a steady
** load (docs/performance.md, "Latency, from enqueue to durable commit").
**
**   ob-bench-latency [-R LIST] [-b LIST] [-t SECONDS] [-s SEED] [-o CSV]
**
** One engine attached to a libuv loop (ob_attach), the payout module
** registered, WAL and synchronous=FULL, a fresh database in $TMPDIR or /tmp
** per run. A timer on the same loop enqueues PaymentCaptured messages one
** by one (ob_enqueue: each is its own durable transaction) on a fixed
** schedule of R messages per second for T seconds; the engine wakes on each
** enqueue and handles what is ready, up to batch_size B per transaction.
**
** The latency of a message runs from its scheduled enqueue time (so a loop
** busy with a transaction delays the clock, not the measurement: no
** coordinated omission) to the moment the fdatasync of the WAL that
** committed its handling transaction returned. That moment is seen by a
** counting VFS shim (bench_common.c); which messages the transaction held
** is noted by a second consumer of PaymentCaptured that does nothing but
** note the id ("bench-latency-probe"). The probe costs one more dedup row
** per message (an index entry, no fsync); the payout work is the module's.
**
** Beside it, in the same run: the duration of each ob_enqueue call alone, a
** single durable commit. The ratio p50(enqueue -> handled) / p50(enqueue)
** says how many "commits' worth" of time a message waits end to end.
** The first 10% of each run are warm-up and not counted. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>
#include <uv.h>

#include "oncebox.h"
#include "oncebox_payout.h"
#include "tests/bench/bench_common.h"
#include "tests/support/payment_gen.h"

#define MAX_LIST 8
#define PROBE_CONSUMER "bench-latency-probe"

typedef struct run_s {
  uv_loop_t* loop;
  ob_engine_t* e;
  uv_timer_t timer;
  ts_gen_t gen;
  int64_t total, sent, committed, handling_commits;
  double rate, t_start;
  ts_msg_t* msgs;
  double* sched;      /* scheduled enqueue time, monotonic seconds */
  double* enq_s;      /* duration of the ob_enqueue call */
  double* lat;        /* sched -> durable commit of its handling; -1 */
  /* id -> index: open addressing over the message ids. */
  int64_t* slots;
  size_t nslots;
  int64_t* pending;   /* handled in the open transaction */
  int64_t npending;
  int failed;
} run_t;

static run_t* g_run;

static uint64_t hash_id(const char* s) {
  uint64_t h = 1469598103934665603ULL;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
  return h;
}

static void index_put(run_t* r, int64_t i) {
  size_t k = hash_id(r->msgs[i].id) & (r->nslots - 1);
  while (r->slots[k] >= 0) k = (k + 1) & (r->nslots - 1);
  r->slots[k] = i;
}

static int64_t index_get(const run_t* r, const char* id) {
  size_t k = hash_id(id) & (r->nslots - 1);
  while (r->slots[k] >= 0) {
    if (strcmp(r->msgs[r->slots[k]].id, id) == 0) return r->slots[k];
    k = (k + 1) & (r->nslots - 1);
  }
  return -1;
}

static int probe(ob_tx_t* tx, const ob_message_t* msg, void* arg) {
  run_t* r = arg;
  int64_t i = index_get(r, msg->id);
  (void)tx;
  if (i < 0) {
    fprintf(stderr, "bench: unknown message %s\n", msg->id);
    r->failed = 1;
  } else {
    r->pending[r->npending++] = i;
  }
  return OB_DONE;
}

static void on_wal_sync(void) {
  run_t* r = g_run;
  double t;
  if (r == NULL || r->npending == 0) return;
  t = bc_mono_s();
  for (int64_t k = 0; k < r->npending; k++) {
    int64_t i = r->pending[k];
    if (r->lat[i] < 0) {
      r->lat[i] = t - r->sched[i];
      r->committed++;
    }
  }
  r->npending = 0;
  r->handling_commits++;
}

static void detached(ob_engine_t* e, void* arg) {
  run_t* r = arg;
  (void)e;
  uv_close((uv_handle_t*)&r->timer, NULL);
}

static void tick(uv_timer_t* t) {
  run_t* r = t->data;
  double now = bc_mono_s(), next;
  if (r->failed) {
    ob_detach(r->e, detached, r);
    return;
  }
  while (r->sent < r->total && r->sched[r->sent] <= now) {
    ob_envelope_t env;
    int64_t i = r->sent;
    double t0;
    memset(&env, 0, sizeof env);
    env.id = r->msgs[i].id;
    env.type = OB_PAYOUT_MESSAGE_TYPE;
    env.body = r->msgs[i].body;
    env.body_len = r->msgs[i].body_len;
    t0 = bc_mono_s();
    if (ob_enqueue(r->e, &env) < 0) {
      fprintf(stderr, "bench: enqueue: %s\n", ob_errmsg(r->e));
      r->failed = 1;
      ob_detach(r->e, detached, r);
      return;
    }
    r->enq_s[i] = bc_mono_s() - t0;
    r->sent++;
    now = bc_mono_s();
  }
  if (r->sent == r->total) {
    if (r->committed == r->total) {
      ob_detach(r->e, detached, r);
      return;
    }
    /* Everything is enqueued: look again shortly for the last commits. */
    if (now - r->sched[r->total - 1] > 30) {
      fprintf(stderr, "bench: %" PRId64 " of %" PRId64 " never committed\n",
              r->total - r->committed, r->total);
      r->failed = 1;
      ob_detach(r->e, detached, r);
      return;
    }
    uv_timer_start(&r->timer, tick, 5, 0);
    return;
  }
  next = r->sched[r->sent];
  uv_timer_start(&r->timer, tick,
                 next > now ? (uint64_t)ceil((next - now) * 1000.0) : 0, 0);
}

typedef struct summary_s {
  int ok;
  double rate;
  int batch;
  int64_t counted, commits_total;
  double msgs_per_commit;
  double p50, p90, p99, max, enq_p50, enq_p99;
} summary_t;

static int one_run(const char* dir, double rate, int batch, double seconds,
                   uint64_t seed, summary_t* out) {
  ob_options_t o;
  run_t r;
  uv_loop_t loop;
  char path[4200], err[256];
  int rc;
  int64_t warm;
  double* lat;
  double* enq;
  int64_t nl = 0;

  memset(&r, 0, sizeof r);
  memset(out, 0, sizeof *out);
  r.total = (int64_t)(rate * seconds);
  if (r.total < 20) r.total = 20;
  r.rate = rate;
  r.msgs = calloc((size_t)r.total, sizeof *r.msgs);
  r.sched = calloc((size_t)r.total, sizeof *r.sched);
  r.enq_s = calloc((size_t)r.total, sizeof *r.enq_s);
  r.lat = calloc((size_t)r.total, sizeof *r.lat);
  r.pending = calloc((size_t)r.total, sizeof *r.pending);
  for (r.nslots = 1; r.nslots < (size_t)r.total * 2; r.nslots <<= 1) {
  }
  r.slots = malloc(r.nslots * sizeof *r.slots);
  lat = calloc((size_t)r.total, sizeof *lat);
  enq = calloc((size_t)r.total, sizeof *enq);
  if (!r.msgs || !r.sched || !r.enq_s || !r.lat || !r.pending || !r.slots ||
      !lat || !enq)
    exit(1);
  memset(r.slots, 0xff, r.nslots * sizeof *r.slots);
  ts_gen_init(&r.gen, seed);
  for (int64_t i = 0; i < r.total; i++) {
    ts_gen_next(&r.gen, &r.msgs[i]);
    r.lat[i] = -1;
    index_put(&r, i);
  }

  snprintf(path, sizeof path, "%s/latency.db", dir);
  bc_remove_db(path);
  ob_options_init(&o);
  o.db_path = path;
  o.batch_size = batch;
  if ((rc = ob_open(&r.e, &o, err, sizeof err)) < 0) {
    fprintf(stderr, "bench: open: %s\n", err);
    return -1;
  }
  if (ob_register_payout(r.e) < 0 ||
      ob_register(r.e, OB_PAYOUT_MESSAGE_TYPE, PROBE_CONSUMER, probe, &r) < 0)
    return -1;
  uv_loop_init(&loop);
  r.loop = &loop;
  uv_timer_init(&loop, &r.timer);
  r.timer.data = &r;
  g_run = &r;
  bc_on_wal_sync = on_wal_sync;
  if ((rc = ob_attach(r.e, &loop)) < 0) {
    fprintf(stderr, "bench: attach: %s\n", ob_err_name(rc));
    return -1;
  }
  /* Start the schedule after the engine's first (empty) turn. */
  r.t_start = bc_mono_s() + 0.2;
  for (int64_t i = 0; i < r.total; i++)
    r.sched[i] = r.t_start + (double)i / rate;
  uv_timer_start(&r.timer, tick, 200, 0);
  uv_run(&loop, UV_RUN_DEFAULT);
  bc_on_wal_sync = NULL;
  g_run = NULL;
  ob_close(r.e);
  uv_loop_close(&loop);
  bc_remove_db(path);

  warm = r.total / 10;
  for (int64_t i = warm; i < r.total; i++) {
    if (r.lat[i] < 0) continue;
    lat[nl] = r.lat[i] * 1000.0;
    enq[nl] = r.enq_s[i] * 1000.0;
    nl++;
  }
  out->ok = !r.failed && r.committed == r.total;
  out->rate = rate;
  out->batch = batch;
  out->counted = nl;
  out->commits_total = r.handling_commits;
  out->msgs_per_commit =
      r.handling_commits ? (double)r.committed / (double)r.handling_commits : 0;
  out->p50 = bc_median(lat, (int)nl);  /* sorts */
  out->p90 = bc_percentile(lat, (int)nl, 90);
  out->p99 = bc_percentile(lat, (int)nl, 99);
  out->max = nl ? lat[nl - 1] : 0;
  out->enq_p50 = bc_median(enq, (int)nl);
  out->enq_p99 = bc_percentile(enq, (int)nl, 99);
  free(r.msgs);
  free(r.sched);
  free(r.enq_s);
  free(r.lat);
  free(r.pending);
  free(r.slots);
  free(lat);
  free(enq);
  return out->ok ? 0 : -1;
}

static int parse_list(const char* s, double* out, int max) {
  int n = 0;
  char* end;
  while (*s && n < max) {
    double v = strtod(s, &end);
    if (end == s || v <= 0) return -1;
    out[n++] = v;
    if (*end && *end != ',') return -1;
    s = *end == ',' ? end + 1 : end;
  }
  return n;
}

static void usage(FILE* f) {
  fprintf(f,
          "usage: ob-bench-latency [-R LIST] [-b LIST] [-t SECONDS] [-s SEED] "
          "[-o CSV]\n"
          "  -R LIST  enqueue rates, messages per second (50,200)\n"
          "  -b LIST  batch sizes (1,100)\n"
          "  -t S     seconds per run (5)\n"
          "  -s SEED  message generator seed (20261130)\n"
          "  -o CSV   write one line per run\n");
}

int main(int argc, char** argv) {
  double rates[MAX_LIST] = {50, 200}, bl[MAX_LIST] = {1, 100}, secs = 5;
  int nr = 2, nb = 2, c, failed = 0;
  uint64_t seed = 20261130;
  const char *csv = NULL, *base = getenv("TMPDIR");
  char dir[4096];
  summary_t s[MAX_LIST][MAX_LIST];
  FILE* out = NULL;

  while ((c = getopt(argc, argv, "R:b:t:s:o:h")) != -1) {
    switch (c) {
      case 'R':
        if ((nr = parse_list(optarg, rates, MAX_LIST)) < 1) goto bad;
        break;
      case 'b':
        if ((nb = parse_list(optarg, bl, MAX_LIST)) < 1) goto bad;
        break;
      case 't': secs = atof(optarg); break;
      case 's': seed = strtoull(optarg, NULL, 10); break;
      case 'o': csv = optarg; break;
      case 'h': usage(stdout); return 0;
      default: goto bad;
    }
  }
  if (secs <= 0 || secs > 600) goto bad;
  snprintf(dir, sizeof dir, "%s/ob-bench-latency-XXXXXX",
           base && *base ? base : "/tmp");
  if (mkdtemp(dir) == NULL) {
    perror("mkdtemp");
    return 1;
  }
  bc_shim_register();
  printf("oncebox %s latency benchmark, SQLite %s\n", ob_version(),
         sqlite3_libversion());
  printf("database in %s%s; WAL, synchronous=FULL; %.0f s per run; seed %"
         PRIu64 "\n", dir,
         bc_is_tmpfs(dir) ? " (tmpfs: fsync is free here, figures are NOT "
                            "meaningful)" : "",
         secs, seed);
  fflush(stdout);
  for (int bi = 0; bi < nb && !failed; bi++)
    for (int ri = 0; ri < nr && !failed; ri++) {
      failed = one_run(dir, rates[ri], (int)bl[bi], secs, seed, &s[bi][ri]) < 0;
      if (failed) fprintf(stderr, "bench: run rate %.0f batch %d failed\n",
                          rates[ri], (int)bl[bi]);
    }
  rmdir(dir);
  if (failed) return 1;
  if (csv && (out = fopen(csv, "w")) == NULL) {
    perror(csv);
    return 1;
  }
  if (out)
    fprintf(out, "rate,batch,messages,msgs_per_commit,p50_ms,p90_ms,p99_ms,"
                 "max_ms,enqueue_p50_ms,enqueue_p99_ms,p50_over_enqueue_p50\n");
  printf("\nenqueue -> durable commit of the handling, steady load "
         "(warm-up excluded)\n");
  printf("  %7s %6s %7s %8s %8s %8s %8s %8s %9s %9s %8s\n", "msg/s", "batch",
         "counted", "msg/cmt", "p50 ms", "p90 ms", "p99 ms", "max ms",
         "enq p50", "enq p99", "p50/enq");
  for (int bi = 0; bi < nb; bi++)
    for (int ri = 0; ri < nr; ri++) {
      const summary_t* x = &s[bi][ri];
      printf("  %7.0f %6d %7" PRId64 " %8.2f %8.2f %8.2f %8.2f %8.2f %9.2f "
             "%9.2f %8.2f\n", x->rate, x->batch, x->counted,
             x->msgs_per_commit, x->p50, x->p90, x->p99, x->max, x->enq_p50,
             x->enq_p99, x->p50 / x->enq_p50);
      if (out)
        fprintf(out, "%.0f,%d,%" PRId64 ",%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,"
                     "%.2f\n", x->rate, x->batch, x->counted,
                x->msgs_per_commit, x->p50, x->p90, x->p99, x->max,
                x->enq_p50, x->enq_p99, x->p50 / x->enq_p50);
    }
  if (out) fclose(out);
  printf("\nlatency: scheduled enqueue time -> the WAL fdatasync of the "
         "handling commit returned;\nenq: one ob_enqueue call (its own "
         "durable commit) in the same run; p50/enq: the\nratio of the two "
         "medians; msg/cmt: messages per handling commit.\n");
  return 0;
bad:
  usage(stderr);
  return 2;
}
