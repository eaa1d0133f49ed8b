/* SPDX-License-Identifier: Apache-2.0 */
/*
** Hostile and odd responses from a scripted server (hostile_server.mjs, raw
** node:net on 127.0.0.1), over plain HTTP (explicitly allowed by the
** client config, as for a local emulator): each case gets its specific
** error, no crash, bounded memory, and the client stays usable afterwards.
** Also: keep-alive reuse over 100 sequential requests (connections counted
** by the server), the stale pooled connection rule (GET resent once on a
** fresh connection, POST not resent), the deadline against a server that
** sends one byte per second, and a name lookup through getaddrinfo.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/integration/http/http_test_util.h"
#include "tests/support/testsupport.h"

static char* g_dir;
static ht_proc_t* g_srv;
static int g_port;

typedef struct {
  uv_loop_t loop;
  ob__http_client_t* client;
  ob__http_config_t cfg;
} fix_t;

static int group_setup(void** state) {
  char* script = ht_script("hostile_server.mjs");
  char* out;
  (void)state;
  g_dir = ts_mkdtemp("http-hostile");
  out = ts_path(g_dir, "hostile.out");
  {
    const char* argv[] = {"node", script, NULL};
    g_srv = ht_spawn(argv, out);
  }
  free(script);
  free(out);
  if (g_srv == NULL) return -1;
  g_port = ht_wait_number(g_srv, "PORT ", 15000);
  if (g_port <= 0) {
    char* o = ht_output(g_srv);
    fprintf(stderr, "hostile_server.mjs did not start:\n%s\n", o);
    free(o);
    return -1;
  }
  return 0;
}

static int group_teardown(void** state) {
  (void)state;
  ht_stop(g_srv);
  ts_rmdir(g_dir);
  return 0;
}

static int setup(void** state) {
  fix_t* f = calloc(1, sizeof *f);
  if (f == NULL) return -1;
  uv_loop_init(&f->loop);
  ob__http_config_init(&f->cfg);
  f->cfg.allow_plain_http = 1;
  f->cfg.max_body_bytes = 1024 * 1024;
  f->cfg.connect_timeout_ms = 5000;
  f->cfg.request_timeout_ms = 10000;
  *state = f;
  return 0;
}

static void open_client(fix_t* f) {
  char err[256] = "";
  int rc = ob__http_client_open(&f->client, &f->loop, &f->cfg, err, sizeof err);
  if (rc != 0) fprintf(stderr, "client_open: %s\n", err);
  assert_int_equal(rc, 0);
}

static int teardown(void** state) {
  fix_t* f = *state;
  if (f->client != NULL) ht_close_client(&f->loop, f->client);
  uv_run(&f->loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&f->loop), 0);
  free(f);
  return 0;
}

static char* url_for(const char* host, const char* path) {
  char buf[256];
  snprintf(buf, sizeof buf, "http://%s:%d%s", host, g_port, path);
  return strdup(buf);
}

static int fetch(fix_t* f, const char* method, const char* path,
                 const char* body, uint64_t timeout_ms, ht_result_t* r) {
  char* u = url_for("127.0.0.1", path);
  int rc = ht_fetch(&f->loop, f->client, method, u, body,
                    body ? strlen(body) : 0, timeout_ms, r);
  free(u);
  return rc;
}

static int server_count(const char* needle) {
  char* out = ht_output(g_srv);
  int n = 0;
  for (char* p = out; (p = strstr(p, needle)) != NULL; p++) n++;
  free(out);
  return n;
}

static int stats_field(fix_t* f, const char* key) {
  ht_result_t r;
  const char* p;
  int v;
  assert_int_equal(fetch(f, "GET", "/stats", NULL, 0, &r), 0);
  p = strstr(r.body, key);
  assert_non_null(p);
  v = atoi(p + strlen(key));
  ht_result_free(&r);
  return v;
}

/* ---- hostile cases -------------------------------------------------------- */

