/* SPDX-License-Identifier: Apache-2.0 */
/*
** The outbox relay against fauxqs behind the TLS terminator that verifies
** every SigV4 signature (tests/integration/sqs/sqs_server.mjs): the engine
** reads its AWS configuration from the environment like a terminal would,
** with https://localhost:PORT as the endpoint and the test CA.
**
** Covered: everything published as CloudEvents with attributes; offline
** (endpoint unreachable) -> payments handled, outbox grows, nothing lost;
** network back -> published with no intervention; 503s absorbed; an entry
** SQS rejects is parked after park_after attempts without blocking other
** rows, and with ordering on, holds back later rows of its aggregate only.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <sqlite3.h>

#include "core/relay/relay_tx.h"
#include "tests/integration/relay/relay_fixture.h"
#include "oncebox_charge.h"
#include "oncebox_payout.h"

static sq_server_t g_srv;
static const char* g_skip;

static int group_setup(void** state) {
  (void)state;
  g_skip = sq_skip_reason();
  return rf_group_start(&g_srv, "relay", g_skip);
}

static int group_teardown(void** state) {
  (void)state;
  rf_group_stop(&g_srv, g_skip);
  return 0;
}

static int enable(fixture_t* f, const char* queue_url, int park_after,
                  int ordered) {
  return rf_enable(f, queue_url, "urn:oncebox:test-terminal", park_after,
                   ordered);
}

/* Receive everything in the queue (the C client, deleting as it goes);
** returns a cJSON array of the CloudEvents, and checks attributes. */
static cJSON* drain_queue(const char* queue_url) {
  uv_loop_t loop;
  sq_clock_t clock;
  ob__sqs_client_config_t cfg;
  ob__sqs_client_t* c = NULL;
  ob__sqs_req_t req;
  sq_done_t done;
  cJSON* all = cJSON_CreateArray();
  char err[256];
  static const char* const sys[] = {"ApproximateReceiveCount"};
  static const char* const mattrs[] = {"All"};

  uv_loop_init(&loop);
  sq_clock_init(&clock, 0, -1);
  sq_client_config(&g_srv, &cfg, SQ_SECRET, &clock.clock);
  assert_int_equal(ob__sqs_client_open(&c, &loop, &cfg, err, sizeof err), 0);
  for (;;) {
    ob__sqs_receive_t p;
    memset(&p, 0, sizeof p);
    p.queue_url = queue_url;
    p.system_attribute_names = sys;
    p.nsystem_attribute_names = 1;
    p.message_attribute_names = mattrs;
    p.nmessage_attribute_names = 1;
    p.max_messages = 10;
    p.visibility_timeout = 30;
    p.wait_time_seconds = 0;
    memset(&req, 0, sizeof req);
    memset(&done, 0, sizeof done);
    req.data = &done;
    assert_int_equal(ob__sqs_receive_message(c, &req, &p, sq_cb), 0);
    assert_int_equal(sq_wait(&loop, &req), 0);
    size_t n = req.receive.n;
    for (size_t i = 0; i < n; i++) {
      const ob__sqs_message_t* m = &req.receive.messages[i];
      cJSON* ev = cJSON_ParseWithLength(m->body, m->body_len);
      assert_non_null(ev);
      /* Attributes for filtering. */
      int seen = 0;
      for (size_t k = 0; k < m->nmessage_attributes; k++) {
        const ob__sqs_attr_t* a = &m->message_attributes[k];
        if (strcmp(a->name, "eventType") == 0) {
          assert_memory_equal(a->value, "MerchantPayoutCreated", a->value_len);
          seen++;
        } else if (strcmp(a->name, "aggregateId") == 0 ||
                   strcmp(a->name, "causationId") == 0) {
          seen++;
        }
      }
      assert_int_equal(seen, 3);
      cJSON_AddItemToArray(all, ev);
      ob__sqs_req_t del;
      sq_done_t d2 = {0, 0};
      memset(&del, 0, sizeof del);
      del.data = &d2;
      assert_int_equal(ob__sqs_delete_message(c, &del, queue_url, m->receipt_handle,
                                             sq_cb), 0);
      assert_int_equal(sq_wait(&loop, &del), 0);
      ob__sqs_req_cleanup(&del);
    }
    ob__sqs_req_cleanup(&req);
    if (n == 0) break;
  }
  ob__sqs_client_close(c, NULL, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  uv_loop_close(&loop);
  return all;
}

/* Every outbox row is in `events` at least once, with its payload. */
static void delivered_row(void* arg, int ncols, const char* const* col) {
  cJSON* events = arg;
  const char* id = col[0];
  const char* agg = col[1];
  int found = 0;
  cJSON* ev;
  (void)ncols;
  cJSON_ArrayForEach(ev, events) {
    if (strcmp(cJSON_GetObjectItem(ev, "id")->valuestring, id) != 0) continue;
    found++;
    assert_string_equal(cJSON_GetObjectItem(ev, "subject")->valuestring, agg);
    assert_string_equal(cJSON_GetObjectItem(ev, "source")->valuestring,
                        "urn:oncebox:test-terminal");
    assert_string_equal(cJSON_GetObjectItem(ev, "specversion")->valuestring, "1.0");
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(ev, "data"), "paymentId")->valuestring,
        agg);
  }
  if (found < 1) fail_msg("outbox event %s never reached SQS", id);
}

static void assert_all_delivered(fixture_t* f, cJSON* events, int want) {
  assert_int_equal(ts_backend_rows(f->db_path, "SELECT id, aggregate_id,"
                                   " payload FROM outbox_event",
                                   delivered_row, events),
                   want);
}


/* While the relay backs off after faults, an until-idle run may stop with
** rows left for SQS (stalled) or with nothing it can do now (done): both
** are clean stops; the loops around it run until everything is published. */
static void run_until_idle_or_stalled(fixture_t* f) {
  int rc = ob_run(f->e, OB_RUN_UNTIL_IDLE, 0);
  assert_true(rc == 0 || rc == OB_RUN_STALLED);
}

static void test_publishes_everything(void** state) {
  (void)state;
  if (g_skip) skip();
  char* q = sq_create_queue(&g_srv, "relay-all", NULL);
  fixture_t* f = rf_terminal();
  rf_set_endpoint(g_srv.port);
  assert_int_equal(enable(f, q, 10, 0), 0);
  rf_enqueue_payments(f, 0, 35);
  assert_int_equal(ob_run(f->e, OB_RUN_UNTIL_IDLE, 0), 0);
  ob_stats_t st;
  assert_int_equal(ob_stats(f->e, &st), 0);
  {
    ob_payout_stats_t ps;
    assert_int_equal(ob_payout_stats(f->e, &ps), 0);
    assert_int_equal(ps.payouts, 35);
  }
  assert_int_equal(st.outbox_unpublished, 0);
  assert_int_equal(st.relay_online, 1);
  assert_true(st.last_publish_at_ms > 0);
  cJSON* events = drain_queue(q);
  assert_int_equal(cJSON_GetArraySize(events), 35);
  assert_all_delivered(f, events, 35);
  cJSON_Delete(events);
  fx_free(f);
  free(q);
}

