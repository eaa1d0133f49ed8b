/* SPDX-License-Identifier: Apache-2.0 */
/* ChargeOrder parsing and the JSON it produces, on the public JSON readers
** (oncebox.h), by the rules of PaymentCaptured (modules/payout). */
#include "charge_msg.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oncebox.h"

enum { F_ORDER, F_AMOUNT, F_CURRENCY, F_COUNT };

static const char* const field_name[F_COUNT] = {"orderId",
                                                "amountInMinorUnits",
                                                "currency"};

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

static int order_id_ok(const char* s, long n) {
  if (n <= 0 || n > OB_CHARGE__ORDER_ID_MAX) return 0;
  for (long i = 0; i < n; i++)
    if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e) return 0;
  return 1;
}

int ob_charge__parse(const char* body, size_t len, ob_charge__order_t* out,
                     char* reason, size_t reason_len) {
  const char* val[F_COUNT];
  const char* why;
  ob_charge__order_t r;
  char buf[OB_CHARGE__ORDER_ID_MAX + 2];
  long n;

  if (len > OB_CHARGE__MAX_BODY)
    return reject(reason, reason_len,
                  "body is %zu bytes, over the %d-byte limit", len,
                  OB_CHARGE__MAX_BODY);
  if (ob_json_fields(body, len, field_name, F_COUNT, val, reason,
                     reason_len) != 0)
    return -1;
  memset(&r, 0, sizeof r);
  for (int f = 0; f < F_COUNT; f++)
    if (val[f] == NULL)
      return reject(reason, reason_len, "missing field %s", field_name[f]);
  if (*val[F_ORDER] != '"')
    return reject(reason, reason_len, "field orderId must be a string");
  n = ob_json_string(val[F_ORDER], buf, sizeof buf);
  /* A \u escape of a non-ASCII character decodes to 0xFF: refused here. */
  if (n < 0 || (size_t)n >= sizeof buf || !order_id_ok(buf, n))
    return reject(reason, reason_len,
                  "orderId must be 1..%d printable ASCII characters",
                  OB_CHARGE__ORDER_ID_MAX);
  memcpy(r.order_id, buf, (size_t)n + 1);
  if ((why = ob_json_amount(val[F_AMOUNT], &r.amount_minor)) != NULL)
    return reject(reason, reason_len, "%s", why);
  if (*val[F_CURRENCY] != '"')
    return reject(reason, reason_len, "field currency must be a string");
  if (ob_json_string(val[F_CURRENCY], buf, sizeof buf) != 3 ||
      buf[0] < 'A' || buf[0] > 'Z' || buf[1] < 'A' || buf[1] > 'Z' ||
      buf[2] < 'A' || buf[2] > 'Z')
    return reject(reason, reason_len,
                  "currency must be three upper-case letters (ISO 4217)");
  memcpy(r.currency, buf, 4);
  if (out) *out = r;
  if (reason != NULL && reason_len > 0) reason[0] = '\0';
  return 0;
}

/* The order id and the extra string (NULL: none) quoted as JSON strings
** (the currency needs no escape) into one malloc'd buffer: the request
** when extra is NULL, else the event. */
static char* encode(const ob_charge__order_t* o, const char* extra) {
  size_t idn = ob_json_quote(NULL, 0, o->order_id, strlen(o->order_id));
  size_t exn = extra ? ob_json_quote(NULL, 0, extra, 255) : 0;
  size_t cap = idn + exn + 128;
  char *id = malloc(idn + 1), *ex = malloc(exn + 1), *buf = malloc(cap);
  if (id == NULL || ex == NULL || buf == NULL) {
    free(id);
    free(ex);
    free(buf);
    return NULL;
  }
  ob_json_quote(id, idn + 1, o->order_id, strlen(o->order_id));
  if (extra == NULL)
    snprintf(buf, cap,
             "{\"order_id\":%s,\"amount_minor\":%" PRId64
             ",\"currency\":\"%s\"}",
             id, o->amount_minor, o->currency);
  else {
    ob_json_quote(ex, exn + 1, extra, 255);
    snprintf(buf, cap,
             "{\"orderId\":%s,\"amountInMinorUnits\":%" PRId64
             ",\"currency\":\"%s\",\"chargeId\":%s}",
             id, o->amount_minor, o->currency, ex);
  }
  free(id);
  free(ex);
  return buf;
}

char* ob_charge__request_body(const ob_charge__order_t* o) {
  return encode(o, NULL);
}

char* ob_charge__event_payload(const ob_charge__order_t* o,
                               const char* charge_id) {
  return encode(o, charge_id);
}
