/* Outbox events on the wire: CloudEvents 1.0, structured JSON mode
** (https://github.com/cloudevents/spec/blob/v1.0.2/cloudevents/formats/json-format.md).
** Pure. */
#ifndef OB_CORE_CLOUDEVENTS_H
#define OB_CORE_CLOUDEVENTS_H

#include <stddef.h>

#include "oncebox.h"

/*
** Encode ev as {"specversion":"1.0","id","source","type","subject","time",
** "datacontenttype":"application/json","data":<payload>}. id = the outbox
** id, subject = the aggregate id, time = created_at in RFC 3339 (UTC, ms).
** The payload is embedded as is: it was validated as JSON when emitted.
** Returns a malloc'd NUL-terminated string (length in *len) the caller
** frees, or NULL when out of memory.
*/
char* ob__cloudevent_encode(const ob_event_t* ev, const char* source,
                            size_t* len);

typedef struct ob__cloudevent_s {
  char id[OB_UUID_BUFLEN];          /* lower-case UUID: the dedup identity */
  char type[129];
  const char* data;     /* points into the decoded body: the raw data JSON */
  size_t data_len;
} ob__cloudevent_t;

/*
** Decode a structured-mode CloudEvent. Requires a JSON object with
** specversion "1.0", a non-empty source, an id that is a UUID (oncebox's
** dedup guard keys on it), a type of 1..128 printable ASCII characters and
** a "data" member (JSON); datacontenttype, if present, must be JSON.
** data_base64 is refused. Returns 0, or -1 with a specific reason.
*/
int ob__cloudevent_decode(const char* body, size_t len, ob__cloudevent_t* out,
                          char* reason, size_t reason_len);

#endif
