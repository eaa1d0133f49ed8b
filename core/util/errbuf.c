/* SPDX-License-Identifier: Apache-2.0 */
#include "core/util/errbuf.h"

#include <stdio.h>

int ob__errbuf_vset(char* errbuf, size_t errlen, int code, const char* fmt,
                    va_list ap) {
  if (errbuf != NULL && errlen > 0) vsnprintf(errbuf, errlen, fmt, ap);
  return code;
}

int ob__errbuf_set(char* errbuf, size_t errlen, int code, const char* fmt,
                   ...) {
  va_list ap;
  va_start(ap, fmt);
  ob__errbuf_vset(errbuf, errlen, code, fmt, ap);
  va_end(ap);
  return code;
}
