/* SPDX-License-Identifier: Apache-2.0 */
/*
** mbedTLS client engine (2.28 or 3.6: the differences are in tls_compat.h) over two memory queues (the tlsuv "memory BIO"
** pattern): the network layer feeds received ciphertext in and drains
** outgoing ciphertext; this file never sees a socket, so it is testable with
** bytes alone. Unlike tlsuv, the outgoing queue is bounded: the send
** callback returns WANT_WRITE when it is full.
**
** What the handshake accepts is an explicit allow-list, not mbedTLS's
** default of 80-odd suites (docs/security.md "TLS parameters"), and the
** server's name is checked by our own verify callback on top of mbedTLS's
** (docs/security.md "Host names and IP literals"): mbedTLS 2.28 does not
** know iPAddress SANs, lets a wildcard match an IP and falls back to the CN.
** Failures are turned into sentences that say what is wrong; what the
** server chose or answered is read from its plaintext records
** (tls_record.h), never from mbedTLS's private fields.
*/
#include <arpa/inet.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mbedtls/ecp.h>
#include <mbedtls/error.h>
#include <mbedtls/oid.h>
#include <mbedtls/ssl_ciphersuites.h>

#include "core/util/errbuf.h"
#include "platform/http/http_int.h"
#include "platform/http/tls_compat.h"
#include "platform/http/tls_record.h"

/* ---- the allow-lists (docs/security.md "TLS parameters") ---------------- */

/* ECDHE only (forward secrecy), AEAD only (no CBC, no CCM-8), in Mozilla's
** "intermediate" order. No RSA key exchange, no static ECDH, no DHE, no PSK.
** The same list for SQS and the payment provider: both open their client
** through ob__tls_conf_init. Where the library speaks TLS 1.3, its AEAD
** suites first (1.3 preferred; its key exchange is always ephemeral). */
static const int k_suites[] = {
    OB__TLS13_SUITES
    MBEDTLS_TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
    MBEDTLS_TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
    MBEDTLS_TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
    MBEDTLS_TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
    MBEDTLS_TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
    MBEDTLS_TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
    0};

/* Groups for ECDHE (and TLS 1.3's key share), and (TLS 1.2 rule) the curve
** of an ECDSA server key. Their TLS numbers for the checks below. */
static const ob__tls_group_t k_groups[] = {
    OB__TLS_GROUP_X25519, OB__TLS_GROUP_P256, OB__TLS_GROUP_P384,
    OB__TLS_GROUP_END};
static const uint16_t k_group_ids[] = {0x001d, 0x0017, 0x0018};

/* The signature_algorithms extension, the ServerKeyExchange (1.2) and
** CertificateVerify (1.3) signatures: SHA-256/384/512 only, no SHA-1,
** SHA-224 or MD5 (tls_compat.h spells it for each mbedTLS). */
static const ob__tls_sig_t k_sigs[] = {OB__TLS_SIGS_ALLOWED, OB__TLS_SIG_END};

/* The certificate chain: SHA-2 (256 and up) signatures, RSA keys of 2048
** bits or more, EC keys on P-256, P-384 or P-521 (CAs use P-521 too; the
** server's own EC key is further limited by k_groups). */
#define OB__ID(x) MBEDTLS_X509_ID_FLAG(x)
static const mbedtls_x509_crt_profile k_cert_profile = {
    OB__ID(MBEDTLS_MD_SHA256) | OB__ID(MBEDTLS_MD_SHA384) |
        OB__ID(MBEDTLS_MD_SHA512),
    OB__ID(MBEDTLS_PK_RSA) | OB__ID(MBEDTLS_PK_RSASSA_PSS) |
        OB__ID(MBEDTLS_PK_ECKEY) | OB__ID(MBEDTLS_PK_ECDSA),
    OB__ID(MBEDTLS_ECP_DP_SECP256R1) | OB__ID(MBEDTLS_ECP_DP_SECP384R1) |
        OB__ID(MBEDTLS_ECP_DP_SECP521R1),
    2048};
#undef OB__ID

/* What the failure messages say is allowed, in one place. */
#define OB__TLS_ALLOWED                                                      \
  "ECDHE with AES-GCM or ChaCha20-Poly1305, on x25519, P-256 or P-384, "    \
  "signed with SHA-256/384/512"

static int suite_allowed(int id) {
  for (size_t i = 0; k_suites[i] != 0; i++)
    if (k_suites[i] == id) return 1;
  return 0;
}

static int group_allowed(uint16_t tls_id) {
  for (size_t i = 0; i < sizeof k_group_ids / sizeof k_group_ids[0]; i++)
    if (k_group_ids[i] == tls_id) return 1;
  return 0;
}

