/* SPDX-License-Identifier: Apache-2.0 */
/* RFC 3986 URI-reference syntax. The ABNF in comments is RFC 3986's
** (Appendix A); every error names the byte offset of the problem. */
#include "core/util/uri_ref.h"

#include <string.h>

#include "core/util/errbuf.h"

static int is_alpha(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
static int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }
static int is_hex(unsigned char c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
/* unreserved = ALPHA / DIGIT / "-" / "." / "_" / "~" */
static int is_unreserved(unsigned char c) {
  return is_alpha(c) || is_digit(c) || c == '-' || c == '.' || c == '_' ||
         c == '~';
}
/* sub-delims = "!" / "$" / "&" / "'" / "(" / ")" / "*" / "+" / "," / ";" /
** "=" */
static int is_subdelim(unsigned char c) {
  return c != '\0' && strchr("!$&'()*+,;=", c) != NULL;
}
static int is_scheme_char(unsigned char c) {
  return is_alpha(c) || is_digit(c) || c == '+' || c == '-' || c == '.';
}

/* The sentence for a byte that may not stand at s[i] in `where`. Bytes that
** are never allowed get the same sentence wherever they are; hint, when not
** NULL, replaces the percent-encoding advice (where encoding cannot help). */
static int bad_byte(const char* s, size_t i, const char* where,
                    const char* hint, char* reason, size_t rl) {
  unsigned char c = (unsigned char)s[i];
  if (c == '\0')
    return ob__errbuf_set(reason, rl, -1,
                          "a NUL byte at byte %zu is not allowed in a "
                          "URI-reference",
                          i);
  if (c == ' ')
    return ob__errbuf_set(reason, rl, -1,
                          "a space at byte %zu is not allowed in a "
                          "URI-reference (percent-encode it as %%20)",
                          i);
  if (c < 0x20 || c == 0x7f)
    return ob__errbuf_set(reason, rl, -1,
                          "a control character (0x%02x) at byte %zu is not "
                          "allowed in a URI-reference",
                          c, i);
  if (c >= 0x80)
    return ob__errbuf_set(reason, rl, -1,
                          "a non-ASCII byte (0x%02x) at byte %zu is not "
                          "allowed in a URI-reference (percent-encode each "
                          "UTF-8 byte, here as %%%02X)",
                          c, i, c);
  if (hint != NULL)
    return ob__errbuf_set(reason, rl, -1,
                          "'%c' at byte %zu is not allowed in the %s of a "
                          "URI-reference (%s)",
                          c, i, where, hint);
  return ob__errbuf_set(reason, rl, -1,
                        "'%c' at byte %zu is not allowed in the %s of a "
                        "URI-reference (percent-encode it as %%%02X)",
                        c, i, where, c);
}

/* The characters of one component, s[i..end): unreserved, sub-delims, the
** bytes in extra, and pct-encoded = "%" HEXDIG HEXDIG. With noscheme, ':'
** gets path-noscheme's sentence (the caller passes ':' in extra then). */
static int scan_part(const char* s, size_t i, size_t end, const char* extra,
                     int noscheme, const char* where, char* reason,
                     size_t rl) {
  for (; i < end; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '%') {
      if (end - i < 3 || !is_hex((unsigned char)s[i + 1]) ||
          !is_hex((unsigned char)s[i + 2]))
        return ob__errbuf_set(reason, rl, -1,
                              "'%%' at byte %zu is not followed by two hex "
                              "digits",
                              i);
      i += 2;
      continue;
    }
    if (noscheme && c == ':') {
      /* A ':' here would make the segment read as a scheme, and the text
      ** before it is not one (a URI's scheme was looked for first). */
      if (i == 0)
        return ob__errbuf_set(reason, rl, -1,
                              "':' at byte 0 cannot begin a URI-reference "
                              "(the scheme before it would be empty)");
      return ob__errbuf_set(reason, rl, -1,
                            "':' at byte %zu is not allowed in the first "
                            "segment of a relative reference (the text before "
                            "it is not a scheme: a letter, then letters, "
                            "digits, '+', '-' or '.')",
                            i);
    }
    if (is_unreserved(c) || is_subdelim(c) ||
        (c != '\0' && strchr(extra, c) != NULL))
      continue;
    return bad_byte(s, i, where, NULL, reason, rl);
  }
  return 0;
}