/* The terminal is offline: handling goes on, the outbox grows; once the
** network is back everything goes out by itself. */
static void test_offline_then_back(void** state) {
  (void)state;
  if (g_skip) skip();
  char* q = sq_create_queue(&g_srv, "relay-offline", NULL);
  fixture_t* f = rf_terminal();
  ob_stats_t st;
  rf_set_endpoint(1);  /* nothing listens on port 1 */
  assert_int_equal(enable(f, q, 10, 0), 0);
  rf_enqueue_payments(f, 100, 40);
  /* Offline with rows left: stalled, not done. */
  assert_int_equal(ob_run(f->e, OB_RUN_UNTIL_IDLE, 0), OB_RUN_STALLED);
  assert_int_equal(ob_stats(f->e, &st), 0);
  {
    ob_payout_stats_t ps;
    assert_int_equal(ob_payout_stats(f->e, &ps), 0);
    assert_int_equal(ps.payouts, 40);
  }
  assert_int_equal(st.outbox_unpublished, 40);
  assert_int_equal(st.outbox_parked, 0);
  assert_int_equal(st.relay_online, 0);
  /* An outage costs the rows nothing: no attempt charged, no backoff. */
  assert_int_equal(fx_count(f, "SELECT count(*) FROM outbox_event WHERE"
                               " attempt_count > 0 OR next_attempt_at >"
                               " created_at"),
                   0);
  /* The network comes back (a new process, as after a reboot). */
  ob_close(f->e);
  f->e = NULL;
  fx_open(f);
  ob_register_payout(f->e);
  rf_set_endpoint(g_srv.port);
  assert_int_equal(enable(f, q, 10, 0), 0);
  /* Rows whose first attempt failed wait out their backoff (50-200 ms
  ** here); until-idle stops while nothing is due, so run until published. */
  for (int i = 0; i < 100; i++) {
    assert_int_equal(ob_run(f->e, OB_RUN_UNTIL_IDLE, 0), 0);
    assert_int_equal(ob_stats(f->e, &st), 0);
    if (st.outbox_unpublished == 0) break;
    usleep(50000);
  }
  assert_int_equal(st.outbox_unpublished, 0);
  assert_int_equal(st.relay_online, 1);
  cJSON* events = drain_queue(q);
  assert_all_delivered(f, events, 40);
  cJSON_Delete(events);
  fx_free(f);
  free(q);
}

/* 503s and throttling are absorbed by the client's retries and the row
** backoff; nothing is lost. */
static void test_server_errors_absorbed(void** state) {
  (void)state;
  if (g_skip) skip();
  char* q = sq_create_queue(&g_srv, "relay-503", NULL);
  fixture_t* f = rf_terminal();
  rf_set_endpoint(g_srv.port);
  assert_int_equal(enable(f, q, 10, 0), 0);
  rf_enqueue_payments(f, 200, 20);
  sq_fault(&g_srv, "{\"count\":4,\"status\":503}");
  /* until-idle would stop while the relay backs off; run until published. */
  for (int i = 0; i < 50; i++) {
    ob_stats_t st;
    run_until_idle_or_stalled(f);
    assert_int_equal(ob_stats(f->e, &st), 0);
    if (st.outbox_unpublished == 0) break;
    usleep(100000);
  }
  sq_clear(&g_srv);
  cJSON* events = drain_queue(q);
  assert_all_delivered(f, events, 20);
  cJSON_Delete(events);
  fx_free(f);
  free(q);
}

/* Faults between the relay and SQS: resets, 5xx, throttling and replies
** lost after SQS applied the batch. Nothing is missing in SQS; duplicates
** appear only where a reply was lost (at most one batch of 10 each). */
static void test_faults_lose_nothing(void** state) {
  (void)state;
  if (g_skip) skip();
  char* q = sq_create_queue(&g_srv, "relay-faults", NULL);
  fixture_t* f = rf_terminal();
  const int events = 150, lost = 3;
  rf_set_endpoint(g_srv.port);
  assert_int_equal(enable(f, q, 10, 0), 0);
  rf_enqueue_payments(f, 300, events);
  sq_fault(&g_srv, "{\"count\":2,\"mode\":\"reset\",\"target\":\"AmazonSQS.SendMessageBatch\"}");
  sq_fault(&g_srv, "{\"count\":3,\"status\":500,\"target\":\"AmazonSQS.SendMessageBatch\"}");
  sq_fault(&g_srv, "{\"count\":3,\"status\":400,\"code\":\"ThrottlingException\","
                   "\"query\":\"ThrottlingException;Sender\",\"target\":\"AmazonSQS.SendMessageBatch\"}");
  sq_fault(&g_srv, "{\"count\":3,\"mode\":\"lost-reply\",\"target\":\"AmazonSQS.SendMessageBatch\"}");
  for (int i = 0; i < 200; i++) {
    ob_stats_t st;
    run_until_idle_or_stalled(f);
    assert_int_equal(ob_stats(f->e, &st), 0);
    if (st.outbox_unpublished == 0) break;
    usleep(50000);
  }
  sq_clear(&g_srv);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM outbox_event WHERE"
                               " published_at IS NULL"),
                   0);
  cJSON* received = drain_queue(q);
  int got = cJSON_GetArraySize(received);
  assert_all_delivered(f, received, events);
  print_message("relay faults: %d events, %d messages in SQS (%d duplicates)\n",
                events, got, got - events);
  assert_true(got >= events);
  assert_true(got - events <= lost * 10);
  assert_true(got - events >= 1);  /* a lost reply did duplicate */
  cJSON_Delete(received);
  fx_free(f);
  free(q);
}

/* A handler whose event SQS refuses (over the queue's 1 KiB message size). */
static int big_event(ob_tx_t* tx, const ob_message_t* m, void* arg) {
  char payload[3000];
  (void)arg;
  int n = snprintf(payload, sizeof payload, "{\"pad\":\"");
  memset(payload + n, 'x', 2000);
  snprintf(payload + n + 2000, sizeof payload - (size_t)n - 2000, "\"}");
  return ob_tx_emit(tx, "Big", m->body, payload, strlen(payload), NULL) < 0
             ? OB_EIO : OB_DONE;
}

static int small_event(ob_tx_t* tx, const ob_message_t* m, void* arg) {
  (void)arg;
  return ob_tx_emit(tx, "Small", m->body, "{\"ok\":1}", 8, NULL) < 0 ? OB_EIO
                                                                     : OB_DONE;
}

