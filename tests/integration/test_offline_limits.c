/* SPDX-License-Identifier: Apache-2.0 */
/* Offline limits per provider and currency (docs/offline.md), on a real
** SQLite file with a fake clock, and on PostgreSQL as offline_limits_pg
** (OB_TEST_BACKEND=postgresql). The provider is an in-process function
** (ob_effects_perform), so the link's state follows exact, scripted
** answers: a connection refused takes the provider offline, any HTTP
** answer but 401/403 brings it back.
**
** Most cases use a handler of their own ("Sale") on a provider named
** "acquirer", to see ob_tx_effect's answer itself; one runs the ChargeOrder
** module end to end. */
#include <sys/wait.h>
#include <unistd.h>

#include "tests/integration/engine_fixture.h"

#include "oncebox_charge.h"

#define PROVIDER "acquirer"
#define SALE "Sale"

/* ---- the provider ---------------------------------------------------------- */

enum { OK = 0, REFUSED = 1, TIMEOUT = 2, E503 = 3, E401 = 4 };

typedef struct provider_s {
  int mode;  /* every answer, until changed */
  int calls, charges;
  char body[128];
} provider_t;

static int perform(void* arg, const ob_effect_call_t* c, ob_effect_reply_t* r) {
  provider_t* p = arg;
  (void)c;
  p->calls++;
  r->sent = 1;
  r->body = "";
  switch (p->mode) {
    case REFUSED:
      r->status = OB_ENET;
      r->sent = 0;
      r->detail = "connection refused";
      return 0;
    case TIMEOUT:
      r->status = OB_ETIMEDOUT;
      r->detail = "timed out";
      return 0;
    case E503:
      r->status = 503;
      r->body = "{\"error\":{\"message\":\"busy\"}}";
      break;
    case E401:
      r->status = 401;
      break;
    default:
      p->charges++;
      r->status = 200;
      snprintf(p->body, sizeof p->body, "{\"id\":\"ch_%d\"}", p->charges);
      r->body = p->body;
      break;
  }
  r->body_len = strlen(r->body);
  return 0;
}

static size_t perform_all(fixture_t* f, provider_t* p) {
  size_t settled = 0;
  int rc = ob_effects_perform(f->e, perform, p, 100, &settled);
  if (rc != 0) fail_msg("perform: %s: %s", ob_strerror(rc), ob_errmsg(f->e));
  return settled;
}

/* ---- the handler: {"k":KEY,"a":AMOUNT,"c":CURRENCY}; amount 0: none ------- */

static int last_rc;            /* ob_tx_effect's last answer */
static char last_err[512];     /* and ob_errmsg then */

static int sale(ob_tx_t* tx, const ob_message_t* msg, void* arg) {
  char key[64], cur[8], body[128];
  long long amount;
  ob_effect_request_t req;
  ob_engine_t* e = arg;  /* for ob_errmsg */
  snprintf(body, sizeof body, "%.*s", (int)msg->body_len, msg->body);
  if (sscanf(body, "{\"k\":\"%40[^\"]\",\"a\":%lld,\"c\":\"%3[A-Z]\"}", key,
             &amount, cur) != 3)
    return ob_tx_fail(tx, "bad sale");
  memset(&req, 0, sizeof req);
  req.provider = PROVIDER;
  req.method = "POST";
  req.path = "/v1/sales";
  req.body = body;
  req.body_len = strlen(body);
  if (amount > 0) {
    req.amount = amount;
    req.currency = cur;
  }
  last_rc = ob_tx_effect(tx, key, &req, NULL);
  snprintf(last_err, sizeof last_err, "%s", ob_errmsg(e));
  return last_rc;
}

typedef struct limits_s {
  ob_offline_limit_t l[4];
  size_t n;
  int unlisted;
} limits_t;

static void reg(fixture_t* f, const limits_t* lim) {
  ob_provider_options_t o;
  ob_provider_options_init(&o);
  o.name = PROVIDER;
  if (lim != NULL) {
    o.offline_limits = lim->l;
    o.noffline_limits = lim->n;
    o.offline_unlisted = lim->unlisted;
  }
  assert_int_equal(ob_provider_register(f->e, &o), 0);
  assert_int_equal(ob_register(f->e, SALE, "sale-v1", sale, f->e), 0);
}

static fixture_t* setup(const limits_t* lim) {
  fixture_t* f = fx_new(8);
  reg(f, lim);
  return f;
}