/* dec-octet "." dec-octet "." dec-octet "." dec-octet, all of s[0..n):
** dec-octet is 0-255 without leading zeros. */
static int ipv4_ok(const char* s, size_t n) {
  size_t i = 0;
  for (int part = 0; part < 4; part++) {
    size_t k = i;
    unsigned v = 0;
    if (part > 0) {
      if (i >= n || s[i] != '.') return 0;
      k = ++i;
    }
    while (k < n && k - i < 4 && is_digit((unsigned char)s[k]))
      v = v * 10 + (unsigned)(s[k++] - '0');
    if (k == i || k - i > 3 || v > 255 || (k - i > 1 && s[i] == '0'))
      return 0;
    i = k;
  }
  return i == n;
}

/* IPv6address (section 3.2.2), all of s[0..n): eight h16 groups (1-4 hex
** digits) separated by ':', the last two of which may be an IPv4address;
** or fewer, at most seven, around one "::" that stands for the rest. */
static int ipv6_ok(const char* s, size_t n) {
  size_t i = 0;
  int groups = 0, elided = 0;
  if (n >= 2 && s[0] == ':' && s[1] == ':') {
    elided = 1;
    i = 2;
  }
  while (i < n) {
    size_t k = i;
    while (k < n && k - i < 5 && is_hex((unsigned char)s[k])) k++;
    if (k < n && s[k] == '.') { /* ls32 as an IPv4address: the end */
      if (!ipv4_ok(s + i, n - i)) return 0;
      groups += 2;
      break;
    }
    if (k == i || k - i > 4) return 0;
    if (++groups > 8) return 0;
    i = k;
    if (i == n) break;
    if (s[i++] != ':' || i == n) return 0; /* a lone trailing ':' */
    if (s[i] == ':') {
      if (elided) return 0; /* "::" at most once */
      elided = 1;
      i++;
    }
  }
  return elided ? groups <= 7 : groups == 8;
}

/* IPvFuture = "v" 1*HEXDIG "." 1*( unreserved / sub-delims / ":" ) */
static int ipvfuture_ok(const char* s, size_t n) {
  size_t i = 1;
  while (i < n && is_hex((unsigned char)s[i])) i++;
  if (i == 1 || i >= n || s[i] != '.' || i + 1 == n) return 0;
  for (i++; i < n; i++)
    if (!is_unreserved((unsigned char)s[i]) &&
        !is_subdelim((unsigned char)s[i]) && s[i] != ':')
      return 0;
  return 1;
}

/* IP-literal = "[" ( IPv6address / IPvFuture ) "]", the brackets at s[b - 1]
** and s[e]. */
static int check_ip_literal(const char* s, size_t b, size_t e, char* reason,
                            size_t rl) {
  for (size_t i = b; i < e; i++)
    if (!is_unreserved((unsigned char)s[i]) &&
        !is_subdelim((unsigned char)s[i]) && s[i] != ':')
      return bad_byte(s, i, "IP literal",
                      "it holds an IPv6 address or an IPvFuture", reason, rl);
  if (e > b && (s[b] == 'v' || s[b] == 'V')) {
    if (!ipvfuture_ok(s + b, e - b))
      return ob__errbuf_set(reason, rl, -1,
                            "the IP literal at byte %zu is not a valid "
                            "IPvFuture ('v', hex digits, '.', then at least "
                            "one character)",
                            b - 1);
  } else if (!ipv6_ok(s + b, e - b)) {
    return ob__errbuf_set(reason, rl, -1,
                          "the IP literal at byte %zu is not a valid IPv6 "
                          "address",
                          b - 1);
  }
  return 0;
}

