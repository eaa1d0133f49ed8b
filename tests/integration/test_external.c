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
  (void)state;
  ob_register_payout(f->e);
  ob_register(f->e, "Busy", "busy", busy, NULL);
  fx_payment(1, body);
  fx_event(1, id);

  ob__queue_row_t r = row(id, OB_PAYOUT_MESSAGE_TYPE, body, 0);
  assert_int_equal(ob__handle_external(f->e, &r, &res, &delay), 0);
  assert_int_equal(res.handled, 1);
  assert_int_equal(delay, -1);
  /* The same message again (a lost DeleteMessage): a duplicate to delete. */
  assert_int_equal(ob__handle_external(f->e, &r, &res, &delay), 0);
  assert_int_equal(res.duplicates, 1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM merchant_payout"), 1);

  /* Invalid body: stored in the failure store, then acknowledged. */
  ob__queue_row_t bad = row(fx_event(2, id), OB_PAYOUT_MESSAGE_TYPE, "{", 0);
  assert_int_equal(ob__handle_external(f->e, &bad, &res, &delay), 0);
  assert_int_equal(res.failed, 1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM failed_message WHERE"
                               " queue_name = 'sqs' AND reason ="
                               " 'body is not valid JSON'"),
                   1);

  /* A retry is reported as a delay, nothing written. */
  ob__queue_row_t b = row(fx_event(3, id), "Busy", "{}", 1);
  assert_int_equal(ob__handle_external(f->e, &b, &res, &delay), 0);
  assert_int_equal(res.retried, 1);
  assert_true(delay >= 1800 && delay <= 2200);  /* second retry: 2 s +-10% */
  assert_int_equal(fx_count(f, "SELECT count(*) FROM failed_message WHERE"
                               " type = 'Busy'"),
                   0);
  /* Past the budget (the 4th delivery), it is stored as exhausted. */
  b.attempts = 3;
  assert_int_equal(ob__handle_external(f->e, &b, &res, &delay), 0);
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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_external_outcomes),
      cmocka_unit_test(test_relaxed_transactions_restore_full),
  };
  return cmocka_run_group_tests_name("external", tests, NULL, NULL);
}
