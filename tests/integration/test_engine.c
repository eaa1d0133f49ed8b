/* SPDX-License-Identifier: Apache-2.0 */
/* The handling transaction on a real SQLite file: dedup, retries, failure
** store, group commit, handler SQL rules. */
#include "tests/integration/engine_fixture.h"
#include "oncebox_payout.h"

#include <stdlib.h>

#define PAY OB_PAYOUT_MESSAGE_TYPE

/* (a) The same event delivered twice: one payout, one dedup record, one
** outbox row, and the second delivery is acked without running. */
static void test_same_event_twice(void** state) {
  fixture_t* f = fx_new(1);
  char id[OB_UUID_BUFLEN], body[256];
  (void)state;
  assert_int_equal(ob_register_payout(f->e), 0);
  fx_event(1, id);
  fx_payment(1, body);
  assert_int_equal(fx_enqueue(f, PAY, id, body), 0);
  assert_int_equal(fx_enqueue(f, PAY, id, body), 0);
  ob_batch_result_t r = fx_drain(f);
  assert_int_equal(r.claimed, 2);
  assert_int_equal(r.handled, 1);
  assert_int_equal(r.duplicates, 1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM merchant_payout"), 1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM processed_message"), 1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM outbox_event"), 1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM queue"), 0);
  assert_int_equal(
      fx_count(f, "SELECT count(*) FROM outbox_event WHERE causation_id ="
                  " '0190b6d8-3ae7-7ca2-a653-000000000001' AND aggregate_id ="
                  " '5c4080b1-b5d2-4e91-8de8-000000000001' AND event_type ="
                  " 'MerchantPayoutCreated'"),
      1);
  /* Delivered again after a restart: still a no-op. */
  fx_reopen(f);
  assert_int_equal(ob_register_payout(f->e), 0);
  assert_int_equal(fx_enqueue(f, PAY, id, body), 0);
  r = fx_drain(f);
  assert_int_equal(r.duplicates, 1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM merchant_payout"), 1);
  assert_int_equal(ob_check(f->e, NULL, NULL), 0);
  fx_free(f);
}

/* A payout event's payload carries the payout, and upper-case ids are
** stored in canonical lower case. */
static void test_payload_and_id_normalisation(void** state) {
  fixture_t* f = fx_new(1);
  (void)state;
  ob_register_payout(f->e);
  assert_int_equal(
      fx_enqueue(f, PAY, "0190B6D8-3AE7-7CA2-A653-6FF2D5A6F230",
                 "{\"paymentId\":\"5C4080B1-B5D2-4E91-8DE8-EC0E119D7647\","
                 "\"merchantId\":\"3727331a-b533-4c6e-a0f8-48532237307b\","
                 "\"amountInMinorUnits\":12500,\"currency\":\"EUR\"}"),
      0);
  fx_drain(f);
  assert_int_equal(
      fx_count(f, "SELECT count(*) FROM merchant_payout p JOIN outbox_event o"
                  " ON json_extract(o.payload, '$.payoutId') = p.id"
                  " WHERE p.source_payment_id ="
                  " '5c4080b1-b5d2-4e91-8de8-ec0e119d7647'"
                  " AND json_extract(o.payload, '$.amountInMinorUnits') = 12500"
                  " AND json_extract(o.payload, '$.currency') = 'EUR'"
                  " AND o.causation_id = '0190b6d8-3ae7-7ca2-a653-6ff2d5a6f230'"),
      1);
  fx_free(f);
}

/* A second event id for an already paid payment is unrecoverable and the
** reason names the payment. */
static void test_second_capture_is_unrecoverable(void** state) {
  fixture_t* f = fx_new(1);
  char body[256], id1[OB_UUID_BUFLEN], id2[OB_UUID_BUFLEN];
  (void)state;
  ob_register_payout(f->e);
  fx_payment(7, body);
  fx_enqueue(f, PAY, fx_event(1, id1), body);
  fx_enqueue(f, PAY, fx_event(2, id2), body);
  ob_batch_result_t r = fx_drain(f);
  assert_int_equal(r.handled, 1);
  assert_int_equal(r.failed, 1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM merchant_payout"), 1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM outbox_event"), 1);
  assert_int_equal(
      fx_count(f, "SELECT count(*) FROM failed_message WHERE message_id ="
                  " '0190b6d8-3ae7-7ca2-a653-000000000002' AND error_class ="
                  " 'unrecoverable' AND reason LIKE"
                  " 'payment 5c4080b1-b5d2-4e91-8de8-000000000007 already has a"
                  " payout%' AND attempts = 0"),
      1);
  /* No dedup record for the failed event: its savepoint rolled back. */
  assert_int_equal(fx_count(f, "SELECT count(*) FROM processed_message"), 1);
  fx_free(f);
}

