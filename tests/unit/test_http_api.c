/* SPDX-License-Identifier: Apache-2.0 */
/*
** The client API contract without any server process: argument checks
** (errors returned, callback never called), callbacks exactly once and
** never from inside the registering call, cancellation, close with requests
** in flight, reuse of a request from its own callback, deadline while
** connecting, the proxy note. Only 127.0.0.1 sockets owned by the test are
** used.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "platform/http/http_client.h"
#include "tests/integration/http/http_test_util.h"

typedef struct {
  uv_loop_t loop;
  ob__http_client_t* client;
  ob__http_config_t cfg;
  int silent_fd;     /* a listener that never accepts */
  int silent_port;
} fix_t;

static int silent_listener(int* port) {
  struct sockaddr_in a;
  socklen_t len = sizeof a;
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || bind(fd, (struct sockaddr*)&a, sizeof a) != 0 ||
      listen(fd, 16) != 0 || getsockname(fd, (struct sockaddr*)&a, &len) != 0)
    return -1;
  *port = ntohs(a.sin_port);
  return fd;
}

static int setup(void** state) {
  fix_t* f = calloc(1, sizeof *f);
  char err[256];
  if (f == NULL) return -1;
  uv_loop_init(&f->loop);
  ob__http_config_init(&f->cfg);
  f->silent_fd = silent_listener(&f->silent_port);
  if (f->silent_fd < 0) return -1;
  if (ob__http_client_open(&f->client, &f->loop, &f->cfg, err, sizeof err) != 0) {
    fprintf(stderr, "%s\n", err);
    return -1;
  }
  *state = f;
  return 0;
}

static int teardown(void** state) {
  fix_t* f = *state;
  if (f->client != NULL) ht_close_client(&f->loop, f->client);
  uv_run(&f->loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&f->loop), 0);
  close(f->silent_fd);
  free(f);
  return 0;
}

static char* url(const char* scheme, int port, const char* path) {
  char b[128];
  snprintf(b, sizeof b, "%s://127.0.0.1:%d%s", scheme, port, path);
  return strdup(b);
}

static void never_cb(ob__http_req_t* req, int status,
                     const ob__http_response_t* res) {
  (void)req;
  (void)status;
  (void)res;
  fail_msg("callback called after a failed submit");
}

static void test_config_checks(void** state) {
  fix_t* f = *state;
  ob__http_client_t* c = (ob__http_client_t*)1;
  ob__http_config_t cfg;
  ob__http_resolve_t bad_addr[] = {{"sqs.test", "not-an-ip"}};
  ob__http_resolve_t no_host[] = {{NULL, "127.0.0.1"}};
  char err[256];

  ob__http_config_init(&cfg);
  assert_int_equal(cfg.max_header_bytes, 16384);
  assert_int_equal(cfg.max_body_bytes, 12 * 1024 * 1024);
  assert_int_equal(cfg.allow_plain_http, 0);
  assert_int_equal(ob__http_client_open(NULL, &f->loop, &cfg, err, sizeof err),
                   OB_EINVAL);
  assert_int_equal(ob__http_client_open(&c, NULL, &cfg, err, sizeof err),
                   OB_EINVAL);
  assert_null(c);
  cfg.max_body_bytes = 0;
  assert_int_equal(ob__http_client_open(&c, &f->loop, &cfg, err, sizeof err),
                   OB_EINVAL);
  ob__http_config_init(&cfg);
  cfg.request_timeout_ms = 0;
  assert_int_equal(ob__http_client_open(&c, &f->loop, &cfg, err, sizeof err),
                   OB_EINVAL);
  ob__http_config_init(&cfg);
  cfg.resolve = bad_addr;
  cfg.nresolve = 1;
  assert_int_equal(ob__http_client_open(&c, &f->loop, &cfg, err, sizeof err),
                   OB_EINVAL);
  cfg.resolve = no_host;
  assert_int_equal(ob__http_client_open(&c, &f->loop, &cfg, err, sizeof err),
                   OB_EINVAL);
  cfg.resolve = NULL;
  assert_int_equal(ob__http_client_open(&c, &f->loop, &cfg, err, sizeof err),
                   OB_EINVAL);
  assert_null(c);
}

