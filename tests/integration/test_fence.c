/* SPDX-License-Identifier: Apache-2.0 */
/* The fence, engine side, on a real SQLite file with a fake clock (and on
** PostgreSQL as fence_pg, OB_TEST_BACKEND=postgresql). The
** provider here is an in-process function (ob_effects_perform), so every
** answer (lost reply, 5xx, decline, lookup) is exact and repeatable; the
** same rules over real HTTPS against a provider simulator, with SIGKILLs,
** are in tests/integration/fence/. */
#include "tests/integration/engine_fixture.h"

#include "core/engine/engine_int.h"
#include "core/fence/fence.h"
#include "oncebox_charge.h"

#define MAX_ORDERS 16

/* A provider: honours idempotency keys or not, counts real charges. */
typedef struct provider_s {
  int idempotent;
  /* Scripted answers for the next calls (0: normal). */
  int script[16];
  int nscript;
  int calls, lookups, charges;
  char keys[MAX_ORDERS][OB_UUID_BUFLEN];
  char ids[MAX_ORDERS][32];
  int nkeys;
  char body[256];
  char last_key[OB_UUID_BUFLEN];
} provider_t;

enum { NORMAL = 0, LOST_REPLY = 1, E503 = 2, DECLINE = 3, NOT_SENT = 4 };

static int find_key(provider_t* p, const char* k) {
  for (int i = 0; i < p->nkeys; i++)
    if (strcmp(p->keys[i], k) == 0) return i;
  return -1;
}

static int charge(provider_t* p, const char* k) {
  int i = p->idempotent ? find_key(p, k) : -1;
  if (i < 0) {
    i = p->nkeys++;
    snprintf(p->keys[i], OB_UUID_BUFLEN, "%s", k);
    snprintf(p->ids[i], 32, "ch_%d", i + 1);
    p->charges++;
  }
  return i;
}

static int perform(void* arg, const ob_effect_call_t* c, ob_effect_reply_t* r) {
  provider_t* p = arg;
  int mode = NORMAL, i;
  if (p->nscript > 0) {
    mode = p->script[0];
    memmove(p->script, p->script + 1, sizeof p->script - sizeof p->script[0]);
    p->nscript--;
  }
  snprintf(p->last_key, sizeof p->last_key, "%s", c->idempotency_key);
  r->sent = 1;
  if (mode == NOT_SENT) {
    r->status = OB_ENET;
    r->sent = 0;
    r->detail = "connection refused";
    return 0;
  }
  if (c->lookup) {
    p->lookups++;
    i = find_key(p, c->idempotency_key);
    if (i < 0) {
      r->status = 404;
      snprintf(p->body, sizeof p->body, "{\"error\":{\"message\":\"No such charge\"}}");
    } else {
      r->status = 200;
      snprintf(p->body, sizeof p->body, "{\"id\":\"%s\"}", p->ids[i]);
    }
  } else {
    p->calls++;
    assert_string_equal(c->method, "POST");
    assert_string_equal(c->path, "/v1/charges");
    if (mode == DECLINE) {
      r->status = 402;
      snprintf(p->body, sizeof p->body,
               "{\"error\":{\"type\":\"card_error\",\"code\":\"card_declined\","
               "\"message\":\"Your card was declined.\"}}");
    } else if (mode == E503) {
      r->status = 503;
      snprintf(p->body, sizeof p->body, "{\"error\":{\"message\":\"busy\"}}");
    } else {
      i = charge(p, c->idempotency_key);
      if (mode == LOST_REPLY) {
        r->status = OB_ENET;
        r->detail = "connection closed before the response was complete";
        return 0;
      }
      r->status = 200;
      snprintf(p->body, sizeof p->body, "{\"id\":\"%s\",\"status\":\"succeeded\"}",
               p->ids[i]);
    }
  }
  r->body = p->body;
  r->body_len = strlen(p->body);
  return 0;
}

static void reg_provider(fixture_t* f, int idempotent, int lookup) {
  ob_provider_options_t o;
  ob_provider_options_init(&o);
  o.name = OB_CHARGE_PROVIDER;
  o.idempotency_keys = idempotent;
  o.lookup_path = lookup ? OB_CHARGE_LOOKUP_PATH : NULL;
  assert_int_equal(ob_provider_register(f->e, &o), 0);
  assert_int_equal(ob_register_charge_order(f->e), 0);
}

