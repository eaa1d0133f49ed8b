/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OB_CORE_NDJSON_ENVELOPE_H
#define OB_CORE_NDJSON_ENVELOPE_H

#include <stddef.h>

/* One line of `oncebox enqueue --ndjson`: a JSON object with the members
** "id", "type" and "body" (required) and "queue" and "headers" (optional).
**
** Strict, because each line is money: the line must be one valid JSON value
** (RFC 8259 as ob__json_valid judges it: UTF-8, no raw control characters,
** nothing after the value), a member may appear once, and an unknown member
** is refused rather than dropped (a misspelt "headers" must not vanish).
** Nothing is re-serialised: a string body is its decoded bytes (\u0000
** included), any other body and the headers are the exact bytes of the line,
** so 9007199254740991 stays 9007199254740991. */
typedef struct ob__ndjson_envelope_s {
  char* id;        /* NUL-terminated; all fields point into mem */
  char* type;      /* NUL-terminated, 1..128 bytes, no NUL inside */
  char* queue;     /* NULL when absent; no NUL inside */
  char* headers;   /* NULL when absent; the object's text as given */
  char* body;      /* body_len bytes, then a NUL */
  size_t body_len;
  char* mem;
} ob__ndjson_envelope_t;

/* Parse line[0..len) (without its newline; it need not be NUL-terminated).
** Returns 0 and fills *out (release it with ob__ndjson_envelope_free); -1
** with a static, specific reason in *why and *out zeroed; or OB_ENOMEM with
** *out zeroed. The envelope's finer rules (printable type, queue name,
** body size) are left to ob_envelope_check. */
int ob__ndjson_envelope_parse(const char* line, size_t len,
                              ob__ndjson_envelope_t* out, const char** why);

/* Free what ob__ndjson_envelope_parse filled and zero it; NULL-safe. */
void ob__ndjson_envelope_free(ob__ndjson_envelope_t* env);

#endif
