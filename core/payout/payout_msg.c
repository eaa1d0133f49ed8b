/* SPDX-License-Identifier: Apache-2.0 */
/* PaymentCaptured parsing and MerchantPayoutCreated encoding.
**
** The parser walks the raw text instead of a cJSON tree, for three reasons:
**   - cJSON keeps a number only as a double, so 9007199254740990.5 would
**     read as an integer; the amount is judged from its exact decimal text.
**   - cJSON strings are C strings, so a key "paymentId\u0000x" would read as
**     paymentId; here decoded bytes are compared with their length.
**   - no allocation, so "out of memory" can't pass for a bad message.
** ob__json_valid checks the whole body first, so the walk can rely on
** well-formed JSON and never reads past the end. */
#include "core/payout/payout_msg.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/amount.h"
#include "core/util/json_check.h"
#include "core/util/json_write.h"
#include "core/util/msg_reject.h"
#include "core/util/uuid.h"

enum { F_PAYMENT, F_MERCHANT, F_AMOUNT, F_CURRENCY, F_COUNT };

static const char* const field_name[F_COUNT] = {
  "paymentId", "merchantId", "amountInMinorUnits", "currency"
};

/* Find where each known field's value starts; val[] must be zeroed. */
static int find_fields(const char* body, size_t len, const char* val[]) {
  return ob__json_members(body, len, field_name, F_COUNT, val, NULL);
}

int ob__payment_captured_parse(const char* body, size_t len,
                               ob__payment_captured_t* out, char* reason,
                               size_t reason_len) {
  const char* val[F_COUNT] = {NULL};
  const char* why;
  ob__payment_captured_t r;
  char buf[40];
  int f;

  if (len > OB__PAYOUT_MAX_BODY)
    return ob__msg_reject(reason, reason_len, "body is %zu bytes, over the %d-byte limit",
                len, OB__PAYOUT_MAX_BODY);
  if (body == NULL || !ob__json_valid(body, len))
    return ob__msg_reject(reason, reason_len, "body is not valid JSON");
  if (*ob__json_skip_ws(body) != '{')
    return ob__msg_reject(reason, reason_len, "body is not a JSON object");
  if ((f = find_fields(body, len, val)) >= 0)
    return ob__msg_reject(reason, reason_len, "duplicate field %s", field_name[f]);

  /* Fields in declaration order; the first problem is the one reported. */
  memset(&r, 0, sizeof r);
  for (f = 0; f < F_COUNT; f++) {
    const char* name = field_name[f];
    if (val[f] == NULL)
      return ob__msg_reject(reason, reason_len, "missing field %s", name);
    if (f == F_AMOUNT) {
      if ((why = ob__amount_parse(val[f], &r.amount_minor)) != NULL)
        return ob__msg_reject(reason, reason_len, "%s", why);
      continue;
    }
    if (*val[f] != '"')
      return ob__msg_reject(reason, reason_len, "field %s must be a string", name);
    if (f == F_CURRENCY) {
      if (ob__json_str_decode(val[f], buf, sizeof buf) != 3 || buf[0] < 'A' ||
          buf[0] > 'Z' || buf[1] < 'A' || buf[1] > 'Z' || buf[2] < 'A' ||
          buf[2] > 'Z')
        return ob__msg_reject(reason, reason_len,
                    "currency must be three upper-case letters (ISO 4217)");
      memcpy(r.currency, buf, 4);
      continue;
    }
    if (ob__json_str_decode(val[f], buf, sizeof buf) != OB_UUID_STRLEN ||
        ob__uuid_normalize(buf, f == F_PAYMENT ? r.payment_id
                                               : r.merchant_id) != 0)
      return ob__msg_reject(reason, reason_len, "%s is not a UUID", name);
  }
  if (out != NULL) *out = r;
  if (reason != NULL && reason_len > 0) reason[0] = '\0';
  return 0;
}

static size_t payload(char* buf, const char* payout_id,
                      const ob__payment_captured_t* p) {
  char amount[24];
  size_t n = 0;
  /* Not cJSON: it prints 9007199254740991 as 9.00719925474099e+15. */
  snprintf(amount, sizeof amount, "%" PRId64, p->amount_minor);
  ob__json_put_raw(buf, &n, "{\"payoutId\":");
  ob__json_put_str(buf, &n, payout_id, SIZE_MAX);
  ob__json_put_raw(buf, &n, ",\"paymentId\":");
  ob__json_put_str(buf, &n, p->payment_id, OB_UUID_STRLEN);
  ob__json_put_raw(buf, &n, ",\"merchantId\":");
  ob__json_put_str(buf, &n, p->merchant_id, OB_UUID_STRLEN);
  ob__json_put_raw(buf, &n, ",\"amountInMinorUnits\":");
  ob__json_put_raw(buf, &n, amount);
  ob__json_put_raw(buf, &n, ",\"currency\":");
  ob__json_put_str(buf, &n, p->currency, 3);
  ob__json_put_raw(buf, &n, "}");
  return n;
}

char* ob__payout_event_payload(const char* payout_id,
                               const ob__payment_captured_t* p) {
  size_t n = payload(NULL, payout_id, p);
  char* buf = malloc(n + 1);
  if (buf == NULL) return NULL;
  payload(buf, payout_id, p);
  buf[n] = '\0';
  return buf;
}
