/* SPDX-License-Identifier: Apache-2.0 */
/* ob-bench-relay: the outbox relay against the AWS SDK for JavaScript
** (docs/performance.md, "The relay: requests per event").
**
**   ob-bench-relay [-n N] [-r R] [-c K] [-w W] [-s SEED] [-x]
**
** SQS is fauxqs behind the TLS terminator of the integration tests
** (tests/integration/sqs/sqs_server.mjs, started here, on 127.0.0.1), which
** verifies every request's SigV4 signature with @smithy/signature-v4 before
** forwarding it: a cost the server pays equally for both clients. It sets
** TCP_NODELAY on every connection it accepts and on its connections to
** fauxqs, so Nagle's algorithm delays neither client's replies.
**
** The events: a prepare process enqueues N PaymentCaptured messages and
** handles them with the payout module, leaving N unpublished outbox rows
** (MerchantPayoutCreated); it then writes the CloudEvents the relay will send
** (oncebox's own encoder, same source) with their message attributes to a
** JSON-lines file for the SDK side (about 720 bytes an event: 72 MB for
** 100,000; the prepare takes about 10 s there, in a few MiB). Each run
** starts from a copy of that database and gets fresh queues, one per
** variant:
**   (a) the AWS SDK for JavaScript v3 (@aws-sdk/client-sqs, pinned in
**       tests/interop/package.json; tests/interop/sdk_publish_bench.mjs):
**       SendMessageBatch of 10 over keep-alive HTTPS, K batches in flight
**       on up to K connections (default 1, as the relay); it reads the
**       events file 100 batches at a time as it goes, and those reads are
**       taken out of its time and CPU;
**   (b) oncebox's relay: ob_relay_enable + ob_run(OB_RUN_UNTIL_IDLE) on the
**       database: claims 10 rows under a lease (a transaction), sends them
**       with SendMessageBatch over one keep-alive connection, marks each
**       published (a transaction), one batch in flight; WAL, and these
**       two bookkeeping transactions commit at synchronous=NORMAL
**       (docs/decisions/0008): no fdatasync each, the WAL's checkpoints
**       sync.
** Each variant runs in its own freshly exec'd process. Per run and variant:
**   events/s: N / the time from the first send to the last reply (the
**     relay: ob_run's duration, including opening the SQS client; the SDK:
**     loading the SDK not timed, reading the file taken out);
**   requests/event: counted by the terminator for the variant's queue
**     (GET /_test/stats, "queues"): every SQS request that named it, so a
**     retry or any other call shows; without retries both make exactly
**     ceil(N/10) SendMessageBatch requests and nothing else, which the bench
**     checks (a warning, not a failure, if not: retries are data);
**   CPU us/event: user + system CPU of the variant's process, every thread,
**     over the timed part only, / N: the relay getrusage(RUSAGE_SELF)
**     around ob_run, the SDK process.cpuUsage() around its sends less the
**     reads of the events file. So Node's start-up and loading the SDK
**     (several hundred ms of CPU) are not charged to the SDK per event; the
**     whole process (wait4) is printed too, for both;
**   peak RSS: ru_maxrss (wait4) of that process;
**   server CPU us/event: the CPU of the server's node process (terminator
**     and fauxqs in one, /proc/PID/task/ * /stat) over the variant's whole
**     run / N: what each client's requests cost the server, which shares
**     the machine's cores with the client.
** The relay's figures include SQLite work the SDK side does not do.
** Right after each variant its queue must hold N messages, and up to 10 of
** them are compared byte for byte with the events file; the queue is then
** purged (POST /_test/purge) so that fauxqs does not hold R x 3 x N
** messages. Runs rotate which variant goes first; medians are reported. W
** events are first sent by the SDK to a warm-up queue so the server's JIT
** is warm for both.
**   (b') unless -x, and when the database directory is not tmpfs: the relay
**       again on a copy of the database in /dev/shm, where the disk costs
**       nothing: how much of (b)'s time is the disk (attribution only; the
**       relay's rows must be durable in production). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
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

static double cpu_s(const struct rusage* ru) {
  return (double)ru->ru_utime.tv_sec + ru->ru_utime.tv_usec / 1e6 +
         (double)ru->ru_stime.tv_sec + ru->ru_stime.tv_usec / 1e6;
}

/* ---- child: prepare the outbox and the events file ----------------------- */