/* ---- handlers written against the portable API -------------------------- */

typedef struct script_s {
  int calls;
  int fail_first;      /* calls that return a retry */
  int unrecoverable;   /* first call gives up */
  int64_t delay;       /* requested retry delay, -1: policy */
  int forced;
  long long claims_seen;
} script_t;

static int count_row(void* arg, const ob_value_t* cols, size_t n) {
  assert_int_equal(n, 1);
  assert_int_equal(cols[0].type, OB_TYPE_INT);
  *(long long*)arg = cols[0].i;
  return 0;
}

/* Writes a row, then fails as scripted: anything it wrote must vanish. */
static int scripted_handler(ob_tx_t* tx, const ob_message_t* m, void* arg) {
  script_t* s = arg;
  ob_value_t p[2];
  int rc;
  s->calls++;
  rc = ob_tx_exec(tx, "CREATE TABLE IF NOT EXISTS effect_log(msg TEXT)", NULL,
                  0, NULL, NULL);
  assert_true(rc >= 0);
  p[0] = OB_VTEXT(m->id);
  assert_int_equal(ob_tx_exec(tx, "INSERT INTO effect_log(msg) VALUES (?)", p,
                              1, NULL, NULL),
                   1);
  /* The dedup claim is already in this transaction when the handler runs. */
  p[0] = OB_VTEXT(m->id);
  assert_int_equal(ob_tx_exec(tx,
                              "SELECT count(*) FROM processed_message WHERE"
                              " message_id = ?",
                              p, 1, count_row, &s->claims_seen),
                   0);
  if (s->unrecoverable && s->calls == 1)
    return ob_tx_fail(tx, "order 42 no longer exists");
  if (s->calls <= s->fail_first) {
    if (s->forced) return ob_tx_retry_forced(tx, s->delay, "supplier busy");
    return ob_tx_retry(tx, s->delay, "supplier busy");
  }
  return OB_DONE;
}

/* (d) Failure after the dedup claim and before the effect: everything rolls
** back, the retry succeeds and the effect happens once. */
static void test_failure_after_claim_rolls_back(void** state) {
  fixture_t* f = fx_new(1);
  script_t s = {0, 1, 0, -1, 0, 0};
  char id[OB_UUID_BUFLEN];
  (void)state;
  assert_int_equal(ob_register(f->e, "Charge", "charger", scripted_handler, &s), 0);
  assert_int_equal(fx_enqueue(f, "Charge", fx_event(1, id), "{}"), 0);
  ob_batch_result_t r;
  assert_int_equal(ob_run_once(f->e, &r), 0);
  assert_int_equal(r.retried, 1);
  assert_int_equal(s.claims_seen, 1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM processed_message"), 0);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM sqlite_schema WHERE name ="
                               " 'effect_log'"),
                   0);
  assert_int_equal(fx_count(f, "SELECT attempts FROM queue"), 1);
  fake_clock_advance(&f->clock, 2000);
  assert_int_equal(ob_run_once(f->e, &r), 0);
  assert_int_equal(r.handled, 1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM effect_log"), 1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM processed_message"), 1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM queue"), 0);
  fx_free(f);
}