/* mbedTLS 3 runs TLS 1.3 on PSA crypto, which must be initialised first:
** once per process, whichever client opens first. */
static pthread_once_t g_crypto_once = PTHREAD_ONCE_INIT;
static int g_crypto_status;

static void crypto_init_once(void) { g_crypto_status = ob__tls_psa_init(); }

static int crypto_init(void) {
  if (pthread_once(&g_crypto_once, crypto_init_once) != 0) return -1;
  return g_crypto_status;
}

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

  if ((rc = crypto_init()) != 0) {
    ob__errbuf_set(err, errlen, 0,
                   "TLS: psa_crypto_init failed (status %d)", rc);
    ret = OB__HTTP_E_TLS;
    goto fail;
  }

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
  ** The same verification (chain, verify_cb's name check) under 1.2 and
  ** 1.3. TLS 1.2 at least (2.28's default preset still negotiates 1.1);
  ** 1.3 as well where the library has it (3.6; Debian's 2.28 has not). */
  mbedtls_ssl_conf_authmode(&tc->conf, MBEDTLS_SSL_VERIFY_REQUIRED);
  ob__tls_conf_versions(&tc->conf, OB__TLS_V12, OB__TLS_MAX_VERSION);
  mbedtls_ssl_conf_ca_chain(&tc->conf, &tc->ca, NULL);
  mbedtls_ssl_conf_rng(&tc->conf, mbedtls_ctr_drbg_random, &tc->drbg);
  /* The allow-lists. The arrays are static: mbedTLS keeps the pointers. */
  mbedtls_ssl_conf_ciphersuites(&tc->conf, k_suites);
  ob__tls_conf_groups(&tc->conf, k_groups);
  ob__tls_conf_sigs(&tc->conf, k_sigs);
  mbedtls_ssl_conf_cert_profile(&tc->conf, &k_cert_profile);
#if defined(MBEDTLS_DHM_C)
  /* No DHE suite is offered; should one ever be, not below 2048 bits. */
  mbedtls_ssl_conf_dhm_min_bitlen(&tc->conf, 2048);
#endif
  {
    /* A build without GCM and ChaCha20 would send an empty list. */
    int usable = 0;
    for (size_t i = 0; k_suites[i] != 0; i++)
      if (mbedtls_ssl_ciphersuite_from_id(k_suites[i]) != NULL) usable++;
    if (usable == 0) {
      ob__errbuf_set(err, errlen, 0,
                     "TLS: this mbedTLS build has none of the allowed cipher "
                     "suites (" OB__TLS_ALLOWED ")");
      ret = OB__HTTP_E_TLS;
      goto fail;
    }
  }
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
  /* What mbedTLS reads, in order, until the handshake is done: after it
  ** every record is encrypted and the sniff has nothing to name, so the
  ** data path does not pay for it. */
  if (!t->handshake_done) ob__tls_sniff_feed(&t->sniff, buf, n);
  t->in.off += n;
  if (t->in.off == t->in.len) t->in.off = t->in.len = 0;
  return (int)n;
}

/* ---- the server's name (docs/security.md "Host names and IP literals") -- */

#define SAN_TAG_DNS (MBEDTLS_ASN1_CONTEXT_SPECIFIC | 2) /* dNSName [2] */
#define SAN_TAG_IP (MBEDTLS_ASN1_CONTEXT_SPECIFIC | 7)  /* iPAddress [7] */

static int lower(int ch) {
  return (ch >= 'A' && ch <= 'Z') ? ch + ('a' - 'A') : ch;
}

static int eq_ci(const unsigned char* a, const char* b, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (lower(a[i]) != lower((unsigned char)b[i])) return 0;
  return 1;
}

/* Labels of s[0..n) all non-empty and free of '*' and NUL. */
static int plain_labels(const unsigned char* s, size_t n) {
  size_t label = 0;
  if (n == 0) return 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '\0' || s[i] == '*') return 0;
    if (s[i] == '.') {
      if (label == 0) return 0;
      label = 0;
    } else {
      label++;
    }
  }
  return label > 0;
}

