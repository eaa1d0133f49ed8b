/* SPDX-License-Identifier: Apache-2.0 */
/* ob-bench-drain: `oncebox outbox drain --until-empty` against `oncebox run
** --until-idle` on the same outbox backlog (issue 13, item 4: weeks of
** backlog on a terminal that comes back online).
**
**   ob-bench-drain [-n N] [-r R] [-t S] [-o] [-x ONCEBOX] [-k]
**
** The backlog: a database made by ob_open (the schema), then N outbox rows
** written in one transaction with SQLite directly (a quarter each
** MerchantPayoutCreated, OrderCharged, ReceiptIssued, StockMoved; four rows
** per aggregate, one millisecond apart), and N processed_message rows, as
** the handling that emitted them would have left. Every run starts from a
** copy of that file and gets its own fresh queue on fauxqs behind the
** SigV4-verifying TLS terminator of the integration tests
** (tests/integration/sqs/sqs_server.mjs, started here on 127.0.0.1).
**
** Both variants are the real program in its own process, with the same
** environment (AWS_* pointing at the server, --outbox-queue-url):
**   run:    oncebox run --until-idle   (handling + the relay)
**   drain:  oncebox outbox drain --until-empty   (the relay only)
** A run's rate is the rows it marked published / its wall time from fork to
** exit (opening the database and the SQS client included). A run that is
** not done after S seconds is stopped with SIGTERM and its rate is what it
** published by then (marked "stopped"), so a slow variant does not take an
** hour on a big backlog. A complete run must leave every row published and
** the queue holding N messages. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "oncebox.h"
#include "tests/bench/bench_common.h"
#include "tests/integration/sqs/sqs_test_util.h"
#include "tests/support/payment_gen.h"
#include "tests/support/testsupport.h"

#ifndef OB_BENCH_SOURCE_DIR
#define OB_BENCH_SOURCE_DIR "."
#endif
#ifndef OB_BENCH_BINARY_DIR
#define OB_BENCH_BINARY_DIR "."
#endif

#define MAX_REPS 16

enum { V_RUN, V_DRAIN, NV };
static const char* const vname[NV] = {"run --until-idle",
                                      "outbox drain --until-empty"};

/* ---- the backlog ------------------------------------------------------------ */

static int exec_sql(sqlite3* db, const char* sql) {
  char* err = NULL;
  if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) {
    fprintf(stderr, "bench: %s: %s\n", sql, err ? err : sqlite3_errmsg(db));
    sqlite3_free(err);
    return -1;
  }
  return 0;
}