static int prepare_main(const char* db_path, const char* jsonl, int64_t n,
                        uint64_t seed, int fd) {
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

  /* The events as the relay claims them: (created_at, id) order. Streamed:
  ** one row and one line in memory at a time. */
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
    /* "id" first: the parent's index of the file reads it at the start of
    ** the line (cJSON keeps the order of insertion). */
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
  if (write(fd, &rows, sizeof rows) != (ssize_t)sizeof rows) return 1;
  return 0;
}

/* ---- child: the relay ------------------------------------------------------ */

typedef struct relay_result_s {
  int ok;
  int64_t published;
  double seconds;
  double cpu_s;       /* this process, every thread, over ob_run */
  long vm_hwm_kib;
} relay_result_t;

static int relay_main(const char* db_path, const char* queue_url, int fd) {
  ob_options_t o;
  ob_relay_options_t ro;
  ob_engine_t* e = NULL;
  ob_stats_t st;
  relay_result_t res;
  struct rusage ru0, ru1;
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
  getrusage(RUSAGE_SELF, &ru0);
  t0 = ts_mono_s();
  rc = ob_run(e, OB_RUN_UNTIL_IDLE, 0);
  res.seconds = ts_mono_s() - t0;
  getrusage(RUSAGE_SELF, &ru1);
  res.cpu_s = cpu_s(&ru1) - cpu_s(&ru0);
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

/* --child prepare DB JSONL N SEED FD | --child relay DB QUEUE_URL FD */
static int child_main(int argc, char** argv) {
  if (argc == 8 && strcmp(argv[2], "prepare") == 0)
    return prepare_main(argv[3], argv[4], strtoll(argv[5], NULL, 10),
                        strtoull(argv[6], NULL, 10), atoi(argv[7]));
  if (argc == 6 && strcmp(argv[2], "relay") == 0)
    return relay_main(argv[3], argv[4], atoi(argv[5]));
  return 2;
}

/* ---- the parent ------------------------------------------------------------- */

typedef struct sample_s {
  double rate;
  double seconds;
  double cpu_s;        /* the timed part (see the header comment) */
  double proc_cpu_s;   /* the whole process, wait4 */
  long maxrss_kib;     /* wait4 of the variant's process */
  long self_kib;       /* what the process says: VmHWM / resourceUsage().maxRSS */
  /* The terminator's counts for the variant's queue. */
  int64_t requests, batches, entries, not_ok;
  double server_cpu_s;  /* the server's node process over the variant's run */
} sample_t;

static int run_prepare(const char* db, const char* jsonl, int64_t n,
                       uint64_t seed) {
  char sn[32], ss[32];
  int64_t rows = 0;
  snprintf(sn, sizeof sn, "%" PRId64, n);
  snprintf(ss, sizeof ss, "%" PRIu64, seed);
  const char* args[] = {"prepare", db, jsonl, sn, ss, NULL};
  if (bc_run_child("ob-bench-relay", args, &rows, sizeof rows, NULL, NULL,
                   "preparing the outbox") != 0 || rows != n)
    return -1;
  return 0;
}

static int run_relay(const char* db, const char* queue_url, int64_t n,
                     sample_t* out) {
  struct rusage ru;
  relay_result_t res;
  int status = 0;
  const char* args[] = {"relay", db, queue_url, NULL};
  int rc = bc_run_child("ob-bench-relay", args, &res, sizeof res, &ru, &status,
                        "the relay run");
  if (rc != 0 || !res.ok || res.published != n) {
    fprintf(stderr, "bench: relay run failed (status 0x%x, published %" PRId64
            " of %" PRId64 ")\n", status, res.published, n);
    return -1;
  }
  out->seconds = res.seconds;
  out->rate = (double)n / res.seconds;
  out->cpu_s = res.cpu_s;
  out->proc_cpu_s = cpu_s(&ru);
  out->maxrss_kib = ru.ru_maxrss;
  out->self_kib = res.vm_hwm_kib;
  return 0;
}

/* node SCRIPT ..., its stdout into buf; waits with wait4 into *ru. The exit
** status, or -1. */
static int run_node(const char* const* argv, char* buf, size_t cap,
                    struct rusage* ru) {
  int fds[2], status;
  size_t len = 0;
  ssize_t r;
  pid_t pid;

  if (pipe(fds) != 0) return -1;
  fflush(stdout);
  fflush(stderr);
  pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return -1;
  }
  if (pid == 0) {
    close(fds[0]);
    dup2(fds[1], 1);
    close(fds[1]);
    execvp(argv[0], (char* const*)argv);
    _exit(127);  /* never exit(): the parent's atexit handlers kill the server */
  }
  close(fds[1]);
  while (len < cap - 1 && (r = read(fds[0], buf + len, cap - 1 - len)) != 0) {
    if (r < 0) {
      if (errno == EINTR) continue;
      break;
    }
    len += (size_t)r;
  }
  buf[len] = '\0';
  close(fds[0]);
  if (wait4(pid, &status, 0, ru) != pid) return -1;
  return status;
}