/*
** A dNSName against a DNS host (RFC 9525): case-insensitive
** equality; or a wildcard that is the whole left-most label ("*.a.b", at
** least two labels after it), standing for exactly one non-empty label.
** No partial wildcards ("f*.a.b"), none deeper than the first label. Only
** ever called for DNS hosts: a wildcard never matches an IP address.
*/
static int dns_id_matches(const unsigned char* pat, size_t plen,
                          const char* host) {
  size_t hlen = strlen(host);
  const char* dot;

  if (plen > 0 && pat[plen - 1] == '.') plen--; /* absolute form */
  if (plen == hlen && plain_labels(pat, plen) && eq_ci(pat, host, hlen))
    return 1;
  if (plen < 4 || pat[0] != '*' || pat[1] != '.') return 0;
  if (!plain_labels(pat + 2, plen - 2) ||
      memchr(pat + 2, '.', plen - 2) == NULL)
    return 0; /* "*.com": too broad to mean one organisation */
  dot = strchr(host, '.');
  if (dot == NULL || dot == host) return 0;
  return hlen - (size_t)(dot - host) == plen - 1 &&
         eq_ci(pat + 1, dot, plen - 1);
}

/* Printable copy of n bytes (anything else becomes '?'). */
static void printable(char* out, size_t cap, const unsigned char* p,
                      size_t n) {
  size_t j = 0;
  for (size_t i = 0; i < n && j + 1 < cap; i++)
    out[j++] = (p[i] >= 0x20 && p[i] < 0x7f) ? (char)p[i] : '?';
  out[j] = '\0';
}

/* "DNS:a.test, IP:127.0.0.1, URI, ..." for the failure detail. */
static void san_summary(const mbedtls_x509_crt* crt, char* out, size_t cap) {
  size_t len = 0;
  out[0] = '\0';
  for (const mbedtls_x509_sequence* s = &crt->subject_alt_names;
       s != NULL && s->buf.p != NULL; s = s->next) {
    char item[80];
    int n;
    if (s->buf.tag == SAN_TAG_DNS) {
      char v[64];
      printable(v, sizeof v, s->buf.p, s->buf.len);
      snprintf(item, sizeof item, "DNS:%s", v);
    } else if (s->buf.tag == SAN_TAG_IP &&
               (s->buf.len == 4 || s->buf.len == 16)) {
      char v[INET6_ADDRSTRLEN];
      inet_ntop(s->buf.len == 4 ? AF_INET : AF_INET6, s->buf.p, v, sizeof v);
      snprintf(item, sizeof item, "IP:%s", v);
    } else {
      switch (s->buf.tag & MBEDTLS_ASN1_TAG_VALUE_MASK) {
        case 0: snprintf(item, sizeof item, "otherName"); break;
        case 1: snprintf(item, sizeof item, "email"); break;
        case 6: snprintf(item, sizeof item, "URI"); break;
        case 7: snprintf(item, sizeof item, "IP:(bad length)"); break;
        default: snprintf(item, sizeof item, "type %d",
                          s->buf.tag & MBEDTLS_ASN1_TAG_VALUE_MASK);
      }
    }
    if (len + strlen(item) + 8 >= cap) {
      snprintf(out + len, cap - len, "%s...", len ? ", " : "");
      return;
    }
    n = snprintf(out + len, cap - len, "%s%s", len ? ", " : "", item);
    if (n > 0) len += (size_t)n;
  }
}

/* The subject CN, printable, or "" (only ever quoted, never matched). */
static void subject_cn(const mbedtls_x509_crt* crt, char* out, size_t cap) {
  out[0] = '\0';
  for (const mbedtls_x509_name* n = &crt->subject; n != NULL; n = n->next)
    if (n->oid.p != NULL && MBEDTLS_OID_CMP(MBEDTLS_OID_AT_CN, &n->oid) == 0) {
      printable(out, cap, n->val.p, n->val.len);
      return;
    }
}

/* 1 when crt is for t's host; else 0 with the reason in t->name_why. */
static int name_matches(ob__tls_t* t, const mbedtls_x509_crt* crt) {
  int has_san = ob__tls_crt_has_san(crt);
  int want = t->ip_len ? SAN_TAG_IP : SAN_TAG_DNS;
  int typed = 0; /* SAN entries of the type that could match */
  char sans[160];
  char cn[64];

  for (const mbedtls_x509_sequence* s = &crt->subject_alt_names;
       has_san && s != NULL && s->buf.p != NULL; s = s->next) {
    if (s->buf.tag != want) continue;
    typed++;
    if (t->ip_len) {
      if (s->buf.len == t->ip_len && memcmp(s->buf.p, t->ip, t->ip_len) == 0)
        return 1;
    } else if (dns_id_matches(s->buf.p, s->buf.len, t->host)) {
      return 1;
    }
  }
  subject_cn(crt, cn, sizeof cn);
  if (!has_san) {
    snprintf(t->name_why, sizeof t->name_why,
             "it has no subjectAltName extension, only the subject CN '%s', "
             "and the CN is never used to match a server (RFC 9525)",
             cn);
    return 0;
  }
  san_summary(crt, sans, sizeof sans);
  if (t->ip_len)
    snprintf(t->name_why, sizeof t->name_why,
             "%s: an IP address matches only an iPAddress entry of the "
             "subjectAltName, never a DNS name, a wildcard or the CN; the "
             "certificate has %s",
             typed ? "none of its iPAddress entries is this address"
                   : "it has no iPAddress entry",
             sans);
  else
    snprintf(t->name_why, sizeof t->name_why,
             "%s; the certificate has %s%s",
             typed ? "none of its DNS names matches the host name"
                   : "it has no DNS name in its subjectAltName (the CN is "
                     "never used, RFC 9525)",
             sans[0] ? sans : "no usable entry",
             typed ? " (a wildcard '*.' stands for exactly one left-most "
                     "label and needs two more labels after it)"
                   : "");
  return 0;
}

