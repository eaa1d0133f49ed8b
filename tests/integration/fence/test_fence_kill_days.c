/* SPDX-License-Identifier: Apache-2.0 */
/* The fence under SIGKILL across days, against a provider that forgets
** idempotency keys on its own clock (issue 14, docs/fence.md "Providers
** forget keys: the key-retention rule", docs/decisions/0013).
**
** What the provider models: Stripe API v1 ("Idempotent requests",
** https://docs.stripe.com/api/idempotent_requests) saves the status and
** body of the first request made with a key and replays them for the same
** key, and "can remove keys from the system automatically after they're at
** least 24 hours old"; a key reused after it was pruned is a new request,
** so a repeat then is a second real charge. provider_sim.mjs --profile
** stripe does exactly that, on a clock of its own that this test moves
** (ps_advance); the terminals' clocks do not move it.
**
** The campaign: terminals (forked children running the real engine with the
** HTTPS performer on one SQLite file, one or two at a time) handle
** ChargeOrder messages, delivered up to three times and re-sent by another
** producer, and are SIGKILLed at random instants while the provider drops
** replies, answers 5xx and 429, holds requests, replays saved 500s and
** dies. Each round ends with a terminal SIGKILLed with a provider's 200 in
** hand (charged, not recorded), so an effect that may have reached the
** provider is always open when the terminals stop. Then every terminal is
** stopped and the time passes: the provider's clock is advanced and the
** terminals' clock (wall and monotonic: ob_clock_t with an offset this test
** controls, inherited by the forked workers) moves by the same amount while
** no engine runs, so no engine observes it passing, as a terminal that is
** switched off. Usually 25 h (past the provider's 24 h retention, past the
** fence's 21 h = 7/8 of it), sometimes 20 h (inside the window: the control,
** where a repeat with the same key is answered with the first charge).
**
** At the end (provider normal, every open effect reconciled, terminals run
** until idle) the invariants, each violation printed as one line:
**   - every order the provider charged was charged exactly once ("charged
**     twice" otherwise: the line fence_mutant_ignore_key_age looks for);
**   - a confirmed effect carries the provider's first charge of its order;
**   - every other order is failed with a reason (declined, never charged)
**     or parked for a person with a cause and a reason; key-expired only
**     past the window, and every effect open past the window key-expired;
**   - an order open with a charge across a 25 h stop ends key-expired;
**   - the business rows match the confirmed effects, `check` is clean.
**
** OB_FENCE_DAYS_ROUNDS (default 6; 3 under ASan) rounds of 10 orders;
** OB_SEED picks the random run. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "oncebox.h"
#include "oncebox_charge.h"
#include "tests/integration/fence/provider_sim_util.h"
#include "tests/integration/http/http_test_util.h"
#include "tests/support/testsupport.h"

#define HOUR (3600LL * 1000)
/* Stripe's retention; the simulator's (--profile stripe) and the engine's
** (key_retention_ms) are both set to it. */
#define RETENTION_MS (24 * HOUR)
/* The fence's window: 7/8 of the retention (ob__fence_key_deadline_ms). */
#define WINDOW_MS (RETENTION_MS - RETENTION_MS / 8)
#define STOP_PAST_MS (25 * HOUR)   /* terminals off longer than the retention */
#define STOP_INSIDE_MS (20 * HOUR) /* the control: inside the window */
#define WAVE 10                    /* orders per round */
#define MAX_ROUNDS 1000

static struct {
  const char* skip;
  char* dir;
  char* pki;
  char* ca;
} g;

/* ---- the terminals' clock ------------------------------------------------ */

/* The system clock plus the time the terminals spent switched off. Moved
** only while no engine is open (parent or child); children inherit it. */
static int64_t g_offset_ms;

static int64_t tc_now(void* ctx) {
  const ob_clock_t* s = ob_system_clock();
  (void)ctx;
  return s->now_ms(s->ctx) + g_offset_ms;
}
static int64_t tc_mono(void* ctx) {
  const ob_clock_t* s = ob_system_clock();
  (void)ctx;
  return s->monotonic_ms(s->ctx) + g_offset_ms;
}
static void tc_random(void* ctx, void* buf, size_t n) {
  const ob_clock_t* s = ob_system_clock();
  (void)ctx;
  s->random(s->ctx, buf, n);
}
static const ob_clock_t terminal_clock = {NULL, tc_now, tc_random, tc_mono};

