/* SPDX-License-Identifier: Apache-2.0 */
/*
** mbedTLS 2.28 (Debian 12) and 3.6 (Debian 13) from one source: every
** difference the TLS engine and its tests meet, here and nowhere else.
** Public API only on both (no MBEDTLS_ALLOW_PRIVATE_ACCESS); what 3.x made
** private is read from the records instead (tls_record.h). Debian builds
** 3.6 with MBEDTLS_DEPRECATED_WARNING, so the 3.x branch uses no
** deprecated name either.
** docs/decisions/0022-llhttp-and-mbedtls-generations.md.
*/
#ifndef OB_PLATFORM_HTTP_TLS_COMPAT_H
#define OB_PLATFORM_HTTP_TLS_COMPAT_H

#include <stdint.h>

#include <mbedtls/ctr_drbg.h>
#include <mbedtls/oid.h> /* 2.28: MBEDTLS_X509_EXT_* are OID flags */
#include <mbedtls/pk.h>
#include <mbedtls/ssl.h>
#include <mbedtls/version.h>
#include <mbedtls/x509_crt.h>

#if MBEDTLS_VERSION_MAJOR >= 3
#define OB__MBEDTLS3 1
#include <psa/crypto.h>
#else
#define OB__MBEDTLS3 0
#endif

/* This build can speak TLS 1.3 (3.x with it compiled in, as Debian's). */
#if OB__MBEDTLS3 && defined(MBEDTLS_SSL_PROTO_TLS1_3)
#define OB__TLS_HAVE_13 1
#else
#define OB__TLS_HAVE_13 0
#endif

#define OB__TLS_STR2(x) #x
#define OB__TLS_STR(x) OB__TLS_STR2(x)
/* "mbedTLS 2.28", "mbedTLS 3.6": for the failure messages. */
#define OB__TLS_LIB                                    \
  "mbedTLS " OB__TLS_STR(MBEDTLS_VERSION_MAJOR) "." OB__TLS_STR( \
      MBEDTLS_VERSION_MINOR)

/* The newest version offered, and the TLS 1.3 suites of the allow-list:
** the AEAD ones (no CCM, no CCM-8), only where the library speaks 1.3. */
#if OB__TLS_HAVE_13
#define OB__TLS_MAX_VERSION 0x0304
#define OB__TLS13_SUITES                                                     \
  MBEDTLS_TLS1_3_AES_128_GCM_SHA256, MBEDTLS_TLS1_3_AES_256_GCM_SHA384,    \
      MBEDTLS_TLS1_3_CHACHA20_POLY1305_SHA256,
#else
#define OB__TLS_MAX_VERSION 0x0303
#define OB__TLS13_SUITES
#endif

/* ---- error codes 3.x renamed -------------------------------------------- */
#if OB__MBEDTLS3
#define OB__TLS_ERR_OLD_PROTOCOL MBEDTLS_ERR_SSL_BAD_PROTOCOL_VERSION
/* A TLS 1.3 ticket after the handshake: nothing to deliver, read again. */
#define OB__TLS_ERR_NEW_TICKET MBEDTLS_ERR_SSL_RECEIVED_NEW_SESSION_TICKET
#else
#define OB__TLS_ERR_OLD_PROTOCOL MBEDTLS_ERR_SSL_BAD_HS_PROTOCOL_VERSION
#define OB__TLS_ERR_NEW_TICKET MBEDTLS_ERR_SSL_WANT_READ /* never a ticket */
#endif

/* ---- versions, as on the wire (0x0303 TLS 1.2, 0x0304 TLS 1.3) ---------- */
static inline void ob__tls_conf_versions(mbedtls_ssl_config* c, uint16_t min,
                                         uint16_t max) {
#if OB__MBEDTLS3
  /* mbedtls_ssl_protocol_version is the wire number. */
  mbedtls_ssl_conf_min_tls_version(c, (mbedtls_ssl_protocol_version)min);
  mbedtls_ssl_conf_max_tls_version(c, (mbedtls_ssl_protocol_version)max);
#else
  mbedtls_ssl_conf_min_version(c, min >> 8, min & 0xff);
  mbedtls_ssl_conf_max_version(c, max >> 8, max & 0xff);
#endif
}

/* ---- groups: 2.28 names them by curve, 3.x by their TLS number ----------- */
#if OB__MBEDTLS3
typedef uint16_t ob__tls_group_t;
#define OB__TLS_GROUP_X25519 MBEDTLS_SSL_IANA_TLS_GROUP_X25519
#define OB__TLS_GROUP_P256 MBEDTLS_SSL_IANA_TLS_GROUP_SECP256R1
#define OB__TLS_GROUP_P384 MBEDTLS_SSL_IANA_TLS_GROUP_SECP384R1
#define OB__TLS_GROUP_END MBEDTLS_SSL_IANA_TLS_GROUP_NONE
#else
typedef mbedtls_ecp_group_id ob__tls_group_t;
#define OB__TLS_GROUP_X25519 MBEDTLS_ECP_DP_CURVE25519
#define OB__TLS_GROUP_P256 MBEDTLS_ECP_DP_SECP256R1
#define OB__TLS_GROUP_P384 MBEDTLS_ECP_DP_SECP384R1
#define OB__TLS_GROUP_END MBEDTLS_ECP_DP_NONE
#endif

