/* SPDX-License-Identifier: Apache-2.0 */
/*
** Fuzz target: the CloudEvents 1.0 decoder the SQS consumer puts every
** received message through (core/relay/cloudevents.c), and the encoder the
** relay uses.
**
** Input: an SQS message body.
**
** Properties, beyond "no crash, no read past len, no leak, no sanitizer
** report":
**   - 0 with reason "", or -1 with a non-empty reason (OB_ENOMEM never
**     happens here); on -1 the struct holds nothing;
**   - accepted => the body is valid JSON; id and source are non-empty with
**     no control byte; source passes ob__uri_reference_check; type is
**     1..128 printable ASCII; data is NUL-terminated after data_len bytes,
**     and valid JSON when data_is_json; traceparent is "" or a valid
**     version-00 traceparent; tracestate is "" or valid, and only with a
**     traceparent;
**   - round trip: an accepted event encoded again (as the relay would, with
**     its source and trace context; data as the payload when it is JSON) and
**     decoded gives the same id, source, type, trace context and data;
**   - ob__cloudevent_free twice is harmless.
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/relay/cloudevents.h"
#include "core/util/json_check.h"
#include "core/util/trace_context.h"
#include "core/util/uri_ref.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

static void fail(const char* what, const char* body, size_t len) {
  fprintf(stderr, "fuzz_cloudevent: property violated: %s: '%.*s'\n", what,
          (int)(len > 300 ? 300 : len), body);
  abort();
}

static void no_control(const char* s, const char* what, const char* body,
                       size_t size) {
  if (s == NULL || *s == '\0') fail(what, body, size);
  for (; *s; s++)
    if ((unsigned char)*s < 0x20 || *s == 0x7f) fail(what, body, size);
}

static void round_trip(const ob__cloudevent_t* ce, const char* body,
                       size_t size) {
  ob_event_t ev;
  ob__cloudevent_t back;
  char reason[256];
  size_t len = 0;
  char* again;
  memset(&ev, 0, sizeof ev);
  ev.id = ce->id;
  ev.causation_id = ce->id;
  ev.event_type = ce->type;
  ev.aggregate_id = "agg";
  /* The encoder embeds a JSON payload; other data cannot go through it. */
  ev.payload = ce->data_is_json ? ce->data : "{}";
  ev.payload_len = ce->data_is_json ? ce->data_len : 2;
  ev.created_at_ms = 1796083200000LL;
  ev.traceparent = ce->traceparent;
  ev.tracestate = ce->tracestate;
  again = ob__cloudevent_encode(&ev, ce->source, &len);
  if (again == NULL) abort();
  if (ob__cloudevent_decode(again, len, &back, reason, sizeof reason) != 0)
    fail("re-encoded event refused", again, len);
  if (strcmp(back.id, ce->id) != 0 || strcmp(back.source, ce->source) != 0 ||
      strcmp(back.type, ce->type) != 0 ||
      strcmp(back.traceparent, ce->traceparent) != 0 ||
      strcmp(back.tracestate, ce->tracestate) != 0 || back.trace_dropped ||
      back.data_is_json != 1 || back.data_len != ev.payload_len ||
      memcmp(back.data, ev.payload, ev.payload_len) != 0)
    fail("round trip", body, size);
  ob__cloudevent_free(&back);
  free(again);
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
    if (ce.id || ce.source || ce.content_type || ce.data)
      fail("refused but holds memory", body, size);
    ob__cloudevent_free(&ce);
    free(body);
    return 0;
  }
  if (reason[0] != '\0') fail("accepted with a reason", body, size);
  if (!ob__json_valid(body, size)) fail("accepted invalid JSON", body, size);
  no_control(ce.id, "id", body, size);
  no_control(ce.source, "source", body, size);
  if (ob__uri_reference_check(ce.source, strlen(ce.source), NULL, 0) != 0)
    fail("source not a URI-reference", body, size);
  if (ce.content_type != NULL)
    no_control(ce.content_type, "datacontenttype", body, size);
  {
    size_t n = strlen(ce.type);
    if (n == 0 || n > 128) fail("type length", body, size);
    for (size_t i = 0; i < n; i++)
      if ((unsigned char)ce.type[i] < 0x21 || (unsigned char)ce.type[i] > 0x7e)
        fail("type not printable", body, size);
  }
  if (ce.data == NULL || ce.data[ce.data_len] != '\0')
    fail("data not NUL-terminated", body, size);
  if (ce.data_is_json && !ob__json_valid(ce.data, ce.data_len))
    fail("data not JSON", body, size);
  if (ce.traceparent[0] != '\0') {
    char tp[OB__TRACEPARENT_LEN + 1];
    if (strlen(ce.traceparent) != OB__TRACEPARENT_LEN ||
        !ob__traceparent_parse(ce.traceparent, OB__TRACEPARENT_LEN, tp) ||
        strcmp(tp, ce.traceparent) != 0)
      fail("traceparent", body, size);
  }
  if (ce.tracestate[0] != '\0' &&
      (ce.traceparent[0] == '\0' ||
       !ob__tracestate_valid(ce.tracestate, strlen(ce.tracestate))))
    fail("tracestate", body, size);
  round_trip(&ce, body, size);
  ob__cloudevent_free(&ce);
  ob__cloudevent_free(&ce);
  free(body);
  return 0;
}
