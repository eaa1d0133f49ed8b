/* SPDX-License-Identifier: Apache-2.0 */
/*
** The TLS engine (platform/http/tls.c) with no sockets: byte queues only.
** A real mbedTLS server runs in the same process on memory buffers, with
** certificates from gen_pki.sh (openssl + faketime, generated now). It
** speaks TLS 1.2 unless a test asks for 1.3 (mbedTLS 3.6 builds only).
**   - no hostname: refused before any byte is produced
**   - the CA bundle must load something
**   - handshake, data both ways and close_notify through a tiny outgoing cap
**   - certificate and protocol failures map to their specific codes
**   - the ClientHello offers exactly the allow-lists (suites, groups,
**     signature hashes) and no SNI for an IP literal
**   - a server that chooses a refused parameter anyway (the ClientHello is
**     rewritten on its way, as a server ignoring our lists would act) is
**     refused before any application byte, with a sentence naming it
**   - host names and IP literals: iPAddress SANs only for IPs, no wildcard
**     for an IP, no CN fallback, RFC 9525 wildcards for DNS names
**   - certificate usage, hash and key failures say what is wrong
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
#include "platform/http/tls_compat.h"
#include "tests/integration/http/http_test_util.h"
#include "tests/support/testsupport.h"

static char* g_dir;
static char* g_ca;
static ob__tls_conf_t g_conf;  /* client side, trusts the test CA */

