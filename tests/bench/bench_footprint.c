/* SPDX-License-Identifier: Apache-2.0 */
/* ob-bench-footprint: what the oncebox program costs a terminal
** (docs/performance.md, "Footprint" and "Cost per message").
**
**   ob-bench-footprint [-x ONCEBOX] [-n N] [-f N] [-b B] [-i SECONDS]
**                      [-k RUNS] [-s SEED] [-o CSV]
**
** Everything runs the real program (build/oncebox) in its own process:
**   size      the binary and a stripped copy (strip -o), and the shared
**             libraries it loads;
**   fsyncs    `oncebox run --until-idle --batch B` (B = 1, 100) over a fresh
**             database holding M queued messages, under strace -f -c -e
**             trace=fsync,fdatasync, then the same run untraced for the
**             kernel's write_bytes of the process (ru_oublock x 512, from
**             wait4); a run over M2 = 2 M1 messages minus a run over M1, so
**             start-up, enqueue and close cancel out; per committed batch
**             and per message;
**   busy      `oncebox run --until-idle --batch B --outbox-queue-url URL` on
**             a database holding N enqueued PaymentCaptured messages: it
**             handles them and publishes the N outbox events to SQS (fauxqs
**             behind the TLS terminator of the integration tests, started
**             here, on 127.0.0.1). RSS: peak = ru_maxrss (wait4), steady =
**             the median of VmRSS sampled every 10 ms over the middle half
**             of the run. Requests per event: the SQS requests the server
**             answered during the run, over N;
**   idle      two `oncebox run` processes left alone for a quiet window
**             (default 60 s) after a 3 s settling time: one on an empty
**             database, one with the relay on (online, nothing to publish).
**             CPU = utime + stime of every thread (/proc/PID/task/ * /stat),
**             wake-ups = voluntary + involuntary context switches of every
**             thread (each return from epoll_wait is one), SQS requests;
**   start-up  `oncebox stats` on the busy run's database and on an empty
**             one, against `sqlite3 DB "SELECT count(*) FROM queue"` on
**             the same two (the floor of opening the database at all), K
**             runs each, interleaved, medians and their ratios. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "oncebox.h"
#include "tests/bench/bench_common.h"
#include "tests/integration/sqs/sqs_test_util.h"
#include "tests/support/testsupport.h"

#ifndef OB_BENCH_SOURCE_DIR
#define OB_BENCH_SOURCE_DIR "."
#endif
#ifndef OB_BENCH_BINARY_DIR
#define OB_BENCH_BINARY_DIR "."
#endif

#define MAX_SAMPLES 200000

static pid_t spawn(const char* const* argv, int quiet) {
  pid_t pid;
  fflush(stdout);
  fflush(stderr);
  if ((pid = fork()) < 0) return -1;
  if (pid == 0) {
    if (quiet) {
      int null = open("/dev/null", O_WRONLY);
      if (null >= 0) {
        dup2(null, 1);
        if (quiet > 1) dup2(null, 2);
      }
    }
    execvp(argv[0], (char* const*)argv);
    _exit(127);  /* never exit(): atexit handlers would kill the server */
  }
  return pid;
}

