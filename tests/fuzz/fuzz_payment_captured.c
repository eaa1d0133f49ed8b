/* SPDX-License-Identifier: Apache-2.0 */
/*
** Fuzz target: the PaymentCaptured parser and the MerchantPayoutCreated
** encoder (modules/payout/payout_msg.c).
**
** Input: the message body.
**
** Properties, beyond "no crash, no read past len, no sanitizer report":
**   - 0 with out filled and reason "", or -1 with a non-empty reason; the
**     reason is NUL-terminated within reason_len for every reason_len
**     (1, 8, 256 are tried) and is the same text, truncated;
**   - out is written only on success;
**   - accepted => ob__json_valid(body) and the fields are canonical: ids are
**     lower-case 8-4-4-4-12 UUIDs, 1 <= amount <= 2^53-1, currency is three
**     upper-case letters;
**   - round trip: accepted => ob_payout__event_payload(payout id, out) is
**     valid JSON that parses back to exactly the same fields;
**   - cJSON agrees on accepted bodies (when no key holds \u0000, which cJSON
**     cuts): same ids (case-insensitively), same currency, and its double
**     for the amount is exactly the amount (every accepted amount is an
**     integer below 2^53, so exactly representable).
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "modules/payout/payout_msg.h"
#include "core/util/json_check.h"
#include "core/util/uuid.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

static void fail(const char* what, const char* body, size_t len) {
  fprintf(stderr, "fuzz_payment_captured: property violated: %s: '%.*s'\n",
          what, (int)(len > 300 ? 300 : len), body);
  abort();
}

static int canonical_uuid(const char* s) {
  char n[OB_UUID_BUFLEN];
  return strlen(s) == 36 && ob__uuid_normalize(s, n) == 0 && strcmp(n, s) == 0;
}

static void check_fields(const ob_payout__captured_t* m, const char* b,
                         size_t n) {
  if (!canonical_uuid(m->payment_id)) fail("paymentId not canonical", b, n);
  if (!canonical_uuid(m->merchant_id)) fail("merchantId not canonical", b, n);
  if (m->amount_minor < 1 || m->amount_minor > OB_PAYOUT__MAX_AMOUNT)
    fail("amount out of range", b, n);
  if (strlen(m->currency) != 3) fail("currency length", b, n);
  for (int i = 0; i < 3; i++)
    if (m->currency[i] < 'A' || m->currency[i] > 'Z')
      fail("currency letters", b, n);
}

static int contains(const char* h, size_t n, const char* needle) {
  size_t k = strlen(needle);
  for (size_t i = 0; i + k <= n; i++)
    if (memcmp(h + i, needle, k) == 0) return 1;
  return 0;
}

static void cjson_agrees(const char* body, size_t len,
                         const ob_payout__captured_t* m) {
  char* z;
  cJSON* root;
  const cJSON* v;
  if (contains(body, len, "\\u0000")) return;
  z = malloc(len + 1);
  if (z == NULL) return;
  memcpy(z, body, len);
  z[len] = '\0';
  root = cJSON_ParseWithLength(z, len);
  if (root == NULL) fail("cJSON refused an accepted body", body, len);
  v = cJSON_GetObjectItemCaseSensitive(root, "paymentId");
  if (!cJSON_IsString(v) || strcasecmp(v->valuestring, m->payment_id) != 0)
    fail("cJSON sees another paymentId", body, len);
  v = cJSON_GetObjectItemCaseSensitive(root, "merchantId");
  if (!cJSON_IsString(v) || strcasecmp(v->valuestring, m->merchant_id) != 0)
    fail("cJSON sees another merchantId", body, len);
  v = cJSON_GetObjectItemCaseSensitive(root, "currency");
  if (!cJSON_IsString(v) || strcmp(v->valuestring, m->currency) != 0)
    fail("cJSON sees another currency", body, len);
  v = cJSON_GetObjectItemCaseSensitive(root, "amountInMinorUnits");
  if (!cJSON_IsNumber(v) || v->valuedouble != (double)m->amount_minor)
    fail("cJSON sees another amount", body, len);
  cJSON_Delete(root);
  free(z);
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const size_t rlens[] = {1, 8, 256};
  ob_payout__captured_t m, m2;
  char reason[256], r_small[8], r_one[1];
  char* body;
  int rc;

  if (size > 2 * OB_PAYOUT__MAX_BODY) return 0;
  body = malloc(size ? size : 1); /* exact size: no byte after len */
  if (body == NULL) return 0;
  memcpy(body, data, size);

  memset(&m, 0xA5, sizeof m);
  m2 = m;
  memset(reason, 'x', sizeof reason);
  rc = ob_payout__parse(body, size, &m, reason, sizeof reason);
  if (rc != 0 && rc != -1) fail("return value", body, size);
  if (memchr(reason, '\0', sizeof reason) == NULL)
    fail("reason not NUL-terminated", body, size);
  if ((rc == 0) != (reason[0] == '\0')) fail("reason vs result", body, size);

  /* Shorter reason buffers: same verdict, truncated text. */
  for (size_t i = 0; i < sizeof rlens / sizeof rlens[0] - 1; i++) {
    char* rb = rlens[i] == 1 ? r_one : r_small;
    memset(rb, 'x', rlens[i]);
    if (ob_payout__parse(body, size, NULL, rb, rlens[i]) != rc)
      fail("verdict depends on reason_len", body, size);
    if (memchr(rb, '\0', rlens[i]) == NULL)
      fail("short reason not NUL-terminated", body, size);
    if (strncmp(rb, reason, rlens[i] - 1) != 0)
      fail("short reason is not a prefix", body, size);
  }
  if (ob_payout__parse(body, size, NULL, NULL, 0) != rc)
    fail("verdict depends on reason", body, size);

  if (rc != 0) {
    if (memcmp(&m, &m2, sizeof m) != 0) fail("out written on error", body, size);
    free(body);
    return 0;
  }

  if (!ob__json_valid(body, size)) fail("accepted invalid JSON", body, size);
  check_fields(&m, body, size);
  cjson_agrees(body, size, &m);

  /* Round trip through the event payload. */
  {
    char* ev = ob_payout__event_payload("0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
                                        &m);
    ob_payout__captured_t back;
    if (ev != NULL) {
      size_t n = strlen(ev);
      if (!ob__json_valid(ev, n)) fail("event payload not valid JSON", ev, n);
      if (ob_payout__parse(ev, n, &back, reason, sizeof reason) != 0)
        fail(reason, ev, n);
      if (strcmp(back.payment_id, m.payment_id) != 0 ||
          strcmp(back.merchant_id, m.merchant_id) != 0 ||
          back.amount_minor != m.amount_minor ||
          strcmp(back.currency, m.currency) != 0)
        fail("round trip changed the message", ev, n);
      free(ev);
    }
  }
  free(body);
  return 0;
}
