/* SPDX-License-Identifier: Apache-2.0 */
/* One NDJSON line into a message envelope, without re-serialising. */
#include "core/util/ndjson_envelope.h"

#include <stdlib.h>
#include <string.h>

#include "core/include/oncebox.h"
#include "core/util/json_check.h"

enum { F_ID, F_TYPE, F_BODY, F_QUEUE, F_HEADERS, NFIELDS };

static const char* const field_names[NFIELDS] = {"id", "type", "body", "queue",
                                                 "headers"};
static const char* const duplicate_reason[NFIELDS] = {
    "duplicate field \"id\"", "duplicate field \"type\"",
    "duplicate field \"body\"", "duplicate field \"queue\"",
    "duplicate field \"headers\""};

#define MAX_TYPE 128

/* Bytes of the value that starts at v (ob__json_scan also counts the
** whitespace after it). */
static size_t value_len(const char* v, const char* end) {
  size_t n = ob__json_scan(v, (size_t)(end - v));
  while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t' || v[n - 1] == '\n' ||
                   v[n - 1] == '\r'))
    n--;
  return n;
}

/* Append the decoded string at v to *w; returns its start. */
static char* put_string(char** w, const char* v, size_t* n) {
  char* s = *w;
  *n = ob__json_str_unescape(v, s);
  *w = s + *n + 1;
  return s;
}

/* Append the value's bytes as given at v to *w; returns its start. */
static char* put_raw(char** w, const char* v, const char* end, size_t* n) {
  char* s = *w;
  *n = value_len(v, end);
  memcpy(s, v, *n);
  s[*n] = '\0';
  *w = s + *n + 1;
  return s;
}

static int refuse(ob__ndjson_envelope_t* out, const char* reason,
                  const char** why) {
  ob__ndjson_envelope_free(out);
  *why = reason;
  return -1;
}

int ob__ndjson_envelope_parse(const char* line, size_t len,
                              ob__ndjson_envelope_t* out, const char** why) {
  const char* val[NFIELDS] = {NULL, NULL, NULL, NULL, NULL};
  const char* end = line + len;
  const char* first;
  char* w;
  size_t n;
  int dup, unknown = 0;

  memset(out, 0, sizeof *out);
  *why = NULL;
  if (memchr(line, '\0', len) != NULL)
    return refuse(out, "not valid JSON: a NUL byte in the line", why);
  if (!ob__json_valid(line, len)) {
    size_t scanned = ob__json_scan(line, len);
    return refuse(out,
                  scanned > 0 ? "not valid JSON: more after the value"
                              : "not valid JSON (RFC 8259: UTF-8, no raw "
                                "control characters)",
                  why);
  }
  first = ob__json_skip_ws(line);
  if (*first != '{') return refuse(out, "not a JSON object", why);
  dup = ob__json_members(line, len, field_names, NFIELDS, val, &unknown);
  if (dup >= 0) return refuse(out, duplicate_reason[dup], why);
  if (unknown > 0)
    return refuse(out,
                  "unknown field (an object line has \"id\", \"type\", "
                  "\"body\", \"queue\" and \"headers\")",
                  why);

  if (val[F_ID] == NULL || *val[F_ID] != '"')
    return refuse(out, "missing string field \"id\"", why);
  if (val[F_TYPE] == NULL || *val[F_TYPE] != '"')
    return refuse(out, "missing string field \"type\"", why);
  if (val[F_BODY] == NULL) return refuse(out, "missing field \"body\"", why);
  if (val[F_QUEUE] != NULL && *val[F_QUEUE] != '"')
    return refuse(out, "\"queue\" must be a string", why);
  if (val[F_HEADERS] != NULL && *val[F_HEADERS] != '{')
    return refuse(out, "\"headers\" must be an object", why);

  /* Every field is at most its bytes in the line, plus a NUL. */
  out->mem = malloc(len + NFIELDS);
  if (out->mem == NULL) return OB_ENOMEM;
  w = out->mem;
  out->id = put_string(&w, val[F_ID], &n);
  if (n != strlen(out->id) || !ob_uuid_valid(out->id))
    return refuse(out, "\"id\" is not a UUID", why);
  out->type = put_string(&w, val[F_TYPE], &n);
  if (n != strlen(out->type))
    return refuse(out, "\"type\" must not contain \\u0000", why);
  if (n == 0 || n > MAX_TYPE)
    return refuse(out, "\"type\" must be 1..128 characters", why);
  if (val[F_QUEUE] != NULL) {
    out->queue = put_string(&w, val[F_QUEUE], &n);
    if (n != strlen(out->queue))
      return refuse(out, "queue name must not contain \\u0000", why);
  }
  if (val[F_HEADERS] != NULL)
    out->headers = put_raw(&w, val[F_HEADERS], end, &n);
  if (*val[F_BODY] == '"')
    out->body = put_string(&w, val[F_BODY], &out->body_len);
  else
    out->body = put_raw(&w, val[F_BODY], end, &out->body_len);
  return 0;
}

void ob__ndjson_envelope_free(ob__ndjson_envelope_t* env) {
  if (env == NULL) return;
  free(env->mem);
  memset(env, 0, sizeof *env);
}
