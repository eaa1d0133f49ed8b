/*
** mbedTLS 2.28 client engine over two memory queues (the tlsuv "memory BIO"
** pattern): the network layer feeds received ciphertext in and drains
** outgoing ciphertext; this file never sees a socket, so it is testable with
** bytes alone. Unlike tlsuv, the outgoing queue is bounded: the send
** callback returns WANT_WRITE when it is full.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mbedtls/error.h>

#include "core/util/errbuf.h"
#include "platform/http/http_int.h"

/* A fixed personalization string: mixed into the DRBG seed so two devices
** with a weak entropy source still diverge less trivially; never
** uninitialized memory (tlsuv's mistake). */
static const char k_pers[] = "oncebox-http-client-ctr-drbg-v1";

/* "what: mbedTLS text (-0xNNNN)" into err, if given. */
static void set_err(char* err, size_t errlen, const char* what,
                    const char* path, int rc) {
  char mb[128];
  if (err == NULL || errlen == 0) return;
  mbedtls_strerror(rc, mb, sizeof mb);
  ob__errbuf_set(err, errlen, 0, "TLS: %s%s: %s (-0x%04x)", what, path, mb,
                 (unsigned)-rc);
}

int ob__tls_conf_init(ob__tls_conf_t* tc, const char* ca_file, char* err,
                      size_t errlen) {
  int rc;
  int ret;

  mbedtls_entropy_init(&tc->entropy);
  mbedtls_ctr_drbg_init(&tc->drbg);
  mbedtls_x509_crt_init(&tc->ca);
  mbedtls_ssl_config_init(&tc->conf);
  tc->ca_count = 0;
  if (ca_file == NULL) ca_file = OB__HTTP_DEFAULT_CA_FILE;

  rc = mbedtls_ctr_drbg_seed(&tc->drbg, mbedtls_entropy_func, &tc->entropy,
                             (const unsigned char*)k_pers, sizeof k_pers - 1);
  if (rc != 0) {
    set_err(err, errlen, "seeding the DRBG failed", "", rc);
    ret = OB__HTTP_E_TLS;
    goto fail;
  }
  /* A positive return is the number of certificates that did not parse;
  ** what matters is that some did. */
  rc = mbedtls_x509_crt_parse_file(&tc->ca, ca_file);
  for (const mbedtls_x509_crt* c = &tc->ca; c != NULL && c->version != 0;
       c = c->next)
    tc->ca_count++;
  if (rc < 0 || tc->ca_count == 0) {
    if (rc < 0)
      set_err(err, errlen, "cannot load CA bundle ", ca_file, rc);
    else
      ob__errbuf_set(err, errlen, 0,
                     "TLS: CA bundle %s holds no usable certificate", ca_file);
    ret = OB__HTTP_E_TLS_CA;
    goto fail;
  }
  rc = mbedtls_ssl_config_defaults(&tc->conf, MBEDTLS_SSL_IS_CLIENT,
                                   MBEDTLS_SSL_TRANSPORT_STREAM,
                                   MBEDTLS_SSL_PRESET_DEFAULT);
  if (rc != 0) {
    set_err(err, errlen, "config defaults", "", rc);
    ret = OB__HTTP_E_TLS;
    goto fail;
  }
  /* REQUIRED is the client default already; explicit so nobody "fixes" it.
  ** TLS 1.2 only: the default preset still negotiates 1.1 on 2.28 and 1.3
  ** is compiled out of Debian's build. */
  mbedtls_ssl_conf_authmode(&tc->conf, MBEDTLS_SSL_VERIFY_REQUIRED);
  mbedtls_ssl_conf_min_version(&tc->conf, MBEDTLS_SSL_MAJOR_VERSION_3,
                               MBEDTLS_SSL_MINOR_VERSION_3);
  mbedtls_ssl_conf_max_version(&tc->conf, MBEDTLS_SSL_MAJOR_VERSION_3,
                               MBEDTLS_SSL_MINOR_VERSION_3);
  mbedtls_ssl_conf_ca_chain(&tc->conf, &tc->ca, NULL);
  mbedtls_ssl_conf_rng(&tc->conf, mbedtls_ctr_drbg_random, &tc->drbg);
#if defined(MBEDTLS_SSL_RENEGOTIATION)
  mbedtls_ssl_conf_renegotiation(&tc->conf, MBEDTLS_SSL_RENEGOTIATION_DISABLED);
#endif
  return 0;

fail:
  ob__tls_conf_free(tc);
  return ret;
}

void ob__tls_conf_free(ob__tls_conf_t* tc) {
  mbedtls_ssl_config_free(&tc->conf);
  mbedtls_x509_crt_free(&tc->ca);
  mbedtls_ctr_drbg_free(&tc->drbg);
  mbedtls_entropy_free(&tc->entropy);
  tc->ca_count = 0;
}

