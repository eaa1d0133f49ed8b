/*
** The TLS engine (platform/http/tls.c) with no sockets: byte queues only.
** A real mbedTLS server runs in the same process on memory buffers, with
** certificates from gen_pki.sh (openssl + faketime, generated now).
**   - no hostname: refused before any byte is produced
**   - the CA bundle must load something
**   - handshake, data both ways and close_notify through a tiny outgoing cap
**   - certificate and protocol failures map to their specific codes
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <mbedtls/pk.h>

#include "platform/http/http_int.h"
#include "tests/integration/http/http_test_util.h"
#include "tests/support/testsupport.h"

static char* g_dir;
static char* g_ca;
static ob__tls_conf_t g_conf;  /* client side, trusts the test CA */

static int group_setup(void** state) {
  char err[256] = "";
  (void)state;
  g_dir = ts_mkdtemp("http-tls-unit");
  if (ht_gen_pki(g_dir) != 0) return -1;
  g_ca = ts_path(g_dir, "ca.crt");
  if (ob__tls_conf_init(&g_conf, g_ca, err, sizeof err) != 0) {
    fprintf(stderr, "%s\n", err);
    return -1;
  }
  return 0;
}

static int group_teardown(void** state) {
  (void)state;
  ob__tls_conf_free(&g_conf);
  free(g_ca);
  ts_rmdir(g_dir);
  return 0;
}

/* ---- an in-memory mbedTLS server ---------------------------------------- */

typedef struct {
  uint8_t* p;
  size_t len, cap;
} qbuf_t;

static void q_put(qbuf_t* q, const void* d, size_t n) {
  if (q->len + n > q->cap) {
    q->cap = (q->len + n) * 2;
    q->p = realloc(q->p, q->cap);
    assert_non_null(q->p);
  }
  memcpy(q->p + q->len, d, n);
  q->len += n;
}

typedef struct {
  mbedtls_entropy_context entropy;
  mbedtls_ctr_drbg_context drbg;
  mbedtls_x509_crt crt;
  mbedtls_pk_context key;
  mbedtls_ssl_config conf;
  mbedtls_ssl_context ssl;
  qbuf_t in;   /* from the client */
  qbuf_t out;  /* to the client */
} srv_t;

static int srv_send(void* ctx, const unsigned char* b, size_t n) {
  q_put(&((srv_t*)ctx)->out, b, n);
  return (int)n;
}

static int srv_recv(void* ctx, unsigned char* b, size_t n) {
  srv_t* s = ctx;
  if (s->in.len == 0) return MBEDTLS_ERR_SSL_WANT_READ;
  if (n > s->in.len) n = s->in.len;
  memcpy(b, s->in.p, n);
  memmove(s->in.p, s->in.p + n, s->in.len - n);
  s->in.len -= n;
  return (int)n;
}

static void srv_init(srv_t* s, const char* name, int max_minor) {
  char* crt = NULL;
  char* key = NULL;
  char file[64];
  memset(s, 0, sizeof *s);
  mbedtls_entropy_init(&s->entropy);
  mbedtls_ctr_drbg_init(&s->drbg);
  mbedtls_x509_crt_init(&s->crt);
  mbedtls_pk_init(&s->key);
  mbedtls_ssl_config_init(&s->conf);
  mbedtls_ssl_init(&s->ssl);
  assert_int_equal(mbedtls_ctr_drbg_seed(&s->drbg, mbedtls_entropy_func,
                                         &s->entropy, NULL, 0),
                   0);
  snprintf(file, sizeof file, "%s.crt", name);
  crt = ts_path(g_dir, file);
  snprintf(file, sizeof file, "%s.key", name);
  key = ts_path(g_dir, file);
  assert_int_equal(mbedtls_x509_crt_parse_file(&s->crt, crt), 0);
  assert_int_equal(mbedtls_pk_parse_keyfile(&s->key, key, NULL), 0);
  free(crt);
  free(key);
  assert_int_equal(mbedtls_ssl_config_defaults(&s->conf, MBEDTLS_SSL_IS_SERVER,
                                               MBEDTLS_SSL_TRANSPORT_STREAM,
                                               MBEDTLS_SSL_PRESET_DEFAULT),
                   0);
  mbedtls_ssl_conf_rng(&s->conf, mbedtls_ctr_drbg_random, &s->drbg);
  mbedtls_ssl_conf_min_version(&s->conf, 3, 1);
  mbedtls_ssl_conf_max_version(&s->conf, 3, max_minor);
  assert_int_equal(mbedtls_ssl_conf_own_cert(&s->conf, &s->crt, &s->key), 0);
  assert_int_equal(mbedtls_ssl_setup(&s->ssl, &s->conf), 0);
  mbedtls_ssl_set_bio(&s->ssl, s, srv_send, srv_recv, NULL);
}