/* Symfony defaults: 1 s, 2 s, 4 s (+-10%), then the failure store. A retry
** updates the same row; it never copies it. */
static void test_retry_budget_then_failure_store(void** state) {
  fixture_t* f = fx_new(1);
  script_t s = {0, 1000, 0, -1, 0, 0};
  char id[OB_UUID_BUFLEN];
  const int64_t base[] = {1000, 2000, 4000};
  (void)state;
  ob_register(f->e, "Charge", "charger", scripted_handler, &s);
  fx_enqueue(f, "Charge", fx_event(1, id), "{\"orderId\":42}");
  for (int i = 0; i < 3; i++) {
    ob_batch_result_t r;
    int64_t due;
    assert_int_equal(ob_run_once(f->e, &r), 0);
    assert_int_equal(r.retried, 1);
    assert_int_equal(fx_count(f, "SELECT count(*) FROM queue"), 1);
    assert_int_equal(fx_count(f, "SELECT attempts FROM queue"), i + 1);
    assert_int_equal(ob_next_due(f->e, &due), 0);
    int64_t d = due - f->clock.now;
    assert_true(d >= base[i] * 9 / 10 && d <= base[i] * 11 / 10);
    /* Not ready before its time. */
    fake_clock_advance(&f->clock, d - 1);
    assert_int_equal(ob_run_once(f->e, &r), 0);
    assert_int_equal(r.claimed, 0);
    fake_clock_advance(&f->clock, 1);
  }
  ob_batch_result_t r;
  assert_int_equal(ob_run_once(f->e, &r), 0);
  assert_int_equal(r.failed, 1);
  assert_int_equal(s.calls, 4);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM queue"), 0);
  assert_int_equal(
      fx_count(f, "SELECT count(*) FROM failed_message WHERE error_class ="
                  " 'retries_exhausted' AND attempts = 3 AND reason LIKE"
                  " 'gave up after 3 retries: supplier busy' AND"
                  " first_failed_at < last_failed_at AND body ="
                  " CAST('{\"orderId\":42}' AS BLOB)"),
      1);
  /* Every attempt's writes were rolled back, down to the table it made. */
  assert_int_equal(fx_count(f, "SELECT count(*) FROM sqlite_schema WHERE name ="
                               " 'effect_log'"),
                   0);
  /* The operator retries it: back in the queue with its attempts reset, so
  ** the next failure is a retry again, not straight back to the store. */
  assert_int_equal(ob_failed_retry(f->e, 0), 1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM failed_message"), 0);
  assert_int_equal(fx_count(f, "SELECT attempts FROM queue"), 0);
  assert_int_equal(ob_run_once(f->e, &r), 0);
  assert_int_equal(r.retried, 1);
  assert_int_equal(r.failed, 0);
  assert_int_equal(s.calls, 5);
  assert_int_equal(fx_count(f, "SELECT attempts FROM queue"), 1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM failed_message"), 0);
  fx_free(f);
}

/* Forced retries ignore the budget, and only when asked. */
static void test_forced_retry_ignores_budget(void** state) {
  fixture_t* f = fx_new(1);
  script_t s = {0, 10, 0, 500, 1, 0};
  char id[OB_UUID_BUFLEN];
  (void)state;
  ob_register(f->e, "Charge", "charger", scripted_handler, &s);
  fx_enqueue(f, "Charge", fx_event(1, id), "{}");
  for (int i = 0; i < 10; i++) {
    ob_batch_result_t r;
    assert_int_equal(ob_run_once(f->e, &r), 0);
    assert_int_equal(r.retried, 1);
    int64_t due;
    assert_int_equal(ob_next_due(f->e, &due), 0);
    /* The handler named the delay: used as given, no jitter. */
    assert_int_equal(due - f->clock.now, 500);
    fake_clock_advance(&f->clock, 500);
  }
  ob_batch_result_t r = fx_drain(f);
  assert_int_equal(r.handled, 1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM failed_message"), 0);
  fx_free(f);
}

/* Per-queue policy: max_retries 0 sends the first failure to the store. */
static void test_per_queue_policy(void** state) {
  fixture_t* f = fx_new(1);
  script_t s = {0, 1000, 0, -1, 0, 0};
  ob_retry_policy_t p;
  ob_envelope_t env;
  (void)state;
  ob_retry_policy_init(&p);
  p.max_retries = 0;
  assert_int_equal(ob_set_retry_policy(f->e, "fast-fail", &p), 0);
  p.multiplier = 0.5;
  assert_int_equal(ob_set_retry_policy(f->e, "bad", &p), OB_EINVAL);
  ob_register(f->e, "Charge", "charger", scripted_handler, &s);
  memset(&env, 0, sizeof env);
  env.queue = "fast-fail";
  env.type = "Charge";
  env.id = "0190b6d8-3ae7-7ca2-a653-6ff2d5a6f230";
  env.body = "{}";
  env.body_len = 2;
  assert_int_equal(ob_enqueue(f->e, &env), 0);
  ob_batch_result_t r = fx_drain(f);
  assert_int_equal(r.failed, 1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM failed_message WHERE"
                               " queue_name = 'fast-fail'"),
                   1);
  fx_free(f);
}

static void test_unrecoverable_and_no_handler(void** state) {
  fixture_t* f = fx_new(1);
  script_t s = {0, 0, 1, -1, 0, 0};
  char id[OB_UUID_BUFLEN];
  (void)state;
  ob_register(f->e, "Charge", "charger", scripted_handler, &s);
  fx_enqueue(f, "Charge", fx_event(1, id), "{}");
  fx_enqueue(f, "Unknown", fx_event(2, id), "{}");
  ob_batch_result_t r = fx_drain(f);
  assert_int_equal(r.failed, 2);
  assert_int_equal(s.calls, 1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM failed_message WHERE"
                               " error_class = 'unrecoverable' AND reason ="
                               " 'order 42 no longer exists'"),
                   1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM failed_message WHERE"
                               " error_class = 'no_handler' AND reason LIKE"
                               " '%''Unknown''%'"),
                   1);
  fx_free(f);
}