static fixture_t* setup(int idempotent, int lookup) {
  fixture_t* f = fx_new(8);
  reg_provider(f, idempotent, lookup);
  return f;
}

static void reopen(fixture_t* f, int idempotent, int lookup) {
  fx_reopen(f);
  reg_provider(f, idempotent, lookup);
}

static void order(fixture_t* f, int msg, const char* order_id, int amount) {
  char id[OB_UUID_BUFLEN], body[160];
  snprintf(body, sizeof body,
           "{\"orderId\":\"%s\",\"amountInMinorUnits\":%d,\"currency\":\"EUR\"}",
           order_id, amount);
  assert_int_equal(fx_enqueue(f, OB_CHARGE_MESSAGE_TYPE, fx_event(msg, id), body),
                   0);
}

static size_t perform_all(fixture_t* f, provider_t* p) {
  size_t settled = 0;
  int rc = ob_effects_perform(f->e, perform, p, 100, &settled);
  if (rc != 0) fail_msg("perform: %s: %s", ob_strerror(rc), ob_errmsg(f->e));
  return settled;
}

static long long count(fixture_t* f, const char* sql) {
  return fx_count(f, sql);
}

static void assert_clean(fixture_t* f) {
  ob_charge_stats_t s;
  assert_int_equal(ob_check(f->e, NULL, NULL), 0);
  assert_int_equal(ob_charge_stats(f->e, &s), 0);
  assert_int_equal(s.unfenced_successes, 0);
}

/* Claim first, call second, outcome + business rows + ack in one
** transaction. */
static void test_claim_call_outcome(void** state) {
  fixture_t* f = setup(1, 1);
  provider_t p = {.idempotent = 1};
  ob_batch_result_t r;
  ob_stats_t s;
  (void)state;

  order(f, 1, "order-42", 1999);
  r = fx_drain(f);
  assert_int_equal(r.waiting, 1);
  assert_int_equal(r.handled, 0);
  /* Step 1 committed alone: a pending fence, no dedup record, no charge,
  ** the message still queued. */
  assert_int_equal(count(f, "SELECT count(*) FROM effect WHERE state='pending'"
                            " AND key='charge:order-42'"), 1);
  assert_int_equal(count(f, "SELECT count(*) FROM processed_message"), 0);
  assert_int_equal(count(f, "SELECT count(*) FROM charge"), 0);
  assert_int_equal(count(f, "SELECT count(*) FROM queue WHERE waiting_on="
                            "'charge:order-42'"), 1);
  assert_int_equal(p.calls, 0);

  assert_int_equal(perform_all(f, &p), 1);
  assert_int_equal(p.calls, 1);
  assert_int_equal(p.charges, 1);
  /* Step 3: all of it in one commit. */
  assert_int_equal(count(f, "SELECT count(*) FROM effect WHERE state="
                            "'confirmed' AND reference='ch_1'"), 1);
  assert_int_equal(count(f, "SELECT count(*) FROM charge WHERE order_id="
                            "'order-42' AND provider_charge_id='ch_1' AND"
                            " amount_minor=1999"), 1);
  assert_int_equal(count(f, "SELECT count(*) FROM outbox_event WHERE"
                            " event_type='OrderCharged' AND aggregate_id="
                            "'order-42' AND json_extract(payload,"
                            " '$.chargeId')='ch_1'"), 1);
  assert_int_equal(count(f, "SELECT count(*) FROM processed_message"), 1);
  assert_int_equal(count(f, "SELECT count(*) FROM queue"), 0);
  /* The idempotency key is the one derived from the fence key. */
  {
    char k[OB_UUID_BUFLEN];
    assert_int_equal(ob__fence_idempotency_key("charge:order-42", k), 0);
    assert_string_equal(p.last_key, k);
  }
  assert_int_equal(ob_stats(f->e, &s), 0);
  assert_int_equal(s.fence_claims, 1);
  assert_int_equal(s.provider_2xx, 1);
  assert_int_equal(s.effects_confirmed, 1);
  {
    ob_charge_stats_t cs;
    assert_int_equal(ob_charge_stats(f->e, &cs), 0);
    assert_int_equal(cs.charges, 1);
  }
  assert_clean(f);
  fx_free(f);
}