static void srv_free(srv_t* s) {
  mbedtls_ssl_free(&s->ssl);
  mbedtls_ssl_config_free(&s->conf);
  mbedtls_pk_free(&s->key);
  mbedtls_x509_crt_free(&s->crt);
  mbedtls_ctr_drbg_free(&s->drbg);
  mbedtls_entropy_free(&s->entropy);
  free(s->in.p);
  free(s->out.p);
}

/* Move client ciphertext to the server, checking the cap on every take. */
static size_t move_c2s(ob__tls_t* t, srv_t* s) {
  uint8_t* b;
  size_t n;
  assert_true(ob__tls_out_len(t) <= t->out_cap);
  ob__tls_take_out(t, &b, &n);
  if (n > 0) q_put(&s->in, b, n);
  free(b);
  return n;
}

static void move_s2c(srv_t* s, ob__tls_t* t) {
  if (s->out.len == 0) return;
  assert_int_equal(ob__tls_feed(t, s->out.p, s->out.len), 0);
  s->out.len = 0;
}

/* Run both handshakes until neither makes progress. Returns the client's
** last result (0 when done). */
static int handshake(ob__tls_t* t, srv_t* s, int* srv_rc) {
  int crc = OB__TLS_AGAIN;
  int src = MBEDTLS_ERR_SSL_WANT_READ;
  for (int i = 0; i < 1000; i++) {
    if (crc == OB__TLS_AGAIN) crc = ob__tls_handshake(t);
    move_c2s(t, s);
    if (src == MBEDTLS_ERR_SSL_WANT_READ || src == MBEDTLS_ERR_SSL_WANT_WRITE)
      src = mbedtls_ssl_handshake(&s->ssl);
    move_s2c(s, t);
    if (crc != OB__TLS_AGAIN && src != MBEDTLS_ERR_SSL_WANT_READ) break;
    if (crc == 0 && src == 0) break;
  }
  if (srv_rc) *srv_rc = src;
  return crc;
}

/* ---- tests --------------------------------------------------------------- */

static void test_refuses_without_hostname(void** state) {
  ob__tls_t t;
  (void)state;
  assert_int_equal(ob__tls_init(&t, &g_conf, NULL, 0),
                   OB__HTTP_E_TLS_NO_HOSTNAME);
  /* Even if someone calls it anyway: no handshake, not a single byte. */
  assert_int_equal(ob__tls_handshake(&t), OB__HTTP_E_TLS_NO_HOSTNAME);
  assert_int_equal(ob__tls_out_len(&t), 0);
  assert_non_null(strstr(t.detail, "hostname"));
  ob__tls_free(&t);

  assert_int_equal(ob__tls_init(&t, &g_conf, "", 0), OB__HTTP_E_TLS_NO_HOSTNAME);
  assert_int_equal(ob__tls_handshake(&t), OB__HTTP_E_TLS_NO_HOSTNAME);
  assert_int_equal(ob__tls_out_len(&t), 0);
  ob__tls_free(&t);

  /* A zeroed engine that never saw init refuses too. */
  memset(&t, 0, sizeof t);
  mbedtls_ssl_init(&t.ssl);
  assert_int_equal(ob__tls_handshake(&t), OB__HTTP_E_TLS_NO_HOSTNAME);
  assert_int_equal(ob__tls_out_len(&t), 0);
  ob__tls_free(&t);
}

