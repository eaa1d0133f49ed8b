/* SPDX-License-Identifier: Apache-2.0 */
/* Messages that arrive from outside (SQS) have no local queue row: the same
** handling transaction, with the outcome reported to the transport. */
#include "tests/integration/engine_fixture.h"

#include "core/engine/engine_int.h"
#include "oncebox_payout.h"

static ob__queue_row_t row(const char* id, const char* type, const char* body,
                           int attempts) {
  ob__queue_row_t r;
  memset(&r, 0, sizeof r);
  r.queue = (char*)"sqs";
  r.message_id = (char*)id;
  r.type = (char*)type;
  r.body = (char*)body;
  r.body_len = strlen(body);
  r.attempts = attempts;
  r.created_at = FX_T0;
  return r;
}

static int busy(ob_tx_t* tx, const ob_message_t* m, void* arg) {
  (void)m;
  (void)arg;
  return ob_tx_retry(tx, -1, "provider busy");
}

static void test_external_outcomes(void** state) {
  fixture_t* f = fx_new(1);
  char body[256], id[OB_UUID_BUFLEN];
  ob_batch_result_t res;
  int64_t delay;
  int left;
  (void)state;
  ob_register_payout(f->e);
  ob_register(f->e, "Busy", "busy", busy, NULL);
  fx_payment(1, body);
  fx_event(1, id);

  ob__queue_row_t r = row(id, OB_PAYOUT_MESSAGE_TYPE, body, 0);
  assert_int_equal(ob__handle_external(f->e, &r, 0, &res, &delay, &left), 0);
  assert_int_equal(res.handled, 1);
  assert_int_equal(delay, -1);
  /* The same message again (a lost DeleteMessage): a duplicate to delete. */
  assert_int_equal(ob__handle_external(f->e, &r, 0, &res, &delay, &left), 0);
  assert_int_equal(res.duplicates, 1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM merchant_payout"), 1);

  /* Invalid body: stored in the failure store, then acknowledged. */
  ob__queue_row_t bad = row(fx_event(2, id), OB_PAYOUT_MESSAGE_TYPE, "{", 0);
  assert_int_equal(ob__handle_external(f->e, &bad, 0, &res, &delay, &left), 0);
  assert_int_equal(res.failed, 1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM failed_message WHERE"
                               " queue_name = 'sqs' AND reason ="
                               " 'body is not valid JSON'"),
                   1);

  /* A retry is reported as a delay, nothing written. */
  ob__queue_row_t b = row(fx_event(3, id), "Busy", "{}", 1);
  assert_int_equal(ob__handle_external(f->e, &b, 0, &res, &delay, &left), 0);
  assert_int_equal(res.retried, 1);
  assert_true(delay >= 1800 && delay <= 2200);  /* second retry: 2 s +-10% */
  assert_int_equal(fx_count(f, "SELECT count(*) FROM failed_message WHERE"
                               " type = 'Busy'"),
                   0);
  /* Past the budget (the 4th delivery), it is stored as exhausted. */
  b.attempts = 3;
  assert_int_equal(ob__handle_external(f->e, &b, 0, &res, &delay, &left), 0);
  assert_int_equal(res.failed, 1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM failed_message WHERE"
                               " type = 'Busy' AND error_class ="
                               " 'retries_exhausted' AND attempts = 3"),
                   1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM queue"), 0);
  fx_free(f);
}

