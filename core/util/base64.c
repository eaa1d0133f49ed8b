/* SPDX-License-Identifier: Apache-2.0 */
/* Strict base64: the checks here, the decoding mbedTLS's (the decoder the
** SQS codec and the CLI already use), which on its own also takes line
** breaks, spaces and missing padding. */
#include "core/util/base64.h"

#include <mbedtls/base64.h>

#include "core/util/errbuf.h"

static int b64char(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
         (c >= '0' && c <= '9') || c == '+' || c == '/';
}

int ob__base64_decode(const char* s, size_t n, unsigned char* out,
                      size_t* out_len, char* reason, size_t reason_len) {
  size_t pad = 0;
  *out_len = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (b64char(c) || c == '=') continue;
    if (c == '-' || c == '_')
      return ob__errbuf_set(reason, reason_len, -1,
                            "'%c' at byte %zu is of the URL-safe alphabet "
                            "(base64 here is the standard one, with '+' and "
                            "'/')",
                            c, i);
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r')
      return ob__errbuf_set(reason, reason_len, -1,
                            "whitespace (0x%02x) at byte %zu is not allowed "
                            "in base64",
                            c, i);
    if (c > 0x20 && c < 0x7f)
      return ob__errbuf_set(reason, reason_len, -1,
                            "'%c' at byte %zu is not a base64 character", c,
                            i);
    return ob__errbuf_set(reason, reason_len, -1,
                          "the byte 0x%02x at byte %zu is not a base64 "
                          "character",
                          c, i);
  }
  if (n % 4 != 0)
    return ob__errbuf_set(reason, reason_len, -1,
                          "its length, %zu, is not a multiple of 4 (base64 "
                          "must be padded with '=')",
                          n);
  if (n > 0 && s[n - 1] == '=') pad = s[n - 2] == '=' ? 2 : 1;
  for (size_t i = 0; i + pad < n; i++)
    if (s[i] == '=')
      return ob__errbuf_set(reason, reason_len, -1,
                            "'=' at byte %zu is padding before the end", i);
  if (n == 0) return 0;
  /* Checked above, so mbedTLS cannot refuse it and out is large enough. */
  if (mbedtls_base64_decode(out, OB__BASE64_DECODED_MAX(n), out_len,
                            (const unsigned char*)s, n) != 0)
    return ob__errbuf_set(reason, reason_len, -1, "invalid base64");
  return 0;
}