static void test_ca_bundle_must_load(void** state) {
  ob__tls_conf_t tc;
  char err[256];
  const char* files[] = {"empty.pem", "garbage.pem", "no-such-file.pem"};
  (void)state;
  for (size_t i = 0; i < 3; i++) {
    char* path = ts_path(g_dir, files[i]);
    err[0] = '\0';
    assert_int_equal(ob__tls_conf_init(&tc, path, err, sizeof err),
                     OB__HTTP_E_TLS_CA);
    assert_non_null(strstr(err, files[i]));  /* loud, with the path */
    free(path);
  }
  /* The system bundle loads (Debian's ca-certificates). */
  assert_int_equal(ob__tls_conf_init(&tc, NULL, err, sizeof err), 0);
  assert_true(tc.ca_count > 50);
  ob__tls_conf_free(&tc);
  assert_int_equal(ob__tls_conf_init(&tc, g_ca, err, sizeof err), 0);
  assert_int_equal(tc.ca_count, 1);
  ob__tls_conf_free(&tc);
}

static void test_client_open_fails_loudly_on_empty_bundle(void** state) {
  uv_loop_t loop;
  ob__http_client_t* c = (ob__http_client_t*)1;
  ob__http_config_t cfg;
  char err[256] = "";
  char* path = ts_path(g_dir, "empty.pem");
  (void)state;
  uv_loop_init(&loop);
  ob__http_config_init(&cfg);
  cfg.ca_file = path;
  assert_int_equal(ob__http_client_open(&c, &loop, &cfg, err, sizeof err),
                   OB__HTTP_E_TLS_CA);
  assert_null(c);
  assert_non_null(strstr(err, "empty.pem"));
  assert_int_equal(uv_loop_close(&loop), 0);
  free(path);
}

static void test_client_hello_and_sni(void** state) {
  ob__tls_t t;
  uint8_t* b;
  size_t n;
  (void)state;
  assert_int_equal(ob__tls_init(&t, &g_conf, "sqs.test", 0), 0);
  assert_int_equal(ob__tls_handshake(&t), OB__TLS_AGAIN);
  ob__tls_take_out(&t, &b, &n);
  assert_true(n > 40);
  assert_int_equal(b[0], 0x16);  /* handshake record */
  assert_int_equal(b[5], 0x01);  /* ClientHello */
  {
    int sni = 0;
    for (size_t i = 0; i + 8 <= n; i++)
      if (memcmp(b + i, "sqs.test", 8) == 0) sni = 1;
    assert_true(sni);  /* mbedtls_ssl_set_hostname also sets SNI */
  }
  free(b);
  assert_int_equal(ob__tls_out_len(&t), 0);
  ob__tls_free(&t);
}

/* The outgoing queue never exceeds its cap: 64 bytes at a time here. */
static void test_outgoing_cap(void** state) {
  ob__tls_t t;
  size_t total = 0;
  int rc;
  (void)state;
  assert_int_equal(ob__tls_init(&t, &g_conf, "sqs.test", 64), 0);
  for (int i = 0; i < 100; i++) {
    uint8_t* b;
    size_t n;
    rc = ob__tls_handshake(&t);
    assert_int_equal(rc, OB__TLS_AGAIN);
    assert_true(ob__tls_out_len(&t) <= 64);
    ob__tls_take_out(&t, &b, &n);
    free(b);
    total += n;
    if (n < 64) break;  /* the rest of the ClientHello fit */
  }
  assert_true(total > 64);
  ob__tls_free(&t);
}

static void test_handshake_data_close(void** state) {
  ob__tls_t t;
  srv_t s;
  int src;
  size_t n = 200 * 1024;
  uint8_t* msg = malloc(n);
  uint8_t* got = malloc(n);
  size_t off = 0, rcvd = 0;
  char buf[4096];
  (void)state;

  for (size_t i = 0; i < n; i++) msg[i] = (uint8_t)(i * 7);
  srv_init(&s, "good", 3);
  assert_int_equal(ob__tls_init(&t, &g_conf, "sqs.test", 1024), 0);
  assert_int_equal(handshake(&t, &s, &src), 0);
  assert_int_equal(src, 0);
  assert_int_equal(t.handshake_done, 1);

  /* Client -> server through a 1 KiB cap: many AGAINs, same arguments. */
  while (off < n) {
    size_t chunk = n - off > 16384 ? 16384 : n - off;
    int w = ob__tls_write(&t, msg + off, chunk);
    assert_true(w > 0 || w == OB__TLS_AGAIN);
    if (w > 0) off += (size_t)w;
    move_c2s(&t, &s);
    for (;;) {
      int r = mbedtls_ssl_read(&s.ssl, got + rcvd, n - rcvd);
      if (r <= 0) break;
      rcvd += (size_t)r;
    }
  }
  move_c2s(&t, &s);
  while (rcvd < n) {
    int r = mbedtls_ssl_read(&s.ssl, got + rcvd, n - rcvd);
    assert_true(r > 0);
    rcvd += (size_t)r;
  }
  assert_memory_equal(got, msg, n);

  /* Server -> client. */
  assert_int_equal(mbedtls_ssl_write(&s.ssl, (const unsigned char*)"pong", 4), 4);
  move_s2c(&s, &t);
  assert_int_equal(ob__tls_read(&t, buf, sizeof buf), 4);
  assert_memory_equal(buf, "pong", 4);
  assert_int_equal(ob__tls_read(&t, buf, sizeof buf), OB__TLS_AGAIN);

  /* Our close_notify reaches the server. */
  ob__tls_close_notify(&t);
  move_c2s(&t, &s);
  assert_int_equal(mbedtls_ssl_read(&s.ssl, (unsigned char*)buf, sizeof buf),
                   MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY);
  /* The server's close reads as 0 ("closed"). */
  mbedtls_ssl_close_notify(&s.ssl);
  move_s2c(&s, &t);
  assert_int_equal(ob__tls_read(&t, buf, sizeof buf), 0);

  ob__tls_free(&t);
  srv_free(&s);
  free(msg);
  free(got);
}