/* (e) A replay from the failure store passes the dedup guard: an event that
** was meanwhile handled through another delivery is acked, not re-run. */
static void test_failed_retry_passes_dedup_guard(void** state) {
  fixture_t* f = fx_new(1);
  script_t s = {0, 0, 1, -1, 0, 0};
  char id[OB_UUID_BUFLEN];
  (void)state;
  ob_register(f->e, "Charge", "charger", scripted_handler, &s);
  fx_event(9, id);
  fx_enqueue(f, "Charge", id, "{}");
  fx_drain(f);  /* first delivery: unrecoverable */
  assert_int_equal(fx_count(f, "SELECT count(*) FROM failed_message"), 1);
  fx_enqueue(f, "Charge", id, "{}");
  fx_drain(f);  /* redelivery: handled */
  assert_int_equal(s.calls, 2);
  assert_int_equal(ob_failed_retry(f->e, 1), 1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM failed_message"), 0);
  assert_int_equal(fx_count(f, "SELECT attempts FROM queue"), 0);
  ob_batch_result_t r = fx_drain(f);
  assert_int_equal(r.duplicates, 1);
  assert_int_equal(s.calls, 2);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM effect_log"), 1);
  assert_int_equal(ob_failed_retry(f->e, 1), OB_ENOTFOUND);
  fx_free(f);
}

static void test_failed_remove_and_list(void** state) {
  fixture_t* f = fx_new(1);
  char id[OB_UUID_BUFLEN];
  (void)state;
  ob_register_payout(f->e);
  for (int i = 0; i < 3; i++) fx_enqueue(f, PAY, fx_event(i, id), "nope");
  fx_drain(f);
  assert_int_equal(ob_failed_list(f->e, 0, NULL, NULL, NULL), 3);
  assert_int_equal(ob_failed_list(f->e, 0, "Other", NULL, NULL), 0);
  assert_int_equal(ob_failed_list(f->e, 2, NULL, NULL, NULL), 1);
  assert_int_equal(ob_failed_remove(f->e, 2), 1);
  assert_int_equal(ob_failed_remove(f->e, 2), OB_ENOTFOUND);
  assert_int_equal(ob_failed_remove(f->e, 0), 2);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM failed_message"), 0);
  fx_free(f);
}

/* Two consumers of one type each handle the event once. */
static void test_two_consumers(void** state) {
  fixture_t* f = fx_new(1);
  script_t a = {0}, b = {0};
  char id[OB_UUID_BUFLEN];
  (void)state;
  assert_int_equal(ob_register(f->e, "Charge", "ledger", scripted_handler, &a), 0);
  assert_int_equal(ob_register(f->e, "Charge", "mailer", scripted_handler, &b), 0);
  assert_int_equal(ob_register(f->e, "Charge", "mailer", scripted_handler, &b),
                   OB_EEXIST);
  fx_event(1, id);
  fx_enqueue(f, "Charge", id, "{}");
  fx_enqueue(f, "Charge", id, "{}");
  ob_batch_result_t r = fx_drain(f);
  assert_int_equal(r.handled, 1);
  assert_int_equal(r.duplicates, 1);
  assert_int_equal(a.calls, 1);
  assert_int_equal(b.calls, 1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM processed_message"), 2);
  fx_free(f);
}

/* A consumer added after a message was handled: the message redelivered
** (the same id enqueued again) runs the new consumer exactly once, and not
** the first one again. The first consumer's dedup record comes first in the
** handler list, so a loop that stopped at the first duplicate would never
** reach the second consumer. Then once more after a restart with both
** registered: nobody runs. */
static void test_consumer_added_after_handling(void** state) {
  fixture_t* f = fx_new(1);
  script_t a = {0}, b = {0};
  char id[OB_UUID_BUFLEN];
  ob_batch_result_t r;
  (void)state;
  assert_int_equal(ob_register(f->e, "Charge", "ledger", scripted_handler, &a), 0);
  fx_event(1, id);
  assert_int_equal(fx_enqueue(f, "Charge", id, "{}"), 0);
  r = fx_drain(f);
  assert_int_equal(r.handled, 1);
  assert_int_equal(a.calls, 1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM processed_message"), 1);

  /* The new consumer joins the running engine; the message comes back. */
  assert_int_equal(ob_register(f->e, "Charge", "mailer", scripted_handler, &b), 0);
  assert_int_equal(fx_enqueue(f, "Charge", id, "{}"), 0);
  r = fx_drain(f);
  assert_int_equal(r.claimed, 1);
  assert_int_equal(r.handled, 1);
  assert_int_equal(r.duplicates, 0);
  assert_int_equal(a.calls, 1);
  assert_int_equal(b.calls, 1);
  assert_int_equal(
      fx_count(f, "SELECT count(*) FROM processed_message WHERE consumer_name"
                  " = 'mailer' AND message_id ="
                  " '0190b6d8-3ae7-7ca2-a653-000000000001'"),
      1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM processed_message"), 2);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM effect_log"), 2);

  /* After a restart, both registered (the first one first): a duplicate. */
  fx_reopen(f);
  assert_int_equal(ob_register(f->e, "Charge", "ledger", scripted_handler, &a), 0);
  assert_int_equal(ob_register(f->e, "Charge", "mailer", scripted_handler, &b), 0);
  assert_int_equal(fx_enqueue(f, "Charge", id, "{}"), 0);
  r = fx_drain(f);
  assert_int_equal(r.handled, 0);
  assert_int_equal(r.duplicates, 1);
  assert_int_equal(a.calls, 1);
  assert_int_equal(b.calls, 1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM queue"), 0);
  fx_free(f);
}

/* Group commit: ten messages in one transaction, the failing one rolls back
** alone (its writes and its claim), the others commit together. */
static void test_group_commit_savepoints(void** state) {
  fixture_t* f = fx_new(10);
  char id[OB_UUID_BUFLEN], body[256];
  (void)state;
  ob_register_payout(f->e);
  for (int i = 0; i < 10; i++)
    fx_enqueue(f, PAY, fx_event(i, id), i == 4 ? "{\"broken\":" : fx_payment(i, body));
  ob_batch_result_t r;
  assert_int_equal(ob_run_once(f->e, &r), 0);
  assert_int_equal(r.claimed, 10);
  assert_int_equal(r.handled, 9);
  assert_int_equal(r.failed, 1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM merchant_payout"), 9);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM processed_message"), 9);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM outbox_event"), 9);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM queue"), 0);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM failed_message WHERE"
                               " message_id = '0190b6d8-3ae7-7ca2-a653-000000000004'"
                               " AND reason = 'body is not valid JSON'"),
                   1);
  assert_int_equal(ob_check(f->e, NULL, NULL), 0);
  fx_free(f);
}

