/* SPDX-License-Identifier: Apache-2.0 */
/* ob-bench-fence: the handling of a charge behind the fence, end to end in
** one process: ChargeOrder messages enqueued up front, then claimed
** (ob_run_once, batch B), performed against an in-process provider that
** answers 200 (ob_effects_perform, up to B per round), and settled with
** the charge row, the event and the ack. A figure for the cost of what the
** fence keeps per charge (issue 35, "Cost": the offline limits' check and
** running totals), set side by side with the same program built on an
** earlier tree: it uses nothing newer than the fence's API, and configures
** offline limits only where the header has them.
**
**   ob-bench-fence [-n N] [-b B] [-r R] [-u]
**
** -u: no offline limits configured (where the header has them), so the
** claim's check stops before reading anything.
**
** A fresh database in $TMPDIR or /tmp per round, WAL, synchronous=FULL.
** Prints, per round, charges per second, and per charge the CPU
** microseconds, the bytes written to the WAL and the fsyncs (the counting
** VFS shim of bench_common.c). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "oncebox.h"
#include "oncebox_charge.h"
#include "tests/bench/bench_common.h"
#include "tests/support/testsupport.h"

static int charges;
static int unlimited;

static int perform(void* arg, const ob_effect_call_t* c, ob_effect_reply_t* r) {
  static char body[64];
  (void)arg;
  (void)c;
  snprintf(body, sizeof body, "{\"id\":\"ch_%d\"}", ++charges);
  r->status = 200;
  r->sent = 1;
  r->body = body;
  r->body_len = strlen(body);
  return 0;
}

static void die(ob_engine_t* e, int rc, const char* what) {
  fprintf(stderr, "bench: %s: %s: %s\n", what, ob_err_name(rc),
          e ? ob_errmsg(e) : "");
  exit(1);
}

static void round_run(int n, int batch, double* per_s, double* cpu_us,
                      double* wal_bytes, double* syncs) {
  char* dir = ts_mkdtemp("bench-fence");
  char path[512], err[256];
  ob_options_t o;
  ob_engine_t* e;
  ob_provider_options_t po;
  ob_envelope_t* env = calloc((size_t)n, sizeof *env);
  char (*ids)[OB_UUID_BUFLEN] = calloc((size_t)n, OB_UUID_BUFLEN);
  char (*bodies)[128] = calloc((size_t)n, 128);
  double t0, c0;
  int64_t w0, s0;
  int rc, done = 0;
#ifdef OB_OFFLINE_NO_LIMIT
  ob_offline_limit_t lim;
#endif

  snprintf(path, sizeof path, "%s/b.db", dir);
  ob_options_init(&o);
  o.db_path = path;
  o.batch_size = batch;
  if ((rc = ob_open(&e, &o, err, sizeof err)) != 0) die(NULL, rc, err);
  ob_provider_options_init(&po);
  po.name = OB_CHARGE_PROVIDER;
#ifdef OB_OFFLINE_NO_LIMIT
  /* Limits in force, so the claim's check runs (online: it reads the
  ** link and stops there). */
  memset(&lim, 0, sizeof lim);
  lim.currency = "EUR";
  lim.max_amount = 25000;
  lim.max_total = 1000000;
  lim.max_count = 500;
  po.offline_limits = unlimited ? NULL : &lim;
  po.noffline_limits = unlimited ? 0 : 1;
#endif
  if ((rc = ob_provider_register(e, &po)) != 0) die(e, rc, "provider");
  if ((rc = ob_register_charge_order(e)) != 0) die(e, rc, "register");
  for (int i = 0; i < n; i++) {
    snprintf(ids[i], OB_UUID_BUFLEN, "0190b6d8-3ae7-7ca2-a653-%012d", i + 1);
    snprintf(bodies[i], 128, "{\"orderId\":\"o-%d\",\"amountInMinorUnits\":"
             "%d,\"currency\":\"EUR\"}", i + 1, 100 + i % 1000);
    env[i].type = OB_CHARGE_MESSAGE_TYPE;
    env[i].id = ids[i];
    env[i].body = bodies[i];
    env[i].body_len = strlen(bodies[i]);
  }
  for (int i = 0; i < n; i += 1000) {
    static int results[1000];
    int k = n - i < 1000 ? n - i : 1000;
    if ((rc = ob_enqueue_many(e, env + i, (size_t)k, results)) != k)
      die(e, rc < 0 ? rc : OB_EINVAL, "enqueue");
  }
  charges = 0;
  w0 = bc_io.wal_written;
  s0 = bc_io_syncs();
  t0 = bc_mono_s();
  c0 = bc_cpu_s();
  while (done < n) {
    ob_batch_result_t r;
    size_t settled = 0;
    if ((rc = ob_run_once(e, &r)) != 0) die(e, rc, "run");
    do {
      if ((rc = ob_effects_perform(e, perform, NULL, (size_t)batch,
                                   &settled)) != 0)
        die(e, rc, "perform");
      done += (int)settled;
    } while (settled > 0);
    if (r.claimed == 0 && settled == 0 && done < n) {
      fprintf(stderr, "bench: stuck at %d of %d\n", done, n);
      exit(1);
    }
  }
  *per_s = n / (bc_mono_s() - t0);
  *cpu_us = (bc_cpu_s() - c0) * 1e6 / n;
  *wal_bytes = (double)(bc_io.wal_written - w0) / n;
  *syncs = (double)(bc_io_syncs() - s0) / n;
  if (charges != n) {
    fprintf(stderr, "bench: %d provider charges for %d orders\n", charges, n);
    exit(1);
  }
  ob_close(e);
  ts_rmdir(dir);
  free(env);
  free(ids);
  free(bodies);
}

int main(int argc, char** argv) {
  int n = 2000, batch = 1, rounds = 3, c;
  while ((c = getopt(argc, argv, "n:b:r:u")) != -1) {
    switch (c) {
      case 'n': n = atoi(optarg); break;
      case 'b': batch = atoi(optarg); break;
      case 'r': rounds = atoi(optarg); break;
      case 'u': unlimited = 1; break;
      default:
        fprintf(stderr, "usage: ob-bench-fence [-n N] [-b B] [-r R] [-u]\n");
        return 2;
    }
  }
  if (n < 1 || batch < 1 || batch > 1000 || rounds < 1) return 2;
  bc_shim_register();  /* counts the WAL's bytes and the fsyncs */
  for (int r = 0; r < rounds; r++) {
    double per_s, cpu_us, wal, syncs;
    round_run(n, batch, &per_s, &cpu_us, &wal, &syncs);
    printf("batch %d round %d: %d charges, %.0f charges/s, %.1f us CPU, "
           "%.0f WAL bytes, %.2f fsyncs per charge\n", batch, r + 1, n,
           per_s, cpu_us, wal, syncs);
    fflush(stdout);
  }
  return 0;
}
