/* SPDX-License-Identifier: Apache-2.0 */
/* oncebox demo: a day at a point-of-sale terminal, on the embedded default
** (one SQLite file, no server). Duplicate deliveries, a worker killed with
** SIGKILL mid-batch and restarted, a replay, a payment captured twice under
** two event ids, malformed messages, orders charged behind the fence
** (demo_fence.c); then the evidence. */
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "programs/oncebox/cli.h"
#include "programs/oncebox/demo.h"

#define MERCHANTS 40
#define MAX_EXTRA_DELIVERIES 3

typedef struct delivery_s {
  char id[OB_UUID_BUFLEN];
  char body[8192];
  int payment;    /* index of the payment, -1 for malformed */
  int kind;       /* DELIVERY_* */
} delivery_t;

enum { DELIVERY_FIRST, DELIVERY_REPEAT, DELIVERY_SECOND_CAPTURE, DELIVERY_BAD };

typedef struct demo_s {
  uint64_t rng;
  const char* db_path;
  int payments;
  int batch;
  delivery_t* d;
  size_t nd, cap;
  int repeats, second_captures, malformed;
  int failures;  /* expectation mismatches */
} demo_t;

static uint64_t next_rand(demo_t* s) {
  s->rng ^= s->rng >> 12;
  s->rng ^= s->rng << 25;
  s->rng ^= s->rng >> 27;
  return s->rng * 2685821657736338717ULL;
}

static void uuid4(demo_t* s, char out[OB_UUID_BUFLEN]) {
  uint64_t a = next_rand(s), b = next_rand(s);
  snprintf(out, OB_UUID_BUFLEN, "%08x-%04x-4%03x-%04x-%012llx", (unsigned)(a >> 32),
           (unsigned)((a >> 16) & 0xffff), (unsigned)(a & 0xfff),
           (unsigned)(0x8000 | ((b >> 48) & 0x3fff)),
           (unsigned long long)(b & 0xffffffffffffULL));
}

static delivery_t* add(demo_t* s, int kind, int payment) {
  if (s->nd == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 4096;
    delivery_t* d = realloc(s->d, cap * sizeof *d);
    if (d == NULL) {
      fprintf(stderr, "demo: out of memory\n");
      exit(EXIT_FAIL);
    }
    s->d = d;
    s->cap = cap;
  }
  delivery_t* d = &s->d[s->nd++];
  memset(d, 0, sizeof *d);
  d->kind = kind;
  d->payment = payment;
  return d;
}

static void say(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  fflush(stdout);
}

static void expect(demo_t* s, const char* what, long long want, long long got) {
  int ok = want == got;
  if (!ok) s->failures++;
  say("   %s %-52s expected %6lld, got %6lld\n", ok ? "ok  " : "FAIL", what,
      want, got);
}

static void expect_cb(void* ctx, const char* what, long long want,
                      long long got) {
  expect(ctx, what, want, got);
}

/* ---- the day's traffic ------------------------------------------------- */

