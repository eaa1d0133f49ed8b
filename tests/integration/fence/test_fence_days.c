/* SPDX-License-Identifier: Apache-2.0 */
/*
** The fence across days, against a provider that follows real providers'
** public idempotency rules rather than one that keeps every key forever
** (issue 14, docs/fence.md "Providers forget keys"). In-process
** (ob_effects_perform) on a real SQLite file with a controllable clock, so
** every day that passes is exact.
**
** The provider model here is written from:
**   - Stripe, https://docs.stripe.com/api/idempotent_requests: the first
**     result for a key (success or error, 500s included) is saved and
**     replayed for the same key, marked `Idempotent-Replayed: true`; keys
**     are pruned once they are at least 24 hours old, after which the key
**     is a new request; the same key with other parameters is a 400
**     `idempotency_error`; a key whose first request is still running is a
**     409 (code `idempotency_key_in_use`);
**   - Stripe's Search API, https://docs.stripe.com/search: charges found by
**     their metadata (here the order id the request carries), answered as
**     {"object":"search_result","data":[...]}, whatever key made them;
**   - draft-ietf-httpapi-idempotency-key-header: 422 when a key is reused
**     with another payload, 409 while the first request is in progress.
** The provider's clock is the test's wall clock: pruning happens in the
** provider's own time, whatever the terminal's engine observed.
*/
#include "tests/integration/engine_fixture.h"

#include "core/fence/fence.h"
#include "oncebox_charge.h"

#define HOUR (3600LL * 1000)
#define MAX_KEYS 32

/* A clock whose wall and monotonic parts move separately (a wall clock set
** back or forward while the engine runs; a shutdown moves both). */
typedef struct jclock_s {
  ob_clock_t clock;
  int64_t wall, mono;
  uint64_t state;
} jclock_t;

static int64_t jc_now(void* ctx) { return ((jclock_t*)ctx)->wall; }
static int64_t jc_mono(void* ctx) { return ((jclock_t*)ctx)->mono; }
static void jc_random(void* ctx, void* buf, size_t n) {
  jclock_t* c = ctx;
  for (size_t i = 0; i < n; i++) {
    c->state ^= c->state << 13;
    c->state ^= c->state >> 7;
    c->state ^= c->state << 17;
    ((unsigned char*)buf)[i] = (unsigned char)c->state;
  }
}

/* Time passes: both clocks (the engine runs, or the terminal is off: the
** engine is reopened by the caller then, and observes nothing of it). */
static void pass(jclock_t* c, int64_t ms) {
  c->wall += ms;
  c->mono += ms;
}

typedef enum { P_STRIPE, P_IETF } profile_t;
enum { NORMAL = 0, LOST_REPLY, HOLD, E500_SAVED, OFFLINE };

typedef struct saved_s {
  char key[OB_UUID_BUFLEN];
  char body[256];          /* the request's parameters */
  int64_t first_at;        /* provider time of the first request */
  int status;
  char reply[256];
  int running;             /* the first request is still being processed */
} saved_t;

typedef struct provider_s {
  profile_t profile;
  jclock_t* clock;
  int64_t retention_ms;
  saved_t keys[MAX_KEYS];
  int nkeys;
  int script[16];
  int nscript;
  int calls, charges, searches;
  char orders_charged[MAX_KEYS][256];
  char out[256];
} provider_t;

static saved_t* find(provider_t* p, const char* key) {
  for (int i = 0; i < p->nkeys; i++) {
    saved_t* s = &p->keys[i];
    if (strcmp(s->key, key) != 0) continue;
    /* Pruned: at least retention_ms old on the provider's clock. */
    if (p->clock->wall - s->first_at >= p->retention_ms) {
      *s = p->keys[--p->nkeys];
      return NULL;
    }
    return s;
  }
  return NULL;
}

static int charges_of(provider_t* p, const char* order) {
  int n = 0;
  for (int i = 0; i < p->charges; i++)
    if (strstr(p->orders_charged[i], order) != NULL) n++;
  return n;
}

