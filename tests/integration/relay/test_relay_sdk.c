/* SPDX-License-Identifier: Apache-2.0 */
/*
** Offline-first sync seen by a real AWS SDK consumer.
**
** A terminal (an engine with the payout module and the outbox relay) handles
** 60 payments while SQS cannot be reached: every payment is handled, the
** outbox grows, nothing is lost. Then the network comes back and everything
** is published with no intervention, and the AWS SDK for JavaScript
** (@aws-sdk/client-sqs, tests/interop/sdk_receive.mjs) receives every event
** id at least once, as a CloudEvent 1.0 whose data is the outbox row's
** payload, with the eventType / aggregateId / causationId message
** attributes. The expectations come from the database, row by row, read
** with sqlite3 on its own connection.
**
** SQS is fauxqs behind the SigV4-verifying TLS terminator
** (tests/integration/sqs/sqs_server.mjs); the engine reads AWS_* like a
** terminal, endpoint https://localhost:PORT, AWS_CA_BUNDLE = the test CA.
**
** Two ways the network comes back:
**   - the same running engine (ob_attach on our loop): the endpoint's port
**     starts answering (a TCP forwarder to the TLS terminator appears there)
**     and the relay's own probing finds it; no API call;
**   - a new process on the same file: the oncebox binary, `run --until-idle`
**     with the outbox configured through ONCEBOX_* variables.
*/
#include <setjmp.h>
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

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "tests/integration/relay/relay_fixture.h"
#include "tests/integration/sqs/sqs_test_util.h"
#include "oncebox_payout.h"

#define N_PAYMENTS 60
#define SOURCE "urn:oncebox:test-terminal"

static sq_server_t g_srv;
static const char* g_skip;

/* sq_skip_reason plus the SDK packages this test needs. */
static const char* skip_reason(void) {
  static char why[4600];
  static const char* const need[] = {"@aws-sdk/client-sqs/package.json",
                                     "@smithy/node-http-handler/package.json"};
  const char* r = sq_skip_reason();
  const char* src = getenv("OB_SOURCE_DIR");
  struct stat st;
  char p[4300];
  if (r != NULL) return r;
  for (size_t i = 0; i < sizeof need / sizeof need[0]; i++) {
    snprintf(p, sizeof p, "%s/tests/interop/node_modules/%s", src, need[i]);
    if (stat(p, &st) != 0) {
      snprintf(why, sizeof why,
               "skipped: %s missing (the AWS SDK for JavaScript; run: cd "
               "%s/tests/interop && npm ci)", p, src);
      return why;
    }
  }
  return NULL;
}

static int group_setup(void** state) {
  (void)state;
  g_skip = skip_reason();
  return rf_group_start(&g_srv, "relay-sdk", g_skip);
}

static int group_teardown(void** state) {
  (void)state;
  rf_group_stop(&g_srv, g_skip);
  return 0;
}

static void enable_relay(fixture_t* f, const char* queue_url) {
  if (rf_enable(f, queue_url, SOURCE, 10, 0) != 0) fail_msg("ob_relay_enable");
}

static long long sends_seen(void) {
  return sq_count(&g_srv, "REQ AmazonSQS.SendMessageBatch ");
}

/* ---- the engine on our own loop ------------------------------------------ */

static void tick_cb(uv_timer_t* t) { uv_stop(t->loop); }

typedef int (*stats_pred_t)(const ob_stats_t* st, const ob_payout_stats_t* ps,
                            long long arg);

static int handled_offline(const ob_stats_t* st, const ob_payout_stats_t* ps,
                           long long n) {
  return ps->payouts == n && st->queue_ready + st->queue_delayed +
                                     st->queue_in_hand == 0 &&
         st->relay_online == 0;
}

static int all_published(const ob_stats_t* st, const ob_payout_stats_t* ps,
                         long long n) {
  (void)ps;
  (void)n;
  return st->outbox_unpublished == 0;
}

/* Run the loop in 20 ms slices until pred holds; fails after a generous
** bound (a liveness guard with a clear message, not a timing check). */
static void run_until(uv_loop_t* loop, ob_engine_t* e, stats_pred_t pred,
                      long long arg, const char* what, ob_stats_t* st) {
  uv_timer_t tick;
  ob_payout_stats_t ps;
  int ok = 0;
  uv_timer_init(loop, &tick);
  for (int i = 0; i < 60000 / 20; i++) {
    uv_timer_start(&tick, tick_cb, 20, 0);
    uv_run(loop, UV_RUN_DEFAULT);
    assert_int_equal(ob_stats(e, st), 0);
    assert_int_equal(ob_payout_stats(e, &ps), 0);
    if (pred(st, &ps, arg)) {
      ok = 1;
      break;
    }
  }
  uv_close((uv_handle_t*)&tick, NULL);
  uv_run(loop, UV_RUN_NOWAIT);
  if (!ok)
    fail_msg("never reached: %s (payouts %lld, unpublished %lld, online %d)",
             what, (long long)ps.payouts, (long long)st->outbox_unpublished,
             st->relay_online);
}