static void run_parking(int ordered) {
  char name[32];
  snprintf(name, sizeof name, "relay-park-%d", ordered);
  char* q = sq_create_queue(&g_srv, name, "{\"MaximumMessageSize\":\"1024\"}");
  fixture_t* f = rf_terminal();
  char id[OB_UUID_BUFLEN];
  ob_stats_t st;
  rf_set_endpoint(g_srv.port);
  ob_register(f->e, "MakeBig", "big", big_event, NULL);
  ob_register(f->e, "MakeSmall", "small", small_event, NULL);
  assert_int_equal(enable(f, q, 2, ordered), 0);
  /* Aggregate A: a big event then a small one; aggregate B: a small one. */
  assert_int_equal(fx_enqueue(f, "MakeBig", fx_event(1, id), "agg-A"), 0);
  assert_int_equal(fx_enqueue(f, "MakeSmall", fx_event(2, id), "agg-A"), 0);
  assert_int_equal(fx_enqueue(f, "MakeSmall", fx_event(3, id), "agg-B"), 0);
  for (int i = 0; i < 100; i++) {
    run_until_idle_or_stalled(f);
    assert_int_equal(ob_stats(f->e, &st), 0);
    if (st.outbox_parked == 1 &&
        st.outbox_unpublished == (ordered ? 2 : 1))
      break;
    usleep(50000);
  }
  assert_int_equal(st.outbox_parked, 1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM outbox_event WHERE"
                               " event_type = 'Big' AND attempt_count = 2 AND"
                               " parked_at IS NOT NULL AND last_error LIKE '%'"),
                   1);
  /* B is never blocked; A's small event waits only when ordering is on. */
  assert_int_equal(fx_count(f, "SELECT count(*) FROM outbox_event WHERE"
                               " aggregate_id = 'agg-B' AND published_at IS NOT NULL"),
                   1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM outbox_event WHERE"
                               " aggregate_id = 'agg-A' AND event_type = 'Small'"
                               " AND published_at IS NOT NULL"),
                   ordered ? 0 : 1);
  /* Never deleted. */
  assert_int_equal(fx_count(f, "SELECT count(*) FROM outbox_event"), 3);
  fx_free(f);
  free(q);
}

static void test_parking(void** state) {
  (void)state;
  if (g_skip) skip();
  run_parking(0);
  run_parking(1);
}

/* ---- priorities: the money first when a terminal comes back online ------- */

/* A handler that emits one event of the type in arg, its aggregate the
** message body. */
static int emit_typed(ob_tx_t* tx, const ob_message_t* m, void* arg) {
  return ob_tx_emit(tx, (const char*)arg, m->body, "{\"ok\":1}", 8, NULL) < 0
             ? OB_EIO : OB_DONE;
}

#define RECEIPT "ReceiptIssued"

static void register_emitters(fixture_t* f) {
  assert_int_equal(ob_register(f->e, "EmitReceipt", "receipt", emit_typed,
                               (void*)RECEIPT), 0);
  assert_int_equal(ob_register(f->e, "EmitPayout", "payout-ev", emit_typed,
                               (void*)OB_PAYOUT_EVENT_TYPE), 0);
  assert_int_equal(ob_register(f->e, "EmitCharge", "charge-ev", emit_typed,
                               (void*)OB_CHARGE_EVENT_TYPE), 0);
}

/* One outbox row of kind ("EmitReceipt", ...) for aggregate agg, handled at
** once; with a fake clock, one millisecond after the previous row. */
static void emit_row(fixture_t* f, const char* kind, const char* agg, int n) {
  char id[OB_UUID_BUFLEN];
  assert_int_equal(fx_enqueue(f, kind, fx_event(n, id), agg), 0);
  assert_int_equal(fx_drain(f).handled, 1);
  if (f->opts.clock != NULL) fake_clock_advance(&f->clock, 1);
}

static int is_money(const char* type) {
  return strcmp(type, OB_PAYOUT_EVENT_TYPE) == 0 ||
         strcmp(type, OB_CHARGE_EVENT_TYPE) == 0;
}

static const char* const money[] = {OB_PAYOUT_EVENT_TYPE, OB_CHARGE_EVENT_TYPE,
                                    NULL};

static int take(fixture_t* f, const char* token, int ordered,
                const char* const* prio, int nprio, ob__relay_row_t* rows) {
  int n = ob__relay_take(f->e, token, 60000, 10, ordered, prio, nprio, rows);
  if (n < 0) fail_msg("ob__relay_take: %s", ob_errmsg(f->e));
  return n;
}

static void free_taken(ob__relay_row_t* rows, int n) {
  for (int i = 0; i < n; i++) ob__relay_row_free(&rows[i]);
}

/* Mark rows[0..n) published, as the relay does after SQS accepted them. */
static void settle_ok(fixture_t* f, const char* token, ob__relay_row_t* rows,
                      int n) {
  ob__relay_result_t res[10];
  ob__relay_settled_t out;
  memset(res, 0, sizeof res);
  for (int i = 0; i < n; i++) res[i].ok = 1;
  assert_int_equal(ob__relay_settle(f->e, token, rows, res, (size_t)n, 10, 50,
                                    200, &out), 0);
  assert_int_equal(out.published, n);
}

/* The claim itself, on a real file with a fake clock: 30 receipts, then 12
** money events (newer). The first batch is the 10 oldest money events; the
** second the 2 left and the 8 oldest receipts; without priorities the
** oldest rows go first as before. */
static void test_priority_claim(void** state) {
  (void)state;
  fixture_t* f = fx_new(1);
  ob__relay_row_t rows[10];
  char agg[32];
  int n;
  register_emitters(f);
  for (int i = 0; i < 30; i++) {
    snprintf(agg, sizeof agg, "R%02d", i);
    emit_row(f, "EmitReceipt", agg, i);
  }
  for (int i = 0; i < 12; i++) {
    snprintf(agg, sizeof agg, "M%02d", i);
    emit_row(f, i % 2 ? "EmitCharge" : "EmitPayout", agg, 100 + i);
  }
  /* Without priorities: the oldest, all receipts. Given back. */
  n = take(f, "t0", 0, NULL, 0, rows);
  assert_int_equal(n, 10);
  for (int i = 0; i < n; i++) assert_string_equal(rows[i].event_type, RECEIPT);
  free_taken(rows, n);
  assert_true(ob__relay_give_back(f->e, "t0") >= 0);

  n = take(f, "t1", 0, money, 2, rows);
  assert_int_equal(n, 10);
  for (int i = 0; i < n; i++) {
    snprintf(agg, sizeof agg, "M%02d", i);  /* the oldest first */
    assert_true(is_money(rows[i].event_type));
    assert_string_equal(rows[i].aggregate_id, agg);
  }
  free_taken(rows, n);
  n = take(f, "t2", 0, money, 2, rows);
  assert_int_equal(n, 10);
  {
    int m = 0;
    for (int i = 0; i < n; i++) m += is_money(rows[i].event_type);
    assert_int_equal(m, 2);  /* M10, M11 */
  }
  /* The batch goes out in (created_at, id) order: receipts R00..R07 first. */
  assert_string_equal(rows[0].aggregate_id, "R00");
  assert_string_equal(rows[7].aggregate_id, "R07");
  assert_string_equal(rows[8].aggregate_id, "M10");
  free_taken(rows, n);
  fx_free(f);
}

