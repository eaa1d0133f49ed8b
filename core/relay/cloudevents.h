/* SPDX-License-Identifier: Apache-2.0 */
/* Outbox events on the wire: CloudEvents 1.0, structured JSON mode
** (https://github.com/cloudevents/spec/blob/v1.0.2/cloudevents/formats/json-format.md),
** with the distributed-tracing extension. Pure. */
#ifndef OB_CORE_CLOUDEVENTS_H
#define OB_CORE_CLOUDEVENTS_H

#include <stddef.h>

#include "core/util/trace_context.h"
#include "oncebox.h"

/*
** Encode ev as {"specversion":"1.0","id","source","type","subject","time",
** ["traceparent","tracestate",]"datacontenttype":"application/json",
** "data":<payload>}. id = the outbox id, subject = the aggregate id, time =
** created_at in RFC 3339 (UTC, ms). ^traceparent and tracestate are written,
** as top-level members (the extension's structured-mode form), each only
** when ev's is not NULL and not empty; ^without them the output is what it
** was before they existed, byte for byte. The payload is embedded as is: it
** was validated as JSON when emitted. source may be of any length. Strings
** are escaped, not checked. ^Returns a malloc'd NUL-terminated string
** (length in *len when len is not NULL) the caller frees, or NULL when out
** of memory.
*/
char* ob__cloudevent_encode(const ob_event_t* ev, const char* source,
                            size_t* len);

/* A decoded CloudEvent. Every pointer is malloc'd and owned by the struct:
** release it with ob__cloudevent_free. */
typedef struct ob__cloudevent_s {
  char* id;            /* malloc'd: any non-empty String the spec allows */
  char* source;        /* malloc'd: a non-empty URI-reference, any length */
  char type[129];      /* 1..128 printable ASCII (oncebox's rule, unchanged) */
  char* content_type;  /* malloc'd datacontenttype, NULL when absent */
  char* data;          /* malloc'd, NUL-terminated, data_len bytes before the NUL */
  size_t data_len;
  int data_is_json;    /* 1: data is JSON text */
  char traceparent[OB__TRACEPARENT_LEN + 1]; /* "" when absent */
  char tracestate[OB__TRACESTATE_MAX + 1];   /* "" when absent or traceparent absent */
  int trace_dropped;   /* 1: a traceparent/tracestate was present but invalid, so dropped */
} ob__cloudevent_t;

/*
** Decode the structured-mode CloudEvent body[0..len) into *out (which need
** not be initialised).
**
** Attributes: ^specversion "1.0"; ^id a non-empty string; ^source a
** non-empty URI-reference (RFC 3986), of any length; ^type 1..128 printable
** ASCII (0x21..0x7e); ^subject, if present, a non-empty string; ^id,
** source, type, subject and datacontenttype are the spec's String type: no
** control character (U+0000-U+001F, U+007F-U+009F) and no Unicode
** noncharacter. ^datacontenttype, if present, is any non-empty string (its
** media-type syntax is not checked). ^An attribute whose value is null
** counts as absent (json-format section 2.2). Other members (time,
** dataschema, extensions) are not checked.
**
** Data (json-format section 3.1): ^"data" and "data_base64" together are
** refused. ^"data_base64" is decoded (padded standard base64, see
** core/util/base64.h) into data, data_is_json 0. ^"data" with no
** datacontenttype, or one that declares JSON (its subtype, without
** parameters and in any case, is "json" or ends in "+json"), gives the
** value's JSON text as it stands in the body (without the whitespace around
** it), data_is_json 1; ^so does "data" that is not a string under another
** datacontenttype. ^A string "data" under a datacontenttype that is not
** JSON gives the string's decoded bytes (UTF-8; \u0000 a NUL counted in
** data_len), data_is_json 0. ^With neither member, data is "" (data_len 0,
** data_is_json 0): the spec makes data optional.
**
** Trace context (the distributed-tracing extension): ^a "traceparent"
** string that ob__traceparent_parse accepts is kept in its version-00 form;
** ^a "tracestate" string is kept when ob__tracestate_valid accepts it and
** the traceparent was kept (an empty one is taken as absent). ^Anything else
** present in those two members is dropped and sets trace_dropped, ^as is
** the trace context when either member appears twice: never a reason to
** refuse the event.
**
** ^Returns 0 (reason set to "" when reason_len > 0); ^-1 (OB_EINVAL) with a
** specific reason when the body can never be handled; ^OB_ENOMEM when out
** of memory (transient; reason says so). ^On any non-zero return *out holds
** nothing to free (the caller may still call ob__cloudevent_free on it).
** reason is truncated to reason_len and always NUL-terminated; a NULL
** reason or a zero reason_len writes nothing.
*/
int ob__cloudevent_decode(const char* body, size_t len, ob__cloudevent_t* out,
                          char* reason, size_t reason_len);

/* Free what ob__cloudevent_decode allocated in *ce and zero those fields.
** ^NULL-safe; ^calling it again after a free is harmless. This function
** can't fail. */
void ob__cloudevent_free(ob__cloudevent_t* ce);

#endif