/* The same message five times and another message for the same order: one
** call, one charge, one event. */
static void test_duplicates_one_call(void** state) {
  fixture_t* f = setup(1, 1);
  provider_t p = {.idempotent = 1};
  ob_batch_result_t r;
  (void)state;
  for (int i = 0; i < 5; i++) order(f, 7, "order-7", 500);
  order(f, 8, "order-7", 500);
  r = fx_drain(f);
  assert_int_equal(r.waiting, 6);
  assert_int_equal(count(f, "SELECT count(*) FROM effect"), 1);
  assert_int_equal(perform_all(f, &p), 1);
  assert_int_equal(p.calls, 1);
  assert_int_equal(count(f, "SELECT count(*) FROM charge"), 1);
  assert_int_equal(count(f, "SELECT count(*) FROM outbox_event"), 1);
  assert_int_equal(count(f, "SELECT count(*) FROM queue"), 0);
  /* Redelivered after the outcome: a no-op that acks. */
  order(f, 7, "order-7", 500);
  r = fx_drain(f);
  assert_int_equal(r.duplicates, 1);
  order(f, 9, "order-7", 500);
  r = fx_drain(f);
  assert_int_equal(r.handled, 1);
  assert_int_equal(perform_all(f, &p), 0);
  assert_int_equal(p.calls, 1);
  assert_int_equal(count(f, "SELECT count(*) FROM charge"), 1);
  assert_int_equal(count(f, "SELECT count(*) FROM outbox_event"), 1);
  assert_clean(f);
  fx_free(f);
}

/* A lost reply leaves the fence unknown; the retry repeats the call with
** the same key and the provider answers the original charge. */
static void test_lost_reply_repeats_same_key(void** state) {
  fixture_t* f = setup(1, 1);
  provider_t p = {.idempotent = 1, .script = {LOST_REPLY}, .nscript = 1};
  char first[OB_UUID_BUFLEN];
  (void)state;
  order(f, 1, "order-1", 100);
  fx_drain(f);
  assert_int_equal(perform_all(f, &p), 0);
  snprintf(first, sizeof first, "%s", p.last_key);
  assert_int_equal(p.charges, 1);
  assert_int_equal(count(f, "SELECT count(*) FROM effect WHERE state='unknown'"
                            " AND attempts=1 AND calls=1"), 1);
  assert_int_equal(count(f, "SELECT count(*) FROM charge"), 0);
  /* Not due before its backoff. */
  assert_int_equal(perform_all(f, &p), 0);
  assert_int_equal(p.calls, 1);
  fake_clock_advance(&f->clock, 2000);
  assert_int_equal(perform_all(f, &p), 1);
  assert_int_equal(p.calls, 2);
  assert_string_equal(p.last_key, first);
  assert_int_equal(p.charges, 1);
  assert_int_equal(count(f, "SELECT count(*) FROM charge WHERE"
                            " provider_charge_id='ch_1'"), 1);
  assert_int_equal(count(f, "SELECT successes FROM effect"), 1);
  assert_clean(f);
  fx_free(f);
}

/* A 4xx is final: the message fails with the provider's reason. */
static void test_decline_unrecoverable(void** state) {
  fixture_t* f = setup(1, 1);
  provider_t p = {.idempotent = 1, .script = {DECLINE}, .nscript = 1};
  (void)state;
  order(f, 1, "order-1", 402);
  fx_drain(f);
  assert_int_equal(perform_all(f, &p), 1);
  assert_int_equal(count(f, "SELECT count(*) FROM effect WHERE state='failed'"
                            " AND http_status=402"), 1);
  assert_int_equal(count(f, "SELECT count(*) FROM failed_message WHERE"
                            " error_class='unrecoverable' AND reason LIKE"
                            " '%402 card_declined: Your card was declined.%'"),
                   1);
  assert_int_equal(count(f, "SELECT count(*) FROM charge"), 0);
  assert_int_equal(count(f, "SELECT count(*) FROM queue"), 0);
  /* Replayed from the failure store: still no second call. */
  assert_int_equal(ob_failed_retry(f->e, 0), 1);
  fx_drain(f);
  assert_int_equal(perform_all(f, &p), 0);
  assert_int_equal(p.calls, 1);
  assert_int_equal(count(f, "SELECT count(*) FROM failed_message"), 1);
  assert_clean(f);
  fx_free(f);
}

