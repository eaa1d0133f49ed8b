/* SPDX-License-Identifier: Apache-2.0 */
#include "core/relay/cloudevents.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/util/base64.h"
#include "core/util/errbuf.h"
#include "core/util/json_check.h"
#include "core/util/uri_ref.h"
#include "core/util/utc_time.h"

/* Worst case of one escaped byte is \u00XX: 6 bytes. */
static size_t put_str(char* out, const char* s) {
  static const char hex[] = "0123456789abcdef";
  size_t n = 0;
  out[n++] = '"';
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') {
      out[n++] = '\\';
      out[n++] = (char)c;
    } else if (c < 0x20) {
      memcpy(out + n, "\\u00", 4);
      out[n + 4] = hex[c >> 4];
      out[n + 5] = hex[c & 15];
      n += 6;
    } else {
      out[n++] = (char)c;
    }
  }
  out[n++] = '"';
  return n;
}

static size_t put_raw(char* out, const char* s) {
  size_t n = strlen(s);
  memcpy(out, s, n);
  return n;
}

char* ob__cloudevent_encode(const ob_event_t* ev, const char* source,
                            size_t* len) {
  /* NULL or "": no trace context, and then not a byte of difference. */
  const char* tp = ev->traceparent && *ev->traceparent ? ev->traceparent
                                                        : NULL;
  const char* ts = ev->tracestate && *ev->tracestate ? ev->tracestate : NULL;
  char when[OB__UTC_MS_LEN];
  size_t cap, n = 0;
  char* out;

  /* A clock before year 0 or after 9999 has no RFC 3339 form: the epoch
  ** then, as a value the receiver can parse (the event is not lost). */
  if (ob__utc_format_ms(ev->created_at_ms, when) != 0)
    (void)ob__utc_format_ms(0, when);
  /* 120 bytes of fixed text (160 with margin), 6 per escaped byte. */
  cap = 160 + 6 * (strlen(ev->id) + strlen(source) + strlen(ev->event_type) +
                   strlen(ev->aggregate_id)) +
        strlen(when) + ev->payload_len;
  if (tp != NULL) cap += 20 + 6 * strlen(tp);
  if (ts != NULL) cap += 20 + 6 * strlen(ts);
  if (ev->wall_behind_ms > 0) cap += 40;
  out = malloc(cap);
  if (out == NULL) return NULL;
  n += put_raw(out + n, "{\"specversion\":\"1.0\",\"id\":");
  n += put_str(out + n, ev->id);
  n += put_raw(out + n, ",\"source\":");
  n += put_str(out + n, source);
  n += put_raw(out + n, ",\"type\":");
  n += put_str(out + n, ev->event_type);
  n += put_raw(out + n, ",\"subject\":");
  n += put_str(out + n, ev->aggregate_id);
  n += put_raw(out + n, ",\"time\":");
  n += put_str(out + n, when);
  if (tp != NULL) {
    n += put_raw(out + n, ",\"traceparent\":");
    n += put_str(out + n, tp);
  }
  if (ts != NULL) {
    n += put_raw(out + n, ",\"tracestate\":");
    n += put_str(out + n, ts);
  }
  /* "time" above is the engine clock's, which runs on while the wall clock
  ** is behind it (docs/decisions/0019): say so, and by how much. An
  ** Integer extension attribute (CloudEvents 1.0: lower-case a-z0-9). */
  if (ev->wall_behind_ms > 0)
    n += (size_t)snprintf(out + n, cap - n, ",\"obwallbehindms\":%lld",
                          (long long)ev->wall_behind_ms);
  n += put_raw(out + n, ",\"datacontenttype\":\"application/json\",\"data\":");
  memcpy(out + n, ev->payload, ev->payload_len);
  n += ev->payload_len;
  out[n++] = '}';
  out[n] = '\0';
  if (len) *len = n;
  return out;
}


enum {
  M_SPEC, M_ID, M_SOURCE, M_TYPE, M_SUBJECT, M_CT, M_DATA, M_DATA_B64,
  M_COUNT
};
static const char* const members[M_COUNT] = {
    "specversion", "id",   "source",     "type", "subject", "datacontenttype",
    "data",        "data_base64"};