static void generate(demo_t* s) {
  static const char* currencies[] = {"EUR", "EUR", "EUR", "GBP", "USD", "CHF"};
  char merchants[MERCHANTS][OB_UUID_BUFLEN];
  for (int m = 0; m < MERCHANTS; m++) uuid4(s, merchants[m]);

  for (int p = 0; p < s->payments; p++) {
    char payment_id[OB_UUID_BUFLEN];
    delivery_t* first = add(s, DELIVERY_FIRST, p);
    uuid4(s, first->id);
    uuid4(s, payment_id);
    snprintf(first->body, sizeof first->body,
             "{\"paymentId\":\"%s\",\"merchantId\":\"%s\","
             "\"amountInMinorUnits\":%llu,\"currency\":\"%s\"}",
             payment_id, merchants[next_rand(s) % MERCHANTS],
             (unsigned long long)(100 + next_rand(s) % 49900),
             currencies[next_rand(s) % 6]);
    /* At-least-once transports redeliver: ~18% of events come 2-4 times. */
    if (next_rand(s) % 100 < 18) {
      int extra = 1 + (int)(next_rand(s) % MAX_EXTRA_DELIVERIES);
      size_t idx = s->nd - 1;
      for (int k = 0; k < extra; k++) {
        delivery_t* r = add(s, DELIVERY_REPEAT, p);
        *r = s->d[idx];
        r->kind = DELIVERY_REPEAT;
        s->repeats++;
      }
    }
  }
  /* Arrival order is anyone's guess: shuffle the day's deliveries. */
  for (size_t i = s->nd - 1; i > 0; i--) {
    size_t j = (size_t)(next_rand(s) % (i + 1));
    delivery_t t = s->d[i];
    s->d[i] = s->d[j];
    s->d[j] = t;
  }
  /* Later, the till captures a few payments again: same payment, new event
  ** id. They come last so the original is the one that pays (were the
  ** second capture first, the original would fail instead, and every
  ** redelivery of it too, since a failed message leaves no dedup record). */
  for (int k = 0; k < 6 && k < s->payments; k++) {
    int p = (int)(next_rand(s) % (uint64_t)s->payments);
    const delivery_t* orig = NULL;
    for (size_t i = 0; i < s->nd; i++)
      if (s->d[i].payment == p && s->d[i].kind == DELIVERY_FIRST) orig = &s->d[i];
    delivery_t* dup = add(s, DELIVERY_SECOND_CAPTURE, p);
    memcpy(dup->body, orig->body, sizeof dup->body);
    uuid4(s, dup->id);
    s->second_captures++;
  }
  /* Malformed messages: each must end in the failure store with its reason. */
  {
    static const char* bad[] = {
        "this is not json",
        "{\"merchantId\":\"0f1a2b3c-4d5e-4f60-8a7b-8c9d0e1f2a3b\","
        "\"amountInMinorUnits\":100,\"currency\":\"EUR\"}",
        "{\"paymentId\":\"6c1f3a52-2f0e-4b5e-9d7a-0d6a4c1e9b11\","
        "\"merchantId\":\"0f1a2b3c-4d5e-4f60-8a7b-8c9d0e1f2a3b\","
        "\"amountInMinorUnits\":\"100\",\"currency\":\"EUR\"}",
        "{\"paymentId\":\"6c1f3a52-2f0e-4b5e-9d7a-0d6a4c1e9b12\","
        "\"merchantId\":\"0f1a2b3c-4d5e-4f60-8a7b-8c9d0e1f2a3b\","
        "\"amountInMinorUnits\":0,\"currency\":\"EUR\"}",
        "{\"paymentId\":\"6c1f3a52-2f0e-4b5e-9d7a-0d6a4c1e9b13\","
        "\"merchantId\":\"0f1a2b3c-4d5e-4f60-8a7b-8c9d0e1f2a3b\","
        "\"amountInMinorUnits\":-2500,\"currency\":\"EUR\"}",
        "{\"paymentId\":\"6c1f3a52-2f0e-4b5e-9d7a-0d6a4c1e9b14\","
        "\"merchantId\":\"0f1a2b3c-4d5e-4f60-8a7b-8c9d0e1f2a3b\","
        "\"amountInMinorUnits\":99999999999999999999,\"currency\":\"EUR\"}",
        "{\"paymentId\":\"6c1f3a52-2f0e-4b5e-9d7a-0d6a4c1e9b15\","
        "\"merchantId\":\"0f1a2b3c-4d5e-4f60-8a7b-8c9d0e1f2a3b\","
        "\"amountInMinorUnits\":100,\"currency\":\"eur\"}",
        "{\"paymentId\":\"PAY-42\","
        "\"merchantId\":\"0f1a2b3c-4d5e-4f60-8a7b-8c9d0e1f2a3b\","
        "\"amountInMinorUnits\":100,\"currency\":\"EUR\"}",
        NULL /* oversize, built below */};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
      delivery_t* m = add(s, DELIVERY_BAD, -1);
      uuid4(s, m->id);
      if (bad[k]) {
        snprintf(m->body, sizeof m->body, "%s", bad[k]);
      } else {
        int n = snprintf(m->body, sizeof m->body, "{\"note\":\"");
        memset(m->body + n, 'x', 5000);
        snprintf(m->body + n + 5000, sizeof m->body - (size_t)n - 5000, "\"}");
      }
      s->malformed++;
    }
  }
}

