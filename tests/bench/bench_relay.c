/* SPDX-License-Identifier: Apache-2.0 */
/* ob-bench-relay: the outbox relay against the AWS SDK for JavaScript
** (docs/performance.md, "The relay: requests per event").
**
**   ob-bench-relay [-n N] [-r R] [-c K] [-w W] [-s SEED] [-x]
**
** SQS is fauxqs behind the TLS terminator of the integration tests
** (tests/integration/sqs/sqs_server.mjs, started here, on 127.0.0.1), which
** verifies every request's SigV4 signature with @smithy/signature-v4 before
** forwarding it: a cost the server pays equally for both clients.
**
** The events: a prepare process enqueues N PaymentCaptured messages and
** handles them with the payout module, leaving N unpublished outbox rows
** (MerchantPayoutCreated); it then writes the CloudEvents the relay will send
** (oncebox's own encoder, same source) with their message attributes to a
** JSON-lines file for the SDK side. Each run starts from a copy of that
** database and gets fresh queues, one per variant:
**   (a) the AWS SDK for JavaScript v3 (@aws-sdk/client-sqs, pinned in
**       tests/interop/package.json; tests/interop/sdk_publish_bench.mjs):
**       SendMessageBatch of 10 over keep-alive HTTPS, K batches in flight
**       on up to K connections (default 1, as the relay);
**   (b) oncebox's relay: ob_relay_enable + ob_run(OB_RUN_UNTIL_IDLE) on the
**       database: claims 10 rows under a lease (a transaction), sends them
**       with SendMessageBatch over one keep-alive connection, marks each
**       published (a transaction), one batch in flight; WAL with
**       synchronous=FULL, so each transaction is an fdatasync on a disk.
** Each variant runs in its own freshly exec'd process; its peak RSS is the
** ru_maxrss of that process (wait4), its rate is N / the time from the
** first send to the last reply (the relay: ob_run's duration, including
** opening the SQS client; the SDK: loading the SDK and the file not timed).
** The relay's figure includes SQLite work the SDK side does not do.
** Both queues must hold N messages afterwards, and a sample of each is
** compared byte for byte with the events file. Runs rotate which variant
** goes first; medians are reported. W events are first sent by the SDK to a
** warm-up queue so the server's JIT is warm for both.
**   (b') unless -x, and when the database directory is not tmpfs: the relay
**       again on a copy of the database in /dev/shm, where fdatasync costs
**       nothing: how much of (b)'s time is durability (attribution only;
**       the relay's rows must be durable in production). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <sqlite3.h>

#include "core/relay/cloudevents.h"
#include "oncebox.h"
#include "oncebox_payout.h"
#include "tests/bench/bench_common.h"
#include "tests/support/payment_gen.h"
#include "tests/integration/sqs/sqs_test_util.h"
#include "tests/support/testsupport.h"

#ifndef OB_BENCH_SOURCE_DIR
#define OB_BENCH_SOURCE_DIR "."
#endif

#define SOURCE "urn:oncebox:bench-terminal"
#define MAX_REPS 32
#define TMPFS_MAGIC_ 0x01021994

/* Messages: tests/support/payment_gen.c, the generator bench_engine uses. */

static void die_ob(ob_engine_t* e, int rc, const char* what) {
  fprintf(stderr, "bench: %s: %s: %s\n", what, ob_err_name(rc),
          e ? ob_errmsg(e) : "");
  exit(1);
}

/* Peak RSS of this process image, from the kernel (KiB). */
static long vm_hwm_kib(void) {
  FILE* f = fopen("/proc/self/status", "r");
  char line[256];
  long v = -1;
  if (f == NULL) return -1;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "VmHWM: %ld kB", &v) == 1) break;
  fclose(f);
  return v;
}

/* ---- child: prepare the outbox and the events file ----------------------- */

