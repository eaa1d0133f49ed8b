/* SPDX-License-Identifier: Apache-2.0 */
/* A two-pass JSON writer: count with buf NULL, then write into a buffer of
** that size. No allocation, no double formatting. */
#include "core/util/json_write.h"

#include <string.h>

/* Append s (raw) to buf at *n; with buf NULL only count. */
void ob__json_put_raw(char* buf, size_t* n, const char* s) {
  size_t len = strlen(s);
  if (buf != NULL) memcpy(buf + *n, s, len);
  *n += len;
}

/* Append at most max bytes of s as a quoted, escaped JSON string. */
void ob__json_put_str(char* buf, size_t* n, const char* s, size_t max) {
  static const char hex[] = "0123456789abcdef";
  size_t i;
  char e[7];
  ob__json_put_raw(buf, n, "\"");
  for (i = 0; i < max && s[i] != '\0'; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '"' || c == '\\') {
      e[0] = '\\', e[1] = (char)c, e[2] = '\0';
    } else if (c < 0x20) {
      memcpy(e, "\\u00", 4);
      e[4] = hex[c >> 4], e[5] = hex[c & 15], e[6] = '\0';
    } else {
      e[0] = (char)c, e[1] = '\0';
    }
    ob__json_put_raw(buf, n, e);
  }
  ob__json_put_raw(buf, n, "\"");
}
