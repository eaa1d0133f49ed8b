/* SPDX-License-Identifier: Apache-2.0 */
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
**
** TLS parameters (docs/security.md): one openssl s_server per refused
** parameter, offering only it; a control run of openssl s_client first
** shows the server really negotiates it, so the refusal is the allow-list's.
** One accepted case per allowed family (s_server -www: its status page
** also shows the groups and signature algorithms our ClientHello offered).
** TLS versions: servers that speak 1.3 only, 1.2 only, and both. With
** mbedTLS 3.6 the client speaks 1.3 (preferred) with the same certificate
** and name checks; with 2.28 a 1.3-only server gets its own sentence.
** Which failure messages come from the plaintext records and which only
** from mbedTLS's error code (an encrypted TLS 1.3 flight) is said per
** case. Names: IP literals against
** iPAddress SANs only (IPv4, and IPv6 when ::1 exists), no wildcard for an
** IP, no CN fallback; and the clientAuth-only and 22 KB certificates.
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

#include "platform/http/tls_compat.h"
#include "tests/integration/http/http_test_util.h"
#include "tests/support/testsupport.h"

enum {
  GOOD, WRONG, EXPIRED, FUTURE, UNTRUSTED, IP, IP_AS_DNS, IP_WILDCARD,
  CN_ONLY, CN_ONLY_IP, EKU_CLIENT, BIG, NSERVERS
};
static const char* const k_names[NSERVERS] = {
    "good", "wrong", "expired", "future", "untrusted", "ip", "ip-as-dns",
    "ip-wildcard", "cn-only", "cn-only-ip", "eku-client", "big"};

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
  if (ht_gen_pki_extra(g.dir) != 0) {
    fprintf(stderr, "gen_pki.sh failed (need openssl and faketime)\n");
    return -1;
  }
  g.ca = ts_path(g.dir, "ca.crt");
  script = ht_script("tls_server.mjs");
  out = ts_path(g.dir, "tls_server.out");
  {
    const char* argv[NSERVERS + 4];
    argv[0] = "node";
    argv[1] = script;
    argv[2] = g.dir;
    for (int i = 0; i < NSERVERS; i++) argv[3 + i] = k_names[i];
    argv[3 + NSERVERS] = NULL;
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

/* A new output file for each server process: a previous one's "ACCEPT"
** line must not be read before the child has truncated its file. */
static char* new_out_path(const char* stem) {
  static int seq;
  char name[64];
  snprintf(name, sizeof name, "%s-%d.out", stem, ++seq);
  return ts_path(g.dir, name);
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
** name is followed by a space or the end of the line ("ip" is a prefix of
** "ip-as-dns"). */
static int count_server_lines(const char* kind, int who) {
  char prefix[64];
  snprintf(prefix, sizeof prefix, "%s %s%s", kind, k_names[who],
           strcmp(kind, "SECURE") == 0 ? "\n" : " ");
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
  if (f->client != NULL) {  /* a second attempt in the same test */
    ht_close_client(&f->loop, f->client);
    f->client = NULL;
  }
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
  f->extra_out = new_out_path("s_server");
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
    f->extra_out = new_out_path("socat");
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

/* ---- TLS parameters against openssl s_server ----------------------------- */

/* openssl s_server with the PKI's `cert`, on 127.0.0.1 or [::1], as this
** test's extra server; args end with NULL. www: answer GET with a status
** page (HTTP/1.0), else print what arrives. Returns the port. */
static int s_server(fix_t* f, const char* cert, int v6, int www,
                    const char* const* args) {
  char file[64];
  char* crt;
  char* key;
  const char* argv[32];
  int n = 0, port;

  snprintf(file, sizeof file, "%s.crt", cert);
  crt = ts_path(g.dir, file);
  snprintf(file, sizeof file, "%s.key", cert);
  key = ts_path(g.dir, file);
  argv[n++] = "openssl";
  argv[n++] = "s_server";
  argv[n++] = "-accept";
  argv[n++] = v6 ? "[::1]:0" : "127.0.0.1:0";
  argv[n++] = "-cert";
  argv[n++] = crt;
  argv[n++] = "-key";
  argv[n++] = key;
  if (www) argv[n++] = "-www";
  for (size_t i = 0; args != NULL && args[i] != NULL && n < 31; i++)
    argv[n++] = args[i];
  argv[n] = NULL;
  f->extra_out = new_out_path("s_server");
  f->extra = ht_spawn(argv, f->extra_out);
  free(crt);
  free(key);
  assert_non_null(f->extra);
  port = ht_wait_number(f->extra, v6 ? "ACCEPT [::1]:" : "ACCEPT 127.0.0.1:",
                        10000);
  if (port <= 0) {
    char* o = ht_output(f->extra);
    fprintf(stderr, "s_server did not start:\n%s\n", o);
    free(o);
  }
  assert_true(port > 0);
  return port;
}

/* The control: openssl s_client, allowed the weak parameter, negotiates it
** with this server (its summary holds `want`). 0 when this openssl will
** not (Debian 13's openssl 3.5 no longer offers P-192, P-224 or 1024-bit
** DH even at SECLEVEL=0): then the case cannot be run against it here,
** and tests/unit/http_tls covers it with a server on memory buffers. */
static int control(int port, const char* args, const char* want) {
  char cmd[1024];
  char out[16384];
  size_t n;
  FILE* p;
  char* ca = ts_path(g.dir, "ca.crt");
  snprintf(cmd, sizeof cmd,
           "openssl s_client -connect 127.0.0.1:%d -servername sqs.test "
           "-CAfile '%s' -tls1_2 %s </dev/null 2>&1",
           port, ca, args);
  free(ca);
  p = popen(cmd, "r");
  assert_non_null(p);
  n = fread(out, 1, sizeof out - 1, p);
  out[n] = '\0';
  pclose(p);
  if (strstr(out, want) == NULL) {
    printf("  control: this openssl does not negotiate '%s' (%s)\n", want,
           args);
    return 0;
  }
  printf("  control: openssl s_client %s -> %s\n", args, want);
  return 1;
}

/* "... none of the TLS 1.2 parameters" (2.28), "... TLS 1.2 or 1.3
** parameters" (3.6): named from the plaintext handshake_failure alert. */
static const char k_none_common[] = "accepts none of the TLS 1.2";

/* A server offering only one refused parameter: refused with the sentence,
** and nothing of the request reached it. */
static void refuse_case(fix_t* f, const char* cert, const char* const* args,
                        const char* control_args, const char* control_want) {
  int port = s_server(f, cert, 0, 0, args);
  char* log;
  if (!control(port, control_args, control_want)) skip();
  expect_refused(f, "sqs.test", port, OB__HTTP_E_TLS_PROTOCOL, k_none_common);
  log = ht_output(f->extra);
  assert_null(strstr(log, "must-not-arrive"));
  free(log);
}

static void test_refuse_aes128_sha(void** state) {
  const char* args[] = {"-tls1_2", "-cipher", "AES128-SHA", NULL};
  refuse_case(*state, "rsa", args, "-cipher AES128-SHA",
              "Cipher is AES128-SHA");
}

static void test_refuse_rsa_kx_aes256_gcm(void** state) {
  const char* args[] = {"-tls1_2", "-cipher", "AES256-GCM-SHA384", NULL};
  refuse_case(*state, "rsa", args, "-cipher AES256-GCM-SHA384",
              "Cipher is AES256-GCM-SHA384");
}

static void test_refuse_ccm8(void** state) {
  const char* args[] = {"-tls1_2", "-cipher",
                        "ECDHE-ECDSA-AES128-CCM8:@SECLEVEL=0", NULL};
  refuse_case(*state, "good", args,
              "-cipher ECDHE-ECDSA-AES128-CCM8:@SECLEVEL=0",
              "Cipher is ECDHE-ECDSA-AES128-CCM8");
}

static void test_refuse_dhe_1024(void** state) {
  char* dh = ts_path(g.dir, "dh1024.pem");
  const char* args[] = {"-tls1_2", "-cipher",
                        "DHE-RSA-AES128-GCM-SHA256:@SECLEVEL=0", "-dhparam",
                        dh, NULL};
  refuse_case(*state, "rsa", args,
              "-cipher DHE-RSA-AES128-GCM-SHA256:@SECLEVEL=0",
              "Server Temp Key: DH, 1024 bits");
  free(dh);
}

/* The control offers P-256 too: in TLS 1.2 the client's groups must hold
** the curve of the server's ECDSA key (P-256 here). */
static void test_refuse_p192(void** state) {
  const char* args[] = {"-tls1_2", "-groups", "P-192", "-cipher",
                        "DEFAULT:@SECLEVEL=0", NULL};
  refuse_case(*state, "good", args,
              "-cipher DEFAULT:@SECLEVEL=0 -groups P-192:P-256",
              "Server Temp Key: ECDH, prime192v1, 192 bits");
}

static void test_refuse_p224(void** state) {
  const char* args[] = {"-tls1_2", "-groups", "P-224", NULL};
  refuse_case(*state, "good", args, "-groups P-224:P-256",
              "Server Temp Key: ECDH, secp224r1, 224 bits");
}

static void test_refuse_sha1_signatures(void** state) {
  const char* args[] = {"-tls1_2", "-sigalgs", "ECDSA+SHA1", "-cipher",
                        "DEFAULT:@SECLEVEL=0", NULL};
  refuse_case(*state, "good", args,
              "-cipher DEFAULT:@SECLEVEL=0 -sigalgs ECDSA+SHA1",
              "Peer signing digest: SHA1");
}

/* The status page's line starting with prefix (copied), or "". */
static void page_line(const char* body, const char* prefix, char* out,
                      size_t cap) {
  const char* p = strstr(body, prefix);
  size_t n = 0;
  out[0] = '\0';
  if (p == NULL) return;
  while (p[n] && p[n] != '\n' && n + 1 < cap) n++;
  memcpy(out, p, n);
  out[n] = '\0';
}

/* An allowed family: the request is served, with the suite and group
** wanted; the page also shows what our ClientHello offered. */
static void accept_case(fix_t* f, const char* cert, int v6, const char* host,
                        const char* const* args, const char* cipher,
                        const char* group) {
  int port = s_server(f, cert, v6, 1, args);
  char url[128];
  char line[512];
  ht_result_t r;
  snprintf(url, sizeof url, "https://%s:%d/page", host, port);
  open_client(f);
  if (ht_fetch(&f->loop, f->client, "GET", url, NULL, 0, 0, &r) != 0)
    fail_msg("%s: %s", url, r.detail);
  assert_int_equal(r.http_status, 200);
  if (cipher != NULL) {
    char want[96];
    snprintf(want, sizeof want, "Cipher is %s", cipher);
    assert_non_null(strstr(r.body, want));
  }
  if (group != NULL) {
    char want[96];
    snprintf(want, sizeof want, "Shared groups: %s\n", group);
    assert_non_null(strstr(r.body, want));
  }
  page_line(r.body, "Supported groups: ", line, sizeof line);
  assert_string_equal(line, "Supported groups: x25519:secp256r1:secp384r1");
  page_line(r.body, "Signature Algorithms: ", line, sizeof line);
  assert_true(line[0] != '\0');
  assert_null(strstr(line, "SHA1"));
  assert_null(strstr(line, "SHA224"));
  page_line(r.body, "New, ", line, sizeof line);
  printf("  %s (%s)\n", line, group ? group : "-");
  ht_result_free(&r);
}

/* What the SQS endpoints negotiate (docs/security.md): ECDHE-RSA with
** AES-GCM on P-256, an RSA certificate. */
static void test_accept_sqs_like_aes128(void** state) {
  const char* args[] = {"-tls1_2", "-cipher", "ECDHE-RSA-AES128-GCM-SHA256",
                        "-groups", "P-256", NULL};
  accept_case(*state, "rsa", 0, "sqs.test", args,
              "ECDHE-RSA-AES128-GCM-SHA256", "secp256r1");
}

static void test_accept_sqs_like_aes256(void** state) {
  const char* args[] = {"-tls1_2", "-cipher", "ECDHE-RSA-AES256-GCM-SHA384",
                        "-groups", "P-256", NULL};
  accept_case(*state, "rsa", 0, "sqs.test", args,
              "ECDHE-RSA-AES256-GCM-SHA384", "secp256r1");
}

static void test_accept_chacha20(void** state) {
  const char* args[] = {"-tls1_2", "-cipher", "ECDHE-ECDSA-CHACHA20-POLY1305",
                        NULL};
  accept_case(*state, "good", 0, "sqs.test", args,
              "ECDHE-ECDSA-CHACHA20-POLY1305", NULL);
}

static void test_accept_x25519(void** state) {
  const char* args[] = {"-tls1_2", "-groups", "X25519", NULL};
  accept_case(*state, "good", 0, "sqs.test", args, NULL, "x25519");
}

static void test_accept_p384(void** state) {
  const char* args[] = {"-tls1_2", "-groups", "P-384", NULL};
  accept_case(*state, "good", 0, "sqs.test", args, NULL, "secp384r1");
}

/* ---- TLS versions ---------------------------------------------------------- */

/* A request to an openssl s_server -www speaking what args allow: served,
** and the version the client reports (ob__http_client_stats) is want,
** as the server's status page says too ("New, TLSv1.3, Cipher is ..."). */
static void version_case(fix_t* f, const char* const* args, const char* want) {
  int port = s_server(f, "good", 0, 1, args);
  char url[128];
  char line[256];
  ht_result_t r;
  ob__http_stats_t st;
  snprintf(url, sizeof url, "https://sqs.test:%d/page", port);
  open_client(f);
  if (ht_fetch(&f->loop, f->client, "GET", url, NULL, 0, 0, &r) != 0)
    fail_msg("%s: %s", url, r.detail);
  assert_int_equal(r.http_status, 200);
  ob__http_client_stats(f->client, &st);
  assert_string_equal(st.tls_version, want);
  snprintf(line, sizeof line, "New, %s, ", want);
  assert_non_null(strstr(r.body, line));
  if (strcmp(want, "TLSv1.3") == 0)
    assert_int_equal(strncmp(st.tls_suite, "TLS1-3-", 7), 0);
  else
    assert_int_equal(strncmp(st.tls_suite, "TLS-ECDHE-", 10), 0);
  page_line(r.body, "New, ", line, sizeof line);
  printf("  client: %s %s; server: %s\n", st.tls_version, st.tls_suite, line);
  ht_result_free(&r);
}

/* mbedTLS 3.6: TLS 1.3 with the certificate and name checks. 2.28: the
** server's protocol_version alert answers our ClientHello in the clear, so
** the records name it. */
static void test_tls13_only_server(void** state) {
  fix_t* f = *state;
  const char* args[] = {"-tls1_3", NULL};
  int port;
  char* log;
  if (OB__TLS_HAVE_13) {
    version_case(f, args, "TLSv1.3");
    return;
  }
  port = s_server(f, "good", 0, 0, args);
  expect_refused(f, "sqs.test", port, OB__HTTP_E_TLS_PROTOCOL,
                 "requires TLS 1.3");
  expect_refused(f, "sqs.test", port, OB__HTTP_E_TLS_PROTOCOL,
                 "mbedTLS 2.28 does not speak");
  log = ht_output(f->extra);
  assert_null(strstr(log, "must-not-arrive"));
  free(log);
}

static void test_tls12_only_server(void** state) {
  const char* args[] = {"-tls1_2", NULL};
  version_case(*state, args, "TLSv1.2");
}

/* Both versions on offer: the newest this build speaks. */
static void test_mixed_server(void** state) {
  const char* args[] = {NULL};
  version_case(*state, args, OB__TLS_HAVE_13 ? "TLSv1.3" : "TLSv1.2");
}

/* Under TLS 1.3 the same client refuses a wrong name, a self-signed
** certificate and an expired one (mbedTLS's verify flags, read through its
** public API; the certificate itself is encrypted), before its Finished:
** no request byte reaches the server. */
static void test_tls13_refusals(void** state) {
  static const struct {
    const char* cert;
    int want;
    const char* has;
  } k[] = {
      {"wrong", OB__HTTP_E_TLS_HOSTNAME, "DNS:wrong.test"},
      {"self-signed", OB__HTTP_E_TLS_UNTRUSTED, "not signed by a trusted CA"},
      {"expired", OB__HTTP_E_TLS_EXPIRED, "expired"},
  };
  fix_t* f = *state;
  const char* args[] = {"-tls1_3", NULL};
  if (!OB__TLS_HAVE_13) {
    printf("  skipped: this build's mbedTLS (%s) does not speak TLS 1.3\n",
           MBEDTLS_VERSION_STRING);
    skip();
  }
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
    int port = s_server(f, k[i].cert, 0, 0, args);
    char* log;
    expect_refused(f, "sqs.test", port, k[i].want, k[i].has);
    log = ht_output(f->extra);
    assert_null(strstr(log, "must-not-arrive"));
    free(log);
    ht_stop(f->extra);
    f->extra = NULL;
    free(f->extra_out);
    f->extra_out = NULL;
  }
}

/* A server that demands a client certificate (we send none) answers with
** a fatal alert. TLS 1.2: before its ChangeCipherSpec, in the clear, so
** the records name it. TLS 1.3: under the handshake keys, encrypted, and
** mbedTLS 3.6 has no getter for it: only its error code says an alert
** came. Either way nothing was served. */
static void test_client_certificate_demanded(void** state) {
  fix_t* f = *state;
  const char* v12[] = {"-tls1_2", "-Verify", "1", NULL};
  const char* v13[] = {"-tls1_3", "-Verify", "1", NULL};
  for (int i = 0; i < (OB__TLS_HAVE_13 ? 2 : 1); i++) {
    int port = s_server(f, "good", 0, 1, i == 0 ? v12 : v13);
    char url[128];
    ht_result_t r;
    int rc;
    snprintf(url, sizeof url, "https://sqs.test:%d/must-not-arrive", port);
    if (f->client != NULL) {
      ht_close_client(&f->loop, f->client);
      f->client = NULL;
    }
    open_client(f);
    rc = ht_fetch(&f->loop, f->client, "GET", url, NULL, 0, 0, &r);
    printf("  %s: %s: %s\n", i == 0 ? "TLS 1.2" : "TLS 1.3",
           ob__http_err_name(rc), r.detail);
    assert_int_equal(rc, OB__HTTP_E_TLS);
    assert_int_equal(r.http_status, 0);
    if (i == 0) {
      assert_non_null(strstr(r.detail, "sent a fatal "));
      assert_null(strstr(r.detail, "encrypted"));
      assert_null(strstr(r.detail, "unknown alert"));
    } else {
      assert_non_null(strstr(r.detail, "sent a fatal alert"));
      assert_non_null(strstr(r.detail, "it was encrypted (TLS 1.3"));
    }
    ht_result_free(&r);
    ht_stop(f->extra);
    f->extra = NULL;
    free(f->extra_out);
    f->extra_out = NULL;
  }
}

/* ---- names and certificates -------------------------------------------- */

static void test_ipv4_literal_ip_san(void** state) {
  fix_t* f = *state;
  ht_result_t r;
  char* url = url_for("127.0.0.1", g.port[IP], "/by-ip");
  open_client(f);
  if (ht_fetch(&f->loop, f->client, "GET", url, NULL, 0, 0, &r) != 0)
    fail_msg("%s", r.detail);
  assert_string_equal(r.body, "hello GET /by-ip 0");
  ht_result_free(&r);
  free(url);
}

static void test_ipv6_literal_ip_san(void** state) {
  const char* args[] = {"-tls1_2", NULL};
  if (!ht_have_ipv6_loopback()) {
    printf("  skipped: no ::1 on this machine\n");
    skip();
  }
  accept_case(*state, "ip", 1, "[::1]", args, NULL, NULL);
}

static void test_ip_literal_dns_san_refused(void** state) {
  expect_refused(*state, "127.0.0.1", g.port[IP_AS_DNS],
                 OB__HTTP_E_TLS_HOSTNAME, "has no iPAddress entry");
  expect_no_request_on(IP_AS_DNS);
}

static void test_ipv6_literal_dns_san_refused(void** state) {
  fix_t* f = *state;
  const char* args[] = {"-tls1_2", NULL};
  int port;
  char* log;
  if (!ht_have_ipv6_loopback()) {
    printf("  skipped: no ::1 on this machine\n");
    skip();
  }
  port = s_server(f, "ip-as-dns", 1, 0, args);
  expect_refused(f, "[::1]", port, OB__HTTP_E_TLS_HOSTNAME, "DNS:::1");
  log = ht_output(f->extra);
  assert_null(strstr(log, "must-not-arrive"));
  free(log);
}

static void test_ip_literal_wildcard_refused(void** state) {
  expect_refused(*state, "127.0.0.1", g.port[IP_WILDCARD],
                 OB__HTTP_E_TLS_HOSTNAME, "DNS:*.0.0.1");
  expect_no_request_on(IP_WILDCARD);
}

static void test_cn_only_refused(void** state) {
  fix_t* f = *state;
  expect_refused(f, "sqs.test", g.port[CN_ONLY], OB__HTTP_E_TLS_HOSTNAME,
                 "the CN is never used");
  expect_no_request_on(CN_ONLY);
  expect_refused(f, "127.0.0.1", g.port[CN_ONLY_IP], OB__HTTP_E_TLS_HOSTNAME,
                 "no subjectAltName extension");
  expect_no_request_on(CN_ONLY_IP);
}

static void test_eku_client_only(void** state) {
  expect_refused(*state, "sqs.test", g.port[EKU_CLIENT], OB__HTTP_E_TLS_CERT,
                 "not for server authentication");
  expect_no_request_on(EKU_CLIENT);
}

static void test_big_certificate(void** state) {
  expect_refused(*state, "sqs.test", g.port[BIG], OB__HTTP_E_TLS_CERT,
                 "too large for this build");
  expect_no_request_on(BIG);
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
      /* TLS parameters */
      cmocka_unit_test_setup_teardown(test_refuse_aes128_sha, setup, teardown),
      cmocka_unit_test_setup_teardown(test_refuse_rsa_kx_aes256_gcm, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_refuse_ccm8, setup, teardown),
      cmocka_unit_test_setup_teardown(test_refuse_dhe_1024, setup, teardown),
      cmocka_unit_test_setup_teardown(test_refuse_p192, setup, teardown),
      cmocka_unit_test_setup_teardown(test_refuse_p224, setup, teardown),
      cmocka_unit_test_setup_teardown(test_refuse_sha1_signatures, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_accept_sqs_like_aes128, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_accept_sqs_like_aes256, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_accept_chacha20, setup, teardown),
      cmocka_unit_test_setup_teardown(test_accept_x25519, setup, teardown),
      cmocka_unit_test_setup_teardown(test_accept_p384, setup, teardown),
      /* TLS versions */
      cmocka_unit_test_setup_teardown(test_tls13_only_server, setup, teardown),
      cmocka_unit_test_setup_teardown(test_tls12_only_server, setup, teardown),
      cmocka_unit_test_setup_teardown(test_mixed_server, setup, teardown),
      cmocka_unit_test_setup_teardown(test_tls13_refusals, setup, teardown),
      cmocka_unit_test_setup_teardown(test_client_certificate_demanded, setup,
                                      teardown),
      /* names and certificates */
      cmocka_unit_test_setup_teardown(test_ipv4_literal_ip_san, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_ipv6_literal_ip_san, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_ip_literal_dns_san_refused, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_ipv6_literal_dns_san_refused, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_ip_literal_wildcard_refused, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_cn_only_refused, setup, teardown),
      cmocka_unit_test_setup_teardown(test_eku_client_only, setup, teardown),
      cmocka_unit_test_setup_teardown(test_big_certificate, setup, teardown),
  };
  return cmocka_run_group_tests_name("http_tls_matrix", tests, group_setup,
                                     group_teardown);
}