static int perform(void* arg, const ob_effect_call_t* c, ob_effect_reply_t* r) {
  provider_t* p = arg;
  int mode = NORMAL;
  saved_t* s;
  char body[256];
  if (p->nscript > 0) {
    mode = p->script[0];
    memmove(p->script, p->script + 1, sizeof p->script - sizeof p->script[0]);
    p->nscript--;
  }
  if (mode == OFFLINE) {
    /* No route to the provider: nothing leaves the terminal. */
    r->sent = 0;
    r->status = OB_ENET;
    r->detail = "connection refused";
    return 0;
  }
  if (c->lookup == 2) {
    /* Search charges by the order id in their parameters. */
    char needle[160];
    int n = 0;
    size_t len = 0;
    p->searches++;
    snprintf(needle, sizeof needle, "\"order_id\":\"%s\"", c->lookup_reference);
    len += (size_t)snprintf(p->out, sizeof p->out,
                            "{\"object\":\"search_result\",\"data\":[");
    for (int i = 0; i < p->charges; i++) {
      if (strstr(p->orders_charged[i], needle) == NULL) continue;
      len += (size_t)snprintf(p->out + len, sizeof p->out - len,
                              "%s{\"id\":\"ch_%d\"}", n++ ? "," : "", i + 1);
    }
    snprintf(p->out + len, sizeof p->out - len, "],\"has_more\":false}");
    r->sent = 1;
    r->status = 200;
    r->body = p->out;
    r->body_len = strlen(p->out);
    return 0;
  }
  assert_int_equal(c->lookup, 0);  /* no lookup by idempotency key */
  p->calls++;
  snprintf(body, sizeof body, "%.*s", (int)c->body_len, c->body);
  r->sent = 1;
  s = find(p, c->idempotency_key);
  if (s != NULL) {
    if (strcmp(s->body, body) != 0) {
      if (p->profile == P_IETF) {
        r->status = 422;
        snprintf(p->out, sizeof p->out, "{\"type\":\"https://example.com/"
                 "idempotency-key-reused\",\"title\":\"Idempotency-Key is "
                 "already used for a different payload\"}");
      } else {
        r->status = 400;
        snprintf(p->out, sizeof p->out,
                 "{\"error\":{\"type\":\"idempotency_error\",\"message\":"
                 "\"Keys for idempotent requests can only be used with the "
                 "same parameters they were first used with.\"}}");
      }
    } else if (s->running) {
      r->status = 409;
      snprintf(p->out, sizeof p->out,
               "{\"error\":{\"type\":\"idempotency_error\",\"code\":"
               "\"idempotency_key_in_use\",\"message\":\"There is currently "
               "another in-progress request using this Idempotent Key\"}}");
    } else {
      r->status = s->status;
      r->replayed = 1;
      snprintf(p->out, sizeof p->out, "%s", s->reply);
    }
    r->body = p->out;
    r->body_len = strlen(p->out);
    return 0;
  }
  /* A new request (a new key, or a pruned one). */
  assert_true(p->nkeys < MAX_KEYS);
  s = &p->keys[p->nkeys++];
  memset(s, 0, sizeof *s);
  snprintf(s->key, sizeof s->key, "%s", c->idempotency_key);
  snprintf(s->body, sizeof s->body, "%s", body);
  s->first_at = p->clock->wall;
  if (mode == E500_SAVED) {
    s->status = 500;
    snprintf(s->reply, sizeof s->reply,
             "{\"error\":{\"type\":\"api_error\",\"message\":\"An unknown "
             "error occurred\"}}");
  } else {
    assert_true(p->charges < MAX_KEYS);
    snprintf(p->orders_charged[p->charges], 256, "%s", body);
    p->charges++;
    s->status = 200;
    snprintf(s->reply, sizeof s->reply, "{\"id\":\"ch_%d\",\"status\":"
             "\"succeeded\"}", p->charges);
  }
  if (mode == HOLD) {
    /* Still processing: this caller's reply is lost, the key stays busy. */
    s->running = 1;
    r->status = OB_ETIMEDOUT;
    r->detail = "timed out";
    return 0;
  }
  if (mode == LOST_REPLY) {
    r->status = OB_ENET;
    r->detail = "connection closed before the response was complete";
    return 0;
  }
  r->status = s->status;
  snprintf(p->out, sizeof p->out, "%s", s->reply);
  r->body = p->out;
  r->body_len = strlen(p->out);
  return 0;
}

typedef struct term_s {
  fixture_t* f;
  jclock_t clock;
  int search;  /* the provider description names the search */
} term_t;