static void test_invalid_requests(void** state) {
  fix_t* f = *state;
  ob__http_req_t req;
  ob__http_header_t h;
  char* ok_url = url("https", f->silent_port, "/");

  memset(&req, 0, sizeof req);
  req.method = "GET";
  req.url = ok_url;
  assert_int_equal(ob__http_request(NULL, &req, never_cb), OB_EINVAL);
  assert_int_equal(ob__http_request(f->client, NULL, never_cb), OB_EINVAL);
  assert_int_equal(ob__http_request(f->client, &req, NULL), OB_EINVAL);

  req.method = "GE T";
  assert_int_equal(ob__http_request(f->client, &req, never_cb), OB_EINVAL);
  req.method = "";
  assert_int_equal(ob__http_request(f->client, &req, never_cb), OB_EINVAL);
  req.method = "GET";

  req.url = "ftp://127.0.0.1/";
  assert_int_equal(ob__http_request(f->client, &req, never_cb), OB__HTTP_E_URL);
  req.url = "http://127.0.0.1/";  /* not allowed by this config */
  assert_int_equal(ob__http_request(f->client, &req, never_cb),
                   OB__HTTP_E_PLAIN_HTTP);
  req.url = ok_url;

  req.headers = &h;
  req.nheaders = 1;
  h.name = "X-Ok";
  h.value = "a\r\nInjected: yes";
  assert_int_equal(ob__http_request(f->client, &req, never_cb), OB_EINVAL);
  h.value = "nul-free but \x01 control";
  assert_int_equal(ob__http_request(f->client, &req, never_cb), OB_EINVAL);
  h.name = "Bad Name";
  h.value = "v";
  assert_int_equal(ob__http_request(f->client, &req, never_cb), OB_EINVAL);
  static const char* const reserved[] = {"Host", "content-length",
                                         "Transfer-Encoding", "CONNECTION"};
  for (size_t i = 0; i < 4; i++) {
    h.name = reserved[i];
    assert_int_equal(ob__http_request(f->client, &req, never_cb), OB_EINVAL);
  }
  req.nheaders = 0;
  req.body_len = 5;
  req.body = NULL;
  assert_int_equal(ob__http_request(f->client, &req, never_cb), OB_EINVAL);
  assert_null(req.op_);
  uv_run(&f->loop, UV_RUN_NOWAIT);
  free(ok_url);
}

static void test_refused_and_double_submit(void** state) {
  fix_t* f = *state;
  ht_result_t r;
  ob__http_req_t req;
  int port = ht_free_port();
  char* u = url("https", port, "/x");

  memset(&r, 0, sizeof r);
  memset(&req, 0, sizeof req);
  req.data = &r;
  req.method = "GET";
  req.url = u;
  assert_int_equal(ob__http_request(f->client, &req, ht_on_response), 0);
  assert_int_equal(ob__http_request(f->client, &req, ht_on_response), OB_ESTATE);
  assert_int_equal(r.calls, 0);  /* not from inside the call */
  while (!r.done) uv_run(&f->loop, UV_RUN_ONCE);
  assert_int_equal(r.calls, 1);
  assert_int_equal(r.status, OB__HTTP_E_CONNECT);
  assert_int_equal(r.request_sent, 0);
  assert_non_null(strstr(r.detail, "refused"));
  assert_null(req.op_);
  ht_result_free(&r);
  /* The same req can go again once its callback ran. */
  assert_int_equal(ob__http_request(f->client, &req, ht_on_response), 0);
  r.done = 0;
  while (!r.done) uv_run(&f->loop, UV_RUN_ONCE);
  assert_int_equal(r.calls, 2);
  ht_result_free(&r);
  free(u);
}

/* A name's addresses are kept for cfg.dns_ttl_ms (60 s): an offline
** terminal's probes and retries do not wake the resolver's thread pool on
** every attempt (docs/performance.md, the footprint's wake-ups); with 0 each
** connection looks the name up. "localhost" comes from /etc/hosts: no
** network. Each attempt is refused; a refusal does not drop the addresses. */
static int lookups_for(uv_loop_t* loop, uint64_t ttl_ms, int attempts) {
  ob__http_config_t cfg;
  ob__http_client_t* c;
  ob__http_stats_t st;
  ht_result_t r;
  ob__http_req_t req;
  char u[96], err[256];
  ob__http_config_init(&cfg);
  cfg.dns_ttl_ms = ttl_ms;
  assert_int_equal(ob__http_client_open(&c, loop, &cfg, err, sizeof err), 0);
  snprintf(u, sizeof u, "https://localhost:%d/x", ht_free_port());
  for (int i = 0; i < attempts; i++) {
    memset(&r, 0, sizeof r);
    memset(&req, 0, sizeof req);
    req.data = &r;
    req.method = "GET";
    req.url = u;
    assert_int_equal(ob__http_request(c, &req, ht_on_response), 0);
    while (!r.done) uv_run(loop, UV_RUN_ONCE);
    assert_int_equal(r.status, OB__HTTP_E_CONNECT);
    ht_result_free(&r);
  }
  ob__http_client_stats(c, &st);
  ht_close_client(loop, c);
  return (int)st.lookups;
}