static int enqueue_range(ob_engine_t* e, const delivery_t* d, size_t n) {
  ob_envelope_t envs[500];
  int results[500];
  for (size_t off = 0; off < n; off += 500) {
    size_t k = n - off < 500 ? n - off : 500;
    for (size_t i = 0; i < k; i++) {
      memset(&envs[i], 0, sizeof envs[i]);
      envs[i].id = d[off + i].id;
      envs[i].type = OB_PAYOUT_MESSAGE_TYPE;
      envs[i].body = d[off + i].body;
      envs[i].body_len = strlen(d[off + i].body);
    }
    int rc = ob_enqueue_many(e, envs, k, results);
    if (rc < 0) {
      fprintf(stderr, "demo: enqueue failed: %s\n", ob_errmsg(e));
      return rc;
    }
  }
  return 0;
}

/* ---- workers ------------------------------------------------------------ */

static ob_engine_t* open_engine(demo_t* s, int batch) {
  ob_options_t o;
  ob_engine_t* e = NULL;
  char err[512];
  ob_options_init(&o);
  o.db_path = s->db_path;
  o.batch_size = batch;
  o.log_level = OB_LOG_ERROR;
  o.log_record = ob__cli_log_record;
  if (ob_open(&e, &o, err, sizeof err) < 0) {
    fprintf(stderr, "demo: cannot open %s: %s\n", s->db_path, err);
    return NULL;
  }
  ob_register_payout(e);
  return e;
}

/* A worker is a separate process, as on a terminal: the parent holds no
** database connection across fork(). */
static pid_t start_worker(demo_t* s) {
  pid_t pid;
  fflush(stdout);
  fflush(stderr);
  pid = fork();
  if (pid == 0) {
    ob_engine_t* e = open_engine(s, s->batch);
    int rc;
    if (e == NULL) _exit(EXIT_DB);
    rc = ob_run(e, OB_RUN_UNTIL_IDLE, 1);
    ob_close(e);
    _exit(rc < 0 ? EXIT_FAIL : EXIT_OK);
  }
  return pid;
}

