/* SPDX-License-Identifier: Apache-2.0 */
/* The fence's rules, as pure functions: the idempotency key of an effect,
** what to do with an open effect, and what a provider's answer means. */
#include <mbedtls/md.h>
#include <stdio.h>
#include <string.h>

#include "core/fence/fence.h"
#include "core/util/assert.h"
#include "core/util/json_check.h"
#include "core/util/peer_text.h"
#include "core/util/uuid.h"

int ob__fence_idempotency_key(const char* key, char out[OB_UUID_BUFLEN]) {
  static const char prefix[] = "oncebox/fence/v1";  /* + its NUL */
  static const char hex[] = "0123456789abcdef";
  const mbedtls_md_info_t* md = mbedtls_md_info_from_type(MBEDTLS_MD_SHA256);
  mbedtls_md_context_t ctx;
  unsigned char d[32];
  int rc, o = 0;

  if (md == NULL) return OB_EIO;
  mbedtls_md_init(&ctx);
  rc = mbedtls_md_setup(&ctx, md, 0);
  if (rc == 0) rc = mbedtls_md_starts(&ctx);
  if (rc == 0)
    rc = mbedtls_md_update(&ctx, (const unsigned char*)prefix, sizeof prefix);
  if (rc == 0)
    rc = mbedtls_md_update(&ctx, (const unsigned char*)key, strlen(key));
  if (rc == 0) rc = mbedtls_md_finish(&ctx, d);
  mbedtls_md_free(&ctx);
  if (rc != 0) return OB_EIO;
  /* RFC 9562 UUIDv8: custom bits with the version and variant set. */
  d[6] = (unsigned char)((d[6] & 0x0f) | 0x80);
  d[8] = (unsigned char)((d[8] & 0x3f) | 0x80);
  for (int i = 0; i < 16; i++) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out[o++] = '-';
    out[o++] = hex[d[i] >> 4];
    out[o++] = hex[d[i] & 15];
  }
  OB__ASSERT(o == OB_UUID_STRLEN);
  out[o] = '\0';
  return 0;
}

int64_t ob__fence_key_deadline_ms(int64_t key_retention_ms) {
  return key_retention_ms - key_retention_ms / 8;
}

ob__fence_action_t ob__fence_next_action(const ob__fence_facts_t* f) {
#ifdef OB_MUTANT_FENCE_BLIND_RERUN
  /* MUTANT for tests/integration/fence only: re-run every open effect
  ** blindly. Built into a separate test library; never define it
  ** elsewhere. */
  (void)f;
  return OB__FENCE_CALL;
#endif
#ifdef OB_MUTANT_FENCE_IGNORE_KEY_AGE
  /* MUTANT for tests/integration/fence only: ignore the key's age (the rule
  ** before issue 14: with idempotency keys, always call again, however long
  ** ago). Built into a separate test library; never define it elsewhere. */
  if (f->fresh || f->idempotency_keys) return OB__FENCE_CALL;
  return f->has_lookup ? OB__FENCE_LOOKUP : OB__FENCE_PARK;
#endif
  /* Never sent: nothing to repeat, nothing to look up. */
  if (f->fresh) return OB__FENCE_CALL;
  /* Maybe sent, long ago: the provider may have pruned the key, and then
  ** a repeat is a new request and a lookup by key finds "never seen". */
  if (f->key_retention_ms > 0 &&
      f->key_age_ms >= ob__fence_key_deadline_ms(f->key_retention_ms))
    return f->has_reference_lookup ? OB__FENCE_LOOKUP_REFERENCE
                                   : OB__FENCE_PARK_KEY_EXPIRED;
  /* Maybe sent. The provider answers a repeated key with the original
  ** result, so repeating is the reconciliation. */
  if (f->idempotency_keys) return OB__FENCE_CALL;
  /* Otherwise only a lookup can tell whether the first call happened. */
  if (f->has_lookup) return OB__FENCE_LOOKUP;
  if (f->has_reference_lookup) return OB__FENCE_LOOKUP_REFERENCE;
  return OB__FENCE_PARK;
}

static int retryable_4xx(int status) {
  /* Request Timeout, Too Early, Too Many Requests: the provider has not
  ** decided. (409 is the key in flight: OB__ANSWER_IN_FLIGHT.) */
  return status == 408 || status == 425 || status == 429;
}

static const char* member(const char* text, size_t len, const char* name);
static int string_value(const char* v, char* out, size_t outlen);