static int msg_no;

/* Enqueue a sale and handle it: what ob_tx_effect answered. */
static int sell(fixture_t* f, const char* key, long long amount,
                const char* currency) {
  char id[OB_UUID_BUFLEN], body[128];
  snprintf(body, sizeof body, "{\"k\":\"%s\",\"a\":%lld,\"c\":\"%s\"}", key,
           amount, currency);
  assert_int_equal(fx_enqueue(f, SALE, fx_event(++msg_no, id), body), 0);
  last_rc = 1;
  fx_drain(f);
  return last_rc;
}

static long long effects_of(fixture_t* f, const char* key) {
  char sql[256];
  snprintf(sql, sizeof sql, "SELECT count(*) FROM effect WHERE key = '%s'",
           key);
  return fx_count(f, sql);
}

static long long stored(fixture_t* f, const char* what, const char* cur) {
  char sql[256];
  snprintf(sql, sizeof sql, "SELECT coalesce(sum(%s), 0) FROM effect_stored"
           " WHERE provider = '" PROVIDER "' AND currency = '%s'", what, cur);
  return fx_count(f, sql);
}

static long long offline_since(fixture_t* f) {
  return fx_count(f, "SELECT coalesce(max(offline_since), 0) FROM"
                     " effect_provider_link WHERE provider = '" PROVIDER "'");
}

/* Take the provider offline: an effect without an amount (neither limited
** nor stored) whose call is refused. Returns the time it went offline. */
static int64_t go_offline(fixture_t* f, provider_t* p, const char* key) {
  int old = p->mode;
  assert_int_equal(sell(f, key, 0, "XXX"), OB_WAIT);
  p->mode = REFUSED;
  perform_all(f, p);
  p->mode = old;
  assert_true(offline_since(f) > 0);
  return offline_since(f);
}

/* Everything the engine stores of its own is consistent, and the running
** totals are the sums of the open effects with an amount. */
static void assert_totals_match(fixture_t* f, const char* cur) {
  char sql[384];
  snprintf(sql, sizeof sql, "SELECT count(*) FROM effect WHERE provider = '"
           PROVIDER "' AND currency = '%s' AND state IN ('pending',"
           "'unknown')", cur);
  assert_int_equal(stored(f, "stored_count", cur), fx_count(f, sql));
  snprintf(sql, sizeof sql, "SELECT coalesce(sum(amount), 0) FROM effect"
           " WHERE provider = '" PROVIDER "' AND currency = '%s' AND state IN"
           " ('pending','unknown')", cur);
  assert_int_equal(stored(f, "stored_total", cur), fx_count(f, sql));
  assert_int_equal(ob_check(f->e, NULL, NULL), 0);
}

/* ---- offline, as defined ---------------------------------------------------- */

/* Online until the first attempt without an answer; offline from it, on
** the engine clock, across a restart; a 503 is an answer (online), a
** timeout and a 401 are not; a 200 brings it back. */
static void test_offline_definition(void** state) {
  fixture_t* f = setup(NULL);
  provider_t p = {0};
  int64_t t;
  (void)state;

  assert_int_equal(offline_since(f), 0);
  assert_int_equal(sell(f, "probe-1", 0, "XXX"), OB_WAIT);
  p.mode = E503;
  perform_all(f, &p);
  assert_int_equal(offline_since(f), 0);  /* reachable, if unwell */

  fake_clock_advance(&f->clock, 5000);
  p.mode = REFUSED;
  t = FX_T0 + 5000;
  fx_reopen(f);  /* a due effect after a restart: an attempt */
  reg(f, NULL);
  ob_effects_reconcile(f->e, NULL, 0);
  perform_all(f, &p);
  assert_int_equal(offline_since(f), t);
  /* Another failure keeps the outage's start. */
  fake_clock_advance(&f->clock, 60000);
  ob_effects_reconcile(f->e, NULL, 0);
  p.mode = TIMEOUT;
  perform_all(f, &p);
  assert_int_equal(offline_since(f), t);
  /* A restart (another process) sees it. */
  fx_reopen(f);
  reg(f, NULL);
  assert_int_equal(offline_since(f), t);
  /* Any answer ends it... */
  ob_effects_reconcile(f->e, NULL, 0);
  p.mode = E503;
  perform_all(f, &p);
  assert_int_equal(offline_since(f), 0);
  /* ...but credentials refused start it again. */
  ob_effects_reconcile(f->e, NULL, 0);
  p.mode = E401;
  perform_all(f, &p);
  assert_true(offline_since(f) > 0);
  p.mode = OK;
  ob_effects_reconcile(f->e, NULL, 0);
  perform_all(f, &p);
  assert_int_equal(offline_since(f), 0);
  fx_free(f);
}