/* With ordered = 1 a money event never overtakes an earlier unpublished row
** of its aggregate: aggregates A00..A14 each have a receipt and, later, a
** payout; B00..B04 only a payout, the newest rows of all. */
static void test_priority_claim_ordered(void** state) {
  (void)state;
  fixture_t* f = fx_new(1);
  ob__relay_row_t rows[10];
  char agg[32], want[32];
  int n, k = 0;
  register_emitters(f);
  for (int i = 0; i < 15; i++) {
    snprintf(agg, sizeof agg, "A%02d", i);
    emit_row(f, "EmitReceipt", agg, k++);
  }
  for (int i = 0; i < 15; i++) {
    snprintf(agg, sizeof agg, "A%02d", i);
    emit_row(f, "EmitPayout", agg, k++);
  }
  for (int i = 0; i < 5; i++) {
    snprintf(agg, sizeof agg, "B%02d", i);
    emit_row(f, "EmitPayout", agg, k++);
  }
  /* Batch 1: B00..B04 (money, publishable), then the oldest rows that may
  ** go: the receipts of A00..A04. No payout of an A: each waits behind its
  ** receipt. */
  n = take(f, "t1", 1, money, 2, rows);
  assert_int_equal(n, 10);
  for (int i = 0; i < 5; i++) {
    snprintf(want, sizeof want, "A%02d", i);
    assert_string_equal(rows[i].aggregate_id, want);
    assert_string_equal(rows[i].event_type, RECEIPT);
    snprintf(want, sizeof want, "B%02d", i);
    assert_string_equal(rows[5 + i].aggregate_id, want);
    assert_string_equal(rows[5 + i].event_type, OB_PAYOUT_EVENT_TYPE);
  }
  settle_ok(f, "t1", rows, n);
  free_taken(rows, n);
  /* Batch 2: the payouts of A00..A04, free now, before the receipts of
  ** A05..A09. */
  n = take(f, "t2", 1, money, 2, rows);
  assert_int_equal(n, 10);
  for (int i = 0; i < 5; i++) {
    snprintf(want, sizeof want, "A%02d", 5 + i);
    assert_string_equal(rows[i].aggregate_id, want);
    assert_string_equal(rows[i].event_type, RECEIPT);
    snprintf(want, sizeof want, "A%02d", i);
    assert_string_equal(rows[5 + i].aggregate_id, want);
    assert_string_equal(rows[5 + i].event_type, OB_PAYOUT_EVENT_TYPE);
  }
  settle_ok(f, "t2", rows, n);
  free_taken(rows, n);
  /* Never two rows of one aggregate in hand, never a later one published
  ** before an earlier one. */
  for (;;) {
    n = take(f, "t3", 1, money, 2, rows);
    if (n == 0) break;
    for (int i = 0; i < n; i++)
      for (int j = i + 1; j < n; j++)
        assert_string_not_equal(rows[i].aggregate_id, rows[j].aggregate_id);
    settle_ok(f, "t3", rows, n);
    free_taken(rows, n);
  }
  assert_int_equal(fx_count(f, "SELECT count(*) FROM outbox_event WHERE"
                               " published_at IS NULL"), 0);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM outbox_event a JOIN"
                               " outbox_event b ON a.aggregate_id ="
                               " b.aggregate_id AND (a.created_at <"
                               " b.created_at OR (a.created_at = b.created_at"
                               " AND a.id < b.id)) WHERE b.published_at <"
                               " a.published_at"), 0);
  fx_free(f);
}

/* The real relay with its defaults, to fauxqs: a backlog of 25 receipts and
** then 20 money events. The money goes out first; with ordered = 1 no row
** overtakes an earlier row of its aggregate (each money event here has a
** receipt before it in the same aggregate for half of them). */
static void run_priority_relay(int ordered) {
  char name[32], agg[32];
  snprintf(name, sizeof name, "relay-priority-%d", ordered);
  char* q = sq_create_queue(&g_srv, name, NULL);
  fixture_t* f = rf_terminal();
  int k = 0;
  rf_set_endpoint(g_srv.port);
  register_emitters(f);
  /* The defaults are what the modules marked: the payout module is
  ** registered by rf_terminal, the ChargeOrder one here. */
  assert_int_equal(ob_register_charge_order(f->e), 0);
  for (int i = 0; i < 25; i++) {
    snprintf(agg, sizeof agg, "agg-%02d", i);
    emit_row(f, "EmitReceipt", agg, k++);
  }
  usleep(2000);  /* the money events are newer */
  for (int i = 0; i < 20; i++) {
    /* agg-00..agg-09 have a receipt before; agg-25..agg-34 do not. */
    snprintf(agg, sizeof agg, "agg-%02d", i < 10 ? i : 15 + i);
    emit_row(f, i % 2 ? "EmitCharge" : "EmitPayout", agg, k++);
  }
  assert_int_equal(enable(f, q, 10, ordered), 0);
  assert_int_equal(ob_run(f->e, OB_RUN_UNTIL_IDLE, 0), 0);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM outbox_event WHERE"
                               " published_at IS NULL"), 0);
  /* What was published in the first batch (one settle, one published_at):
  ** no receipt. */
  assert_int_equal(fx_count(f, "SELECT count(*) FROM outbox_event WHERE"
                               " published_at = (SELECT min(published_at)"
                               " FROM outbox_event) AND event_type ="
                               " 'ReceiptIssued'"), 0);
  if (!ordered) {
    /* Every money event went out no later than the first receipt. */
    assert_int_equal(fx_count(f, "SELECT count(*) FROM outbox_event WHERE"
                                 " event_type <> 'ReceiptIssued' AND"
                                 " published_at > (SELECT min(published_at)"
                                 " FROM outbox_event WHERE event_type ="
                                 " 'ReceiptIssued')"), 0);
  } else {
    /* The 10 money events with no receipt before them went first... */
    assert_int_equal(fx_count(f, "SELECT count(*) FROM outbox_event WHERE"
                                 " event_type <> 'ReceiptIssued' AND"
                                 " aggregate_id >= 'agg-25' AND published_at >"
                                 " (SELECT min(published_at) FROM"
                                 " outbox_event WHERE event_type ="
                                 " 'ReceiptIssued')"), 0);
    /* ... and no row overtook an earlier one of its aggregate. */
    assert_int_equal(fx_count(f, "SELECT count(*) FROM outbox_event a JOIN"
                                 " outbox_event b ON a.aggregate_id ="
                                 " b.aggregate_id AND (a.created_at <"
                                 " b.created_at OR (a.created_at ="
                                 " b.created_at AND a.id < b.id)) WHERE"
                                 " b.published_at < a.published_at"), 0);
  }
  fx_free(f);
  free(q);
}