/* error.type and error.code of a {"error":{...}} body (Stripe's shape),
** "" when absent. */
static void error_kind(const ob_effect_reply_t* r, char* type, char* code,
                       size_t n) {
  const char* err;
  type[0] = code[0] = '\0';
  if (r->body == NULL || r->body_len == 0 || !ob__json_valid(r->body,
                                                            r->body_len))
    return;
  err = member(r->body, r->body_len, "error");
  if (err == NULL || *err != '{') return;
  {
    size_t olen = ob__json_scan(err, r->body_len - (size_t)(err - r->body));
    (void)string_value(member(err, olen, "type"), type, n);
    (void)string_value(member(err, olen, "code"), code, n);
  }
}

ob__fence_answer_t ob__fence_classify(int lookup,
                                      const ob_effect_reply_t* reply) {
  int s = reply->status;
  char type[64], code[64];
  if (s < 0) return reply->sent ? OB__ANSWER_UNKNOWN : OB__ANSWER_NOT_SENT;
  if (s >= 200 && s <= 299 && lookup != 2) return OB__ANSWER_CONFIRMED;
  /* Credentials refused: the provider acted on nothing. A configuration
  ** fault must not fail (or use up the retries of) every effect. */
  if (s == 401 || s == 403) return OB__ANSWER_NOT_SENT;
  if (lookup == 2) {
    char ref[8];
    if (s == 404) return OB__ANSWER_ABSENT;
    if (s < 200 || s > 299) return OB__ANSWER_UNKNOWN;
    switch (ob__fence_found(reply->body, reply->body_len, ref, sizeof ref)) {
      case 0: return OB__ANSWER_ABSENT;
      case 1: return OB__ANSWER_CONFIRMED;
      case 2: return OB__ANSWER_CONFLICT;
      default: return OB__ANSWER_UNKNOWN;  /* not an answer we can read */
    }
  }
  if (lookup) return s == 404 ? OB__ANSWER_ABSENT : OB__ANSWER_UNKNOWN;
  /* draft-ietf-httpapi-idempotency-key-header: 409 while the first request
  ** with the key is processed, 422 when the key is reused with another
  ** payload. Stripe: 409 idempotency_key_in_use, 400 idempotency_error for
  ** other parameters under the same key. */
  if (s == 409) return OB__ANSWER_IN_FLIGHT;
  if (s == 422) return OB__ANSWER_CONFLICT;
  if (s == 400) {
    error_kind(reply, type, code, sizeof type);
    if (strcmp(code, "idempotency_key_in_use") == 0)
      return OB__ANSWER_IN_FLIGHT;
    if (strstr(type, "idempotency") != NULL ||
        strstr(code, "idempotency") != NULL)
      return OB__ANSWER_CONFLICT;
  }
  /* Stripe saves a 5xx for the key and replays it, marked
  ** Idempotent-Replayed: repeating the call will never change it. */
  if (s >= 500 && s <= 599 && reply->replayed)
    return OB__ANSWER_REPLAYED_ERROR;
  if (s >= 400 && s <= 499 && !retryable_4xx(s)) return OB__ANSWER_FAILED;
  /* 5xx, the retryable 4xx, and anything unexpected (1xx, 3xx): the call
  ** may have been carried out. */
  return OB__ANSWER_UNKNOWN;
}

/* The value of member `name` of the JSON object at text, or NULL. */
static const char* member(const char* text, size_t len, const char* name) {
  const char* names[1] = {name};
  const char* val[1] = {NULL};
  if (ob__json_skip_ws(text)[0] != '{') return NULL;
  (void)ob__json_members(text, len, names, 1, val, NULL);
  return val[0];
}

/* Decode a JSON string value into out; 0 if it is one, -1 otherwise. */
static int string_value(const char* v, char* out, size_t outlen) {
  size_t n;
  if (v == NULL || *v != '"') return -1;
  n = ob__json_str_decode(v, out, outlen);
  if (n >= outlen) out[outlen - 1] = '\0';
  /* Keep references printable: a NUL or 0xFF from an escape ends it. */
  for (size_t i = 0; out[i] != '\0'; i++)
    if ((unsigned char)out[i] < 0x20 || (unsigned char)out[i] > 0x7e) {
      out[i] = '\0';
      break;
    }
  return 0;
}

int ob__fence_reference(const char* body, size_t len, char* out,
                        size_t outlen) {
  out[0] = '\0';
  if (body == NULL || len == 0 || !ob__json_valid(body, len)) return -1;
  if (string_value(member(body, len, "id"), out, outlen) != 0 ||
      out[0] == '\0')
    return -1;
  return 0;
}