static void fmt_time(char* out, size_t cap, const mbedtls_x509_time* tm) {
  snprintf(out, cap, "%04d-%02d-%02d %02d:%02d UTC", tm->year, tm->mon,
           tm->day, tm->hour, tm->min);
}

/*
** Called by mbedTLS for each certificate of the chain, the top first and the
** server's own (depth 0) last, with the flags mbedTLS found. This callback
** only ever ADDS a flag (CN_MISMATCH when our name check fails): it never
** clears one, so it cannot make a bad chain pass.
*/
static int verify_cb(void* ctx, mbedtls_x509_crt* crt, int depth,
                     uint32_t* flags) {
  ob__tls_t* t = ctx;

  if (t->chain_top[0] == '\0' &&
      mbedtls_x509_dn_gets(t->chain_top, sizeof t->chain_top, &crt->issuer) <
          0)
    snprintf(t->chain_top, sizeof t->chain_top, "?");
  if (depth != 0) return 0;
  fmt_time(t->leaf_from, sizeof t->leaf_from, &crt->valid_from);
  fmt_time(t->leaf_to, sizeof t->leaf_to, &crt->valid_to);
  if (!name_matches(t, crt)) *flags |= MBEDTLS_X509_BADCERT_CN_MISMATCH;
  return 0;
}

/* ---- error mapping ------------------------------------------------------ */

__attribute__((format(printf, 2, 3))) static void dappend(ob__tls_t* t,
                                                          const char* fmt,
                                                          ...) {
  size_t len = strlen(t->detail);
  va_list ap;
  if (len + 1 >= sizeof t->detail) return;
  va_start(ap, fmt);
  vsnprintf(t->detail + len, sizeof t->detail - len, fmt, ap);
  va_end(ap);
}

/* Most specific first: an untrusted chain makes the other flags moot. */
static int verify_code(uint32_t flags) {
  if (flags & MBEDTLS_X509_BADCERT_NOT_TRUSTED) return OB__HTTP_E_TLS_UNTRUSTED;
  if (flags & MBEDTLS_X509_BADCERT_EXPIRED) return OB__HTTP_E_TLS_EXPIRED;
  if (flags & MBEDTLS_X509_BADCERT_FUTURE) return OB__HTTP_E_TLS_FUTURE;
  if (flags & MBEDTLS_X509_BADCERT_CN_MISMATCH) return OB__HTTP_E_TLS_HOSTNAME;
  return OB__HTTP_E_TLS_CERT;
}

