/* SPDX-License-Identifier: Apache-2.0 */
/* The configuration file's strict parser (config_parse.h). Never allocates:
** the state of one parse (open section, keys seen, headers seen, a decoded
** string) lives in one struct on the caller's stack. */
#include "programs/oncebox/config_parse.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "oncebox.h"

typedef struct header_s {
  const char* p;  /* "name" or "name.SUB" inside the text */
  size_t n;
  int line;
} header_t;

typedef struct parser_s {
  const char* name;
  const ob_cfg_schema_t* schema;
  ob_cfg_cb cb;
  void* ctx;
  char* err;
  size_t errlen;
  int line;
  const ob_cfg_section_t* sec;  /* the open section; NULL before the first */
  char sub[OB_CFG_MAX_SUB + 1];
  char shown[128];              /* "[name]" / "[name.SUB]" for messages */
  int key_line[OB_CFG_MAX_KEYS];  /* line each key of sec was set on; 0 */
  header_t headers[OB_CFG_MAX_SECTIONS];
  size_t nheaders;
  char buf[OB_CFG_MAX_LINE + 1];  /* a decoded "string" */
} parser_t;

/* "NAME:LINE: " and the message into err; returns OB_EINVAL. */
__attribute__((format(printf, 2, 3))) static int fault(parser_t* p,
                                                        const char* fmt, ...) {
  va_list ap;
  int used;
  if (p->err == NULL || p->errlen == 0) return OB_EINVAL;
  if (p->line > 0)
    used = snprintf(p->err, p->errlen, "%s:%d: ", p->name, p->line);
  else
    used = snprintf(p->err, p->errlen, "%s: ", p->name);
  if (used >= 0 && (size_t)used < p->errlen) {
    va_start(ap, fmt);
    (void)vsnprintf(p->err + used, p->errlen - (size_t)used, fmt, ap);
    va_end(ap);
  }
  return OB_EINVAL;
}

static int is_blank(char c) { return c == ' ' || c == '\t'; }