static double num(const cJSON* j, const char* name) {
  return cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(j, name));
}

static int run_sdk(const sq_server_t* srv, const char* queue_url,
                   const char* jsonl, int in_flight, int64_t limit, int64_t n,
                   sample_t* out) {
  char script[4200], endpoint[64], sk[16], sl[32], buf[4096];
  struct rusage ru;
  int status;
  cJSON* j;

  snprintf(script, sizeof script, "%s/tests/interop/sdk_publish_bench.mjs",
           getenv("OB_SOURCE_DIR"));
  snprintf(endpoint, sizeof endpoint, "https://localhost:%d", srv->port);
  snprintf(sk, sizeof sk, "%d", in_flight);
  snprintf(sl, sizeof sl, "%" PRId64, limit);
  const char* argv[] = {"node", script, endpoint, SQ_REGION, queue_url,
                        srv->ca_file, jsonl, sk, limit > 0 ? sl : NULL, NULL};
  status = run_node(argv, buf, sizeof buf, &ru);
  j = cJSON_Parse(buf);
  if (status < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
      j == NULL || num(j, "events") != (double)n || num(j, "failed") != 0) {
    fprintf(stderr, "bench: SDK run failed (status 0x%x): %s\n", status, buf);
    cJSON_Delete(j);
    return -1;
  }
  out->seconds = num(j, "seconds");
  out->rate = (double)n / out->seconds;
  out->cpu_s = num(j, "cpuUs") / 1e6;
  out->proc_cpu_s = cpu_s(&ru);
  out->maxrss_kib = ru.ru_maxrss;
  out->self_kib = (long)num(j, "maxRssKiB");
  cJSON_Delete(j);
  return 0;
}

/* ---- what the server saw and what arrived ---------------------------------- */

/* The terminator's counts for one queue (sqs_server.mjs, GET /_test/stats). */
static int server_counts(const sq_server_t* srv, const char* queue_url,
                         sample_t* out) {
  int st = 0;
  char* body = sq_control(srv, "/_test/stats", NULL, &st);
  cJSON* j = body ? cJSON_Parse(body) : NULL;
  const cJSON* q = cJSON_GetObjectItemCaseSensitive(
      cJSON_GetObjectItemCaseSensitive(j, "queues"), queue_url);
  int rc = -1;
  if (st == 200 && cJSON_IsObject(q)) {
    out->requests = (int64_t)num(q, "requests");
    out->entries = (int64_t)num(q, "entries");
    out->not_ok = (int64_t)num(q, "notOk");
    out->batches = (int64_t)num(cJSON_GetObjectItemCaseSensitive(q, "byTarget"),
                                "AmazonSQS.SendMessageBatch");
    rc = 0;
  } else {
    fprintf(stderr, "bench: the server has no counts for %s\n", queue_url);
  }
  cJSON_Delete(j);
  free(body);
  return rc;
}

/* Where each event's line starts in the events file, by id: a few MiB for
** 100,000 events, where the parsed file would be hundreds. */
typedef struct ev_ref_s {
  char id[OB_UUID_BUFLEN];
  long offset;
} ev_ref_t;

typedef struct events_s {
  FILE* f;
  ev_ref_t* refs;
  size_t n;
} events_t;

static int cmp_ref(const void* a, const void* b) {
  return strcmp(((const ev_ref_t*)a)->id, ((const ev_ref_t*)b)->id);
}

