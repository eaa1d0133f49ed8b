/* SPDX-License-Identifier: Apache-2.0 */
/* Strict JSON validation (RFC 8259), no allocation.
**
** Why not cJSON: cJSON 1.7.15 accepts text RFC 8259 rejects ("01", "1.",
** "-01", control bytes as whitespace, raw control bytes and invalid UTF-8
** inside strings), and it allocates, so an out-of-memory would read as
** "invalid". This recursive-descent checker is bounded by the depth limit
** (two frames per level) and rejects nothing cJSON can't parse: it also
** refuses unpaired surrogate escapes, as cJSON (and I-JSON, RFC 7493) do. */
#include "core/util/json_check.h"

#include <string.h>

typedef struct {
  const unsigned char* p;
  const unsigned char* end;
  int depth;
} js_t;

static int js_value(js_t* s);

static int more(const js_t* s) {
  return s->p < s->end;
}

static void js_ws(js_t* s) {
  while (more(s) && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' ||
                     *s->p == '\r'))
    s->p++;
}

static int js_lit(js_t* s, const char* lit, size_t n) {
  size_t i;
  if ((size_t)(s->end - s->p) < n) return 0;
  for (i = 0; i < n; i++)
    if (s->p[i] != (unsigned char)lit[i]) return 0;
  s->p += n;
  return 1;
}

static int js_digits(js_t* s) {
  const unsigned char* start = s->p;
  while (more(s) && *s->p >= '0' && *s->p <= '9') s->p++;
  return s->p > start;
}

/* -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)? */
static int js_number(js_t* s) {
  if (*s->p == '-') s->p++;
  if (!more(s)) return 0;
  if (*s->p == '0')
    s->p++; /* a digit after a leading 0 is left for the caller to reject */
  else if (!js_digits(s))
    return 0;
  if (more(s) && *s->p == '.') {
    s->p++;
    if (!js_digits(s)) return 0;
  }
  if (more(s) && (*s->p == 'e' || *s->p == 'E')) {
    s->p++;
    if (more(s) && (*s->p == '+' || *s->p == '-')) s->p++;
    if (!js_digits(s)) return 0;
  }
  return 1;
}

/* Four hex digits after "\u"; -1 if not. */
static long js_hex4(js_t* s) {
  long v = 0;
  int i;
  if (s->end - s->p < 4) return -1;
  for (i = 0; i < 4; i++) {
    unsigned c = s->p[i];
    v <<= 4;
    if (c >= '0' && c <= '9') v |= c - '0';
    else if (c >= 'a' && c <= 'f') v |= c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') v |= c - 'A' + 10;
    else return -1;
  }
  s->p += 4;
  return v;
}

/* One escape, s->p just after the backslash. */
static int js_escape(js_t* s) {
  long u;
  if (!more(s)) return 0;
  switch (*s->p++) {
    case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r':
    case 't':
      return 1;
    case 'u':
      break;
    default:
      return 0;
  }
  if ((u = js_hex4(s)) < 0) return 0;
  if (u >= 0xDC00 && u <= 0xDFFF) return 0; /* low surrogate first */
  if (u < 0xD800 || u > 0xDBFF) return 1;
  /* A high surrogate must be followed by an escaped low one. */
  if (!js_lit(s, "\\u", 2)) return 0;
  u = js_hex4(s);
  return u >= 0xDC00 && u <= 0xDFFF;
}

/* One UTF-8 sequence of 2..4 bytes, well-formed per Unicode table 3-7: no
** overlong forms, no surrogates, nothing above U+10FFFF. */
static int js_utf8(js_t* s) {
  unsigned c = s->p[0], lo = 0x80, hi = 0xBF;
  int n, i;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 1;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 2;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 3;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (s->end - s->p <= n) return 0;
  if (s->p[1] < lo || s->p[1] > hi) return 0;
  for (i = 2; i <= n; i++)
    if ((s->p[i] & 0xC0) != 0x80) return 0;
  s->p += n + 1;
  return 1;
}

static int js_string(js_t* s) {
  s->p++; /* opening quote */
  while (more(s)) {
    unsigned c = *s->p;
    if (c == '"') {
      s->p++;
      return 1;
    } else if (c < 0x20) {
      return 0; /* control characters must be escaped */
    } else if (c == '\\') {
      s->p++;
      if (!js_escape(s)) return 0;
    } else if (c < 0x80) {
      s->p++;
    } else if (!js_utf8(s)) {
      return 0;
    }
  }
  return 0;
}

/* Array or object, s->p at the opening bracket. */
static int js_container(js_t* s) {
  int is_obj = *s->p == '{';
  unsigned char close = is_obj ? '}' : ']';
  if (++s->depth > OB__JSON_MAX_DEPTH) return 0;
  s->p++;
  js_ws(s);
  if (more(s) && *s->p == close) goto done;
  for (;;) {
    if (is_obj) {
      if (!more(s) || *s->p != '"' || !js_string(s)) return 0;
      js_ws(s);
      if (!more(s) || *s->p != ':') return 0;
      s->p++;
    }
    if (!js_value(s)) return 0; /* eats whitespace around the value */
    if (!more(s)) return 0;
    if (*s->p == close) break;
    if (*s->p != ',') return 0;
    s->p++;
    js_ws(s);
  }
done:
  s->p++;
  s->depth--;
  return 1;
}

