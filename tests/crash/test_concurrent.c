/* SPDX-License-Identifier: Apache-2.0 */
/* Two processes handle the same events at the same time on one database
** file, and each event has exactly one effect.
**
** The parent creates the database and enqueues EVENTS PaymentCaptured
** events, each delivered two or three times (the same event id enqueued
** again), closes its engine (no SQLite connection may cross a fork), then
** forks two workers. Both open their engine, report ready, and block on a
** barrier pipe; closing its write end releases them together. Each handles
** until the queue is empty and reports what it did over a pipe; after its
** first commit each waits for the other's first commit, so both really take
** part (SQLite's busy handler is not fair: left alone, one worker can drain
** the queue while the other sleeps in it). The parent
** then checks the database: one payout, one dedup record and one outbox row
** per event, nothing queued, nothing failed, ob_check() clean. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "tests/support/testsupport.h"
#include "oncebox_payout.h"

#define EVENTS 300
#define WORKERS 2
_Static_assert(WORKERS == 2, "the rendezvous pairs exactly two workers");
#define MAX_COPIES 3

typedef struct event_s {
  char id[OB_UUID_BUFLEN];
  char payment[OB_UUID_BUFLEN];
  char body[256];
} event_t;

typedef struct round_s {
  const char* name;
  int batch;       /* messages per transaction */
  int adjacent;    /* copies of one event next to each other in the queue */
  int use_run;     /* ob_run(UNTIL_IDLE) instead of an ob_run_once loop */
  int pause_us;    /* up to this long between a worker's transactions */
} round_t;

/* What a worker tells the parent; one write, smaller than PIPE_BUF, so it
** arrives whole. handled/duplicates are -1 for ob_run rounds (ob_run does
** not report counts). */
typedef struct report_s {
  int32_t worker;
  int32_t rc;
  int64_t handled;
  int64_t duplicates;
  int64_t retried;
  int64_t failed;
  int64_t batches;
  int64_t busy;
} report_t;

static uint64_t rnd(uint64_t* s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 2685821657736338717ULL;
}

static void uuid4(uint64_t* s, char out[OB_UUID_BUFLEN]) {
  uint64_t a = rnd(s), b = rnd(s);
  snprintf(out, OB_UUID_BUFLEN, "%08x-%04x-4%03x-%04x-%012llx", (unsigned)(a >> 32),
           (unsigned)((a >> 16) & 0xffff), (unsigned)(a & 0xfff),
           (unsigned)(0x8000 | ((b >> 48) & 0x3fff)),
           (unsigned long long)(b & 0xffffffffffffULL));
}

static uint64_t test_seed(void) {
  const char* env = getenv("OB_SEED");
  return env && *env ? strtoull(env, NULL, 0) : 20261130ULL;
}