static int group_setup(void** state) {
  char err[256] = "";
  (void)state;
  g_dir = ts_mkdtemp("http-tls-unit");
  if (ht_gen_pki_extra(g_dir) != 0) return -1;
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

/* What the test server offers beyond mbedTLS's defaults (NULL: default). */
typedef struct {
  const int* suites;
  const ob__tls_group_t* curves;
  const ob__tls_sig_t* hashes;
} srv_opts_t;

/* Server versions: at most TLS 1.2 (V12), or 1.3 too (V13). */
enum { V11 = 0x0302, V12 = 0x0303, V13 = 0x0304 };

static void srv_init_opts(srv_t* s, const char* name, int max_version,
                          const srv_opts_t* o);

static void srv_init(srv_t* s, const char* name, int max_version) {
  srv_init_opts(s, name, max_version, NULL);
}

static void srv_init_opts(srv_t* s, const char* name, int max_version,
                          const srv_opts_t* o) {
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
  assert_int_equal(ob__tls_pk_parse_keyfile(&s->key, key, &s->drbg), 0);
  free(crt);
  free(key);
  assert_int_equal(mbedtls_ssl_config_defaults(&s->conf, MBEDTLS_SSL_IS_SERVER,
                                               MBEDTLS_SSL_TRANSPORT_STREAM,
                                               MBEDTLS_SSL_PRESET_DEFAULT),
                   0);
  mbedtls_ssl_conf_rng(&s->conf, mbedtls_ctr_drbg_random, &s->drbg);
  /* mbedTLS 3 has no TLS 1.0 or 1.1. */
  ob__tls_conf_versions(&s->conf, OB__MBEDTLS3 ? V12 : 0x0301,
                        (uint16_t)max_version);
  assert_int_equal(mbedtls_ssl_conf_own_cert(&s->conf, &s->crt, &s->key), 0);
  if (o != NULL && o->suites != NULL)
    mbedtls_ssl_conf_ciphersuites(&s->conf, o->suites);
  if (o != NULL && o->curves != NULL) ob__tls_conf_groups(&s->conf, o->curves);
  if (o != NULL && o->hashes != NULL) ob__tls_conf_sigs(&s->conf, o->hashes);
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

/* Rewrites the client's first flight (the ClientHello) in place. */
typedef void (*tamper_fn)(uint8_t* b, size_t n);

/* Move client ciphertext to the server, the first flight through tamper. */
static size_t move_c2s_tamper(ob__tls_t* t, srv_t* s, tamper_fn tamper) {
  uint8_t* b;
  size_t n;
  assert_true(ob__tls_out_len(t) <= t->out_cap);
  ob__tls_take_out(t, &b, &n);
  if (n > 0 && tamper != NULL) tamper(b, n);
  if (n > 0) q_put(&s->in, b, n);
  free(b);
  return n;
}

/* Run both handshakes until neither makes progress. Returns the client's
** last result (0 when done). tamper, if not NULL, rewrites the ClientHello
** on its way to the server. */
static int handshake_tampered(ob__tls_t* t, srv_t* s, int* srv_rc,
                              tamper_fn tamper) {
  int crc = OB__TLS_AGAIN;
  int src = MBEDTLS_ERR_SSL_WANT_READ;
  for (int i = 0; i < 1000; i++) {
    if (crc == OB__TLS_AGAIN) crc = ob__tls_handshake(t);
    if (move_c2s_tamper(t, s, tamper) > 0) tamper = NULL;
    if (src == MBEDTLS_ERR_SSL_WANT_READ || src == MBEDTLS_ERR_SSL_WANT_WRITE)
      src = mbedtls_ssl_handshake(&s->ssl);
    move_s2c(s, t);
    if (crc != OB__TLS_AGAIN && src != MBEDTLS_ERR_SSL_WANT_READ) break;
    if (crc == 0 && src == 0) break;
  }
  if (srv_rc) *srv_rc = src;
  return crc;
}

static int handshake(ob__tls_t* t, srv_t* s, int* srv_rc) {
  return handshake_tampered(t, s, srv_rc, NULL);
}

/* ---- ClientHello parsing ------------------------------------------------- */

typedef struct {
  size_t suites, nsuites;    /* offset of the first suite, count */
  size_t groups, ngroups;    /* supported_groups list (0x000a) */
  size_t sigalgs, nsigalgs;  /* signature_algorithms list (0x000d) */
  int sni;                   /* server_name (0x0000) present */
} hello_t;

static unsigned get16(const uint8_t* p) { return (unsigned)(p[0] << 8 | p[1]); }

/* One record holding one ClientHello: the offsets of its lists. */
static void parse_hello(const uint8_t* b, size_t n, hello_t* h) {
  size_t p = 5 + 4 + 2 + 32; /* record, handshake header, version, random */
  size_t end, ext_end;
  memset(h, 0, sizeof *h);
  assert_true(n > p + 1);
  assert_int_equal(b[0], 0x16);
  assert_int_equal(b[5], 0x01);
  end = 5 + get16(b + 3);
  assert_true(end <= n);
  p += 1 + b[p];  /* session id */
  h->suites = p + 2;
  h->nsuites = get16(b + p) / 2;
  p += 2 + get16(b + p);
  p += 1 + b[p];  /* compression methods */
  ext_end = p + 2 + get16(b + p);
  assert_true(ext_end <= end);
  for (p += 2; p + 4 <= ext_end; p += 4 + get16(b + p + 2)) {
    unsigned type = get16(b + p);
    if (type == 0x0000) h->sni = 1;
    if (type == 0x000a) {
      h->groups = p + 6;
      h->ngroups = get16(b + p + 4) / 2;
    }
    if (type == 0x000d) {
      h->sigalgs = p + 6;
      h->nsigalgs = get16(b + p + 4) / 2;
    }
  }
}

/* Replace the 16-bit value `from` by `to` in the list at off (n items). */
static void replace16(uint8_t* b, size_t off, size_t n, unsigned from,
                      unsigned to) {
  for (size_t i = 0; i < n; i++)
    if (get16(b + off + 2 * i) == from) {
      b[off + 2 * i] = (uint8_t)(to >> 8);
      b[off + 2 * i + 1] = (uint8_t)to;
      return;
    }
  fail_msg("0x%04x not in the ClientHello list", from);
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
  srv_init(&s, "good", V12);
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
    srv_init(&s, k[i].cert, V12);
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

/* The version and suite a connection uses, for the logs and stats. */
static void test_version_and_suite_reported(void** state) {
  ob__tls_t t;
  srv_t s;
  (void)state;
  srv_init(&s, "good", V12);
  assert_int_equal(ob__tls_init(&t, &g_conf, "sqs.test", 0), 0);
  assert_string_equal(ob__tls_version(&t), "");
  assert_int_equal(handshake(&t, &s, NULL), 0);
  assert_string_equal(ob__tls_version(&t), "TLSv1.2");
  /* The server's own account of it (it chose by its preference). */
  assert_string_equal(ob__tls_suite(&t), mbedtls_ssl_get_ciphersuite(&s.ssl));
  assert_int_equal(strncmp(ob__tls_suite(&t), "TLS-ECDHE-ECDSA-WITH-", 21), 0);
  ob__tls_free(&t);
  srv_free(&s);
}

/* mbedTLS 3.6: a server that speaks TLS 1.3 gets it, with the same
** certificate and host name checks as TLS 1.2 (the chain and name are
** checked before our Finished, so no application byte can follow). */
static void test_tls13(void** state) {
  static const struct {
    const char* cert;
    const char* host;
    int want;
  } k[] = {
      {"good", "sqs.test", 0},
      {"rsa", "sqs.test", 0},
      {"ip", "127.0.0.1", 0},
      {"good", "other.test", OB__HTTP_E_TLS_HOSTNAME},
      {"wrong", "sqs.test", OB__HTTP_E_TLS_HOSTNAME},
      {"cn-only", "sqs.test", OB__HTTP_E_TLS_HOSTNAME},
      {"expired", "sqs.test", OB__HTTP_E_TLS_EXPIRED},
      {"future", "sqs.test", OB__HTTP_E_TLS_FUTURE},
      {"untrusted", "sqs.test", OB__HTTP_E_TLS_UNTRUSTED},
      {"sha1", "sqs.test", OB__HTTP_E_TLS_CERT},
  };
  (void)state;
  if (!OB__TLS_HAVE_13) {
    printf("  skipped: this mbedTLS (%s) does not speak TLS 1.3\n",
           MBEDTLS_VERSION_STRING);
    skip();
  }
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
    ob__tls_t t;
    srv_t s;
    int src, rc;
    srv_init(&s, k[i].cert, V13);
    assert_int_equal(ob__tls_init(&t, &g_conf, k[i].host, 0), 0);
    rc = handshake(&t, &s, &src);
    if (rc != k[i].want)
      fail_msg("%s/%s: got %s (%s)", k[i].cert, k[i].host,
               ob__http_err_name(rc), t.detail);
    if (rc == 0) {
      char buf[16];
      assert_string_equal(ob__tls_version(&t), "TLSv1.3");
      assert_int_equal(strncmp(ob__tls_suite(&t), "TLS1-3-", 7), 0);
      assert_int_equal(t.sniff.version, 0x0304);
      /* Data both ways under the 1.3 keys. */
      assert_int_equal(ob__tls_write(&t, "ping", 4), 4);
      move_c2s(&t, &s);
      assert_int_equal(mbedtls_ssl_read(&s.ssl, (unsigned char*)buf, 4), 4);
      assert_memory_equal(buf, "ping", 4);
      assert_int_equal(
          mbedtls_ssl_write(&s.ssl, (const unsigned char*)"pong", 4), 4);
      move_s2c(&s, &t);
      assert_int_equal(ob__tls_read(&t, buf, sizeof buf), 4);
      assert_memory_equal(buf, "pong", 4);
      printf("  %s: %s %s\n", k[i].cert, ob__tls_version(&t),
             ob__tls_suite(&t));
    } else {
      assert_non_null(strstr(t.detail, k[i].host));
      assert_int_equal(t.handshake_done, 0);
      assert_int_equal(ob__tls_write(&t, "GET", 3), k[i].want);
      printf("  %s: %s\n", ob__http_err_name(rc), t.detail);
    }
    ob__tls_free(&t);
    srv_free(&s);
  }
}

static void test_tls11_refused(void** state) {
  ob__tls_t t;
  srv_t s;
  (void)state;
  if (OB__MBEDTLS3) {
    printf("  skipped: mbedTLS 3 has no TLS 1.1 server (http_tls_matrix "
           "tests it with openssl)\n");
    skip();
  }
  srv_init(&s, "good", V11);  /* server speaks at most TLS 1.1 */
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

/* ---- the allow-lists, on the wire ---------------------------------------- */

/* docs/security.md "TLS parameters", in the order offered: TLS 1.3's
** AEAD suites first where the library speaks it. */
static const unsigned k_want_suites13[] = {0x1301, 0x1302, 0x1303};
static const unsigned k_want_suites[] = {
    0xC02B, /* ECDHE-ECDSA-AES128-GCM-SHA256 */
    0xC02F, /* ECDHE-RSA-AES128-GCM-SHA256 */
    0xC02C, /* ECDHE-ECDSA-AES256-GCM-SHA384 */
    0xC030, /* ECDHE-RSA-AES256-GCM-SHA384 */
    0xCCA9, /* ECDHE-ECDSA-CHACHA20-POLY1305 */
    0xCCA8, /* ECDHE-RSA-CHACHA20-POLY1305 */
};
static const unsigned k_want_groups[] = {0x001D /* x25519 */, 0x0017 /* P-256 */,
                                         0x0018 /* P-384 */};

/* The client's first flight for host (malloc'd). */
static uint8_t* first_flight(ob__tls_t* t, const char* host, size_t* n) {
  uint8_t* b;
  assert_int_equal(ob__tls_init(t, &g_conf, host, 0), 0);
  assert_int_equal(ob__tls_handshake(t), OB__TLS_AGAIN);
  ob__tls_take_out(t, &b, n);
  return b;
}

static void test_client_hello_allow_lists(void** state) {
  ob__tls_t t;
  size_t n, k = 0;
  uint8_t* b = first_flight(&t, "sqs.test", &n);
  hello_t h;
  int sha256_rsa = 0, sha256_ecdsa = 0;
  (void)state;
  size_t n13 = OB__TLS_HAVE_13 ? 3 : 0;
  parse_hello(b, n, &h);
  for (size_t i = 0; i < h.nsuites; i++) {
    unsigned id = get16(b + h.suites + 2 * i);
    if (id == 0x00FF) continue; /* TLS_EMPTY_RENEGOTIATION_INFO_SCSV */
    assert_true(k < n13 + 6);
    if (id != (k < n13 ? k_want_suites13[k] : k_want_suites[k - n13]))
      fail_msg("suite #%zu is 0x%04x", k, id);
    k++;
  }
  assert_int_equal(k, n13 + 6);
  assert_int_equal(h.ngroups, 3);
  for (size_t i = 0; i < 3; i++)
    assert_int_equal(get16(b + h.groups + 2 * i), k_want_groups[i]);
  assert_true(h.nsigalgs >= 2);
  for (size_t i = 0; i < h.nsigalgs; i++) {
    uint8_t hash = b[h.sigalgs + 2 * i], sig = b[h.sigalgs + 2 * i + 1];
    /* SHA-256 (4), SHA-384 (5), SHA-512 (6) with RSA (1) or ECDSA (3);
    ** mbedTLS 3 also RSA-PSS with them (0x0804-0x0806). */
    if (hash == 8 && sig >= 4 && sig <= 6 && OB__MBEDTLS3) continue;
    if (hash < 4 || hash > 6 || (sig != 1 && sig != 3))
      fail_msg("signature algorithm 0x%02x%02x offered", hash, sig);
    if (hash == 4 && sig == 1) sha256_rsa = 1;
    if (hash == 4 && sig == 3) sha256_ecdsa = 1;
  }
  assert_true(sha256_rsa && sha256_ecdsa);
  assert_true(h.sni);
  printf("  ClientHello: %zu suites (+SCSV), %zu groups, %zu sigalgs\n", k,
         h.ngroups, h.nsigalgs);
  free(b);
  ob__tls_free(&t);
}

static int has_bytes(const uint8_t* b, size_t n, const char* s) {
  size_t m = strlen(s);
  for (size_t i = 0; i + m <= n; i++)
    if (memcmp(b + i, s, m) == 0) return 1;
  return 0;
}

/* RFC 6066: no IP address in SNI. */
static void test_client_hello_ip_literal_no_sni(void** state) {
  const char* hosts[] = {"127.0.0.1", "::1"};
  (void)state;
  for (size_t i = 0; i < 2; i++) {
    ob__tls_t t;
    size_t n;
    uint8_t* b = first_flight(&t, hosts[i], &n);
    hello_t h;
    parse_hello(b, n, &h);
    assert_false(h.sni);
    assert_false(has_bytes(b, n, hosts[i]));
    assert_int_equal(t.ip_len, i == 0 ? 4 : 16);
    free(b);
    ob__tls_free(&t);
  }
}

/* ---- a server that chooses a refused parameter anyway --------------------- */

static unsigned g_from, g_to; /* for the tamper functions */

static void tamper_suite(uint8_t* b, size_t n) {
  hello_t h;
  parse_hello(b, n, &h);
  replace16(b, h.suites, h.nsuites, g_from, g_to);
}

static void tamper_group(uint8_t* b, size_t n) {
  hello_t h;
  parse_hello(b, n, &h);
  replace16(b, h.groups, h.ngroups, g_from, g_to);
}

static void tamper_sigalg(uint8_t* b, size_t n) {
  hello_t h;
  parse_hello(b, n, &h);
  replace16(b, h.sigalgs, h.nsigalgs, g_from, g_to);
}

/* The client refused with want and a detail holding has; no application
** byte can follow. */
static void expect_tls_refusal(ob__tls_t* t, int rc, int want,
                               const char* has) {
  if (rc != want) fail_msg("got %s (%s)", ob__http_err_name(rc), t->detail);
  if (strstr(t->detail, has) == NULL)
    fail_msg("detail lacks '%s': %s", has, t->detail);
  assert_int_equal(t->handshake_done, 0);
  assert_int_equal(ob__tls_write(t, "GET", 3), want);
  printf("  %s: %s\n", ob__http_err_name(rc), t->detail);
}

static void test_server_choosing_refused_suite(void** state) {
  static const struct {
    const char* cert;
    int suite;
    unsigned replaces;
    const char* name;
  } k[] = {
      {"rsa", MBEDTLS_TLS_RSA_WITH_AES_128_CBC_SHA, 0xC02F,
       "TLS-RSA-WITH-AES-128-CBC-SHA"},
      {"rsa", MBEDTLS_TLS_RSA_WITH_AES_256_GCM_SHA384, 0xC02F,
       "TLS-RSA-WITH-AES-256-GCM-SHA384"},
      {"good", MBEDTLS_TLS_ECDHE_ECDSA_WITH_AES_128_CCM_8, 0xC02B,
       "TLS-ECDHE-ECDSA-WITH-AES-128-CCM-8"},
      {"good", MBEDTLS_TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA, 0xC02B,
       "TLS-ECDHE-ECDSA-WITH-AES-128-CBC-SHA"},
      {"rsa", MBEDTLS_TLS_DHE_RSA_WITH_AES_128_GCM_SHA256, 0xC02F,
       "TLS-DHE-RSA-WITH-AES-128-GCM-SHA256"},
  };
  (void)state;
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
    int suites[] = {k[i].suite, 0};
    srv_opts_t o = {suites, NULL, NULL};
    ob__tls_t t;
    srv_t s;
    srv_init_opts(&s, k[i].cert, V12, &o);
    assert_int_equal(ob__tls_init(&t, &g_conf, "sqs.test", 0), 0);
    g_from = k[i].replaces;
    g_to = (unsigned)k[i].suite;
    expect_tls_refusal(&t, handshake_tampered(&t, &s, NULL, tamper_suite),
                       OB__HTTP_E_TLS_PROTOCOL, k[i].name);
    assert_non_null(strstr(t.detail, "did not offer"));
    ob__tls_free(&t);
    srv_free(&s);
  }
}

static void test_server_choosing_refused_group(void** state) {
  static const struct {
    mbedtls_ecp_group_id grp;
    unsigned tls_id;
    const char* name;
  } k[] = {
      {MBEDTLS_ECP_DP_SECP192R1, 0x0013, "secp192r1"},
      {MBEDTLS_ECP_DP_SECP224R1, 0x0015, "secp224r1"},
#if defined(MBEDTLS_ECP_DP_SECP192K1_ENABLED)
      {MBEDTLS_ECP_DP_SECP192K1, 0x0012, "secp192k1"},
#endif
#if defined(MBEDTLS_ECP_DP_SECP224K1_ENABLED)
      {MBEDTLS_ECP_DP_SECP224K1, 0x0014, "secp224k1"},
#endif
#if defined(MBEDTLS_ECP_DP_SECP521R1_ENABLED)
      {MBEDTLS_ECP_DP_SECP521R1, 0x0019, "secp521r1"},
#endif
  };
  (void)state;
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
    ob__tls_group_t curves[] = {ob__tls_group_of(k[i].grp), OB__TLS_GROUP_END};
    srv_opts_t o = {NULL, curves, NULL};
    ob__tls_t t;
    srv_t s;
    srv_init_opts(&s, "good", V12, &o);
    assert_int_equal(ob__tls_init(&t, &g_conf, "sqs.test", 0), 0);
    g_from = 0x001D; /* x25519 becomes the weak group */
    g_to = k[i].tls_id;
    expect_tls_refusal(&t, handshake_tampered(&t, &s, NULL, tamper_group),
                       OB__HTTP_E_TLS_PROTOCOL, k[i].name);
    ob__tls_free(&t);
    srv_free(&s);
  }
}

static void test_server_signing_with_sha1(void** state) {
  static const struct {
    ob__tls_sig_t sig;
    unsigned sigalg;
    const char* name;
  } k[] = {
      {OB__TLS_SIG(MBEDTLS_MD_SHA1, 0x0203), 0x0203, "SHA-1"},
      {OB__TLS_SIG(MBEDTLS_MD_SHA224, 0x0303), 0x0303, "SHA-224"},
  };
  (void)state;
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
    ob__tls_sig_t hashes[] = {k[i].sig, OB__TLS_SIG_END};
    srv_opts_t o = {NULL, NULL, hashes};
    ob__tls_t t;
    srv_t s;
    srv_init_opts(&s, "good", V12, &o);
    assert_int_equal(ob__tls_init(&t, &g_conf, "sqs.test", 0), 0);
    g_from = 0x0603; /* SHA-512 + ECDSA becomes the weak hash + ECDSA */
    g_to = k[i].sigalg;
    expect_tls_refusal(&t, handshake_tampered(&t, &s, NULL, tamper_sigalg),
                       OB__HTTP_E_TLS_PROTOCOL, k[i].name);
    ob__tls_free(&t);
    srv_free(&s);
  }
}