static void reg(term_t* t) {
  ob_provider_options_t o;
  ob_provider_options_init(&o);
  o.name = OB_CHARGE_PROVIDER;
  o.lookup_path = NULL;  /* Stripe has no lookup by idempotency key */
  if (t->search)
    o.reference_lookup_path =
        "/v1/charges/search?query=metadata['order_id']:'{reference}'";
  assert_int_equal(ob_provider_register(t->f->e, &o), 0);
  assert_int_equal(ob_register_charge_order(t->f->e), 0);
}

static term_t* terminal_with(int search) {
  term_t* t = calloc(1, sizeof *t);
  t->search = search;
  t->f = fx_new(8);
  t->clock.wall = FX_T0;
  t->clock.mono = 1000;
  t->clock.state = 42;
  t->clock.clock.ctx = &t->clock;
  t->clock.clock.now_ms = jc_now;
  t->clock.clock.monotonic_ms = jc_mono;
  t->clock.clock.random = jc_random;
  ob_close(t->f->e);
  t->f->e = NULL;
  t->f->opts.clock = &t->clock.clock;
  fx_open(t->f);
  reg(t);
  return t;
}

static term_t* terminal(void) { return terminal_with(0); }

/* The terminal is switched off for `ms` and started again. */
static void off_for(term_t* t, int64_t ms) {
  ob_close(t->f->e);
  t->f->e = NULL;
  t->clock.wall += ms;
  t->clock.mono = 1000;  /* a reboot: monotonic time starts over */
  fx_open(t->f);
  reg(t);
}

static void order(term_t* t, int msg, const char* order_id, int amount) {
  char id[OB_UUID_BUFLEN], body[160];
  snprintf(body, sizeof body,
           "{\"orderId\":\"%s\",\"amountInMinorUnits\":%d,\"currency\":\"EUR\"}",
           order_id, amount);
  assert_int_equal(fx_enqueue(t->f, OB_CHARGE_MESSAGE_TYPE, fx_event(msg, id),
                              body), 0);
}

static void perform_due(term_t* t, provider_t* p) {
  size_t settled = 0;
  int rc = ob_effects_perform(t->f->e, perform, p, 100, &settled);
  if (rc != 0) fail_msg("perform: %s: %s", ob_strerror(rc), ob_errmsg(t->f->e));
}

static long long count(term_t* t, const char* sql) {
  return fx_count(t->f, sql);
}

static provider_t* stripe(term_t* t) {
  provider_t* p = calloc(1, sizeof *p);
  p->profile = P_STRIPE;
  p->clock = &t->clock;
  p->retention_ms = 24 * HOUR;
  return p;
}

static void done(term_t* t, provider_t* p) {
  fx_free(t->f);
  free(t);
  free(p);
}

/* The money defect: three orders charged, every reply lost; the
** terminal is off for 25 hours; Stripe has pruned the keys. Before, the
** calls were repeated with the pruned keys: 6 charges for 3 orders, all
** "confirmed" with the second charge. Now nothing is called again; the
** effects are parked for a person with the reason. */
static void test_restart_after_the_retention(void** state) {
  term_t* t = terminal();
  provider_t* p = stripe(t);
  ob_stats_t s;
  (void)state;
  for (int i = 0; i < 3; i++) {
    char id[32];
    snprintf(id, sizeof id, "order-%d", i);
    order(t, i, id, 1000 + i);
    p->script[p->nscript++] = LOST_REPLY;
  }
  fx_drain(t->f);
  perform_due(t, p);
  assert_int_equal(p->charges, 3);
  assert_int_equal(count(t, "SELECT count(*) FROM effect WHERE state ="
                            " 'unknown'"), 3);
  off_for(t, 25 * HOUR);
  perform_due(t, p);
  assert_int_equal(p->calls, 3);   /* no call was repeated */
  assert_int_equal(p->charges, 3);
  assert_int_equal(count(t, "SELECT count(*) FROM effect WHERE state ="
                            " 'unknown' AND parked_at IS NOT NULL AND"
                            " park_cause = 'key-expired' AND reason LIKE"
                            " '%may have expired%'"), 3);
  assert_int_equal(count(t, "SELECT count(*) FROM charge"), 0);
  assert_int_equal(ob_stats(t->f->e, &s), 0);
  assert_int_equal(s.effects_key_expired, 3);
  assert_int_equal(s.effects_parked, 3);
  /* reconcile unparks them; the next take parks them again, uncalled. */
  assert_int_equal(ob_effects_reconcile(t->f->e, NULL, 0), 3);
  perform_due(t, p);
  assert_int_equal(p->calls, 3);
  assert_int_equal(ob_check(t->f->e, NULL, NULL), 0);
  done(t, p);
}

