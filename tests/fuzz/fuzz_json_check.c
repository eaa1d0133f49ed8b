/* SPDX-License-Identifier: Apache-2.0 */
/*
** Fuzz target: the strict JSON validator (core/util/json_check.c).
**
** Input: the text.
**
** Properties, beyond "no crash, no read past len, no sanitizer report":
**   - ob__json_valid is 0 or 1, and deterministic;
**   - ob__json_is_object(x) == valid(x) && x's first non-space byte is '{';
**   - ob__json_scan: a valid text is spanned whole; whatever prefix scan
**     spans is itself valid;
**   - anything ob__json_valid accepts, cJSON parses (whole, nothing left
**     over), and cJSON's unformatted re-print of it is accepted again
**     (cJSON prints what it reads as valid JSON; our checker agrees).
** The converse is not checked: cJSON is lenient (leading zeros, raw control
** bytes, invalid UTF-8), which is why the validator exists.
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/util/json_check.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

static void fail(const char* what, const char* text, size_t len) {
  fprintf(stderr, "fuzz_json_check: property violated: %s: '%.*s'\n", what,
          (int)(len > 200 ? 200 : len), text);
  abort();
}

static int ws(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  char* s;
  int valid, obj;
  size_t k;

  if (size > 256 * 1024) return 0;
  /* Exact size, no NUL after: the validator must stop at len. */
  s = malloc(size ? size : 1);
  if (s == NULL) return 0;
  memcpy(s, data, size);

  valid = ob__json_valid(s, size);
  obj = ob__json_is_object(s, size);
  k = ob__json_scan(s, size);
  if (valid != 0 && valid != 1) fail("valid not 0/1", s, size);
  if (ob__json_valid(s, size) != valid) fail("not deterministic", s, size);
  {
    size_t i = 0;
    while (i < size && ws(s[i])) i++;
    if (obj != (valid && i < size && s[i] == '{'))
      fail("is_object disagrees with valid", s, size);
  }
  if (k > size) fail("scan beyond len", s, size);
  if (valid && k != size) fail("scan does not span a valid text", s, size);
  if (k > 0 && !ob__json_valid(s, k)) fail("scanned prefix not valid", s, k);

  if (valid) {
    /* cJSON wants a terminated buffer to be safe; give it one. */
    char* z = malloc(size + 1);
    const char* end = NULL;
    cJSON* root;
    if (z == NULL) goto out;
    memcpy(z, s, size);
    z[size] = '\0';
    root = cJSON_ParseWithLengthOpts(z, size, &end, 0);
    if (root == NULL) fail("cJSON refused a valid text", s, size);
    while (end < z + size && ws(*end)) end++;
    if (end != z + size) fail("cJSON stopped early", s, size);
    {
      char* printed = cJSON_PrintUnformatted(root);
      if (printed != NULL) {
        if (!ob__json_valid(printed, strlen(printed)))
          fail("cJSON's re-print not valid", printed, strlen(printed));
        free(printed);
      }
    }
    cJSON_Delete(root);
    free(z);
  }
out:
  free(s);
  return 0;
}