static void test_priority_relay(void** state) {
  (void)state;
  if (g_skip) skip();
  run_priority_relay(0);
  run_priority_relay(1);
}

/* priority_types: at most 8 distinct non-empty names; {NULL} is allowed (no
** priorities). */
static void test_priority_options(void** state) {
  (void)state;
  if (g_skip) skip();
  static const char* const nine[] = {"a", "b", "c", "d", "e", "f", "g", "h",
                                     "i", NULL};
  static const char* const eight[] = {"a", "b", "c", "d", "e", "f", "g", "h",
                                      NULL};
  static const char* const empty_name[] = {"a", "", NULL};
  static const char* const twice[] = {"a", "b", "a", NULL};
  static const char* const none[] = {NULL};
  const char* const* bad[] = {nine, empty_name, twice};
  const char* const* good[] = {eight, none};
  ob_relay_options_t o;
  char err[256];
  rf_set_endpoint(g_srv.port);
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    fixture_t* f = rf_terminal();
    ob_relay_options_init(&o);
    o.queue_url = "https://sqs.eu-west-1.amazonaws.com/123456789012/q";
    o.priority_types = bad[i];
    assert_int_equal(ob_relay_enable(f->e, &o, err, sizeof err), OB_EINVAL);
    assert_non_null(strstr(err, "priority"));
    fx_free(f);
  }
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    fixture_t* f = rf_terminal();
    ob_relay_options_init(&o);
    o.queue_url = "https://sqs.eu-west-1.amazonaws.com/123456789012/q";
    o.priority_types = good[i];
    assert_int_equal(ob_relay_enable(f->e, &o, err, sizeof err), 0);
    fx_free(f);
  }
}

/* The operator's view: run with --outbox-queue-url, outbox show/drain,
** stats, through the real binary and its environment variables. */
static void test_cli_sync(void** state) {
  (void)state;
  if (g_skip) skip();
  const char* bin = getenv("OB_BINARY_DIR");
  assert_non_null(bin);
  char* q = sq_create_queue(&g_srv, "relay-cli", NULL);
  char* dir = ts_mkdtemp("relay-cli");
  char ob[1024], db[1024], out[1024];
  snprintf(ob, sizeof ob, "%s/oncebox", bin);
  snprintf(db, sizeof db, "%s/t.db", dir);
  snprintf(out, sizeof out, "%s/out", dir);
  for (int i = 0; i < 12; i++)
    assert_int_equal(ts_sh("$OB_EMULATOR '%s' --db '%s' enqueue --type PaymentCaptured --id "
                        "0190b6d8-3ae7-7ca2-a653-%012d --body "
                        "'{\"paymentId\":\"5c4080b1-b5d2-4e91-8de8-%012d\","
                        "\"merchantId\":\"3727331a-b533-4c6e-a0f8-48532237307b\","
                        "\"amountInMinorUnits\":100,\"currency\":\"EUR\"}' >/dev/null",
                        ob, db, i, i),
                     0);
  /* Offline: handled, the outbox holds everything, drain times out. */
  rf_set_endpoint(1);
  /* Exit 5: stopped with the outbox left for an SQS it cannot reach. */
  assert_int_equal(ts_sh("$OB_EMULATOR '%s' --db '%s' --log-level error run --until-idle "
                      "--outbox-queue-url '%s' --source urn:test:cli 2>/dev/null",
                      ob, db, q), 5);
  assert_int_equal(ts_sh("$OB_EMULATOR '%s' --db '%s' outbox show --unpublished --json > '%s'",
                      ob, db, out), 0);
  assert_int_equal(ts_sh("grep -c '\"eventType\":' '%s' | grep -qx 12", out), 0);
  assert_int_equal(ts_sh("ONCEBOX_OUTBOX_QUEUE_URL='%s' '%s' --db '%s' --log-level"
                      " error outbox drain --until-empty --timeout 1 2>'%s'",
                      q, ob, db, out), 1);
  assert_int_equal(ts_sh("grep -q 'timed out with 12 row(s) unpublished' '%s'", out), 0);
  assert_int_equal(ts_sh("$OB_EMULATOR '%s' --db '%s' stats --json > '%s'", ob, db, out), 0);
  assert_int_equal(ts_sh("grep -q '\"online\":false' '%s'", out), 0);
  /* Online: drain publishes everything and exits 0. */
  rf_set_endpoint(g_srv.port);
  /* The source is configuration of the terminal, not of the row: the same
  ** variable is set for every oncebox process of the terminal. */
  assert_int_equal(ts_sh("ONCEBOX_OUTBOX_QUEUE_URL='%s' ONCEBOX_SOURCE=urn:test:cli"
                      " '%s' --db '%s' --log-level error outbox drain"
                      " --until-empty --timeout 30",
                      q, ob, db), 0);
  assert_int_equal(ts_sh("$OB_EMULATOR '%s' --db '%s' stats --json > '%s'", ob, db, out), 0);
  assert_int_equal(ts_sh("grep -q '\"online\":true' '%s'", out), 0);
  assert_int_equal(ts_sh("grep -q '\"unpublished\":0' '%s'", out), 0);
  assert_int_equal(ts_sh("$OB_EMULATOR '%s' --db '%s' outbox show --json > '%s'", ob, db, out), 0);
  assert_int_equal(ts_sh("grep -c '\"publishedAt\":\"' '%s' | grep -qx 12", out), 0);
  cJSON* events = drain_queue(q);
  assert_int_equal(cJSON_GetArraySize(events), 12);
  cJSON* ev;
  cJSON_ArrayForEach(ev, events)
    assert_string_equal(cJSON_GetObjectItem(ev, "source")->valuestring, "urn:test:cli");
  cJSON_Delete(events);
  /* Rows whose retry is due tomorrow (decision 0020): drain and run
  ** --until-idle end at once, exit 0, and say what is left and when;
  ** SQS is reachable, so nothing is stalled. */
  {
    sqlite3* h = NULL;
    assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
    assert_int_equal(sqlite3_exec(h, "UPDATE outbox_event SET published_at ="
                                  " NULL, next_attempt_at = CAST(unixepoch('now')"
                                  " AS INTEGER) * 1000 + 86400000 WHERE id IN"
                                  " (SELECT id FROM outbox_event LIMIT 2)",
                                  NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(h);
  }
  assert_int_equal(ts_sh("ONCEBOX_OUTBOX_QUEUE_URL='%s' timeout 60 '%s' --db '%s'"
                      " outbox drain 2>'%s'", q, ob, db, out), 0);
  assert_int_equal(ts_sh("grep -q 'scheduled: 2 outbox event(s) left for a later"
                      " drain; the earliest due at 20[0-9-]*T' '%s'", out), 0);
  assert_int_equal(ts_sh("timeout 60 '%s' --db '%s' run --until-idle"
                      " --outbox-queue-url '%s' 2>'%s'", ob, db, q, out), 0);
  assert_int_equal(ts_sh("grep -q 'scheduled: 0 message(s), 2 outbox event(s)'"
                      " '%s'", out), 0);
  events = drain_queue(q);
  assert_int_equal(cJSON_GetArraySize(events), 0);
  cJSON_Delete(events);
  ts_rmdir(dir);
  free(q);
}

/* The field's case through real processes: a relay holding all 30 rows
** under a 3 s lease is SIGKILLed; `oncebox outbox drain` restarts with the
** clock set back a day (faketime). It must publish every row within
** the dead relay's lease plus start-up: the lease is re-based at open, not
** waited out (a day, before), and SigV4's skew correction gets the day-old
** signatures accepted after one refusal. Skips without faketime, and where
** libfaketime cannot preload (a sanitizer build). */
#define DEAD_LEASE_MS 3000
static void test_faketime_dead_lease_restart(void** state) {
  (void)state;
  if (g_skip) skip();
  const char* bin = getenv("OB_BINARY_DIR");
  assert_non_null(bin);
  char* lib;
  TS_FAKETIME_OR_SKIP(lib);
  char* q = sq_create_queue(&g_srv, "relay-clock-back", NULL);
  fixture_t* f = rf_terminal();
  char log[1024];
  struct timespec t0, t1;
  int st;
  rf_enqueue_payments(f, 0, 30);
  fx_drain(f);
  ob_close(f->e);  /* no connection across fork() */
  f->e = NULL;
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    ob_options_t o;
    ob_engine_t* e = NULL;
    ob__relay_row_t rows[10];
    ob_options_init(&o);
    o.db_path = f->db_path;
    if (ob_open(&e, &o, NULL, 0) != 0) _exit(2);
    for (int i = 0; i < 3; i++)
      if (ob__relay_take(e, "0190b6d8-0000-7000-8000-00000000dead",
                         DEAD_LEASE_MS, 10, 0, NULL, 0, rows) != 10)
        _exit(3);
    raise(SIGKILL);  /* the relay dies with its lease */
    _exit(4);
  }
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM outbox_event WHERE"
                               " claim_until IS NOT NULL"), 30);
  snprintf(log, sizeof log, "%s/run.log", f->dir);
  rf_set_endpoint(g_srv.port);
  clock_gettime(CLOCK_MONOTONIC, &t0);
  /* drain --until-empty, not run --until-idle: an until-idle run stops
  ** while the rows left are publishable only later (a lease still running
  ** counts as that), so only the drain proves the lease ends. */
  int rc = ts_sh("ONCEBOX_OUTBOX_QUEUE_URL='%s' ONCEBOX_SOURCE="
              "urn:oncebox:test-terminal LD_PRELOAD='%s' FAKETIME='-1d' "
              "$OB_EMULATOR '%s/oncebox' --db "
              "'%s' --log-level warn outbox drain --until-empty --timeout 30 "
              "2>'%s'", q, lib, bin, f->db_path, log);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  int64_t ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
  ts_sh("cat '%s' >&2", log);
  print_message("published after %lld ms (the dead lease: %d ms)\n",
                (long long)ms, DEAD_LEASE_MS);
  assert_int_equal(rc, 0);
  assert_true(ms <= DEAD_LEASE_MS + 7000);
  /* A day less the moments between the kill and the restart. (On
  ** PostgreSQL the rows' due times are re-based, their leases not: those
  ** are on the server's clock, which the host's jump did not move.) */
  /* (The engine clock ran on from the value recorded at the kill: no
  ** deadline moved, docs/decisions/0019.) */
  assert_int_equal(ts_sh("grep -Eq 'clock went back 86(39[0-9]|400) s \\(behind "
                      "the engine clock' '%s'", log), 0);
  cJSON* events = drain_queue(q);
  assert_int_equal(cJSON_GetArraySize(events), 30);
  assert_all_delivered(f, events, 30);
  cJSON_Delete(events);
  fx_free(f);
  free(q);
  free(lib);
}

