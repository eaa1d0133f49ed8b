/*
** The TLS failure matrix against real servers on 127.0.0.1, plus the good
** cases. Servers: tls_server.mjs (Node https, one listener per certificate
** of a PKI generated now by gen_pki.sh, with faketime for the expired and
** not-yet-valid ones), openssl s_server -tls1_1 for the old protocol, socat
** readbytes=200 for a truncated handshake, and a listener that never
** accepts for the silent server. Every failure must carry its own error and
** send no request byte: checked on the client (request_sent == 0) and on
** the server (no completed handshake, no request logged, or no bytes beyond
** the ClientHello).
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

#include "tests/integration/http/http_test_util.h"
#include "tests/support/testsupport.h"

enum { GOOD, WRONG, EXPIRED, FUTURE, UNTRUSTED, NSERVERS };
static const char* const k_names[NSERVERS] = {"good", "wrong", "expired",
                                              "future", "untrusted"};

typedef struct {
  char* dir;
  char* ca;
  ht_proc_t* srv;
  int port[NSERVERS];
} group_t;

static group_t g;

typedef struct {
  uv_loop_t loop;
  ob__http_client_t* client;
  ob__http_config_t cfg;
  ht_proc_t* extra;  /* a per-test server, stopped by teardown */
  char* extra_out;
} fix_t;

static int group_setup(void** state) {
  char* script;
  char* out;
  (void)state;
  g.dir = ts_mkdtemp("http-tls");
  if (ht_gen_pki(g.dir) != 0) {
    fprintf(stderr, "gen_pki.sh failed (need openssl and faketime)\n");
    return -1;
  }
  g.ca = ts_path(g.dir, "ca.crt");
  script = ht_script("tls_server.mjs");
  out = ts_path(g.dir, "tls_server.out");
  {
    const char* argv[] = {"node", script, g.dir, "good", "wrong", "expired",
                          "future", "untrusted", NULL};
    g.srv = ht_spawn(argv, out);
  }
  free(script);
  free(out);
  if (g.srv == NULL) return -1;
  for (int i = 0; i < NSERVERS; i++) {
    char marker[64];
    snprintf(marker, sizeof marker, "PORT %s ", k_names[i]);
    g.port[i] = ht_wait_number(g.srv, marker, 15000);
    if (g.port[i] <= 0) {
      char* o = ht_output(g.srv);
      fprintf(stderr, "tls_server.mjs did not start:\n%s\n", o);
      free(o);
      return -1;
    }
  }
  return 0;
}

static int group_teardown(void** state) {
  (void)state;
  ht_stop(g.srv);
  free(g.ca);
  ts_rmdir(g.dir);
  return 0;
}

static const ob__http_resolve_t k_resolve[] = {{"sqs.test", "127.0.0.1"}};

static int setup(void** state) {
  fix_t* f = calloc(1, sizeof *f);
  if (f == NULL) return -1;
  uv_loop_init(&f->loop);
  ob__http_config_init(&f->cfg);
  f->cfg.ca_file = g.ca;
  f->cfg.resolve = k_resolve;
  f->cfg.nresolve = 1;
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
  ht_stop(f->extra);  /* even when the test failed half-way */
  free(f->extra_out);
  if (f->client != NULL) ht_close_client(&f->loop, f->client);
  uv_run(&f->loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&f->loop), 0);  /* nothing left behind */
  free(f);
  return 0;
}

static char* url_for(const char* host, int port, const char* path) {
  char buf[256];
  snprintf(buf, sizeof buf, "https://%s:%d%s", host, port, path);
  return strdup(buf);
}

/* Lines "KIND name..." the TLS server logged (SECURE, REQ, TLSERR). The
** names share no prefix, so a prefix match is exact enough. */
static int count_server_lines(const char* kind, int who) {
  char prefix[64];
  snprintf(prefix, sizeof prefix, "%s %s", kind, k_names[who]);
  return ht_count_lines(g.srv, prefix);
}