/* One sentence per verification flag, most telling first. */
static int cert_failure(ob__tls_t* t, uint32_t flags) {
  uint32_t left = flags;
  int n = 0;

#define OB__SAY(flag, ...)              \
  do {                                  \
    if (flags & (flag)) {               \
      dappend(t, "%s", n++ ? "; " : ""); \
      dappend(t, __VA_ARGS__);          \
      left &= ~(uint32_t)(flag);        \
    }                                   \
  } while (0)

  snprintf(t->detail, sizeof t->detail, "TLS: certificate for '%.96s' rejected: ",
           t->host);
  OB__SAY(MBEDTLS_X509_BADCERT_NOT_TRUSTED,
          "it is not signed by a trusted CA of the bundle (the chain ends at "
          "a certificate issued by '%.100s')",
          t->chain_top[0] ? t->chain_top : "?");
  OB__SAY(MBEDTLS_X509_BADCERT_EXPIRED, "its validity has expired (on %s)",
          t->leaf_to[0] ? t->leaf_to : "?");
  OB__SAY(MBEDTLS_X509_BADCERT_FUTURE,
          "its validity starts in the future (on %s): check this device's "
          "clock",
          t->leaf_from[0] ? t->leaf_from : "?");
  if (t->name_why[0])
    OB__SAY(MBEDTLS_X509_BADCERT_CN_MISMATCH, "%s", t->name_why);
  else
    OB__SAY(MBEDTLS_X509_BADCERT_CN_MISMATCH,
            "it is not for this host name (CN does not match)");
  OB__SAY(MBEDTLS_X509_BADCERT_EXT_KEY_USAGE,
          "it is not for server authentication: its extendedKeyUsage lacks "
          "serverAuth (e.g. a clientAuth-only certificate)");
  OB__SAY(MBEDTLS_X509_BADCERT_KEY_USAGE,
          "its keyUsage does not allow this key exchange (an ECDHE server "
          "key needs digitalSignature)");
  OB__SAY(MBEDTLS_X509_BADCERT_NS_CERT_TYPE,
          "its Netscape certificate type does not allow a TLS server");
  OB__SAY(MBEDTLS_X509_BADCERT_BAD_MD,
          "it or a certificate of its chain is signed with a hash this "
          "client refuses (SHA-1 or weaker; SHA-256, SHA-384 or SHA-512 "
          "needed)");
  OB__SAY(MBEDTLS_X509_BADCERT_BAD_PK,
          "its chain uses a signature algorithm this client refuses (RSA or "
          "ECDSA needed)");
  OB__SAY(MBEDTLS_X509_BADCERT_BAD_KEY,
          "its key or a key of its chain is too weak or on a curve this "
          "client refuses (RSA needs 2048 bits or more; the server's EC key "
          "P-256 or P-384, a CA's also P-521)");
  OB__SAY(MBEDTLS_X509_BADCERT_MISSING, "the server sent no certificate");
  OB__SAY(MBEDTLS_X509_BADCERT_REVOKED, "it is revoked");
#undef OB__SAY
  if (left != 0) {
    char info[200];
    int m = mbedtls_x509_crt_verify_info(info, sizeof info, "", left);
    for (int i = 0; i < m && info[i]; i++)
      if (info[i] == '\n') info[i] = (info[i + 1] ? ';' : '\0');
    if (m <= 0) snprintf(info, sizeof info, "flags 0x%x", (unsigned)left);
    dappend(t, "%s%s", n ? "; " : "", info);
  }
  return verify_code(flags);
}

/* A fatal alert from the server. In the clear (tls_record.h) it is named:
** before the ServerHello it answers our ClientHello, and three answers
** have a precise meaning. After the ServerHello (TLS 1.3) or the
** ChangeCipherSpec (TLS 1.2) alerts are encrypted, and mbedTLS 3 has no
** public getter for a received one: then only its error code says that
** one came. */
static int alert_failure(ob__tls_t* t) {
  const ob__tls_sniff_t* sn = &t->sniff;
  int a = sn->alert;

  if (a < 0 || sn->alert_level != MBEDTLS_SSL_ALERT_LEVEL_FATAL) {
    snprintf(t->detail, sizeof t->detail,
             "TLS: '%.96s' sent a fatal alert %s; it was encrypted (%s "
             "protects alerts from the server's %s on), so this client "
             "cannot name it",
             t->host,
             t->handshake_done ? "on an established connection"
                               : "during the handshake",
             sn->hello ? ob__tls_version_name(sn->version) : "TLS",
             sn->version == OB__TLS_V13 ? "ServerHello" : "ChangeCipherSpec");
    return OB__HTTP_E_TLS;
  }
  if (!t->handshake_done && !sn->alert_after_hello) {
    if (a == MBEDTLS_SSL_ALERT_MSG_PROTOCOL_VERSION && !OB__TLS_HAVE_13) {
      snprintf(t->detail, sizeof t->detail,
               "TLS: '%.96s' requires TLS 1.3 (it answered our TLS 1.2 "
               "ClientHello with a protocol_version alert), which this "
               "build's " OB__TLS_LIB " does not speak: it does TLS 1.2 "
               "only. The server must also accept TLS 1.2 with "
               OB__TLS_ALLOWED,
               t->host);
      return OB__HTTP_E_TLS_PROTOCOL;
    }
    if (a == MBEDTLS_SSL_ALERT_MSG_PROTOCOL_VERSION) {
      snprintf(t->detail, sizeof t->detail,
               "TLS: '%.96s' speaks neither TLS 1.3 nor TLS 1.2, the "
               "versions this client offers (it answered our ClientHello "
               "with a protocol_version alert)",
               t->host);
      return OB__HTTP_E_TLS_PROTOCOL;
    }
    if (a == MBEDTLS_SSL_ALERT_MSG_HANDSHAKE_FAILURE ||
        a == MBEDTLS_SSL_ALERT_MSG_INSUFFICIENT_SECURITY) {
      snprintf(t->detail, sizeof t->detail,
               "TLS: '%.96s' accepts none of the TLS %s parameters this "
               "client allows (%s alert in answer to the ClientHello). "
               "Allowed: " OB__TLS_ALLOWED ". A server offering only RSA "
               "key exchange, CBC or CCM-8 suites, DHE, P-192/P-224 or SHA-1 "
               "signatures is refused by design",
               t->host, OB__TLS_HAVE_13 ? "1.2 or 1.3" : "1.2",
               ob__tls_alert_name(a));
      return OB__HTTP_E_TLS_PROTOCOL;
    }
    if (a == MBEDTLS_SSL_ALERT_MSG_UNRECOGNIZED_NAME) {
      snprintf(t->detail, sizeof t->detail,
               "TLS: the server does not serve the name '%.96s' "
               "(unrecognized_name alert to our SNI)",
               t->host);
      return OB__HTTP_E_TLS;
    }
  }
  snprintf(t->detail, sizeof t->detail,
           "TLS: '%.96s' sent a fatal %s alert (%d) %s", t->host,
           ob__tls_alert_name(a), a,
           t->handshake_done ? "on an established connection"
                             : "during the handshake");
  return OB__HTTP_E_TLS;
}