/* Every allowed suite and group works against a server limited to it. */
static void test_allowed_parameters_accepted(void** state) {
  static const struct {
    const char* cert;
    int suite;
  } ks[] = {
      {"good", MBEDTLS_TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256},
      {"rsa", MBEDTLS_TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256},
      {"good", MBEDTLS_TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384},
      {"rsa", MBEDTLS_TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384},
      {"good", MBEDTLS_TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256},
      {"rsa", MBEDTLS_TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256},
  };
  static const ob__tls_group_t kg[] = {
      OB__TLS_GROUP_X25519, OB__TLS_GROUP_P256, OB__TLS_GROUP_P384};
  (void)state;
  for (size_t i = 0; i < sizeof ks / sizeof ks[0] + 3; i++) {
    int suites[] = {i < 6 ? ks[i].suite : ks[0].suite, 0};
    ob__tls_group_t curves[] = {i < 6 ? OB__TLS_GROUP_P256 : kg[i - 6],
                                OB__TLS_GROUP_END};
    srv_opts_t o = {suites, curves, NULL};
    ob__tls_t t;
    srv_t s;
    int src, rc;
    srv_init_opts(&s, i < 6 ? ks[i].cert : "good", V12, &o);
    assert_int_equal(ob__tls_init(&t, &g_conf, "sqs.test", 0), 0);
    rc = handshake(&t, &s, &src);
    if (rc != 0) fail_msg("case %zu: %s", i, t.detail);
    assert_int_equal(src, 0);
    assert_string_equal(mbedtls_ssl_get_ciphersuite(&t.ssl),
                        mbedtls_ssl_get_ciphersuite_name(suites[0]));
    ob__tls_free(&t);
    srv_free(&s);
  }
}