static long long processed_now(ob_engine_t* e) {
  ob_stats_t st;
  if (ob_stats(e, &st) < 0) return -1;
  return st.processed + st.failed;
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* ---- the sink standing in for head office ------------------------------- */

typedef struct office_s {
  long long received;
  long long payout_events;
} office_t;

static int office_sink(void* arg, const ob_event_t* ev) {
  office_t* o = arg;
  o->received++;
  if (strcmp(ev->event_type, OB_PAYOUT_EVENT_TYPE) == 0) o->payout_events++;
  return 0;
}

typedef struct failed_view_s {
  int shown;
} failed_view_t;

static int show_failed(void* arg, const ob_failed_t* f) {
  failed_view_t* v = arg;
  v->shown++;
  say("   #%-3lld %-13s %.150s\n", (long long)f->id, f->error_class, f->reason);
  return 0;
}

static void print_violation(void* arg, const char* v) {
  (void)arg;
  say("   VIOLATION: %s\n", v);
}

static void demo_usage(FILE* out) {
  fprintf(out,
          "usage: oncebox demo [--db FILE] [--payments N] [--seed S] "
          "[--batch B] [--keep]\n"
          "       oncebox --db HEADOFFICE demo --fleet [--terminals N] ... "
          "(demo --fleet --help)\n\n"
          "A day at a point-of-sale terminal on one SQLite file: N payments\n"
          "(default 3000) with redeliveries, a worker killed with SIGKILL\n"
          "mid-run and restarted, a replay, a payment captured twice under\n"
          "two event ids and malformed messages; 300 orders charged behind\n"
          "the fence through a provider that loses replies (in-process, no\n"
          "server); then counts, the failure store and the invariant check.\n"
          "Exit 0 only if every expectation holds. Without --db a temporary\n"
          "database is used and removed (--keep keeps it).\n");
}

int ob__cmd_demo(cli_t* cli, int argc, char** argv) {
  static const struct option opts[] = {
      {"db", required_argument, NULL, 'd'},
      {"payments", required_argument, NULL, 'p'},
      {"seed", required_argument, NULL, 's'},
      {"batch", required_argument, NULL, 'b'},
      {"keep", no_argument, NULL, 'k'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  demo_t s;
  char tmpdir[256] = "", path[512];
  int c, keep = 0, status;
  long long seed = 20261130, killed_at = -1, v;
  int declined = 0, charged = 0;
  pid_t pid;
  ob_engine_t* e = NULL;
  ob_stats_t st;
  ob_payout_stats_t ps;
  struct timespec t0, t1;

  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--fleet") == 0) return ob__cli_demo_fleet(cli, argc, argv);
  memset(&s, 0, sizeof s);
  s.payments = 3000;
  s.batch = 16;
  s.db_path = cli->db_path;
  optind = 1;
  while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (c) {
      case 'd': s.db_path = optarg; break;
      case 'p':
        v = ob__cli_parse_count(optarg);
        if (v < 10 || v > 1000000) {
          fprintf(stderr, "oncebox demo: --payments wants 10..1000000\n");
          return EXIT_USAGE;
        }
        s.payments = (int)v;
        break;
      case 's':
        seed = ob__cli_parse_count(optarg);
        if (seed < 0) return EXIT_USAGE;
        break;
      case 'b':
        v = ob__cli_parse_count(optarg);
        if (v < 1 || v > 10000) return EXIT_USAGE;
        s.batch = (int)v;
        break;
      case 'k': keep = 1; break;
      case 'h': demo_usage(stdout); return EXIT_OK;
      default: demo_usage(stderr); return EXIT_USAGE;
    }
  }
  if (s.db_path == NULL) {
    const char* base = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/oncebox-demo-XXXXXX",
             base && *base ? base : "/tmp");
    if (mkdtemp(tmpdir) == NULL) {
      perror("mkdtemp");
      return EXIT_FAIL;
    }
    snprintf(path, sizeof path, "%s/terminal.db", tmpdir);
    s.db_path = path;
  } else {
    struct stat sb;
    if (stat(s.db_path, &sb) == 0) {
      fprintf(stderr, "oncebox demo: %s exists; the demo wants a fresh "
                      "database\n", s.db_path);
      return EXIT_USAGE;
    }
  }
  s.rng = (uint64_t)seed * 0x9E3779B97F4A7C15ULL + 1;
  clock_gettime(CLOCK_MONOTONIC, &t0);

  say("oncebox demo: a day at a point-of-sale terminal (seed %lld)\n", seed);
  say("database: %s (WAL, synchronous=FULL, mode 0600)\n\n", s.db_path);

  generate(&s);
  e = open_engine(&s, 1);
  if (e == NULL) return EXIT_DB;
  say("1. The day's traffic reaches the terminal's queue\n");
  say("   %d card payments from %d merchants arrive as %zu deliveries:\n",
      s.payments, MERCHANTS, s.nd);
  say("   %d redeliveries of events already sent (at-least-once transport),\n"
      "   %d payments captured a second time under a new event id,\n"
      "   %d malformed messages.\n",
      s.repeats, s.second_captures, s.malformed);
  if (enqueue_range(e, s.d, s.nd) < 0) goto fail;
  ob_close(e);
  e = NULL;

  say("\n2. Worker 1 starts handling (group commit, %d per transaction)\n",
      s.batch);
  pid = start_worker(&s);
  if (pid < 0) {
    perror("fork");
    goto fail;
  }
  e = open_engine(&s, 1);
  if (e == NULL) goto fail;
  for (;;) {
    long long done = processed_now(e);
    if (done >= (long long)s.payments * 35 / 100) {
      kill(pid, SIGKILL);
      killed_at = done;
      break;
    }
    if (waitpid(pid, &status, WNOHANG) == pid) {
      pid = -1;
      break;
    }
    sleep_ms(2);
  }
  if (pid > 0) {
    waitpid(pid, &status, 0);
    say("   kill -9 worker 1 (pid %d) after %lld events were committed;\n"
        "   the batch it had in hand was never committed, so SQLite rolls it\n"
        "   back: no ack without its payout, no payout without its ack.\n",
        (int)pid, killed_at);
  } else {
    say("   worker 1 finished before the kill point (fast disk); no kill.\n");
  }
  ob_close(e);
  e = NULL;

  say("\n3. Worker 2 starts on the same file and finishes the queue\n");
  pid = start_worker(&s);
  if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
      WEXITSTATUS(status) != 0) {
    fprintf(stderr, "demo: worker 2 failed\n");
    goto fail;
  }
  e = open_engine(&s, s.batch);
  if (e == NULL) goto fail;
  if (ob_stats(e, &st) < 0) goto fail;
  say("   queue empty: %lld ready, %lld delayed\n", (long long)st.queue_ready,
      (long long)st.queue_delayed);

  say("\n4. Head office replays 300 events it already sent\n");
  {
    size_t n = 0;
    delivery_t* replay = calloc(300, sizeof *replay);
    ob_batch_result_t r;
    long long dups = 0, handled = 0;
    for (size_t i = 0; i < s.nd && n < 300; i++)
      if (s.d[i].kind == DELIVERY_FIRST) replay[n++] = s.d[i];
    if (enqueue_range(e, replay, n) < 0) {
      free(replay);
      goto fail;
    }
    free(replay);
    while (ob_run_once(e, &r) == 0 && r.claimed > 0) {
      dups += r.duplicates;
      handled += r.handled;
    }
    say("   %lld acked as duplicates without running the handler, %lld "
        "handled\n", dups, handled);
    expect(&s, "replayed events that moved money again", 0, handled);
  }

  say("\n5. The failure store (oncebox failed show)\n");
  {
    failed_view_t fv = {0};
    ob_failed_list(e, 0, NULL, show_failed, &fv);
  }

  say("\n6. Outbox to head office (an in-process sink; SQS when online)\n");
  {
    office_t office = {0, 0};
    size_t published;
    do {
      if (ob_outbox_drain(e, office_sink, &office, 1000, &published) < 0)
        goto fail;
    } while (published > 0);
    say("   head office received %lld MerchantPayoutCreated events\n",
        office.payout_events);
    expect(&s, "events published, one per payout", s.payments,
           office.payout_events);
  }

  if (ob__cli_demo_fence(s.db_path, (uint64_t)seed, 300, expect_cb, &s,
                         &declined, &charged) < 0)
    goto fail;

  say("\n8. The evidence\n");
  if (ob_stats(e, &st) < 0 || ob_payout_stats(e, &ps) < 0) goto fail;
  expect(&s, "payouts (one per distinct payment)", s.payments, ps.payouts);
  /* A failed message leaves no dedup record: its savepoint rolled back,
  ** so a fixed replay from the failure store can still run. */
  expect(&s, "dedup records (one per paid event or charged order)",
         s.payments + charged, st.processed);
  expect(&s, "failed: malformed, second captures, declined cards",
         s.malformed + s.second_captures + declined, st.failed);
  expect(&s, "messages left in the queue", 0,
         st.queue_ready + st.queue_delayed);
  {
    /* The ChargeOrder part ran on this database too: check its invariants
    ** with the payout ones (its handler has nothing left to handle). */
    int violations = ob_register_charge_order(e);
    if (violations == 0) violations = ob_check(e, print_violation, NULL);
    expect(&s, "integrity_check + invariant violations", 0, violations);
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  say("\n%s in %.1f s: %zu deliveries, %d payments, %d payouts, %s.\n",
      s.failures ? "FAILED" : "done",
      (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9,
      s.nd + 300, s.payments, (int)ps.payouts,
      s.failures ? "expectations broken"
                 : "every payment paid and every order charged exactly once");
  ob_close(e);
  e = NULL;
  if (tmpdir[0]) {
    if (keep) {
      say("database kept: %s\n", s.db_path);
    } else {
      char p2[600];
      static const char* suffix[] = {"", "-wal", "-shm"};
      for (int i = 0; i < 3; i++) {
        snprintf(p2, sizeof p2, "%s%s", s.db_path, suffix[i]);
        unlink(p2);
      }
      rmdir(tmpdir);
    }
  }
  free(s.d);
  return s.failures ? EXIT_FAIL : EXIT_OK;

fail:
  if (e) fprintf(stderr, "demo: %s\n", ob_errmsg(e));
  ob_close(e);
  free(s.d);
  return EXIT_FAIL;
}
