/* SPDX-License-Identifier: Apache-2.0 */
/* The fence under SIGKILL, against the provider simulator
** over real HTTPS (certificates generated now, verified by name).
**
** A worker is a forked child running the real engine with the HTTPS
** performer (ob_provider_enable) on a real SQLite file. For the step
** boundaries it stops dead inside the log line the engine writes at that
** boundary and the parent SIGKILLs it there; "during the call" is a kill
** while the provider holds the request. Then a fresh worker recovers, and
** the provider's own count says how many real charges each order got.
** The random run kills workers at random instants over hundreds of orders
** with duplicate deliveries while the provider drops replies, answers 5xx
** and 429, holds requests and dies. */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "oncebox.h"
#include "oncebox_charge.h"
#include "tests/integration/fence/provider_sim_util.h"
#include "tests/integration/http/http_test_util.h"
#include "tests/support/testsupport.h"

static struct {
  const char* skip;
  char* dir;
  char* pki;
  char* ca;
  int seq;
} g;

typedef struct fix_s {
  char* dir;
  char* db;
  char* log;
  ps_sim_t* sim;
  char url[64];
  int no_idempotency;  /* the provider ignores Idempotency-Key */
  int no_lookup;       /* ... and has no lookup either */
} fix_t;

/* ---- the worker ------------------------------------------------------------ */

typedef struct worker_ctx_s {
  int log_fd;
  const char* block;   /* stop dead in the first log line containing this */
  int block_fd;
} worker_ctx_t;