static int sync_level(ob__db_t* db) {
  sqlite3_stmt* st;
  int v = -1;
  assert_int_equal(sqlite3_prepare_v2(db->db, "PRAGMA synchronous", -1, &st, NULL),
                   SQLITE_OK);
  if (sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_int(st, 0);
  sqlite3_finalize(st);
  return v;
}

/* Relaxed (NORMAL) transactions for relay bookkeeping never leak into the
** durable ones: FULL is back after commit and after rollback. */
static void test_relaxed_transactions_restore_full(void** state) {
  fixture_t* f = fx_new(1);
  ob__db_t* db = &f->e->db;
  (void)state;
  assert_int_equal(sync_level(db), 2);
  assert_int_equal(ob__db_begin_relaxed(db), 0);
  assert_int_equal(sync_level(db), 1);
  assert_int_equal(ob__db_commit(db), 0);
  assert_int_equal(sync_level(db), 2);
  assert_int_equal(ob__db_begin_relaxed(db), 0);
  ob__db_rollback(db);
  assert_int_equal(sync_level(db), 2);
  assert_int_equal(ob__db_begin(db), 0);
  assert_int_equal(sync_level(db), 2);
  ob__db_rollback(db);
  fx_free(f);
}


/* What each handling saw: "source|id|content type|body" rows, in order. */
static int record(ob_tx_t* tx, const ob_message_t* m, void* arg) {
  ob_value_t v[5] = {OB_VTEXT(m->source ? m->source : "-"), OB_VTEXT(m->id),
                     OB_VTEXT(m->content_type ? m->content_type : "-"),
                     OB_VTEXT(m->traceparent ? m->traceparent : "-"),
                     OB_VBLOB(m->body, m->body_len)};
  int rc;
  (void)arg;
  rc = ob_tx_exec(tx,
                  "INSERT INTO seen(source, id, content_type, traceparent,"
                  " body) VALUES (?, ?, ?, ?, ?)",
                  v, 5, NULL, NULL);
  return rc < 0 ? rc : OB_DONE;  /* ob_tx_exec counts the rows changed */
}

static void make_seen(fixture_t* f) {
  sqlite3* db;
  assert_int_equal(sqlite3_open(f->db_path, &db), SQLITE_OK);
  assert_int_equal(sqlite3_exec(db,
                                "CREATE TABLE seen(n INTEGER PRIMARY KEY,"
                                " source TEXT, id TEXT, content_type TEXT,"
                                " traceparent TEXT, body BLOB)",
                                NULL, NULL, NULL),
                   SQLITE_OK);
  sqlite3_close(db);
}

static ob__queue_row_t event(const char* source, const char* id,
                             const char* type, const char* body) {
  ob__queue_row_t r = row(id, type, body, 0);
  r.source = (char*)source;
  return r;
}

/* CloudEvents make (source, id) the identity and let ids be any string:
** two producers counting 1, 2, ... are four events, not two. */
static void test_identity_is_source_and_id(void** state) {
  fixture_t* f = fx_new(1);
  ob_batch_result_t res;
  int64_t delay;
  int left;
  const char* sources[2] = {"urn:pos:store-1", "https://pos.example/store%2017"};
  (void)state;
  make_seen(f);
  assert_int_equal(ob_register(f->e, "Sale", "record", record, NULL), 0);
  for (int pass = 0; pass < 2; pass++)
    for (int s = 0; s < 2; s++)
      for (int i = 1; i <= 2; i++) {
        char id[8];
        snprintf(id, sizeof id, "%d", i);
        ob__queue_row_t r = event(sources[s], id, "Sale", "{}");
        assert_int_equal(
            ob__handle_external(f->e, &r, 0, &res, &delay, &left), 0);
        /* The second pass redelivers each one: a duplicate. */
        assert_int_equal(res.handled, pass == 0);
        assert_int_equal(res.duplicates, pass == 1);
      }
  assert_int_equal(fx_count(f, "SELECT count(*) FROM seen"), 4);
  assert_int_equal(fx_count(f, "SELECT count(DISTINCT source) FROM seen"), 2);
  /* One source row each, however many events came from it. */
  assert_int_equal(fx_count(f, "SELECT count(*) FROM event_source"), 2);
  /* A local message with the same id is a third identity. */
  assert_int_equal(fx_count(f, "SELECT count(*) FROM processed_message"), 4);
  fx_free(f);
}

/* A message of a FIFO group whose earlier message is still in the local
** queue (here: waiting for an effect) waits behind it, held, and each one
** is released only when the one ahead of it leaves the queue. */
static void test_group_held_in_order(void** state) {
  fixture_t* f = fx_new(10);
  ob_batch_result_t res;
  int64_t delay;
  int left;
  const char* g = "https://sqs.test/1/q.fifo till-7";
  (void)state;
  make_seen(f);
  assert_int_equal(ob_register(f->e, "Sale", "record", record, NULL), 0);
  /* The group's head, as the fence's after_handler hook leaves it. */
  ob__queue_row_t head = event("urn:t", "a", "Sale", "{\"n\":0}");
  head.group_key = (char*)g;
  assert_int_equal(ob__db_begin(&f->e->db), 0);
  assert_int_equal(ob__queue_insert_waiting(&f->e->db, &head, "k", FX_T0 +
                                            3600000, FX_T0), 0);
  assert_int_equal(ob__db_commit(&f->e->db), 0);
  for (int i = 1; i <= 3; i++) {
    char id[8], body[16];
    snprintf(id, sizeof id, "%c", 'a' + i);
    snprintf(body, sizeof body, "{\"n\":%d}", i);
    ob__queue_row_t r = event("urn:t", id, "Sale", body);
    r.group_key = (char*)g;
    assert_int_equal(ob__handle_external(f->e, &r, 0, &res, &delay, &left), 0);
    assert_int_equal(res.waiting, 1);
  }
  /* Another group, and a message without a group, are not held. */
  ob__queue_row_t other = event("urn:t", "x", "Sale", "{}");
  other.group_key = (char*)"https://sqs.test/1/q.fifo till-8";
  assert_int_equal(ob__handle_external(f->e, &other, 0, &res, &delay, &left), 0);
  assert_int_equal(res.handled, 1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM queue WHERE available_at"
                               " = 9223372036854775807"),
                   3);
  fx_drain(f);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM seen"), 1);
  /* The head leaves (its effect resolved and it was handled): the next
  ** one, only, becomes due; and so on down the group. */
  assert_int_equal(ob__db_begin(&f->e->db), 0);
  assert_int_equal(ob__queue_delete(&f->e->db, 1), 0);
  assert_int_equal(ob__db_commit(&f->e->db), 0);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM queue WHERE available_at"
                               " = 9223372036854775807"),
                   2);
  /* One handling transaction of 10: each handled row's delete releases
  ** the next, which the same run does not see; the drain loops. */
  fx_drain(f);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM queue"), 0);
  assert_int_equal(fx_count(f, "SELECT (SELECT group_concat(id, '') FROM"
                               " (SELECT id FROM seen ORDER BY n)) = 'xbcd'"),
                   1);
  fx_free(f);
}