/* ---- handler SQL rules --------------------------------------------------- */

static int rules_handler(ob_tx_t* tx, const ob_message_t* m, void* arg) {
  int* result = arg;
  ob_value_t p[1];
  (void)m;
  /* Transaction control, pragmas, attach and multiple statements are
  ** refused: the one-transaction guarantee depends on it. */
  assert_int_equal(ob_tx_exec(tx, "COMMIT", NULL, 0, NULL, NULL), OB_EINVAL);
  assert_int_equal(ob_tx_exec(tx, "BEGIN", NULL, 0, NULL, NULL), OB_EINVAL);
  assert_int_equal(ob_tx_exec(tx, "SAVEPOINT x", NULL, 0, NULL, NULL), OB_EINVAL);
  assert_int_equal(ob_tx_exec(tx, "PRAGMA synchronous=OFF", NULL, 0, NULL, NULL),
                   OB_EINVAL);
  assert_int_equal(ob_tx_exec(tx, "ATTACH 'x.db' AS x", NULL, 0, NULL, NULL),
                   OB_EINVAL);
  assert_int_equal(ob_tx_exec(tx, "SELECT 1; DELETE FROM queue", NULL, 0, NULL,
                              NULL),
                   OB_EINVAL);
  /* Parameter count must match. */
  assert_int_equal(ob_tx_exec(tx, "SELECT ?", NULL, 0, NULL, NULL), OB_EINVAL);
  /* A constraint violation undoes that statement only. */
  assert_true(ob_tx_exec(tx, "CREATE TABLE IF NOT EXISTS u(k TEXT UNIQUE)",
                         NULL, 0, NULL, NULL) >= 0);
  p[0] = OB_VTEXT("k1");
  assert_int_equal(ob_tx_exec(tx, "INSERT INTO u(k) VALUES (?)", p, 1, NULL, NULL), 1);
  assert_int_equal(ob_tx_exec(tx, "INSERT INTO u(k) VALUES (?)", p, 1, NULL, NULL),
                   OB_ECONSTRAINT);
  /* Hostile text is data, never SQL. */
  p[0] = OB_VTEXT("'); DROP TABLE queue;--");
  assert_int_equal(ob_tx_exec(tx, "INSERT INTO u(k) VALUES (?)", p, 1, NULL, NULL), 1);
  /* Invalid outbox payloads are refused. */
  assert_int_equal(ob_tx_emit(tx, "E", "agg", "{not json", 9, NULL), OB_EINVAL);
  char eid[OB_UUID_BUFLEN];
  assert_int_equal(ob_tx_emit(tx, "E", "agg", "{\"a\":1}", 7, eid), 0);
  assert_int_equal(ob_uuid_valid(eid), 1);
  assert_int_equal(eid[14], '7');  /* UUIDv7 */
  *result = 1;
  return OB_DONE;
}