static int run_wait(const char* const* argv, int quiet) {
  int status;
  pid_t pid = spawn(argv, quiet);
  if (pid < 0 || waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static long file_size(const char* p) {
  struct stat st;
  return stat(p, &st) == 0 ? (long)st.st_size : -1;
}

static void sleep_s(double s) {
  struct timespec ts;
  ts.tv_sec = (time_t)s;
  ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static int cmp_long(const void* a, const void* b) {
  long x = *(const long*)a, y = *(const long*)b;
  return x < y ? -1 : x > y;
}

/* `oncebox stats --json` of db: outbox_unpublished and payouts. */
static int stats_of(const char* ob, const char* db, long long* unpublished,
                    long long* payouts) {
  char cmd[9000], buf[8192];
  FILE* f;
  size_t got;
  cJSON* j;
  snprintf(cmd, sizeof cmd, "'%s' --db '%s' stats --json", ob, db);
  if ((f = popen(cmd, "r")) == NULL) return -1;
  got = fread(buf, 1, sizeof buf - 1, f);
  buf[got] = '\0';
  if (pclose(f) != 0) return -1;
  if ((j = cJSON_Parse(buf)) == NULL) return -1;
  {
    const cJSON* u =
        cJSON_GetObjectItem(cJSON_GetObjectItem(j, "outbox"), "unpublished");
    const cJSON* p = cJSON_GetObjectItem(j, "payouts");
    *unpublished = cJSON_IsNumber(u) ? (long long)u->valuedouble : -1;
    *payouts = cJSON_IsNumber(p) ? (long long)p->valuedouble : -1;
  }
  cJSON_Delete(j);
  return 0;
}

/* The fsync + fdatasync calls in an `strace -f -c -o FILE` summary. */
static long strace_syncs(const char* file) {
  char line[512];
  long total = 0;
  FILE* f = fopen(file, "r");
  if (f == NULL) return -1;
  while (fgets(line, sizeof line, f)) {
    double pct, secs;
    long usecs, calls;
    char name[64];
    char* last = strrchr(line, ' ');
    if (sscanf(line, "%lf %lf %ld %ld", &pct, &secs, &usecs, &calls) == 4 &&
        last && sscanf(last + 1, "%63s", name) == 1 &&
        (strcmp(name, "fsync") == 0 || strcmp(name, "fdatasync") == 0))
      total += calls;
  }
  fclose(f);
  return total;
}

/* One `oncebox run --until-idle --batch B` over a fresh database holding
** the first m messages of the NDJSON: with strace (fsyncs), then again
** without it (write_bytes of the process: ru_oublock x 512, from wait4). */
static int cli_cost(const char* ob, const char* dir, const char* ndjson,
                    int64_t m, int batch, long* syncs, long long* wbytes) {
  char* db = ts_path(dir, "cost.db");
  char* trace = ts_path(dir, "strace.txt");
  char* part = ts_path(dir, "cost-part.ndjson");
  char sb[16], cmd[9000];
  int rc = -1;
  snprintf(sb, sizeof sb, "%d", batch);
  snprintf(cmd, sizeof cmd, "head -n %" PRId64 " '%s' > '%s'", m, ndjson,
           part);
  *syncs = -1;
  *wbytes = -1;
  if (system(cmd) != 0) goto out;
  for (int pass = 0; pass < 2; pass++) {
    const char* a1[] = {ob, "--db", db, "init", NULL};
    const char* a2[] = {ob, "--db", db, "enqueue", "--ndjson", part, NULL};
    const char* traced[] = {"strace", "-f", "-c", "-o", trace, "-e",
                            "trace=fsync,fdatasync", ob, "--log-level",
                            "warn", "--db", db, "run", "--until-idle",
                            "--batch", sb, NULL};
    struct rusage ru;
    int status;
    pid_t pid;
    bc_remove_db(db);
    if (run_wait(a1, 2) != 0 || run_wait(a2, 2) != 0) goto out;
    pid = spawn(pass == 0 ? traced : traced + 7, 2);
    if (pid < 0 || wait4(pid, &status, 0, &ru) != pid ||
        !WIFEXITED(status) || WEXITSTATUS(status) != 0)
      goto out;
    if (pass == 0) *syncs = strace_syncs(trace);
    else *wbytes = (long long)ru.ru_oublock * 512;
  }
  rc = 0;
out:
  bc_remove_db(db);
  unlink(trace);
  unlink(part);
  free(db);
  free(trace);
  free(part);
  return rc;
}

static void usage(FILE* f) {
  fprintf(f,
          "usage: ob-bench-footprint [-x ONCEBOX] [-n N] [-f N] [-b B] "
          "[-i SECONDS] [-k RUNS] [-s SEED] [-o CSV]\n"
          "  -x PATH  the oncebox program (" OB_BENCH_BINARY_DIR "/oncebox)\n"
          "  -n N     messages handled and published in the busy run (5000)\n"
          "  -f N     messages of the strace runs: N and 2N at batch 1, 10N and\n"
          "           20N at batch 100 (1000)\n"
          "  -b B     --batch of the busy run (100)\n"
          "  -i S     quiet window of the idle measurement, seconds (60)\n"
          "  -k K     start-up runs of each command (21)\n"
          "  -s SEED  message generator seed (20261130)\n"
          "  -o CSV   write metric,value,unit lines\n");
}

int main(int argc, char** argv) {
  const char* ob = OB_BENCH_BINARY_DIR "/oncebox";
  int64_t n = 5000, n_cost = 1000;
  int batch = 100, starts = 21, c, failed = 0;
  double idle_s = 60;
  uint64_t seed = 20261130;
  const char* csv = NULL;
  char *dir = NULL, *db = NULL, *db_empty = NULL, *ndjson = NULL,
       *stripped = NULL, *qurl = NULL, *ndjson_cost = NULL;
  char sbatch[16], sn[32];
  sq_server_t srv;
  FILE* out = NULL;
  long bin_size, strip_size;
  long* rss = NULL;
  double* rss_t = NULL;
  int nrss = 0;
  double busy_s = 0;
  long peak_kib = 0, steady_kib = 0, hwm_kib = 0;
  int req_busy = 0, batches_busy = 0;

  while ((c = getopt(argc, argv, "x:n:f:b:i:k:s:o:h")) != -1) {
    switch (c) {
      case 'f': n_cost = strtoll(optarg, NULL, 10); break;
      case 'x': ob = optarg; break;
      case 'n': n = strtoll(optarg, NULL, 10); break;
      case 'b': batch = atoi(optarg); break;
      case 'i': idle_s = atof(optarg); break;
      case 'k': starts = atoi(optarg); break;
      case 's': seed = strtoull(optarg, NULL, 10); break;
      case 'o': csv = optarg; break;
      case 'h': usage(stdout); return 0;
      default: usage(stderr); return 2;
    }
  }
  if (n < 10 || n_cost < 100 || batch < 1 || batch > 10000 || idle_s < 1 || idle_s > 3600 ||
      starts < 1 || starts > 1001) {
    usage(stderr);
    return 2;
  }
  if (access(ob, X_OK) != 0) {
    fprintf(stderr, "ob-bench-footprint: %s: not an executable (-x)\n", ob);
    return 1;
  }
  setenv("OB_SOURCE_DIR", OB_BENCH_SOURCE_DIR, 0);
  {
    const char* why = sq_skip_reason();
    if (why != NULL) {
      fprintf(stderr, "ob-bench-footprint: %s\n", why);
      return 1;
    }
  }
  memset(&srv, 0, sizeof srv);
  dir = ts_mkdtemp("bench-footprint");
  db = ts_path(dir, "busy.db");
  db_empty = ts_path(dir, "empty.db");
  ndjson = ts_path(dir, "messages.ndjson");
  ndjson_cost = ts_path(dir, "cost.ndjson");
  stripped = ts_path(dir, "oncebox.stripped");
  rss = calloc(MAX_SAMPLES, sizeof *rss);
  rss_t = calloc(MAX_SAMPLES, sizeof *rss_t);
  if (rss == NULL || rss_t == NULL) return 1;
  if (csv && (out = fopen(csv, "w")) == NULL) {
    perror(csv);
    return 1;
  }
  if (out) fprintf(out, "metric,value,unit\n");

  printf("oncebox %s footprint: %s\n", ob_version(), ob);
  printf("files in %s%s\n", dir,
         bc_is_tmpfs(dir) ? " (tmpfs: the busy run's fsyncs are free here)"
                          : "");

  /* ---- size ---- */
  bin_size = file_size(ob);
  {
    const char* a[] = {"strip", "-o", stripped, ob, NULL};
    strip_size = run_wait(a, 0) == 0 ? file_size(stripped) : -1;
  }
  printf("\nbinary: %ld bytes, stripped %ld bytes (%.0f KiB); shared "
         "libraries:\n  ", bin_size, strip_size, strip_size / 1024.0);
  fflush(stdout);
  {
    char cmd[4400];
    snprintf(cmd, sizeof cmd,
             "ldd '%s' | awk '{print $1}' | grep -v -e linux-vdso -e "
             "ld-linux | sed 's/\\.so.*//' | tr '\\n' ' '; echo", ob);
    if (system(cmd) != 0) printf("?\n");
  }
  if (out) {
    fprintf(out, "binary_bytes,%ld,B\n", bin_size);
    fprintf(out, "binary_stripped_bytes,%ld,B\n", strip_size);
  }

  /* ---- the databases ---- */
  snprintf(sn, sizeof sn, "%" PRId64, n);
  snprintf(sbatch, sizeof sbatch, "%d", batch);
  if (bc_write_ndjson(ndjson, n, seed) != 0 ||
      bc_write_ndjson(ndjson_cost, n_cost * 20, seed + 1) != 0)
    return 1;
  {
    const char* a1[] = {ob, "--db", db, "init", NULL};
    const char* a2[] = {ob, "--db", db, "enqueue", "--ndjson", ndjson, NULL};
    const char* a3[] = {ob, "--db", db_empty, "init", NULL};
    if (run_wait(a1, 2) != 0 || run_wait(a2, 2) != 0 || run_wait(a3, 2) != 0) {
      fprintf(stderr, "bench: cannot prepare the databases\n");
      failed = 1;
      goto done;
    }
  }

  /* ---- fsyncs and bytes per message, the CLI under strace ---- */
  if (system("strace -V >/dev/null 2>&1") != 0) {
    printf("\nstrace not found: no fsync counts (apt-get install strace)\n");
  } else {
    static const int bs[2] = {1, 100};
    printf("\nfsyncs and bytes: `oncebox run --until-idle --batch B`, a run "
           "over M2 queued messages\nminus a run over M1 (start-up, "
           "enqueue and close cancel out)\n");
    printf("  %6s %6s %6s %9s %12s %10s %15s\n", "batch", "M1", "M2",
           "commits", "fsync/commit", "fsync/msg", "written KiB/msg");
    for (int i = 0; i < 2; i++) {
      long sy[2];
      long long wb[2];
      int64_t m[2], commits;
      double spc, kib;
      m[0] = n_cost * (bs[i] > 1 ? 10 : 1);
      m[1] = 2 * m[0];
      for (int k = 0; k < 2; k++)
        if (cli_cost(ob, dir, ndjson_cost, m[k], bs[i], &sy[k], &wb[k]) !=
                0 || sy[k] < 0) {
          fprintf(stderr, "bench: strace run failed\n");
          failed = 1;
          goto done;
        }
      commits = (m[1] + bs[i] - 1) / bs[i] - (m[0] + bs[i] - 1) / bs[i];
      spc = (double)(sy[1] - sy[0]) / (double)commits;
      kib = (double)(wb[1] - wb[0]) / 1024.0 / (double)(m[1] - m[0]);
      printf("  %6d %6" PRId64 " %6" PRId64 " %9" PRId64 " %12.3f %10.4f "
             "%15.2f\n", bs[i], m[0], m[1], commits, spc,
             (double)(sy[1] - sy[0]) / (double)(m[1] - m[0]), kib);
      if (out) {
        fprintf(out, "cli_batch%d_fsync_per_commit,%.4f,fsync\n", bs[i], spc);
        fprintf(out, "cli_batch%d_written_kib_per_msg,%.3f,KiB\n", bs[i],
                kib);
      }
    }
    printf("  (strace -f -c -e trace=fsync,fdatasync; written: the kernel's "
           "write_bytes of the\n   untraced run, ru_oublock x 512, WAL and "
           "checkpoints, file-system journal not included)\n");
  }

  /* ---- SQS ---- */
  if (sq_server_start(&srv, "bench-footprint-srv", NULL) != 0) {
    failed = 1;
    goto done;
  }
  bc_point_aws_at(srv.port, srv.ca_file, SQ_AKID, SQ_SECRET, SQ_REGION);
  unsetenv("ONCEBOX_PROVIDER_URL");
  if ((qurl = sq_create_queue(&srv, "bench-footprint", NULL)) == NULL) {
    failed = 1;
    goto done;
  }

  /* ---- busy: handle and publish N ---- */
  {
    const char* a[] = {ob, "--log-level", "warn", "--db", db, "run",
                       "--until-idle", "--batch",
                       sbatch, "--outbox-queue-url", qurl, NULL};
    int req0 = sq_count(&srv, "REQ "), b0 =
        sq_count(&srv, "REQ AmazonSQS.SendMessageBatch");
    struct rusage ru;
    int status;
    double t0 = bc_mono_s();
    pid_t pid = spawn(a, 2);
    long long unpub = -1, payouts = -1;
    if (pid < 0) {
      failed = 1;
      goto done;
    }
    for (;;) {
      pid_t w = wait4(pid, &status, WNOHANG, &ru);
      if (w == pid) break;
      if (w < 0) {
        failed = 1;
        goto done;
      }
      {
        long h = bc_proc_status_kib(pid, "VmHWM");
        if (h > hwm_kib) hwm_kib = h;
      }
      if (nrss < MAX_SAMPLES) {
        long v = bc_proc_status_kib(pid, "VmRSS");
        if (v > 0) {
          rss[nrss] = v;
          rss_t[nrss] = bc_mono_s() - t0;
          nrss++;
        }
      }
      sleep_s(0.01);
    }
    busy_s = bc_mono_s() - t0;
    /* ru_maxrss and VmHWM count the same high-water mark, read at
    ** different moments: take the larger. */
    peak_kib = ru.ru_maxrss > hwm_kib ? ru.ru_maxrss : hwm_kib;
    req_busy = sq_count(&srv, "REQ ") - req0;
    batches_busy = sq_count(&srv, "REQ AmazonSQS.SendMessageBatch") - b0;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
        stats_of(ob, db, &unpub, &payouts) != 0 || unpub != 0 ||
        payouts != n) {
      fprintf(stderr, "bench: busy run failed (status 0x%x, unpublished %lld,"
              " payouts %lld)\n", status, unpub, payouts);
      failed = 1;
      goto done;
    }
    {
      /* The middle half of the run, by time. */
      long* mid = calloc((size_t)nrss + 1, sizeof *mid);
      int m = 0;
      for (int i = 0; i < nrss; i++)
        if (rss_t[i] >= busy_s * 0.25 && rss_t[i] <= busy_s * 0.75)
          mid[m++] = rss[i];
      qsort(mid, (size_t)m, sizeof *mid, cmp_long);
      steady_kib = m ? mid[m / 2] : -1;
      free(mid);
    }
    printf("\nbusy: %" PRId64 " messages handled (--batch %d) and their %"
           PRId64 " events published to SQS in %.2f s\n", n, batch, n, busy_s);
    printf("  RSS: peak %.2f MiB (VmHWM / ru_maxrss), steady %.2f MiB (median VmRSS "
           "of %d samples, middle half)\n", peak_kib / 1024.0,
           steady_kib / 1024.0, nrss);
    printf("  SQS requests: %d for %" PRId64 " events = %.3f per event "
           "(%d SendMessageBatch = %.1f events each)\n", req_busy, n,
           (double)req_busy / (double)n, batches_busy,
           batches_busy ? (double)n / batches_busy : 0.0);
    if (out) {
      fprintf(out, "busy_messages,%" PRId64 ",msg\n", n);
      fprintf(out, "busy_seconds,%.3f,s\n", busy_s);
      fprintf(out, "busy_peak_rss_kib,%ld,KiB\n", peak_kib);
      fprintf(out, "busy_steady_rss_kib,%ld,KiB\n", steady_kib);
      fprintf(out, "relay_requests_per_event,%.4f,req\n",
              (double)req_busy / (double)n);
      fprintf(out, "relay_events_per_send_batch,%.2f,events\n",
              batches_busy ? (double)n / batches_busy : 0.0);
    }
  }

  /* ---- idle ---- */
  {
    const char* a_plain[] = {ob, "--log-level", "warn", "--db", db_empty,
                             "run", NULL};
    const char* a_relay[] = {ob, "--log-level", "warn", "--db", db, "run",
                             "--outbox-queue-url", qurl, NULL};
    pid_t p[2];
    bc_proc_cpu_t c0[2], c1[2];
    long rss_idle[2];
    int req0, req1, status;
    static const char* const name[2] = {"run, empty database",
                                        "run + relay (online, nothing to send)"};
    static const char* const key[2] = {"idle_plain", "idle_relay"};
    p[0] = spawn(a_plain, 2);
    p[1] = spawn(a_relay, 2);
    if (p[0] < 0 || p[1] < 0) {
      failed = 1;
      goto done;
    }
    sleep_s(3);
    req0 = sq_count(&srv, "REQ ");
    if (bc_proc_cpu(p[0], &c0[0]) != 0 || bc_proc_cpu(p[1], &c0[1]) != 0) {
      fprintf(stderr, "bench: an idle process died early\n");
      failed = 1;
    } else {
      printf("\nidle: a quiet window of %.0f s (after 3 s to settle)...\n",
             idle_s);
      fflush(stdout);
      sleep_s(idle_s);
      req1 = sq_count(&srv, "REQ ");
      if (bc_proc_cpu(p[0], &c1[0]) != 0 || bc_proc_cpu(p[1], &c1[1]) != 0) {
        fprintf(stderr, "bench: an idle process died\n");
        failed = 1;
      } else {
        rss_idle[0] = bc_proc_status_kib(p[0], "VmRSS");
        rss_idle[1] = bc_proc_status_kib(p[1], "VmRSS");
        printf("  %-40s %9s %9s %10s %9s %8s\n", "process", "CPU ms",
               "CPU %", "wake-ups", "threads", "RSS");
        for (int i = 0; i < 2; i++) {
          double cpu = c1[i].cpu_s - c0[i].cpu_s;
          int64_t w = (c1[i].vol_cs + c1[i].invol_cs) -
                      (c0[i].vol_cs + c0[i].invol_cs);
          printf("  %-40s %9.0f %9.3f %10" PRId64 " %9d %4.2f MiB\n", name[i],
                 cpu * 1000, cpu / idle_s * 100, w, c1[i].threads,
                 rss_idle[i] / 1024.0);
          if (out) {
            fprintf(out, "%s_window_s,%.0f,s\n", key[i], idle_s);
            fprintf(out, "%s_cpu_ms,%.0f,ms\n", key[i], cpu * 1000);
            fprintf(out, "%s_wakeups,%" PRId64 ",switches\n", key[i], w);
            fprintf(out, "%s_threads,%d,threads\n", key[i], c1[i].threads);
            fprintf(out, "%s_rss_kib,%ld,KiB\n", key[i], rss_idle[i]);
          }
        }
        printf("  SQS requests during the window: %d\n", req1 - req0);
        if (out) fprintf(out, "idle_relay_requests,%d,req\n", req1 - req0);
      }
    }
    for (int i = 0; i < 2; i++) {
      kill(p[i], SIGTERM);
      if (waitpid(p[i], &status, 0) == p[i] &&
          (!WIFEXITED(status) || WEXITSTATUS(status) != 0)) {
        fprintf(stderr, "bench: %s did not stop cleanly (0x%x)\n", name[i],
                status);
        failed = 1;
      }
    }
    if (failed) goto done;
  }

  /* ---- start-up ---- */
  {
    /* 0, 1: oncebox stats on the busy and the empty database; 2, 3:
    ** sqlite3 on the same two. */
    const char* a_ob[] = {ob, "--db", db, "stats", NULL};
    const char* a_obe[] = {ob, "--db", db_empty, "stats", NULL};
    const char* a_sq[] = {"sqlite3", db, "SELECT count(*) FROM queue", NULL};
    const char* a_sqe[] = {"sqlite3", db_empty, "SELECT count(*) FROM queue",
                           NULL};
    const char* const* cmds[4] = {a_ob, a_obe, a_sq, a_sqe};
    double* t[4];
    double m[4] = {0, 0, 0, 0};
    int have_sqlite = system("sqlite3 -version >/dev/null 2>&1") == 0;
    int nc = have_sqlite ? 4 : 2;
    for (int k = 0; k < 4; k++)
      if ((t[k] = calloc((size_t)starts, sizeof *t[k])) == NULL) return 1;
    for (int i = 0; i < starts && !failed; i++) {
      for (int k = 0; k < nc; k++) {
        int which = (i + k) % nc;
        double t0 = bc_mono_s();
        if (run_wait(cmds[which], 1) != 0) {
          fprintf(stderr, "bench: start-up run failed\n");
          failed = 1;
          break;
        }
        t[which][i] = (bc_mono_s() - t0) * 1000;
      }
    }
    if (!failed) {
      static const char* const what[4] = {
          "oncebox stats, the busy run's database",
          "oncebox stats, an empty database",
          "sqlite3 DB 'SELECT count(*) FROM queue', busy",
          "sqlite3 DB 'SELECT count(*) FROM queue', empty"};
      static const char* const key[4] = {"startup_stats_busy_ms",
                                         "startup_stats_empty_ms",
                                         "startup_sqlite3_busy_ms",
                                         "startup_sqlite3_empty_ms"};
      printf("\nstart-up: a fresh process, fork to exit, median of %d "
             "(interleaved)\n", starts);
      for (int k = 0; k < nc; k++) {
        m[k] = bc_median(t[k], starts);
        printf("  %-50s %7.2f ms\n", what[k], m[k]);
        if (out) fprintf(out, "%s,%.3f,ms\n", key[k], m[k]);
      }
      if (have_sqlite) {
        printf("  ratio oncebox / sqlite3: busy %.2f, empty %.2f\n",
               m[0] / m[2], m[1] / m[3]);
        if (out) {
          fprintf(out, "startup_ratio_busy,%.3f,x\n", m[0] / m[2]);
          fprintf(out, "startup_ratio_empty,%.3f,x\n", m[1] / m[3]);
        }
      } else {
        printf("  (sqlite3 CLI not found: no ratio)\n");
      }
    }
    for (int k = 0; k < 4; k++) free(t[k]);
  }
  printf("\nwake-ups: voluntary + involuntary context switches of every "
         "thread over the window;\nCPU: utime + stime of every thread. The "
         "relay's idle process holds a keep-alive\nconnection to the local "
         "SQS server.\n");

done:
  if (srv.proc) sq_server_stop(&srv);
  if (out) fclose(out);
  free(qurl);
  free(rss);
  free(rss_t);
  free(db);
  free(db_empty);
  free(ndjson);
  free(ndjson_cost);
  free(stripped);
  ts_rmdir(dir);
  return failed ? 1 : 0;
}
