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
**             runs each, interleaved, medians and their ratios.
**
** Issue 41's footprint budget (docs/performance.md, "Footprint budget per
** architecture (issue 41)"; the stripped sizes per architecture come from
** tests/bench/sizes.sh):
**   idle      two more processes in the same quiet window, each with the
**             relay, the consumer and the metrics listener configured
**             (`run --outbox-queue-url Q --consume-queue-url IN
**             --metrics-listen 127.0.0.1:PORT`, a fresh database each):
**             "links up" talks to the SQS server above; "links down" has its
**             endpoint and both queue URLs on a local port that is bound and
**             never listened on (every connection refused). For all four:
**             RSS and Private_Dirty from /proc/PID/smaps_rollup at the end
**             of the window, and, for the two configured ones,
**             /proc/PID/smaps summed per mapped file ([heap], anonymous,
**             the program, each library) to say what holds the memory.
**             Beside the wake-ups, what the design asks for the window: the
**             consumer's long polls (window / 20 s) online, the probes of
**             the backoff schedule offline (core/util/link.c: 1 s doubling
**             to 300 s, +-10 % jitter, counted from the start of the
**             process; each probe up to 3 attempts of the SQS client);
**   budget    `oncebox run --until-idle --batch B --outbox-queue-url Q`
**             over a fresh database holding P queued payments (-P, 20,000;
**             0 skips it), B = 1 and 100: the relay drains to the SQS
**             server while the payments are handled. Peak RSS (VmHWM /
**             ru_maxrss) and the largest Private_Dirty sampled
**             (smaps_rollup, every 50 ms).
** The interface (options, the printed table's rows, the CSV keys) is meant
** to be rerun unchanged after the PostgreSQL dialect leaves the library:
**   tests/bench/run-all.sh --only sizes,footprint
**   build-bench/tests/bench/ob-bench-footprint -n 5000 -i 60 -k 21 -P 20000 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
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

/* argv in a child process; env: NULL or "NAME=VALUE" strings set in the
** child only. */
static pid_t spawn_env(const char* const* argv, int quiet,
                       const char* const* env) {
  pid_t pid;
  fflush(stdout);
  fflush(stderr);
  if ((pid = fork()) < 0) return -1;
  if (pid == 0) {
    for (int i = 0; env != NULL && env[i] != NULL; i++)
      putenv((char*)env[i]);
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

static pid_t spawn(const char* const* argv, int quiet) {
  return spawn_env(argv, quiet, NULL);
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

/* "FIELD:  N kB" of /proc/PID/FILE (status, smaps_rollup), in KiB; -1. */
static long proc_kib(pid_t pid, const char* file, const char* field) {
  char path[96], line[512];
  size_t n = strlen(field);
  long v = -1;
  FILE* f;
  snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, file);
  if ((f = fopen(path, "r")) == NULL) return -1;
  while (fgets(line, sizeof line, f))
    if (strncmp(line, field, n) == 0 && line[n] == ':') {
      v = strtol(line + n + 1, NULL, 10);
      break;
    }
  fclose(f);
  return v;
}

/* /proc/PID/smaps summed per mapped file: the name is the file's base name
** cut after ".so" (libpq.so.5.15 -> libpq.so), "[heap]", "[stack]",
** "[anon]" (anonymous mappings: the libraries' .bss and libc's arenas
** other than the main one, thread stacks), or the program's own name. */
#define MAX_GROUPS 96
typedef struct map_group_s {
  char name[64];
  long rss, pd;  /* KiB: Rss, Private_Dirty */
} map_group_t;

static int smaps_groups(pid_t pid, map_group_t* g, int max) {
  char path[64], line[1024], cur[64] = "[anon]";
  int n = 0;
  FILE* f;
  snprintf(path, sizeof path, "/proc/%d/smaps", (int)pid);
  if ((f = fopen(path, "r")) == NULL) return -1;
  while (fgets(line, sizeof line, f)) {
    unsigned long a, b;
    int off = 0;
    long v;
    if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %n", &a, &b, &off) == 2 &&
        off > 0) {
      char* name = line + off;
      char* slash;
      char* so;
      name[strcspn(name, "\n")] = '\0';
      if (name[0] == '\0') {
        snprintf(cur, sizeof cur, "[anon]");
      } else if (name[0] == '[') {
        snprintf(cur, sizeof cur, "%s", name);
      } else {
        if ((slash = strrchr(name, '/')) != NULL) name = slash + 1;
        snprintf(cur, sizeof cur, "%s", name);
        if ((so = strstr(cur, ".so")) != NULL) so[3] = '\0';
        if ((so = strstr(cur, " (deleted)")) != NULL) *so = '\0';
        if (strlen(cur) > 4 && strcmp(cur + strlen(cur) - 4, "-shm") == 0)
          snprintf(cur, sizeof cur, "[db-shm]");
      }
      continue;
    }
    if (strncmp(line, "Rss:", 4) == 0 ||
        strncmp(line, "Private_Dirty:", 14) == 0) {
      int i;
      v = strtol(strchr(line, ':') + 1, NULL, 10);
      for (i = 0; i < n && strcmp(g[i].name, cur) != 0; i++) {
      }
      if (i == n) {
        if (n == max) continue;
        memset(&g[n], 0, sizeof g[n]);
        snprintf(g[n].name, sizeof g[n].name, "%s", cur);
        n++;
      }
      if (line[0] == 'R') g[i].rss += v;
      else g[i].pd += v;
    }
  }
  fclose(f);
  return n;
}

static int cmp_pd(const void* a, const void* b) {
  const map_group_t *x = a, *y = b;
  return x->pd < y->pd ? 1 : x->pd > y->pd ? -1 : strcmp(x->name, y->name);
}

/* A TCP port on 127.0.0.1 that refuses every connection while *fd stays
** open: bound, never listened on. 0 on failure. */
static int closed_port(int* fd) {
  struct sockaddr_in sa;
  socklen_t len = sizeof sa;
  *fd = socket(AF_INET, SOCK_STREAM, 0);
  if (*fd < 0) return 0;
  memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(*fd, (struct sockaddr*)&sa, sizeof sa) != 0 ||
      getsockname(*fd, (struct sockaddr*)&sa, &len) != 0) {
    close(*fd);
    *fd = -1;
    return 0;
  }
  return ntohs(sa.sin_port);
}

/* A port free now on 127.0.0.1 (for --metrics-listen). 0 on failure. */
static int free_port(void) {
  int fd, port = closed_port(&fd);
  if (fd >= 0) close(fd);
  return port;
}

/* url with its scheme://authority replaced by base ("https://localhost:P"):
** the same queue path on another endpoint. Caller frees. */
static char* rebase_url(const char* url, const char* base) {
  const char* p = strstr(url, "://");
  char* r;
  size_t len;
  p = p ? strchr(p + 3, '/') : NULL;
  if (p == NULL) p = "";
  len = strlen(base) + strlen(p) + 1;
  if ((r = malloc(len)) != NULL) snprintf(r, len, "%s%s", base, p);
  return r;
}

/* The probe rounds of one worker offline whose start can fall in [t0, t1]
** seconds after the process started (core/util/link.c: the first round at
** start, then 1 s doubling to 300 s, +-10 % jitter; each round also takes
** up to ~0.35 s of the SQS client's own two retries and connects): *lo
** rounds fall in it however the jitter goes, at most *hi. */
static void probe_rounds(double t0, double t1, int* lo, int* hi) {
  double smin = 0, smax = 0.2;
  *lo = *hi = 0;
  for (int k = 1; k <= 64 && smin <= t1; k++) {
    double d = ldexp(1.0, k - 1);
    if (smin <= t1 && smax >= t0) (*hi)++;
    if (smin >= t0 && smax <= t1) (*lo)++;
    if (d > 300) d = 300;
    smin += 0.9 * d;
    smax += 1.1 * d + 0.35;
  }
}

/* One `oncebox run --until-idle --batch B --outbox-queue-url Q` over db
** (holding n queued payments): handles them while the relay publishes the
** n events. Samples VmHWM and VmRSS every 10 ms, Private_Dirty every 50 ms;
** checks that every payment was paid and every event published. */
typedef struct busy_s {
  double secs;
  long peak_kib, steady_kib, pd_max_kib;
  int nrss, req, batches;
  int ng;                   /* /proc/PID/smaps per mapping at the sample */
  map_group_t g[MAX_GROUPS];  /* of the largest Private_Dirty */
} busy_t;

static int busy_run(const char* ob, const char* db, int batch, int64_t n,
                    const char* qurl, sq_server_t* srv, long* rss,
                    double* rss_t, busy_t* b) {
  char sbatch[16];
  const char* a[] = {ob, "--log-level", "warn", "--db", db, "run",
                     "--until-idle", "--batch", sbatch, "--outbox-queue-url",
                     qurl, NULL};
  int req0 = sq_count(srv, "REQ "),
      b0 = sq_count(srv, "REQ AmazonSQS.SendMessageBatch");
  struct rusage ru;
  int status, tick = 0;
  double t0;
  pid_t pid;
  long hwm_kib = 0;
  long long unpub = -1, payouts = -1;
  memset(b, 0, sizeof *b);
  snprintf(sbatch, sizeof sbatch, "%d", batch);
  t0 = bc_mono_s();
  if ((pid = spawn(a, 2)) < 0) return -1;
  for (;;) {
    pid_t w = wait4(pid, &status, WNOHANG, &ru);
    if (w == pid) break;
    if (w < 0) return -1;
    {
      long h = bc_proc_status_kib(pid, "VmHWM");
      if (h > hwm_kib) hwm_kib = h;
    }
    if (b->nrss < MAX_SAMPLES) {
      long v = bc_proc_status_kib(pid, "VmRSS");
      if (v > 0) {
        rss[b->nrss] = v;
        rss_t[b->nrss] = bc_mono_s() - t0;
        b->nrss++;
      }
    }
    if (tick++ % 5 == 0) {
      long pd = proc_kib(pid, "smaps_rollup", "Private_Dirty");
      if (pd > b->pd_max_kib) {
        int ng = smaps_groups(pid, b->g, MAX_GROUPS);
        b->pd_max_kib = pd;
        b->ng = ng > 0 ? ng : 0;
      }
    }
    sleep_s(0.01);
  }
  b->secs = bc_mono_s() - t0;
  /* ru_maxrss and VmHWM count the same high-water mark, read at
  ** different moments: take the larger. */
  b->peak_kib = ru.ru_maxrss > hwm_kib ? ru.ru_maxrss : hwm_kib;
  b->req = sq_count(srv, "REQ ") - req0;
  b->batches = sq_count(srv, "REQ AmazonSQS.SendMessageBatch") - b0;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
      stats_of(ob, db, &unpub, &payouts) != 0 || unpub != 0 ||
      payouts != n) {
    fprintf(stderr, "bench: busy run failed (status 0x%x, unpublished %lld,"
            " payouts %lld)\n", status, unpub, payouts);
    return -1;
  }
  {
    /* The middle half of the run, by time. */
    long* mid = calloc((size_t)b->nrss + 1, sizeof *mid);
    int m = 0;
    if (mid == NULL) return -1;
    for (int i = 0; i < b->nrss; i++)
      if (rss_t[i] >= b->secs * 0.25 && rss_t[i] <= b->secs * 0.75)
        mid[m++] = rss[i];
    qsort(mid, (size_t)m, sizeof *mid, cmp_long);
    b->steady_kib = m ? mid[m / 2] : -1;
    free(mid);
  }
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
          "[-i SECONDS] [-k RUNS] [-s SEED] [-P N] [-o CSV]\n"
          "  -x PATH  the oncebox program (" OB_BENCH_BINARY_DIR "/oncebox)\n"
          "  -n N     messages handled and published in the busy run (5000)\n"
          "  -f N     messages of the strace runs: N and 2N at batch 1, 10N and\n"
          "           20N at batch 100 (1000)\n"
          "  -b B     --batch of the busy run (100)\n"
          "  -i S     quiet window of the idle measurement, seconds (60)\n"
          "  -k K     start-up runs of each command (21)\n"
          "  -s SEED  message generator seed (20261130)\n"
          "  -P N     payments of the budget runs at batch 1 and 100, the\n"
          "           relay draining (20000; 0: no budget runs)\n"
          "  -o CSV   write metric,value,unit lines\n");
}

