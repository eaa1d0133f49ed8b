/* SPDX-License-Identifier: Apache-2.0 */
/* Persisted deadlines when the wall clock jumps (docs/field.md, "Clocks
** that jump"), on fake clocks: a retry, a relay claim, an outbox backoff,
** an effect's backoff and lease keep their length when the clock goes back
** (the engine clock runs on: docs/decisions/0019),
** within one run and across a restart, and each is then waited for no
** longer than its own length; a scheduled message keeps its delay; a lease
** taken before a forward jump still holds for its length of monotonic
** time, against every engine that was running across the jump. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/fence/fence.h"
#include "core/relay/relay_tx.h"
#include "oncebox_charge.h"
#include "oncebox_payout.h"
#include "tests/integration/clocks/clocks.h"

/* The first retry of the default policy: 1 s, +-10% jitter. */
#define RETRY_BOUND_MS 1100
#define RELAY_LEASE_MS 60000
#define EFFECT_LEASE_MS 120000  /* ob_provider_options_init's */

typedef struct dl_s {
  fixture_t* f;
  jump_clock_t jc;
  warn_log_t log;
  int done;  /* messages handled by flaky() and later() */
} dl_t;

static void dl_new(dl_t* d) {
  memset(d, 0, sizeof *d);
  d->f = calloc(1, sizeof *d->f);
  d->f->dir = ts_mkdtemp("deadlines");
  d->f->db_path = ts_backend_db(d->f->dir, "t.db");
  jc_init(&d->jc);
  ob_options_init(&d->f->opts);
  d->f->opts.db_path = d->f->db_path;
  d->f->opts.clock = &d->jc.clock;
  d->f->opts.batch_size = 8;
  d->f->opts.log_record = warn_log_cb;
  d->f->opts.log_record_ctx = &d->log;
  d->f->opts.log_level = OB_LOG_WARN;
  fx_open(d->f);
}

/* A second engine on the same file and the same clock (another process
** of the terminal), with its own log. */
static ob_engine_t* dl_other(dl_t* d, warn_log_t* log) {
  ob_options_t o = d->f->opts;
  ob_engine_t* e = NULL;
  char err[256];
  o.log_record_ctx = log;
  if (ob_open(&e, &o, err, sizeof err) != 0) fail_msg("ob_open: %s", err);
  return e;
}

/* Fails its first delivery, then succeeds. */
static int flaky(ob_tx_t* tx, const ob_message_t* m, void* arg) {
  dl_t* d = arg;
  if (m->attempts == 0) return ob_tx_retry(tx, -1, "supplier busy");
  d->done++;
  return OB_DONE;
}

static int later(ob_tx_t* tx, const ob_message_t* m, void* arg) {
  (void)tx;
  (void)m;
  ((dl_t*)arg)->done++;
  return OB_DONE;
}

static long long unpublished(dl_t* d) {
  return fx_count(d->f, "SELECT count(*) FROM outbox_event WHERE"
                        " published_at IS NULL");
}

/* Twenty messages wait for their first retry (1 s); the wall clock goes
** back a day while the engine runs: all are handled within the policy's
** bound, and the jump is logged once. */
void test_retries_after_backward_jump_in_run(void** state) {
  dl_t d;
  char id[OB_UUID_BUFLEN];
  ob_batch_result_t r;
  int64_t waited = 0;
  (void)state;
  dl_new(&d);
  assert_int_equal(ob_register(d.f->e, "Stock", "reserve-v1", flaky, &d), 0);
  for (int i = 0; i < 20; i++)
    assert_int_equal(fx_enqueue(d.f, "Stock", fx_event(i, id), "{}"), 0);
  r = fx_drain(d.f);
  assert_int_equal(r.retried, 20);
  d.jc.wall -= DAY;
  while (d.done < 20 && waited < 3 * RETRY_BOUND_MS) {
    jc_pass(&d.jc, 50);
    waited += 50;
    fx_drain(d.f);
  }
  assert_int_equal(d.done, 20);
  assert_true(waited <= RETRY_BOUND_MS + 50);
  assert_int_equal(fx_count(d.f, "SELECT count(*) FROM queue"), 0);
  assert_int_equal(d.log.n, 1);
  if (strstr(d.log.last, "clock went back 86400 s: the engine clock runs on") ==
      NULL)
    fail_msg("logged: %s", d.log.last);
  fx_free(d.f);
}