static const struct {
  const char* mode;
  int want;
  int http_status;      /* when want == 0 */
  const char* body;     /* when want == 0 */
} k_cases[] = {
    {"/ok", 0, 200, "ok"},
    {"/chunked", 0, 200, "hello world"},
    {"/continue", 0, 200, "ok"},
    {"/http10", 0, 200, "body until close"},
    {"/no-such-mode", 0, 404, ""},
    {"/huge-cl", OB__HTTP_E_BAD_CONTENT_LENGTH, 0, NULL},
    {"/neg-cl", OB__HTTP_E_BAD_CONTENT_LENGTH, 0, NULL},
    {"/dup-cl", OB__HTTP_E_BAD_CONTENT_LENGTH, 0, NULL},
    {"/dup-cl-same", OB__HTTP_E_BAD_CONTENT_LENGTH, 0, NULL},
    {"/big-cl", OB__HTTP_E_BODY_TOO_BIG, 0, NULL},
    {"/cl-te", OB__HTTP_E_BAD_FRAMING, 0, NULL},
    {"/bad-chunk", OB__HTTP_E_BAD_CHUNK, 0, NULL},
    {"/huge-chunk", OB__HTTP_E_BAD_CHUNK, 0, NULL},
    {"/neg-chunk", OB__HTTP_E_BAD_CHUNK, 0, NULL},
    {"/long-header", OB__HTTP_E_HEADER_TOO_BIG, 0, NULL},
    {"/many-headers", OB__HTTP_E_HEADER_TOO_BIG, 0, NULL},
    {"/endless-body", OB__HTTP_E_BODY_TOO_BIG, 0, NULL},
    {"/endless-chunked", OB__HTTP_E_BODY_TOO_BIG, 0, NULL},
    {"/early-close", OB__HTTP_E_EOF, 0, NULL},
    {"/partial-header", OB__HTTP_E_EOF, 0, NULL},
    {"/close-now", OB__HTTP_E_EOF, 0, NULL},
    {"/reset", OB__HTTP_E_RESET, 0, NULL},
    {"/many-continue", OB__HTTP_E_BAD_RESPONSE, 0, NULL},
    {"/switching", OB__HTTP_E_BAD_RESPONSE, 0, NULL},
    {"/garbage", OB__HTTP_E_BAD_RESPONSE, 0, NULL},
};

static void test_hostile_cases(void** state) {
  fix_t* f = *state;
  long rss0;
  open_client(f);
  rss0 = ht_maxrss_kb();
  for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; i++) {
    ht_result_t r;
    int rc = fetch(f, "GET", k_cases[i].mode, NULL, 0, &r);
    printf("  %-18s %-32s %s\n", k_cases[i].mode, ob__http_err_name(rc),
           r.detail);
    if (rc != k_cases[i].want)
      fail_msg("%s: got %s (%s), want %s", k_cases[i].mode,
               ob__http_err_name(rc), r.detail,
               ob__http_err_name(k_cases[i].want));
    assert_int_equal(r.calls, 1);
    if (rc == 0) {
      assert_int_equal(r.http_status, k_cases[i].http_status);
      assert_string_equal(r.body, k_cases[i].body);
    } else {
      assert_true(r.detail[0] != '\0');
      assert_true(r.body_len <= f->cfg.max_body_bytes);
    }
    ht_result_free(&r);
    /* Still usable, and no poisoned connection was pooled. */
    assert_int_equal(fetch(f, "GET", "/ok", NULL, 0, &r), 0);
    assert_string_equal(r.body, "ok");
    ht_result_free(&r);
  }
  /* Memory stays bounded by the caps (1 MiB body, 16 KiB header), however
  ** much the server sends. Generous margin for sanitizer builds. */
  printf("  peak RSS growth: %ld KiB\n", ht_maxrss_kb() - rss0);
  assert_true(ht_maxrss_kb() - rss0 < 128 * 1024);
}