/* authority = [ userinfo "@" ] host [ ":" port ], all of s[a..e). */
static int check_authority(const char* s, size_t a, size_t e, char* reason,
                           size_t rl) {
  const char* at = memchr(s + a, '@', e - a);
  size_t h = a, p;
  /* userinfo = *( unreserved / pct-encoded / sub-delims / ":" ); it cannot
  ** hold '@', so the first one ends it. */
  if (at != NULL) {
    h = (size_t)(at - s);
    if (scan_part(s, a, h, ":", 0, "userinfo", reason, rl) != 0) return -1;
    h++;
  }
  if (h < e && s[h] == '[') {
    const char* close = memchr(s + h + 1, ']', e - h - 1);
    if (close == NULL)
      return ob__errbuf_set(reason, rl, -1,
                            "'[' at byte %zu opens an IP literal that has no "
                            "closing ']'",
                            h);
    p = (size_t)(close - s);
    if (check_ip_literal(s, h + 1, p, reason, rl) != 0) return -1;
    p++;
    if (p < e && s[p] != ':') {
      if ((unsigned char)s[p] > 0x20 && (unsigned char)s[p] < 0x7f)
        return ob__errbuf_set(reason, rl, -1,
                              "'%c' at byte %zu is not allowed after an IP "
                              "literal (only ':' and a port may follow it)",
                              s[p], p);
      return bad_byte(s, p, "host", NULL, reason, rl);
    }
  } else {
    /* reg-name = *( unreserved / pct-encoded / sub-delims ): no ':', so the
    ** first one starts the port. An IPv4address is also a reg-name. */
    p = h;
    while (p < e && s[p] != ':') p++;
    if (scan_part(s, h, p, "", 0, "host", reason, rl) != 0) return -1;
  }
  /* port = *DIGIT */
  if (p < e)
    for (size_t i = p + 1; i < e; i++)
      if (!is_digit((unsigned char)s[i]))
        return bad_byte(s, i, "port", "a port is digits only", reason, rl);
  return 0;
}

int ob__uri_reference_check(const char* s, size_t n, char* reason,
                            size_t reason_len) {
  size_t i = 0, e, k;
  int is_uri = 0;

  if (reason != NULL && reason_len > 0) reason[0] = '\0';
  if (n == 0) return 0; /* (and s may be NULL) */
  /* scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ), then ':'; anything
  ** else is a relative-ref. */
  if (n > 0 && is_alpha((unsigned char)s[0])) {
    for (k = 1; k < n && is_scheme_char((unsigned char)s[k]); k++) {
    }
    if (k < n && s[k] == ':') {
      is_uri = 1;
      i = k + 1;
    }
  }
  /* hier-part / relative-part ends at the query or the fragment. */
  for (e = i; e < n && s[e] != '?' && s[e] != '#'; e++) {
  }
  if (e - i >= 2 && s[i] == '/' && s[i + 1] == '/') {
    /* "//" authority path-abempty: the authority ends at the next '/'. */
    const char* slash = memchr(s + i + 2, '/', e - i - 2);
    size_t ae = slash ? (size_t)(slash - s) : e;
    if (check_authority(s, i + 2, ae, reason, reason_len) != 0) return -1;
    if (scan_part(s, ae, e, ":@/", 0, "path", reason, reason_len) != 0)
      return -1;
  } else {
    /* path-absolute / path-rootless / path-noscheme / path-empty; "//" was
    ** taken above, so a leading '/' is never followed by another. */
    size_t seg = i;
    if (!is_uri) {
      const char* slash = memchr(s + i, '/', e - i);
      seg = slash ? (size_t)(slash - s) : e;
      if (scan_part(s, i, seg, ":@", 1, "path", reason, reason_len) != 0)
        return -1;
    }
    if (scan_part(s, seg, e, ":@/", 0, "path", reason, reason_len) != 0)
      return -1;
  }
  /* query = *( pchar / "/" / "?" ), fragment the same, after the first
  ** '#'. */
  if (e < n && s[e] == '?') {
    for (k = e + 1; k < n && s[k] != '#'; k++) {
    }
    if (scan_part(s, e + 1, k, ":@/?", 0, "query", reason, reason_len) != 0)
      return -1;
    e = k;
  }
  if (e < n &&
      scan_part(s, e + 1, n, ":@/?", 0, "fragment", reason, reason_len) != 0)
    return -1;
  return 0;
}