/* ---- host names and IP literals ------------------------------------------ */

static void test_names_and_ip_literals(void** state) {
  static const struct {
    const char* cert;
    const char* host;
    int want;
    const char* has;
  } k[] = {
      /* IP literals: iPAddress SANs only. */
      {"ip", "127.0.0.1", 0, NULL},
      {"ip", "::1", 0, NULL},
      {"ip", "127.0.0.2", OB__HTTP_E_TLS_HOSTNAME, "none of its iPAddress"},
      {"ip", "::2", OB__HTTP_E_TLS_HOSTNAME, "IP:::1"},
      {"ip-as-dns", "127.0.0.1", OB__HTTP_E_TLS_HOSTNAME,
       "it has no iPAddress entry"},
      {"ip-as-dns", "::1", OB__HTTP_E_TLS_HOSTNAME, "DNS:::1"},
      {"ip-wildcard", "127.0.0.1", OB__HTTP_E_TLS_HOSTNAME, "DNS:*.0.0.1"},
      {"cn-only-ip", "127.0.0.1", OB__HTTP_E_TLS_HOSTNAME,
       "no subjectAltName extension"},
      {"good", "127.0.0.1", OB__HTTP_E_TLS_HOSTNAME, "DNS:sqs.test"},
      /* DNS names: dNSName SANs only, never the CN. */
      {"ip", "sqs.test", OB__HTTP_E_TLS_HOSTNAME, "no DNS name"},
      {"cn-only", "sqs.test", OB__HTTP_E_TLS_HOSTNAME, "CN 'sqs.test'"},
      {"good", "sqs.test.", 0, NULL},
      {"good", "localhost", 0, NULL},
      {"wildcard", "a.sqs.test", 0, NULL},
      {"wildcard", "sqs.test", OB__HTTP_E_TLS_HOSTNAME, "DNS:*.sqs.test"},
      {"wildcard", "a.b.sqs.test", OB__HTTP_E_TLS_HOSTNAME,
       "exactly one left-most label"},
      {"wildcard-tld", "sqs.test", OB__HTTP_E_TLS_HOSTNAME, "DNS:*.test"},
  };
  (void)state;
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
    ob__tls_t t;
    srv_t s;
    int rc;
    srv_init(&s, k[i].cert, V12);
    assert_int_equal(ob__tls_init(&t, &g_conf, k[i].host, 0), 0);
    rc = handshake(&t, &s, NULL);
    if (rc != k[i].want)
      fail_msg("%s for %s: got %s (%s)", k[i].cert, k[i].host,
               ob__http_err_name(rc), t.detail);
    if (k[i].has != NULL) {
      if (strstr(t.detail, k[i].has) == NULL)
        fail_msg("%s for %s: detail lacks '%s': %s", k[i].cert, k[i].host,
                 k[i].has, t.detail);
      printf("  %s for %s: %s\n", k[i].cert, k[i].host, t.detail);
    }
    ob__tls_free(&t);
    srv_free(&s);
  }
}