/* Just inside the window (20 h of 24, the margin is 3 h): the call is
** repeated with the same key, and Stripe replays the first charge. */
static void test_restart_inside_the_window(void** state) {
  term_t* t = terminal();
  provider_t* p = stripe(t);
  (void)state;
  order(t, 1, "order-1", 1999);
  p->script[p->nscript++] = LOST_REPLY;
  fx_drain(t->f);
  perform_due(t, p);
  off_for(t, 20 * HOUR);
  perform_due(t, p);
  assert_int_equal(p->calls, 2);
  assert_int_equal(p->charges, 1);
  assert_int_equal(count(t, "SELECT count(*) FROM effect WHERE state ="
                            " 'confirmed' AND reference = 'ch_1'"), 1);
  fx_drain(t->f);
  assert_int_equal(count(t, "SELECT count(*) FROM charge WHERE"
                            " provider_charge_id = 'ch_1'"), 1);
  done(t, p);
}

/* The wall clock set back two days right after the call (an RTC reset):
** the observed clock still counts the 22 hours that pass while running. A
** wall clock set forward counts on the wall: the effect parks once due,
** early (the safe side). */
static void test_age_survives_clock_jumps(void** state) {
  term_t* t = terminal();
  provider_t* p = stripe(t);
  (void)state;
  order(t, 1, "order-1", 1999);
  p->script[p->nscript++] = LOST_REPLY;
  fx_drain(t->f);
  perform_due(t, p);
  t->clock.wall -= 48 * HOUR;
  pass(&t->clock, 22 * HOUR);
  /* The retry's deadline was re-based by the jump (docs/field.md), so it
  ** is due; its key is 22 h old on the observed clock. */
  perform_due(t, p);
  assert_int_equal(p->calls, 1);
  assert_int_equal(count(t, "SELECT count(*) FROM effect WHERE park_cause ="
                            " 'key-expired'"), 1);
  done(t, p);

  t = terminal();
  p = stripe(t);
  order(t, 2, "order-2", 500);
  p->script[p->nscript++] = LOST_REPLY;
  fx_drain(t->f);
  perform_due(t, p);
  t->clock.wall += 30 * HOUR;  /* the monotonic clock moved 0 */
  /* The retry keeps its length across the jump; once due, the key's age
  ** on the wall clock is 30 h. */
  pass(&t->clock, 10 * 1000);
  perform_due(t, p);
  assert_int_equal(p->calls, 1);
  assert_int_equal(count(t, "SELECT count(*) FROM effect WHERE park_cause ="
                            " 'key-expired'"), 1);
  done(t, p);
}

/* 409: the first request with the key is still running at the provider.
** Before, each 409 spent a retry and the effect parked after four; now it
** waits and asks again with the same key, however often, and is confirmed
** once the first request finished. */
static void test_409_in_flight_spends_nothing(void** state) {
  term_t* t = terminal();
  provider_t* p = stripe(t);
  (void)state;
  order(t, 1, "order-1", 1999);
  p->script[p->nscript++] = HOLD;
  fx_drain(t->f);
  perform_due(t, p);
  for (int i = 0; i < 8; i++) {
    pass(&t->clock, 60 * 1000);
    perform_due(t, p);
  }
  assert_int_equal(p->calls, 9);
  assert_int_equal(count(t, "SELECT count(*) FROM effect WHERE parked_at IS"
                            " NULL AND state = 'unknown' AND http_status ="
                            " 409 AND attempts <= 1"), 1);
  p->keys[0].running = 0;  /* the provider finished it */
  pass(&t->clock, 60 * 1000);
  perform_due(t, p);
  assert_int_equal(p->charges, 1);
  assert_int_equal(count(t, "SELECT count(*) FROM effect WHERE state ="
                            " 'confirmed' AND reference = 'ch_1'"), 1);
  done(t, p);
}

