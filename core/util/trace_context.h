/* SPDX-License-Identifier: Apache-2.0 */
/* W3C Trace Context (https://www.w3.org/TR/trace-context/): the traceparent
** and tracestate values that CloudEvents' distributed-tracing extension
** carries. Pure: a new span id comes from the caller. */
#ifndef OB_CORE_TRACE_CONTEXT_H
#define OB_CORE_TRACE_CONTEXT_H

#include <stddef.h>

/* A version-00 traceparent: "00-" 32 hex "-" 16 hex "-" 2 hex. */
#define OB__TRACEPARENT_LEN 55
/* The longest tracestate carried (W3C: propagate at least 512 characters). */
#define OB__TRACESTATE_MAX 512

/*
** Parse the traceparent s[0..n) (section 3.2). ^Returns 1 when it is valid:
** a version of two lower-case hex digits other than "ff"; then "-", a
** trace-id of 32 lower-case hex digits not all zero, "-", a parent-id of 16
** lower-case hex digits not all zero, "-", and trace-flags of 2 lower-case
** hex digits. ^Version 00 is exactly 55 characters; ^a higher version is at
** least 55 and, when longer, has '-' at offset 55 (what follows is not
** looked at). ^On 1, out holds the version-00 form, NUL-terminated: a higher
** version is re-expressed as 00 with its trace-id, parent-id and flags, as a
** vendor must before propagating it. ^Returns 0 otherwise, with out = "".
** s need not be NUL-terminated. This function can't fail.
*/
int ob__traceparent_parse(const char* s, size_t n,
                          char out[OB__TRACEPARENT_LEN + 1]);

/*
** ^Returns 1 when s[0..n) is a tracestate worth carrying (section 3.3):
** n <= OB__TRACESTATE_MAX, only printable ASCII (0x20..0x7e), and a list
** of 1 to 32 list-members key "=" value separated by ',' with optional
** spaces around them; empty members are skipped. A key is a simple-key
** (a lower-case letter, then up to 255 of a-z 0-9 _ - * /) or a
** multi-tenant-key (tenant-id "@" system-id: up to 241 and up to 14 such
** characters, the tenant-id may begin with a digit, the system-id begins
** with a letter); keys are unique. A value is 1 to 256 characters of
** 0x20..0x7e other than ',' and '=', the last one not a space.
** ^Returns 0 otherwise, also for a list with no member (empty: nothing to
** carry). This function can't fail.
*/
int ob__tracestate_valid(const char* s, size_t n);

/*
** Write to out the traceparent of a child span of parent: the same version
** (00), trace-id and trace-flags, and parent-id = span as 16 lower-case hex
** digits. ^An all-zero span is used with its last byte set to 1 (an
** all-zero parent-id is invalid). parent must be a version-00 traceparent
** as ob__traceparent_parse writes it (not checked again); out may be
** parent. This function can't fail.
*/
void ob__traceparent_child(const char parent[OB__TRACEPARENT_LEN + 1],
                           const unsigned char span[8],
                           char out[OB__TRACEPARENT_LEN + 1]);

#endif
