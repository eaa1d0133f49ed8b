/* SPDX-License-Identifier: Apache-2.0 */
/* The plaintext TLS records from the server: see tls_record.h. */
#include "platform/http/tls_record.h"

#include <string.h>

enum {
  REC_CCS = 20,
  REC_ALERT = 21,
  REC_HANDSHAKE = 22,
  HS_SERVER_HELLO = 2,
  HS_SERVER_KEY_EXCHANGE = 12,
  EXT_SUPPORTED_VERSIONS = 0x002b,
  /* 2^14 plus the expansion TLS 1.2 allows; longer is not a TLS record. */
  REC_MAX = 16384 + 2048
};

/* RFC 8446 section 4.1.3: a ServerHello with this random is a
** HelloRetryRequest. */
static const uint8_t k_hrr_random[32] = {
    0xCF, 0x21, 0xAD, 0x74, 0xE5, 0x9A, 0x61, 0x11, 0xBE, 0x1D, 0x8C,
    0x02, 0x1E, 0x65, 0xB8, 0x91, 0xC2, 0xA2, 0x11, 0x16, 0x7A, 0xBB,
    0x8C, 0x5E, 0x07, 0x9E, 0x09, 0xE2, 0xC8, 0xA8, 0x33, 0x9C};

void ob__tls_sniff_init(ob__tls_sniff_t* s) {
  memset(s, 0, sizeof *s);
  s->alert = -1;
  s->split_type = -1;
}

static unsigned get16(const uint8_t* p) { return (unsigned)(p[0] << 8 | p[1]); }

/* version(2) random(32) session_id(1+n) suite(2) compression(1)
** [extensions(2+n)]: only what the ServerHello holds in full. */
static void server_hello(ob__tls_sniff_t* s, const uint8_t* b, size_t n) {
  size_t p, end;
  uint16_t version;

  if (n < 35) return;
  p = 35 + b[34];
  if (n < p + 3) return;
  version = (uint16_t)get16(b);
  if (memcmp(b + 2, k_hrr_random, 32) == 0) {
    s->hrr++;
    return; /* the real ServerHello follows, still in the clear */
  }
  s->hello = 1;
  s->suite = (uint16_t)get16(b + p);
  p += 3;
  if (n >= p + 2) {
    end = p + 2 + get16(b + p);
    if (end > n) end = n;
    for (p += 2; p + 4 <= end; p += 4 + get16(b + p + 2))
      if (get16(b + p) == EXT_SUPPORTED_VERSIONS && get16(b + p + 2) == 2 &&
          p + 6 <= end)
        version = (uint16_t)get16(b + p + 4);
  }
  s->version = version;
  if (version == OB__TLS_V13) s->encrypted = 1;
}

/* ECParameters: curve_type(1) = 3 named_curve, NamedCurve(2); ECPoint(1+n);
** then SignatureAndHashAlgorithm(2). */
static void key_exchange(ob__tls_sniff_t* s, const uint8_t* b, size_t n) {
  s->ske = 1;
  if (n < 4 || b[0] != 3) return;
  s->ske_named = 1;
  s->ske_group = (uint16_t)get16(b + 1);
  if (n >= 4 + (size_t)b[3] + 2) s->ske_sigalg = (uint16_t)get16(b + 4 + b[3]);
}

static void message_done(ob__tls_sniff_t* s) {
  size_t kept = s->hs_have - 4;
  if (s->hs[0] == HS_SERVER_HELLO) server_hello(s, s->hs + 4, kept);
  if (s->hs[0] == HS_SERVER_KEY_EXCHANGE) key_exchange(s, s->hs + 4, kept);
  s->hs_have = s->hs_total = s->hs_seen = 0;
}

/* n bytes of a plaintext handshake record's body. */
static void handshake_bytes(ob__tls_sniff_t* s, const uint8_t* p, size_t n) {
  while (n > 0 && !s->encrypted) {
    size_t want, take;
    if (s->hs_total == 0) {
      s->hs[s->hs_have++] = *p++;
      n--;
      s->hs_seen++;
      if (s->hs_have == 4)
        s->hs_total = 4 + ((size_t)s->hs[1] << 16 | (size_t)s->hs[2] << 8 |
                           s->hs[3]);
    } else {
      want = s->hs_total - s->hs_seen;
      take = n < want ? n : want;
      if (s->hs_have < sizeof s->hs) {
        size_t keep = sizeof s->hs - s->hs_have;
        if (keep > take) keep = take;
        memcpy(s->hs + s->hs_have, p, keep);
        s->hs_have += keep;
      }
      s->hs_seen += take;
      p += take;
      n -= take;
    }
    if (s->hs_total != 0 && s->hs_seen == s->hs_total) message_done(s);
  }
}