static int index_events(const char* jsonl, int64_t n, events_t* ev) {
  static const char prefix[] = "{\"id\":\"";
  char* line = NULL;
  size_t cap = 0;
  ssize_t len;
  long at = 0;
  memset(ev, 0, sizeof *ev);
  ev->f = fopen(jsonl, "r");
  ev->refs = calloc((size_t)n, sizeof *ev->refs);
  if (ev->f == NULL || ev->refs == NULL) return -1;
  while ((len = getline(&line, &cap, ev->f)) > 0) {
    const char* id = line + sizeof prefix - 1;
    const char* end = strchr(id, '"');
    if (ev->n == (size_t)n || strncmp(line, prefix, sizeof prefix - 1) != 0 ||
        end == NULL || end - id >= OB_UUID_BUFLEN) {
      fprintf(stderr, "bench: %s: unexpected line at offset %ld\n", jsonl, at);
      free(line);
      return -1;
    }
    memcpy(ev->refs[ev->n].id, id, (size_t)(end - id));
    ev->refs[ev->n++].offset = at;
    at += (long)len;
  }
  free(line);
  qsort(ev->refs, ev->n, sizeof *ev->refs, cmp_ref);
  return ev->n == (size_t)n ? 0 : -1;
}

static void events_free(events_t* ev) {
  if (ev->f) fclose(ev->f);
  free(ev->refs);
}