static void test_lookups_kept(void** state) {
  fix_t* f = *state;
  assert_int_equal(lookups_for(&f->loop, 60000, 3), 1);
  assert_int_equal(lookups_for(&f->loop, 0, 3), 3);
}

static const char* const k_proxy_vars[] = {
    "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy",
    "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy"};

static void clear_proxy_env(void) {
  for (size_t i = 0; i < sizeof k_proxy_vars / sizeof k_proxy_vars[0]; i++)
    unsetenv(k_proxy_vars[i]);
}

/* Proxies are not used; the note says so, names the variable, never its
** value (it may hold credentials), and rides along on connect failures. */
static void test_proxy_note(void** state) {
  fix_t* f = *state;
  ht_result_t r;
  char* u = url("https", ht_free_port(), "/x");
  const char* note;

  clear_proxy_env();
  assert_null(ob__http_proxy_note());
  for (size_t i = 0; i < 6; i++) {
    clear_proxy_env();
    assert_int_equal(setenv(k_proxy_vars[i], "http://user:s3cret@proxy:3128", 1),
                     0);
    note = ob__http_proxy_note();
    assert_non_null(note);
    assert_memory_equal(note, k_proxy_vars[i], strlen(k_proxy_vars[i]));
    assert_non_null(strstr(note, "does not use proxies"));
    assert_null(strstr(note, "s3cret"));
  }
  /* Order: HTTPS_PROXY is named before ALL_PROXY. */
  clear_proxy_env();
  setenv("ALL_PROXY", "socks5://p:1080", 1);
  setenv("HTTPS_PROXY", "http://p:3128", 1);
  assert_memory_equal(ob__http_proxy_note(), "HTTPS_PROXY", 11);
  /* Empty is unset; NO_PROXY=* exempts every host anyway. */
  clear_proxy_env();
  setenv("HTTPS_PROXY", "", 1);
  assert_null(ob__http_proxy_note());
  setenv("https_proxy", "http://p:3128", 1);
  setenv("NO_PROXY", "*", 1);
  assert_null(ob__http_proxy_note());

  /* A failed direct connection says that a proxy was configured. */
  clear_proxy_env();
  setenv("HTTPS_PROXY", "http://user:s3cret@proxy:3128", 1);
  assert_int_equal(ht_fetch(&f->loop, f->client, "GET", u, NULL, 0, 0, &r),
                   OB__HTTP_E_CONNECT);
  assert_non_null(strstr(r.detail, "refused"));
  assert_non_null(strstr(r.detail, "HTTPS_PROXY is set"));
  assert_null(strstr(r.detail, "s3cret"));
  printf("  %s\n", r.detail);
  ht_result_free(&r);
  clear_proxy_env();
  assert_int_equal(ht_fetch(&f->loop, f->client, "GET", u, NULL, 0, 0, &r),
                   OB__HTTP_E_CONNECT);
  assert_null(strstr(r.detail, "PROXY"));
  ht_result_free(&r);
  free(u);
}

static void test_cancel(void** state) {
  fix_t* f = *state;
  ht_result_t r;
  ob__http_req_t req;
  char* u = url("https", f->silent_port, "/x");

  memset(&r, 0, sizeof r);
  memset(&req, 0, sizeof req);
  req.data = &r;
  req.method = "GET";
  req.url = u;
  assert_int_equal(ob__http_request(f->client, &req, ht_on_response), 0);
  for (int i = 0; i < 5; i++) uv_run(&f->loop, UV_RUN_NOWAIT);  /* connect */
  assert_int_equal(ob__http_cancel(&req), 0);
  assert_int_equal(r.calls, 0);  /* delivered later, from the loop */
  assert_int_equal(ob__http_cancel(&req), OB_ESTATE);
  while (!r.done) uv_run(&f->loop, UV_RUN_ONCE);
  assert_int_equal(r.calls, 1);
  assert_int_equal(r.status, OB__HTTP_E_CANCELED);
  assert_int_equal(r.request_sent, 0);
  assert_int_equal(ob__http_cancel(&req), OB_ESTATE);
  ht_result_free(&r);
  free(u);
}

static int g_order;
static int g_cb_order[3];
static int g_close_order;

static void order_cb(ob__http_req_t* req, int status,
                     const ob__http_response_t* res) {
  int i = (int)(intptr_t)req->data;
  (void)res;
  assert_int_equal(status, OB__HTTP_E_CANCELED);
  g_cb_order[i] = ++g_order;
}

static void order_close_cb(ob__http_client_t* c, void* arg) {
  (void)c;
  (void)arg;
  g_close_order = ++g_order;
}