/* Another terminal charged the same order id with another amount: the
** provider holds that request under the key. Before, the 400 was a final
** decline (`failed`); now it is a conflict for a person, and nothing is
** charged again. */
static void run_conflict(profile_t profile, int status) {
  term_t* t = terminal();
  provider_t* p = stripe(t);
  char key[OB_UUID_BUFLEN];
  ob_stats_t s;
  p->profile = profile;
  /* The other terminal's request, same order, other amount. */
  assert_int_equal(ob__fence_idempotency_key("charge:order-7", key), 0);
  snprintf(p->keys[0].key, sizeof p->keys[0].key, "%s", key);
  snprintf(p->keys[0].body, sizeof p->keys[0].body,
           "{\"orderId\":\"order-7\",\"amountInMinorUnits\":5000,"
           "\"currency\":\"EUR\"}");
  p->keys[0].first_at = t->clock.wall;
  p->keys[0].status = 200;
  snprintf(p->keys[0].reply, sizeof p->keys[0].reply, "{\"id\":\"ch_other\"}");
  p->nkeys = 1;
  order(t, 1, "order-7", 4999);
  fx_drain(t->f);
  perform_due(t, p);
  assert_int_equal(p->calls, 1);
  assert_int_equal(p->charges, 0);
  assert_int_equal(count(t, "SELECT count(*) FROM effect WHERE state ="
                            " 'failed'"), 0);
  {
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM effect WHERE state ="
             " 'unknown' AND parked_at IS NOT NULL AND park_cause ="
             " 'conflict' AND http_status = %d AND reason LIKE 'conflict:%%'",
             status);
    assert_int_equal(count(t, sql), 1);
  }
  assert_int_equal(ob_stats(t->f->e, &s), 0);
  assert_int_equal(s.effects_conflict, 1);
  /* Parked: not called again by itself. */
  pass(&t->clock, HOUR);
  perform_due(t, p);
  assert_int_equal(p->calls, 1);
  done(t, p);
}

static void test_400_mismatch_is_a_conflict(void** state) {
  (void)state;
  run_conflict(P_STRIPE, 400);
}

static void test_422_mismatch_is_a_conflict(void** state) {
  (void)state;
  run_conflict(P_IETF, 422);
}

/* Stripe saved a 500 for the key and replays it. Before, the effect
** parked after four calls, and reconcile parked it again after four more;
** now the replay is recognised and parked at once. */
static void test_replayed_500_parks_at_once(void** state) {
  term_t* t = terminal();
  provider_t* p = stripe(t);
  (void)state;
  order(t, 1, "order-1", 1999);
  p->script[p->nscript++] = E500_SAVED;
  fx_drain(t->f);
  perform_due(t, p);           /* 500: unknown, retried */
  pass(&t->clock, 10 * 1000);
  perform_due(t, p);           /* 500 replayed: parked */
  assert_int_equal(p->calls, 2);
  assert_int_equal(count(t, "SELECT count(*) FROM effect WHERE parked_at IS"
                            " NOT NULL AND park_cause = 'replayed-error'"),
                   1);
  pass(&t->clock, HOUR);
  perform_due(t, p);
  assert_int_equal(p->calls, 2);
  assert_int_equal(ob_effects_reconcile(t->f->e, NULL, 0), 1);
  perform_due(t, p);
  assert_int_equal(p->calls, 3);
  assert_int_equal(count(t, "SELECT count(*) FROM effect WHERE parked_at IS"
                            " NOT NULL AND park_cause = 'replayed-error'"),
                   1);
  assert_int_equal(charges_of(p, "order-1"), 0);
  done(t, p);
}

/* Past the retention, a provider whose description names a search by the
** order's reference is asked instead of a person: the lost reply's charge
** is found and confirmed, nothing charged again. */
static void test_after_the_retention_a_search_finds_the_charge(void** state) {
  term_t* t = terminal_with(1);
  provider_t* p = stripe(t);
  (void)state;
  order(t, 1, "order-1", 1999);
  p->script[p->nscript++] = LOST_REPLY;
  fx_drain(t->f);
  perform_due(t, p);
  off_for(t, 25 * HOUR);
  perform_due(t, p);
  assert_int_equal(p->searches, 1);
  assert_int_equal(p->calls, 1);
  assert_int_equal(p->charges, 1);
  assert_int_equal(count(t, "SELECT count(*) FROM effect WHERE state ="
                            " 'confirmed' AND reference = 'ch_1'"), 1);
  fx_drain(t->f);
  assert_int_equal(count(t, "SELECT count(*) FROM charge WHERE"
                            " provider_charge_id = 'ch_1'"), 1);
  assert_int_equal(ob_check(t->f->e, NULL, NULL), 0);
  done(t, p);
}