static void worker_log(void* arg, ob_log_level_t level, const char* msg) {
  worker_ctx_t* w = arg;
  char line[1200];
  int n = snprintf(line, sizeof line, "%d %s\n", (int)level, msg);
  if (n > 0 && write(w->log_fd, line, (size_t)n) < 0) {
  }
  if (w->block != NULL && strstr(msg, w->block) != NULL) {
    if (write(w->block_fd, "K", 1) < 0) {
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
  if (w != NULL) {
    o.log = worker_log;
    o.log_ctx = w;
    o.log_level = OB_LOG_DEBUG;
  }
  if (ob_open(e, &o, err, sizeof err) != 0) fail_msg("ob_open: %s", err);
}

/* Runs in the child; never returns. mode OB_RUN_UNTIL_IDLE ends when the
** queue is empty and no effect is due. */
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
  p.idempotency_keys = !f->no_idempotency;
  p.lookup_path = f->no_lookup ? NULL : OB_CHARGE_LOOKUP_PATH;
  /* Short, so recovery after a kill is quick: the lease is what keeps a
  ** second worker off an effect a dead one may still have in flight. */
  p.timeout_ms = 1500;
  p.lease_ms = 2500;
  p.retry.max_retries = 8;
  p.retry.delay_ms = 50;
  p.retry.max_delay_ms = 400;
  if ((rc = ob_provider_enable(e, &p, err, sizeof err)) != 0) {
    fprintf(stderr, "ob_provider_enable: %s\n", err);
    _exit(3);
  }
  rc = ob_run(e, mode, 1);
  ob_close(e);
  /* Stalled (effects left for a provider offline or leased by a dead
  ** worker) is a clean stop: the caller runs another worker. */
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

/* Wait for the worker to stop at its block line, then SIGKILL it. */
static void kill_at_block(pid_t pid, int rd) {
  struct pollfd pfd = {.fd = rd, .events = POLLIN};
  char k = 0;
  int st;
  if (poll(&pfd, 1, 30000) != 1) {
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    fail_msg("the worker never reached its kill point");
  }
  assert_int_equal(read(rd, &k, 1), 1);
  close(rd);
  assert_int_equal(kill(pid, SIGKILL), 0);
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
}

static void kill_now(pid_t pid) {
  int st;
  kill(pid, SIGKILL);
  waitpid(pid, &st, 0);
}

static long long q(fix_t* f, const char* sql);

static int all_done(fix_t* f) {
  return q(f, "SELECT count(*) FROM queue") == 0 &&
         q(f, "SELECT count(*) FROM effect WHERE state IN ('pending',"
              "'unknown')") == 0;
}

/* Workers that run until idle (each must exit 0), until nothing is left:
** an until-idle run also stops while the effects left are leased by a
** worker that was killed, so the next one picks them up. */
/* One until-idle worker after a kill, for effects that end parked: wait out
** the dead worker's lease first. */
static void run_until_idle_parked(fix_t* f) {
  for (int i = 0; i < 40; i++) {
    int st;
    pid_t pid = spawn_worker(f, NULL, NULL, OB_RUN_UNTIL_IDLE);
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    if (q(f, "SELECT count(*) FROM effect WHERE parked_at IS NULL AND state"
             " IN ('pending','unknown')") == 0)
      return;
    usleep(250 * 1000);
  }
  fail_msg("the effect was never parked");
}

static void run_until_idle(fix_t* f) {
  for (int i = 0; i < 40; i++) {
    int st;
    pid_t pid = spawn_worker(f, NULL, NULL, OB_RUN_UNTIL_IDLE);
    assert_int_equal(waitpid(pid, &st, 0), pid);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
      fail_msg("recovery worker ended with status %d", st);
    if (all_done(f)) return;
    usleep(250 * 1000);
  }
  fail_msg("recovery did not finish");
}

/* ---- the database, read from outside ---------------------------------------- */

static long long q(fix_t* f, const char* sql) {
  long long v;
  if (ps_db_int(f->db, sql, &v) != 0) fail_msg("cannot read %s: %s", f->db, sql);
  return v;
}

static void enqueue_orders(fix_t* f, int first, int n, int copies) {
  ob_engine_t* e;
  open_engine(f, &e, NULL);
  for (int i = first; i < first + n; i++) {
    char id[OB_UUID_BUFLEN], body[160];
    ob_envelope_t env;
    snprintf(id, sizeof id, "0190b6d8-3ae7-7ca2-a653-%012d", i);
    snprintf(body, sizeof body,
             "{\"orderId\":\"order-%d\",\"amountInMinorUnits\":%d,"
             "\"currency\":\"EUR\"}", i, i % 20 == 7 ? 402 : 1000 + i);
    memset(&env, 0, sizeof env);
    env.id = id;
    env.type = OB_CHARGE_MESSAGE_TYPE;
    env.body = body;
    env.body_len = strlen(body);
    for (int c = 0; c < copies; c++) assert_int_equal(ob_enqueue(e, &env), 0);
  }
  ob_close(e);
}

/* The invariants after recovery, for orders [first, first + n). */
static void check_orders(fix_t* f, int first, int n) {
  ob_engine_t* e;
  ob_stats_t s;
  ps_stats_t ps;
  int declined = 0;
  for (int i = first; i < first + n; i++) {
    char order[32];
    int want = i % 20 == 7 ? 0 : 1;
    snprintf(order, sizeof order, "order-%d", i);
    declined += !want;
    int got = ps_charges(f->sim, order);
    if (got != want)
      fail_msg("%s: the provider charged it %d times, want %d", order, got,
               want);
  }
  assert_int_equal(ps_stats(f->sim, &ps), 0);
  assert_int_equal(ps.max_charges_per_order, n - declined > 0 ? 1 : 0);
  assert_int_equal(q(f, "SELECT count(*) FROM effect WHERE state IN"
                        " ('pending','unknown')"), 0);
  assert_int_equal(q(f, "SELECT count(*) FROM effect WHERE state ="
                        " 'confirmed'"), n - declined);
  assert_int_equal(q(f, "SELECT count(*) FROM effect WHERE state = 'failed'"
                        " AND reason LIKE '402 card_declined%'"), declined);
  assert_int_equal(q(f, "SELECT count(*) FROM charge"), n - declined);
  assert_int_equal(q(f, "SELECT count(*) FROM outbox_event WHERE event_type ="
                        " 'OrderCharged'"), n - declined);
  assert_int_equal(q(f, "SELECT count(*) FROM queue"), 0);
  assert_int_equal(q(f, "SELECT count(*) FROM failed_message WHERE reason"
                        " NOT LIKE '%402 card_declined%'"), 0);
  assert_int_equal(ps.charges_total, n - declined);
  open_engine(f, &e, NULL);
  assert_int_equal(ob_check(e, NULL, NULL), 0);
  assert_int_equal(ob_stats(e, &s), 0);
  {
    ob_charge_stats_t cs;
    assert_int_equal(ob_charge_stats(e, &cs), 0);
    assert_int_equal(cs.unfenced_successes, 0);
  }
  assert_int_equal(s.fence_claims, n);
  /* Every confirmation came from a provider 2xx, except those a person
  ** recorded (the honest-limit case). */
  assert_true(s.provider_2xx >=
              q(f, "SELECT count(*) FROM effect WHERE state = 'confirmed'"
                   " AND successes > 0"));
  assert_int_equal(q(f, "SELECT count(*) FROM effect WHERE state ="
                        " 'confirmed' AND successes = 0"),
                   f->no_lookup ? n - declined : 0);
  ob_close(e);
}

/* ---- fixture ------------------------------------------------------------------ */

static int group_setup(void** state) {
  (void)state;
  g.skip = ps_skip_reason();
  if (g.skip != NULL) {
    printf("%s\n", g.skip);
    return 0;
  }
  g.dir = ts_mkdtemp("fence-kill");
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

static int setup_with(void** state, int no_idempotency, int no_lookup) {
  fix_t* f;
  char name[64], *st;
  *state = NULL;
  if (g.skip != NULL) return 0;
  f = calloc(1, sizeof *f);
  f->no_idempotency = no_idempotency;
  f->no_lookup = no_lookup;
  snprintf(name, sizeof name, "case-%d", ++g.seq);
  f->dir = ts_path(g.dir, name);
  assert_int_equal(mkdir(f->dir, 0700), 0);
  f->db = ts_path(f->dir, "pos.db");
  f->log = ts_path(f->dir, "worker.log");
  st = ts_path(f->dir, "provider.json");
  f->sim = ps_start(g.pki, st, 0,
                    no_lookup        ? "--no-idempotency --no-lookup"
                    : no_idempotency ? "--no-idempotency"
                                     : NULL);
  free(st);
  if (f->sim == NULL) return -1;
  snprintf(f->url, sizeof f->url, "https://localhost:%d", ps_port(f->sim));
  *state = f;
  return 0;
}

static int setup(void** state) {
  return setup_with(state, 0, 0);
}
static int setup_lookup_only(void** state) {
  return setup_with(state, 1, 0);
}
static int setup_neither(void** state) {
  return setup_with(state, 1, 1);
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

#define SKIP_IF_NEEDED()      \
  do {                        \
    if (g.skip != NULL) skip(); \
  } while (0)

/* ---- the step boundaries ---------------------------------------------------------- */

static void kill_at(void** state, const char* marker, int expect_posts_after) {
  fix_t* f = *state;
  int rd = -1;
  ps_stats_t before, after;
  pid_t pid;
  enqueue_orders(f, 1, 1, 2);
  pid = spawn_worker(f, marker, &rd, OB_RUN_FOREVER);
  kill_at_block(pid, rd);
  assert_int_equal(ps_stats(f->sim, &before), 0);
  assert_int_equal(q(f, "SELECT count(*) FROM effect WHERE key ="
                        " 'charge:order-1'"), 1);
  run_until_idle(f);
  check_orders(f, 1, 1);
  assert_int_equal(ps_stats(f->sim, &after), 0);
  if (expect_posts_after >= 0)
    assert_int_equal(after.posts - before.posts, expect_posts_after);
}

/* Killed after the claim committed, before any byte went out. */
static void test_kill_after_claim(void** state) {
  SKIP_IF_NEEDED();
  kill_at(state, "taken for a call", 1);
  assert_int_equal(ps_charges(((fix_t*)*state)->sim, "order-1"), 1);
}

/* Killed with the provider charged and its 200 in hand, before the outcome
** commits: the recovery repeats the call with the same key and gets the
** original charge back (a replay, not a second charge). */
static void test_kill_after_provider_charged(void** state) {
  fix_t* f = *state;
  ps_stats_t s;
  SKIP_IF_NEEDED();
  kill_at(state, "call answered 200, recording", 1);
  assert_int_equal(ps_stats(f->sim, &s), 0);
  assert_int_equal(s.replays, 1);
}

/* Killed after the outcome (and the message's business rows and ack)
** committed: nothing is called again, nothing is handled again. */
static void test_kill_after_outcome_commit(void** state) {
  SKIP_IF_NEEDED();
  kill_at(state, "outcome committed", 0);
}

/* Killed while the provider holds the request: the provider charges after
** the worker died; the recovery's call with the same key meets the held
** one (409) or its stored charge (a replay). */
static void test_kill_during_call(void** state) {
  fix_t* f = *state;
  ps_stats_t s;
  pid_t pid;
  SKIP_IF_NEEDED();
  assert_int_equal(ps_mode(f->sim, "slow", 1, 1200, 0), 0);
  enqueue_orders(f, 1, 1, 1);
  pid = spawn_worker(f, NULL, NULL, OB_RUN_FOREVER);
  assert_true(ps_wait_lines(f->sim, "HELD ", 1, 30000) >= 1);
  kill_now(pid);
  assert_true(ps_wait_lines(f->sim, "CHARGED ", 1, 10000) >= 1);
  run_until_idle(f);
  check_orders(f, 1, 1);
  assert_int_equal(ps_stats(f->sim, &s), 0);
  assert_true(s.replays >= 1);
}

/* The provider charges and the reply is lost; then the provider dies after
** charging; the worker finds both charges by repeating the key. */
static void test_lost_reply_and_dead_provider(void** state) {
  fix_t* f = *state;
  pid_t pid;
  int st;
  SKIP_IF_NEEDED();
  assert_int_equal(ps_mode(f->sim, "drop_after_charge", 1, 0, 0), 0);
  enqueue_orders(f, 1, 1, 1);
  run_until_idle(f);
  check_orders(f, 1, 1);
  assert_int_equal(ps_mode(f->sim, "die_after_charge", 1, 0, 0), 0);
  enqueue_orders(f, 2, 1, 1);
  pid = spawn_worker(f, NULL, NULL, OB_RUN_FOREVER);
  assert_true(ps_wait_lines(f->sim, "DYING", 1, 30000) >= 1);
  assert_int_equal(ps_restart(f->sim), 0);
  /* The worker retries until the provider is back. */
  for (int i = 0; i < 300 && q(f, "SELECT count(*) FROM charge") < 2; i++)
    usleep(50 * 1000);
  kill(pid, SIGTERM);
  assert_int_equal(waitpid(pid, &st, 0), pid);
  check_orders(f, 1, 2);
}

/* A provider without idempotency keys, with a lookup: killed with the
** charge made and its 200 in hand, the recovery looks the key up, finds the
** charge and records it without calling again. */
static void test_kill_after_charged_lookup_only(void** state) {
  fix_t* f = *state;
  ps_stats_t s;
  SKIP_IF_NEEDED();
  kill_at(state, "call answered 200, recording", 0);
  assert_int_equal(ps_stats(f->sim, &s), 0);
  assert_true(s.lookups >= 1);
  assert_int_equal(q(f, "SELECT lookups FROM effect"), 1);
}

/* The honest limit: neither idempotency keys nor a lookup. Killed with the
** charge made, the recovery can't know; it parks the effect, charges
** nothing more, and the message waits in the failure store until a person
** records what the provider's dashboard says. */
static void test_kill_after_charged_neither(void** state) {
  fix_t* f = *state;
  int rd = -1;
  char ref[64] = "", *out, *p;
  ob_engine_t* e;
  pid_t pid;
  SKIP_IF_NEEDED();
  enqueue_orders(f, 1, 1, 1);
  pid = spawn_worker(f, "call answered 200, recording", &rd, OB_RUN_FOREVER);
  kill_at_block(pid, rd);
  run_until_idle_parked(f);
  assert_int_equal(ps_charges(f->sim, "order-1"), 1);
  assert_int_equal(q(f, "SELECT count(*) FROM effect WHERE state = 'unknown'"
                        " AND parked_at IS NOT NULL"), 1);
  assert_int_equal(q(f, "SELECT count(*) FROM failed_message WHERE"
                        " error_class = 'effect_unknown'"), 1);
  assert_int_equal(q(f, "SELECT count(*) FROM charge"), 0);
  out = ps_output(f->sim);
  p = strstr(out, "CHARGED order-1 ");
  assert_non_null(p);
  sscanf(p + strlen("CHARGED order-1 "), "%63s", ref);
  free(out);
  open_engine(f, &e, NULL);
  ob_register_charge_order(e);
  assert_int_equal(ob_effect_resolve(e, "charge:order-1", OB_EFFECT_CONFIRMED,
                                     ref), 0);
  ob_close(e);
  run_until_idle(f);
  check_orders(f, 1, 1);
}

/* ---- random kills ------------------------------------------------------------------ */

static uint64_t rnd(uint64_t* s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}


/* Another producer re-sends a few orders under new message ids. */
static void resend(fix_t* f, uint64_t* seed, int upto, int tag) {
  ob_engine_t* e;
  open_engine(f, &e, NULL);
  for (int k = 0; k < 3; k++) {
    char id[OB_UUID_BUFLEN], body[160];
    int i = 1 + (int)(rnd(seed) % (uint64_t)upto);
    ob_envelope_t env;
    snprintf(id, sizeof id, "0190b6d8-3ae7-7ca2-b653-%012d", tag * 10 + k);
    snprintf(body, sizeof body,
             "{\"orderId\":\"order-%d\",\"amountInMinorUnits\":%d,"
             "\"currency\":\"EUR\"}", i, i % 20 == 7 ? 402 : 1000 + i);
    memset(&env, 0, sizeof env);
    env.id = id;
    env.type = OB_CHARGE_MESSAGE_TYPE;
    env.body = body;
    env.body_len = strlen(body);
    assert_int_equal(ob_enqueue(e, &env), 0);
  }
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

static void test_random_kills(void** state) {
  fix_t* f = *state;
  static const char* const modes[] = {"normal",     "drop_after_charge",
                                      "error_5xx",  "error_5xx_after_charge",
                                      "rate_limited", "slow",
                                      "die_after_charge"};
  const char* env = getenv("OB_FENCE_ORDERS");
#if defined(__SANITIZE_ADDRESS__)
  /* Sanitized workers start several times slower: fewer orders, same
  ** variety of kill points. */
  int orders = env ? atoi(env) : 120;
#else
  int orders = env ? atoi(env) : 300;
#endif
  int kills = 0, rounds = 0, wave = 15, slow = 1;
  long long left, before = -1;
  uint64_t seed = 0x5eed0f0f1ce5ULL;
  ps_stats_t ps;
  SKIP_IF_NEEDED();
  if ((env = getenv("OB_SEED")) && *env) seed = strtoull(env, NULL, 0);
  printf("  random kills: %d orders, seed 0x%llx (OB_SEED, OB_FENCE_ORDERS)\n",
         orders, (unsigned long long)seed);
  /* Waves, so that kills land on every phase of every order: each order
  ** delivered 1-3 times, and now and then re-sent under another message id
  ** by a second producer. */
  for (int first = 1; first <= orders; first += wave) {
    int n = first + wave <= orders + 1 ? wave : orders + 1 - first;
    enqueue_orders(f, first, n, 1 + (int)(rnd(&seed) % 3));
    while (!all_done(f)) {
      pid_t pid;
      const char* m = modes[rnd(&seed) % 7];
      if (++rounds > 2000) fail_msg("no progress after 2000 rounds");
      set_mode(f, m, 1 + (int)(rnd(&seed) % 4),
               strcmp(m, "slow") == 0 ? 300 : 0, (int)(rnd(&seed) % 2));
      pid = spawn_worker(f, NULL, NULL, OB_RUN_FOREVER);
      /* Random instants; a round that changed nothing (the worker died
      ** before it could start, e.g. on a slow or sanitized build) makes the
      ** next ones longer, so the run always converges. */
      usleep((useconds_t)(10 + rnd(&seed) % 250) * 1000 * (useconds_t)slow);
      kill_now(pid);
      kills++;
      left = q(f, "SELECT count(*) FROM queue") +
             q(f, "SELECT count(*) FROM effect WHERE state IN ('pending',"
                  "'unknown')");
      slow = left == before && slow < 16 ? slow * 2 : 1;
      before = left;
      if (rounds % 7 == 0) resend(f, &seed, first + n - 1, rounds);
      /* Effects parked after their retries ran out against a failing
      ** provider: a person reconciles; the run must converge. */
      if (rounds % 20 == 0) {
        ob_engine_t* e;
        open_engine(f, &e, NULL);
        ob_effects_reconcile(e, NULL, 0);
        ob_close(e);
      }
    }
  }
  set_mode(f, "normal", 1, 0, 0);
  run_until_idle(f);
  assert_int_equal(ps_stats(f->sim, &ps), 0);
  printf("  %d workers SIGKILLed at random instants; the provider made %ld "
         "charges (and answered %ld again from a saved key since its last "
         "restart)\n", kills, ps.charges_total, ps.replays);
  check_orders(f, 1, orders);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_kill_after_claim, setup, teardown),
      cmocka_unit_test_setup_teardown(test_kill_during_call, setup, teardown),
      cmocka_unit_test_setup_teardown(test_kill_after_provider_charged, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_kill_after_outcome_commit, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_lost_reply_and_dead_provider, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_kill_after_charged_lookup_only,
                                      setup_lookup_only, teardown),
      cmocka_unit_test_setup_teardown(test_kill_after_charged_neither,
                                      setup_neither, teardown),
      cmocka_unit_test_setup_teardown(test_random_kills, setup, teardown),
  };
  /* The mutant builds run one case each (OB_TEST_FILTER, a cmocka glob). */
  const char* only = getenv("OB_TEST_FILTER");
  if (only != NULL && *only) cmocka_set_test_filter(only);
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