static void test_handler_sql_rules(void** state) {
  fixture_t* f = fx_new(1);
  int result = 0;
  char id[OB_UUID_BUFLEN];
  (void)state;
  ob_register(f->e, "Rules", "rules", rules_handler, &result);
  fx_enqueue(f, "Rules", fx_event(1, id), "{}");
  ob_batch_result_t r = fx_drain(f);
  assert_int_equal(result, 1);
  assert_int_equal(r.handled, 1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM u"), 2);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM u WHERE k ="
                               " '''); DROP TABLE queue;--'"),
                   1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM outbox_event WHERE"
                               " event_type = 'E'"),
                   1);
  fx_free(f);
}

/* ---- enqueue validation --------------------------------------------------- */

static void test_enqueue_validation(void** state) {
  fixture_t* f = fx_new(1);
  ob_envelope_t env;
  char big[2000];
  (void)state;
  assert_int_equal(fx_enqueue(f, PAY, NULL, "{}"), OB_EINVAL);
  assert_string_equal(ob_errmsg(f->e),
                      "message id is required (the producer's stable id)");
  assert_int_equal(fx_enqueue(f, PAY, "order-42", "{}"), OB_EINVAL);
  assert_non_null(strstr(ob_errmsg(f->e), "is not a UUID"));
  assert_int_equal(fx_enqueue(f, "", "0190b6d8-3ae7-7ca2-a653-6ff2d5a6f230", "{}"),
                   OB_EINVAL);
  assert_int_equal(fx_enqueue(f, "bad\ntype", "0190b6d8-3ae7-7ca2-a653-6ff2d5a6f230",
                              "{}"),
                   OB_EINVAL);
  memset(&env, 0, sizeof env);
  env.type = PAY;
  env.id = "0190b6d8-3ae7-7ca2-a653-6ff2d5a6f230";
  env.headers = "[1,2]";
  assert_int_equal(ob_enqueue(f->e, &env), OB_EINVAL);
  env.headers = NULL;
  env.delay_ms = -1;
  assert_int_equal(ob_enqueue(f->e, &env), OB_EINVAL);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM queue"), 0);
  /* Body cap. */
  fx_reopen(f);
  ob_close(f->e);
  f->opts.max_body_bytes = 1000;
  fx_open(f);
  memset(big, 'x', sizeof big);
  env.delay_ms = 0;
  env.body = big;
  env.body_len = sizeof big;
  assert_int_equal(ob_enqueue(f->e, &env), OB_ETOOBIG);
  assert_string_equal(ob_errmsg(f->e), "body is 2000 bytes, over the 1000-byte limit");
  /* Batch: bad envelopes are rejected alone, good ones commit. */
  ob_envelope_t many[3];
  int results[3];
  memset(many, 0, sizeof many);
  for (int i = 0; i < 3; i++) {
    many[i].type = PAY;
    many[i].body = "{}";
    many[i].body_len = 2;
  }
  many[0].id = "0190b6d8-3ae7-7ca2-a653-6ff2d5a6f230";
  many[1].id = "nope";
  many[2].id = "0190b6d8-3ae7-7ca2-a653-6ff2d5a6f231";
  assert_int_equal(ob_enqueue_many(f->e, many, 3, results), 2);
  assert_int_equal(results[0], 0);
  assert_int_equal(results[1], OB_EINVAL);
  assert_int_equal(results[2], 0);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM queue"), 2);
  /* Delayed messages wait. */
  env.body = "{}";
  env.body_len = 2;
  env.delay_ms = 5000;
  env.id = "0190b6d8-3ae7-7ca2-a653-6ff2d5a6f232";
  assert_int_equal(ob_enqueue(f->e, &env), 0);
  ob_stats_t st;
  assert_int_equal(ob_stats(f->e, &st), 0);
  assert_int_equal(st.queue_ready, 2);
  assert_int_equal(st.queue_delayed, 1);
  fx_free(f);
}

