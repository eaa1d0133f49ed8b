/* SPDX-License-Identifier: Apache-2.0 */
/* Absolute http(s) URL parsing: just enough for API endpoints. */
#include <arpa/inet.h>
#include <string.h>

#include "platform/http/http_int.h"

static int lower(int ch) {
  return (ch >= 'A' && ch <= 'Z') ? ch + ('a' - 'A') : ch;
}

static int starts_with_ci(const char* s, const char* prefix) {
  for (; *prefix; s++, prefix++)
    if (lower((unsigned char)*s) != *prefix) return 0;
  return 1;
}

/* RFC 3986 reg-name subset used by DNS names, plus IPv4 dotted quads. */
static int host_char(int ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' ||
         ch == '.' || ch == '_';
}

/* A host whose last label is a number must be a dotted-quad IPv4 address
** (the WHATWG URL rule), without a trailing dot. Otherwise "127.1" or
** "127.0.0.010" would be checked against the certificate as a DNS name
** while getaddrinfo's inet_aton reading connects to 127.0.0.1 or
** 127.0.0.8. */
static int numeric_host_ok(const char* host, size_t len) {
  char buf[OB__HTTP_HOST_MAX + 1];
  unsigned char a[4];
  size_t end = len;
  size_t start;
  int numeric = 1;

  if (end > 0 && host[end - 1] == '.') end--;
  start = end;
  while (start > 0 && host[start - 1] != '.') start--;
  if (start == end) return 1;
  if (end - start > 1 && host[start] == '0' &&
      (host[start + 1] == 'x' || host[start + 1] == 'X'))
    numeric = 1; /* 0x7f: hexadecimal to inet_aton */
  else
    for (size_t i = start; i < end; i++)
      if (host[i] < '0' || host[i] > '9') numeric = 0;
  if (!numeric) return 1;
  memcpy(buf, host, len);
  buf[len] = '\0';
  return inet_pton(AF_INET, buf, a) == 1;
}

int ob__http_url_parse(const char* url, ob__http_url_t* out) {
  const char* p;
  const char* host;
  size_t host_len;
  const char* end;
  unsigned long port = 0;

  if (url == NULL || out == NULL) return OB__HTTP_E_URL;
  memset(out, 0, sizeof *out);
  /* Whitespace, controls and raw non-ASCII anywhere make the request line
  ** ambiguous; callers percent-encode. */
  for (p = url; *p; p++) {
    unsigned char ch = (unsigned char)*p;
    if (ch <= 0x20 || ch >= 0x7f) return OB__HTTP_E_URL;
  }
  if (starts_with_ci(url, "https://")) {
    out->tls = 1;
    p = url + 8;
  } else if (starts_with_ci(url, "http://")) {
    out->tls = 0;
    p = url + 7;
  } else {
    return OB__HTTP_E_URL;
  }
  end = p + strcspn(p, "/?#");
  if (memchr(p, '@', (size_t)(end - p)) != NULL) return OB__HTTP_E_URL;
  if (*p == '[') {
    const char* rb = memchr(p, ']', (size_t)(end - p));
    if (rb == NULL) return OB__HTTP_E_URL;
    host = p + 1;
    host_len = (size_t)(rb - host);
    for (size_t i = 0; i < host_len; i++) {
      int ch = lower((unsigned char)host[i]);
      if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') ||
            ch == ':' || ch == '.'))
        return OB__HTTP_E_URL;
    }
    /* RFC 3986: brackets hold an IPv6 address, nothing else ("[127.0.0.1]"
    ** or "[1.2.3.4.5]" would come out unbracketed as another host). */
    {
      char buf[OB__HTTP_HOST_MAX + 1];
      unsigned char a6[16];
      if (host_len == 0 || host_len > OB__HTTP_HOST_MAX) return OB__HTTP_E_URL;
      memcpy(buf, host, host_len);
      buf[host_len] = '\0';
      if (inet_pton(AF_INET6, buf, a6) != 1) return OB__HTTP_E_URL;
    }
    p = rb + 1;
  } else {
    host = p;
    while (p < end && *p != ':') p++;
    host_len = (size_t)(p - host);
    for (size_t i = 0; i < host_len; i++)
      if (!host_char(lower((unsigned char)host[i]))) return OB__HTTP_E_URL;
    if (host_len <= OB__HTTP_HOST_MAX && !numeric_host_ok(host, host_len))
      return OB__HTTP_E_URL;
  }
  if (host_len == 0 || host_len > OB__HTTP_HOST_MAX) return OB__HTTP_E_URL;
  if (p < end) {
    if (*p != ':' || p + 1 == end) return OB__HTTP_E_URL;
    for (p++; p < end; p++) {
      if (*p < '0' || *p > '9') return OB__HTTP_E_URL;
      port = port * 10 + (unsigned long)(*p - '0');
      if (port > 65535) return OB__HTTP_E_URL;
    }
    if (port == 0) return OB__HTTP_E_URL;
  } else {
    port = out->tls ? 443 : 80;
  }
  for (size_t i = 0; i < host_len; i++)
    out->host[i] = (char)lower((unsigned char)host[i]);
  out->host[host_len] = '\0';
  out->port = (uint16_t)port;
  out->target = end;
  out->target_len = strcspn(end, "#");
  return 0;
}