static int prepare_main(const char* db_path, const char* jsonl, int64_t n,
                        uint64_t seed) {
  ob_options_t o;
  ob_engine_t* e = NULL;
  ob_stats_t st;
  ob_payout_stats_t ps;
  char err[256];
  int rc;
  sqlite3* db;
  sqlite3_stmt* q;
  FILE* out;
  int64_t rows = 0;

  ob_options_init(&o);
  o.db_path = db_path;
  o.batch_size = 100;
  if ((rc = ob_open(&e, &o, err, sizeof err)) < 0) {
    fprintf(stderr, "bench: open: %s\n", err);
    return 1;
  }
  if ((rc = ob_register_payout(e)) < 0) die_ob(e, rc, "register");
  if ((rc = bc_enqueue_payments(e, n, seed)) < 0) die_ob(e, rc, "enqueue");
  for (;;) {
    ob_batch_result_t r;
    if ((rc = ob_run_once(e, &r)) < 0) die_ob(e, rc, "ob_run_once");
    if (r.claimed == 0) break;
  }
  if ((rc = ob_stats(e, &st)) < 0) die_ob(e, rc, "stats");
  if ((rc = ob_payout_stats(e, &ps)) < 0) die_ob(e, rc, "payout stats");
  if (ps.payouts != n || st.outbox_unpublished != n) {
    fprintf(stderr, "bench: prepare: %" PRId64 " payouts, %" PRId64
            " unpublished, want %" PRId64 "\n", ps.payouts,
            st.outbox_unpublished, n);
    return 1;
  }
  ob_close(e);

  /* The events as the relay claims them: (created_at, id) order. */
  if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK ||
      sqlite3_prepare_v2(db, "SELECT id, causation_id, event_type, aggregate_id,"
                             " payload, created_at FROM outbox_event"
                             " WHERE published_at IS NULL ORDER BY created_at, id",
                         -1, &q, NULL) != SQLITE_OK) {
    fprintf(stderr, "bench: read outbox: %s\n", sqlite3_errmsg(db));
    return 1;
  }
  out = fopen(jsonl, "w");
  if (out == NULL) {
    perror(jsonl);
    return 1;
  }
  while (sqlite3_step(q) == SQLITE_ROW) {
    ob_event_t ev;
    cJSON *line = cJSON_CreateObject(), *attrs = cJSON_CreateObject();
    char* body;
    char* text;
    memset(&ev, 0, sizeof ev);
    ev.id = (const char*)sqlite3_column_text(q, 0);
    ev.causation_id = (const char*)sqlite3_column_text(q, 1);
    ev.event_type = (const char*)sqlite3_column_text(q, 2);
    ev.aggregate_id = (const char*)sqlite3_column_text(q, 3);
    ev.payload = (const char*)sqlite3_column_text(q, 4);
    ev.payload_len = (size_t)sqlite3_column_bytes(q, 4);
    ev.created_at_ms = sqlite3_column_int64(q, 5);
    body = ob__cloudevent_encode(&ev, SOURCE, NULL);
    if (body == NULL) return 1;
    cJSON_AddStringToObject(line, "id", ev.id);
    cJSON_AddStringToObject(line, "body", body);
    cJSON_AddStringToObject(attrs, "eventType", ev.event_type);
    cJSON_AddStringToObject(attrs, "aggregateId", ev.aggregate_id);
    cJSON_AddStringToObject(attrs, "causationId", ev.causation_id);
    cJSON_AddItemToObject(line, "attributes", attrs);
    text = cJSON_PrintUnformatted(line);
    fprintf(out, "%s\n", text);
    free(text);
    free(body);
    cJSON_Delete(line);
    rows++;
  }
  sqlite3_finalize(q);
  /* One file, no WAL: copies of it start identical. */
  sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL);
  sqlite3_close(db);
  if (fclose(out) != 0 || rows != n) {
    fprintf(stderr, "bench: wrote %" PRId64 " events, want %" PRId64 "\n",
            rows, n);
    return 1;
  }
  return 0;
}

/* ---- child: the relay ------------------------------------------------------ */

typedef struct relay_result_s {
  int ok;
  int64_t published;
  double seconds;
  long vm_hwm_kib;
} relay_result_t;

