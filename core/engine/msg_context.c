/* SPDX-License-Identifier: Apache-2.0 */
#include "core/engine/msg_context.h"

#include <stdlib.h>
#include <string.h>

#include "oncebox.h"
#include "core/util/json_check.h"

enum { H_TRACEPARENT, H_TRACESTATE, H_CONTENT_TYPE, H_COUNT };
static const char* const names[H_COUNT] = {
    OB__HDR_TRACEPARENT, OB__HDR_TRACESTATE, OB__HDR_CONTENT_TYPE};

/* A JSON string member decoded into a malloc'd buffer; NULL when absent,
** not a string, or out of memory (*oom). */
static char* member_str(const char* v, size_t* n, int* oom) {
  char* s;
  if (v == NULL || *v != '"') return NULL;
  s = malloc(ob__json_scan(v, strlen(v)) + 1);
  if (s == NULL) {
    *oom = 1;
    return NULL;
  }
  *n = ob__json_str_unescape(v, s);
  return s;
}

int ob__msg_context_read(ob__msg_context_t* c, const char* headers) {
  const char* val[H_COUNT] = {NULL};
  char* s;
  size_t n = 0, len;
  int oom = 0;

  memset(c, 0, sizeof *c);
  /* Most messages have no headers, or none of these: no parse then. */
  if (headers == NULL || (strstr(headers, "trace") == NULL &&
                          strstr(headers, OB__HDR_CONTENT_TYPE) == NULL))
    return 0;
  len = strlen(headers);
  if (!ob__json_is_object(headers, len) ||
      ob__json_members(headers, len, names, H_COUNT, val, NULL) >= 0)
    return 0;
  if ((s = member_str(val[H_TRACEPARENT], &n, &oom)) != NULL) {
    if (ob__traceparent_parse(s, n, c->traceparent) != 1)
      c->traceparent[0] = '\0';
    free(s);
  }
  if (c->traceparent[0] != '\0' &&
      (s = member_str(val[H_TRACESTATE], &n, &oom)) != NULL) {
    if (n <= OB__TRACESTATE_MAX && ob__tracestate_valid(s, n))
      memcpy(c->tracestate, s, n + 1);
    free(s);
  }
  if ((s = member_str(val[H_CONTENT_TYPE], &n, &oom)) != NULL) {
    if (n > 0 && strlen(s) == n) c->content_type = s;
    else free(s);
  }
  if (oom) {
    ob__msg_context_free(c);
    return OB_ENOMEM;
  }
  return 0;
}

void ob__msg_context_free(ob__msg_context_t* c) {
  free(c->content_type);
  memset(c, 0, sizeof *c);
}
