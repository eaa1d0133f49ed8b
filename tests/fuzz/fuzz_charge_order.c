/* SPDX-License-Identifier: Apache-2.0 */
/*
** Fuzz target: the ChargeOrder parser and the JSON it produces
** (modules/charge/charge_msg.c).
**
** Input: the message body.
**
** Properties, beyond "no crash, no read past len, no sanitizer report":
**   - 0 with reason "", or -1 with a non-empty, NUL-terminated reason (for
**     reason_len 1, 8 and 256, the same text truncated); out is written only
**     on success;
**   - accepted => ob__json_valid(body); orderId is 1..64 printable ASCII,
**     1 <= amount <= 2^53-1, currency three upper-case letters;
**   - round trip: the provider request and the OrderCharged payload are
**     valid JSON, and the request parses back (with its snake_case names
**     mapped) to the same order, amount and currency.
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "modules/charge/charge_msg.h"
#include "core/util/json_check.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

static void fail(const char* what, const char* body, size_t len) {
  fprintf(stderr, "fuzz_charge_order: property violated: %s: '%.*s'\n", what,
          (int)(len > 300 ? 300 : len), body);
  abort();
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  /* A private copy of exactly size bytes: ASan sees any read past it. */
  char* body = malloc(size ? size : 1);
  char reason[256], small[8], tiny[1];
  ob_charge__order_t o, sentinel;
  int rc;
  if (body == NULL) return 0;
  if (size) memcpy(body, data, size);
  memset(&o, 0x5a, sizeof o);
  memcpy(&sentinel, &o, sizeof o);

  rc = ob_charge__parse(body, size, &o, reason, sizeof reason);
  if (rc != 0 && rc != -1) fail("return value", body, size);
  if (ob_charge__parse(body, size, NULL, small, sizeof small) != rc ||
      ob_charge__parse(body, size, NULL, tiny, sizeof tiny) != rc)
    fail("same verdict for every reason buffer", body, size);
  if (tiny[0] != '\0') fail("1-byte reason not empty", body, size);
  if (rc == -1) {
    if (reason[0] == '\0') fail("rejected without a reason", body, size);
    if (strncmp(reason, small, strlen(small)) != 0)
      fail("truncated reason differs", body, size);
    if (memcmp(&o, &sentinel, sizeof o) != 0)
      fail("out written on failure", body, size);
    free(body);
    return 0;
  }
  if (reason[0] != '\0') fail("accepted with a reason", body, size);
  if (!ob__json_valid(body, size)) fail("accepted invalid JSON", body, size);
  {
    size_t n = strlen(o.order_id);
    if (n == 0 || n > OB_CHARGE__ORDER_ID_MAX) fail("order id length", body, size);
    for (size_t i = 0; i < n; i++)
      if ((unsigned char)o.order_id[i] < 0x20 ||
          (unsigned char)o.order_id[i] > 0x7e)
        fail("order id not printable", body, size);
    if (o.amount_minor < 1 || o.amount_minor > 9007199254740991LL)
      fail("amount range", body, size);
    for (int i = 0; i < 3; i++)
      if (o.currency[i] < 'A' || o.currency[i] > 'Z')
        fail("currency", body, size);
  }
  {
    char* req = ob_charge__request_body(&o);
    char* ev = ob_charge__event_payload(&o, "ch_fuzz");
    cJSON* j;
    if (req == NULL || ev == NULL) abort();
    if (!ob__json_valid(req, strlen(req))) fail("request not JSON", body, size);
    if (!ob__json_valid(ev, strlen(ev))) fail("event not JSON", body, size);
    j = cJSON_Parse(req);
    if (j == NULL) fail("cJSON refuses the request", body, size);
    if (strcmp(cJSON_GetObjectItem(j, "order_id")->valuestring, o.order_id) != 0 ||
        (int64_t)cJSON_GetObjectItem(j, "amount_minor")->valuedouble !=
            o.amount_minor ||
        strcmp(cJSON_GetObjectItem(j, "currency")->valuestring, o.currency) != 0)
      fail("request round trip", body, size);
    cJSON_Delete(j);
    free(req);
    free(ev);
  }
  free(body);
  return 0;
}