static int relay_main(const char* db_path, const char* queue_url, int fd) {
  ob_options_t o;
  ob_relay_options_t ro;
  ob_engine_t* e = NULL;
  ob_stats_t st;
  relay_result_t res;
  char err[256];
  double t0;
  int rc;

  memset(&res, 0, sizeof res);
  ob_options_init(&o);
  o.db_path = db_path;
  if ((rc = ob_open(&e, &o, err, sizeof err)) < 0) {
    fprintf(stderr, "bench: relay open: %s\n", err);
    return 1;
  }
  ob_relay_options_init(&ro);
  ro.queue_url = queue_url;
  ro.source = SOURCE;
  if ((rc = ob_relay_enable(e, &ro, err, sizeof err)) < 0) {
    fprintf(stderr, "bench: ob_relay_enable: %s\n", err);
    return 1;
  }
  t0 = ts_mono_s();
  rc = ob_run(e, OB_RUN_UNTIL_IDLE, 0);
  res.seconds = ts_mono_s() - t0;
  if (rc < 0) die_ob(e, rc, "ob_run");
  if ((rc = ob_stats(e, &st)) < 0) die_ob(e, rc, "stats");
  res.published = st.outbox_published;
  res.ok = st.outbox_unpublished == 0 && st.outbox_parked == 0 &&
           st.relay_online == 1;
  if (!res.ok)
    fprintf(stderr, "bench: relay left %" PRId64 " unpublished, %" PRId64
            " parked, online %d\n", st.outbox_unpublished, st.outbox_parked,
            st.relay_online);
  ob_close(e);
  res.vm_hwm_kib = vm_hwm_kib();
  if (write(fd, &res, sizeof res) != (ssize_t)sizeof res) return 1;
  return res.ok ? 0 : 3;
}

/* ---- the parent ------------------------------------------------------------- */

typedef struct sample_s {
  double rate;
  double seconds;
  long maxrss_kib;   /* wait4 of the variant's process */
  long self_kib;     /* what the process says: VmHWM / resourceUsage().maxRSS */
} sample_t;


/* fork + exec argv (argv[0] looked up in PATH unless it has a '/'), stdout
** to out_fd if >= 0; returns the pid or -1. */
static pid_t spawn(const char* const* argv, int out_fd, int keep_fd) {
  pid_t pid;
  fflush(stdout);
  fflush(stderr);
  pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    if (out_fd >= 0) {
      dup2(out_fd, 1);
      if (out_fd != keep_fd) close(out_fd);
    }
    execvp(argv[0], (char* const*)argv);
    _exit(127);  /* never exit(): the parent's atexit handlers kill the server */
  }
  return pid;
}

static int run_prepare(const char* db, const char* jsonl, int64_t n,
                       uint64_t seed) {
  char sn[32], ss[32];
  int status;
  snprintf(sn, sizeof sn, "%" PRId64, n);
  snprintf(ss, sizeof ss, "%" PRIu64, seed);
  const char* argv[] = {"/proc/self/exe", "--prepare", db, jsonl, sn, ss, NULL};
  pid_t pid = spawn(argv, -1, -1);
  if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
      WEXITSTATUS(status) != 0) {
    fprintf(stderr, "bench: preparing the outbox failed\n");
    return -1;
  }
  return 0;
}

static int run_relay(const char* db, const char* queue_url, int64_t n,
                     sample_t* out) {
  int fds[2], status;
  char sfd[16];
  struct rusage ru;
  relay_result_t res;
  ssize_t got;
  pid_t pid;

  if (pipe(fds) != 0) return -1;
  snprintf(sfd, sizeof sfd, "%d", fds[1]);
  const char* argv[] = {"/proc/self/exe", "--relay", db, queue_url, sfd, NULL};
  pid = spawn(argv, -1, -1);
  close(fds[1]);
  if (pid < 0) {
    close(fds[0]);
    return -1;
  }
  memset(&res, 0, sizeof res);
  got = read(fds[0], &res, sizeof res);
  close(fds[0]);
  if (wait4(pid, &status, 0, &ru) != pid) return -1;
  if (got != (ssize_t)sizeof res || !WIFEXITED(status) ||
      WEXITSTATUS(status) != 0 || !res.ok || res.published != n) {
    fprintf(stderr, "bench: relay run failed (status 0x%x, published %" PRId64
            " of %" PRId64 ")\n", status, res.published, n);
    return -1;
  }
  out->seconds = res.seconds;
  out->rate = (double)n / res.seconds;
  out->maxrss_kib = ru.ru_maxrss;
  out->self_kib = res.vm_hwm_kib;
  return 0;
}