static int has_bytes(const unsigned char* b, size_t n, const char* s) {
  size_t m = strlen(s);
  for (size_t i = 0; i + m <= n; i++)
    if (memcmp(b + i, s, m) == 0) return 1;
  return 0;
}

/* ---- good cases -------------------------------------------------------- */

static void test_good_get(void** state) {
  fix_t* f = *state;
  ht_result_t r;
  char* url = url_for("sqs.test", g.port[GOOD], "/hello?x=1");
  open_client(f);
  assert_int_equal(ht_fetch(&f->loop, f->client, "GET", url, NULL, 0, 0, &r), 0);
  assert_int_equal(r.calls, 1);
  assert_int_equal(r.http_status, 200);
  assert_string_equal(r.body, "hello GET /hello?x=1 0");
  assert_int_equal(r.request_sent, 1);
  assert_int_equal(r.reused, 0);
  assert_string_equal(r.detail, "");
  ht_result_free(&r);
  free(url);
}

/* 1 MiB through a 64 KiB outgoing ciphertext cap: the WANT_WRITE path. */
static void test_good_post_large(void** state) {
  fix_t* f = *state;
  ht_result_t r;
  size_t n = 1024 * 1024;
  char* body = malloc(n);
  char* url = url_for("sqs.test", g.port[GOOD], "/big");
  memset(body, 'z', n);
  open_client(f);
  assert_int_equal(
      ht_fetch(&f->loop, f->client, "POST", url, body, n, 0, &r), 0);
  assert_int_equal(r.http_status, 200);
  assert_string_equal(r.body, "hello POST /big 1048576");
  ht_result_free(&r);
  free(body);
  free(url);
}

static int stat_field(const char* json, const char* key) {
  const char* p = strstr(json, key);
  assert_non_null(p);
  return atoi(p + strlen(key));
}

static void test_keepalive_tls_100(void** state) {
  fix_t* f = *state;
  ht_result_t r;
  ob__http_stats_t st;
  char* stats = url_for("sqs.test", g.port[GOOD], "/stats");
  char* hello = url_for("sqs.test", g.port[GOOD], "/hello");
  int secure0, secure1;

  open_client(f);
  assert_int_equal(ht_fetch(&f->loop, f->client, "GET", stats, NULL, 0, 0, &r),
                   0);
  secure0 = stat_field(r.body, "\"secure\":");
  ht_result_free(&r);
  for (int i = 0; i < 100; i++) {
    assert_int_equal(
        ht_fetch(&f->loop, f->client, "GET", hello, NULL, 0, 0, &r), 0);
    assert_int_equal(r.http_status, 200);
    assert_int_equal(r.reused, 1);
    ht_result_free(&r);
  }
  assert_int_equal(ht_fetch(&f->loop, f->client, "GET", stats, NULL, 0, 0, &r),
                   0);
  secure1 = stat_field(r.body, "\"secure\":");
  ht_result_free(&r);
  assert_int_equal(secure1, secure0);  /* one TLS connection for 102 */
  ob__http_client_stats(f->client, &st);
  assert_int_equal(st.connections_opened, 1);
  assert_int_equal(st.connections_reused, 101);
  assert_int_equal(st.idle_connections, 1);
  free(stats);
  free(hello);
}

/* No resolve entry: getaddrinfo("localhost") and the name check on it. */
static void test_good_localhost_dns(void** state) {
  fix_t* f = *state;
  ht_result_t r;
  char* url;
  if (!ht_localhost_is_127()) {
    printf("  skipped: localhost resolves beyond 127.0.0.1 here\n");
    skip();
  }
  url = url_for("localhost", g.port[GOOD], "/dns");
  f->cfg.resolve = NULL;
  f->cfg.nresolve = 0;
  open_client(f);
  assert_int_equal(ht_fetch(&f->loop, f->client, "GET", url, NULL, 0, 0, &r), 0);
  assert_string_equal(r.body, "hello GET /dns 0");
  ht_result_free(&r);
  free(url);
}