static int emit_two(ob_tx_t* tx, const ob_message_t* m, void* arg) {
  int rc;
  (void)arg;
  (void)m;
  rc = ob_tx_emit(tx, "Noted", "agg-1", "{}", 2, NULL);
  if (rc == 0) rc = ob_tx_emit(tx, "Noted", "agg-1", "{}", 2, NULL);
  return rc;
}

/* CloudEvents' distributed-tracing extension: a message's trace context
** (a local message's headers; an SQS event's, which the consumer puts in
** the same headers) reaches the handler, and the events it emits carry the
** same trace id and flags with a new parent id, and the same tracestate.
** An invalid traceparent is dropped, not an error. */
static void test_trace_context_continues(void** state) {
  fixture_t* f = fx_new(1);
  ob_envelope_t env;
  char id[OB_UUID_BUFLEN];
  (void)state;
  make_seen(f);
  assert_int_equal(ob_register(f->e, "Sale", "record", record, NULL), 0);
  assert_int_equal(ob_register(f->e, "Sale", "emit", emit_two, NULL), 0);
  memset(&env, 0, sizeof env);
  env.type = "Sale";
  env.id = fx_event(1, id);
  env.headers = "{\"traceparent\":\"00-4bf92f3577b34da6a3ce929d0e0e4736-"
                "00f067aa0ba902b7-01\",\"tracestate\":\"congo=t61rcWkgMzE\"}";
  env.body = "{}";
  env.body_len = 2;
  assert_int_equal(ob_enqueue(f->e, &env), 0);
  /* Invalid (upper-case hex): dropped. */
  env.id = fx_event(2, id);
  env.headers = "{\"traceparent\":\"00-4BF92F3577B34DA6A3CE929D0E0E4736-"
                "00F067AA0BA902B7-01\"}";
  assert_int_equal(ob_enqueue(f->e, &env), 0);
  fx_drain(f);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM seen WHERE traceparent ="
                               " '00-4bf92f3577b34da6a3ce929d0e0e4736-"
                               "00f067aa0ba902b7-01'"),
                   1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM seen WHERE traceparent ="
                               " '-'"),
                   1);
  /* Two events of the traced message: its trace, a new parent (one per
  ** handling, so the same for both), its tracestate; none for the other. */
  assert_int_equal(fx_count(f, "SELECT count(*) FROM outbox_event WHERE"
                               " traceparent LIKE"
                               " '00-4bf92f3577b34da6a3ce929d0e0e4736-%-01'"
                               " AND traceparent NOT LIKE '%00f067aa0ba902b7%'"
                               " AND tracestate = 'congo=t61rcWkgMzE'"),
                   2);
  assert_int_equal(fx_count(f, "SELECT count(DISTINCT traceparent) FROM"
                               " outbox_event WHERE traceparent IS NOT NULL"),
                   1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM outbox_event WHERE"
                               " traceparent IS NULL"),
                   2);
  fx_free(f);
}

/* With failures left to the transport (ob_consumer_options_t
** .failures_to_sqs), a failure for good stores nothing: no failure row, no
** dedup record, so the redelivery SQS makes runs the handler again. */
static void test_failure_left_to_transport(void** state) {
  fixture_t* f = fx_new(1);
  ob_batch_result_t res;
  int64_t delay;
  int left;
  (void)state;
  ob__queue_row_t r = event("urn:t", "9", "NoSuchType", "{}");
  assert_int_equal(ob__handle_external(f->e, &r, 1, &res, &delay, &left), 0);
  assert_int_equal(left, 1);
  assert_int_equal(res.failed, 0);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM failed_message"), 0);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM event_source"), 0);
  /* Without it: the failure store. */
  assert_int_equal(ob__handle_external(f->e, &r, 0, &res, &delay, &left), 0);
  assert_int_equal(left, 0);
  assert_int_equal(res.failed, 1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM failed_message WHERE"
                               " source = 'urn:t' AND error_class ="
                               " 'no_handler'"),
                   1);
  fx_free(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_external_outcomes),
      cmocka_unit_test(test_identity_is_source_and_id),
      cmocka_unit_test(test_group_held_in_order),
      cmocka_unit_test(test_trace_context_continues),
      cmocka_unit_test(test_failure_left_to_transport),
      cmocka_unit_test(test_relaxed_transactions_restore_full),
  };
  return cmocka_run_group_tests_name("external", tests, NULL, NULL);
}