static int write_all(int fd, const void* buf, size_t n) {
  const char* p = buf;
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* Read up to n bytes, stopping early only at EOF. Returns bytes read. */
static size_t read_full(int fd, void* buf, size_t n) {
  char* p = buf;
  size_t got = 0;
  while (got < n) {
    ssize_t r = read(fd, p + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += (size_t)r;
  }
  return got;
}

/* ---- the worker process ------------------------------------------------- */

static void worker_main(const char* db_path, const round_t* rd, int idx,
                        int ready_fd, int go_fd, int report_fd, int meet_out,
                        int meet_in) {
  ob_options_t o;
  ob_engine_t* e = NULL;
  report_t r;
  char err[256], c;
  uint64_t pause_rng = 0x9E3779B97F4A7C15ULL * (uint64_t)(idx + 1);

  memset(&r, 0, sizeof r);
  r.worker = idx;
  ob_options_init(&o);
  o.db_path = db_path;
  o.batch_size = rd->batch;
  /* Two writers queue for the lock; BEGIN IMMEDIATE waits, never fails. */
  o.busy_timeout_ms = 30000;
  signal(SIGPIPE, SIG_IGN);  /* the other worker may be gone already */
  r.rc = ob_open(&e, &o, err, sizeof err);
  if (r.rc == 0) r.rc = ob_register_payout(e);
  /* Ready even on failure, so the parent never waits for ever. */
  if (write_all(ready_fd, "r", 1) < 0) _exit(12);
  close(ready_fd);
  while (read(go_fd, &c, 1) < 0 && errno == EINTR) {
  }
  close(go_fd);

  if (r.rc == 0 && rd->use_run) {
    r.handled = r.duplicates = -1;
    r.rc = ob_run(e, OB_RUN_UNTIL_IDLE, 0);
  } else if (r.rc == 0) {
    for (;;) {
      ob_batch_result_t res;
      int rc = ob_run_once(e, &res);
      if (rc == OB_EBUSY) {
        r.busy++;
        continue;
      }
      if (rc < 0) {
        r.rc = rc;
        break;
      }
      /* Under BEGIN IMMEDIATE an empty read means the queue holds no ready
      ** row at all: the other worker has no rows "in hand" to wait for. */
      if (res.claimed == 0) break;
      if (r.batches == 0) {
        /* Rendezvous after the first commit: wait until the other worker
        ** committed one too (or exited). Without it one worker can drain
        ** the whole queue while the other's busy handler sleeps, and the
        ** run would not be concurrent at all. */
        if (write_all(meet_out, "m", 1) < 0) _exit(12);
        close(meet_out);
        while (read(meet_in, &c, 1) < 0 && errno == EINTR) {
        }
        close(meet_in);
      }
      r.batches++;
      r.handled += res.handled;
      r.duplicates += res.duplicates;
      r.retried += res.retried;
      r.failed += res.failed;
      /* SQLite's busy handler polls with growing sleeps, so a worker that
      ** starts its next transaction at once keeps the lock and the other
      ** starves (measured: 300 vs 0 handled). A short random pause, like
      ** real work between batches, lets them alternate. */
      if (rd->pause_us > 0) {
        struct timespec ts = {0, (long)(rnd(&pause_rng) % (uint64_t)rd->pause_us)
                                     * 1000L};
        nanosleep(&ts, NULL);
      }
    }
  }
  if (r.rc < 0 && e != NULL)
    fprintf(stderr, "worker %d: %s: %s\n", idx, ob_err_name(r.rc),
            ob_errmsg(e));
  ob_close(e);
  if (write_all(report_fd, &r, sizeof r) < 0) _exit(12);
  _exit(r.rc < 0 ? 11 : 0);
}

/* ---- parent-side helpers ------------------------------------------------ */

static ob_engine_t* open_engine(const char* db_path) {
  ob_options_t o;
  ob_engine_t* e = NULL;
  char err[256];
  ob_options_init(&o);
  o.db_path = db_path;
  if (ob_open(&e, &o, err, sizeof err) < 0) {
    fprintf(stderr, "open %s: %s\n", db_path, err);
    fail();
  }
  assert_int_equal(ob_register_payout(e), 0);
  return e;
}

static void make_events(uint64_t* s, event_t* ev, size_t n) {
  static const char* const cur[] = {"EUR", "GBP", "USD", "CHF"};
  for (size_t i = 0; i < n; i++) {
    char merchant[OB_UUID_BUFLEN];
    uuid4(s, ev[i].id);
    uuid4(s, ev[i].payment);
    uuid4(s, merchant);
    snprintf(ev[i].body, sizeof ev[i].body,
             "{\"paymentId\":\"%s\",\"merchantId\":\"%s\","
             "\"amountInMinorUnits\":%llu,\"currency\":\"%s\"}",
             ev[i].payment, merchant,
             (unsigned long long)(1 + rnd(s) % 100000), cur[rnd(s) % 4]);
  }
}

/* Fill order[] with event indexes, each event 2 or 3 times. Returns the
** number of deliveries. */
static size_t make_deliveries(uint64_t* s, const round_t* rd, size_t* order) {
  size_t n = 0;
  for (size_t i = 0; i < EVENTS; i++) {
    int copies = 2 + (int)(rnd(s) % 2);
    for (int k = 0; k < copies; k++) order[n++] = i;
  }
  if (rd->adjacent) {
    /* Shuffle whole runs of copies: both workers then race for the same id
    ** in back-to-back transactions, the tightest window there is. */
    size_t* runs = malloc(EVENTS * sizeof *runs);
    size_t* out = malloc(n * sizeof *out);
    size_t m = 0;
    assert_non_null(runs);
    assert_non_null(out);
    for (size_t i = 0; i < EVENTS; i++) runs[i] = i;
    for (size_t i = EVENTS - 1; i > 0; i--) {
      size_t j = (size_t)(rnd(s) % (i + 1)), t = runs[i];
      runs[i] = runs[j];
      runs[j] = t;
    }
    for (size_t r = 0; r < EVENTS; r++)
      for (size_t i = 0; i < n; i++)
        if (order[i] == runs[r]) out[m++] = runs[r];
    memcpy(order, out, n * sizeof *order);
    free(out);
    free(runs);
  } else {
    for (size_t i = n - 1; i > 0; i--) {
      size_t j = (size_t)(rnd(s) % (i + 1)), t = order[i];
      order[i] = order[j];
      order[j] = t;
    }
  }
  return n;
}

static void enqueue_all(ob_engine_t* e, const event_t* ev, const size_t* order,
                        size_t n) {
  ob_envelope_t* envs = calloc(n, sizeof *envs);
  int* results = calloc(n, sizeof *results);
  assert_non_null(envs);
  assert_non_null(results);
  for (size_t i = 0; i < n; i++) {
    envs[i].id = ev[order[i]].id;
    envs[i].type = OB_PAYOUT_MESSAGE_TYPE;
    envs[i].body = ev[order[i]].body;
    envs[i].body_len = strlen(ev[order[i]].body);
  }
  assert_int_equal(ob_enqueue_many(e, envs, n, results), (int)n);
  free(results);
  free(envs);
}

static int64_t sql_int(sqlite3* db, const char* sql, const char* arg) {
  sqlite3_stmt* st = NULL;
  int64_t v;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
    fprintf(stderr, "prepare %s: %s\n", sql, sqlite3_errmsg(db));
    fail();
  }
  if (arg) sqlite3_bind_text(st, 1, arg, -1, SQLITE_STATIC);
  /* A failed step is a failed check, never a zero. */
  assert_int_equal(sqlite3_step(st), SQLITE_ROW);
  v = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return v;
}

static void print_violation(void* arg, const char* v) {
  (void)arg;
  fprintf(stderr, "violation: %s\n", v);
}

/* Everything the database must show after the round, per event. */
static void verify_db(const char* db_path, const event_t* ev) {
  sqlite3* db = NULL;
  ob_engine_t* e;
  ob_stats_t st;

  assert_int_equal(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL),
                   SQLITE_OK);
  for (size_t i = 0; i < EVENTS; i++) {
    if (sql_int(db, "SELECT count(*) FROM merchant_payout"
                    " WHERE source_event_id = ?1", ev[i].id) != 1 ||
        sql_int(db, "SELECT count(*) FROM merchant_payout"
                    " WHERE source_payment_id = ?1", ev[i].payment) != 1 ||
        sql_int(db, "SELECT count(*) FROM processed_message"
                    " WHERE consumer_name = 'create-merchant-payout-v1'"
                    " AND message_id = ?1", ev[i].id) != 1 ||
        sql_int(db, "SELECT count(*) FROM outbox_event"
                    " WHERE event_type = 'MerchantPayoutCreated'"
                    " AND causation_id = ?1", ev[i].id) != 1) {
      fprintf(stderr, "event %s (payment %s) does not have exactly one "
                      "payout, dedup record and outbox row\n",
              ev[i].id, ev[i].payment);
      fail();
    }
  }
  assert_int_equal(sql_int(db, "SELECT count(*) FROM merchant_payout", NULL),
                   EVENTS);
  assert_int_equal(sql_int(db, "SELECT count(*) FROM outbox_event", NULL),
                   EVENTS);
  assert_int_equal(sql_int(db, "SELECT count(*) FROM queue", NULL), 0);
  sqlite3_close(db);

  e = open_engine(db_path);
  assert_int_equal(ob_stats(e, &st), 0);
  {
    ob_payout_stats_t ps;
    assert_int_equal(ob_payout_stats(e, &ps), 0);
    assert_int_equal(ps.payouts, EVENTS);
  }
  assert_int_equal(st.processed, EVENTS);
  assert_int_equal(st.outbox_unpublished, EVENTS);
  assert_int_equal(st.queue_ready + st.queue_delayed + st.queue_in_hand, 0);
  assert_int_equal(st.failed, 0);
  assert_int_equal(ob_check(e, print_violation, NULL), 0);
  ob_close(e);
}