static int run_sdk(const sq_server_t* srv, const char* queue_url,
                   const char* jsonl, int in_flight, int64_t limit, int64_t n,
                   sample_t* out) {
  char script[4200], endpoint[64], sk[16], sl[32], buf[4096];
  int fds[2], status;
  size_t len = 0;
  ssize_t r;
  struct rusage ru;
  pid_t pid;
  cJSON* j;

  snprintf(script, sizeof script, "%s/tests/interop/sdk_publish_bench.mjs",
           getenv("OB_SOURCE_DIR"));
  snprintf(endpoint, sizeof endpoint, "https://localhost:%d", srv->port);
  snprintf(sk, sizeof sk, "%d", in_flight);
  snprintf(sl, sizeof sl, "%" PRId64, limit);
  if (pipe(fds) != 0) return -1;
  const char* argv[] = {"node", script, endpoint, SQ_REGION, queue_url,
                        srv->ca_file, jsonl, sk, limit > 0 ? sl : NULL, NULL};
  pid = spawn(argv, fds[1], -1);
  close(fds[1]);
  if (pid < 0) {
    close(fds[0]);
    return -1;
  }
  while (len < sizeof buf - 1 &&
         (r = read(fds[0], buf + len, sizeof buf - 1 - len)) != 0) {
    if (r < 0) {
      if (errno == EINTR) continue;
      break;
    }
    len += (size_t)r;
  }
  buf[len] = '\0';
  close(fds[0]);
  if (wait4(pid, &status, 0, &ru) != pid) return -1;
  j = cJSON_Parse(buf);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || j == NULL ||
      cJSON_GetNumberValue(cJSON_GetObjectItem(j, "events")) != (double)n ||
      cJSON_GetNumberValue(cJSON_GetObjectItem(j, "failed")) != 0) {
    fprintf(stderr, "bench: SDK run failed (status 0x%x): %s\n", status, buf);
    cJSON_Delete(j);
    return -1;
  }
  out->seconds = cJSON_GetNumberValue(cJSON_GetObjectItem(j, "seconds"));
  out->rate = (double)n / out->seconds;
  out->maxrss_kib = ru.ru_maxrss;
  out->self_kib = (long)cJSON_GetNumberValue(cJSON_GetObjectItem(j, "maxRssKiB"));
  cJSON_Delete(j);
  return 0;
}

/* ---- checking what arrived ------------------------------------------------- */

typedef struct events_s {
  cJSON* by_id;  /* id -> the line object */
} events_t;

static int load_events(const char* jsonl, events_t* ev) {
  FILE* f = fopen(jsonl, "r");
  char* line = NULL;
  size_t cap = 0;
  ssize_t len;
  ev->by_id = cJSON_CreateObject();
  if (f == NULL) return -1;
  while ((len = getline(&line, &cap, f)) > 0) {
    cJSON* j = cJSON_ParseWithLength(line, (size_t)len);
    if (j == NULL) break;
    cJSON_AddItemToObject(ev->by_id, cJSON_GetStringValue(cJSON_GetObjectItem(j, "id")), j);
  }
  free(line);
  fclose(f);
  return 0;
}

static long long queue_depth(uv_loop_t* loop, ob__sqs_client_t* c,
                             const char* queue_url) {
  static const char* const names[] = {"ApproximateNumberOfMessages"};
  ob__sqs_req_t req;
  sq_done_t done = {0, 0};
  long long v = -1;
  memset(&req, 0, sizeof req);
  req.data = &done;
  if (ob__sqs_get_queue_attributes(c, &req, queue_url, names, 1, sq_cb) != 0)
    return -1;
  if (sq_wait(loop, &req) == 0) {
    const char* s = ob__sqs_attr_get(&req.attrs, "ApproximateNumberOfMessages");
    if (s) v = atoll(s);
  }
  ob__sqs_req_cleanup(&req);
  return v;
}