/* A curve's group as this mbedTLS names it (tests configure servers). */
static inline ob__tls_group_t ob__tls_group_of(mbedtls_ecp_group_id id) {
#if OB__MBEDTLS3
  const mbedtls_ecp_curve_info* ci = mbedtls_ecp_curve_info_from_grp_id(id);
  return ci != NULL ? ci->tls_id : OB__TLS_GROUP_END;
#else
  return id;
#endif
}

/* The list is kept by pointer: it must outlive the config. */
static inline void ob__tls_conf_groups(mbedtls_ssl_config* c,
                                       const ob__tls_group_t* g) {
#if OB__MBEDTLS3
  mbedtls_ssl_conf_groups(c, g);
#else
  mbedtls_ssl_conf_curves(c, g);
#endif
}

/* ---- signature algorithms: 2.28 takes hashes, 3.x SignatureSchemes ------ */
#if OB__MBEDTLS3
typedef uint16_t ob__tls_sig_t;
#define OB__TLS_SIG(md_2x, scheme_3x) (scheme_3x)
#define OB__TLS_SIG_END MBEDTLS_TLS1_3_SIG_NONE
#else
typedef int ob__tls_sig_t;
#define OB__TLS_SIG(md_2x, scheme_3x) (md_2x)
#define OB__TLS_SIG_END MBEDTLS_MD_NONE
#endif

/* The allowed ones (docs/security.md "TLS parameters"): SHA-256/384/512
** with ECDSA or RSA; 3.x names them per scheme, so RSA-PSS too (TLS 1.3
** signs with it; PKCS#1 v1.5 stays for TLS 1.2 and certificates).
** PKCS#1 before PSS: mbedTLS 3.6.6's TLS 1.2 client refuses a
** ServerKeyExchange signed with RSA-PSS (upstream Mbed-TLS/mbedtls#10674,
** after 3.6.6), and a TLS 1.2 server (OpenSSL by default) follows the
** client's order. TLS 1.3 allows no PKCS#1 there and takes PSS. */
#if OB__MBEDTLS3
#define OB__TLS_SIGS_ALLOWED                                                 \
  MBEDTLS_TLS1_3_SIG_ECDSA_SECP256R1_SHA256,                                \
      MBEDTLS_TLS1_3_SIG_ECDSA_SECP384R1_SHA384,                            \
      MBEDTLS_TLS1_3_SIG_ECDSA_SECP521R1_SHA512,                            \
      MBEDTLS_TLS1_3_SIG_RSA_PKCS1_SHA256, MBEDTLS_TLS1_3_SIG_RSA_PKCS1_SHA384, \
      MBEDTLS_TLS1_3_SIG_RSA_PKCS1_SHA512,                                  \
      MBEDTLS_TLS1_3_SIG_RSA_PSS_RSAE_SHA256,                               \
      MBEDTLS_TLS1_3_SIG_RSA_PSS_RSAE_SHA384,                               \
      MBEDTLS_TLS1_3_SIG_RSA_PSS_RSAE_SHA512
#else
#define OB__TLS_SIGS_ALLOWED MBEDTLS_MD_SHA512, MBEDTLS_MD_SHA384, MBEDTLS_MD_SHA256
#endif

static inline void ob__tls_conf_sigs(mbedtls_ssl_config* c,
                                     const ob__tls_sig_t* s) {
#if OB__MBEDTLS3
  mbedtls_ssl_conf_sig_algs(c, s);
#else
  mbedtls_ssl_conf_sig_hashes(c, s);
#endif
}

/* ---- certificates -------------------------------------------------------- */
static inline int ob__tls_crt_has_san(const mbedtls_x509_crt* crt) {
#if OB__MBEDTLS3
  return mbedtls_x509_crt_has_ext_type(crt, MBEDTLS_X509_EXT_SUBJECT_ALT_NAME);
#else
  return (crt->ext_types & MBEDTLS_X509_EXT_SUBJECT_ALT_NAME) != 0;
#endif
}

/* 3.x wants an RNG for the blinding of a private key's checks. */
static inline int ob__tls_pk_parse_keyfile(mbedtls_pk_context* pk,
                                           const char* path,
                                           mbedtls_ctr_drbg_context* drbg) {
#if OB__MBEDTLS3
  return mbedtls_pk_parse_keyfile(pk, path, NULL, mbedtls_ctr_drbg_random,
                                  drbg);
#else
  (void)drbg;
  return mbedtls_pk_parse_keyfile(pk, path, NULL);
#endif
}

/* ---- PSA: 3.x's TLS 1.3 (and its key exchanges) run on PSA crypto -------- */
/* 0 or a PSA status; idempotent. Call through ob__tls_crypto_init (once). */
static inline int ob__tls_psa_init(void) {
#if OB__MBEDTLS3
  return (int)psa_crypto_init();
#else
  return 0;
#endif
}

#endif