/* ---- the limits, at their boundaries ---------------------------------------- */

static limits_t eur(int64_t max_amount, int64_t max_total,
                    int64_t max_count) {
  limits_t l;
  memset(&l, 0, sizeof l);
  l.l[0].currency = "EUR";
  l.l[0].max_amount = max_amount;
  l.l[0].max_total = max_total;
  l.l[0].max_count = max_count;
  l.l[0].max_age_ms = 24LL * 3600 * 1000;
  l.n = 1;
  return l;
}

/* The maximum of one effect: at the limit accepted, one minor unit over
** refused with OB_EOFFLINE and nothing left of it. */
static void test_max_amount(void** state) {
  limits_t l = eur(25000, 0, 0);
  fixture_t* f = setup(&l);
  provider_t p = {0};
  (void)state;

  go_offline(f, &p, "probe");
  assert_int_equal(sell(f, "s-at", 25000, "EUR"), OB_WAIT);
  assert_int_equal(effects_of(f, "s-at"), 1);
  assert_int_equal(sell(f, "s-over", 25001, "EUR"), OB_EOFFLINE);
  assert_non_null(strstr(last_err, "over the offline maximum of one effect"));
  /* Nothing behind: no effect row, no dedup record, the message still in
  ** the queue for a retry, the totals as they were. */
  assert_int_equal(effects_of(f, "s-over"), 0);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM processed_message"), 0);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM queue WHERE attempts = 1"
                               " AND waiting_on IS NULL AND last_error LIKE"
                               " '%offline%'"), 1);
  assert_int_equal(stored(f, "stored_count", "EUR"), 1);
  assert_int_equal(stored(f, "stored_total", "EUR"), 25000);
  assert_totals_match(f, "EUR");
  fx_free(f);
}

/* The stored total: up to it exactly, then one minor unit refused; an
** outcome frees its share. */
static void test_max_total(void** state) {
  limits_t l = eur(0, 10000, 0);
  fixture_t* f = setup(&l);
  provider_t p = {0};
  (void)state;

  go_offline(f, &p, "probe");
  assert_int_equal(sell(f, "t1", 4000, "EUR"), OB_WAIT);
  assert_int_equal(sell(f, "t2", 6000, "EUR"), OB_WAIT);
  assert_int_equal(stored(f, "stored_total", "EUR"), 10000);
  assert_int_equal(sell(f, "t3", 1, "EUR"), OB_EOFFLINE);
  assert_non_null(strstr(last_err, "stored total"));
  assert_int_equal(effects_of(f, "t3"), 0);
  assert_totals_match(f, "EUR");

  /* The link comes back: everything stored is forwarded, the totals are
  ** empty; offline again, the whole total is there again. */
  p.mode = OK;
  ob_effects_reconcile(f->e, NULL, 0);
  perform_all(f, &p);
  assert_int_equal(offline_since(f), 0);
  assert_int_equal(stored(f, "stored_count", "EUR"), 0);
  assert_int_equal(stored(f, "stored_total", "EUR"), 0);
  go_offline(f, &p, "probe-2");
  assert_int_equal(sell(f, "t4", 10000, "EUR"), OB_WAIT);
  assert_int_equal(sell(f, "t5", 1, "EUR"), OB_EOFFLINE);
  assert_totals_match(f, "EUR");
  fx_free(f);
}