int ob__fence_found(const char* body, size_t len, char* out, size_t outlen) {
  const char* data;
  out[0] = '\0';
  if (body == NULL || len == 0 || !ob__json_valid(body, len)) return -1;
  data = member(body, len, "data");
  if (data == NULL)
    return ob__fence_reference(body, len, out, outlen) == 0 ? 1 : -1;
  if (*data != '[') return -1;
  {
    /* Count the array's entries: the first one's id, whether a second. */
    const char* p = ob__json_skip_ws(data + 1);
    size_t rest = len - (size_t)(p - body), n1;
    if (*p == ']') return 0;
    if (*p != '{') return -1;
    n1 = ob__json_scan(p, rest);
    if (n1 == 0) return -1;
    if (string_value(member(p, n1, "id"), out, outlen) != 0 || out[0] == '\0')
      return -1;
    p = ob__json_skip_ws(p + n1);
    return *p == ',' ? 2 : 1;
  }
}

void ob__fence_reason(const ob_effect_reply_t* reply, char* out,
                      size_t outlen) {
  char code[64] = "", msg[256] = "";
  const char* body = reply->body;
  size_t len = reply->body_len;

  if (reply->status < 0) {
    snprintf(out, outlen, "no answer: %s",
             reply->detail && reply->detail[0] ? reply->detail
                                                : ob_strerror(reply->status));
    return;
  }
  if (body != NULL && len > 0 && ob__json_valid(body, len)) {
    const char* err = member(body, len, "error");
    const char* obj = body;
    size_t olen = len;
    if (err != NULL && *err == '{') {
      obj = err;
      olen = ob__json_scan(err, len - (size_t)(err - body));
    } else if (err != NULL) {
      (void)string_value(err, msg, sizeof msg);
    }
    if (msg[0] == '\0') {
      if (string_value(member(obj, olen, "code"), code, sizeof code) != 0)
        (void)string_value(member(obj, olen, "type"), code, sizeof code);
      (void)string_value(member(obj, olen, "message"), msg, sizeof msg);
    }
  }
  if (msg[0] == '\0' && body != NULL && len > 0) {
    /* Not the expected shape: the first bytes, printable only. */
    size_t i, n = len < sizeof msg - 1 ? len : sizeof msg - 1;
    for (i = 0; i < n; i++) {
      unsigned char c = (unsigned char)body[i];
      msg[i] = c >= 0x20 && c <= 0x7e ? (char)c : '?';
    }
    msg[i] = '\0';
  }
  {
    /* Through the one cleaning every peer text gets: a provider or gateway
    ** may echo the credentials of the request. */
    char raw[512];
    int k = snprintf(raw, sizeof raw, "%d%s%s%s%s", reply->status,
                     code[0] ? " " : "", code, msg[0] ? ": " : "", msg);
    if (k < 0) k = 0;
    if ((size_t)k >= sizeof raw) k = (int)sizeof raw - 1;
    ob__peer_text(raw, (size_t)k, out, outlen);
  }
}

/* ---- offline limits --------------------------------------------------------- */

int ob__fence_link_answer(const ob_effect_reply_t* reply) {
  if (reply->status == OB_ECANCELED) return -1;
  if (reply->status < 0) return 1;
  if (reply->status == 401 || reply->status == 403) return 1;
  return 0;
}

const ob_offline_limit_t* ob__offline_limit_find(const ob_offline_limit_t* l,
                                                 size_t n,
                                                 const char* currency) {
  for (size_t i = 0; currency != NULL && i < n; i++)
    if (l[i].currency != NULL && strcmp(l[i].currency, currency) == 0)
      return &l[i];
  return NULL;
}

int ob__offline_check(const ob_offline_limit_t* limit, int unlisted,
                      const char* currency, int64_t amount, int64_t count,
                      int64_t total, char* why, size_t whylen) {
  if (whylen > 0) why[0] = '\0';
  if (limit == NULL) {
    if (unlisted != OB_OFFLINE_REFUSE) return 0;
    snprintf(why, whylen, "no offline limit is set for %s, and currencies "
             "without one are refused offline", currency);
    return OB_EOFFLINE;
  }
  if (limit->max_amount > 0 && amount > limit->max_amount) {
    snprintf(why, whylen, "amount %lld %s is over the offline maximum of "
             "one effect, %lld", (long long)amount, currency,
             (long long)limit->max_amount);
    return OB_EOFFLINE;
  }
  /* total + amount > max_total, without overflowing. */
  if (limit->max_total > 0 &&
      (total > limit->max_total || amount > limit->max_total - total)) {
    /* The parts, not their sum: a hostile total must not overflow. */
    snprintf(why, whylen, "%lld %s stored and this %lld would pass the "
             "offline maximum of the stored total, %lld",
             (long long)total, currency, (long long)amount,
             (long long)limit->max_total);
    return OB_EOFFLINE;
  }
  if (limit->max_count > 0 && count >= limit->max_count) {
    snprintf(why, whylen, "%lld %s effects are stored, the offline maximum",
             (long long)count, currency);
    return OB_EOFFLINE;
  }
  return 0;
}
