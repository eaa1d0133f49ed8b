/* SPDX-License-Identifier: Apache-2.0 */
/* ChargeOrder parsing and the JSON it produces. Same walk as PaymentCaptured
** (core/payout/payout_msg.c): the whole body is validated first, fields are
** found by their unescaped names, the amount is judged from its text. */
#include "core/charge/charge_msg.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/amount.h"
#include "core/util/json_check.h"
#include "core/util/json_write.h"
#include "core/util/msg_reject.h"

enum { F_ORDER, F_AMOUNT, F_CURRENCY, F_COUNT };

static const char* const field_name[F_COUNT] = {"orderId",
                                                "amountInMinorUnits",
                                                "currency"};

static int order_id_ok(const char* s, size_t n) {
  if (n == 0 || n > OB__CHARGE_ORDER_ID_MAX) return 0;
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e) return 0;
  return 1;
}

int ob__charge_order_parse(const char* body, size_t len,
                           ob__charge_order_t* out, char* reason,
                           size_t reason_len) {
  const char* val[F_COUNT] = {NULL};
  const char* why;
  ob__charge_order_t r;
  char buf[OB__CHARGE_ORDER_ID_MAX + 2];
  size_t n;
  int f;

  if (len > OB__CHARGE_MAX_BODY)
    return ob__msg_reject(reason, reason_len, "body is %zu bytes, over the %d-byte limit",
                len, OB__CHARGE_MAX_BODY);
  if (body == NULL || !ob__json_valid(body, len))
    return ob__msg_reject(reason, reason_len, "body is not valid JSON");
  if (*ob__json_skip_ws(body) != '{')
    return ob__msg_reject(reason, reason_len, "body is not a JSON object");
  if ((f = ob__json_members(body, len, field_name, F_COUNT, val, NULL)) >= 0)
    return ob__msg_reject(reason, reason_len, "duplicate field %s", field_name[f]);

  memset(&r, 0, sizeof r);
  for (f = 0; f < F_COUNT; f++) {
    if (val[f] == NULL)
      return ob__msg_reject(reason, reason_len, "missing field %s", field_name[f]);
  }
  if (*val[F_ORDER] != '"')
    return ob__msg_reject(reason, reason_len, "field orderId must be a string");
  n = ob__json_str_decode(val[F_ORDER], buf, sizeof buf);
  /* A \u escape of a non-ASCII character decodes to 0xFF: refused here. */
  if (n >= sizeof buf || !order_id_ok(buf, n))
    return ob__msg_reject(reason, reason_len,
                "orderId must be 1..%d printable ASCII characters",
                OB__CHARGE_ORDER_ID_MAX);
  memcpy(r.order_id, buf, n + 1);
  if ((why = ob__amount_parse(val[F_AMOUNT], &r.amount_minor)) != NULL)
    return ob__msg_reject(reason, reason_len, "%s", why);
  if (*val[F_CURRENCY] != '"')
    return ob__msg_reject(reason, reason_len, "field currency must be a string");
  if (ob__json_str_decode(val[F_CURRENCY], buf, sizeof buf) != 3 ||
      buf[0] < 'A' || buf[0] > 'Z' || buf[1] < 'A' || buf[1] > 'Z' ||
      buf[2] < 'A' || buf[2] > 'Z')
    return ob__msg_reject(reason, reason_len,
                "currency must be three upper-case letters (ISO 4217)");
  memcpy(r.currency, buf, 4);
  if (out) *out = r;
  if (reason != NULL && reason_len > 0) reason[0] = '\0';
  return 0;
}

static size_t request(char* buf, const ob__charge_order_t* o) {
  char amount[24];
  size_t n = 0;
  snprintf(amount, sizeof amount, "%" PRId64, o->amount_minor);
  ob__json_put_raw(buf, &n, "{\"order_id\":");
  ob__json_put_str(buf, &n, o->order_id, OB__CHARGE_ORDER_ID_MAX);
  ob__json_put_raw(buf, &n, ",\"amount_minor\":");
  ob__json_put_raw(buf, &n, amount);
  ob__json_put_raw(buf, &n, ",\"currency\":");
  ob__json_put_str(buf, &n, o->currency, 3);
  ob__json_put_raw(buf, &n, "}");
  return n;
}

static size_t event(char* buf, const ob__charge_order_t* o,
                    const char* charge_id) {
  char amount[24];
  size_t n = 0;
  snprintf(amount, sizeof amount, "%" PRId64, o->amount_minor);
  ob__json_put_raw(buf, &n, "{\"orderId\":");
  ob__json_put_str(buf, &n, o->order_id, OB__CHARGE_ORDER_ID_MAX);
  ob__json_put_raw(buf, &n, ",\"amountInMinorUnits\":");
  ob__json_put_raw(buf, &n, amount);
  ob__json_put_raw(buf, &n, ",\"currency\":");
  ob__json_put_str(buf, &n, o->currency, 3);
  ob__json_put_raw(buf, &n, ",\"chargeId\":");
  ob__json_put_str(buf, &n, charge_id, 255);
  ob__json_put_raw(buf, &n, "}");
  return n;
}

char* ob__charge_request_body(const ob__charge_order_t* o) {
  size_t n = request(NULL, o);
  char* buf = malloc(n + 1);
  if (buf == NULL) return NULL;
  request(buf, o);
  buf[n] = '\0';
  return buf;
}

char* ob__charge_event_payload(const ob__charge_order_t* o,
                               const char* charge_id) {
  size_t n = event(NULL, o, charge_id);
  char* buf = malloc(n + 1);
  if (buf == NULL) return NULL;
  event(buf, o, charge_id);
  buf[n] = '\0';
  return buf;
}