/* A ServerHello with a version or suite we refuse (mbedTLS refuses it;
** this names it). 0 when that is not what happened. */
static int server_hello_failure(ob__tls_t* t) {
  const ob__tls_sniff_t* sn = &t->sniff;
  const char* name;

  if (!sn->hello) return 0;
  if (sn->version < OB__TLS_V12) {
    snprintf(t->detail, sizeof t->detail,
             "TLS: '%.96s' offered a protocol older than TLS 1.2 (it chose "
             "%s)",
             t->host, ob__tls_version_name(sn->version));
    return OB__HTTP_E_TLS_PROTOCOL;
  }
  if (suite_allowed(sn->suite)) return 0;
  name = mbedtls_ssl_get_ciphersuite_name(sn->suite);
  snprintf(t->detail, sizeof t->detail,
           "TLS: '%.96s' chose the cipher suite %s (0x%04x), which this "
           "client did not offer and refuses (allowed: " OB__TLS_ALLOWED ")",
           t->host, name && strcmp(name, "unknown") != 0 ? name : "?",
           sn->suite);
  return OB__HTTP_E_TLS_PROTOCOL;
}

static const char* hash_name(int h) {
  switch (h) {
    case 0: return "no hash";
    case 1: return "MD5";
    case 2: return "SHA-1";
    case 3: return "SHA-224";
    case 4: return "SHA-256";
    case 5: return "SHA-384";
    case 6: return "SHA-512";
    default: return "an unknown hash";
  }
}

/* A TLS 1.2 ServerKeyExchange on a group or with a signature hash we
** refuse. */
static int key_exchange_failure(ob__tls_t* t) {
  const ob__tls_sniff_t* sn = &t->sniff;
  int hash = sn->ske_sigalg >> 8, sig = sn->ske_sigalg & 0xff;

  if (!sn->ske || !sn->ske_named) return 0;
  if (!group_allowed(sn->ske_group)) {
    const mbedtls_ecp_curve_info* ci =
        mbedtls_ecp_curve_info_from_tls_id(sn->ske_group);
    snprintf(t->detail, sizeof t->detail,
             "TLS: '%.96s' chose the ECDHE group %s (0x%04x), which this "
             "client refuses (allowed: x25519, P-256, P-384)",
             t->host, ci ? ci->name : "?", sn->ske_group);
    return OB__HTTP_E_TLS_PROTOCOL;
  }
  /* mbedTLS 3.6.6 offers RSA-PSS (for TLS 1.3) but its TLS 1.2 client
  ** refuses it here (tls_compat.h); a server preferring its own order may
  ** still choose it. */
  if (OB__MBEDTLS3 && sn->version == OB__TLS_V12 && hash == 8 && sig >= 4 &&
      sig <= 6) {
    snprintf(t->detail, sizeof t->detail,
             "TLS: '%.96s' signed its TLS 1.2 key exchange with RSA-PSS "
             "(scheme 0x%04x), which this build's " OB__TLS_LIB " (%s) "
             "refuses under TLS 1.2 although it offered it for TLS 1.3 (an "
             "mbedTLS bug, fixed upstream after 3.6.6). The server must "
             "offer TLS 1.3, or sign TLS 1.2 with RSA PKCS#1 v1.5",
             t->host, sn->ske_sigalg, MBEDTLS_VERSION_STRING);
    return OB__HTTP_E_TLS_PROTOCOL;
  }
  /* (hash, signature) pairs with RSA, DSA or ECDSA; RSA-PSS (0x08..) is
  ** SHA-2 only. */
  if (sn->ske_sigalg != 0 && hash < 4 && sig >= 1 && sig <= 3) {
    snprintf(t->detail, sizeof t->detail,
             "TLS: '%.96s' signed its key exchange with %s, which this client "
             "refuses (allowed: SHA-256, SHA-384, SHA-512)",
             t->host, hash_name(hash));
    return OB__HTTP_E_TLS_PROTOCOL;
  }
  return 0;
}