/* Hostile bytes in ids' neighbours: bodies with NUL, invalid UTF-8 and SQL
** round-trip byte for byte into the failure store. */
static void test_bodies_round_trip(void** state) {
  fixture_t* f = fx_new(1);
  ob_envelope_t env;
  static const char body[] = "\xff\xfe'); DROP TABLE queue;--\0tail";
  (void)state;
  ob_register_payout(f->e);
  memset(&env, 0, sizeof env);
  env.type = PAY;
  env.id = "0190b6d8-3ae7-7ca2-a653-6ff2d5a6f230";
  env.body = body;
  env.body_len = sizeof body - 1;
  assert_int_equal(ob_enqueue(f->e, &env), 0);
  fx_drain(f);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM failed_message WHERE body ="
                               " x'fffe27293b2044524f50205441424c452071756575653b2d2d007461696c'"),
                   1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM sqlite_schema WHERE name = 'queue'"),
                   1);
  fx_free(f);
}

/* Every malformed PaymentCaptured ends in the failure store with its own
** specific reason, nothing applied. */
static void test_malformed_bodies_reach_failure_store(void** state) {
  static const struct {
    const char* body;
    const char* reason;
  } cases[] = {
      {"not json", "body is not valid JSON"},
      {"[1,2]", "body is not a JSON object"},
      {"{\"merchantId\":\"3727331a-b533-4c6e-a0f8-48532237307b\","
       "\"amountInMinorUnits\":1,\"currency\":\"EUR\"}",
       "missing field paymentId"},
      {"{\"paymentId\":5,\"merchantId\":\"3727331a-b533-4c6e-a0f8-48532237307b\","
       "\"amountInMinorUnits\":1,\"currency\":\"EUR\"}",
       "field paymentId must be a string"},
      {"{\"paymentId\":\"pay-1\",\"merchantId\":\"3727331a-b533-4c6e-a0f8-48532237307b\","
       "\"amountInMinorUnits\":1,\"currency\":\"EUR\"}",
       "paymentId is not a UUID"},
      {"{\"paymentId\":\"5c4080b1-b5d2-4e91-8de8-ec0e119d7647\","
       "\"merchantId\":\"3727331a-b533-4c6e-a0f8-48532237307b\","
       "\"amountInMinorUnits\":0,\"currency\":\"EUR\"}",
       "amountInMinorUnits must be > 0"},
      {"{\"paymentId\":\"5c4080b1-b5d2-4e91-8de8-ec0e119d7647\","
       "\"merchantId\":\"3727331a-b533-4c6e-a0f8-48532237307b\","
       "\"amountInMinorUnits\":-1,\"currency\":\"EUR\"}",
       "amountInMinorUnits must be > 0"},
      {"{\"paymentId\":\"5c4080b1-b5d2-4e91-8de8-ec0e119d7647\","
       "\"merchantId\":\"3727331a-b533-4c6e-a0f8-48532237307b\","
       "\"amountInMinorUnits\":12.5,\"currency\":\"EUR\"}",
       "amountInMinorUnits must be an integer"},
      {"{\"paymentId\":\"5c4080b1-b5d2-4e91-8de8-ec0e119d7647\","
       "\"merchantId\":\"3727331a-b533-4c6e-a0f8-48532237307b\","
       "\"amountInMinorUnits\":9223372036854775808,\"currency\":\"EUR\"}",
       "amountInMinorUnits overflows int64"},
      {"{\"paymentId\":\"5c4080b1-b5d2-4e91-8de8-ec0e119d7647\","
       "\"merchantId\":\"3727331a-b533-4c6e-a0f8-48532237307b\","
       "\"amountInMinorUnits\":1,\"currency\":\"eur\"}",
       "currency must be three upper-case letters (ISO 4217)"},
      {"{\"paymentId\":\"5c4080b1-b5d2-4e91-8de8-ec0e119d7647\","
       "\"merchantId\":\"3727331a-b533-4c6e-a0f8-48532237307b\","
       "\"amountInMinorUnits\":1,\"currency\":\"EUR\",\"currency\":\"USD\"}",
       "duplicate field currency"},
  };
  const size_t n = sizeof cases / sizeof cases[0];
  fixture_t* f = fx_new(4);
  char id[OB_UUID_BUFLEN], sql[512], big[5000];
  (void)state;
  ob_register_payout(f->e);
  for (size_t i = 0; i < n; i++)
    assert_int_equal(fx_enqueue(f, PAY, fx_event((int)i, id), cases[i].body), 0);
  memset(big, ' ', sizeof big - 3);
  memcpy(big + sizeof big - 3, "{}", 3);
  assert_int_equal(fx_enqueue(f, PAY, fx_event(99, id), big), 0);
  ob_batch_result_t r = fx_drain(f);
  assert_int_equal(r.failed, (int)n + 1);
  for (size_t i = 0; i < n; i++) {
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM failed_message WHERE message_id ="
             " '0190b6d8-3ae7-7ca2-a653-%012d' AND error_class ="
             " 'unrecoverable' AND reason = '%s'",
             (int)i, cases[i].reason);
    if (fx_count(f, sql) != 1) fail_msg("case %zu: want reason '%s'", i, cases[i].reason);
  }
  assert_int_equal(fx_count(f, "SELECT count(*) FROM failed_message WHERE reason ="
                               " 'body is 4999 bytes, over the 4096-byte limit'"),
                   1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM merchant_payout"), 0);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM outbox_event"), 0);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM processed_message"), 0);
  fx_free(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_same_event_twice),
      cmocka_unit_test(test_payload_and_id_normalisation),
      cmocka_unit_test(test_second_capture_is_unrecoverable),
      cmocka_unit_test(test_failure_after_claim_rolls_back),
      cmocka_unit_test(test_retry_budget_then_failure_store),
      cmocka_unit_test(test_forced_retry_ignores_budget),
      cmocka_unit_test(test_per_queue_policy),
      cmocka_unit_test(test_unrecoverable_and_no_handler),
      cmocka_unit_test(test_failed_retry_passes_dedup_guard),
      cmocka_unit_test(test_failed_remove_and_list),
      cmocka_unit_test(test_two_consumers),
      cmocka_unit_test(test_consumer_added_after_handling),
      cmocka_unit_test(test_group_commit_savepoints),
      cmocka_unit_test(test_handler_sql_rules),
      cmocka_unit_test(test_enqueue_validation),
      cmocka_unit_test(test_bodies_round_trip),
      cmocka_unit_test(test_malformed_bodies_reach_failure_store),
  };
  return cmocka_run_group_tests_name("engine", tests, NULL, NULL);
}