static int make_backlog(const char* path, int64_t n) {
  static const char* const types[4] = {"MerchantPayoutCreated", "OrderCharged",
                                       "ReceiptIssued", "StockMoved"};
  ob_options_t o;
  ob_engine_t* e = NULL;
  char err[256];
  sqlite3* db;
  sqlite3_stmt *ins, *proc;
  int64_t t0 = 1767225600000;  /* 2026-01-01, "weeks ago" */
  int rc;

  ob_options_init(&o);
  o.db_path = path;
  if (ob_open(&e, &o, err, sizeof err) < 0) {
    fprintf(stderr, "bench: open %s: %s\n", path, err);
    return -1;
  }
  ob_close(e);
  if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK)
    return -1;
  if (exec_sql(db, "BEGIN") != 0) return -1;
  if (sqlite3_prepare_v2(db,
                         "INSERT INTO outbox_event(id, causation_id, event_type,"
                         " aggregate_id, payload, created_at, next_attempt_at)"
                         " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)",
                         -1, &ins, NULL) != SQLITE_OK ||
      sqlite3_prepare_v2(db,
                         "INSERT INTO processed_message(consumer_name,"
                         " message_id, source_ref, processed_at)"
                         " VALUES ('bench', ?1, 0, ?2)",
                         -1, &proc, NULL) != SQLITE_OK) {
    fprintf(stderr, "bench: prepare: %s\n", sqlite3_errmsg(db));
    return -1;
  }
  for (int64_t i = 0; i < n; i++) {
    char id[48], cause[48], agg[48], payload[320];
    int64_t at = t0 + i;
    snprintf(id, sizeof id, "0190b6d8-3ae7-7ca2-a653-%012" PRId64, i);
    snprintf(cause, sizeof cause, "0190b6d8-3ae7-7ca2-b000-%012" PRId64, i);
    snprintf(agg, sizeof agg, "5c4080b1-b5d2-4e91-8de8-%012" PRId64, i / 4);
    snprintf(payload, sizeof payload,
             "{\"orderId\":\"%s\",\"merchantId\":\"3727331a-b533-4c6e-a0f8-"
             "48532237307b\",\"amountInMinorUnits\":%" PRId64 ",\"currency\":"
             "\"EUR\",\"seq\":%" PRId64 "}", agg, 100 + i % 9000, i);
    sqlite3_bind_text(ins, 1, id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(ins, 2, cause, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(ins, 3, types[i % 4], -1, SQLITE_STATIC);
    sqlite3_bind_text(ins, 4, agg, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(ins, 5, payload, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(ins, 6, at);
    sqlite3_bind_text(proc, 1, cause, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(proc, 2, at);
    if (sqlite3_step(ins) != SQLITE_DONE || sqlite3_step(proc) != SQLITE_DONE) {
      fprintf(stderr, "bench: insert: %s\n", sqlite3_errmsg(db));
      return -1;
    }
    sqlite3_reset(ins);
    sqlite3_reset(proc);
  }
  sqlite3_finalize(ins);
  sqlite3_finalize(proc);
  rc = exec_sql(db, "COMMIT");
  /* One file, no WAL: copies of it start identical. */
  if (rc == 0) rc = exec_sql(db, "PRAGMA wal_checkpoint(TRUNCATE)");
  sqlite3_close(db);
  return rc;
}

static int64_t count_published(const char* path) {
  sqlite3* db;
  sqlite3_stmt* st;
  int64_t v = -1;
  if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
    return -1;
  if (sqlite3_prepare_v2(db, "SELECT count(*) FROM outbox_event WHERE"
                             " published_at IS NOT NULL", -1, &st, NULL) ==
          SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW)
    v = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
  return v;
}


/* ---- one run ------------------------------------------------------------------ */

typedef struct sample_s {
  double seconds;
  int64_t published;
  int stopped;   /* hit the time cap */
  int exit_code;
} sample_t;

static int run_variant(const char* ob, int v, const char* db,
                       const char* queue_url, int ordered, double cap_s,
                       const char* log_path, sample_t* out) {
  const char* argv[12];
  int k = 0, status = 0;
  double t0, now;
  pid_t pid;

  argv[k++] = ob;
  argv[k++] = "--db";
  argv[k++] = db;
  argv[k++] = "--log-level";
  argv[k++] = "warn";
  if (v == V_RUN) {
    argv[k++] = "run";
    argv[k++] = "--until-idle";
  } else {
    argv[k++] = "outbox";
    argv[k++] = "drain";
    argv[k++] = "--until-empty";
  }
  argv[k++] = "--outbox-queue-url";
  argv[k++] = queue_url;
  if (ordered) argv[k++] = "--ordered";
  argv[k] = NULL;

  memset(out, 0, sizeof *out);
  fflush(stdout);
  fflush(stderr);
  t0 = ts_mono_s();
  pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    FILE* f = freopen(log_path, "a", stderr);
    (void)f;
    if (freopen("/dev/null", "w", stdout) == NULL) _exit(126);
    execv(ob, (char* const*)argv);
    _exit(127);  /* never exit(): the parent's atexit handlers stop the server */
  }
  for (;;) {
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) return -1;
    now = ts_mono_s();
    if (!out->stopped && now - t0 >= cap_s) {
      out->stopped = 1;
      kill(pid, SIGTERM);
    }
    usleep(2000);
  }
  out->seconds = ts_mono_s() - t0;
  out->exit_code = WIFEXITED(status) ? WEXITSTATUS(status)
                                     : 128 + WTERMSIG(status);
  out->published = count_published(db);
  return out->published < 0 ? -1 : 0;
}

static long long queue_depth(const sq_server_t* srv, const char* queue_url) {
  static const char* const names[] = {"ApproximateNumberOfMessages"};
  uv_loop_t loop;
  sq_clock_t clock;
  ob__sqs_client_config_t cfg;
  ob__sqs_client_t* c = NULL;
  ob__sqs_req_t req;
  sq_done_t done = {0, 0};
  char err[256];
  long long v = -1;

  uv_loop_init(&loop);
  sq_clock_init(&clock, 0, -1);
  sq_client_config(srv, &cfg, SQ_SECRET, &clock.clock);
  if (ob__sqs_client_open(&c, &loop, &cfg, err, sizeof err) != 0) {
    uv_loop_close(&loop);
    return -1;
  }
  memset(&req, 0, sizeof req);
  req.data = &done;
  if (ob__sqs_get_queue_attributes(c, &req, queue_url, names, 1, sq_cb) == 0 &&
      sq_wait(&loop, &req) == 0) {
    const char* s = ob__sqs_attr_get(&req.attrs, "ApproximateNumberOfMessages");
    if (s) v = atoll(s);
  }
  ob__sqs_req_cleanup(&req);
  ob__sqs_client_close(c, NULL, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  uv_loop_close(&loop);
  return v;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static double median(double* v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void usage(FILE* f) {
  fprintf(f,
          "usage: ob-bench-drain [-n N] [-r R] [-t S] [-o] [-x ONCEBOX] [-k]\n"
          "  -n N     outbox events in the backlog (100000; -n 20000 for a "
          "quick try)\n"
          "  -r R     runs of each variant, medians reported (1, max %d)\n"
          "  -t S     stop a run after S seconds, rate from what it published "
          "(60)\n"
          "  -o       --ordered (per-aggregate ordering) for both variants\n"
          "  -x PATH  the oncebox program (" OB_BENCH_BINARY_DIR "/oncebox)\n"
          "  -k       keep the temporary directory (the programs' logs)\n"
          "Needs node >= 20 and tests/interop/node_modules (npm ci there).\n",
          MAX_REPS);
}

int main(int argc, char** argv) {
  int64_t n = 100000;
  int reps = 1, ordered = 0, keep = 0, failed = 0, c;
  double cap_s = 60;
  const char* ob = OB_BENCH_BINARY_DIR "/oncebox";
  const char* why;
  sq_server_t srv;
  sample_t samples[NV][MAX_REPS];
  char *dir, *pristine, *run_db, *log_path;
  struct stat sb;
  double t0;

  while ((c = getopt(argc, argv, "n:r:t:ox:kh")) != -1) {
    switch (c) {
      case 'n': n = strtoll(optarg, NULL, 10); break;
      case 'r': reps = atoi(optarg); break;
      case 't': cap_s = strtod(optarg, NULL); break;
      case 'o': ordered = 1; break;
      case 'x': ob = optarg; break;
      case 'k': keep = 1; break;
      case 'h': usage(stdout); return 0;
      default: usage(stderr); return 2;
    }
  }
  if (n < 10 || reps < 1 || reps > MAX_REPS || cap_s < 1) {
    usage(stderr);
    return 2;
  }
  if (stat(ob, &sb) != 0) {
    fprintf(stderr, "ob-bench-drain: %s: %s (build the oncebox target, or "
            "-x PATH)\n", ob, strerror(errno));
    return 1;
  }
  setenv("OB_SOURCE_DIR", OB_BENCH_SOURCE_DIR, 0);
  if ((why = sq_skip_reason()) != NULL) {
    fprintf(stderr, "ob-bench-drain: %s\n", why);
    return 1;
  }

  dir = ts_mkdtemp("bench-drain");
  pristine = ts_path(dir, "backlog.db");
  run_db = ts_path(dir, "run.db");
  log_path = ts_path(dir, "programs.log");
  printf("oncebox %s drain benchmark, SQLite %s; %s\n", ob_version(),
         sqlite3_libversion(), ob);
  printf("backlog: %" PRId64 " outbox events (4 types, 4 per aggregate) and "
         "%" PRId64 " processed messages;\n%d run%s of each variant, order "
         "rotates; runs stopped after %.0f s; %s\n", n, n, reps,
         reps > 1 ? "s" : "", cap_s, ordered ? "--ordered" : "unordered");
  fflush(stdout);
  t0 = ts_mono_s();
  if (make_backlog(pristine, n) != 0) {
    ts_rmdir(dir);
    return 1;
  }
  printf("backlog written in %.1f s (%s)\n", ts_mono_s() - t0, dir);
  if (sq_server_start(&srv, "bench-drain-srv", NULL) != 0) {
    ts_rmdir(dir);
    return 1;
  }
  bc_point_aws_at(srv.port, srv.ca_file, SQ_AKID, SQ_SECRET, SQ_REGION);

  for (int r = 0; r < reps && !failed; r++) {
    for (int k = 0; k < NV && !failed; k++) {
      int v = (k + r) % NV;  /* rotate who goes first */
      sample_t* s = &samples[v][r];
      char name[64];
      char* q;
      long long depth;
      snprintf(name, sizeof name, "bench-drain-%d-%d", v, r);
      q = sq_create_queue(&srv, name, NULL);
      bc_remove_db(run_db);
      if (q == NULL || bc_copy_file(pristine, run_db) != 0 ||
          run_variant(ob, v, run_db, q, ordered, cap_s, log_path, s) != 0) {
        fprintf(stderr, "bench: %s could not run\n", vname[v]);
        free(q);
        failed = 1;
        break;
      }
      depth = queue_depth(&srv, q);
      printf("run %d: %-28s %7" PRId64 " published in %6.1f s: %7.0f events/s"
             "%s (exit %d, queue holds %lld)\n", r + 1, vname[v], s->published,
             s->seconds, (double)s->published / s->seconds,
             s->stopped ? ", STOPPED at the cap" : "", s->exit_code, depth);
      fflush(stdout);
      if (!s->stopped &&
          (s->exit_code != 0 || s->published != n || depth != n)) {
        fprintf(stderr, "bench: %s finished without publishing everything "
                "(exit %d, %" PRId64 " of %" PRId64 " marked, %lld in the "
                "queue); see %s\n", vname[v], s->exit_code, s->published, n,
                depth, log_path);
        failed = 1;
        keep = 1;
      } else if (s->stopped && depth < s->published) {
        fprintf(stderr, "bench: %s marked %" PRId64 " published but the "
                "queue holds %lld\n", vname[v], s->published, depth);
        failed = 1;
      }
      free(q);
      bc_remove_db(run_db);
    }
  }
  sq_server_stop(&srv);
  if (!failed) {
    double rate[NV], tmp[MAX_REPS];
    int stopped[NV] = {0, 0};
    for (int v = 0; v < NV; v++) {
      for (int r = 0; r < reps; r++) {
        tmp[r] = (double)samples[v][r].published / samples[v][r].seconds;
        stopped[v] |= samples[v][r].stopped;
      }
      rate[v] = median(tmp, reps);
    }
    printf("\noutbox backlog of %" PRId64 " events to fauxqs over TLS "
           "(SendMessageBatch of 10, one batch in flight)\n", n);
    printf("  %-34s %10s\n", "variant", "events/s");
    for (int v = 0; v < NV; v++)
      printf("  oncebox %-26s %10.0f%s\n", vname[v], rate[v],
             stopped[v] ? "  (stopped at the cap: partial)" : "");
    printf("  ratio drain / run                  %10.2f\n",
           rate[V_DRAIN] / rate[V_RUN]);
    printf("\nevents/s: rows marked published / wall time of the process "
           "(fork to exit,\nopening the database and the SQS client "
           "included). %ld cores, shared with\nthe server.\n",
           sysconf(_SC_NPROCESSORS_ONLN));
  }
  if (keep) printf("kept %s\n", dir);
  else ts_rmdir(dir);
  free(pristine);
  free(run_db);
  free(log_path);
  return failed ? 1 : 0;
}