/* A handshake message split across records: mbedTLS 2.28 cannot put it
** back together (upstream added that in 3.6.3). In practice: a
** certificate chain over 16 KB. Only in the clear: a TLS 1.3 Certificate
** is encrypted. */
static int fragment_failure(ob__tls_t* t) {
  const ob__tls_sniff_t* sn = &t->sniff;
  size_t body = sn->split_len;

  if (t->handshake_done || sn->split_type < 0) return 0;
  if (sn->split_type == MBEDTLS_SSL_HS_CERTIFICATE) {
    if (body > MBEDTLS_SSL_IN_CONTENT_LEN)
      snprintf(t->detail, sizeof t->detail,
               "TLS: the certificate chain of '%.96s' is too large for this "
               "build: its Certificate message is %zu bytes, more than one "
               "TLS record holds (%d), and " OB__TLS_LIB " cannot "
               "reassemble a handshake message split across records. The "
               "server must send a smaller chain (fewer or smaller "
               "certificates, under about 16 KB in all)",
               t->host, body, (int)MBEDTLS_SSL_IN_CONTENT_LEN);
    else
      snprintf(t->detail, sizeof t->detail,
               "TLS: '%.96s' split its Certificate message (%zu bytes) "
               "across TLS records, which this build's " OB__TLS_LIB
               " cannot reassemble",
               t->host, body);
    return OB__HTTP_E_TLS_CERT;
  }
  snprintf(t->detail, sizeof t->detail,
           "TLS: '%.96s' sent a handshake message (type %d, %zu bytes) split "
           "across TLS records, which this build's " OB__TLS_LIB " cannot "
           "reassemble",
           t->host, sn->split_type, body);
  return OB__HTTP_E_TLS;
}

/* A TLS 1.3 Certificate is encrypted, so its size is not in the clear.
** mbedTLS 3.6 refuses a handshake message larger than its record buffer
** with BAD_INPUT_DATA; an encrypted flight larger than that buffer says
** this was the case. */
static int encrypted_size_failure(ob__tls_t* t, int rc) {
  const ob__tls_sniff_t* sn = &t->sniff;
  if (rc != MBEDTLS_ERR_SSL_BAD_INPUT_DATA || sn->version != OB__TLS_V13 ||
      sn->enc_bytes <= MBEDTLS_SSL_IN_CONTENT_LEN)
    return 0;
  snprintf(t->detail, sizeof t->detail,
           "TLS: the certificate chain of '%.96s' is too large for this "
           "build: TLS 1.3 encrypts it, but mbedTLS stopped (bad input "
           "data, -0x%04x) after %zu bytes of encrypted handshake, more than "
           "one record, and " OB__TLS_LIB " takes no handshake message over "
           "%d bytes. The server must send a smaller chain (under about "
           "16 KB in all)",
           t->host, (unsigned)-rc, sn->enc_bytes,
           (int)MBEDTLS_SSL_IN_CONTENT_LEN);
  return OB__HTTP_E_TLS_CERT;
}

