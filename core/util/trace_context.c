/* SPDX-License-Identifier: Apache-2.0 */
/* W3C Trace Context values. Section numbers are those of the Level 1
** Recommendation (https://www.w3.org/TR/trace-context/). */
#include "core/util/trace_context.h"

#include <string.h>

/* HEXDIGLC: traceparent is lower case only ("00F0..." is invalid). */
static int hexlc(const char* s, size_t n, int* all_zero) {
  int zero = 1;
  for (size_t i = 0; i < n; i++) {
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
      return 0;
    if (s[i] != '0') zero = 0;
  }
  if (all_zero) *all_zero = zero;
  return 1;
}

int ob__traceparent_parse(const char* s, size_t n,
                          char out[OB__TRACEPARENT_LEN + 1]) {
  int zero;
  out[0] = '\0';
  /* version "-" trace-id "-" parent-id "-" trace-flags: offsets 0, 3, 36,
  ** 53. */
  if (n < OB__TRACEPARENT_LEN || !hexlc(s, 2, NULL) || s[2] != '-' ||
      s[35] != '-' || s[52] != '-')
    return 0;
  if (s[0] == 'f' && s[1] == 'f') return 0; /* version ff is forbidden */
  /* 00 has nothing after the flags; a later version may add fields, each
  ** after a '-'. */
  if (n > OB__TRACEPARENT_LEN &&
      ((s[0] == '0' && s[1] == '0') || s[OB__TRACEPARENT_LEN] != '-'))
    return 0;
  if (!hexlc(s + 3, 32, &zero) || zero) return 0;
  if (!hexlc(s + 36, 16, &zero) || zero) return 0;
  if (!hexlc(s + 53, 2, NULL)) return 0;
  /* Re-expressed in the highest version we know: 00, without the later
  ** version's extra fields (which we must not interpret). */
  memcpy(out, s, OB__TRACEPARENT_LEN);
  out[0] = '0';
  out[1] = '0';
  out[OB__TRACEPARENT_LEN] = '\0';
  return 1;
}

static int lcalpha(char c) { return c >= 'a' && c <= 'z'; }
static int keychar(char c) {
  return lcalpha(c) || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
         c == '*' || c == '/';
}

/* key = simple-key / multi-tenant-key (section 3.3.1.3.1). */
static int key_ok(const char* k, size_t n) {
  const char* at = memchr(k, '@', n);
  size_t i;
  if (at == NULL) {
    if (n < 1 || n > 256 || !lcalpha(k[0])) return 0;
    for (i = 1; i < n; i++)
      if (!keychar(k[i])) return 0;
    return 1;
  }
  {
    size_t t = (size_t)(at - k), sys = n - t - 1;
    /* tenant-id = ( lcalpha / DIGIT ) 0*240( keychar ); system-id = lcalpha
    ** 0*13( keychar ) */
    if (t < 1 || t > 241 || sys < 1 || sys > 14 ||
        !(lcalpha(k[0]) || (k[0] >= '0' && k[0] <= '9')) || !lcalpha(at[1]))
      return 0;
    for (i = 0; i < n; i++)
      if (i != t && !keychar(k[i])) return 0;
    return 1;
  }
}

/* value = 0*255(chr) nblk-chr; chr = %x20 / nblk-chr; nblk-chr excludes ','
** and '='. The caller has trimmed the trailing spaces (they are OWS). */
static int value_ok(const char* v, size_t n) {
  if (n < 1 || n > 256 || v[n - 1] == ' ') return 0;
  for (size_t i = 0; i < n; i++)
    if (v[i] == ',' || v[i] == '=') return 0;
  return 1;
}

int ob__tracestate_valid(const char* s, size_t n) {
  const char* key[32];
  size_t klen[32];
  int members = 0;
  size_t i = 0;

  if (n == 0 || n > OB__TRACESTATE_MAX) return 0;
  for (i = 0; i < n; i++)
    if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e) return 0;
  for (i = 0; i <= n;) {
    const char* comma = memchr(s + i, ',', n - i);
    size_t b = i, e = comma ? (size_t)(comma - s) : n;
    const char* eq;
    i = e + 1;
    /* OWS around a list-member; an empty (or blank) member is allowed. */
    while (b < e && s[b] == ' ') b++;
    while (e > b && s[e - 1] == ' ') e--;
    if (b == e) continue;
    eq = memchr(s + b, '=', e - b);
    if (eq == NULL || members == 32) return 0;
    key[members] = s + b;
    klen[members] = (size_t)(eq - (s + b));
    if (!key_ok(key[members], klen[members]) ||
        !value_ok(eq + 1, (size_t)(s + e - eq - 1)))
      return 0;
    /* Only one entry per key: it is that vendor's last position. */
    for (int j = 0; j < members; j++)
      if (klen[j] == klen[members] &&
          memcmp(key[j], key[members], klen[j]) == 0)
        return 0;
    members++;
  }
  return members > 0;
}

void ob__traceparent_child(const char parent[OB__TRACEPARENT_LEN + 1],
                           const unsigned char span[8],
                           char out[OB__TRACEPARENT_LEN + 1]) {
  static const char hex[] = "0123456789abcdef";
  unsigned char id[8];
  int zero = 1;
  memcpy(id, span, sizeof id);
  for (int i = 0; i < 8; i++)
    if (id[i] != 0) zero = 0;
  if (zero) id[7] = 1;
  if (out != parent) memcpy(out, parent, OB__TRACEPARENT_LEN);
  for (int i = 0; i < 8; i++) {
    out[36 + 2 * i] = hex[id[i] >> 4];
    out[36 + 2 * i + 1] = hex[id[i] & 15];
  }
  out[OB__TRACEPARENT_LEN] = '\0';
}