/* ---- the fixture --------------------------------------------------------- */

typedef struct fix_s {
  char* dir;
  char* db;
  char* log;
  ps_sim_t* sim;
  char url[64];
} fix_t;

typedef struct worker_ctx_s {
  int log_fd;
  const char* block;  /* stop dead in the first log line containing this */
  int block_fd;
} worker_ctx_t;

static void worker_log(void* arg, ob_log_level_t level, const char* msg) {
  worker_ctx_t* w = arg;
  char line[1200];
  int n = snprintf(line, sizeof line, "%d %s\n", (int)level, msg);
  if (n > 0 && write(w->log_fd, line, (size_t)n) < 0) {
  }
  if (w->block != NULL && strstr(msg, w->block) != NULL) {
    /* The line itself, so the parent knows which effect is in hand. */
    size_t len = strlen(msg);
    if (len > 500) len = 500;
    if (write(w->block_fd, msg, len) < 0) {
    }
    for (;;) pause();  /* the parent SIGKILLs us here */
  }
}

static void open_engine(fix_t* f, ob_engine_t** e, worker_ctx_t* w) {
  ob_options_t o;
  char err[512];
  ob_options_init(&o);
  o.db_path = f->db;
  o.batch_size = 8;
  o.poll_interval_ms = 50;
  o.clock = &terminal_clock;
  if (w != NULL) {
    o.log = worker_log;
    o.log_ctx = w;
    o.log_level = OB_LOG_DEBUG;
  }
  if (ob_open(e, &o, err, sizeof err) != 0) fail_msg("ob_open: %s", err);
}

/* Runs in the child; never returns. */
static void worker_main(fix_t* f, const char* block, int block_fd,
                        ob_run_mode_t mode) {
  ob_engine_t* e;
  ob_provider_options_t p;
  worker_ctx_t w = {.block = block, .block_fd = block_fd};
  char err[512];
  int rc;
  w.log_fd = open(f->log, O_WRONLY | O_CREAT | O_APPEND, 0600);
  open_engine(f, &e, &w);
  ob_register_charge_order(e);
  ob_provider_options_init(&p);
  p.name = OB_CHARGE_PROVIDER;
  p.base_url = f->url;
  p.ca_file = g.ca;
  p.idempotency_keys = 1;
  p.lookup_path = OB_CHARGE_LOOKUP_PATH;
  p.key_retention_ms = RETENTION_MS;  /* the default, said out loud */
  p.timeout_ms = 1500;
  p.lease_ms = 2500;
  p.retry.max_retries = 8;
  p.retry.delay_ms = 50;
  p.retry.max_delay_ms = 400;
  if (ob_provider_enable(e, &p, err, sizeof err) != 0) {
    fprintf(stderr, "ob_provider_enable: %s\n", err);
    _exit(3);
  }
  rc = ob_run(e, mode, 1);
  ob_close(e);
  _exit(rc == 0 || rc == OB_RUN_STALLED ? 0 : 4);
}

static pid_t spawn_worker(fix_t* f, const char* block, int* block_rd,
                          ob_run_mode_t mode) {
  int fds[2] = {-1, -1};
  pid_t pid;
  if (block != NULL) assert_int_equal(pipe(fds), 0);
  fflush(NULL);
  pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    if (fds[0] >= 0) close(fds[0]);
    worker_main(f, block, fds[1], mode);
  }
  if (block != NULL) {
    close(fds[1]);
    *block_rd = fds[0];
  }
  return pid;
}

static void kill_now(pid_t pid) {
  int st;
  kill(pid, SIGKILL);
  waitpid(pid, &st, 0);
}

static long long q(fix_t* f, const char* sql) {
  long long v;
  if (ps_db_int(f->db, sql, &v) != 0)
    fail_msg("cannot read %s: %s", f->db, sql);
  return v;
}