/* Looked up apart: a duplicate of these drops the trace context instead of
** refusing the event. */
enum { T_PARENT, T_STATE, T_COUNT };
static const char* const trace_members[T_COUNT] = {"traceparent",
                                                   "tracestate"};

/* json-format section 2.2: "When decoding attributes and a null value is
** encountered, it MUST be treated as the equivalent of unset or omitted." */
static int present(const char* v) { return v != NULL && *v != 'n'; }
static int is_str(const char* v) { return v != NULL && *v == '"'; }

/* The string value at v (in a valid document ending at end), decoded
** exactly into a malloc'd buffer sized by its encoding, which is never
** shorter. NULL when out of memory. */
static char* str_dup(const char* v, const char* end, size_t* n) {
  char* s = malloc(ob__json_scan(v, (size_t)(end - v)) + 1);
  if (s != NULL) *n = ob__json_str_unescape(v, s);
  return s;
}

/* The spec's String type (spec.md, "Type System"): no control character
** (U+0000-U+001F, U+007F-U+009F) and no noncharacter. s[0..n) is UTF-8:
** decoded from a document ob__json_valid accepted. */
static int string_ok(const char* name, const char* s, size_t n, char* reason,
                     size_t rl) {
  for (size_t i = 0, k; i < n; i += k) {
    const unsigned char* u = (const unsigned char*)s + i;
    unsigned long cp;
    k = u[0] < 0x80 ? 1 : u[0] < 0xE0 ? 2 : u[0] < 0xF0 ? 3 : 4;
    if (k > n - i)
      return ob__errbuf_set(reason, rl, -1, "%s is not UTF-8", name);
    if (k == 1) cp = u[0];
    else if (k == 2) cp = (u[0] & 0x1Ful) << 6 | (u[1] & 0x3F);
    else if (k == 3)
      cp = (u[0] & 0x0Ful) << 12 | (u[1] & 0x3Ful) << 6 | (u[2] & 0x3F);
    else
      cp = (u[0] & 0x07ul) << 18 | (u[1] & 0x3Ful) << 12 |
           (u[2] & 0x3Ful) << 6 | (u[3] & 0x3F);
    if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F))
      return ob__errbuf_set(reason, rl, -1,
                            "%s holds the control character U+%04lX at byte "
                            "%zu (a CloudEvents String has none)",
                            name, cp, i);
    if ((cp >= 0xFDD0 && cp <= 0xFDEF) || (cp & 0xFFFE) == 0xFFFE)
      return ob__errbuf_set(reason, rl, -1,
                            "%s holds the noncharacter U+%04lX at byte %zu "
                            "(a CloudEvents String has none)",
                            name, cp, i);
  }
  return 0;
}

/* json-format section 3.1.1: a datacontenttype declares JSON when its media
** type, stripped of parameters, is type/json or type/subtype+json (in any
** case: RFC 2045 types and subtypes are case-insensitive). */
static int ct_is_json(const char* ct) {
  const char* end = strchr(ct, ';');
  const char* slash = strchr(ct, '/');
  size_t sub;
  if (end == NULL) end = ct + strlen(ct);
  while (end > ct && (end[-1] == ' ' || end[-1] == '\t')) end--;
  if (slash == NULL || slash >= end) return 0;
  sub = (size_t)(end - slash - 1);
  return (sub == 4 && strncasecmp(slash + 1, "json", 4) == 0) ||
         (sub > 5 && strncasecmp(end - 5, "+json", 5) == 0);
}

/* The JSON text of the value at v, without the whitespace after it. */
static size_t value_span(const char* v, const char* end) {
  size_t n = ob__json_scan(v, (size_t)(end - v));
  while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t' || v[n - 1] == '\n' ||
                   v[n - 1] == '\r'))
    n--;
  return n;
}