/* A response followed by junk, or one that says close: not pooled. */
static void test_unclean_connections_not_pooled(void** state) {
  fix_t* f = *state;
  ht_result_t r;
  ob__http_stats_t st;
  open_client(f);
  assert_int_equal(fetch(f, "GET", "/extra", NULL, 0, &r), 0);
  assert_string_equal(r.body, "ok");
  ht_result_free(&r);
  for (int i = 0; i < 20; i++) uv_run(&f->loop, UV_RUN_NOWAIT);
  ob__http_client_stats(f->client, &st);
  assert_int_equal(st.idle_connections, 0);
  assert_int_equal(fetch(f, "GET", "/close-hdr", NULL, 0, &r), 0);
  ht_result_free(&r);
  ob__http_client_stats(f->client, &st);
  assert_int_equal(st.idle_connections, 0);
  assert_int_equal(fetch(f, "GET", "/ok", NULL, 0, &r), 0);
  ht_result_free(&r);
  ob__http_client_stats(f->client, &st);
  assert_int_equal(st.idle_connections, 1);
  assert_int_equal(st.connections_opened, 3);
}

static void test_one_byte_per_second_hits_deadline(void** state) {
  fix_t* f = *state;
  ht_result_t r;
  uint64_t t0, dt;
  open_client(f);
  t0 = ht_now_ms();
  assert_int_equal(fetch(f, "GET", "/slow", NULL, 1500, &r),
                   OB__HTTP_E_DEADLINE);
  dt = ht_now_ms() - t0;
  assert_true(dt >= 1400 && dt < 4000);
  assert_non_null(strstr(r.detail, "1500 ms"));
  assert_int_equal(r.request_sent, 1);
  ht_result_free(&r);
}

static void test_keepalive_100_sequential(void** state) {
  fix_t* f = *state;
  ob__http_stats_t st;
  int conns0, conns1;
  open_client(f);
  conns0 = stats_field(f, "\"connections\":");
  for (int i = 0; i < 100; i++) {
    ht_result_t r;
    assert_int_equal(fetch(f, "POST", "/echo", "payload", 0, &r), 0);
    assert_string_equal(r.body, "POST 7");
    assert_int_equal(r.reused, 1);
    ht_result_free(&r);
  }
  conns1 = stats_field(f, "\"connections\":");
  assert_int_equal(conns1, conns0);  /* the server saw no new connection */
  ob__http_client_stats(f->client, &st);
  assert_int_equal(st.connections_opened, 1);
  assert_int_equal(st.connections_reused, 101);
}

/* The server drops the next request on a kept-alive connection without a
** byte: a GET goes once more on a fresh connection. */
static void test_stale_connection_get_retried(void** state) {
  fix_t* f = *state;
  ht_result_t r;
  ob__http_stats_t st;
  int before = server_count(" GET /ok ");
  open_client(f);
  assert_int_equal(fetch(f, "GET", "/drop-next", NULL, 0, &r), 0);
  ht_result_free(&r);
  assert_int_equal(fetch(f, "GET", "/ok", NULL, 0, &r), 0);
  assert_string_equal(r.body, "ok");
  assert_int_equal(r.reused, 0);  /* answered on the fresh connection */
  ht_result_free(&r);
  ob__http_client_stats(f->client, &st);
  assert_int_equal(st.retries, 1);
  assert_int_equal(st.connections_opened, 2);
  assert_int_equal(server_count(" GET /ok ") - before, 2);
}

/* Same race with a POST: not resent, the caller decides. */
static void test_stale_connection_post_not_resent(void** state) {
  fix_t* f = *state;
  ht_result_t r;
  ob__http_stats_t st;
  int before = server_count(" POST /echo ");
  open_client(f);
  assert_int_equal(fetch(f, "GET", "/drop-next", NULL, 0, &r), 0);
  ht_result_free(&r);
  assert_int_equal(fetch(f, "POST", "/echo", "x", 0, &r), OB__HTTP_E_STALE);
  assert_int_equal(r.request_sent, 1);
  assert_int_equal(r.reused, 1);
  assert_non_null(strstr(r.detail, "not resent"));
  ht_result_free(&r);
  ob__http_client_stats(f->client, &st);
  assert_int_equal(st.retries, 0);
  assert_int_equal(server_count(" POST /echo ") - before, 1);
}