/* The count: the last one accepted, the next refused; a failed effect (a
** decline is final) leaves the count too. */
static void test_max_count(void** state) {
  limits_t l = eur(0, 0, 3);
  fixture_t* f = setup(&l);
  provider_t p = {0};
  (void)state;

  go_offline(f, &p, "probe");
  assert_int_equal(sell(f, "c1", 100, "EUR"), OB_WAIT);
  assert_int_equal(sell(f, "c2", 100, "EUR"), OB_WAIT);
  assert_int_equal(sell(f, "c3", 100, "EUR"), OB_WAIT);
  assert_int_equal(sell(f, "c4", 100, "EUR"), OB_EOFFLINE);
  assert_non_null(strstr(last_err, "3 EUR effects are stored"));
  assert_int_equal(effects_of(f, "c4"), 0);
  /* A person's verdict is an outcome too: c1 leaves the count, and the
  ** next sale fits (a new message: c4's own waits for its retry). */
  assert_int_equal(ob_effect_resolve(f->e, "c1", OB_EFFECT_FAILED,
                                     "not charged, checked by phone"), 0);
  assert_int_equal(stored(f, "stored_count", "EUR"), 2);
  assert_int_equal(sell(f, "c5", 100, "EUR"), OB_WAIT);
  assert_int_equal(stored(f, "stored_count", "EUR"), 3);
  /* Another currency has its own totals, and no limit (the default). */
  assert_int_equal(sell(f, "u1", 100000, "USD"), OB_WAIT);
  assert_int_equal(stored(f, "stored_count", "USD"), 1);
  assert_totals_match(f, "EUR");
  assert_totals_match(f, "USD");
  /* ob_check sees totals that drifted from the effects. */
  ts_backend_exec(f->db_path, "UPDATE effect_stored SET stored_total ="
                              " stored_total + 1 WHERE currency = 'USD'");
  assert_int_equal(ob_check(f->e, NULL, NULL), 1);
  ts_backend_exec(f->db_path, "INSERT INTO effect_stored(provider, currency,"
                              " stored_count, stored_total) VALUES ('x',"
                              " 'GBP', 1, 5)");
  assert_int_equal(ob_check(f->e, NULL, NULL), 2);
  fx_free(f);
}

/* Online, nothing is limited (but what is open is counted); offline, what
** was taken online counts against the total. */
static void test_online_not_limited(void** state) {
  limits_t l = eur(1000, 1000, 1);
  fixture_t* f = setup(&l);
  provider_t p = {0};
  (void)state;

  assert_int_equal(sell(f, "on1", 50000, "EUR"), OB_WAIT);
  assert_int_equal(sell(f, "on2", 50000, "EUR"), OB_WAIT);
  assert_int_equal(stored(f, "stored_total", "EUR"), 100000);
  /* The same after the link has been seen working. */
  perform_all(f, &p);
  assert_int_equal(p.charges, 2);
  assert_int_equal(offline_since(f), 0);
  assert_int_equal(sell(f, "on3", 70000, "EUR"), OB_WAIT);
  assert_int_equal(stored(f, "stored_total", "EUR"), 70000);
  /* Offline: on3 is still open, so even a small sale is over. */
  go_offline(f, &p, "probe");
  assert_int_equal(sell(f, "off1", 10, "EUR"), OB_EOFFLINE);
  assert_totals_match(f, "EUR");
  fx_free(f);
}

/* A currency without limits: the vendor's default decides. */
static void test_unlisted_currency(void** state) {
  limits_t l = eur(1000, 0, 0);
  fixture_t* f;
  provider_t p = {0};
  (void)state;

  l.unlisted = OB_OFFLINE_REFUSE;
  f = setup(&l);
  assert_int_equal(sell(f, "usd-online", 500, "USD"), OB_WAIT);
  go_offline(f, &p, "probe");
  assert_int_equal(sell(f, "usd-offline", 1, "USD"), OB_EOFFLINE);
  assert_non_null(strstr(last_err, "no offline limit is set for USD"));
  assert_int_equal(sell(f, "eur-offline", 1000, "EUR"), OB_WAIT);
  /* An effect without an amount is not limited. */
  assert_int_equal(sell(f, "plain", 0, "XXX"), OB_WAIT);
  assert_int_equal(effects_of(f, "usd-offline"), 0);
  fx_free(f);
}