/* The search finds nothing: the first call never reached the provider, so
** the call is made now (once); and two charges for one order are a
** conflict for a person. */
static void test_search_finds_none_or_two(void** state) {
  term_t* t = terminal_with(1);
  provider_t* p = stripe(t);
  char sql[256];
  (void)state;
  order(t, 1, "order-1", 1999);
  fx_drain(t->f);
  /* A claim whose call was handed out and lost before it left: a worker
  ** killed right after taking it (first_call_at set, nothing sent). */
  snprintf(sql, sizeof sql, "UPDATE effect SET state = 'unknown',"
           " first_call_at = %lld", (long long)t->clock.wall);
  {
    sqlite3* db;
    assert_int_equal(sqlite3_open(t->f->db_path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
  }
  off_for(t, 25 * HOUR);
  perform_due(t, p);
  assert_int_equal(p->searches, 1);
  assert_int_equal(p->calls, 1);
  assert_int_equal(p->charges, 1);
  assert_int_equal(count(t, "SELECT count(*) FROM effect WHERE state ="
                            " 'confirmed'"), 1);
  done(t, p);

  t = terminal_with(1);
  p = stripe(t);
  order(t, 2, "order-2", 500);
  p->script[p->nscript++] = LOST_REPLY;
  fx_drain(t->f);
  perform_due(t, p);
  /* Another charge for the same order, made under another key. */
  snprintf(p->orders_charged[p->charges++], 256,
           "{\"order_id\":\"order-2\",\"amount_minor\":500}");
  off_for(t, 25 * HOUR);
  perform_due(t, p);
  assert_int_equal(p->searches, 1);
  assert_int_equal(p->calls, 1);
  assert_int_equal(count(t, "SELECT count(*) FROM effect WHERE parked_at IS"
                            " NOT NULL AND park_cause = 'conflict' AND"
                            " reason LIKE '%more than one result%order-2%'"),
                   1);
  done(t, p);
}

/* Offline for two days (the README's promise): every attempt fails before
** a byte leaves, so the key never reached the provider and its age never
** starts. Once the provider is reachable the order is charged, once. */
static void test_offline_for_days_is_not_expired(void** state) {
  term_t* t = terminal();
  provider_t* p = stripe(t);
  (void)state;
  order(t, 1, "order-1", 1999);
  fx_drain(t->f);
  for (int h = 0; h < 48; h++) {
    p->script[p->nscript++] = OFFLINE;
    perform_due(t, p);
    pass(&t->clock, 3600 * 1000);
    if (h == 20) off_for(t, 3600 * 1000);  /* and a restart on the way */
  }
  p->nscript = 0;
  perform_due(t, p);
  assert_int_equal(p->calls, 1);
  assert_int_equal(p->charges, 1);
  assert_int_equal(count(t, "SELECT count(*) FROM effect WHERE state ="
                            " 'confirmed' AND park_cause IS NULL"), 1);
  done(t, p);
}

/* key_retention_ms: 0 (forever) or at least an hour. */
static void test_retention_option(void** state) {
  fixture_t* f = fx_new(1);
  ob_provider_options_t o;
  (void)state;
  ob_provider_options_init(&o);
  assert_int_equal(o.key_retention_ms, 24 * HOUR);
  o.name = "p";
  o.key_retention_ms = HOUR - 1;
  assert_int_equal(ob_provider_register(f->e, &o), OB_EINVAL);
  assert_non_null(strstr(ob_errmsg(f->e), "key_retention_ms"));
  o.key_retention_ms = 0;
  assert_int_equal(ob_provider_register(f->e, &o), 0);
  fx_free(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_restart_after_the_retention),
      cmocka_unit_test(test_restart_inside_the_window),
      cmocka_unit_test(test_age_survives_clock_jumps),
      cmocka_unit_test(test_409_in_flight_spends_nothing),
      cmocka_unit_test(test_400_mismatch_is_a_conflict),
      cmocka_unit_test(test_422_mismatch_is_a_conflict),
      cmocka_unit_test(test_replayed_500_parks_at_once),
      cmocka_unit_test(test_after_the_retention_a_search_finds_the_charge),
      cmocka_unit_test(test_search_finds_none_or_two),
      cmocka_unit_test(test_offline_for_days_is_not_expired),
      cmocka_unit_test(test_retention_option),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