/* out->data from data_base64 (b64) or data (data), or "". */
static int decode_data(const char* b64, const char* data, const char* end,
                       ob__cloudevent_t* out, char* reason, size_t rl) {
  char why[160];
  size_t n;
  if (b64 != NULL) {
    char* text;
    int rc;
    if (!is_str(b64))
      return ob__errbuf_set(reason, rl, -1,
                            "data_base64 must be a string (base64)");
    if ((text = str_dup(b64, end, &n)) == NULL) return OB_ENOMEM;
    out->data = malloc(OB__BASE64_DECODED_MAX(n) + 1);
    rc = out->data == NULL ? OB_ENOMEM
                           : ob__base64_decode(text, n,
                                               (unsigned char*)out->data,
                                               &out->data_len, why,
                                               sizeof why);
    free(text);
    if (rc == OB_ENOMEM) return rc;
    if (rc != 0)
      return ob__errbuf_set(reason, rl, -1, "data_base64 is not base64: %s",
                            why);
    out->data[out->data_len] = '\0';
    return 0;
  }
  if (data == NULL) {
    /* The spec makes data optional; a handler still gets a C string. */
    if ((out->data = malloc(1)) == NULL) return OB_ENOMEM;
    out->data[0] = '\0';
    return 0;
  }
  if (out->content_type != NULL && !ct_is_json(out->content_type) &&
      is_str(data)) {
    /* json-format 3.1.2: then data "SHOULD be treated as an encoded content
    ** string": its bytes, not its JSON text. */
    if ((out->data = str_dup(data, end, &out->data_len)) == NULL)
      return OB_ENOMEM;
    return 0;
  }
  n = value_span(data, end);
  if ((out->data = malloc(n + 1)) == NULL) return OB_ENOMEM;
  memcpy(out->data, data, n);
  out->data[n] = '\0';
  out->data_len = n;
  out->data_is_json = 1;
  return 0;
}

/* The distributed-tracing extension: kept when valid, else dropped (and
** said so in trace_dropped), never a refusal. */
static int decode_trace(const char* body, size_t len, ob__cloudevent_t* out) {
  const char* val[T_COUNT] = {NULL};
  const char* end = body + len;
  const char* tp;
  const char* ts;
  char* s;
  size_t n;
  if (ob__json_members(body, len, trace_members, T_COUNT, val, NULL) >= 0) {
    out->trace_dropped = 1; /* a duplicate: which one counts is unclear */
    return 0;
  }
  tp = val[T_PARENT];
  ts = val[T_STATE];
  if (present(tp)) {
    if (!is_str(tp)) {
      out->trace_dropped = 1;
    } else {
      if ((s = str_dup(tp, end, &n)) == NULL) return OB_ENOMEM;
      if (!ob__traceparent_parse(s, n, out->traceparent))
        out->trace_dropped = 1;
      free(s);
    }
  }
  if (present(ts)) {
    if (!is_str(ts)) {
      out->trace_dropped = 1;
    } else {
      if ((s = str_dup(ts, end, &n)) == NULL) return OB_ENOMEM;
      /* W3C: an empty tracestate is accepted (and carries nothing); one
      ** without a traceparent must not be used. */
      if (n > 0) {
        if (out->traceparent[0] != '\0' && ob__tracestate_valid(s, n))
          memcpy(out->tracestate, s, n + 1);
        else
          out->trace_dropped = 1;
      }
      free(s);
    }
  }
  return 0;
}