static void test_verify_failures_map(void** state) {
  static const struct {
    const char* cert;
    const char* host;
    int want;
  } k[] = {
      {"good", "other.test", OB__HTTP_E_TLS_HOSTNAME},
      {"wrong", "sqs.test", OB__HTTP_E_TLS_HOSTNAME},
      {"expired", "sqs.test", OB__HTTP_E_TLS_EXPIRED},
      {"future", "sqs.test", OB__HTTP_E_TLS_FUTURE},
      {"untrusted", "sqs.test", OB__HTTP_E_TLS_UNTRUSTED},
  };
  (void)state;
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
    ob__tls_t t;
    srv_t s;
    int rc;
    srv_init(&s, k[i].cert, 3);
    assert_int_equal(ob__tls_init(&t, &g_conf, k[i].host, 0), 0);
    rc = handshake(&t, &s, NULL);
    if (rc != k[i].want)
      fail_msg("%s/%s: got %s (%s)", k[i].cert, k[i].host,
               ob__http_err_name(rc), t.detail);
    assert_non_null(strstr(t.detail, k[i].host));
    assert_int_equal(t.handshake_done, 0);
    /* No application data can be written after a failure. */
    assert_int_equal(ob__tls_write(&t, "GET", 3), k[i].want);
    ob__tls_free(&t);
    srv_free(&s);
  }
}

static void test_tls11_refused(void** state) {
  ob__tls_t t;
  srv_t s;
  (void)state;
  srv_init(&s, "good", 2);  /* server speaks at most TLS 1.1 */
  assert_int_equal(ob__tls_init(&t, &g_conf, "sqs.test", 0), 0);
  assert_int_equal(handshake(&t, &s, NULL), OB__HTTP_E_TLS_PROTOCOL);
  ob__tls_free(&t);
  srv_free(&s);
}

static void test_eof_during_handshake(void** state) {
  ob__tls_t t;
  (void)state;
  assert_int_equal(ob__tls_init(&t, &g_conf, "sqs.test", 0), 0);
  assert_int_equal(ob__tls_handshake(&t), OB__TLS_AGAIN);
  assert_int_equal(ob__tls_feed(&t, "\x16\x03\x03\x00\x40\x02", 6), 0);
  ob__tls_feed_eof(&t);
  assert_int_equal(ob__tls_handshake(&t), OB__HTTP_E_TLS_HANDSHAKE_EOF);
  ob__tls_free(&t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_refuses_without_hostname),
      cmocka_unit_test(test_ca_bundle_must_load),
      cmocka_unit_test(test_client_open_fails_loudly_on_empty_bundle),
      cmocka_unit_test(test_client_hello_and_sni),
      cmocka_unit_test(test_outgoing_cap),
      cmocka_unit_test(test_handshake_data_close),
      cmocka_unit_test(test_verify_failures_map),
      cmocka_unit_test(test_tls11_refused),
      cmocka_unit_test(test_eof_during_handshake),
  };
  return cmocka_run_group_tests_name("http_tls", tests, group_setup,
                                     group_teardown);
}
