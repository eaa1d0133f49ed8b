/* SPDX-License-Identifier: Apache-2.0 */
/* Stored bytes shown to a person or a program: never raw. A message body
** is whatever a producer sent; printed as is it could drive the operator's
** terminal (OSC, clear screen) or make --json output invalid. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mbedtls/base64.h>

#include "programs/oncebox/cli.h"

/* Length of the well-formed UTF-8 sequence (RFC 3629: no overlongs, no
** surrogates) of 2..4 bytes at p[0..n), or 0. */
static size_t utf8_seq(const unsigned char* p, size_t n) {
  size_t len = 0;
  unsigned char c = p[0];
  if (c >= 0xc2 && c <= 0xdf) len = 2;
  else if (c >= 0xe0 && c <= 0xef) len = 3;
  else if (c >= 0xf0 && c <= 0xf4) len = 4;
  if (len == 0 || len > n) return 0;
  for (size_t k = 1; k < len; k++)
    if ((p[k] & 0xc0) != 0x80) return 0;
  if (c == 0xe0 && p[1] < 0xa0) return 0;
  if (c == 0xed && p[1] > 0x9f) return 0;
  if (c == 0xf0 && p[1] < 0x90) return 0;
  if (c == 0xf4 && p[1] > 0x8f) return 0;
  return len;
}

int ob__cli_utf8_valid(const char* s, size_t n) {
  const unsigned char* p = (const unsigned char*)s;
  size_t i = 0, len;
  while (i < n) {
    if (p[i] < 0x80) {
      i++;
      continue;
    }
    if ((len = utf8_seq(p + i, n - i)) == 0) return 0;
    i += len;
  }
  return 1;
}

void ob__cli_json_str(FILE* f, const char* s, size_t n) {
  const unsigned char* p = (const unsigned char*)s;
  size_t i = 0, len;
  if (s == NULL) {
    fputs("null", f);
    return;
  }
  fputc('"', f);
  while (i < n) {
    unsigned char c = p[i];
    if (c < 0x80) {
      if (c == '"') fputs("\\\"", f);
      else if (c == '\\') fputs("\\\\", f);
      else if (c == '\n') fputs("\\n", f);
      else if (c == '\r') fputs("\\r", f);
      else if (c == '\t') fputs("\\t", f);
      else if (c < 0x20 || c == 0x7f) fprintf(f, "\\u%04x", c);
      else fputc(c, f);
      i++;
    } else if ((len = utf8_seq(p + i, n - i)) > 0) {
      fwrite(p + i, 1, len, f);
      i += len;
    } else {
      fputs("\\ufffd", f);
      i++;
    }
  }
  fputc('"', f);
}

char* ob__cli_json_quote(const char* s, size_t n) {
  char* out = NULL;
  size_t cap = 0;
  FILE* f = open_memstream(&out, &cap);
  if (f == NULL) return NULL;
  ob__cli_json_str(f, s, n);
  if (fclose(f) != 0) {
    free(out);
    return NULL;
  }
  return out;
}

char* ob__cli_base64(const char* s, size_t n) {
  size_t len = 0;
  unsigned char* out;
  mbedtls_base64_encode(NULL, 0, &len, (const unsigned char*)s, n);
  out = malloc(len + 1);
  if (out == NULL) return NULL;
  if (mbedtls_base64_encode(out, len + 1, &len, (const unsigned char*)s, n) !=
      0) {
    free(out);
    return NULL;
  }
  out[len] = '\0';
  return (char*)out;
}

void ob__cli_print_safe(FILE* f, const char* s, size_t n) {
  const unsigned char* p = (const unsigned char*)s;
  size_t i = 0, len;
  while (i < n) {
    unsigned char c = p[i];
    if (c >= 0x20 && c < 0x7f) {
      fputc(c, f);
      i++;
    } else if (c == '\n') {
      fputs("\\n", f);
      i++;
    } else if (c == '\t') {
      fputs("\\t", f);
      i++;
    } else if (c >= 0x80 && (len = utf8_seq(p + i, n - i)) > 0 &&
               !(c == 0xc2 && p[i + 1] < 0xa0)) { /* C1 controls: escaped */
      fwrite(p + i, 1, len, f);
      i += len;
    } else {
      fprintf(f, "\\x%02x", c);
      i++;
    }
  }
}