/* ---- BIO callbacks ------------------------------------------------------ */

static int bio_send(void* ctx, const unsigned char* buf, size_t len) {
  ob__tls_t* t = ctx;
  size_t space = t->out_cap - t->out.len;
  size_t n;

  if (space == 0) return MBEDTLS_ERR_SSL_WANT_WRITE;
  n = len < space ? len : space;
  if (t->out.len + n > t->out.cap) {
    size_t cap = t->out.cap ? t->out.cap : 4096;
    uint8_t* p;
    while (cap < t->out.len + n) cap *= 2;
    if (cap > t->out_cap) cap = t->out_cap;
    p = realloc(t->out.p, cap);
    if (p == NULL) return MBEDTLS_ERR_SSL_ALLOC_FAILED;
    t->out.p = p;
    t->out.cap = cap;
  }
  memcpy(t->out.p + t->out.len, buf, n);
  t->out.len += n;
  return (int)n;
}

static int bio_recv(void* ctx, unsigned char* buf, size_t len) {
  ob__tls_t* t = ctx;
  size_t avail = t->in.len - t->in.off;
  size_t n;

  if (avail == 0) return t->eof ? 0 : MBEDTLS_ERR_SSL_WANT_READ;
  n = len < avail ? len : avail;
  memcpy(buf, t->in.p + t->in.off, n);
  t->in.off += n;
  if (t->in.off == t->in.len) t->in.off = t->in.len = 0;
  return (int)n;
}

/* ---- error mapping ------------------------------------------------------ */

/* Most specific first: an untrusted chain makes the other flags moot. */
static int verify_code(uint32_t flags) {
  if (flags & MBEDTLS_X509_BADCERT_NOT_TRUSTED) return OB__HTTP_E_TLS_UNTRUSTED;
  if (flags & MBEDTLS_X509_BADCERT_EXPIRED) return OB__HTTP_E_TLS_EXPIRED;
  if (flags & MBEDTLS_X509_BADCERT_FUTURE) return OB__HTTP_E_TLS_FUTURE;
  if (flags & MBEDTLS_X509_BADCERT_CN_MISMATCH) return OB__HTTP_E_TLS_HOSTNAME;
  return OB__HTTP_E_TLS_CERT;
}

static int map_error(ob__tls_t* t, int rc) {
  char mb[160];
  int code;

  switch (rc) {
    case MBEDTLS_ERR_X509_CERT_VERIFY_FAILED: {
      uint32_t flags = mbedtls_ssl_get_verify_result(&t->ssl);
      char info[256];
      int n = mbedtls_x509_crt_verify_info(info, sizeof info, "", flags);
      /* One line per flag; join them. */
      for (int i = 0; i < n && info[i]; i++)
        if (info[i] == '\n') info[i] = (info[i + 1] ? ';' : '\0');
      if (n <= 0) snprintf(info, sizeof info, "flags 0x%x", (unsigned)flags);
      code = verify_code(flags);
      snprintf(t->detail, sizeof t->detail,
               "TLS: certificate for '%.96s' rejected: %s", t->host, info);
      return code;
    }
    case MBEDTLS_ERR_SSL_BAD_HS_PROTOCOL_VERSION:
      snprintf(t->detail, sizeof t->detail,
               "TLS: '%.96s' offered a protocol older than TLS 1.2", t->host);
      return OB__HTTP_E_TLS_PROTOCOL;
    case MBEDTLS_ERR_SSL_CONN_EOF:
      if (!t->handshake_done) {
        snprintf(t->detail, sizeof t->detail,
                 "TLS: '%.96s' closed the connection during the handshake",
                 t->host);
        return OB__HTTP_E_TLS_HANDSHAKE_EOF;
      }
      snprintf(t->detail, sizeof t->detail, "TLS: connection closed");
      return OB__HTTP_E_EOF;
    case MBEDTLS_ERR_SSL_ALLOC_FAILED:
      snprintf(t->detail, sizeof t->detail, "TLS: out of memory");
      return OB_ENOMEM;
    default:
      mbedtls_strerror(rc, mb, sizeof mb);
      snprintf(t->detail, sizeof t->detail, "TLS: %s%s (-0x%04x)",
               t->handshake_done ? "" : "handshake failed: ", mb,
               (unsigned)-rc);
      return OB__HTTP_E_TLS;
  }
}

/* ---- session ------------------------------------------------------------ */