static void detached(ob_engine_t* e, void* arg) {
  (void)e;
  *(int*)arg = 1;
}

/* ---- what the SDK received ------------------------------------------------ */

/* Receive (and delete) everything in queue_url with the AWS SDK for
** JavaScript; returns a cJSON array of {"messageId","body","attributes"}. */
static cJSON* sdk_receive(const char* queue_url) {
  const char* src = getenv("OB_SOURCE_DIR");
  char* dir = ts_mkdtemp("relay-sdk-recv");
  char* err = ts_path(dir, "stderr");
  char cmd[8192];
  char* line = NULL;
  size_t cap = 0;
  ssize_t len;
  cJSON* all = cJSON_CreateArray();
  FILE* p;
  int st;

  snprintf(cmd, sizeof cmd,
           "node '%s/tests/interop/sdk_receive.mjs' 'https://localhost:%d' "
           "'%s' '%s' '%s' 2>'%s'",
           src, g_srv.port, SQ_REGION, queue_url, g_srv.ca_file, err);
  p = popen(cmd, "r");
  assert_non_null(p);
  while ((len = getline(&line, &cap, p)) > 0) {
    cJSON* m = cJSON_ParseWithLength(line, (size_t)len);
    if (m == NULL) fail_msg("sdk_receive.mjs printed a line that is not JSON: %s", line);
    cJSON_AddItemToArray(all, m);
  }
  free(line);
  st = pclose(p);
  {
    FILE* e = fopen(err, "r");
    char buf[2048];
    size_t n = e ? fread(buf, 1, sizeof buf - 1, e) : 0;
    buf[n] = '\0';
    if (e) fclose(e);
    print_message("%s", buf);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
      fail_msg("sdk_receive.mjs failed (status 0x%x): %s", st, buf);
  }
  free(err);
  ts_rmdir(dir);
  return all;
}

static const char* str_member(const cJSON* o, const char* name) {
  const cJSON* v = cJSON_GetObjectItemCaseSensitive(o, name);
  if (!cJSON_IsString(v)) fail_msg("member %s missing or not a string", name);
  return v->valuestring;
}

/* created_at as CloudEvents `time`: RFC 3339, UTC, milliseconds. */
static void rfc3339_ms(int64_t ms, char out[40]) {
  time_t secs = (time_t)(ms / 1000);
  struct tm tm;
  char base[32];
  gmtime_r(&secs, &tm);
  strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(out, 40, "%s.%03dZ", base, (int)(ms % 1000));
}

typedef struct sdk_rows_s {
  const cJSON* msgs;
  int first, n, matched;
} sdk_rows_t;

/* One outbox row (id, causation_id, event_type, aggregate_id, payload,
** created_at, published_at) against what the SDK received. */
static void sdk_row(void* arg, int ncols, const char* const* col) {
  sdk_rows_t* c = arg;
  const cJSON* m;
  const char* id = col[0];
  const char* cause = col[1];
  const char* type = col[2];
  const char* agg = col[3];
  const char* payload = col[4];
  int64_t created = strtoll(col[5], NULL, 10);
  cJSON* want_data = cJSON_Parse(payload);
  char when[40], ev_id[OB_UUID_BUFLEN];
  int found = 0, cause_ok = 0;

  (void)ncols;
  assert_non_null(want_data);
  if (col[6] == NULL)
    fail_msg("outbox event %s is not marked published", id);
  rfc3339_ms(created, when);
  /* The causation id is one of the payments we enqueued. */
  for (int i = c->first; i < c->first + c->n; i++)
    if (strcmp(cause, fx_event(i, ev_id)) == 0) cause_ok = 1;
  if (!cause_ok) fail_msg("outbox event %s: unexpected causation id %s", id, cause);

  cJSON_ArrayForEach(m, c->msgs) {
    cJSON* ev = cJSON_Parse(str_member(m, "body"));
    const cJSON* attrs = cJSON_GetObjectItemCaseSensitive(m, "attributes");
    if (strcmp(str_member(ev, "id"), id) != 0) {
      cJSON_Delete(ev);
      continue;
    }
    found++;
    assert_string_equal(str_member(ev, "specversion"), "1.0");
    assert_string_equal(str_member(ev, "source"), SOURCE);
    assert_string_equal(str_member(ev, "type"), type);
    assert_string_equal(str_member(ev, "subject"), agg);
    assert_string_equal(str_member(ev, "time"), when);
    assert_string_equal(str_member(ev, "datacontenttype"), "application/json");
    if (!cJSON_Compare(cJSON_GetObjectItemCaseSensitive(ev, "data"), want_data, 1)) {
      char* got = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(ev, "data"));
      fail_msg("event %s: data %s, outbox payload %s", id, got ? got : "(none)",
               payload);
    }
    assert_string_equal(str_member(attrs, "eventType"), type);
    assert_string_equal(str_member(attrs, "aggregateId"), agg);
    assert_string_equal(str_member(attrs, "causationId"), cause);
    cJSON_Delete(ev);
  }
  if (found < 1) fail_msg("outbox event %s never reached the SDK", id);
  c->matched += found;
  cJSON_Delete(want_data);
}