/* Length of the well-formed UTF-8 sequence at s (RFC 3629: no overlong
** forms, no surrogates, nothing past U+10FFFF), or 0 if it is not one. */
static size_t utf8_len(const unsigned char* s, size_t n) {
  unsigned c = s[0];
  size_t len;
  unsigned min;
  uint32_t cp;
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) len = 2, min = 0x80, cp = c & 0x1F;
  else if (c >= 0xE0 && c <= 0xEF) len = 3, min = 0x800, cp = c & 0x0F;
  else if (c >= 0xF0 && c <= 0xF4) len = 4, min = 0x10000, cp = c & 0x07;
  else return 0;
  if (n < len) return 0;
  for (size_t i = 1; i < len; i++) {
    if ((s[i] & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (s[i] & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return len;
}

/* The line's bytes: no NUL, no control character but tab, UTF-8. */
static int check_bytes(parser_t* p, const char* s, size_t n) {
  for (size_t i = 0; i < n;) {
    unsigned char c = (unsigned char)s[i];
    size_t len = 0;
    if (c == 0) return fault(p, "a NUL byte at column %zu", i + 1);
    if ((c < 0x20 && c != '\t') || c == 0x7F)
      return fault(p, "control character 0x%02x at column %zu", c, i + 1);
    len = utf8_len((const unsigned char*)s + i, n - i);
    if (len == 0) return fault(p, "invalid UTF-8 at column %zu", i + 1);
    i += len;
  }
  return 0;
}

/* ---- values ------------------------------------------------------------- */

/* Optional '-' (if neg), then digits: 0 with *v, or -1 (none, overflow).
** *used: the bytes taken. */
static int parse_digits(const char* s, size_t n, int neg, int64_t* v,
                        size_t* used) {
  size_t i = 0;
  int minus = 0;
  int64_t x = 0;
  if (neg && i < n && s[i] == '-') minus = 1, i++;
  if (i >= n || s[i] < '0' || s[i] > '9') return -1;
  for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
    int d = s[i] - '0';
    if (x > (INT64_MAX - d) / 10) return -1;
    x = x * 10 + d;
  }
  *v = minus ? -x : x;
  *used = i;
  return 0;
}

static int mul_ok(int64_t v, int64_t m, int64_t* out) {
  if (v > INT64_MAX / m || v < -(INT64_MAX / m)) return -1;
  *out = v * m;
  return 0;
}

static int parse_size(const char* s, size_t n, int64_t* v) {
  size_t i;
  int64_t m = 1;
  if (parse_digits(s, n, 0, v, &i) < 0) return -1;
  if (i < n) {
    switch (s[i]) {
      case 'k': case 'K': m = 1024; i++; break;
      case 'm': case 'M': m = 1024 * 1024; i++; break;
      case 'g': case 'G': m = 1024 * 1024 * 1024; i++; break;
      default: break;
    }
    if (m > 1 && i < n && s[i] == 'i') i++;
    if (i < n && (s[i] == 'B' || s[i] == 'b')) i++;
  }
  if (i != n) return -1;
  return mul_ok(*v, m, v);
}

static int parse_duration(const char* s, size_t n, int64_t unit_ms,
                          int64_t* v) {
  size_t i;
  int64_t m;
  if (parse_digits(s, n, 0, v, &i) < 0) return -1;
  if (n - i == 2 && s[i] == 'm' && s[i + 1] == 's') m = 1;
  else if (n - i == 1 && s[i] == 's') m = 1000;
  else if (n - i == 1 && s[i] == 'm') m = 60000;
  else if (n - i == 1 && s[i] == 'h') m = 3600000;
  else if (n - i == 1 && s[i] == 'd') m = 86400000;
  else if (n == i && unit_ms > 0) m = unit_ms;
  else return -1;
  return mul_ok(*v, m, v);
}

/* Digits with an optional fraction; no exponent, no locale. */
static int parse_number(const char* s, size_t n, double* d) {
  size_t i = 0;
  int minus = 0, digits = 0;
  double x = 0.0, scale = 1.0;
  if (i < n && s[i] == '-') minus = 1, i++;
  for (; i < n && s[i] >= '0' && s[i] <= '9'; i++, digits++) {
    if (digits >= 15) return -1;
    x = x * 10.0 + (s[i] - '0');
  }
  if (digits == 0) return -1;
  if (i < n && s[i] == '.') {
    int frac = 0;
    for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++, frac++) {
      if (frac >= 15) return -1;
      scale /= 10.0;
      x += (s[i] - '0') * scale;
    }
    if (frac == 0) return -1;
  }
  if (i != n) return -1;
  *d = minus ? -x : x;
  return 0;
}

static int word_is(const char* s, size_t n, const char* w) {
  return w != NULL && strlen(w) == n && memcmp(s, w, n) == 0;
}

/* What k expects, e.g. "an integer 1..10000". */
static void expects(const ob_cfg_key_t* k, char* out, size_t n) {
  size_t used = 0;
  switch (k->type) {
    case OB_CFG_STRING: snprintf(out, n, "a string"); return;
    case OB_CFG_BOOL: snprintf(out, n, "true or false"); return;
    case OB_CFG_INT:
      snprintf(out, n, "an integer %lld..%lld", (long long)k->min,
               (long long)k->max);
      break;
    case OB_CFG_SIZE:
      if (k->min == 0 && k->max == INT64_MAX)
        snprintf(out, n, "a size such as 64M or 1048576 (K, M, G: KiB, MiB, "
                 "GiB)");
      else
        snprintf(out, n, "a size of %lld..%lld bytes, such as 64M (K, M, G: "
                 "KiB, MiB, GiB)", (long long)k->min, (long long)k->max);
      break;
    case OB_CFG_DURATION:
      snprintf(out, n, "a duration %lldms..%lldms with a unit (ms, s, m, h, d)",
               (long long)k->min, (long long)k->max);
      break;
    case OB_CFG_NUMBER:
      snprintf(out, n, "a number %g..%g", k->dmin, k->dmax);
      return;
    case OB_CFG_ENUM:
      used = (size_t)snprintf(out, n, "one of");
      for (size_t i = 0; k->choices[i] != NULL && used < n; i++)
        used += (size_t)snprintf(out + used, n - used, "%s %s",
                                 i ? "," : "", k->choices[i]);
      return;
  }
  if (k->word != NULL) {
    used = strlen(out);
    if (used < n) snprintf(out + used, n - used, " or %s", k->word);
  }
}

int ob__cfg_parse_value(const ob_cfg_key_t* k, const char* s, size_t n,
                        int64_t unit_ms, ob_cfg_value_t* out, char* why,
                        size_t whylen) {
  char want[160];
  int bad = 0;
  out->key = k;
  out->i = 0;
  out->d = 0.0;
  out->s = NULL;
  out->len = 0;
  switch (k->type) {
    case OB_CFG_STRING:
      out->s = s;
      out->len = n;
      return 0;
    case OB_CFG_BOOL:
      if (word_is(s, n, "true") || word_is(s, n, "yes") || word_is(s, n, "on"))
        out->i = 1;
      else if (word_is(s, n, "false") || word_is(s, n, "no") ||
               word_is(s, n, "off"))
        out->i = 0;
      else
        bad = 1;
      break;
    case OB_CFG_ENUM:
      bad = 1;
      for (int64_t i = 0; k->choices[i] != NULL; i++)
        if (word_is(s, n, k->choices[i])) {
          out->i = i;
          bad = 0;
          break;
        }
      break;
    case OB_CFG_NUMBER:
      bad = parse_number(s, n, &out->d) < 0 || out->d < k->dmin ||
            out->d > k->dmax;
      break;
    case OB_CFG_INT:
    case OB_CFG_SIZE:
    case OB_CFG_DURATION: {
      size_t used = 0;
      int rc;
      if (word_is(s, n, k->word)) {
        out->i = k->word_value;
        break;
      }
      if (k->type == OB_CFG_INT)
        rc = parse_digits(s, n, 1, &out->i, &used) < 0 || used != n ? -1 : 0;
      else if (k->type == OB_CFG_SIZE)
        rc = parse_size(s, n, &out->i);
      else
        rc = parse_duration(s, n, unit_ms, &out->i);
      bad = rc < 0 || out->i < k->min || out->i > k->max;
      break;
    }
  }
  if (!bad) return 0;
  expects(k, want, sizeof want);
  if (why != NULL && whylen > 0)
    snprintf(why, whylen, "expects %s, not '%.*s%s'", want,
             n > 40 ? 40 : (int)n, s, n > 40 ? "..." : "");
  return OB_EINVAL;
}

int ob__cfg_looks_secret(const char* s, size_t n) {
  static const char* const words[] = {
      "secret",     "password",    "passwd",     "token",
      "authorization", "credential", "private_key", "access_key",
      "api_key",    "apikey",      "bearer",     NULL};
  for (size_t w = 0; words[w] != NULL; w++) {
    size_t wn = strlen(words[w]);
    for (size_t i = 0; i + wn <= n; i++) {
      size_t j = 0;
      /* Case-insensitive: ASCII only, names are ASCII. */
      while (j < wn && (s[i + j] | 0x20) == words[w][j]) j++;
      if (j == wn) return 1;
    }
  }
  return 0;
}

/* ---- lines -------------------------------------------------------------- */

static int name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

static int sub_char(char c) {
  return name_char(c) || (c >= 'A' && c <= 'Z') || c == '.' || c == ':' ||
         c == '-';
}

/* Only blanks and an optional "# comment" at s[0..n)? */
static int rest_is_comment(const char* s, size_t n) {
  size_t i = 0;
  while (i < n && is_blank(s[i])) i++;
  return i == n || s[i] == '#';
}

static int header_line(parser_t* p, const char* s, size_t n) {
  size_t i = 1, name_n, sub_n = 0, full_n;
  const ob_cfg_section_t* sec = NULL;
  while (i < n && name_char(s[i])) i++;
  name_n = i - 1;
  if (i < n && s[i] == '.') {
    i++;
    while (i < n && sub_char(s[i])) i++, sub_n++;
    if (sub_n == 0) return fault(p, "malformed section header: empty name after '.'");
  }
  if (name_n == 0 || i >= n || s[i] != ']')
    return fault(p, "malformed section header (expected [name] or "
                 "[name.sub], names of a-z, 0-9 and _)");
  full_n = i - 1;
  if (!rest_is_comment(s + i + 1, n - i - 1))
    return fault(p, "junk after the section header [%.*s]", (int)full_n,
                 s + 1);
  for (size_t k = 0; k < p->schema->nsections; k++)
    if (word_is(s + 1, name_n, p->schema->sections[k].name))
      sec = &p->schema->sections[k];
  if (sec == NULL)
    return fault(p, "unknown section [%.*s]", (int)(name_n > 64 ? 64 : name_n),
                 s + 1);
  if (sub_n > 0 && !sec->subs)
    return fault(p, "section [%s] has no sub-sections ([%.*s])", sec->name,
                 (int)(full_n > 100 ? 100 : full_n), s + 1);
  if (sub_n > OB_CFG_MAX_SUB)
    return fault(p, "the name after '%s.' is longer than %d bytes", sec->name,
                 OB_CFG_MAX_SUB);
  for (size_t h = 0; h < p->nheaders; h++)
    if (p->headers[h].n == full_n &&
        memcmp(p->headers[h].p, s + 1, full_n) == 0)
      return fault(p, "section [%.*s] appears twice (first at line %d)",
                   (int)full_n, s + 1, p->headers[h].line);
  if (p->nheaders == OB_CFG_MAX_SECTIONS)
    return fault(p, "more than %d sections", OB_CFG_MAX_SECTIONS);
  p->headers[p->nheaders].p = s + 1;
  p->headers[p->nheaders].n = full_n;
  p->headers[p->nheaders].line = p->line;
  p->nheaders++;
  p->sec = sec;
  memcpy(p->sub, sub_n ? s + 1 + name_n + 1 : "", sub_n);
  p->sub[sub_n] = '\0';
  snprintf(p->shown, sizeof p->shown, "[%.*s]", (int)full_n, s + 1);
  memset(p->key_line, 0, sizeof p->key_line);
  return 0;
}

/* A "quoted string" at s[0..n) (s[0] is '"') decoded into p->buf; *used:
** the bytes taken, closing quote included. */
static int quoted(parser_t* p, const char* s, size_t n, const char* key,
                  size_t* len, size_t* used) {
  size_t i = 1, o = 0;
  for (;;) {
    char c;
    if (i >= n)
      return fault(p, "the value of %s in %s: no closing '\"'", key, p->shown);
    c = s[i++];
    if (c == '"') break;
    if (c == '\\') {
      if (i >= n)
        return fault(p, "the value of %s in %s: no closing '\"'", key,
                     p->shown);
      switch (s[i++]) {
        case '"': c = '"'; break;
        case '\\': c = '\\'; break;
        case 'n': c = '\n'; break;
        case 't': c = '\t'; break;
        default:
          return fault(p, "the value of %s in %s: unknown escape '\\%c' "
                       "(\\\" \\\\ \\n \\t only)", key, p->shown,
                       (unsigned char)s[i - 1] < 0x80 ? s[i - 1] : '?');
      }
    }
    p->buf[o++] = c;  /* o < i <= n <= OB_CFG_MAX_LINE */
  }
  p->buf[o] = '\0';
  *len = o;
  *used = i;
  return 0;
}

static int key_line(parser_t* p, const char* s, size_t n) {
  size_t i = 0, kn, vstart, vn, used = 0;
  const ob_cfg_key_t* k = NULL;
  size_t ki = 0;
  char key[80];
  char why[256];
  ob_cfg_value_t v;
  int rc;

  while (i < n && (sub_char(s[i]))) i++;
  kn = i;
  if (kn == 0)
    return fault(p, "expected 'key = value', a [section] or a # comment");
  snprintf(key, sizeof key, "%.*s%s", (int)(kn > 64 ? 64 : kn), s,
           kn > 64 ? "..." : "");
  while (i < n && is_blank(s[i])) i++;
  if (i >= n || s[i] != '=')
    return fault(p, "expected '=' after '%s'", key);
  i++;
  while (i < n && is_blank(s[i])) i++;
  if (p->sec == NULL)
    return fault(p, "key '%s' outside a section (put it under a [section] "
                 "header)", key);
  for (ki = 0; ki < p->sec->nkeys; ki++)
    if (word_is(s, kn, p->sec->keys[ki].name)) {
      k = &p->sec->keys[ki];
      break;
    }
  if (k == NULL && ob__cfg_looks_secret(s, kn))
    return fault(p, "'%s' in %s looks like a secret: the config file may not "
                 "hold secrets%s%s", key, p->shown,
                 p->schema->secret_hint ? "; " : "",
                 p->schema->secret_hint ? p->schema->secret_hint : "");
  if (k == NULL) return fault(p, "unknown key '%s' in %s", key, p->shown);
  if (ki < OB_CFG_MAX_KEYS && p->key_line[ki] != 0)
    return fault(p, "key '%s' in %s set twice (first at line %d)", key,
                 p->shown, p->key_line[ki]);
  if (i >= n || s[i] == '#')
    return fault(p, "no value for %s in %s", key, p->shown);
  memset(&v, 0, sizeof v);
  if (s[i] == '"') {
    size_t len = 0;
    if (k->type != OB_CFG_STRING) {
      expects(k, why, sizeof why);
      return fault(p, "%s in %s expects %s, not a quoted string", key,
                   p->shown, why);
    }
    if ((rc = quoted(p, s + i, n - i, key, &len, &used)) < 0) return rc;
    v.key = k;
    v.s = p->buf;
    v.len = len;
  } else {
    vstart = i;
    while (i < n && s[i] > ' ' && s[i] < 0x7F && s[i] != '"' && s[i] != '#')
      i++;
    vn = i - vstart;
    used = vn;
    i = vstart;
    if (vn == 0)
      return fault(p, "the value of %s in %s: quote a value that holds "
                   "spaces, '#', '\"' or non-ASCII", key, p->shown);
    why[0] = '\0';
    if (ob__cfg_parse_value(k, s + vstart, vn, 0, &v, why, sizeof why) < 0) {
      if (k->type == OB_CFG_STRING) return fault(p, "bad value of %s in %s", key, p->shown);
      return fault(p, "%s in %s %s", key, p->shown, why);
    }
    /* A bare string is copied so that it is NUL-terminated. */
    if (k->type == OB_CFG_STRING) {
      memcpy(p->buf, s + vstart, vn);
      p->buf[vn] = '\0';
      v.s = p->buf;
    }
  }
  /* Anything but blanks and a comment after the value, and "x#y" (a '#'
  ** that starts a comment must follow a blank). */
  if ((i + used < n && !is_blank(s[i + used])) ||
      !rest_is_comment(s + i + used, n - i - used))
    return fault(p, "junk after the value of %s in %s (quote a value that "
                 "holds spaces, '#', '\"' or non-ASCII)", key, p->shown);
  if (ki < OB_CFG_MAX_KEYS) p->key_line[ki] = p->line;
  v.section = p->sec;
  v.sub = p->sub;
  v.line = p->line;
  why[0] = '\0';
  if (p->cb != NULL && p->cb(p->ctx, &v, why, sizeof why) != 0)
    return fault(p, "%s in %s: %s", key, p->shown,
                 why[0] ? why : "refused");
  return 0;
}

int ob__cfg_parse(const char* name, const char* text, size_t n,
                  const ob_cfg_schema_t* schema, ob_cfg_cb cb, void* ctx,
                  char* err, size_t errlen) {
  parser_t p;
  size_t at = 0;
  int rc;
  memset(&p, 0, sizeof p);
  p.name = name;
  p.schema = schema;
  p.cb = cb;
  p.ctx = ctx;
  p.err = err;
  p.errlen = errlen;
  if (err != NULL && errlen > 0) err[0] = '\0';
  for (size_t k = 0; k < schema->nsections; k++)
    if (schema->sections[k].nkeys > OB_CFG_MAX_KEYS)
      return fault(&p, "schema: section [%s] has more than %d keys",
                   schema->sections[k].name, OB_CFG_MAX_KEYS);
  if (n > OB_CFG_MAX_BYTES)
    return fault(&p, "larger than %d bytes", OB_CFG_MAX_BYTES);
  if (n >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) at = 3;
  while (at < n) {
    const char* s = text + at;
    const char* nl = memchr(s, '\n', n - at);
    size_t len = nl ? (size_t)(nl - s) : n - at;
    size_t i = 0;
    at += len + (nl ? 1 : 0);
    p.line++;
    if (len > 0 && s[len - 1] == '\r') len--;
    if (len > OB_CFG_MAX_LINE)
      return fault(&p, "line longer than %d bytes", OB_CFG_MAX_LINE);
    if ((rc = check_bytes(&p, s, len)) < 0) return rc;
    while (i < len && is_blank(s[i])) i++;
    if (i == len || s[i] == '#') continue;
    rc = s[i] == '[' ? header_line(&p, s + i, len - i)
                     : key_line(&p, s + i, len - i);
    if (rc < 0) return rc;
  }
  return 0;
}
