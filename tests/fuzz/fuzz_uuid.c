/* SPDX-License-Identifier: Apache-2.0 */
/*
** Fuzz target: UUID text parsing and normalisation (core/util/uuid.c).
**
** Input: the text (cut at the first NUL byte, as a C string would be).
**
** Properties, beyond "no crash, no read past the string's NUL":
**   - parse accepts exactly the canonical 8-4-4-4-12 hex form of 36 bytes,
**     and ob_uuid_valid and ob__uuid_normalize agree with it;
**   - round trip: format(parse(s)) equals s lower-cased, and parses back to
**     the same 16 bytes; normalize is idempotent and works in place;
**   - from bytes: parse(format(b)) == b for the first 16 input bytes.
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/uuid.h"
#include "oncebox.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

static void fail(const char* what, const char* s) {
  fprintf(stderr, "fuzz_uuid: property violated: %s: '%.80s'\n", what, s);
  abort();
}

static int shape_ok(const char* s) {
  if (strlen(s) != 36) return 0;
  for (int i = 0; i < 36; i++) {
    char c = s[i];
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (c != '-') return 0;
    } else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
                 (c >= 'A' && c <= 'F'))) {
      return 0;
    }
  }
  return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  uint8_t b[16], b2[16];
  char f[OB_UUID_BUFLEN], n[OB_UUID_BUFLEN], lower[OB_UUID_BUFLEN];
  char* s;
  int rc;

  if (size > 1024) return 0;
  /* Exactly strlen + 1 bytes: parse must stop at the NUL. */
  {
    const uint8_t* z = memchr(data, 0, size);
    size_t len = z ? (size_t)(z - data) : size;
    s = malloc(len + 1);
    if (s == NULL) return 0;
    memcpy(s, data, len);
    s[len] = '\0';
  }

  rc = ob__uuid_parse(s, b);
  if (rc != 0 && rc != -1) fail("return value", s);
  if ((rc == 0) != shape_ok(s)) fail("accepts other than the canonical form", s);
  if (ob_uuid_valid(s) != (rc == 0)) fail("ob_uuid_valid disagrees", s);
  if ((ob__uuid_normalize(s, n) == 0) != (rc == 0))
    fail("normalize disagrees", s);
  if (rc == 0) {
    ob__uuid_format(b, f);
    for (int i = 0; i < OB_UUID_BUFLEN; i++)
      lower[i] = (s[i] >= 'A' && s[i] <= 'F') ? (char)(s[i] - 'A' + 'a') : s[i];
    if (strcmp(f, lower) != 0) fail("format(parse(s)) != lower(s)", s);
    if (strcmp(n, f) != 0) fail("normalize != format(parse)", s);
    if (ob__uuid_parse(f, b2) != 0 || memcmp(b, b2, 16) != 0)
      fail("parse(format(b)) != b", s);
    if (ob__uuid_normalize(n, n) != 0 || strcmp(n, f) != 0)
      fail("normalize not idempotent in place", s);
  }

  if (size >= 16) {
    memcpy(b, data, 16);
    ob__uuid_format(b, f);
    if (strlen(f) != 36 || !shape_ok(f)) fail("format shape", f);
    if (ob__uuid_parse(f, b2) != 0 || memcmp(b, b2, 16) != 0)
      fail("bytes round trip", f);
  }
  free(s);
  return 0;
}
