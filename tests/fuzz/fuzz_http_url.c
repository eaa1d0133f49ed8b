/* SPDX-License-Identifier: Apache-2.0 */
/*
** Fuzz target: the endpoint URL parser (platform/http/url.c).
**
** Input: the URL text (cut at the first NUL byte, as a C string would be).
**
** Properties, beyond "no crash, no sanitizer report":
**   - the result is 0 or OB__HTTP_E_URL;
**   - on success: a non-empty lower-case host of at most 255 bytes made of
**     DNS/IPv4 characters (or IPv6 literal characters), port 1..65535, and a
**     target that lies inside the input, starts with '/' or '?' (or is
**     empty) and stops before any '#';
**   - round trip: scheme://host:port + target, rebuilt from the result
**     (brackets around an IPv6 literal), parses to the same result.
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform/http/http_int.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

static void fail(const char* what, const char* url) {
  fprintf(stderr, "fuzz_http_url: property violated: %s: '%s'\n", what, url);
  abort();
}

static void check(const char* url, const ob__http_url_t* u) {
  size_t n = strlen(url);
  size_t hl = strlen(u->host);
  if (hl == 0 || hl > OB__HTTP_HOST_MAX) fail("host length", url);
  for (size_t i = 0; i < hl; i++) {
    char c = u->host[i];
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
          c == '.' || c == '_' || c == ':'))
      fail("host character", url);
  }
  if (u->port == 0) fail("port 0", url);
  if (u->target == NULL || u->target < url || u->target > url + n ||
      u->target_len > (size_t)(url + n - u->target))
    fail("target outside the input", url);
  if (u->target[0] != '\0' && u->target[0] != '/' && u->target[0] != '?' &&
      u->target[0] != '#')
    fail("target start", url);
  if (memchr(u->target, '#', u->target_len) != NULL)
    fail("fragment in the target", url);
  if (u->target[u->target_len] != '\0' && u->target[u->target_len] != '#')
    fail("target cut early", url);
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ob__http_url_t u, v;
  char* url;
  char* again;
  size_t need;
  int rc;

  if (size > 4096) return 0;
  url = malloc(size + 1);
  if (url == NULL) return 0;
  memcpy(url, data, size);
  url[size] = '\0';

  rc = ob__http_url_parse(url, &u);
  if (rc != 0) {
    if (rc != OB__HTTP_E_URL) fail("unexpected code", url);
    free(url);
    return 0;
  }
  check(url, &u);

  need = strlen(url) + 32;
  again = malloc(need);
  if (again == NULL) {
    free(url);
    return 0;
  }
  snprintf(again, need, "%s://%s%s%s:%u%.*s", u.tls ? "https" : "http",
           strchr(u.host, ':') ? "[" : "", u.host,
           strchr(u.host, ':') ? "]" : "", (unsigned)u.port,
           (int)u.target_len, u.target);
  if (ob__http_url_parse(again, &v) != 0) fail("rebuilt URL refused", again);
  check(again, &v);
  if (v.tls != u.tls || strcmp(v.host, u.host) != 0 || v.port != u.port ||
      v.target_len != u.target_len ||
      memcmp(v.target, u.target, u.target_len) != 0)
    fail("round trip changed the URL", url);
  free(again);
  free(url);
  return 0;
}