/* The events file's line for this id, parsed; NULL if none. */
static cJSON* event_line(const events_t* ev, const char* id) {
  ev_ref_t key;
  const ev_ref_t* r;
  char* line = NULL;
  size_t cap = 0;
  ssize_t len;
  cJSON* j = NULL;
  if (strlen(id) >= sizeof key.id) return NULL;
  strcpy(key.id, id);
  r = bsearch(&key, ev->refs, ev->n, sizeof *ev->refs, cmp_ref);
  if (r == NULL || fseek(ev->f, r->offset, SEEK_SET) != 0) return NULL;
  if ((len = getline(&line, &cap, ev->f)) > 0)
    j = cJSON_ParseWithLength(line, (size_t)len);
  free(line);
  return j;
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
    cJSON* want = id ? event_line(ev, id) : NULL;
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
    cJSON_Delete(want);
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

/* Right after a variant: the server's counts for its queue, the queue holds
** n messages, a sample equals the file; then the queue is purged. A client
** per check: an idle keep-alive connection would not outlive a long run.
** Returns the messages compared, or -1. */
static int check_queue(const sq_server_t* srv, const char* queue_url,
                       int64_t n, const events_t* ev, sample_t* s) {
  uv_loop_t loop;
  sq_clock_t clock;
  ob__sqs_client_config_t cfg;
  ob__sqs_client_t* cl = NULL;
  char err[256] = "", json[512];
  long long depth = -1;
  int compared = -1, st = 0;
  char* r;

  if (server_counts(srv, queue_url, s) != 0) return -1;
  uv_loop_init(&loop);
  sq_clock_init(&clock, 0, -1);
  sq_client_config(srv, &cfg, SQ_SECRET, &clock.clock);
  if (ob__sqs_client_open(&cl, &loop, &cfg, err, sizeof err) != 0) {
    fprintf(stderr, "bench: cannot check the queues: %s\n", err);
    uv_loop_close(&loop);
    return -1;
  }
  depth = queue_depth(&loop, cl, queue_url);
  if (depth == n) compared = sample_matches(&loop, cl, queue_url, ev);
  ob__sqs_client_close(cl, NULL, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  uv_loop_close(&loop);
  if (depth != n || compared < 1) {
    fprintf(stderr, "bench: %s holds %lld messages (want %" PRId64
            "), sample check %d\n", queue_url, depth, n, compared);
    return -1;
  }
  snprintf(json, sizeof json, "{\"QueueUrl\":\"%s\"}", queue_url);
  r = sq_control(srv, "/_test/purge", json, &st);
  free(r);
  if (st != 200) {
    fprintf(stderr, "bench: purging %s: HTTP %d\n", queue_url, st);
    return -1;
  }
  return compared;
}

/* ---- summary ------------------------------------------------------------------ */

typedef struct summary_s {
  double rate, rate_min, rate_max, rss_mib, self_mib;
  double req_per_event, cpu_us, proc_cpu_us, server_cpu_us;   /* per event */
} summary_t;

static void summarize(const sample_t* s, int reps, int64_t n, summary_t* out) {
  double rate[MAX_REPS], rss[MAX_REPS], self[MAX_REPS], req[MAX_REPS],
      cpu[MAX_REPS], pcpu[MAX_REPS], scpu[MAX_REPS];
  for (int i = 0; i < reps; i++) {
    rate[i] = s[i].rate;
    rss[i] = (double)s[i].maxrss_kib / 1024.0;
    self[i] = (double)s[i].self_kib / 1024.0;
    req[i] = (double)s[i].requests / (double)n;
    cpu[i] = s[i].cpu_s * 1e6 / (double)n;
    pcpu[i] = s[i].proc_cpu_s * 1e6 / (double)n;
    scpu[i] = s[i].server_cpu_s * 1e6 / (double)n;
  }
  out->rss_mib = bc_median(rss, reps);
  out->self_mib = bc_median(self, reps);
  out->req_per_event = bc_median(req, reps);
  out->cpu_us = bc_median(cpu, reps);
  out->proc_cpu_us = bc_median(pcpu, reps);
  out->server_cpu_us = bc_median(scpu, reps);
  out->rate = bc_median(rate, reps);  /* sorts rate */
  out->rate_min = rate[0];
  out->rate_max = rate[reps - 1];
}

static void usage(FILE* f) {
  fprintf(f,
          "usage: ob-bench-relay [-n N] [-r R] [-c K] [-w W] [-s SEED] [-x]\n"
          "  -n N     events per run (5000; -n 100000 for the backlog of the docs)\n"
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

enum { V_SDK, V_OB, V_OB_TMPFS, NV };

static void print_run(int r, int nv, int64_t n, sample_t s[NV][MAX_REPS]) {
  static const char* const name[NV] = {"SDK", "oncebox", "oncebox on tmpfs"};
  printf("run %d:", r + 1);
  for (int v = 0; v < nv; v++)
    printf("%s %s %.0f events/s, %.3f req/event, %.1f us/event CPU (server "
           "%.1f), %.1f MiB", v ? ";" : "", name[v], s[v][r].rate,
           (double)s[v][r].requests / (double)n, s[v][r].cpu_s * 1e6 / (double)n,
           s[v][r].server_cpu_s * 1e6 / (double)n, s[v][r].maxrss_kib / 1024.0);
  printf("; CPU oncebox/SDK %.3f\n", s[V_OB][r].cpu_s / s[V_SDK][r].cpu_s);
  fflush(stdout);
}

int main(int argc, char** argv) {
  int64_t n = 5000, warm = 1000, want_batches;
  int reps = 3, in_flight = 1, extra = 1, nv, c;
  uint64_t seed = 20261130;
  const char* why;
  sq_server_t srv;
  char *dir, *pristine, *jsonl, *run_db[NV];
  char shm_dir[64] = "";
  sample_t samples[NV][MAX_REPS];
  summary_t sum[NV];
  events_t ev;
  int failed = 0, compared = 0, server_up = 0, extra_requests = 0;
  double t0, cpu_ratio[MAX_REPS];
  struct stat sb;
  static const char* const qname[NV] = {"sdk", "oncebox", "oncebox-tmpfs"};

  memset(samples, 0, sizeof samples);
  memset(run_db, 0, sizeof run_db);
  memset(&ev, 0, sizeof ev);
  if (argc >= 3 && strcmp(argv[1], "--child") == 0)
    return child_main(argc, argv);
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
  want_batches = (n + 9) / 10;
  setenv("OB_SOURCE_DIR", OB_BENCH_SOURCE_DIR, 0);
  if ((why = sq_skip_reason()) != NULL) {
    fprintf(stderr, "ob-bench-relay: %s\n", why);
    return 1;
  }
  {
    char p[4300];
    snprintf(p, sizeof p, "%s/tests/interop/node_modules/@aws-sdk/client-sqs/package.json",
             getenv("OB_SOURCE_DIR"));
    if (stat(p, &sb) != 0) {
      fprintf(stderr, "ob-bench-relay: %s missing (run: cd %s/tests/interop && npm ci)\n",
              p, getenv("OB_SOURCE_DIR"));
      return 1;
    }
  }

  dir = ts_mkdtemp("bench-relay");
  pristine = ts_path(dir, "outbox.db");
  run_db[V_OB] = ts_path(dir, "run.db");
  jsonl = ts_path(dir, "events.jsonl");
  if (extra && !bc_is_tmpfs(dir) && bc_is_tmpfs("/dev/shm")) {
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
  printf("database in %s%s; WAL, the relay's bookkeeping at synchronous=NORMAL\n", dir,
         bc_is_tmpfs(dir) ? " (tmpfs: the relay's fsyncs are free here, the "
                            "figures are NOT meaningful)" : "");
  if (nv == 3) printf("attribution row: a copy in %s (tmpfs)\n", shm_dir);
  fflush(stdout);

  t0 = ts_mono_s();
  if (run_prepare(pristine, jsonl, n, seed) != 0 ||
      index_events(jsonl, n, &ev) != 0) {
    failed = 1;
    goto out;
  }
  if (stat(jsonl, &sb) == 0)
    printf("prepared %" PRId64 " outbox rows and the events file (%.1f MiB) in "
           "%.1f s\n", n, (double)sb.st_size / 1048576.0, ts_mono_s() - t0);
  if (sq_server_start(&srv, "bench-relay-srv", NULL) != 0) {
    failed = 1;
    goto out;
  }
  server_up = 1;
  bc_point_aws_at(srv.port, srv.ca_file, SQ_AKID, SQ_SECRET, SQ_REGION);

  if (warm > 0) {
    sample_t w;
    char* q = sq_create_queue(&srv, "bench-warmup", NULL);
    char json[512];
    int st = 0;
    memset(&w, 0, sizeof w);
    if (q == NULL || run_sdk(&srv, q, jsonl, in_flight, warm, warm, &w) != 0) {
      free(q);
      failed = 1;
      goto out;
    }
    snprintf(json, sizeof json, "{\"QueueUrl\":\"%s\"}", q);
    free(sq_control(&srv, "/_test/purge", json, &st));
    printf("warm-up: %" PRId64 " events through the SDK to the server (not counted)\n",
           warm);
    free(q);
  }

  for (int r = 0; r < reps && !failed; r++) {
    /* Rotate which variant goes first, so drift hurts all alike. */
    for (int k = 0; k < nv && !failed; k++) {
      int v = (k + r) % nv, got;
      sample_t* s = &samples[v][r];
      bc_proc_cpu_t srv0, srv1;
      char name[64];
      char* q;
      snprintf(name, sizeof name, "bench-%s-%d", qname[v], r);
      q = sq_create_queue(&srv, name, NULL);
      if (q == NULL) {
        failed = 1;
        break;
      }
      if (v != V_SDK) {
        bc_remove_db(run_db[v]);
        failed = bc_copy_file(pristine, run_db[v]) != 0;
      }
      failed = failed || bc_proc_cpu(srv.proc->pid, &srv0) != 0;
      if (!failed && v == V_SDK)
        failed = run_sdk(&srv, q, jsonl, in_flight, 0, n, s) != 0;
      else if (!failed)
        failed = run_relay(run_db[v], q, n, s) != 0;
      if (v != V_SDK) bc_remove_db(run_db[v]);
      failed = failed || bc_proc_cpu(srv.proc->pid, &srv1) != 0;
      s->server_cpu_s = srv1.cpu_s - srv0.cpu_s;
      if (!failed) {
        got = check_queue(&srv, q, n, &ev, s);
        failed = got < 0;
        compared += got;
      }
      if (!failed && (s->batches != want_batches || s->requests != want_batches ||
                      s->entries != n || s->not_ok != 0)) {
        /* Retries or other calls: data, not a failure; the queue holds n. */
        fprintf(stderr, "bench: warning: %s: %" PRId64 " requests, %" PRId64
                " SendMessageBatch with %" PRId64 " entries, %" PRId64
                " not 2xx (want %" PRId64 " batches, nothing else)\n", name,
                s->requests, s->batches, s->entries, s->not_ok, want_batches);
        extra_requests = 1;
      }
      free(q);
    }
    if (!failed) print_run(r, nv, n, samples);
  }
  if (failed) goto out;
  printf("checked after each variant: its queue holds %" PRId64 " messages; "
         "%d sampled messages equal\nthe events file (body bytes, attributes); "
         "%s\n", n, compared,
         extra_requests ? "SOME RUNS MADE OTHER REQUESTS THAN ceil(N/10) "
                          "SendMessageBatch (see the warnings)"
                        : "the server counted exactly ceil(N/10) SendMessageBatch "
                          "requests per run\nand nothing else, every one 2xx");

  for (int v = 0; v < nv; v++) summarize(samples[v], reps, n, &sum[v]);
  for (int r = 0; r < reps; r++)
    cpu_ratio[r] = samples[V_OB][r].cpu_s / samples[V_SDK][r].cpu_s;
  printf("\nrelay throughput to fauxqs over TLS with keep-alive (the relay: one "
         "connection;\nthe SDK: %d), SendMessageBatch of 10, %" PRId64
         " events, medians of %d\n", in_flight, n, reps);
  printf("  %-46s  %9s  %15s  %9s  %12s  %11s  %10s  %10s\n", "variant",
         "events/s", "(min-max)", "req/event", "CPU us/event", "process CPU",
         "server CPU", "peak RSS");
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
    printf("  %-46s  %9.0f  %15s  %9.3f  %12.1f  %11.1f  %10.1f  %6.1f MiB\n",
           label, sum[v].rate, range, sum[v].req_per_event, sum[v].cpu_us,
           sum[v].proc_cpu_us, sum[v].server_cpu_us, sum[v].rss_mib);
    if (v == V_OB || v == V_OB_TMPFS)
      printf("  %-46s  %9.2f  %15s  %9.2f  %12.3f  %11.3f  %10.3f  %10.3f\n",
             v == V_OB ? "    ratio (b)/(a)" : "    ratio (b')/(a)",
             sum[v].rate / sum[V_SDK].rate, "",
             sum[v].req_per_event / sum[V_SDK].req_per_event,
             sum[v].cpu_us / sum[V_SDK].cpu_us,
             sum[v].proc_cpu_us / sum[V_SDK].proc_cpu_us,
             sum[v].server_cpu_us / sum[V_SDK].server_cpu_us,
             sum[v].rss_mib / sum[V_SDK].rss_mib);
  }
  printf("  CPU per event oncebox/SDK, run by run:");
  for (int r = 0; r < reps; r++) printf(" %.3f", cpu_ratio[r]);
  printf(" (median %.3f)\n", bc_median(cpu_ratio, reps));
  printf("  oncebox relay: x%.2f the SDK's rate, %.2f of its CPU per event, in "
         "1/%.1f of its peak memory\n", sum[V_OB].rate / sum[V_SDK].rate,
         sum[V_OB].cpu_us / sum[V_SDK].cpu_us,
         sum[V_SDK].rss_mib / sum[V_OB].rss_mib);
  printf("\nevents/s: N / (first send .. last reply); the relay's includes, per "
         "batch of 10,\na claim transaction and a mark-published transaction "
         "on SQLite (WAL,\nsynchronous=NORMAL for this bookkeeping, docs/decisions/0008), "
         "the SDK keeps no records.\n(b') on tmpfs shows the relay without the "
         "fsync cost: attribution only.\nreq/event: SQS requests the server "
         "counted for the variant's queue / N.\nCPU us/event: user + system "
         "CPU of the variant's process over the timed part / N\n(the relay: "
         "getrusage around ob_run; the SDK: process.cpuUsage() around the "
         "sends,\nthe reads of the events file taken out); process CPU: the "
         "whole process (wait4) / N,\nfor node with its start-up and loading "
         "the SDK.\nserver CPU: the server's node process (terminator + fauxqs) over the "
         "variant's run / N.\npeak RSS: ru_maxrss (wait4) of the "
         "variant's own freshly exec'd process;\nself-reported: oncebox VmHWM "
         "%.1f MiB, node process.resourceUsage().maxRSS %.1f MiB.\n"
         "Server: fauxqs + a TLS terminator verifying every SigV4 signature "
         "with\n@smithy/signature-v4 (same cost for both clients), TCP_NODELAY "
         "on its connections,\non this machine (%ld cores), competing with "
         "the client for CPU.\n",
         sum[V_OB].self_mib, sum[V_SDK].self_mib, sysconf(_SC_NPROCESSORS_ONLN));

out:
  if (server_up) sq_server_stop(&srv);
  events_free(&ev);
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