static int decode(const char* body, size_t len, ob__cloudevent_t* out,
                  char* reason, size_t rl) {
  const char* val[M_COUNT] = {NULL};
  const char* end = body + len;
  char why[256], spec[8];
  char* s;
  size_t n;
  int dup, rc;

  if (!ob__json_valid(body, len))
    return ob__errbuf_set(reason, rl, -1, "body is not valid JSON");
  if (!ob__json_is_object(body, len))
    return ob__errbuf_set(reason, rl, -1, "body is not a JSON object");
  if ((dup = ob__json_members(body, len, members, M_COUNT, val, NULL)) >= 0)
    return ob__errbuf_set(reason, rl, -1,
                          "duplicate CloudEvents attribute %s", members[dup]);
  if (!is_str(val[M_SPEC]) ||
      ob__json_str_decode(val[M_SPEC], spec, sizeof spec) != 3 ||
      memcmp(spec, "1.0", 4) != 0)
    return ob__errbuf_set(reason, rl, -1, "specversion must be \"1.0\"");

  if (!is_str(val[M_ID]))
    return ob__errbuf_set(reason, rl, -1, "id must be a non-empty string");
  if ((out->id = str_dup(val[M_ID], end, &n)) == NULL) return OB_ENOMEM;
  if (n == 0)
    return ob__errbuf_set(reason, rl, -1, "id must be a non-empty string");
  if (string_ok("id", out->id, n, reason, rl) != 0) return -1;

  if (!is_str(val[M_SOURCE]))
    return ob__errbuf_set(reason, rl, -1,
                          "source must be a non-empty string");
  if ((out->source = str_dup(val[M_SOURCE], end, &n)) == NULL)
    return OB_ENOMEM;
  if (n == 0)
    return ob__errbuf_set(reason, rl, -1,
                          "source must be a non-empty string");
  if (string_ok("source", out->source, n, reason, rl) != 0) return -1;
  if (ob__uri_reference_check(out->source, n, why, sizeof why) != 0)
    return ob__errbuf_set(reason, rl, -1,
                          "source is not a URI-reference: %s", why);

  if (!is_str(val[M_TYPE]))
    return ob__errbuf_set(reason, rl, -1, "type must be 1..128 characters");
  if ((s = str_dup(val[M_TYPE], end, &n)) == NULL) return OB_ENOMEM;
  rc = string_ok("type", s, n, reason, rl);
  if (rc == 0 && (n == 0 || n >= sizeof out->type))
    rc = ob__errbuf_set(reason, rl, -1, "type must be 1..128 characters");
  for (size_t i = 0; rc == 0 && i < n; i++)
    if ((unsigned char)s[i] < 0x21 || (unsigned char)s[i] > 0x7e)
      rc = ob__errbuf_set(reason, rl, -1, "type must be printable ASCII");
  if (rc == 0) memcpy(out->type, s, n + 1);
  free(s);
  if (rc != 0) return rc;

  if (present(val[M_SUBJECT])) {
    if (!is_str(val[M_SUBJECT]))
      return ob__errbuf_set(reason, rl, -1,
                            "subject must be a non-empty string");
    if ((s = str_dup(val[M_SUBJECT], end, &n)) == NULL) return OB_ENOMEM;
    rc = n == 0 ? ob__errbuf_set(reason, rl, -1,
                                 "subject must be a non-empty string")
                : string_ok("subject", s, n, reason, rl);
    free(s);
    if (rc != 0) return rc;
  }

  if (present(val[M_CT])) {
    if (!is_str(val[M_CT]))
      return ob__errbuf_set(reason, rl, -1,
                            "datacontenttype must be a non-empty string");
    if ((out->content_type = str_dup(val[M_CT], end, &n)) == NULL)
      return OB_ENOMEM;
    if (n == 0)
      return ob__errbuf_set(reason, rl, -1,
                            "datacontenttype must be a non-empty string");
    if (string_ok("datacontenttype", out->content_type, n, reason, rl) != 0)
      return -1;
  }

  /* data: null is an explicit null payload (json-format 3.1.1), unlike a
  ** null data_base64, which is unset. */
  if (present(val[M_DATA_B64]) && val[M_DATA] != NULL)
    return ob__errbuf_set(reason, rl, -1,
                          "data and data_base64 are both present (a "
                          "CloudEvent has at most one)");
  rc = decode_data(present(val[M_DATA_B64]) ? val[M_DATA_B64] : NULL,
                   val[M_DATA], end, out, reason, rl);
  if (rc != 0) return rc;
  return decode_trace(body, len, out);
}

int ob__cloudevent_decode(const char* body, size_t len, ob__cloudevent_t* out,
                          char* reason, size_t reason_len) {
  int rc;
  memset(out, 0, sizeof *out);
  if (reason != NULL && reason_len > 0) reason[0] = '\0';
  rc = decode(body, len, out, reason, reason_len);
  if (rc == 0) return 0;
  /* One exit frees what a refusal left behind, so out holds nothing. */
  ob__cloudevent_free(out);
  memset(out, 0, sizeof *out);
  if (rc == OB_ENOMEM)
    return ob__errbuf_set(reason, reason_len, OB_ENOMEM,
                          "out of memory decoding a CloudEvent");
  return rc;
}

void ob__cloudevent_free(ob__cloudevent_t* ce) {
  if (ce == NULL) return;
  free(ce->id);
  free(ce->source);
  free(ce->content_type);
  free(ce->data);
  ce->id = ce->source = ce->content_type = ce->data = NULL;
  ce->data_len = 0;
}
