/* SPDX-License-Identifier: Apache-2.0 */
/* Writing JSON text in two passes (count with buf NULL, then write). */
#ifndef OB_CORE_JSON_WRITE_H
#define OB_CORE_JSON_WRITE_H

#include <stddef.h>

/* Append s as is at buf + *n and advance *n; with buf NULL only count. */
void ob__json_put_raw(char* buf, size_t* n, const char* s);
/* Append at most max bytes of s as a quoted JSON string (quotes,
** backslashes and control characters escaped); with buf NULL only count. */
void ob__json_put_str(char* buf, size_t* n, const char* s, size_t max);

#endif