/* 5xx until the budget is spent: the effect is parked unknown and its
** message waits in the failure store; reconcile brings both back. */
static void test_5xx_park_then_reconcile(void** state) {
  fixture_t* f = setup(1, 1);
  provider_t p = {.idempotent = 1, .script = {E503, E503, E503, E503},
                  .nscript = 4};
  ob_stats_t s;
  (void)state;
  order(f, 1, "order-1", 100);
  fx_drain(f);
  for (int i = 0; i < 4; i++) {
    perform_all(f, &p);
    fake_clock_advance(&f->clock, 10 * 60 * 1000);
  }
  assert_int_equal(p.calls, 4);
  assert_int_equal(p.charges, 0);
  assert_int_equal(count(f, "SELECT count(*) FROM effect WHERE state='unknown'"
                            " AND parked_at IS NOT NULL AND attempts=4"), 1);
  assert_int_equal(count(f, "SELECT count(*) FROM failed_message WHERE"
                            " error_class='effect_unknown' AND effect_key="
                            "'charge:order-1'"), 1);
  assert_int_equal(count(f, "SELECT count(*) FROM queue"), 0);
  assert_int_equal(ob_stats(f->e, &s), 0);
  assert_int_equal(s.effects_parked, 1);
  /* Parked: no more calls until a person acts. */
  assert_int_equal(perform_all(f, &p), 0);
  assert_int_equal(p.calls, 4);
  assert_int_equal(ob_effects_reconcile(f->e, NULL, 0), 1);
  assert_int_equal(perform_all(f, &p), 1);
  assert_int_equal(p.charges, 1);
  assert_int_equal(count(f, "SELECT count(*) FROM failed_message"), 0);
  fx_drain(f);
  assert_int_equal(count(f, "SELECT count(*) FROM charge"), 1);
  assert_int_equal(count(f, "SELECT count(*) FROM queue"), 0);
  assert_clean(f);
  fx_free(f);
}

/* A connection that never reached the provider costs no attempt. */
static void test_not_sent_costs_nothing(void** state) {
  fixture_t* f = setup(0, 0);
  provider_t p = {.idempotent = 0, .script = {NOT_SENT, NOT_SENT, NOT_SENT,
                  NOT_SENT, NOT_SENT}, .nscript = 5};
  (void)state;
  order(f, 1, "order-1", 100);
  fx_drain(f);
  for (int i = 0; i < 5; i++) {
    perform_all(f, &p);
    fake_clock_advance(&f->clock, 5000);
  }
  assert_int_equal(count(f, "SELECT count(*) FROM effect WHERE state="
                            "'pending' AND attempts=0 AND calls=0 AND"
                            " parked_at IS NULL"), 1);
  /* Still certainly unsent: even a provider without idempotency keys or a
  ** lookup may be called. */
  assert_int_equal(perform_all(f, &p), 1);
  assert_int_equal(p.charges, 1);
  assert_clean(f);
  fx_free(f);
}

/* No idempotency keys, but a lookup: after a restart the claim may have been
** sent, so the key is looked up first; found means no call at all. */
static void test_lookup_after_restart(void** state) {
  fixture_t* f;
  provider_t p = {.idempotent = 0, .script = {LOST_REPLY}, .nscript = 1};
  (void)state;
  if (ts_backend_is_pg()) {
    /* test_pg_backend.c's test_effect_lease_on_server_clock has the
    ** expiry on real time. */
    print_message("skipped on postgresql: the dead process's leases run out"
                  " by moving the fake clock; there they are on the"
                  " server's\n");
    skip();
  }
  f = setup(0, 1);
  order(f, 1, "order-1", 100);
  order(f, 2, "order-2", 200);
  fx_drain(f);
  /* order-1: charged, reply lost, process dies. order-2: claimed, the
  ** process dies before the call. */
  {
    ob__effect_job_t job[2];
    ob_effect_call_t c;
    ob_effect_reply_t rep;
    int n = ob__effect_take(f->e, NULL, 2, job);
    assert_int_equal(n, 2);
    memset(&rep, 0, sizeof rep);
    ob__effect_job_call(&job[0], &c);
    perform(&p, &c, &rep);
    ob__effect_job_free(&job[0]);
    ob__effect_job_free(&job[1]);
  }
  assert_int_equal(p.charges, 1);
  reopen(f, 0, 1);
  fake_clock_advance(&f->clock, 200000); /* the leases run out */
  assert_int_equal(perform_all(f, &p), 2);
  assert_int_equal(p.lookups, 2);
  assert_int_equal(p.calls, 2);   /* the lost one, and order-2's only */
  assert_int_equal(p.charges, 2); /* one per order */
  assert_int_equal(count(f, "SELECT count(*) FROM charge"), 2);
  assert_int_equal(count(f, "SELECT lookups FROM effect WHERE key="
                            "'charge:order-1'"), 1);
  assert_clean(f);
  fx_free(f);
}