/* Issue 33's outbox reproduction: 30 payments handled while SQS is away
** (their events never attempted: next_attempt_at = created_at, no
** clock_ref), the clock set back a day, SQS back: `outbox drain` publishes
** all 30 at once. Before the engine clock it published 0 in 30 s: the
** re-base skipped rows that had never waited. */
static void test_faketime_never_attempted_rows(void** state) {
  (void)state;
  if (g_skip) skip();
  const char* bin = getenv("OB_BINARY_DIR");
  assert_non_null(bin);
  char* lib;
  TS_FAKETIME_OR_SKIP(lib);
  char* q = sq_create_queue(&g_srv, "relay-never-attempted", NULL);
  fixture_t* f = rf_terminal();
  char log[1024];
  rf_enqueue_payments(f, 0, 30);
  fx_drain(f);
  ob_close(f->e);
  f->e = NULL;
  assert_int_equal(fx_count(f, "SELECT count(*) FROM outbox_event WHERE"
                               " attempt_count = 0 AND published_at IS NULL"),
                   30);
  snprintf(log, sizeof log, "%s/drain.log", f->dir);
  rf_set_endpoint(g_srv.port);
  int rc = ts_sh("ONCEBOX_OUTBOX_QUEUE_URL='%s' ONCEBOX_SOURCE="
              "urn:oncebox:test-terminal LD_PRELOAD='%s' FAKETIME='-1d' "
              "$OB_EMULATOR '%s/oncebox' --db "
              "'%s' --log-level warn outbox drain --until-empty --timeout 30 "
              "2>'%s'", q, lib, bin, f->db_path, log);
  ts_sh("cat '%s' >&2", log);
  assert_int_equal(rc, 0);
  cJSON* events = drain_queue(q);
  assert_int_equal(cJSON_GetArraySize(events), 30);
  assert_all_delivered(f, events, 30);
  cJSON_Delete(events);
  fx_free(f);
  free(q);
  free(lib);
}

/* ---- plain HTTP (docs/security.md, "Plain HTTP") ---------------------------
** Over http:// a forged 200 would make the relay mark rows published that
** SQS never got: an http:// endpoint from AWS_ENDPOINT_URL_SQS,
** AWS_ENDPOINT_URL or endpoint_url in the config file is refused at enable
** (OB_EINVAL, naming where it was set) without allow_http or
** ONCEBOX_SQS_ALLOW_HTTP=1, for the relay and the consumer alike; with it,
** plain-HTTP fauxqs (behind the TLS terminator) gets everything, and one
** warning is logged. */
typedef struct ph_log_s {
  int plain_warnings;   /* warn lines saying plain HTTP is allowed */
  char last[1024];
} ph_log_t;