/* ---- the failure matrix ------------------------------------------------- */

static void expect_refused(fix_t* f, const char* host, int port, int want,
                           const char* detail_has) {
  ht_result_t r;
  char* url = url_for(host, port, "/must-not-arrive");
  int rc;
  open_client(f);
  rc = ht_fetch(&f->loop, f->client, "GET", url, NULL, 0, 0, &r);
  if (rc != want)
    fprintf(stderr, "got %s (%s), want %s\n", ob__http_err_name(rc), r.detail,
            ob__http_err_name(want));
  assert_int_equal(rc, want);
  assert_int_equal(r.calls, 1);
  assert_int_equal(r.request_sent, 0);
  assert_int_equal(r.http_status, 0);
  if (detail_has != NULL && strstr(r.detail, detail_has) == NULL) {
    fprintf(stderr, "detail: %s\n", r.detail);
    fail_msg("detail lacks '%s'", detail_has);
  }
  printf("  %s: %s\n", ob__http_err_name(rc), r.detail);
  ht_result_free(&r);
  free(url);
}

static void expect_no_request_on(int who) {
  /* The server completed no handshake and served nothing. */
  assert_int_equal(count_server_lines("SECURE", who), 0);
  assert_int_equal(count_server_lines("REQ", who), 0);
}

static void test_wrong_hostname(void** state) {
  expect_refused(*state, "sqs.test", g.port[WRONG], OB__HTTP_E_TLS_HOSTNAME,
                 "sqs.test");
  expect_no_request_on(WRONG);
}

/* An IP-literal URL is still name-checked (the cert has DNS names only). */
static void test_ip_literal_is_checked(void** state) {
  int before = count_server_lines("REQ", GOOD);
  expect_refused(*state, "127.0.0.1", g.port[GOOD], OB__HTTP_E_TLS_HOSTNAME,
                 "127.0.0.1");
  assert_int_equal(count_server_lines("REQ", GOOD), before);
}

static void test_expired(void** state) {
  expect_refused(*state, "sqs.test", g.port[EXPIRED], OB__HTTP_E_TLS_EXPIRED,
                 "expired");
  expect_no_request_on(EXPIRED);
}

static void test_not_yet_valid(void** state) {
  expect_refused(*state, "sqs.test", g.port[FUTURE], OB__HTTP_E_TLS_FUTURE,
                 "future");
  expect_no_request_on(FUTURE);
}

static void test_untrusted(void** state) {
  expect_refused(*state, "sqs.test", g.port[UNTRUSTED],
                 OB__HTTP_E_TLS_UNTRUSTED, "trusted");
  expect_no_request_on(UNTRUSTED);
}

/* The system bundle does not know the test CA. */
static void test_system_bundle_rejects_test_ca(void** state) {
  fix_t* f = *state;
  f->cfg.ca_file = NULL;
  expect_refused(f, "sqs.test", g.port[GOOD], OB__HTTP_E_TLS_UNTRUSTED, NULL);
}

static void test_tls11_only_server(void** state) {
  fix_t* f = *state;
  char* crt = ts_path(g.dir, "good.crt");
  char* key = ts_path(g.dir, "good.key");
  const char* argv[] = {"openssl", "s_server", "-accept", "127.0.0.1:0",
                        "-cert", crt, "-key", key, "-tls1_1", "-cipher",
                        "DEFAULT:@SECLEVEL=0", NULL};
  int port;
  char* log;
  f->extra_out = ts_path(g.dir, "s_server.out");
  f->extra = ht_spawn(argv, f->extra_out);
  free(crt);
  free(key);
  assert_non_null(f->extra);
  port = ht_wait_number(f->extra, "ACCEPT 127.0.0.1:", 10000);
  assert_true(port > 0);
  expect_refused(f, "sqs.test", port, OB__HTTP_E_TLS_PROTOCOL, "TLS 1.2");
  /* s_server prints what it receives: no request line may be there. */
  log = ht_output(f->extra);
  assert_null(strstr(log, "must-not-arrive"));
  free(log);
}