int ob__tls_init(ob__tls_t* t, ob__tls_conf_t* tc, const char* hostname,
                 size_t out_cap) {
  int rc;

  memset(t, 0, sizeof *t);
  mbedtls_ssl_init(&t->ssl);  /* first: makes ob__tls_free always safe */
  t->out_cap = out_cap ? out_cap : OB__TLS_OUT_CAP;
  if (hostname == NULL || hostname[0] == '\0') {
    snprintf(t->detail, sizeof t->detail,
             "TLS: refusing to connect without a hostname to verify");
    return t->failed = OB__HTTP_E_TLS_NO_HOSTNAME;
  }
  if (strlen(hostname) > OB__HTTP_HOST_MAX) {
    snprintf(t->detail, sizeof t->detail, "TLS: hostname too long");
    return t->failed = OB__HTTP_E_TLS_NO_HOSTNAME;
  }
  strcpy(t->host, hostname);
  rc = mbedtls_ssl_setup(&t->ssl, &tc->conf);
  if (rc != 0) return t->failed = map_error(t, rc);
  /* Sets SNI and, above all, the name the certificate must carry. */
  rc = mbedtls_ssl_set_hostname(&t->ssl, t->host);
  if (rc != 0) return t->failed = map_error(t, rc);
  mbedtls_ssl_set_bio(&t->ssl, t, bio_send, bio_recv, NULL);
  t->ready = 1;
  return 0;
}

int ob__tls_feed(ob__tls_t* t, const void* data, size_t len) {
  ob__bytes_t* b = &t->in;

  if (len == 0) return 0;
  if (b->off > 0) {  /* compact */
    memmove(b->p, b->p + b->off, b->len - b->off);
    b->len -= b->off;
    b->off = 0;
  }
  if (b->len + len > OB__TLS_IN_CAP) {
    snprintf(t->detail, sizeof t->detail,
             "TLS: more than %d bytes of unread ciphertext", OB__TLS_IN_CAP);
    return OB__HTTP_E_IO;
  }
  if (b->len + len > b->cap) {
    size_t cap = b->cap ? b->cap : 16384;
    uint8_t* p;
    while (cap < b->len + len) cap *= 2;
    p = realloc(b->p, cap);
    if (p == NULL) return OB_ENOMEM;
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->len, data, len);
  b->len += len;
  return 0;
}

void ob__tls_feed_eof(ob__tls_t* t) {
  t->eof = 1;
}

int ob__tls_handshake(ob__tls_t* t) {
  int rc;

  if (t->failed) return t->failed;
  if (!t->ready) {
    /* Never handshake unverified: see ob__tls_init. */
    snprintf(t->detail, sizeof t->detail,
             "TLS: refusing to connect without a hostname to verify");
    return t->failed = OB__HTTP_E_TLS_NO_HOSTNAME;
  }
  if (t->handshake_done) return 0;
  rc = mbedtls_ssl_handshake(&t->ssl);
  if (rc == 0) {
    t->handshake_done = 1;
    return 0;
  }
  if (rc == MBEDTLS_ERR_SSL_WANT_READ || rc == MBEDTLS_ERR_SSL_WANT_WRITE)
    return OB__TLS_AGAIN;
  return t->failed = map_error(t, rc);
}

int ob__tls_read(ob__tls_t* t, void* buf, size_t len) {
  int rc;

  if (t->failed) return t->failed;
  if (!t->handshake_done) return OB_ESTATE;
  rc = mbedtls_ssl_read(&t->ssl, buf, len);
  if (rc > 0) return rc;
  if (rc == 0 || rc == MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY ||
      rc == MBEDTLS_ERR_SSL_CONN_EOF)
    return 0;
  if (rc == MBEDTLS_ERR_SSL_WANT_READ || rc == MBEDTLS_ERR_SSL_WANT_WRITE)
    return OB__TLS_AGAIN;
  return t->failed = map_error(t, rc);
}

int ob__tls_write(ob__tls_t* t, const void* buf, size_t len) {
  int rc;

  if (t->failed) return t->failed;
  if (!t->handshake_done) return OB_ESTATE;
  if (len == 0) return 0;
  rc = mbedtls_ssl_write(&t->ssl, buf, len);
  if (rc > 0) return rc;
  if (rc == MBEDTLS_ERR_SSL_WANT_READ || rc == MBEDTLS_ERR_SSL_WANT_WRITE ||
      rc == 0)
    return OB__TLS_AGAIN;
  return t->failed = map_error(t, rc);
}

void ob__tls_close_notify(ob__tls_t* t) {
  if (t->ready && t->handshake_done && !t->failed)
    (void)mbedtls_ssl_close_notify(&t->ssl);  /* best effort */
}

void ob__tls_take_out(ob__tls_t* t, uint8_t** buf, size_t* len) {
  *buf = t->out.p;
  *len = t->out.len;
  memset(&t->out, 0, sizeof t->out);
}

void ob__tls_free(ob__tls_t* t) {
  mbedtls_ssl_free(&t->ssl);
  free(t->in.p);
  free(t->out.p);
  memset(&t->in, 0, sizeof t->in);
  memset(&t->out, 0, sizeof t->out);
  t->ready = 0;
}