/* Claim up to 10 rows for token; publish them if ok, else fail them with
** a backoff of 2 s (+-10%). Returns the number of rows claimed. */
static int relay_round(ob_engine_t* e, const char* token, int ok, int settle) {
  ob__relay_row_t rows[10];
  ob__relay_result_t res[10];
  ob__relay_settled_t out;
  int n = ob__relay_take(e, token, RELAY_LEASE_MS, 10, 0, NULL, 0, rows);
  if (n < 0) fail_msg("ob__relay_take: %s", ob_errmsg(e));
  for (int i = 0; i < n; i++) {
    res[i].ok = ok;
    res[i].park = 0;
    res[i].error = ok ? NULL : "InternalError: try again";
  }
  if (n > 0 && settle)
    assert_int_equal(ob__relay_settle(e, token, rows, res, (size_t)n, 10, 2000,
                                      2000, &out),
                     0);
  for (int i = 0; i < n; i++) ob__relay_row_free(&rows[i]);
  return n;
}

static void payments(dl_t* d, int from, int n) {
  char id[OB_UUID_BUFLEN], body[256];
  for (int i = from; i < from + n; i++)
    assert_int_equal(fx_enqueue(d->f, OB_PAYOUT_MESSAGE_TYPE, fx_event(i, id),
                                fx_payment(i, body)),
                     0);
  fx_drain(d->f);
}

/* The field's case: a relay killed with 20 rows claimed for 60 s, 10 more
** backing off 2 s, and a restart with the clock set back a day. The rows
** backing off go out within their backoff, the claimed ones once the
** dead relay's lease has run for its length (not before: a re-base never
** shortens a lease), all 30 within the lease. */
void test_relay_leases_after_backward_restart(void** state) {
  CLOCKS_SQLITE_ONLY("a dead relay's lease runs out by the fake clock; on"
                     " PostgreSQL leases are on the server's clock, which no"
                     " host's jump moves (pg_backend tests them)");
  dl_t d;
  const char* dead = "0190b6d8-0000-7000-8000-00000000dead";
  int64_t t = 0, t_backoff = -1, t_all = -1;
  (void)state;
  dl_new(&d);
  assert_int_equal(ob_register_payout(d.f->e), 0);
  payments(&d, 0, 30);
  assert_int_equal(unpublished(&d), 30);
  assert_int_equal(relay_round(d.f->e, "0190b6d8-0000-7000-8000-0000000000f1",
                               0, 1),
                   10);
  assert_int_equal(relay_round(d.f->e, dead, 1, 0), 10);
  assert_int_equal(relay_round(d.f->e, dead, 1, 0), 10);
  ob_close(d.f->e);  /* killed: nothing given back */
  d.f->e = NULL;
  d.jc.wall -= DAY - 5000;
  d.jc.mono = 1000;  /* a new process: its monotonic clock starts anywhere */
  fx_open(d.f);
  while (t_all < 0 && t < 2 * RELAY_LEASE_MS) {
    relay_round(d.f->e, "0190b6d8-0000-7000-8000-0000000000f2", 1, 1);
    if (t_backoff < 0 && unpublished(&d) <= 20) t_backoff = t;
    if (unpublished(&d) == 0) t_all = t;
    if (t == RELAY_LEASE_MS - 500) assert_int_equal(unpublished(&d), 20);
    jc_pass(&d.jc, 500);
    t += 500;
  }
  assert_true(t_backoff >= 0 && t_backoff <= 2200 + 500);
  assert_true(t_all >= RELAY_LEASE_MS && t_all <= RELAY_LEASE_MS + 500);
  /* Said once, at the open: nothing had to move. */
  assert_int_equal(d.log.n, 1);
  if (strstr(d.log.last, "clock went back 86395 s (behind the engine clock") ==
      NULL)
    fail_msg("logged: %s", d.log.last);
  fx_free(d.f);
}

/* ---- effects -------------------------------------------------------------- */

/* An in-process provider that honours idempotency keys: answers 503 to
** the next fail_next calls, then charges. */
typedef struct prov_s {
  int fail_next;
  int calls;
  char body[128];
} prov_t;