static void record_done(ob__tls_sniff_t* s) {
  uint8_t type = s->hdr[0];
  if (type == REC_ALERT && s->ahave == 2) {
    s->alert_level = s->abuf[0];
    s->alert = s->abuf[1];
    s->alert_after_hello = s->hello;
  }
  if (type == REC_HANDSHAKE && s->hs_seen > 0 && s->split_type < 0 &&
      !s->encrypted) {
    /* A message goes on in the next record. */
    s->split_type = s->hs_have > 0 ? s->hs[0] : -1;
    s->split_len = s->hs_total ? s->hs_total - 4 : 0;
  }
  if (s->ccs_pending) s->encrypted = 1;
  s->ccs_pending = 0;
  s->hdr_have = 0;
  s->ahave = 0;
}

void ob__tls_sniff_feed(ob__tls_sniff_t* s, const uint8_t* p, size_t n) {
  while (n > 0 && !s->lost) {
    if (s->hdr_have < 5) {
      s->hdr[s->hdr_have++] = *p++;
      n--;
      if (s->hdr_have < 5) continue;
      s->body_left = get16(s->hdr + 3);
      if (s->hdr[0] < REC_CCS || s->hdr[0] > 24 || s->hdr[1] != 3 ||
          s->body_left > REC_MAX) {
        s->lost = 1;
        return;
      }
      /* In TLS 1.3 (and after a HelloRetryRequest) a ChangeCipherSpec is
      ** a no-op for middleboxes; in TLS 1.2 it follows the ServerHello. */
      s->ccs_pending = s->hdr[0] == REC_CCS && s->hello &&
                       s->version != OB__TLS_V13;
      if (s->body_left == 0) record_done(s);
      continue;
    }
    {
      size_t take = n < s->body_left ? n : s->body_left;
      if (s->hdr[0] == REC_ALERT && get16(s->hdr + 3) == 2) {
        memcpy(s->abuf + s->ahave, p, take);
        s->ahave += take;
      }
      if (s->hdr[0] == REC_HANDSHAKE && !s->encrypted)
        handshake_bytes(s, p, take);
      if (s->hdr[0] == 23) s->enc_bytes += take;
      p += take;
      n -= take;
      s->body_left -= take;
      if (s->body_left == 0) record_done(s);
    }
  }
}

const char* ob__tls_alert_name(int a) {
  switch (a) {
    case 0: return "close_notify";
    case 10: return "unexpected_message";
    case 20: return "bad_record_mac";
    case 22: return "record_overflow";
    case 40: return "handshake_failure";
    case 42: return "bad_certificate";
    case 43: return "unsupported_certificate";
    case 44: return "certificate_revoked";
    case 45: return "certificate_expired";
    case 46: return "certificate_unknown";
    case 47: return "illegal_parameter";
    case 48: return "unknown_ca";
    case 49: return "access_denied";
    case 50: return "decode_error";
    case 51: return "decrypt_error";
    case 70: return "protocol_version";
    case 71: return "insufficient_security";
    case 80: return "internal_error";
    case 86: return "inappropriate_fallback";
    case 90: return "user_canceled";
    case 109: return "missing_extension";
    case 110: return "unsupported_extension";
    case 112: return "unrecognized_name";
    case 116: return "certificate_required";
    case 120: return "no_application_protocol";
    default: return "unknown";
  }
}

const char* ob__tls_version_name(uint16_t v) {
  switch (v) {
    case 0x0300: return "SSL 3.0";
    case 0x0301: return "TLS 1.0";
    case 0x0302: return "TLS 1.1";
    case OB__TLS_V12: return "TLS 1.2";
    case OB__TLS_V13: return "TLS 1.3";
    default: return "an unknown version";
  }
}