/* Nothing left for a terminal: the queue empty, every open effect parked. */
static int settled(fix_t* f) {
  return q(f, "SELECT count(*) FROM queue") == 0 &&
         q(f, "SELECT count(*) FROM effect WHERE state IN ('pending',"
              "'unknown') AND parked_at IS NULL") == 0;
}

static void run_until_settled(fix_t* f) {
  for (int i = 0; i < 60; i++) {
    int st;
    pid_t pid = spawn_worker(f, NULL, NULL, OB_RUN_UNTIL_IDLE);
    assert_int_equal(waitpid(pid, &st, 0), pid);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
      fail_msg("recovery worker ended with status %d", st);
    if (settled(f)) return;
    usleep(250 * 1000);
  }
  fail_msg("recovery did not settle");
}

static uint64_t rnd(uint64_t* s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static int amount_of(int i) { return i % 20 == 7 ? 402 : 1000 + i; }

static void enqueue_one(ob_engine_t* e, const char* id, int i) {
  char body[160];
  ob_envelope_t env;
  snprintf(body, sizeof body,
           "{\"orderId\":\"order-%d\",\"amountInMinorUnits\":%d,"
           "\"currency\":\"EUR\"}", i, amount_of(i));
  memset(&env, 0, sizeof env);
  env.id = id;
  env.type = OB_CHARGE_MESSAGE_TYPE;
  env.body = body;
  env.body_len = strlen(body);
  assert_int_equal(ob_enqueue(e, &env), 0);
}

static void enqueue_orders(fix_t* f, int first, int n, int copies) {
  ob_engine_t* e;
  open_engine(f, &e, NULL);
  for (int i = first; i < first + n; i++) {
    char id[OB_UUID_BUFLEN];
    snprintf(id, sizeof id, "0190b6d8-3ae7-7ca2-a653-%012d", i);
    for (int c = 0; c < copies; c++) enqueue_one(e, id, i);
  }
  ob_close(e);
}

/* Another producer re-sends earlier orders under new message ids: some
** are confirmed, some parked, some a day old by now. */
static void resend(fix_t* f, uint64_t* seed, int upto, int tag) {
  ob_engine_t* e;
  open_engine(f, &e, NULL);
  for (int k = 0; k < 2; k++) {
    char id[OB_UUID_BUFLEN];
    snprintf(id, sizeof id, "0190b6d8-3ae7-7ca2-b653-%012d", tag * 10 + k);
    enqueue_one(e, id, 1 + (int)(rnd(seed) % (uint64_t)upto));
  }
  ob_close(e);
}

/* A person at the terminal asks the provider again about every open
** effect (parked ones too): with an old key that must park again. */
static void reconcile(fix_t* f) {
  ob_engine_t* e;
  open_engine(f, &e, NULL);
  assert_true(ob_effects_reconcile(e, NULL, 0) >= 0);
  ob_close(e);
}

/* The provider may be dying (die_after_charge) as we speak: restart it. */
static void set_mode(fix_t* f, const char* m, int count, int delay,
                     int charge_first) {
  for (int i = 0; i < 3; i++) {
    if (!ps_alive(f->sim)) assert_int_equal(ps_restart(f->sim), 0);
    if (ps_mode(f->sim, m, count, delay, charge_first) == 0) return;
    usleep(100 * 1000);
  }
  fail_msg("the provider simulator does not take commands");
}

/* Terminals are off: the provider's clock and the terminals' move by ms. */
static int stop_for(fix_t* f, long long ms) {
  int pruned = -1;
  /* A request the provider still holds (mode slow) is decided first. */
  usleep(400 * 1000);
  for (int i = 0; i < 3 && pruned < 0; i++) {
    if (!ps_alive(f->sim)) assert_int_equal(ps_restart(f->sim), 0);
    pruned = ps_advance(f->sim, ms);
  }
  if (pruned < 0) fail_msg("the provider simulator does not advance");
  g_offset_ms += ms;
  return pruned;
}

/* A terminal killed with a provider's 200 in hand, nothing recorded: the
** order is charged and its effect open. Returns the order's number. */
static int kill_with_charge_in_hand(fix_t* f) {
  char msg[512] = "";
  int rd = -1, order = 0, st;
  ssize_t n;
  struct pollfd pfd;
  pid_t pid;
  set_mode(f, "normal", 1, 0, 0);
  pid = spawn_worker(f, "call answered 200, recording", &rd, OB_RUN_FOREVER);
  pfd.fd = rd;
  pfd.events = POLLIN;
  if (poll(&pfd, 1, 30000) != 1) {
    kill_now(pid);
    fail_msg("no terminal got a 200 to be killed with");
  }
  n = read(rd, msg, sizeof msg - 1);
  close(rd);
  assert_true(n > 0);
  msg[n] = '\0';
  assert_int_equal(kill(pid, SIGKILL), 0);
  assert_int_equal(waitpid(pid, &st, 0), pid);
  if (sscanf(msg, "effect charge:order-%d:", &order) != 1)
    fail_msg("unexpected line: %s", msg);
  return order;
}

/* ---- the invariants ------------------------------------------------------ */

typedef struct order_s {
  int charges;            /* CHARGED lines: real charges */
  char first_charge[40];  /* the provider's first charge for the order */
  int effects;
  char state[16];
  char reference[64];
  char reason[320];
  char cause[32];
  long long parked_at;    /* 0: not parked */
  long long since;        /* first call handed out (or the claim) */
  long long first_call_at;  /* 0: never handed out for a call */
  long long stop_ms;      /* killed with a 200 in hand before a stop of this */
} order_t;

typedef struct tally_s {
  int violations, twice;
} tally_t;

static void violation(tally_t* t, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void violation(tally_t* t, const char* fmt, ...) {
  va_list ap;
  t->violations++;
  printf("violation: ");
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  printf("\n");
  fflush(stdout);
}

static void copy(char* dst, size_t n, const unsigned char* src) {
  snprintf(dst, n, "%s", src ? (const char*)src : "");
}

static void read_effects(fix_t* f, order_t* o, int norders) {
  sqlite3* db;
  sqlite3_stmt* st;
  if (sqlite3_open_v2(f->db, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
    fail_msg("cannot open %s", f->db);
  sqlite3_busy_timeout(db, 5000);
  assert_int_equal(
      sqlite3_prepare_v2(db,
                         "SELECT key, state, reference, reason, park_cause,"
                         " coalesce(parked_at, 0),"
                         " coalesce(first_call_at, created_at),"
                         " coalesce(first_call_at, 0)"
                         " FROM effect", -1, &st, NULL),
      SQLITE_OK);
  while (sqlite3_step(st) == SQLITE_ROW) {
    int i = 0;
    const char* key = (const char*)sqlite3_column_text(st, 0);
    if (sscanf(key, "charge:order-%d", &i) != 1 || i < 1 || i > norders)
      fail_msg("an effect of no order: %s", key);
    o[i].effects++;
    copy(o[i].state, sizeof o[i].state, sqlite3_column_text(st, 1));
    copy(o[i].reference, sizeof o[i].reference, sqlite3_column_text(st, 2));
    copy(o[i].reason, sizeof o[i].reason, sqlite3_column_text(st, 3));
    copy(o[i].cause, sizeof o[i].cause, sqlite3_column_text(st, 4));
    o[i].parked_at = sqlite3_column_int64(st, 5);
    o[i].since = sqlite3_column_int64(st, 6);
    o[i].first_call_at = sqlite3_column_int64(st, 7);
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
}

static void read_charges(fix_t* f, order_t* o, int norders) {
  char* out = ps_output(f->sim);
  for (char* p = out; p != NULL && *p; ) {
    char* nl = strchr(p, '\n');
    int i;
    char id[40];
    if (nl) *nl = '\0';
    if (sscanf(p, "CHARGED order-%d %39s", &i, id) == 2 && i >= 1 &&
        i <= norders) {
      if (o[i].charges++ == 0) snprintf(o[i].first_charge, 40, "%s", id);
    }
    p = nl ? nl + 1 : NULL;
  }
  free(out);
}

static void check_cb(void* arg, const char* v) {
  violation(arg, "check: %s", v);
}

static double h(long long ms) { return (double)ms / (double)HOUR; }

static void check_campaign(fix_t* f, order_t* o, int norders) {
  tally_t t = {0, 0};
  int confirmed = 0, failed = 0, parked = 0, key_expired = 0,
      charged_parked = 0, never_called = 0, control = 0, control_ok = 0;
  ps_stats_t ps;
  ob_engine_t* e;
  ob_stats_t s;
  ob_charge_stats_t cs;
  int rc;
  read_effects(f, o, norders);
  read_charges(f, o, norders);
  for (int i = 1; i <= norders; i++) {
    order_t* r = &o[i];
    char order[32];
    int got;
    snprintf(order, sizeof order, "order-%d", i);
    got = ps_charges(f->sim, order);
    if (got != r->charges)
      violation(&t, "%s: the provider's state says %d charges, its output %d",
                order, got, r->charges);
    if (got > 1) {
      t.twice++;
      violation(&t, "%s: the provider charged it %d times (first %s), want at"
                " most 1", order, got, r->first_charge);
    }
    if (r->effects != 1) {
      violation(&t, "%s: %d effects, want 1", order, r->effects);
      continue;
    }
    if (strcmp(r->state, "confirmed") == 0) {
      confirmed++;
      if (got == 0)
        violation(&t, "%s: confirmed as %s, but the provider never charged "
                  "it", order, r->reference);
      else if (strcmp(r->reference, r->first_charge) != 0)
        violation(&t, "%s: confirmed with %s, not the provider's first charge "
                  "%s", order, r->reference, r->first_charge);
    } else if (strcmp(r->state, "failed") == 0) {
      failed++;
      if (r->reason[0] == '\0')
        violation(&t, "%s: failed without a reason", order);
      if (got > 0)
        violation(&t, "%s: failed (%s), but the provider charged it (%s)",
                  order, r->reason, r->first_charge);
    } else if (r->parked_at == 0) {
      violation(&t, "%s: still %s and not parked after recovery", order,
                r->state);
    } else {
      long long age = r->parked_at - r->since;
      parked++;
      charged_parked += got > 0;
      if (r->cause[0] == '\0' || r->reason[0] == '\0')
        violation(&t, "%s: parked without a cause or a reason", order);
      if (strcmp(r->cause, "key-expired") == 0) {
        key_expired++;
        never_called += r->first_call_at == 0;
        if (age < WINDOW_MS)
          violation(&t, "%s: parked key-expired with its key %.1f h old, "
                    "inside the %.0f h window", order, h(age), h(WINDOW_MS));
      } else if (age >= WINDOW_MS) {
        violation(&t, "%s: parked (%s) with its key %.1f h old, not "
                  "key-expired", order, r->cause, h(age));
      }
    }
    /* Open with a charge when the terminals stopped. */
    if (r->stop_ms > RETENTION_MS &&
        (r->parked_at == 0 || strcmp(r->cause, "key-expired") != 0))
      violation(&t, "%s: open with a charge (%s) across a %.0f h stop, ended "
                "%s%s%s, not parked key-expired", order, r->first_charge,
                h(r->stop_ms), r->state, r->cause[0] ? " " : "", r->cause);
    if (r->stop_ms > 0 && r->stop_ms < WINDOW_MS) {
      control++;
      control_ok += strcmp(r->state, "confirmed") == 0;
    }
  }
  if (t.twice > 0)
    violation(&t, "%d order(s) charged twice by the provider", t.twice);
  assert_int_equal(ps_stats(f->sim, &ps), 0);
  if (ps.max_charges_per_order > 1 && t.twice == 0)
    violation(&t, "the provider counts an order charged %ld times",
              ps.max_charges_per_order);
  /* The business rows: one charge and one event per confirmed effect, with
  ** the confirmed reference; nothing left in the queue; every failed
  ** message with a reason. */
  if (q(f, "SELECT count(*) FROM charge") != confirmed)
    violation(&t, "%lld charge rows for %d confirmed effects",
              q(f, "SELECT count(*) FROM charge"), confirmed);
  if (q(f, "SELECT count(*) FROM charge c JOIN effect e ON e.key ="
           " 'charge:' || c.order_id WHERE e.state = 'confirmed' AND"
           " e.reference = c.provider_charge_id") != confirmed)
    violation(&t, "charge rows that are not their confirmed effect's");
  if (q(f, "SELECT count(*) FROM outbox_event WHERE event_type ="
           " 'OrderCharged'") != confirmed)
    violation(&t, "%lld OrderCharged events for %d confirmed effects",
              q(f, "SELECT count(*) FROM outbox_event WHERE event_type ="
                   " 'OrderCharged'"), confirmed);
  if (q(f, "SELECT count(*) FROM queue") != 0)
    violation(&t, "messages left in the queue");
  if (q(f, "SELECT count(*) FROM failed_message WHERE coalesce(reason, '') ="
           " ''") != 0)
    violation(&t, "failed messages without a reason");
  open_engine(f, &e, NULL);
  ob_register_charge_order(e);
  rc = ob_check(e, check_cb, &t);  /* > 0: each one reported */
  if (rc < 0) violation(&t, "check could not run: %s", ob_errmsg(e));
  assert_int_equal(ob_stats(e, &s), 0);
  assert_int_equal(ob_charge_stats(e, &cs), 0);
  if (cs.unfenced_successes != 0)
    violation(&t, "%lld unfenced provider successes",
              (long long)cs.unfenced_successes);
  if (s.effects_key_expired != key_expired)
    violation(&t, "stats count %lld key-expired effects, the rows %d",
              (long long)s.effects_key_expired, key_expired);
  ob_close(e);
  printf("  %d orders: %d confirmed, %d failed (declined), %d parked (%d "
         "key-expired, %d of them never handed out for a call; %d parked "
         "orders charged at the provider); %d of %d orders open with a "
         "charge across a 20 h stop confirmed later with the same key; the "
         "provider made %ld charges, %ld replays since its last start, "
         "pruned %ld keys\n",
         norders, confirmed, failed, parked, key_expired, never_called,
         charged_parked, control_ok, control, ps.charges_total, ps.replays,
         ps.pruned);
  fflush(stdout);
  if (t.violations > 0)
    fail_msg("%d violation(s) of the key-retention rule's invariants",
             t.violations);
  /* The campaign must have exercised the rule. */
  if (key_expired == 0) fail_msg("no effect was parked key-expired");
}

/* ---- the campaign -------------------------------------------------------- */

static void test_kill_days(void** state) {
  fix_t* f = *state;
  static const char* const modes[] = {
      "normal",           "drop_after_charge", "error_5xx",
      "error_5xx_after_charge", "rate_limited", "slow",
      "die_after_charge", "error_500_saved"};
  const char* env = getenv("OB_FENCE_DAYS_ROUNDS");
#if defined(__SANITIZE_ADDRESS__)
  int rounds = env ? atoi(env) : 3;
#else
  int rounds = env ? atoi(env) : 6;
#endif
  uint64_t seed = 0x5eedda75ce11ULL;
  int kills = 0, norders, past = 0, inside = 0;
  order_t* o;
  struct timespec t0, t1;
  if (g.skip != NULL) skip();
  if ((env = getenv("OB_SEED")) && *env) seed = strtoull(env, NULL, 0);
  if (rounds < 2 || rounds > MAX_ROUNDS)
    fail_msg("OB_FENCE_DAYS_ROUNDS: 2 to %d", MAX_ROUNDS);
  norders = rounds * WAVE;
  o = calloc((size_t)norders + 1, sizeof *o);
  printf("  key retention under kill -9: %d rounds of %d orders, seed 0x%llx "
         "(OB_SEED, OB_FENCE_DAYS_ROUNDS)\n", rounds, WAVE,
         (unsigned long long)seed);
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int r = 0; r < rounds; r++) {
    int first = 1 + r * WAVE, last = first + WAVE - 1, in_hand, pruned;
    int n = 3 + (int)(rnd(&seed) % 6);
    long long stop;
    /* After a stop, sometimes a person reconciles first. */
    if (r > 0 && rnd(&seed) % 2) reconcile(f);
    /* All but the last order of the wave, delivered 1-3 times. */
    enqueue_orders(f, first, WAVE - 1, 1 + (int)(rnd(&seed) % 3));
    for (int k = 0; k < n; k++) {
      const char* m = modes[rnd(&seed) % 8];
      pid_t pid[2];
      int two = rnd(&seed) % 4 == 0;
      set_mode(f, m, 1 + (int)(rnd(&seed) % 4),
               strcmp(m, "slow") == 0 ? 300 : 0, (int)(rnd(&seed) % 2));
      pid[0] = spawn_worker(f, NULL, NULL, OB_RUN_FOREVER);
      if (two) pid[1] = spawn_worker(f, NULL, NULL, OB_RUN_FOREVER);
      usleep((useconds_t)(10 + rnd(&seed) % 400) * 1000);
      kill_now(pid[0]);
      if (two) kill_now(pid[1]);
      kills += 1 + two;
      if (k % 3 == 2) resend(f, &seed, last - 1, r * 10 + k);
    }
    /* The last order arrives; a terminal is killed with a 200 in hand. */
    enqueue_orders(f, last, 1, 1);
    in_hand = kill_with_charge_in_hand(f);
    assert_true(in_hand >= 1 && in_hand <= last);
    kills++;
    /* The terminals are off: 25 h, or 20 h as the control (the first two
    ** rounds have one of each). */
    stop = r == 0   ? STOP_PAST_MS
           : r == 1 ? STOP_INSIDE_MS
           : rnd(&seed) % 3 ? STOP_PAST_MS
                            : STOP_INSIDE_MS;
    if (o[in_hand].stop_ms < stop) o[in_hand].stop_ms = stop;
    pruned = stop_for(f, stop);
    if (stop > RETENTION_MS) past++;
    else inside++;
    printf("  round %d: orders %d-%d, %d terminals killed, order-%d killed "
           "with its 200 in hand; off %lld h: the provider pruned %d keys\n",
           r + 1, first, last, n + 1, in_hand, stop / HOUR, pruned);
  }
  /* Back to normal: a person reconciles everything open, the terminals run
  ** until nothing is left for them. */
  set_mode(f, "normal", 1, 0, 0);
  reconcile(f);
  run_until_settled(f);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  printf("  %d terminals SIGKILLed, %d stops past the retention and %d inside "
         "the window, %.0f h of terminal time, %.1f s\n", kills, past, inside,
         h(g_offset_ms),
         (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
  check_campaign(f, o, norders);
  free(o);
}

/* ---- setup --------------------------------------------------------------- */

static int group_setup(void** state) {
  (void)state;
  g.skip = ps_skip_reason();
  if (g.skip != NULL) {
    printf("%s\n", g.skip);
    return 0;
  }
  g.dir = ts_mkdtemp("fence-kill-days");
  g.pki = ts_path(g.dir, "pki");
  g.ca = ts_path(g.pki, "ca.crt");
  return ht_gen_pki(g.pki) == 0 ? 0 : -1;
}

static int group_teardown(void** state) {
  (void)state;
  free(g.ca);
  free(g.pki);
  if (g.dir != NULL && getenv("OB_KEEP") == NULL) ts_rmdir(g.dir);
  return 0;
}

static int setup(void** state) {
  fix_t* f;
  char* st;
  *state = NULL;
  if (g.skip != NULL) return 0;
  f = calloc(1, sizeof *f);
  f->dir = ts_path(g.dir, "case");
  assert_int_equal(mkdir(f->dir, 0700), 0);
  f->db = ts_path(f->dir, "pos.db");
  f->log = ts_path(f->dir, "worker.log");
  st = ts_path(f->dir, "provider.json");
  f->sim = ps_start_profile(g.pki, st, 0, "stripe", RETENTION_MS, NULL);
  free(st);
  if (f->sim == NULL) return -1;
  snprintf(f->url, sizeof f->url, "https://localhost:%d", ps_port(f->sim));
  g_offset_ms = 0;
  *state = f;
  return 0;
}

static int teardown(void** state) {
  fix_t* f = *state;
  if (f == NULL) return 0;
  ps_stop(f->sim);
  free(f->db);
  free(f->log);
  free(f->dir);
  free(f);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_kill_days, setup, teardown),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