static int js_value(js_t* s) {
  int ok;
  js_ws(s);
  if (!more(s)) return 0;
  switch (*s->p) {
    case '{': case '[': ok = js_container(s); break;
    case '"': ok = js_string(s); break;
    case 't': ok = js_lit(s, "true", 4); break;
    case 'f': ok = js_lit(s, "false", 5); break;
    case 'n': ok = js_lit(s, "null", 4); break;
    default:
      ok = (*s->p == '-' || (*s->p >= '0' && *s->p <= '9')) && js_number(s);
      break;
  }
  if (ok) js_ws(s);
  return ok;
}

size_t ob__json_scan(const char* text, size_t len) {
  js_t s;
  if (text == NULL) return 0;
  s.p = (const unsigned char*)text;
  s.end = s.p + len;
  s.depth = 0;
  if (!js_value(&s)) return 0;
  return (size_t)((const char*)s.p - text);
}

int ob__json_valid(const char* text, size_t len) {
  return len > 0 && ob__json_scan(text, len) == len;
}

int ob__json_is_object(const char* text, size_t len) {
  size_t i = 0;
  if (!ob__json_valid(text, len)) return 0;
  while (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' ||
         text[i] == '\r')
    i++;
  return text[i] == '{';
}

/* ---- reading validated documents ---------------------------------------- */

const char* ob__json_skip_ws(const char* p) {
  while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
  return p;
}

static int hex4(const char* p) {
  int v = 0, i;
  for (i = 0; i < 4; i++) {
    char c = p[i];
    v = v << 4 | (c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
  }
  return v;
}

/* Decode the (valid) JSON string whose opening quote is at p into buf,
** NUL-terminated. Returns the decoded length, or cap if it needs cap bytes
** or more. A \u escape of a non-ASCII character decodes to the byte 0xFF:
** every comparison here is with ASCII text, which that byte never matches.
** \u0000 decodes to a NUL byte counted in the length. */
size_t ob__json_str_decode(const char* p, char* buf, size_t cap) {
  size_t n = 0;
  for (p++; *p != '"'; p++) {
    int c = (unsigned char)*p;
    if (c == '\\') {
      switch (c = *++p) {
        case 'b': c = '\b'; break;
        case 'f': c = '\f'; break;
        case 'n': c = '\n'; break;
        case 'r': c = '\r'; break;
        case 't': c = '\t'; break;
        case 'u':
          c = hex4(p + 1);
          if (c >= 0x80) c = 0xFF;
          p += 4;
          break;
        default: break; /* '"', '\\' and '/' stand for themselves */
      }
    }
    if (n + 1 >= cap) return cap;
    buf[n++] = (char)c;
  }
  buf[n] = '\0';
  return n;
}

/* UTF-8 of one code point (< 0x110000) into out; returns its length. */
static size_t put_utf8(unsigned long c, char* out) {
  if (c < 0x80) {
    out[0] = (char)c;
    return 1;
  }
  if (c < 0x800) {
    out[0] = (char)(0xC0 | c >> 6);
    out[1] = (char)(0x80 | (c & 0x3F));
    return 2;
  }
  if (c < 0x10000) {
    out[0] = (char)(0xE0 | c >> 12);
    out[1] = (char)(0x80 | (c >> 6 & 0x3F));
    out[2] = (char)(0x80 | (c & 0x3F));
    return 3;
  }
  out[0] = (char)(0xF0 | c >> 18);
  out[1] = (char)(0x80 | (c >> 12 & 0x3F));
  out[2] = (char)(0x80 | (c >> 6 & 0x3F));
  out[3] = (char)(0x80 | (c & 0x3F));
  return 4;
}

size_t ob__json_str_unescape(const char* p, char* buf) {
  size_t n = 0;
  for (p++; *p != '"'; p++) {
    unsigned long c = (unsigned char)*p;
    if (c != '\\') {
      buf[n++] = (char)c;
      continue;
    }
    switch (*++p) {
      case 'b': c = '\b'; break;
      case 'f': c = '\f'; break;
      case 'n': c = '\n'; break;
      case 'r': c = '\r'; break;
      case 't': c = '\t'; break;
      case 'u':
        c = (unsigned long)hex4(p + 1);
        p += 4;
        if (c >= 0xD800 && c <= 0xDBFF) { /* validated: a low one follows */
          c = 0x10000 + ((c - 0xD800) << 10) +
              ((unsigned long)hex4(p + 3) - 0xDC00);
          p += 6;
        }
        n += put_utf8(c, buf + n);
        continue;
      default: c = (unsigned char)*p; break; /* '"', '\\', '/' */
    }
    buf[n++] = (char)c;
  }
  buf[n] = '\0';
  return n;
}

int ob__json_members(const char* body, size_t len, const char* const* names,
                     int count, const char* val[], int* unknown) {
  const char* end = body + len;
  const char* p = ob__json_skip_ws(body) + 1; /* past '{' */
  p = ob__json_skip_ws(p);
  if (*p == '}') return -1;
  for (;;) {
    char key[64];
    size_t kn = ob__json_str_decode(p, key, sizeof key);
    const char* v;
    int f;
    p += ob__json_scan(p, (size_t)(end - p)); /* the key, as a value */
    p++;                                      /* ':' */
    v = ob__json_skip_ws(p);
    p += ob__json_scan(p, (size_t)(end - p));
    for (f = 0; f < count; f++) {
      if (kn != strlen(names[f]) || memcmp(key, names[f], kn) != 0)
        continue;
      if (val[f] != NULL) return f;
      val[f] = v;
      break;
    }
    if (f == count && unknown != NULL) (*unknown)++;
    if (*p == '}') return -1;
    p = ob__json_skip_ws(p + 1); /* past ',' */
  }
}