static void ph_log(void* ctx, ob_log_level_t level, const char* msg) {
  ph_log_t* l = ctx;
  if (level == OB_LOG_WARN && strstr(msg, "plain HTTP allowed") != NULL) {
    l->plain_warnings++;
    snprintf(l->last, sizeof l->last, "%s", msg);
  }
}

static fixture_t* ph_terminal(ph_log_t* log) {
  fixture_t* f = fx_new(8);
  ob_close(f->e);
  f->e = NULL;
  f->opts.clock = NULL;
  f->opts.poll_interval_ms = 20;
  f->opts.log = ph_log;
  f->opts.log_ctx = log;
  f->opts.log_level = OB_LOG_WARN;
  fx_open(f);
  assert_int_equal(ob_register_payout(f->e), 0);
  return f;
}

static void ph_plain_endpoint(const char* var) {
  unsetenv("AWS_ENDPOINT_URL_SQS");
  unsetenv("AWS_ENDPOINT_URL");
  unsetenv("AWS_CONFIG_FILE");
  unsetenv("ONCEBOX_SQS_ALLOW_HTTP");
  if (var != NULL) setenv(var, g_srv.plain_endpoint, 1);
}

static void ph_expect_refused(const char* q, const char* source) {
  ph_log_t log;
  ob_relay_options_t o;
  ob_consumer_options_t co;
  char err[1024], want[4600];
  memset(&log, 0, sizeof log);
  fixture_t* f = ph_terminal(&log);
  snprintf(want, sizeof want, "%s is http://127.0.0.1:%d: plain HTTP sends the "
           "signed requests and the session token in clear; use https://, or "
           "set ONCEBOX_SQS_ALLOW_HTTP=1", source, g_srv.fauxqs_port);
  ob_relay_options_init(&o);
  o.queue_url = q;
  assert_int_equal(ob_relay_enable(f->e, &o, err, sizeof err), OB_EINVAL);
  if (strstr(err, want) == NULL) fail_msg("relay: '%s' lacks '%s'", err, want);
  assert_null(strstr(err, SQ_SECRET));
  ob_consumer_options_init(&co);
  co.queue_url = q;
  assert_int_equal(ob_consumer_enable(f->e, &co, err, sizeof err), OB_EINVAL);
  if (strstr(err, want) == NULL) fail_msg("consumer: '%s' lacks '%s'", err, want);
  assert_int_equal(log.plain_warnings, 0);
  /* Nothing enabled: the rows stay in the outbox. */
  rf_enqueue_payments(f, 0, 3);
  assert_int_equal(ob_run(f->e, OB_RUN_UNTIL_IDLE, 0), 0);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM outbox_event WHERE"
                               " published_at IS NULL"), 3);
  fx_free(f);
}

static void test_plain_http_refused(void** state) {
  (void)state;
  if (g_skip) skip();
  char* q = sq_create_queue(&g_srv, "relay-plain-refused", NULL);
  char* dir = ts_mkdtemp("relay-plain");
  char* conf = ts_path(dir, "config");
  char src[4300];
  FILE* fp;
  ph_plain_endpoint("AWS_ENDPOINT_URL_SQS");
  ph_expect_refused(q, "AWS_ENDPOINT_URL_SQS");
  ph_plain_endpoint("AWS_ENDPOINT_URL");
  ph_expect_refused(q, "AWS_ENDPOINT_URL");
  fp = fopen(conf, "w");
  assert_non_null(fp);
  fprintf(fp, "[default]\nendpoint_url = %s\n", g_srv.plain_endpoint);
  fclose(fp);
  ph_plain_endpoint(NULL);
  setenv("AWS_CONFIG_FILE", conf, 1);
  snprintf(src, sizeof src, "%s:2: endpoint_url", conf);
  ph_expect_refused(q, src);
  ph_plain_endpoint(NULL);
  /* Nothing reached fauxqs. */
  cJSON* events = drain_queue(q);
  assert_int_equal(cJSON_GetArraySize(events), 0);
  cJSON_Delete(events);
  free(conf);
  ts_rmdir(dir);
  free(q);
}

static void test_plain_http_opt_in(void** state) {
  (void)state;
  if (g_skip) skip();
  char* q = sq_create_queue(&g_srv, "relay-plain", NULL);
  int tls0 = sq_count(&g_srv, "REQ AmazonSQS.SendMessageBatch");
  ph_log_t log;
  ob_relay_options_t o;
  ob_consumer_options_t co;
  char err[1024];
  /* allow_http: published over plain HTTP, one warning however many
  ** attaches. */
  memset(&log, 0, sizeof log);
  fixture_t* f = ph_terminal(&log);
  ph_plain_endpoint("AWS_ENDPOINT_URL_SQS");
  ob_relay_options_init(&o);
  o.queue_url = q;
  o.source = "urn:oncebox:test-terminal";
  o.allow_http = 1;
  if (ob_relay_enable(f->e, &o, err, sizeof err) != 0) fail_msg("enable: %s", err);
  assert_int_equal(log.plain_warnings, 1);
  assert_non_null(strstr(log.last, "relay: AWS_ENDPOINT_URL_SQS is http://127.0.0.1:"));
  rf_enqueue_payments(f, 0, 15);
  assert_int_equal(ob_run(f->e, OB_RUN_UNTIL_IDLE, 0), 0);
  rf_enqueue_payments(f, 15, 5);
  assert_int_equal(ob_run(f->e, OB_RUN_UNTIL_IDLE, 0), 0);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM outbox_event WHERE"
                               " published_at IS NULL"), 0);
  assert_int_equal(log.plain_warnings, 1);
  /* The consumer's option, on the same engine. */
  ob_consumer_options_init(&co);
  co.queue_url = q;
  co.allow_http = 1;
  assert_int_equal(ob_consumer_enable(f->e, &co, err, sizeof err), 0);
  assert_int_equal(log.plain_warnings, 2);
  assert_non_null(strstr(log.last, "sqs consumer: AWS_ENDPOINT_URL_SQS is"));
  /* Through fauxqs directly, not the TLS terminator. */
  assert_int_equal(sq_count(&g_srv, "REQ AmazonSQS.SendMessageBatch"), tls0);
  cJSON* events = drain_queue(q);
  assert_int_equal(cJSON_GetArraySize(events), 20);
  assert_all_delivered(f, events, 20);
  cJSON_Delete(events);
  fx_free(f);
  /* ONCEBOX_SQS_ALLOW_HTTP=1 instead of the option, for endpoint_url. */
  memset(&log, 0, sizeof log);
  f = ph_terminal(&log);
  {
    char* dir = ts_mkdtemp("relay-plain");
    char* conf = ts_path(dir, "config");
    FILE* fp = fopen(conf, "w");
    assert_non_null(fp);
    fprintf(fp, "[default]\nendpoint_url = %s\n", g_srv.plain_endpoint);
    fclose(fp);
    ph_plain_endpoint(NULL);
    setenv("AWS_CONFIG_FILE", conf, 1);
    setenv("ONCEBOX_SQS_ALLOW_HTTP", "1", 1);
    o.allow_http = 0;
    assert_int_equal(ob_relay_enable(f->e, &o, err, sizeof err), 0);
    assert_int_equal(log.plain_warnings, 1);
    assert_non_null(strstr(log.last, ":2: endpoint_url is http://127.0.0.1:"));
    assert_non_null(strstr(log.last, "ONCEBOX_SQS_ALLOW_HTTP=1"));
    rf_enqueue_payments(f, 100, 4);
    assert_int_equal(ob_run(f->e, OB_RUN_UNTIL_IDLE, 0), 0);
    assert_int_equal(fx_count(f, "SELECT count(*) FROM outbox_event WHERE"
                                 " published_at IS NULL"), 0);
    ph_plain_endpoint(NULL);
    free(conf);
    ts_rmdir(dir);
  }
  events = drain_queue(q);
  assert_int_equal(cJSON_GetArraySize(events), 4);
  cJSON_Delete(events);
  fx_free(f);
  /* https: the option changes nothing and says nothing. */
  memset(&log, 0, sizeof log);
  f = ph_terminal(&log);
  rf_set_endpoint(g_srv.port);
  o.allow_http = 1;
  assert_int_equal(ob_relay_enable(f->e, &o, err, sizeof err), 0);
  rf_enqueue_payments(f, 200, 2);
  assert_int_equal(ob_run(f->e, OB_RUN_UNTIL_IDLE, 0), 0);
  assert_int_equal(log.plain_warnings, 0);
  events = drain_queue(q);
  assert_int_equal(cJSON_GetArraySize(events), 2);
  cJSON_Delete(events);
  fx_free(f);
  free(q);
}