static int perform(void* arg, const ob_effect_call_t* c, ob_effect_reply_t* r) {
  prov_t* p = arg;
  (void)c;
  r->sent = 1;
  if (p->fail_next > 0) {
    p->fail_next--;
    r->status = 503;
    snprintf(p->body, sizeof p->body, "{\"error\":{\"message\":\"busy\"}}");
  } else {
    p->calls++;
    r->status = 200;
    snprintf(p->body, sizeof p->body,
             "{\"id\":\"ch_%d\",\"status\":\"succeeded\"}", p->calls);
  }
  r->body = p->body;
  r->body_len = strlen(p->body);
  return 0;
}

static void charge_module(ob_engine_t* e) {
  ob_provider_options_t o;
  ob_provider_options_init(&o);
  o.name = OB_CHARGE_PROVIDER;
  assert_int_equal(ob_provider_register(e, &o), 0);
  assert_int_equal(ob_register_charge_order(e), 0);
}

static void order(dl_t* d, int n) {
  char id[OB_UUID_BUFLEN], body[160];
  snprintf(body, sizeof body,
           "{\"orderId\":\"order-%d\",\"amountInMinorUnits\":100,"
           "\"currency\":\"EUR\"}",
           n);
  assert_int_equal(fx_enqueue(d->f, OB_CHARGE_MESSAGE_TYPE,
                              fx_event(500 + n, id), body),
                   0);
  assert_int_equal(fx_drain(d->f).waiting, 1);
}

static long long charges(dl_t* d) {
  return fx_count(d->f, "SELECT count(*) FROM charge");
}

static void perform_all(ob_engine_t* e, prov_t* p) {
  int rc = ob_effects_perform(e, perform, p, 10, NULL);
  if (rc != 0) fail_msg("perform: %s: %s", ob_strerror(rc), ob_errmsg(e));
}

/* An effect backing off after a 503 when the clock goes back a day in the
** run: performed within its retry bound. Then an effect leased by a
** process that was killed, and a restart a day back: performed once the
** lease has run its length, not before. Each order is charged once. */
void test_effect_deadlines_after_backward_jump(void** state) {
  CLOCKS_SQLITE_ONLY("a dead holder's lease runs out by the fake clock; on"
                     " PostgreSQL leases are on the server's clock, which no"
                     " host's jump moves (pg_backend tests them)");
  dl_t d;
  prov_t p = {1, 0, ""};
  ob__effect_job_t job;
  int64_t t = 0;
  (void)state;
  dl_new(&d);
  charge_module(d.f->e);
  order(&d, 1);
  perform_all(d.f->e, &p);
  assert_int_equal(p.fail_next, 0);
  assert_int_equal(charges(&d), 0);
  d.jc.wall -= DAY;
  while (charges(&d) == 0 && t < 3 * RETRY_BOUND_MS) {
    jc_pass(&d.jc, 50);
    t += 50;
    perform_all(d.f->e, &p);
  }
  assert_int_equal(charges(&d), 1);
  assert_true(t <= RETRY_BOUND_MS + 50);
  if (strstr(d.log.last, "clock went back 86400 s") == NULL)
    fail_msg("logged: %s", d.log.last);

  order(&d, 2);
  assert_int_equal(ob__effect_take(d.f->e, NULL, 1, &job), 1);
  ob__effect_job_free(&job);
  ob_close(d.f->e);  /* killed with the effect in hand */
  d.f->e = NULL;
  d.jc.wall -= DAY;
  d.jc.mono = 1000;
  fx_open(d.f);
  charge_module(d.f->e);
  for (t = 0; charges(&d) == 1 && t < 2 * EFFECT_LEASE_MS; t += 1000) {
    perform_all(d.f->e, &p);
    if (charges(&d) == 1) jc_pass(&d.jc, 1000);
  }
  assert_int_equal(charges(&d), 2);
  /* + the step, + up to OB__CLOCK_JUMP_MIN_MS the engine clock had run
  ** past the value its last commit recorded (engine_clock.c). */
  if (t < EFFECT_LEASE_MS || t > EFFECT_LEASE_MS + 1000 + 1000)
    fail_msg("the dead holder's lease ran out after %lld ms", (long long)t);
  assert_int_equal(p.calls, 2);
  assert_int_equal(fx_count(d.f, "SELECT count(*) FROM queue"), 0);
  fx_free(d.f);
}