/* Bad limits are refused at registration; a bad amount at the claim. */
static void test_bad_input(void** state) {
  fixture_t* f = fx_new(8);
  ob_provider_options_t o;
  ob_offline_limit_t l[2];
  (void)state;
  memset(l, 0, sizeof l);
  ob_provider_options_init(&o);
  o.name = PROVIDER;
  o.offline_limits = l;
  o.noffline_limits = 1;
  l[0].currency = "eur";
  assert_int_equal(ob_provider_register(f->e, &o), OB_EINVAL);
  l[0].currency = "EUR";
  l[0].max_total = -1;
  assert_int_equal(ob_provider_register(f->e, &o), OB_EINVAL);
  l[0].max_total = 0;
  l[1] = l[0];
  o.noffline_limits = 2;  /* EUR twice */
  assert_int_equal(ob_provider_register(f->e, &o), OB_EINVAL);
  o.noffline_limits = 1;
  o.offline_unlisted = 7;
  assert_int_equal(ob_provider_register(f->e, &o), OB_EINVAL);
  o.offline_unlisted = OB_OFFLINE_REFUSE;
  assert_int_equal(ob_provider_register(f->e, &o), 0);
  assert_int_equal(ob_register(f->e, SALE, "sale-v1", sale, f->e), 0);
  /* An amount without a currency (the handler passes "XX" as none). */
  {
    char id[OB_UUID_BUFLEN];
    assert_int_equal(fx_enqueue(f, SALE, fx_event(++msg_no, id),
                                "{\"k\":\"b1\",\"a\":5,\"c\":\"EU\"}"), 0);
    last_rc = 1;
    fx_drain(f);
    assert_int_equal(last_rc, OB_EINVAL);
  }
  fx_free(f);
}

/* ---- the refusal, end to end with ChargeOrder --------------------------------- */

/* A refused order is not consumed: it waits for a retry with no effect and
** no charge; once the provider is back its retry is an online charge, made
** once. */
static void test_charge_order_refused_then_charged(void** state) {
  fixture_t* f = fx_new(8);
  ob_provider_options_t o;
  ob_offline_limit_t l;
  provider_t p = {0};
  char id[OB_UUID_BUFLEN];
  ob_batch_result_t r;
  (void)state;

  memset(&l, 0, sizeof l);
  l.currency = "EUR";
  l.max_amount = 25000;
  ob_provider_options_init(&o);
  o.name = OB_CHARGE_PROVIDER;
  o.offline_limits = &l;
  o.noffline_limits = 1;
  assert_int_equal(ob_provider_register(f->e, &o), 0);
  assert_int_equal(ob_register_charge_order(f->e), 0);

  /* The first order finds the provider unreachable. */
  assert_int_equal(fx_enqueue(f, OB_CHARGE_MESSAGE_TYPE, fx_event(1, id),
                              "{\"orderId\":\"o-1\",\"amountInMinorUnits\":"
                              "25000,\"currency\":\"EUR\"}"), 0);
  r = fx_drain(f);
  assert_int_equal(r.waiting, 1);
  p.mode = REFUSED;
  perform_all(f, &p);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM effect_provider_link"
                               " WHERE provider = '" OB_CHARGE_PROVIDER "'"
                               " AND offline_since IS NOT NULL"), 1);
  /* Offline: at the limit stored, one cent over refused. */
  assert_int_equal(fx_enqueue(f, OB_CHARGE_MESSAGE_TYPE, fx_event(2, id),
                              "{\"orderId\":\"o-2\",\"amountInMinorUnits\":"
                              "25001,\"currency\":\"EUR\"}"), 0);
  r = fx_drain(f);
  assert_int_equal(r.waiting, 0);
  assert_int_equal(r.retried, 1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM effect WHERE key ="
                               " 'charge:o-2'"), 0);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM queue WHERE"
                               " waiting_on IS NULL AND last_error LIKE"
                               " '%offline limit%'"), 1);
  /* Back online: o-1 is charged, and o-2's retry is charged online. */
  p.mode = OK;
  ob_effects_reconcile(f->e, NULL, 0);
  perform_all(f, &p);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM effect_provider_link"
                               " WHERE offline_since IS NOT NULL"), 0);
  fake_clock_advance(&f->clock, 3600 * 1000);
  r = fx_drain(f);
  assert_int_equal(r.waiting, 1);
  perform_all(f, &p);
  assert_int_equal(p.charges, 2);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM charge"), 2);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM queue"), 0);
  assert_int_equal(fx_count(f, "SELECT coalesce(sum(stored_count), 0) FROM"
                               " effect_stored"), 0);
  assert_int_equal(ob_check(f->e, NULL, NULL), 0);
  fx_free(f);
}

/* ---- two processes, the last of the stored total ------------------------------ */

