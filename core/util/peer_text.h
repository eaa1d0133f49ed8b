/* SPDX-License-Identifier: Apache-2.0 */
/*
** Text a peer sent (a provider's error body, an SQS error message, a reason
** phrase) on its way to a log line, a terminal or the database: the one
** place that cleans it (docs/security.md, "What is redacted").
**
** Some gateways and debugging proxies echo the request's headers in an
** error body, so such text may carry the credentials the process sent.
** The process registers the values of the credentials it holds; cleaning
** replaces them, and the values of fields that carry credentials by name
** (Authorization, X-Amz-Security-Token, a "Bearer" token, a SigV4
** Signature=), with "[redacted]".
*/
#ifndef OB_CORE_UTIL_PEER_TEXT_H
#define OB_CORE_UTIL_PEER_TEXT_H

#include <stddef.h>

/* Hold `value` (copied) as a credential of this process until as many
** ob__secret_forget calls; a "Bearer x"/"Basic x" value holds x too.
** Values under 6 bytes are not held (they would redact ordinary words).
** Thread-safe. Returns 0, or -1 when out of memory or the table (64) is
** full: then callers keep working, with the name-based rules only. */
int ob__secret_hold(const char* value);
void ob__secret_forget(const char* value);

/* Clean in[0..n) into out (always NUL-terminated, truncated to outlen - 1)
** for a log, a terminal or a reason: credentials redacted, and every
** control character, C1 control, DEL and invalid UTF-8 byte written as
** \xNN, so that no escape sequence or forged line reaches a terminal or a
** log. Returns out. */
char* ob__peer_text(const char* in, size_t n, char* out, size_t outlen);

/* The same redaction without the escaping, for a body that is stored as
** JSON (the replacement is ASCII and keeps a JSON string a string). Returns
** a malloc'd copy of n' bytes in *out_len, or NULL when out of memory. */
char* ob__peer_redact(const char* in, size_t n, size_t* out_len);

#endif