/* ---- a scheduled message -------------------------------------------------- */

/* A message scheduled 2 days ahead, and a retry due in 1 s; the clock goes
** back a day. The retry runs at once (the engine clock ran on), the scheduled
** message neither a day early (what bounding every deadline by the policy
** would do) nor a day late: 2 days after it was enqueued. A restart in
** between re-bases nothing twice. */
void test_scheduled_message_not_pulled_in(void** state) {
  dl_t d;
  char id[OB_UUID_BUFLEN];
  ob_envelope_t env;
  int64_t elapsed = 0;
  (void)state;
  dl_new(&d);
  assert_int_equal(ob_register(d.f->e, "Stock", "reserve-v1", flaky, &d), 0);
  assert_int_equal(ob_register(d.f->e, "Later", "later-v1", later, &d), 0);
  memset(&env, 0, sizeof env);
  env.type = "Later";
  env.id = fx_event(900, id);
  env.body = "{}";
  env.body_len = 2;
  env.delay_ms = 2 * DAY;
  assert_int_equal(ob_enqueue(d.f->e, &env), 0);
  assert_int_equal(fx_enqueue(d.f, "Stock", fx_event(901, id), "{}"), 0);
  assert_int_equal(fx_drain(d.f).retried, 1);
  d.jc.wall -= DAY;
  jc_pass(&d.jc, RETRY_BOUND_MS);
  elapsed += RETRY_BOUND_MS;
  fx_drain(d.f);
  assert_int_equal(d.done, 1);  /* the retry only */
  if (strstr(d.log.last, "clock went back 86400 s: the engine clock runs on") ==
      NULL)
    fail_msg("logged: %s", d.log.last);
  fx_reopen(d.f);
  assert_int_equal(ob_register(d.f->e, "Later", "later-v1", later, &d), 0);
  /* The restart says again that the wall clock is behind, and moves
  ** nothing. */
  assert_int_equal(d.log.n, 2);
  if (strstr(d.log.last, "(behind the engine clock this database recorded)") ==
      NULL)
    fail_msg("logged: %s", d.log.last);
  jc_pass(&d.jc, DAY + 60000 - elapsed);
  elapsed = DAY + 60000;
  fx_drain(d.f);
  assert_int_equal(d.done, 1);
  jc_pass(&d.jc, 2 * DAY - 60000 - elapsed);
  elapsed = 2 * DAY - 60000;
  fx_drain(d.f);
  assert_int_equal(d.done, 1);
  jc_pass(&d.jc, 2 * DAY + 1000 - elapsed);
  fx_drain(d.f);
  assert_int_equal(d.done, 2);
  fx_free(d.f);
}

/* ---- forward jumps: leases hold ------------------------------------------- */