static void test_parallel_requests_and_pool_cap(void** state) {
  fix_t* f = *state;
  enum { N = 10 };
  ob__http_req_t req[N];
  ht_result_t r[N];
  ob__http_stats_t st;
  char* u = url_for("127.0.0.1", "/ok");
  int done;
  open_client(f);
  memset(req, 0, sizeof req);
  memset(r, 0, sizeof r);
  for (int i = 0; i < N; i++) {
    req[i].data = &r[i];
    req[i].method = "GET";
    req[i].url = u;
    assert_int_equal(ob__http_request(f->client, &req[i], ht_on_response), 0);
  }
  do {
    uv_run(&f->loop, UV_RUN_ONCE);
    done = 0;
    for (int i = 0; i < N; i++) done += r[i].done;
  } while (done < N);
  for (int i = 0; i < N; i++) {
    assert_int_equal(r[i].status, 0);
    assert_int_equal(r[i].calls, 1);
    ht_result_free(&r[i]);
  }
  ob__http_client_stats(f->client, &st);
  assert_int_equal(st.connections_opened, N);
  assert_int_equal(st.idle_connections, f->cfg.max_idle_per_host);
  free(u);
}

static void test_dns_localhost(void** state) {
  fix_t* f = *state;
  ht_result_t r;
  char* u;
  if (!ht_localhost_is_127()) {
    printf("  skipped: localhost resolves beyond 127.0.0.1 here\n");
    skip();
  }
  u = url_for("localhost", "/ok");
  open_client(f);
  assert_int_equal(ht_fetch(&f->loop, f->client, "GET", u, NULL, 0, 0, &r), 0);
  assert_string_equal(r.body, "ok");
  ht_result_free(&r);
  free(u);
}

static void noop_timer(uv_timer_t* t) {
  (void)t;
}

/* Idle pooled connections are closed after idle_timeout_ms. */
static void test_idle_timeout_evicts(void** state) {
  fix_t* f = *state;
  ht_result_t r;
  ob__http_stats_t st;
  uv_timer_t tick;  /* the pool is unref'd: keep the loop turning */
  uint64_t end;
  f->cfg.idle_timeout_ms = 200;
  open_client(f);
  assert_int_equal(fetch(f, "GET", "/ok", NULL, 0, &r), 0);
  ht_result_free(&r);
  ob__http_client_stats(f->client, &st);
  assert_int_equal(st.idle_connections, 1);
  uv_timer_init(&f->loop, &tick);
  uv_timer_start(&tick, noop_timer, 20, 20);
  end = ht_now_ms() + 3000;
  while (ht_now_ms() < end) {
    ob__http_client_stats(f->client, &st);
    if (st.idle_connections == 0) break;
    uv_run(&f->loop, UV_RUN_ONCE);
  }
  uv_close((uv_handle_t*)&tick, NULL);
  uv_run(&f->loop, UV_RUN_NOWAIT);
  assert_int_equal(st.idle_connections, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_hostile_cases, setup, teardown),
      cmocka_unit_test_setup_teardown(test_unclean_connections_not_pooled,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_one_byte_per_second_hits_deadline,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_keepalive_100_sequential, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_stale_connection_get_retried, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_stale_connection_post_not_resent,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_parallel_requests_and_pool_cap,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_dns_localhost, setup, teardown),
      cmocka_unit_test_setup_teardown(test_idle_timeout_evicts, setup, teardown),
  };
  return cmocka_run_group_tests_name("http_hostile", tests, group_setup,
                                     group_teardown);
}
