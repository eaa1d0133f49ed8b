/* SPDX-License-Identifier: Apache-2.0 */
/* The one writer of a formatted message into a caller's (buf, len) pair. */
#ifndef OB_CORE_ERRBUF_H
#define OB_CORE_ERRBUF_H

#include <stdarg.h>
#include <stddef.h>

/* Format into errbuf (truncated to errlen, always NUL-terminated) and return
** code, so a failure path reads `return ob__errbuf_set(buf, len, OB_EX,
** "...", ...);`. A NULL errbuf or a zero errlen writes nothing. */
int ob__errbuf_set(char* errbuf, size_t errlen, int code, const char* fmt,
                   ...) __attribute__((format(printf, 4, 5)));

/* The same with a va_list, for wrappers that take their own `...`. */
int ob__errbuf_vset(char* errbuf, size_t errlen, int code, const char* fmt,
                    va_list ap) __attribute__((format(printf, 4, 0)));

#endif
