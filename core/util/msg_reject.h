/* SPDX-License-Identifier: Apache-2.0 */
/* Rejection reasons of the message parsers. Pure. */
#ifndef OB_CORE_UTIL_MSG_REJECT_H
#define OB_CORE_UTIL_MSG_REJECT_H

#include <stddef.h>

/* Write a rejection reason (printf-style, truncated, NUL-terminated; reason
** may be NULL or reason_len 0, then nothing is written) and return -1.
** Shared by the message parsers of the built-in modules. */
int ob__msg_reject(char* reason, size_t reason_len, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