/* Receive up to 10 messages (left in the queue) and compare each with the
** events file: body byte for byte, the three attributes. Returns the number
** compared, -1 on a mismatch. */
static int sample_matches(uv_loop_t* loop, ob__sqs_client_t* c,
                          const char* queue_url, const events_t* ev) {
  static const char* const mattrs[] = {"All"};
  ob__sqs_receive_t p;
  ob__sqs_req_t req;
  sq_done_t done = {0, 0};
  int compared = 0;
  memset(&p, 0, sizeof p);
  p.queue_url = queue_url;
  p.message_attribute_names = mattrs;
  p.nmessage_attribute_names = 1;
  p.max_messages = 10;
  p.visibility_timeout = 600;
  memset(&req, 0, sizeof req);
  req.data = &done;
  if (ob__sqs_receive_message(c, &req, &p, sq_cb) != 0 || sq_wait(loop, &req) != 0)
    return -1;
  for (size_t i = 0; i < req.receive.n; i++) {
    const ob__sqs_message_t* m = &req.receive.messages[i];
    cJSON* body = cJSON_ParseWithLength(m->body, m->body_len);
    const char* id = body ? cJSON_GetStringValue(cJSON_GetObjectItem(body, "id")) : NULL;
    const cJSON* want = id ? cJSON_GetObjectItem(ev->by_id, id) : NULL;
    const cJSON* wattrs = want ? cJSON_GetObjectItem(want, "attributes") : NULL;
    const char* wbody = want ? cJSON_GetStringValue(cJSON_GetObjectItem(want, "body")) : NULL;
    int ok = wbody != NULL && strlen(wbody) == m->body_len &&
             memcmp(wbody, m->body, m->body_len) == 0 &&
             m->nmessage_attributes == 3;
    for (size_t k = 0; ok && k < m->nmessage_attributes; k++) {
      const ob__sqs_attr_t* a = &m->message_attributes[k];
      const char* w = cJSON_GetStringValue(cJSON_GetObjectItem(wattrs, a->name));
      ok = w != NULL && strlen(w) == a->value_len &&
           memcmp(w, a->value, a->value_len) == 0;
    }
    cJSON_Delete(body);
    if (!ok) {
      fprintf(stderr, "bench: a message in %s differs from the events file: "
              "%.*s\n", queue_url, (int)m->body_len, m->body);
      compared = -1;
      break;
    }
    compared++;
  }
  ob__sqs_req_cleanup(&req);
  return compared;
}

/* ---- summary ------------------------------------------------------------------ */

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

typedef struct summary_s {
  double rate, rate_min, rate_max, rss_mib, self_mib;
} summary_t;

static void summarize(const sample_t* s, int reps, summary_t* out) {
  double rate[MAX_REPS], rss[MAX_REPS], self[MAX_REPS];
  for (int i = 0; i < reps; i++) {
    rate[i] = s[i].rate;
    rss[i] = (double)s[i].maxrss_kib / 1024.0;
    self[i] = (double)s[i].self_kib / 1024.0;
  }
  qsort(rate, (size_t)reps, sizeof *rate, cmp_double);
  qsort(rss, (size_t)reps, sizeof *rss, cmp_double);
  qsort(self, (size_t)reps, sizeof *self, cmp_double);
#define MED(v) (reps % 2 ? v[reps / 2] : (v[reps / 2 - 1] + v[reps / 2]) / 2)
  out->rate = MED(rate);
  out->rss_mib = MED(rss);
  out->self_mib = MED(self);
#undef MED
  out->rate_min = rate[0];
  out->rate_max = rate[reps - 1];
}