/* Every outbox row of db_path reached the SDK at least once, exactly as the
** row says; nothing else is in the queue. Event ids were
** fx_event(first .. first + n - 1). */
static void assert_sdk_got_outbox(fixture_t* f, const cJSON* msgs, int first,
                                  int n) {
  int rows = 0, matched = 0;
  int total = cJSON_GetArraySize(msgs);
  const cJSON* m;

  /* Each message: a CloudEvent with exactly the 8 members, 3 attributes. */
  cJSON_ArrayForEach(m, msgs) {
    const char* body = str_member(m, "body");
    cJSON* ev = cJSON_Parse(body);
    const cJSON* attrs = cJSON_GetObjectItemCaseSensitive(m, "attributes");
    if (ev == NULL) fail_msg("message body is not JSON: %s", body);
    assert_true(strlen(str_member(m, "messageId")) > 0);
    assert_int_equal(cJSON_GetArraySize(ev), 8);
    assert_true(cJSON_IsObject(attrs));
    assert_int_equal(cJSON_GetArraySize(attrs), 3);
    cJSON_Delete(ev);
  }

  {
    sdk_rows_t c = {msgs, first, n, 0};
    rows = ts_backend_rows(f->db_path,
                           "SELECT id, causation_id, event_type, aggregate_id,"
                           " payload, created_at, published_at FROM"
                           " outbox_event ORDER BY created_at, id",
                           sdk_row, &c);
    matched = c.matched;
  }
  /* One outbox row per payment, all distinct causations. */
  assert_int_equal(rows, n);
  assert_int_equal(fx_count(f, "SELECT count(DISTINCT causation_id) FROM"
                               " outbox_event"),
                   n);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM outbox_event WHERE"
                               " event_type <> '" OB_PAYOUT_EVENT_TYPE "'"),
                   0);
  /* Every message in the queue is one of the rows. */
  assert_int_equal(matched, total);
  print_message("relay_sdk: %d outbox rows, %d messages received by the SDK "
                "(%d duplicates)\n", rows, total, total - rows);
}

/* The offline phase is the same in both tests: handle payments in two
** waves with SQS unreachable; the outbox grows, nothing is published. */
static void assert_offline_state(fixture_t* f, const ob_stats_t* st, int n) {
  ob_payout_stats_t ps;
  assert_int_equal(ob_payout_stats(f->e, &ps), 0);
  assert_int_equal(ps.payouts, n);
  assert_int_equal(st->outbox_unpublished, n);
  assert_int_equal(st->outbox_parked, 0);
  assert_int_equal(st->relay_online, 0);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM outbox_event"), n);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM outbox_event WHERE"
                               " published_at IS NULL AND parked_at IS NULL"),
                   n);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM merchant_payout"), n);
}

/* ---- the same engine: the network returns under it ------------------------ */