/* Neither idempotency keys nor a lookup: a claim that may have been sent is
** parked for a person, who resolves it. */
static void test_honest_limit_person_resolves(void** state) {
  fixture_t* f = setup(0, 0);
  provider_t p = {.idempotent = 0};
  (void)state;
  order(f, 1, "order-1", 100);
  fx_drain(f);
  reopen(f, 0, 0); /* died after the claim: maybe sent */
  assert_int_equal(perform_all(f, &p), 0);
  assert_int_equal(p.calls, 0);
  assert_int_equal(count(f, "SELECT count(*) FROM effect WHERE state="
                            "'unknown' AND parked_at IS NOT NULL"), 1);
  assert_int_equal(count(f, "SELECT count(*) FROM failed_message WHERE"
                            " error_class='effect_unknown'"), 1);
  assert_int_equal(ob_effect_resolve(f->e, "charge:order-1", OB_EFFECT_FAILED,
                                     ""), OB_EINVAL);
  assert_int_equal(ob_effect_resolve(f->e, "charge:nope", OB_EFFECT_CONFIRMED,
                                     "ch_9"), OB_ENOTFOUND);
  assert_int_equal(ob_effect_resolve(f->e, "charge:order-1",
                                     OB_EFFECT_CONFIRMED, "ch_from_dashboard"),
                   0);
  assert_int_equal(ob_effect_resolve(f->e, "charge:order-1",
                                     OB_EFFECT_CONFIRMED, "ch_x"), OB_ESTATE);
  fx_drain(f);
  assert_int_equal(count(f, "SELECT count(*) FROM charge WHERE"
                            " provider_charge_id='ch_from_dashboard'"), 1);
  assert_int_equal(count(f, "SELECT count(*) FROM failed_message"), 0);
  assert_int_equal(p.calls, 0);
  assert_clean(f);
  fx_free(f);
}

/* The same fence key with another request is refused, not re-charged. */
static void test_request_mismatch(void** state) {
  fixture_t* f = setup(1, 1);
  provider_t p = {.idempotent = 1};
  (void)state;
  order(f, 1, "order-1", 100);
  fx_drain(f);
  perform_all(f, &p);
  order(f, 2, "order-1", 999);
  fx_drain(f);
  assert_int_equal(count(f, "SELECT count(*) FROM failed_message WHERE reason"
                            " LIKE '%different request%'"), 1);
  assert_int_equal(p.calls, 1);
  assert_clean(f);
  fx_free(f);
}

/* The metric: a charge recorded without a confirmed fence is flagged. */
static void test_unfenced_success_flagged(void** state) {
  fixture_t* f = setup(1, 1);
  ob_charge_stats_t s;
  (void)state;
  ts_backend_exec(f->db_path, "INSERT INTO charge VALUES('o-9', 100, 'EUR',"
                              " 'ch_77', 'charge:o-9', 'm', 0)");
  assert_int_equal(ob_charge_stats(f->e, &s), 0);
  assert_int_equal(s.unfenced_successes, 1);
  assert_true(ob_check(f->e, NULL, NULL) >= 1);
  fx_free(f);
}