static void run_round(const round_t* rd, uint64_t seed) {
  char* dir = ts_mkdtemp("concurrent");
  char* db_path = ts_path(dir, "terminal.db");
  event_t* ev = calloc(EVENTS, sizeof *ev);
  size_t* order = calloc(EVENTS * MAX_COPIES, sizeof *order);
  size_t deliveries;
  int ready[2], go[2], rep[2], meet[WORKERS][2], status;
  pid_t pids[WORKERS];
  report_t reports[WORKERS];
  int64_t handled = 0, dups = 0, busy = 0, batches = 0;
  uint64_t s = seed;
  char c;
  ob_engine_t* e;

  assert_non_null(ev);
  assert_non_null(order);
  make_events(&s, ev, EVENTS);
  deliveries = make_deliveries(&s, rd, order);
  e = open_engine(db_path);
  enqueue_all(e, ev, order, deliveries);
  /* Never fork with an open SQLite connection. */
  ob_close(e);

  assert_int_equal(pipe(ready), 0);
  assert_int_equal(pipe(go), 0);
  assert_int_equal(pipe(rep), 0);
  for (int w = 0; w < WORKERS; w++) assert_int_equal(pipe(meet[w]), 0);
  fflush(stdout);
  fflush(stderr);
  for (int w = 0; w < WORKERS; w++) {
    pids[w] = fork();
    assert_true(pids[w] >= 0);
    if (pids[w] == 0) {
      close(ready[0]);
      close(go[1]);  /* or the barrier would never open */
      close(rep[0]);
      /* meet[w]: worker w -> the other. Keep only this worker's ends, so
      ** a dead peer reads as EOF instead of a hang. */
      close(meet[w][0]);
      close(meet[1 - w][1]);
      worker_main(db_path, rd, w, ready[1], go[0], rep[1], meet[w][1],
                  meet[1 - w][0]);
    }
  }
  for (int w = 0; w < WORKERS; w++) {
    close(meet[w][0]);
    close(meet[w][1]);
  }
  close(ready[1]);
  close(go[0]);
  close(rep[1]);
  /* Both engines open and waiting: release them together. */
  for (int w = 0; w < WORKERS; w++)
    assert_int_equal(read_full(ready[0], &c, 1), 1);
  close(go[1]);
  close(ready[0]);

  memset(reports, 0, sizeof reports);
  for (int w = 0; w < WORKERS; w++) {
    report_t r;
    assert_int_equal(read_full(rep[0], &r, sizeof r), sizeof r);
    assert_true(r.worker >= 0 && r.worker < WORKERS);
    reports[r.worker] = r;
  }
  close(rep[0]);
  for (int w = 0; w < WORKERS; w++) {
    assert_int_equal(waitpid(pids[w], &status, 0), pids[w]);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
  }

  for (int w = 0; w < WORKERS; w++) {
    assert_int_equal(reports[w].rc, 0);
    assert_int_equal(reports[w].failed, 0);
    assert_int_equal(reports[w].retried, 0);
    handled += reports[w].handled;
    dups += reports[w].duplicates;
    busy += reports[w].busy;
    batches += reports[w].batches;
  }
  if (rd->use_run)
    printf("  %-28s seed %llu: %zu deliveries of %d events (ob_run reports "
           "no counts)\n", rd->name, (unsigned long long)seed, deliveries,
           EVENTS);
  else
    printf("  %-28s seed %llu: %zu deliveries of %d events; handled "
           "%lld+%lld, duplicates %lld+%lld, %lld transactions, %lld busy\n",
           rd->name, (unsigned long long)seed, deliveries, EVENTS,
           (long long)reports[0].handled, (long long)reports[1].handled,
           (long long)reports[0].duplicates, (long long)reports[1].duplicates,
           (long long)batches, (long long)busy);
  if (!rd->use_run) {
    /* The workers' own counts add up: every event ran its handler once in
    ** one of the two processes, every other delivery was a duplicate. */
    assert_int_equal(handled, EVENTS);
    assert_int_equal(dups, (int64_t)deliveries - EVENTS);
    /* Both processes committed work, so the run really was concurrent. */
    assert_true(reports[0].batches > 0);
    assert_true(reports[1].batches > 0);
  }
  verify_db(db_path, ev);

  free(order);
  free(ev);
  free(db_path);
  ts_rmdir(dir);
}

static const round_t rounds[] = {
    {"batch 1, copies adjacent", 1, 1, 0, 1000},
    {"batch 1, shuffled", 1, 0, 0, 1000},
    {"batch 8, copies adjacent", 8, 1, 0, 1000},
    {"batch 8, shuffled", 8, 0, 0, 1000},
    /* Full speed, no pause: one worker may do it all; the effect is the
    ** same. */
    {"batch 1, ob_run until idle", 1, 1, 1, 0},
    {"batch 8, ob_run until idle", 8, 0, 1, 0},
};

static void test_two_processes_one_effect(void** state) {
  uint64_t seed = test_seed();
  (void)state;
  printf("test_concurrent: seed %llu (OB_SEED overrides)\n",
         (unsigned long long)seed);
  for (size_t i = 0; i < sizeof rounds / sizeof rounds[0]; i++)
    run_round(&rounds[i], seed + i * 7919);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_two_processes_one_effect),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