static void test_close_cancels_in_flight(void** state) {
  fix_t* f = *state;
  ob__http_req_t req[3];
  char* u = url("https", f->silent_port, "/x");
  ob__http_req_t late;

  g_order = 0;
  g_close_order = 0;
  memset(req, 0, sizeof req);
  memset(g_cb_order, 0, sizeof g_cb_order);
  for (int i = 0; i < 3; i++) {
    req[i].data = (void*)(intptr_t)i;
    req[i].method = "GET";
    req[i].url = u;
    assert_int_equal(ob__http_request(f->client, &req[i], order_cb), 0);
  }
  for (int i = 0; i < 5; i++) uv_run(&f->loop, UV_RUN_NOWAIT);
  ob__http_client_close(f->client, order_close_cb, NULL);
  assert_int_equal(g_order, 0);  /* nothing synchronous */
  memset(&late, 0, sizeof late);
  late.method = "GET";
  late.url = u;
  assert_int_equal(ob__http_request(f->client, &late, never_cb),
                   OB__HTTP_E_CLOSING);
  ob__http_client_close(f->client, order_close_cb, NULL);  /* ignored */
  while (g_close_order == 0) assert_true(uv_run(&f->loop, UV_RUN_ONCE) ||
                                         g_close_order);
  f->client = NULL;
  for (int i = 0; i < 3; i++) {
    assert_true(g_cb_order[i] > 0);
    assert_true(g_cb_order[i] < g_close_order);
  }
  assert_int_equal(g_close_order, 4);
  free(u);
}

typedef struct {
  ob__http_client_t* client;
  int rounds;
  int last;
} chain_t;

static void chain_cb(ob__http_req_t* req, int status,
                     const ob__http_response_t* res) {
  chain_t* ch = req->data;
  (void)res;
  ch->last = status;
  if (++ch->rounds < 3)  /* reuse req from its own callback */
    assert_int_equal(ob__http_request(ch->client, req, chain_cb), 0);
}

static void test_resubmit_from_callback(void** state) {
  fix_t* f = *state;
  chain_t ch = {f->client, 0, 0};
  ob__http_req_t req;
  char* u = url("https", ht_free_port(), "/x");
  memset(&req, 0, sizeof req);
  req.data = &ch;
  req.method = "GET";
  req.url = u;
  assert_int_equal(ob__http_request(f->client, &req, chain_cb), 0);
  while (ch.rounds < 3) uv_run(&f->loop, UV_RUN_ONCE);
  assert_int_equal(ch.last, OB__HTTP_E_CONNECT);
  free(u);
}

static void close_in_cb(ob__http_req_t* req, int status,
                        const ob__http_response_t* res) {
  fix_t* f = req->data;
  (void)status;
  (void)res;
  ob__http_client_close(f->client, order_close_cb, NULL);
}

static void test_close_from_callback(void** state) {
  fix_t* f = *state;
  ob__http_req_t req;
  char* u = url("https", ht_free_port(), "/x");
  g_order = 0;
  g_close_order = 0;
  memset(&req, 0, sizeof req);
  req.data = f;
  req.method = "GET";
  req.url = u;
  assert_int_equal(ob__http_request(f->client, &req, close_in_cb), 0);
  while (g_close_order == 0) uv_run(&f->loop, UV_RUN_ONCE);
  f->client = NULL;
  free(u);
}

static void test_deadline_while_connecting(void** state) {
  fix_t* f = *state;
  ht_result_t r;
  char* u = url("https", f->silent_port, "/x");
  uint64_t t0 = ht_now_ms();
  assert_int_equal(
      ht_fetch(&f->loop, f->client, "GET", u, NULL, 0, 300, &r),
      OB__HTTP_E_DEADLINE);
  assert_true(ht_now_ms() - t0 < 2000);
  assert_non_null(strstr(r.detail, "while connecting"));
  assert_int_equal(r.request_sent, 0);
  ht_result_free(&r);
  free(u);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_config_checks, setup, teardown),
      cmocka_unit_test_setup_teardown(test_invalid_requests, setup, teardown),
      cmocka_unit_test_setup_teardown(test_lookups_kept, setup, teardown),
      cmocka_unit_test_setup_teardown(test_refused_and_double_submit, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_proxy_note, setup, teardown),
      cmocka_unit_test_setup_teardown(test_cancel, setup, teardown),
      cmocka_unit_test_setup_teardown(test_close_cancels_in_flight, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_resubmit_from_callback, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_close_from_callback, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_deadline_while_connecting, setup,
                                      teardown),
  };
  return cmocka_run_group_tests_name("http_api", tests, NULL, NULL);
}