/* ---- certificate failures in words ---------------------------------------- */

/* (A clientAuth-only certificate is tested in http_tls_matrix: an mbedTLS
** server refuses to use one.) */
static void test_certificate_messages(void** state) {
  static const struct {
    const char* cert;
    int want;
    const char* has;
  } k[] = {
      {"sha1", OB__HTTP_E_TLS_CERT, "SHA-1"},
      {"rsa1024", OB__HTTP_E_TLS_CERT, "2048 bits"},
      {"expired", OB__HTTP_E_TLS_EXPIRED, "expired (on "},
      {"future", OB__HTTP_E_TLS_FUTURE, "check this device's clock"},
      {"untrusted", OB__HTTP_E_TLS_UNTRUSTED, "issued by 'CN=some other CA'"},
  };
  (void)state;
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
    ob__tls_t t;
    srv_t s;
    srv_init(&s, k[i].cert, V12);
    assert_int_equal(ob__tls_init(&t, &g_conf, "sqs.test", 0), 0);
    expect_tls_refusal(&t, handshake(&t, &s, NULL), k[i].want, k[i].has);
    ob__tls_free(&t);
    srv_free(&s);
  }
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
      cmocka_unit_test(test_version_and_suite_reported),
      cmocka_unit_test(test_tls13),
      cmocka_unit_test(test_tls11_refused),
      cmocka_unit_test(test_eof_during_handshake),
      cmocka_unit_test(test_client_hello_allow_lists),
      cmocka_unit_test(test_client_hello_ip_literal_no_sni),
      cmocka_unit_test(test_server_choosing_refused_suite),
      cmocka_unit_test(test_server_choosing_refused_group),
      cmocka_unit_test(test_server_signing_with_sha1),
      cmocka_unit_test(test_allowed_parameters_accepted),
      cmocka_unit_test(test_names_and_ip_literals),
      cmocka_unit_test(test_certificate_messages),
  };
  return cmocka_run_group_tests_name("http_tls", tests, group_setup,
                                     group_teardown);
}