/* Engine A claims 10 rows for 60 s; the clock jumps forward an hour. Engine
** B, running since before the jump, takes none of them while A's lease
** has run less than its length of monotonic time, and A's marks count.
** Then A dies with 10 rows claimed and the clock jumps again: B, and an
** engine C opened after the jump, wait out the lease, and B takes them
** once it has run its length. What this asserts: no two live claims of
** one row against any engine that ran across the jump, and progress
** within the lease after it. */
void test_forward_jump_keeps_relay_leases(void** state) {
  CLOCKS_SQLITE_ONLY("a dead relay's lease runs out by the fake clock; on"
                     " PostgreSQL leases are on the server's clock, which no"
                     " host's jump moves (pg_backend tests them)");
  dl_t d;
  warn_log_t blog = {0, ""}, clog = {0, ""};
  ob_engine_t *b, *c;
  const char* tb = "0190b6d8-0000-7000-8000-0000000000b0";
  (void)state;
  dl_new(&d);
  assert_int_equal(ob_register_payout(d.f->e), 0);
  payments(&d, 0, 10);
  b = dl_other(&d, &blog);
  {
    ob__relay_row_t rows[10];
    ob__relay_result_t res[10];
    ob__relay_settled_t out;
    const char* ta = "0190b6d8-0000-7000-8000-0000000000a0";
    assert_int_equal(ob__relay_take(d.f->e, ta, RELAY_LEASE_MS, 10, 0, NULL, 0,
                                    rows),
                     10);
    d.jc.wall += 3600 * 1000;
    jc_pass(&d.jc, 1000);
    assert_int_equal(relay_round(b, tb, 1, 1), 0);
    if (strstr(blog.last, "clock went forward 3600 s") == NULL)
      fail_msg("B logged: %s", blog.last);
    jc_pass(&d.jc, RELAY_LEASE_MS - 2000);
    assert_int_equal(relay_round(b, tb, 1, 1), 0);
    for (int i = 0; i < 10; i++) res[i] = (ob__relay_result_t){1, 0, NULL};
    assert_int_equal(ob__relay_settle(d.f->e, ta, rows, res, 10, 10, 1000,
                                      300000, &out),
                     0);
    assert_int_equal(out.published, 10);
    assert_int_equal(out.lost_leases, 0);
    for (int i = 0; i < 10; i++) ob__relay_row_free(&rows[i]);
  }
  payments(&d, 10, 10);
  assert_int_equal(relay_round(d.f->e, "0190b6d8-0000-7000-8000-0000000000a1",
                               1, 0),
                   10);
  ob_close(d.f->e);  /* A dies holding them */
  d.f->e = NULL;
  d.jc.wall += 3600 * 1000;
  jc_pass(&d.jc, 1000);
  assert_int_equal(relay_round(b, tb, 1, 1), 0);
  c = dl_other(&d, &clog);
  jc_pass(&d.jc, RELAY_LEASE_MS - 2000);
  assert_int_equal(relay_round(c, "0190b6d8-0000-7000-8000-0000000000c0", 1, 1),
                   0);
  assert_int_equal(relay_round(b, tb, 1, 1), 0);
  jc_pass(&d.jc, 2000);
  assert_int_equal(relay_round(b, tb, 1, 1), 10);
  assert_int_equal(unpublished(&d), 0);
  ob_close(c);
  ob_close(b);
  fx_free(d.f);
}

/* The same for an effect in hand (lease 120 s): after a forward jump of an
** hour, no engine that ran across it takes the effect while its lease
** runs, so the provider is never called twice at once; a dead holder's
** effect is taken once the lease has run, and each order is charged once. */
void test_forward_jump_keeps_effect_leases(void** state) {
  CLOCKS_SQLITE_ONLY("a dead holder's lease runs out by the fake clock; on"
                     " PostgreSQL leases are on the server's clock, which no"
                     " host's jump moves (pg_backend tests them)");
  dl_t d;
  warn_log_t blog = {0, ""};
  ob_engine_t* b;
  prov_t p = {0, 0, ""};
  ob__effect_job_t job;
  ob_effect_reply_t reply;
  (void)state;
  dl_new(&d);
  charge_module(d.f->e);
  b = dl_other(&d, &blog);
  charge_module(b);
  order(&d, 1);
  assert_int_equal(ob__effect_take(d.f->e, NULL, 1, &job), 1);
  d.jc.wall += 3600 * 1000;
  jc_pass(&d.jc, 1000);
  perform_all(b, &p);
  assert_int_equal(p.calls, 0);
  jc_pass(&d.jc, EFFECT_LEASE_MS - 2000);
  perform_all(b, &p);
  assert_int_equal(p.calls, 0);
  memset(&reply, 0, sizeof reply);
  reply.status = 200;
  reply.sent = 1;
  reply.body = "{\"id\":\"ch_a\",\"status\":\"succeeded\"}";
  reply.body_len = strlen(reply.body);
  assert_int_equal(ob__effect_settle(d.f->e, &job, &reply, NULL), 0);
  ob__effect_job_free(&job);
  assert_int_equal(charges(&d), 1);

  order(&d, 2);
  assert_int_equal(ob__effect_take(d.f->e, NULL, 1, &job), 1);
  ob__effect_job_free(&job);
  ob_close(d.f->e);  /* A dies with the effect in hand */
  d.f->e = NULL;
  d.jc.wall += 3600 * 1000;
  jc_pass(&d.jc, 1000);
  perform_all(b, &p);
  jc_pass(&d.jc, EFFECT_LEASE_MS - 2000);
  perform_all(b, &p);
  assert_int_equal(p.calls, 0);
  jc_pass(&d.jc, 2000);
  perform_all(b, &p);
  assert_int_equal(p.calls, 1);
  ob_close(b);
  assert_int_equal(charges(&d), 2);
  fx_free(d.f);
}