/* `oncebox outbox drain` and `run`: exit 2 and the reason without the
** opt-in; --sqs-allow-http publishes everything over plain HTTP. */
static void test_cli_plain_http(void** state) {
  (void)state;
  if (g_skip) skip();
  const char* bin = getenv("OB_BINARY_DIR");
  assert_non_null(bin);
  char* q = sq_create_queue(&g_srv, "relay-cli-plain", NULL);
  char* dir = ts_mkdtemp("relay-cli-plain");
  char ob[1024], db[1024], out[1024];
  snprintf(ob, sizeof ob, "%s/oncebox", bin);
  snprintf(db, sizeof db, "%s/t.db", dir);
  snprintf(out, sizeof out, "%s/out", dir);
  for (int i = 0; i < 6; i++)
    assert_int_equal(ts_sh("$OB_EMULATOR '%s' --db '%s' enqueue --type PaymentCaptured --id "
                        "0190b6d8-3ae7-7ca2-a653-%012d --body "
                        "'{\"paymentId\":\"5c4080b1-b5d2-4e91-8de8-%012d\","
                        "\"merchantId\":\"3727331a-b533-4c6e-a0f8-48532237307b\","
                        "\"amountInMinorUnits\":100,\"currency\":\"EUR\"}' >/dev/null",
                        ob, db, i, i),
                     0);
  ph_plain_endpoint("AWS_ENDPOINT_URL_SQS");
  assert_int_equal(ts_sh("$OB_EMULATOR '%s' --db '%s' run --until-idle --outbox-queue-url '%s' "
                      "--source urn:oncebox:test-terminal 2>'%s'", ob, db, q,
                      out), 2);
  assert_int_equal(ts_sh("grep -q 'cannot publish the outbox: AWS_ENDPOINT_URL_SQS "
                      "is http://127.0.0.1:%d: plain HTTP sends the signed "
                      "requests' '%s'", g_srv.fauxqs_port, out), 0);
  assert_int_equal(ts_sh("ONCEBOX_OUTBOX_QUEUE_URL='%s' '%s' --db '%s' outbox drain "
                      "--until-empty --timeout 30 2>'%s'", q, ob, db, out), 2);
  assert_int_equal(ts_sh("grep -q 'set ONCEBOX_SQS_ALLOW_HTTP=1' '%s'", out), 0);
  /* The refused run stopped before handling anything; this one handles
  ** the six payments and publishes their events. */
  assert_int_equal(ts_sh("ONCEBOX_OUTBOX_QUEUE_URL='%s' ONCEBOX_SOURCE="
                      "urn:oncebox:test-terminal '%s' --db '%s' run --until-idle"
                      " --sqs-allow-http 2>'%s'", q, ob, db, out), 0);
  assert_int_equal(ts_sh("grep -c 'warn relay: AWS_ENDPOINT_URL_SQS is "
                      "http://127.0.0.1:%d: plain HTTP allowed' '%s' | grep -qx 1",
                      g_srv.fauxqs_port, out), 0);
  assert_int_equal(ts_sh("ONCEBOX_OUTBOX_QUEUE_URL='%s' ONCEBOX_SOURCE="
                      "urn:oncebox:test-terminal '%s' --db '%s' outbox drain "
                      "--until-empty --timeout 30 --sqs-allow-http 2>'%s'",
                      q, ob, db, out), 0);
  assert_int_equal(ts_sh("grep -q 'plain HTTP allowed' '%s'", out), 0);
  ph_plain_endpoint(NULL);
  cJSON* events = drain_queue(q);
  assert_int_equal(cJSON_GetArraySize(events), 6);
  cJSON_Delete(events);
  ts_rmdir(dir);
  free(q);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_publishes_everything),
      cmocka_unit_test(test_offline_then_back),
      cmocka_unit_test(test_server_errors_absorbed),
      cmocka_unit_test(test_faults_lose_nothing),
      cmocka_unit_test(test_parking),
      cmocka_unit_test(test_cli_sync),
      cmocka_unit_test(test_priority_claim),
      cmocka_unit_test(test_priority_claim_ordered),
      cmocka_unit_test(test_priority_relay),
      cmocka_unit_test(test_priority_options),
      cmocka_unit_test(test_faketime_dead_lease_restart),
      cmocka_unit_test(test_faketime_never_attempted_rows),
      cmocka_unit_test(test_plain_http_refused),
      cmocka_unit_test(test_plain_http_opt_in),
      cmocka_unit_test(test_cli_plain_http),
  };
  /* The mutant build runs one case (OB_TEST_FILTER, a cmocka glob). */
  const char* only = getenv("OB_TEST_FILTER");
  if (only != NULL && *only) cmocka_set_test_filter(only);
  return cmocka_run_group_tests_name("relay", tests, group_setup, group_teardown);
}