/* A child: its own engine on the shared database, batch 1; waits for the
** go byte, handles one message. Exit 10 it stored a sale, 11 refused, other:
** a fault. No cmocka in here. */
static int race_child(const char* db_path, int64_t now, const limits_t* lim,
                      int ready_fd, int go_fd) {
  ob_options_t opts;
  ob_engine_t* e;
  fake_clock_t clk;
  ob_provider_options_t o;
  ob_batch_result_t r;
  char err[256], c;
  int rc;

  fake_clock_init(&clk, now, 7);
  ob_options_init(&opts);
  opts.db_path = db_path;
  opts.clock = &clk.clock;
  opts.batch_size = 1;
  if (ob_open(&e, &opts, err, sizeof err) != 0) return 2;
  ob_provider_options_init(&o);
  o.name = PROVIDER;
  o.offline_limits = lim->l;
  o.noffline_limits = lim->n;
  if (ob_provider_register(e, &o) != 0 ||
      ob_register(e, SALE, "sale-v1", sale, e) != 0)
    return 3;
  if (write(ready_fd, "r", 1) != 1 || read(go_fd, &c, 1) != 1) return 4;
  rc = ob_run_once(e, &r);
  ob_close(e);
  if (rc != 0 || r.claimed != 1) return 5;
  if (r.waiting == 1 && last_rc == OB_WAIT) return 10;
  if (r.retried == 1 && last_rc == OB_EOFFLINE) return 11;
  /* Refused under the lock, after ob_tx_effect said yes (PostgreSQL). */
  if (r.retried == 1 && last_rc == OB_WAIT) return 12;
  return 6;
}

static void test_two_processes_race_for_the_last(void** state) {
  limits_t l = eur(0, 1000, 0);
  (void)state;
  for (int round = 0; round < 8; round++) {
    fixture_t* f = setup(&l);
    provider_t p = {0};
    char id[OB_UUID_BUFLEN];
    int ready[2], go[2], won = 0, lost = 0, late = 0;
    pid_t kid[2];

    go_offline(f, &p, "probe");
    assert_int_equal(sell(f, "base", 900, "EUR"), OB_WAIT);
    /* Two sales of 100 for the last 100 of the total. */
    assert_int_equal(fx_enqueue(f, SALE, fx_event(++msg_no, id),
                                "{\"k\":\"r1\",\"a\":100,\"c\":\"EUR\"}"), 0);
    assert_int_equal(fx_enqueue(f, SALE, fx_event(++msg_no, id),
                                "{\"k\":\"r2\",\"a\":100,\"c\":\"EUR\"}"), 0);
    assert_int_equal(pipe(ready), 0);
    assert_int_equal(pipe(go), 0);
    for (int i = 0; i < 2; i++) {
      kid[i] = fork();
      assert_true(kid[i] >= 0);
      if (kid[i] == 0)
        _exit(race_child(f->db_path, FX_T0 + 1000, &l, ready[1], go[0]));
    }
    for (int i = 0; i < 2; i++) {
      char c;
      assert_int_equal(read(ready[0], &c, 1), 1);
    }
    assert_int_equal(write(go[1], "gg", 2), 2);
    for (int i = 0; i < 2; i++) {
      int st;
      assert_int_equal(waitpid(kid[i], &st, 0), kid[i]);
      assert_true(WIFEXITED(st));
      if (WEXITSTATUS(st) == 10) won++;
      else if (WEXITSTATUS(st) == 11) lost++;
      else if (WEXITSTATUS(st) == 12) lost++, late++;
      else fail_msg("child %d exited %d", i, WEXITSTATUS(st));
    }
    close(ready[0]), close(ready[1]), close(go[0]), close(go[1]);
    assert_int_equal(won, 1);
    assert_int_equal(lost, 1);
    /* Which check refused it: the handler's, or the claim's under the
    ** lock (both processes past the first: PostgreSQL only). */
    print_message("round %d: the loser was refused %s\n", round,
                  late ? "under the lock, at the claim" : "by ob_tx_effect");
    assert_int_equal(fx_count(f, "SELECT count(*) FROM effect WHERE key IN"
                                 " ('r1','r2')"), 1);
    assert_int_equal(stored(f, "stored_total", "EUR"), 1000);
    assert_totals_match(f, "EUR");
    fx_free(f);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_offline_definition),
      cmocka_unit_test(test_max_amount),
      cmocka_unit_test(test_max_total),
      cmocka_unit_test(test_max_count),
      cmocka_unit_test(test_online_not_limited),
      cmocka_unit_test(test_unlisted_currency),
      cmocka_unit_test(test_bad_input),
      cmocka_unit_test(test_charge_order_refused_then_charged),
      cmocka_unit_test(test_two_processes_race_for_the_last),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
