/* SPDX-License-Identifier: Apache-2.0 */
/* PaymentCaptured parsing and MerchantPayoutCreated encoding, on the public
** JSON readers (oncebox.h): the body is judged whole first, fields are
** found by their unescaped names, the amount from its exact text. */
#include "payout_msg.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { F_PAYMENT, F_MERCHANT, F_AMOUNT, F_CURRENCY, F_COUNT };

static const char* const field_name[F_COUNT] = {
  "paymentId", "merchantId", "amountInMinorUnits", "currency"
};

__attribute__((format(printf, 3, 4)))
static int reject(char* reason, size_t reason_len, const char* fmt, ...) {
  va_list ap;
  if (reason != NULL && reason_len > 0) {
    va_start(ap, fmt);
    vsnprintf(reason, reason_len, fmt, ap);
    va_end(ap);
  }
  return -1;
}

static int is_currency(const char* s, long n) {
  return n == 3 && s[0] >= 'A' && s[0] <= 'Z' && s[1] >= 'A' &&
         s[1] <= 'Z' && s[2] >= 'A' && s[2] <= 'Z';
}

/* The canonical UUID at v into out, lower-cased; -1 when it is none. */
static int uuid_field(const char* v, char out[OB_UUID_BUFLEN]) {
  char buf[40];
  if (ob_json_string(v, buf, sizeof buf) != OB_UUID_BUFLEN - 1 ||
      !ob_uuid_valid(buf))
    return -1;
  for (int i = 0; i < OB_UUID_BUFLEN; i++)
    out[i] = (char)tolower((unsigned char)buf[i]);
  return 0;
}

int ob_payout__parse(const char* body, size_t len, ob_payout__captured_t* out,
                     char* reason, size_t reason_len) {
  const char* val[F_COUNT];
  const char* why;
  ob_payout__captured_t r;
  char buf[8];

  if (len > OB_PAYOUT__MAX_BODY)
    return reject(reason, reason_len,
                  "body is %zu bytes, over the %d-byte limit", len,
                  OB_PAYOUT__MAX_BODY);
  if (ob_json_fields(body, len, field_name, F_COUNT, val, reason,
                     reason_len) != 0)
    return -1;

  /* Fields in declaration order; the first problem is the one reported. */
  memset(&r, 0, sizeof r);
  for (int f = 0; f < F_COUNT; f++) {
    const char* name = field_name[f];
    if (val[f] == NULL)
      return reject(reason, reason_len, "missing field %s", name);
    if (f == F_AMOUNT) {
      if ((why = ob_json_amount(val[f], &r.amount_minor)) != NULL)
        return reject(reason, reason_len, "%s", why);
      continue;
    }
    if (*val[f] != '"')
      return reject(reason, reason_len, "field %s must be a string", name);
    if (f == F_CURRENCY) {
      if (!is_currency(buf, ob_json_string(val[f], buf, sizeof buf)))
        return reject(reason, reason_len,
                      "currency must be three upper-case letters (ISO 4217)");
      memcpy(r.currency, buf, 4);
      continue;
    }
    if (uuid_field(val[f], f == F_PAYMENT ? r.payment_id : r.merchant_id) != 0)
      return reject(reason, reason_len, "%s is not a UUID", name);
  }
  if (out != NULL) *out = r;
  if (reason != NULL && reason_len > 0) reason[0] = '\0';
  return 0;
}

char* ob_payout__event_payload(const char* payout_id,
                               const ob_payout__captured_t* p) {
  /* Every string but the payout id was checked to need no escape; the
  ** amount is printed as an integer (cJSON would print 9007199254740991 as
  ** 9.00719925474099e+15). */
  size_t idlen = ob_json_quote(NULL, 0, payout_id, strlen(payout_id));
  size_t cap = idlen + 200;
  char* buf = malloc(cap);
  char* id = malloc(idlen + 1);
  if (buf == NULL || id == NULL) {
    free(buf);
    free(id);
    return NULL;
  }
  ob_json_quote(id, idlen + 1, payout_id, strlen(payout_id));
  snprintf(buf, cap,
           "{\"payoutId\":%s,\"paymentId\":\"%s\",\"merchantId\":\"%s\","
           "\"amountInMinorUnits\":%" PRId64 ",\"currency\":\"%s\"}",
           id, p->payment_id, p->merchant_id, p->amount_minor, p->currency);
  free(id);
  return buf;
}