int main(int argc, char** argv) {
  const char* ob = OB_BENCH_BINARY_DIR "/oncebox";
  int64_t n = 5000, n_cost = 1000, n_budget = 20000;
  int batch = 100, starts = 21, c, failed = 0;
  double idle_s = 60;
  uint64_t seed = 20261130;
  const char* csv = NULL;
  char *dir = NULL, *db = NULL, *db_empty = NULL, *ndjson = NULL,
       *stripped = NULL, *qurl = NULL, *ndjson_cost = NULL, *qin = NULL,
       *ndjson_budget = NULL;
  char sn[32];
  sq_server_t srv;
  FILE* out = NULL;
  long bin_size, strip_size;
  long* rss = NULL;
  double* rss_t = NULL;
  busy_t busy;
  int closed_fd = -1;

  while ((c = getopt(argc, argv, "x:n:f:b:i:k:s:P:o:h")) != -1) {
    switch (c) {
      case 'f': n_cost = strtoll(optarg, NULL, 10); break;
      case 'x': ob = optarg; break;
      case 'n': n = strtoll(optarg, NULL, 10); break;
      case 'b': batch = atoi(optarg); break;
      case 'i': idle_s = atof(optarg); break;
      case 'k': starts = atoi(optarg); break;
      case 's': seed = strtoull(optarg, NULL, 10); break;
      case 'P': n_budget = strtoll(optarg, NULL, 10); break;
      case 'o': csv = optarg; break;
      case 'h': usage(stdout); return 0;
      default: usage(stderr); return 2;
    }
  }
  if (n < 10 || n_cost < 100 || n_budget < 0 || n_budget > 10000000 || batch < 1 || batch > 10000 || idle_s < 1 || idle_s > 3600 ||
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
  ndjson_budget = ts_path(dir, "budget.ndjson");
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
  printf("reproduce:");
  for (int i = 0; i < argc; i++) printf(" %s", argv[i]);
  printf("\n");
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
  if (bc_write_ndjson(ndjson, n, seed) != 0 ||
      bc_write_ndjson(ndjson_cost, n_cost * 20, seed + 1) != 0 ||
      (n_budget > 0 && bc_write_ndjson(ndjson_budget, n_budget, seed + 2) != 0))
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
  if ((qurl = sq_create_queue(&srv, "bench-footprint", NULL)) == NULL ||
      (qin = sq_create_queue(&srv, "bench-footprint-in", NULL)) == NULL) {
    failed = 1;
    goto done;
  }

  /* ---- busy: handle and publish N ---- */
  if (busy_run(ob, db, batch, n, qurl, &srv, rss, rss_t, &busy) != 0) {
    failed = 1;
    goto done;
  }
  printf("\nbusy: %" PRId64 " messages handled (--batch %d) and their %"
         PRId64 " events published to SQS in %.2f s\n", n, batch, n,
         busy.secs);
  printf("  RSS: peak %.2f MiB (VmHWM / ru_maxrss), steady %.2f MiB (median VmRSS "
         "of %d samples, middle half)\n", busy.peak_kib / 1024.0,
         busy.steady_kib / 1024.0, busy.nrss);
  printf("  SQS requests: %d for %" PRId64 " events = %.3f per event "
         "(%d SendMessageBatch = %.1f events each)\n", busy.req, n,
         (double)busy.req / (double)n, busy.batches,
         busy.batches ? (double)n / busy.batches : 0.0);
  if (out) {
    fprintf(out, "busy_messages,%" PRId64 ",msg\n", n);
    fprintf(out, "busy_seconds,%.3f,s\n", busy.secs);
    fprintf(out, "busy_peak_rss_kib,%ld,KiB\n", busy.peak_kib);
    fprintf(out, "busy_steady_rss_kib,%ld,KiB\n", busy.steady_kib);
    fprintf(out, "relay_requests_per_event,%.4f,req\n",
            (double)busy.req / (double)n);
    fprintf(out, "relay_events_per_send_batch,%.2f,events\n",
            busy.batches ? (double)n / busy.batches : 0.0);
  }

  /* ---- budget: P payments at batch 1 and 100, the relay draining ---- */
  if (n_budget > 0) {
    static const int bb[2] = {1, 100};
    char* bdb = ts_path(dir, "budget.db");
    printf("\nbudget: %" PRId64 " payments handled by `run --until-idle "
           "--batch B --outbox-queue-url Q`,\nthe relay publishing their "
           "events to SQS meanwhile (goal: peak RSS <= 6 MiB)\n", n_budget);
    printf("  %6s %9s %12s %12s %16s %9s %10s\n", "batch", "seconds",
           "peak RSS", "steady RSS", "max Priv_Dirty", "requests",
           "goal 6 MiB");
    static busy_t kept[2];
    for (int i = 0; i < 2 && !failed; i++) {
      const char* a1[] = {ob, "--db", bdb, "init", NULL};
      const char* a2[] = {ob, "--db", bdb, "enqueue", "--ndjson",
                          ndjson_budget, NULL};
      busy_t* rp = &kept[i];
      bc_remove_db(bdb);
      if (run_wait(a1, 2) != 0 || run_wait(a2, 2) != 0 ||
          busy_run(ob, bdb, bb[i], n_budget, qurl, &srv, rss, rss_t, rp) !=
              0) {
        fprintf(stderr, "bench: budget run at batch %d failed\n", bb[i]);
        failed = 1;
        break;
      }
      printf("  %6d %9.2f %8.2f MiB %8.2f MiB %12.2f MiB %9d %10s\n", bb[i],
             rp->secs, rp->peak_kib / 1024.0, rp->steady_kib / 1024.0,
             rp->pd_max_kib / 1024.0, rp->req,
             rp->peak_kib <= 6 * 1024 ? "met" : "missed");
      if (out) {
        fprintf(out, "budget_batch%d_messages,%" PRId64 ",msg\n", bb[i],
                n_budget);
        fprintf(out, "budget_batch%d_seconds,%.3f,s\n", bb[i], rp->secs);
        fprintf(out, "budget_batch%d_peak_rss_kib,%ld,KiB\n", bb[i],
                rp->peak_kib);
        fprintf(out, "budget_batch%d_steady_rss_kib,%ld,KiB\n", bb[i],
                rp->steady_kib);
        fprintf(out, "budget_batch%d_max_private_dirty_kib,%ld,KiB\n", bb[i],
                rp->pd_max_kib);
        fprintf(out, "budget_batch%d_requests,%d,req\n", bb[i], rp->req);
      }
    }
    printf("  (peak: VmHWM / ru_maxrss; steady: median VmRSS, middle half; "
           "Private_Dirty:\n   /proc/PID/smaps_rollup every 50 ms)\n");
    if (!failed && kept[0].ng > 0 && kept[1].ng > 0) {
      /* Per mapping at each run's largest Private_Dirty sample, the
      ** mappings holding >= 64 KiB of either, by batch 100's. */
      printf("\n  memory per mapping at the sample of the largest "
             "Private_Dirty (KiB, /proc/PID/smaps):\n");
      printf("  %-28s %10s %10s %10s %10s\n", "mapping", "b1 Rss",
             "b1 PrivD", "b100 Rss", "b100 PrivD");
      /* By batch 100's Private_Dirty, largest first. */
      qsort(kept[1].g, (size_t)kept[1].ng, sizeof kept[1].g[0], cmp_pd);
      for (int j = 0; j < kept[1].ng; j++) {
        const map_group_t* g1 = &kept[1].g[j];
        long r0 = 0, d0 = 0;
        for (int i = 0; i < kept[0].ng; i++)
          if (strcmp(kept[0].g[i].name, g1->name) == 0) {
            r0 = kept[0].g[i].rss;
            d0 = kept[0].g[i].pd;
          }
        if (g1->pd < 64 && d0 < 64) continue;
        printf("  %-28s %10ld %10ld %10ld %10ld\n", g1->name, r0, d0,
               g1->rss, g1->pd);
        if (out)
          fprintf(out, "budget_map_%s,%ld/%ld/%ld/%ld,KiB "
                  "b1_rss/b1_pd/b100_rss/b100_pd\n", g1->name, r0, d0,
                  g1->rss, g1->pd);
      }
    }
    bc_remove_db(bdb);
    free(bdb);
    if (failed) goto done;
  }

  /* ---- idle ---- */
  {
    /* 0: run on an empty database; 1: run + relay on the busy run's
    ** (online, nothing to send); 2, 3: run + relay + consumer + metrics
    ** listener on fresh databases, links up and links down. */
    enum { NIDLE = 4 };
    char* db_up = ts_path(dir, "full-up.db");
    char* db_down = ts_path(dir, "full-down.db");
    char mport[2][16], down_base[64], down_env[96];
    char *qurl_down = NULL, *qin_down = NULL;
    int cport = closed_port(&closed_fd);
    const char* a_plain[] = {ob, "--log-level", "warn", "--db", db_empty,
                             "run", NULL};
    const char* a_relay[] = {ob, "--log-level", "warn", "--db", db, "run",
                             "--outbox-queue-url", qurl, NULL};
    const char* a_up[] = {ob, "--log-level", "warn", "--db", db_up, "run",
                          "--outbox-queue-url", qurl, "--consume-queue-url",
                          qin, "--metrics-listen", mport[0], NULL};
    const char* a_down[] = {ob, "--log-level", "warn", "--db", db_down,
                            "run", "--outbox-queue-url", NULL,
                            "--consume-queue-url", NULL, "--metrics-listen",
                            mport[1], NULL};
    const char* env_down[] = {down_env, NULL};
    pid_t p[NIDLE] = {-1, -1, -1, -1};
    bc_proc_cpu_t c0[NIDLE], c1[NIDLE];
    long rss_idle[NIDLE], rss_roll[NIDLE], pd_roll[NIDLE];
    int req0[4], req1[4], status;
    double t_start[NIDLE], t_w0, t_w1;
    static const char* const req_kind[4] = {
        "REQ ", "REQ AmazonSQS.ReceiveMessage",
        "REQ AmazonSQS.GetQueueAttributes", "REQ AmazonSQS.SendMessageBatch"};
    static const char* const name[NIDLE] = {
        "run, empty database", "run + relay (online, nothing to send)",
        "relay + consumer + metrics, links up",
        "relay + consumer + metrics, links down"};
    static const char* const key[NIDLE] = {"idle_plain", "idle_relay",
                                           "idle_full_up", "idle_full_down"};
    snprintf(mport[0], sizeof mport[0], "127.0.0.1:%d", free_port());
    snprintf(mport[1], sizeof mport[1], "127.0.0.1:%d", free_port());
    snprintf(down_base, sizeof down_base, "https://localhost:%d", cport);
    snprintf(down_env, sizeof down_env, "AWS_ENDPOINT_URL_SQS=%s", down_base);
    qurl_down = rebase_url(qurl, down_base);
    qin_down = rebase_url(qin, down_base);
    a_down[7] = qurl_down;
    a_down[9] = qin_down;
    {
      const char* i1[] = {ob, "--db", db_up, "init", NULL};
      const char* i2[] = {ob, "--db", db_down, "init", NULL};
      if (cport == 0 || qurl_down == NULL || qin_down == NULL ||
          run_wait(i1, 2) != 0 || run_wait(i2, 2) != 0) {
        fprintf(stderr, "bench: cannot prepare the idle runs\n");
        failed = 1;
      }
    }
    for (int i = 0; i < NIDLE && !failed; i++) {
      t_start[i] = bc_mono_s();
      p[i] = spawn_env(i == 0   ? a_plain
                       : i == 1 ? a_relay
                       : i == 2 ? a_up
                                : a_down,
                       2, i == 3 ? env_down : NULL);
      if (p[i] < 0) failed = 1;
    }
    if (!failed) {
      sleep_s(3);
      for (int k = 0; k < 4; k++) req0[k] = sq_count(&srv, req_kind[k]);
      t_w0 = bc_mono_s();
      for (int i = 0; i < NIDLE; i++)
        if (bc_proc_cpu(p[i], &c0[i]) != 0) failed = 1;
      if (failed) fprintf(stderr, "bench: an idle process died early\n");
    }
    if (!failed) {
      printf("\nidle: a quiet window of %.0f s (after 3 s to settle), the "
             "%d processes side by side...\n", idle_s, NIDLE);
      fflush(stdout);
      sleep_s(idle_s);
      for (int k = 0; k < 4; k++) req1[k] = sq_count(&srv, req_kind[k]);
      t_w1 = bc_mono_s();
      for (int i = 0; i < NIDLE; i++)
        if (bc_proc_cpu(p[i], &c1[i]) != 0) failed = 1;
      if (failed) fprintf(stderr, "bench: an idle process died\n");
    }
    if (!failed) {
      int wlo, whi, polls;
      for (int i = 0; i < NIDLE; i++) {
        rss_idle[i] = bc_proc_status_kib(p[i], "VmRSS");
        rss_roll[i] = proc_kib(p[i], "smaps_rollup", "Rss");
        pd_roll[i] = proc_kib(p[i], "smaps_rollup", "Private_Dirty");
      }
      printf("  %-40s %7s %7s %9s %7s %9s %13s\n", "process", "CPU ms",
             "CPU %", "wake-ups", "threads", "RSS", "Private_Dirty");
      for (int i = 0; i < NIDLE; i++) {
        double cpu = c1[i].cpu_s - c0[i].cpu_s;
        int64_t w = (c1[i].vol_cs + c1[i].invol_cs) -
                    (c0[i].vol_cs + c0[i].invol_cs);
        printf("  %-40s %7.0f %7.3f %9" PRId64 " %7d %5.2f MiB %9.2f MiB\n",
               name[i], cpu * 1000, cpu / idle_s * 100, w, c1[i].threads,
               rss_roll[i] / 1024.0, pd_roll[i] / 1024.0);
        if (out) {
          fprintf(out, "%s_window_s,%.0f,s\n", key[i], idle_s);
          fprintf(out, "%s_cpu_ms,%.0f,ms\n", key[i], cpu * 1000);
          fprintf(out, "%s_wakeups,%" PRId64 ",switches\n", key[i], w);
          fprintf(out, "%s_wakeups_voluntary,%" PRId64 ",switches\n", key[i],
                  c1[i].vol_cs - c0[i].vol_cs);
          fprintf(out, "%s_threads,%d,threads\n", key[i], c1[i].threads);
          fprintf(out, "%s_rss_kib,%ld,KiB\n", key[i], rss_idle[i]);
          fprintf(out, "%s_smaps_rss_kib,%ld,KiB\n", key[i], rss_roll[i]);
          fprintf(out, "%s_private_dirty_kib,%ld,KiB\n", key[i], pd_roll[i]);
        }
      }
      printf("  (RSS, Private_Dirty: /proc/PID/smaps_rollup at the end of "
             "the window)\n");
      for (int i = 2; i < NIDLE; i++)
        printf("  goals, %s: RSS %.2f <= 5 MiB %s, Private_Dirty %.2f <= "
               "1.5 MiB %s\n", i == 2 ? "links up" : "links down",
               rss_roll[i] / 1024.0, rss_roll[i] <= 5 * 1024 ? "met" : "missed",
               pd_roll[i] / 1024.0,
               pd_roll[i] <= 1536 ? "met" : "missed");
      printf("  SQS requests during the window: %d (ReceiveMessage %d, "
             "GetQueueAttributes %d,\n  SendMessageBatch %d); only the "
             "links-up configured process consumes\n",
             req1[0] - req0[0], req1[1] - req0[1], req1[2] - req0[2],
             req1[3] - req0[3]);
      /* What the design asks for the window. Online: the consumer's long
      ** polls (WaitTimeSeconds 20), one wake-up each; the relay alone asks
      ** none. Offline: the consumer's probe rounds (the relay has nothing
      ** to send and so nothing to probe with), up to 3 attempts each. */
      polls = (int)ceil((t_w1 - t_w0) / 20.0);
      probe_rounds(t_w0 - t_start[3], t_w1 - t_start[3], &wlo, &whi);
      {
        int64_t wu = (c1[2].vol_cs + c1[2].invol_cs) -
                     (c0[2].vol_cs + c0[2].invol_cs);
        int64_t wd = (c1[3].vol_cs + c1[3].invol_cs) -
                     (c0[3].vol_cs + c0[3].invol_cs);
        int64_t wr = (c1[1].vol_cs + c1[1].invol_cs) -
                     (c0[1].vol_cs + c0[1].invol_cs);
        printf("\n  what the design asks over the window, against what was "
               "measured:\n");
        printf("  %-40s %-34s %s\n", "process", "asked", "measured");
        printf("  %-40s %-34s %" PRId64 " wake-ups, %d requests\n",
               name[1], "0 requests, 0 wake-ups", wr, req1[3] - req0[3]);
        {
          char asked[64];
          snprintf(asked, sizeof asked, "<= %d long polls (%.0f s / 20 s)",
                   polls, t_w1 - t_w0);
          printf("  %-40s %-34s %" PRId64 " wake-ups, %d ReceiveMessage\n",
                 name[2], asked, wu, req1[1] - req0[1]);
          snprintf(asked, sizeof asked, "%d-%d probe rounds, <= %d attempts",
                   wlo, whi, 3 * whi);
          printf("  %-40s %-34s %" PRId64 " wake-ups = %.1f per attempt "
                 "asked\n", name[3], asked, wd,
                 whi ? (double)wd / (3.0 * whi) : 0.0);
        }
        printf("  (offline: the window is %.1f-%.1f s after the process "
               "started; probes at start, then\n   1, 2, 4, 8, 16, 32 s... "
               "apart, +-10 %%: core/util/link.c; each round is the SQS\n   "
               "client's first attempt and up to 2 retries: "
               "core/sqs/sqs_retry.h)\n", t_w0 - t_start[3],
               t_w1 - t_start[3]);
        if (out) {
          fprintf(out, "idle_full_up_polls_asked,%d,req\n", polls);
          fprintf(out, "idle_full_up_receive_requests,%d,req\n",
                  req1[1] - req0[1]);
          fprintf(out, "idle_full_down_probe_rounds_min,%d,rounds\n", wlo);
          fprintf(out, "idle_full_down_probe_rounds_max,%d,rounds\n", whi);
          fprintf(out, "idle_requests,%d,req\n", req1[0] - req0[0]);
          fprintf(out, "idle_relay_requests,%d,req\n", req1[3] - req0[3]);
        }
      }

      /* What holds the memory of the two configured processes. */
      {
        static map_group_t g[2][MAX_GROUPS];
        int ng[2];
        ng[0] = smaps_groups(p[2], g[0], MAX_GROUPS);
        ng[1] = smaps_groups(p[3], g[1], MAX_GROUPS);
        if (ng[0] > 0 && ng[1] > 0) {
          /* The union of the names, by links-up Private_Dirty, then Rss. */
          map_group_t u[2 * MAX_GROUPS];
          int nu = 0;
          long tot[4] = {0, 0, 0, 0};
          for (int s2 = 0; s2 < 2; s2++)
            for (int i = 0; i < ng[s2]; i++) {
              int j;
              for (j = 0; j < nu && strcmp(u[j].name, g[s2][i].name) != 0; j++) {
              }
              if (j == nu) {
                memset(&u[nu], 0, sizeof u[nu]);
                memcpy(u[nu].name, g[s2][i].name, sizeof u[nu].name);
                nu++;
              }
            }
          printf("\n  memory per mapping at the end of the window (KiB, "
                 "/proc/PID/smaps):\n");
          printf("  %-28s %10s %10s %10s %10s\n", "mapping", "up Rss",
                 "up PrivD", "down Rss", "down PrivD");
          {
            /* The rows by links-up Private_Dirty, then Rss. */
            int done_[2 * MAX_GROUPS];
            memset(done_, 0, sizeof done_);
            for (int row = 0; row < nu; row++) {
              int best = -1;
              long v[4] = {0, 0, 0, 0}, bv[4] = {0, 0, 0, 0};
              for (int j = 0; j < nu; j++) {
                if (done_[j]) continue;
                memset(v, 0, sizeof v);
                for (int i = 0; i < ng[0]; i++)
                  if (strcmp(g[0][i].name, u[j].name) == 0) {
                    v[0] = g[0][i].rss;
                    v[1] = g[0][i].pd;
                  }
                for (int i = 0; i < ng[1]; i++)
                  if (strcmp(g[1][i].name, u[j].name) == 0) {
                    v[2] = g[1][i].rss;
                    v[3] = g[1][i].pd;
                  }
                if (best < 0 || v[1] > bv[1] ||
                    (v[1] == bv[1] && v[0] > bv[0])) {
                  best = j;
                  memcpy(bv, v, sizeof bv);
                }
              }
              done_[best] = 1;
              for (int k = 0; k < 4; k++) tot[k] += bv[k];
              if (bv[0] == 0 && bv[2] == 0) continue;
              printf("  %-28s %10ld %10ld %10ld %10ld\n", u[best].name,
                     bv[0], bv[1], bv[2], bv[3]);
              if (out)
                fprintf(out, "idle_map_%s,%ld/%ld/%ld/%ld,KiB "
                        "up_rss/up_pd/down_rss/down_pd\n", u[best].name,
                        bv[0], bv[1], bv[2], bv[3]);
            }
            printf("  %-28s %10ld %10ld %10ld %10ld\n", "total", tot[0],
                   tot[1], tot[2], tot[3]);
          }
        }
      }
    }
    for (int i = 0; i < NIDLE; i++) {
      if (p[i] <= 0) continue;
      kill(p[i], SIGTERM);
      if (waitpid(p[i], &status, 0) == p[i] &&
          (!WIFEXITED(status) || WEXITSTATUS(status) != 0)) {
        fprintf(stderr, "bench: %s did not stop cleanly (0x%x)\n", name[i],
                status);
        failed = 1;
      }
    }
    bc_remove_db(db_up);
    bc_remove_db(db_down);
    free(db_up);
    free(db_down);
    free(qurl_down);
    free(qin_down);
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
         "SQS server. The links-down process's endpoint is a local\nport "
         "bound and never listened on: every connection is refused at "
         "once.\n");

done:
  if (srv.proc) sq_server_stop(&srv);
  if (closed_fd >= 0) close(closed_fd);
  if (out) fclose(out);
  free(qurl);
  free(qin);
  free(ndjson_budget);
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