/* mbedTLS's error code first where it is unambiguous, then what the
** records show, then mbedTLS's own words. */
static int map_error(ob__tls_t* t, int rc) {
  char mb[160];
  int code;

  switch (rc) {
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
    case MBEDTLS_ERR_SSL_FATAL_ALERT_MESSAGE:
      return alert_failure(t);
    default:
      break;
  }
  if (!t->handshake_done) {
    /* Verification failed (the chain, our name check, or the usage and
    ** key checks mbedTLS does after it): the flags say which. */
    uint32_t flags = mbedtls_ssl_get_verify_result(&t->ssl);
    if (flags != 0 && flags != (uint32_t)-1) return cert_failure(t, flags);
    if ((code = server_hello_failure(t)) != 0) return code;
    if ((code = key_exchange_failure(t)) != 0) return code;
    if (rc == MBEDTLS_ERR_SSL_FEATURE_UNAVAILABLE &&
        (code = fragment_failure(t)) != 0)
      return code;
    if ((code = encrypted_size_failure(t, rc)) != 0) return code;
    if (rc == OB__TLS_ERR_OLD_PROTOCOL) {
      snprintf(t->detail, sizeof t->detail,
               "TLS: '%.96s' offered a protocol older than TLS 1.2", t->host);
      return OB__HTTP_E_TLS_PROTOCOL;
    }
  }
  mbedtls_strerror(rc, mb, sizeof mb);
  snprintf(t->detail, sizeof t->detail, "TLS: %s%s (-0x%04x)",
           t->handshake_done ? "" : "handshake failed: ", mb, (unsigned)-rc);
  if (!t->handshake_done && t->sniff.hello) {
    /* What the server had chosen, as far as the clear text shows. */
    const char* name = mbedtls_ssl_get_ciphersuite_name(t->sniff.suite);
    dappend(t, "; the server chose %s, %s (0x%04x)",
            ob__tls_version_name(t->sniff.version), name, t->sniff.suite);
    if (t->sniff.ske_sigalg != 0)
      dappend(t, ", its key exchange signed with scheme 0x%04x",
              t->sniff.ske_sigalg);
  }
  return OB__HTTP_E_TLS;
}

const char* ob__tls_version(const ob__tls_t* t) {
  return t->handshake_done ? mbedtls_ssl_get_version(&t->ssl) : "";
}

const char* ob__tls_suite(const ob__tls_t* t) {
  return t->handshake_done ? mbedtls_ssl_get_ciphersuite(&t->ssl) : "";
}

/* ---- session ------------------------------------------------------------ */

int ob__tls_init(ob__tls_t* t, ob__tls_conf_t* tc, const char* hostname,
                 size_t out_cap) {
  size_t len;
  int rc;

  memset(t, 0, sizeof *t);
  mbedtls_ssl_init(&t->ssl);  /* first: makes ob__tls_free always safe */
  ob__tls_sniff_init(&t->sniff);
  t->out_cap = out_cap ? out_cap : OB__TLS_OUT_CAP;
  len = hostname ? strlen(hostname) : 0;
  if (len > 1 && hostname[len - 1] == '.') len--; /* "a.test." is "a.test" */
  if (len == 0 || (len == 1 && hostname[0] == '.')) {
    snprintf(t->detail, sizeof t->detail,
             "TLS: refusing to connect without a hostname to verify");
    return t->failed = OB__HTTP_E_TLS_NO_HOSTNAME;
  }
  if (len > OB__HTTP_HOST_MAX) {
    snprintf(t->detail, sizeof t->detail, "TLS: hostname too long");
    return t->failed = OB__HTTP_E_TLS_NO_HOSTNAME;
  }
  memcpy(t->host, hostname, len);
  t->host[len] = '\0';
  if (inet_pton(AF_INET, t->host, t->ip) == 1)
    t->ip_len = 4;
  else if (inet_pton(AF_INET6, t->host, t->ip) == 1)
    t->ip_len = 16;
  rc = mbedtls_ssl_setup(&t->ssl, &tc->conf);
  if (rc != 0) return t->failed = map_error(t, rc);
  if (t->ip_len == 0) {
    /* Sets SNI and the name mbedTLS checks; verify_cb checks it again. */
    rc = mbedtls_ssl_set_hostname(&t->ssl, t->host);
  } else {
    /* An IP literal: no SNI (RFC 6066 section 3 forbids it) and no name
    ** for mbedTLS, which would compare it with dNSNames and the CN;
    ** verify_cb matches the address against iPAddress SANs instead. The
    ** explicit NULL is the opt-out mbedTLS >= 2.28.10 requires (there a
    ** handshake without set_hostname fails); on 2.28.3 it is a no-op. */
    rc = mbedtls_ssl_set_hostname(&t->ssl, NULL);
  }
  if (rc != 0) return t->failed = map_error(t, rc);
  /* Per session, so the callback knows this session's host. */
  mbedtls_ssl_set_verify(&t->ssl, verify_cb, t);
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
  /* A TLS 1.3 NewSessionTicket (mbedTLS 3) is no data: read on. */
  while ((rc = mbedtls_ssl_read(&t->ssl, buf, len)) == OB__TLS_ERR_NEW_TICKET &&
         OB__MBEDTLS3) {
  }
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