/* Bad input: no provider, malformed bodies, bad keys. */
static void test_bad_input(void** state) {
  fixture_t* f = fx_new(8);
  ob_batch_result_t r;
  (void)state;
  assert_int_equal(ob_register_charge_order(f->e), 0);
  order(f, 1, "order-1", 100);
  r = fx_drain(f);
  assert_int_equal(r.retried, 1);
  assert_int_equal(count(f, "SELECT count(*) FROM queue WHERE last_error LIKE"
                            " '%no provider ''payments'' is configured%'"), 1);
  assert_int_equal(count(f, "SELECT count(*) FROM effect"), 0);
  {
    char id[OB_UUID_BUFLEN];
    const char* bodies[] = {
        "{\"orderId\":\"\",\"amountInMinorUnits\":1,\"currency\":\"EUR\"}",
        "{\"orderId\":\"a\",\"amountInMinorUnits\":0,\"currency\":\"EUR\"}",
        "{\"orderId\":\"a\",\"amountInMinorUnits\":1,\"currency\":\"eur\"}",
        "{\"orderId\":\"a\\u0000\",\"amountInMinorUnits\":1,\"currency\":\"EUR\"}",
        "{\"orderId\":7,\"amountInMinorUnits\":1,\"currency\":\"EUR\"}",
        "not json"};
    ob_provider_options_t o;
    ob_provider_options_init(&o);
    o.name = OB_CHARGE_PROVIDER;
    assert_int_equal(ob_provider_register(f->e, &o), 0);
    assert_int_equal(ob_provider_register(f->e, &o), OB_EEXIST);
    for (int i = 0; i < 6; i++)
      assert_int_equal(fx_enqueue(f, OB_CHARGE_MESSAGE_TYPE,
                                  fx_event(100 + i, id), bodies[i]), 0);
    fake_clock_advance(&f->clock, 5000);
    r = fx_drain(f);
    assert_int_equal(r.failed, 6);
    assert_int_equal(r.waiting, 1);
  }
  assert_int_equal(count(f, "SELECT count(*) FROM effect"), 1);
  fx_free(f);
}

/* A FIFO group from SQS whose first message waits for its charge: the
** rest of the group is queued behind it, held, and each one runs only when
** the one ahead has settled, so the charges happen in the group's order
** (issue 15). The waiting row keeps its group and source. */
static void test_fifo_group_waits_behind_effect(void** state) {
  fixture_t* f = setup(1, 1);
  provider_t p = {.idempotent = 1};
  ob_batch_result_t res;
  int64_t delay;
  int left;
  char body[3][160], id[3][8];
  (void)state;
  for (int i = 0; i < 3; i++) {
    ob__queue_row_t r;
    snprintf(body[i], sizeof body[i],
             "{\"orderId\":\"order-%d\",\"amountInMinorUnits\":%d,"
             "\"currency\":\"EUR\"}",
             i, 100 + i);
    snprintf(id[i], sizeof id[i], "c%d", i);
    memset(&r, 0, sizeof r);
    r.queue = (char*)"sqs";
    r.message_id = id[i];
    r.type = (char*)OB_CHARGE_MESSAGE_TYPE;
    r.body = body[i];
    r.body_len = strlen(body[i]);
    r.created_at = FX_T0;
    r.source = (char*)"urn:pos:till-7";
    r.group_key = (char*)"https://sqs.test/1/orders.fifo till-7";
    assert_int_equal(ob__handle_external(f->e, &r, 0, &res, &delay, &left), 0);
    assert_int_equal(res.waiting, 1);
  }
  assert_int_equal(count(f, "SELECT count(*) FROM effect"), 1);
  assert_int_equal(count(f, "SELECT count(*) FROM queue WHERE waiting_on IS"
                            " NOT NULL AND source = 'urn:pos:till-7' AND"
                            " group_key IS NOT NULL"),
                   1);
  assert_int_equal(count(f, "SELECT count(*) FROM queue WHERE available_at ="
                            " 9223372036854775807"),
                   2);
  for (int round = 0; round < 3; round++) {
    char q[96];
    fx_drain(f);        /* the released one claims its effect */
    perform_all(f, &p); /* charged; its message completes, the next is freed */
    assert_int_equal(count(f, "SELECT count(*) FROM charge"), round + 1);
    /* In the group's order: this round's charge is order-<round>'s. */
    snprintf(q, sizeof q, "SELECT count(*) FROM charge WHERE order_id ="
             " 'order-%d'", round);
    assert_int_equal(count(f, q), 1);
  }
  assert_int_equal(count(f, "SELECT count(*) FROM queue"), 0);
  assert_int_equal(p.charges, 3);
  assert_clean(f);
  fx_free(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_claim_call_outcome),
      cmocka_unit_test(test_fifo_group_waits_behind_effect),
      cmocka_unit_test(test_duplicates_one_call),
      cmocka_unit_test(test_lost_reply_repeats_same_key),
      cmocka_unit_test(test_decline_unrecoverable),
      cmocka_unit_test(test_5xx_park_then_reconcile),
      cmocka_unit_test(test_not_sent_costs_nothing),
      cmocka_unit_test(test_lookup_after_restart),
      cmocka_unit_test(test_honest_limit_person_resolves),
      cmocka_unit_test(test_request_mismatch),
      cmocka_unit_test(test_unfenced_success_flagged),
      cmocka_unit_test(test_bad_input),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