/* socat relays to the good server but passes only its first 200 bytes
** back, then closes: the ServerHello/Certificate flight is cut. */
static void test_truncated_handshake(void** state) {
  fix_t* f = *state;
  char target[64];
  int before = count_server_lines("REQ", GOOD);
  int port;
  snprintf(target, sizeof target, "TCP:127.0.0.1:%d,readbytes=200",
           g.port[GOOD]);
  {
    const char* argv[] = {"socat", "-d", "-d",
                          "TCP-LISTEN:0,bind=127.0.0.1,reuseaddr", target,
                          NULL};
    f->extra_out = ts_path(g.dir, "socat.out");
    f->extra = ht_spawn(argv, f->extra_out);
  }
  assert_non_null(f->extra);
  port = ht_wait_number(f->extra, "listening on AF=2 127.0.0.1:", 10000);
  assert_true(port > 0);
  expect_refused(f, "sqs.test", port, OB__HTTP_E_TLS_HANDSHAKE_EOF,
                 "handshake");
  assert_int_equal(count_server_lines("REQ", GOOD), before);
}

static void test_silent_server(void** state) {
  fix_t* f = *state;
  struct sockaddr_in a;
  socklen_t len = sizeof a;
  int lfd = socket(AF_INET, SOCK_STREAM, 0);
  int cfd;
  uint64_t t0;
  unsigned char buf[4096];
  ssize_t n;

  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_int_equal(bind(lfd, (struct sockaddr*)&a, sizeof a), 0);
  assert_int_equal(listen(lfd, 4), 0);  /* the kernel accepts; we never talk */
  assert_int_equal(getsockname(lfd, (struct sockaddr*)&a, &len), 0);
  f->cfg.connect_timeout_ms = 700;
  t0 = ht_now_ms();
  expect_refused(f, "sqs.test", ntohs(a.sin_port), OB__HTTP_E_CONNECT_TIMEOUT,
                 "TLS handshake");
  assert_true(ht_now_ms() - t0 < 3000);
  /* What reached the server: a ClientHello, and nothing of the request. */
  cfd = accept(lfd, NULL, NULL);
  assert_true(cfd >= 0);
  n = recv(cfd, buf, sizeof buf - 1, MSG_DONTWAIT);
  assert_true(n > 5);
  assert_int_equal(buf[0], 0x16); /* TLS handshake record */
  buf[n] = 0;
  assert_false(has_bytes(buf, (size_t)n, "must-not-arrive"));
  assert_false(has_bytes(buf, (size_t)n, "HTTP/1.1"));
  close(cfd);
  close(lfd);
}

static void test_connection_refused(void** state) {
  int port = ht_free_port();
  assert_true(port > 0);
  expect_refused(*state, "sqs.test", port, OB__HTTP_E_CONNECT, "refused");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_good_get, setup, teardown),
      cmocka_unit_test_setup_teardown(test_good_post_large, setup, teardown),
      cmocka_unit_test_setup_teardown(test_keepalive_tls_100, setup, teardown),
      cmocka_unit_test_setup_teardown(test_good_localhost_dns, setup, teardown),
      cmocka_unit_test_setup_teardown(test_wrong_hostname, setup, teardown),
      cmocka_unit_test_setup_teardown(test_ip_literal_is_checked, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_expired, setup, teardown),
      cmocka_unit_test_setup_teardown(test_not_yet_valid, setup, teardown),
      cmocka_unit_test_setup_teardown(test_untrusted, setup, teardown),
      cmocka_unit_test_setup_teardown(test_system_bundle_rejects_test_ca, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_tls11_only_server, setup, teardown),
      cmocka_unit_test_setup_teardown(test_truncated_handshake, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_silent_server, setup, teardown),
      cmocka_unit_test_setup_teardown(test_connection_refused, setup, teardown),
  };
  return cmocka_run_group_tests_name("http_tls_matrix", tests, group_setup,
                                     group_teardown);
}
