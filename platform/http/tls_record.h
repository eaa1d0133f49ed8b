/* SPDX-License-Identifier: Apache-2.0 */
/*
** What the server said in the clear, read from the TLS records mbedTLS is
** fed (tls.c's receive callback hands every byte here too). The failure
** messages need the alert the server sent and the version, suite or group
** it chose; mbedTLS 3 keeps those in private fields, and a record parser
** sees them the same way under every mbedTLS version.
**
** Only plaintext is read: records before the server's ChangeCipherSpec
** (TLS 1.2) or before its ServerHello chose TLS 1.3 (after that everything
** but a HelloRetryRequest is encrypted under the handshake keys). Any
** chunking of the byte stream gives the same result.
*/
#ifndef OB_PLATFORM_HTTP_TLS_RECORD_H
#define OB_PLATFORM_HTTP_TLS_RECORD_H

#include <stddef.h>
#include <stdint.h>

/* Bytes kept of one handshake message: a ServerHello, or the start of a
** ServerKeyExchange up to its signature algorithm, fits. */
#define OB__TLS_SNIFF_KEEP 1024

#define OB__TLS_V12 0x0303
#define OB__TLS_V13 0x0304

typedef struct ob__tls_sniff_s {
  /* record layer */
  uint8_t hdr[5];
  size_t hdr_have;
  size_t body_left;   /* of the current record */
  int lost;           /* not TLS records (or too long): sniffing stopped */
  int encrypted;      /* the server's records are protected from here on */
  int ccs_pending;    /* the current record is a TLS 1.2 ChangeCipherSpec */
  uint8_t abuf[2];    /* the current record, when it is a 2-byte alert */
  size_t ahave;
  /* the plaintext handshake stream, message by message */
  uint8_t hs[OB__TLS_SNIFF_KEEP];
  size_t hs_have;     /* bytes kept: header (4) and the start of the body */
  size_t hs_total;    /* 4 + body length; 0 while the header is incomplete */
  size_t hs_seen;     /* bytes of the current message seen */
  /* findings */
  int alert;          /* description of the last plaintext alert, or -1 */
  int alert_level;    /* 1 warning, 2 fatal */
  int alert_after_hello; /* it came after the ServerHello */
  int hello;          /* a ServerHello (not a HelloRetryRequest) arrived */
  int hrr;            /* HelloRetryRequests */
  uint16_t version;   /* chosen: supported_versions if present, else legacy */
  uint16_t suite;
  int ske;            /* a ServerKeyExchange (TLS 1.2) arrived */
  int ske_named;      /* with a named group (curve_type 3) */
  uint16_t ske_group;
  uint16_t ske_sigalg; /* hash << 8 | signature; 0 when cut off */
  size_t enc_bytes;   /* bodies of application_data records (encrypted) */
  int split_type;     /* first handshake message split across records, -1 */
  size_t split_len;   /* its body length */
} ob__tls_sniff_t;

void ob__tls_sniff_init(ob__tls_sniff_t* s);
/* The next n bytes the server sent, in order. */
void ob__tls_sniff_feed(ob__tls_sniff_t* s, const uint8_t* p, size_t n);

/* RFC 8446 / 5246 names: "handshake_failure", or "unknown". */
const char* ob__tls_alert_name(int desc);
/* "TLS 1.2", "TLS 1.3", "TLS 1.1", ... or "an unknown version". */
const char* ob__tls_version_name(uint16_t v);

#endif