static void test_offline_then_back_same_engine(void** state) {
  (void)state;
  if (g_skip) skip();
  char* q = sq_create_queue(&g_srv, "relay-sdk-same", NULL);
  assert_non_null(q);
  fixture_t* f = rf_terminal();
  uv_loop_t loop;
  ob_stats_t st;
  int port = ht_free_port(), closed = 0;
  long long sends_before = sends_seen();
  char sport[16], starget[16];

  assert_true(port > 0);
  rf_set_endpoint(port);  /* nothing listens there yet: offline */
  enable_relay(f, q);
  uv_loop_init(&loop);
  assert_int_equal(ob_attach(f->e, &loop), 0);

  rf_enqueue_payments(f, 1000, N_PAYMENTS / 2);
  run_until(&loop, f->e, handled_offline, N_PAYMENTS / 2, "first wave handled offline", &st);
  assert_offline_state(f, &st, N_PAYMENTS / 2);
  rf_enqueue_payments(f, 1000 + N_PAYMENTS / 2, N_PAYMENTS / 2);
  run_until(&loop, f->e, handled_offline, N_PAYMENTS, "second wave handled offline", &st);
  assert_offline_state(f, &st, N_PAYMENTS);
  assert_int_equal(sends_seen(), sends_before);  /* nothing reached SQS */

  /* The network comes back: the endpoint's port now leads to SQS. Nobody
  ** tells the engine. */
  snprintf(sport, sizeof sport, "%d", port);
  snprintf(starget, sizeof starget, "%d", g_srv.port);
  char* dir = ts_mkdtemp("relay-sdk-fwd");
  char* out = ts_path(dir, "fwd.out");
  const char* argv[] = {
      "node", "-e",
      "const net = require('node:net');"
      "const [port, target] = process.argv.slice(1).map(Number);"
      "net.createServer((c) => {"
      "  const u = net.connect(target, '127.0.0.1');"
      "  c.pipe(u); u.pipe(c);"
      "  c.on('error', () => u.destroy()); u.on('error', () => c.destroy());"
      "  c.on('close', () => u.destroy()); u.on('close', () => c.destroy());"
      "}).listen(port, '127.0.0.1', () => console.log('PORT ' + port));",
      sport, starget, NULL};
  ht_proc_t* fwd = ht_spawn(argv, out);
  assert_non_null(fwd);
  assert_int_equal(ht_wait_number(fwd, "PORT ", 20000), port);

  run_until(&loop, f->e, all_published, 0, "everything published after the network came back", &st);
  assert_int_equal(st.relay_online, 1);
  assert_true(st.last_publish_at_ms > 0);
  assert_int_equal(st.outbox_parked, 0);
  assert_true(sends_seen() >= sends_before + N_PAYMENTS / 10);

  assert_int_equal(ob_detach(f->e, detached, &closed), 0);
  while (!closed) uv_run(&loop, UV_RUN_ONCE);
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&loop), 0);
  ht_stop(fwd);
  free(out);
  ts_rmdir(dir);

  cJSON* msgs = sdk_receive(q);
  assert_sdk_got_outbox(f, msgs, 1000, N_PAYMENTS);
  cJSON_Delete(msgs);
  /* The SDK deleted what it received: the queue is empty now. */
  msgs = sdk_receive(q);
  assert_int_equal(cJSON_GetArraySize(msgs), 0);
  cJSON_Delete(msgs);
  fx_free(f);
  free(q);
}

/* ---- a new process on the same file --------------------------------------- */

static void test_offline_then_new_process(void** state) {
  (void)state;
  if (g_skip) skip();
  const char* bin = getenv("OB_BINARY_DIR");
  assert_non_null(bin);
  char* q = sq_create_queue(&g_srv, "relay-sdk-restart", NULL);
  assert_non_null(q);
  fixture_t* f = rf_terminal();
  ob_stats_t st;
  long long sends_before = sends_seen();

  rf_set_endpoint(1);  /* nothing listens on port 1 */
  enable_relay(f, q);
  rf_enqueue_payments(f, 2000, N_PAYMENTS / 2);
  /* Offline with the outbox full: stalled, not done. */
  assert_int_equal(ob_run(f->e, OB_RUN_UNTIL_IDLE, 0), OB_RUN_STALLED);
  assert_int_equal(ob_stats(f->e, &st), 0);
  assert_offline_state(f, &st, N_PAYMENTS / 2);
  rf_enqueue_payments(f, 2000 + N_PAYMENTS / 2, N_PAYMENTS / 2);
  assert_int_equal(ob_run(f->e, OB_RUN_UNTIL_IDLE, 0), OB_RUN_STALLED);
  assert_int_equal(ob_stats(f->e, &st), 0);
  assert_offline_state(f, &st, N_PAYMENTS);
  assert_int_equal(sends_seen(), sends_before);
  ob_close(f->e);
  f->e = NULL;

  /* The terminal restarts with the network back: the oncebox binary, its
  ** outbox configured through the environment. */
  assert_int_equal(ts_sh("AWS_ENDPOINT_URL_SQS=https://localhost:%d"
                      " ONCEBOX_OUTBOX_QUEUE_URL='%s' ONCEBOX_SOURCE='%s'"
                      " $OB_EMULATOR '%s/oncebox' --db '%s' --log-level error run --until-idle",
                      g_srv.port, q, SOURCE, bin, f->db_path),
                   0);
  fx_open(f);
  assert_int_equal(ob_stats(f->e, &st), 0);
  assert_int_equal(st.outbox_unpublished, 0);
  assert_int_equal(st.outbox_parked, 0);
  assert_int_equal(st.relay_online, 1);
  {
    ob_payout_stats_t ps;
    assert_int_equal(ob_payout_stats(f->e, &ps), 0);
    assert_int_equal(ps.payouts, N_PAYMENTS);
  }

  cJSON* msgs = sdk_receive(q);
  assert_sdk_got_outbox(f, msgs, 2000, N_PAYMENTS);
  cJSON_Delete(msgs);
  fx_free(f);
  free(q);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_offline_then_back_same_engine),
      cmocka_unit_test(test_offline_then_new_process),
  };
  return cmocka_run_group_tests_name("relay_sdk", tests, group_setup,
                                     group_teardown);
}
