/* SPDX-License-Identifier: Apache-2.0 */
#include "core/util/msg_reject.h"

#include <stdarg.h>
#include <stdio.h>

int ob__msg_reject(char* reason, size_t reason_len, const char* fmt, ...) {
  va_list ap;
  if (reason != NULL && reason_len > 0) {
    va_start(ap, fmt);
    vsnprintf(reason, reason_len, fmt, ap);
    va_end(ap);
  }
  return -1;
}