static void usage(FILE* f) {
  fprintf(f,
          "usage: ob-bench-relay [-n N] [-r R] [-c K] [-w W] [-s SEED] [-x]\n"
          "  -n N     events per run (5000)\n"
          "  -r R     runs of each variant, medians reported (3, max %d)\n"
          "  -c K     SDK batches in flight (1, as the relay)\n"
          "  -w W     events the SDK sends to a warm-up queue first (1000; 0: none)\n"
          "  -s SEED  message generator seed (20261130)\n"
          "  -x       no extra relay row with the database on tmpfs\n"
          "Needs node >= 20 and tests/interop/node_modules (npm ci there).\n"
          "The database goes to $TMPDIR or /tmp (use a real disk); unless -x,\n"
          "the relay also runs on a copy in /dev/shm, where fsync costs nothing,\n"
          "to show how much of its time is durability.\n",
          MAX_REPS);
}

static int is_tmpfs(const char* path) {
  struct statfs sfs;
  return statfs(path, &sfs) == 0 && sfs.f_type == TMPFS_MAGIC_;
}

enum { V_SDK, V_OB, V_OB_TMPFS, NV };

int main(int argc, char** argv) {
  int64_t n = 5000, warm = 1000;
  int reps = 3, in_flight = 1, extra = 1, nv, c;
  uint64_t seed = 20261130;
  const char* why;
  sq_server_t srv;
  char *dir, *pristine, *jsonl, *run_db[NV];
  char shm_dir[64] = "";
  sample_t samples[NV][MAX_REPS];
  char* queues[MAX_REPS][NV];
  summary_t sum[NV];
  int failed = 0;
  static const char* const qname[NV] = {"sdk", "oncebox", "oncebox-tmpfs"};

  memset(queues, 0, sizeof queues);
  memset(run_db, 0, sizeof run_db);
  if (argc == 6 && strcmp(argv[1], "--prepare") == 0)
    return prepare_main(argv[2], argv[3], strtoll(argv[4], NULL, 10),
                        strtoull(argv[5], NULL, 10));
  if (argc == 5 && strcmp(argv[1], "--relay") == 0)
    return relay_main(argv[2], argv[3], atoi(argv[4]));
  while ((c = getopt(argc, argv, "n:r:c:w:s:xh")) != -1) {
    switch (c) {
      case 'n': n = strtoll(optarg, NULL, 10); break;
      case 'r': reps = atoi(optarg); break;
      case 'c': in_flight = atoi(optarg); break;
      case 'w': warm = strtoll(optarg, NULL, 10); break;
      case 's': seed = strtoull(optarg, NULL, 10); break;
      case 'x': extra = 0; break;
      case 'h': usage(stdout); return 0;
      default: usage(stderr); return 2;
    }
  }
  if (n < 10 || reps < 1 || reps > MAX_REPS || in_flight < 1 ||
      in_flight > 64 || warm < 0) {
    usage(stderr);
    return 2;
  }
  if (warm > n) warm = n;
  setenv("OB_SOURCE_DIR", OB_BENCH_SOURCE_DIR, 0);
  if ((why = sq_skip_reason()) != NULL) {
    fprintf(stderr, "ob-bench-relay: %s\n", why);
    return 1;
  }
  {
    char p[4300];
    struct stat st;
    snprintf(p, sizeof p, "%s/tests/interop/node_modules/@aws-sdk/client-sqs/package.json",
             getenv("OB_SOURCE_DIR"));
    if (stat(p, &st) != 0) {
      fprintf(stderr, "ob-bench-relay: %s missing (run: cd %s/tests/interop && npm ci)\n",
              p, getenv("OB_SOURCE_DIR"));
      return 1;
    }
  }

  dir = ts_mkdtemp("bench-relay");
  pristine = ts_path(dir, "outbox.db");
  run_db[V_OB] = ts_path(dir, "run.db");
  jsonl = ts_path(dir, "events.jsonl");
  if (extra && !is_tmpfs(dir) && is_tmpfs("/dev/shm")) {
    snprintf(shm_dir, sizeof shm_dir, "/dev/shm/oncebox-bench-relay-XXXXXX");
    if (mkdtemp(shm_dir) == NULL) shm_dir[0] = '\0';
    else run_db[V_OB_TMPFS] = ts_path(shm_dir, "run.db");
  }
  nv = run_db[V_OB_TMPFS] ? 3 : 2;

  printf("oncebox %s relay benchmark, SQLite %s, node ", ob_version(),
         sqlite3_libversion());
  fflush(stdout);
  if (system("node --version") != 0) printf("?\n");
  printf("%" PRId64 " events per run, %d run%s of each variant (order rotates), "
         "medians; seed %" PRIu64 "\n", n, reps, reps > 1 ? "s" : "", seed);
  printf("database in %s%s; WAL, synchronous=FULL\n", dir,
         is_tmpfs(dir) ? " (tmpfs: the relay's fsyncs are free here, the "
                         "figures are NOT meaningful)" : "");
  if (nv == 3) printf("attribution row: a copy in %s (tmpfs)\n", shm_dir);
  fflush(stdout);

  if (run_prepare(pristine, jsonl, n, seed) != 0 ||
      sq_server_start(&srv, "bench-relay-srv", NULL) != 0) {
    if (shm_dir[0]) rmdir(shm_dir);
    ts_rmdir(dir);
    return 1;
  }
  {
    char url[64];
    snprintf(url, sizeof url, "https://localhost:%d", srv.port);
    setenv("AWS_ENDPOINT_URL_SQS", url, 1);
  }
  setenv("AWS_ACCESS_KEY_ID", SQ_AKID, 1);
  setenv("AWS_SECRET_ACCESS_KEY", SQ_SECRET, 1);
  setenv("AWS_REGION", SQ_REGION, 1);
  setenv("AWS_CA_BUNDLE", srv.ca_file, 1);
  unsetenv("AWS_PROFILE");
  unsetenv("AWS_SESSION_TOKEN");
  unsetenv("AWS_CONFIG_FILE");
  unsetenv("AWS_SHARED_CREDENTIALS_FILE");

  if (warm > 0) {
    sample_t w;
    char* q = sq_create_queue(&srv, "bench-warmup", NULL);
    if (q == NULL || run_sdk(&srv, q, jsonl, in_flight, warm, warm, &w) != 0) {
      free(q);
      failed = 1;
      goto out;
    }
    printf("warm-up: %" PRId64 " events through the SDK to the server (not counted)\n",
           warm);
    free(q);
  }

  for (int r = 0; r < reps && !failed; r++) {
    for (int v = 0; v < nv && !failed; v++) {
      char name[64];
      snprintf(name, sizeof name, "bench-%s-%d", qname[v], r);
      queues[r][v] = sq_create_queue(&srv, name, NULL);
      failed = queues[r][v] == NULL;
    }
    /* Rotate which variant goes first, so drift hurts all alike. */
    for (int k = 0; k < nv && !failed; k++) {
      int v = (k + r) % nv;
      if (v == V_SDK) {
        failed = run_sdk(&srv, queues[r][v], jsonl, in_flight, 0, n,
                         &samples[v][r]) != 0;
      } else {
        bc_remove_db(run_db[v]);
        failed = bc_copy_file(pristine, run_db[v]) != 0 ||
                 run_relay(run_db[v], queues[r][v], n, &samples[v][r]) != 0;
        bc_remove_db(run_db[v]);
      }
    }
    if (!failed) {
      printf("run %d: SDK %.0f events/s (%.1f MiB), oncebox %.0f events/s "
             "(%.1f MiB)", r + 1, samples[V_SDK][r].rate,
             samples[V_SDK][r].maxrss_kib / 1024.0, samples[V_OB][r].rate,
             samples[V_OB][r].maxrss_kib / 1024.0);
      if (nv == 3)
        printf(", oncebox on tmpfs %.0f events/s", samples[V_OB_TMPFS][r].rate);
      printf("\n");
    }
    fflush(stdout);
  }
  if (failed) goto out;

  /* What arrived: N messages in every queue; samples equal the file. */
  {
    uv_loop_t loop;
    sq_clock_t clock;
    ob__sqs_client_config_t cfg;
    ob__sqs_client_t* cl = NULL;
    events_t ev;
    char err[256] = "";
    int compared = 0;
    uv_loop_init(&loop);
    sq_clock_init(&clock, 0, -1);
    sq_client_config(&srv, &cfg, SQ_SECRET, &clock.clock);
    if (ob__sqs_client_open(&cl, &loop, &cfg, err, sizeof err) != 0 ||
        load_events(jsonl, &ev) != 0) {
      fprintf(stderr, "bench: cannot check the queues: %s\n", err);
      failed = 1;
      goto out;
    }
    for (int r = 0; r < reps && !failed; r++)
      for (int v = 0; v < nv && !failed; v++) {
        long long d = queue_depth(&loop, cl, queues[r][v]);
        int s = sample_matches(&loop, cl, queues[r][v], &ev);
        if (d != n || s < 1) {
          fprintf(stderr, "bench: %s holds %lld messages (want %" PRId64
                  "), sample check %d\n", queues[r][v], d, n, s);
          failed = 1;
        }
        compared += s;
      }
    ob__sqs_client_close(cl, NULL, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    cJSON_Delete(ev.by_id);
    if (failed) goto out;
    printf("checked: every queue holds %" PRId64 " messages; %d sampled "
           "messages equal the events file (body bytes, attributes)\n",
           n, compared);
  }

  for (int v = 0; v < nv; v++) summarize(samples[v], reps, &sum[v]);
  printf("\nrelay throughput to fauxqs over TLS with keep-alive (the relay: one "
         "connection;\nthe SDK: %d), SendMessageBatch of 10\n", in_flight);
  printf("  %-50s %9s %15s %10s\n", "variant", "events/s", "(min-max)",
         "peak RSS");
  for (int v = 0; v < nv; v++) {
    char label[96], range[40];
    if (v == V_SDK)
      snprintf(label, sizeof label, "(a) AWS SDK for JS v3, %d batch%s in flight",
               in_flight, in_flight > 1 ? "es" : "");
    else if (v == V_OB)
      snprintf(label, sizeof label, "(b) oncebox relay, 1 batch in flight");
    else
      snprintf(label, sizeof label, "(b') the same, database on tmpfs");
    snprintf(range, sizeof range, "(%.0f-%.0f)", sum[v].rate_min,
             sum[v].rate_max);
    printf("  %-50s %9.0f %15s %6.1f MiB\n", label, sum[v].rate, range,
           sum[v].rss_mib);
    if (v == V_OB || v == V_OB_TMPFS)
      printf("  %-50s %9.2f %15s %6.3f\n",
             v == V_OB ? "    ratio (b)/(a)" : "    ratio (b')/(a)",
             sum[v].rate / sum[V_SDK].rate, "",
             sum[v].rss_mib / sum[V_SDK].rss_mib);
  }
  printf("  oncebox relay: x%.2f the SDK's rate in 1/%.1f of its peak memory\n",
         sum[V_OB].rate / sum[V_SDK].rate, sum[V_SDK].rss_mib / sum[V_OB].rss_mib);
  printf("\nevents/s: N / (first send .. last reply); the relay's includes, per "
         "batch of 10,\na claim transaction and a mark-published transaction "
         "on SQLite (WAL,\nsynchronous=NORMAL for this bookkeeping, docs/decisions/0008), "
         "the SDK keeps no records.\n(b') on tmpfs shows the relay without the "
         "fsync cost: attribution only.\npeak RSS: ru_maxrss (wait4) of the "
         "variant's own freshly exec'd process;\nself-reported: oncebox VmHWM "
         "%.1f MiB, node process.resourceUsage().maxRSS %.1f MiB.\n"
         "Server: fauxqs + a TLS terminator verifying every SigV4 signature "
         "with\n@smithy/signature-v4 (same cost for both clients), on this "
         "machine (%ld cores),\ncompeting with the client for CPU.\n",
         sum[V_OB].self_mib, sum[V_SDK].self_mib, sysconf(_SC_NPROCESSORS_ONLN));

out:
  sq_server_stop(&srv);
  for (int r = 0; r < reps; r++)
    for (int v = 0; v < NV; v++) free(queues[r][v]);
  for (int v = 0; v < NV; v++) {
    if (run_db[v]) bc_remove_db(run_db[v]);
    free(run_db[v]);
  }
  if (shm_dir[0]) rmdir(shm_dir);
  ts_rmdir(dir);
  free(pristine);
  free(jsonl);
  return failed ? 1 : 0;
}
