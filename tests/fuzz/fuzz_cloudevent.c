/*
** Fuzz target: the CloudEvents 1.0 decoder the SQS consumer puts every
** received message through (core/relay/cloudevents.c), and the encoder the
** relay uses.
**
** Input: an SQS message body.
**
** Properties, beyond "no crash, no read past len, no sanitizer report":
**   - 0 with reason "", or -1 with a non-empty reason;
**   - accepted => the body is valid JSON, id is a lower-case UUID, type is
**     1..128 printable ASCII, data points inside the body and is one valid
**     JSON value;
**   - round trip: an accepted event encoded again (as the relay would) and
**     decoded gives the same id, type and data bytes.
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/relay/cloudevents.h"
#include "core/util/json_check.h"
#include "core/util/uuid.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

static void fail(const char* what, const char* body, size_t len) {
  fprintf(stderr, "fuzz_cloudevent: property violated: %s: '%.*s'\n", what,
          (int)(len > 300 ? 300 : len), body);
  abort();
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  char* body = malloc(size ? size : 1);
  char reason[256];
  ob__cloudevent_t ce;
  int rc;
  if (body == NULL) return 0;
  if (size) memcpy(body, data, size);
  rc = ob__cloudevent_decode(body, size, &ce, reason, sizeof reason);
  if (rc != 0 && rc != -1) fail("return value", body, size);
  if (rc == -1) {
    if (reason[0] == '\0') fail("rejected without a reason", body, size);
    free(body);
    return 0;
  }
  if (!ob__json_valid(body, size)) fail("accepted invalid JSON", body, size);
  if (!ob_uuid_valid(ce.id)) fail("id not a UUID", body, size);
  for (const char* p = ce.id; *p; p++)
    if (*p >= 'A' && *p <= 'F') fail("id not lower case", body, size);
  {
    size_t n = strlen(ce.type);
    if (n == 0 || n > 128) fail("type length", body, size);
    for (size_t i = 0; i < n; i++)
      if ((unsigned char)ce.type[i] < 0x20 || (unsigned char)ce.type[i] > 0x7e)
        fail("type not printable", body, size);
  }
  if (ce.data < body || ce.data + ce.data_len > body + size)
    fail("data outside the body", body, size);
  if (!ob__json_valid(ce.data, ce.data_len)) fail("data not JSON", body, size);
  {
    ob_event_t ev;
    ob__cloudevent_t back;
    size_t len = 0;
    char* again;
    char* payload = malloc(ce.data_len + 1);
    if (payload == NULL) abort();
    memcpy(payload, ce.data, ce.data_len);
    payload[ce.data_len] = '\0';
    memset(&ev, 0, sizeof ev);
    ev.id = ce.id;
    ev.causation_id = ce.id;
    ev.event_type = ce.type;
    ev.aggregate_id = "agg";
    ev.payload = payload;
    ev.payload_len = ce.data_len;
    ev.created_at_ms = 1796083200000LL;
    again = ob__cloudevent_encode(&ev, "urn:oncebox:fuzz", &len);
    if (again == NULL) abort();
    if (ob__cloudevent_decode(again, len, &back, reason, sizeof reason) != 0)
      fail("re-encoded event refused", again, len);
    if (strcmp(back.id, ce.id) != 0 || strcmp(back.type, ce.type) != 0 ||
        back.data_len != ce.data_len ||
        memcmp(back.data, ce.data, ce.data_len) != 0)
      fail("round trip", body, size);
    free(again);
    free(payload);
  }
  free(body);
  return 0;
}
