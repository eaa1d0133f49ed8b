/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OB_CORE_JSON_CHECK_H
#define OB_CORE_JSON_CHECK_H

#include <stddef.h>

/* Deepest nesting of arrays/objects accepted ("[[1]]" is 2 deep). */
#define OB__JSON_MAX_DEPTH 64

/* 1 if text[0..len) is one complete JSON value (RFC 8259, nesting at most
** 64 deep, nothing but whitespace after it), else 0.
** Strict: UTF-8 only (no BOM, no overlong or surrogate byte sequences),
** no raw control characters in strings, no unpaired surrogate escapes
** (I-JSON, RFC 7493; cJSON refuses them too). A NUL byte anywhere within
** len is invalid; \u0000 escapes are valid. Never allocates; this function
** can't fail. */
int ob__json_valid(const char* text, size_t len);

/* 1 if text is a JSON object (same rules), else 0. */
int ob__json_is_object(const char* text, size_t len);

/* Scan one JSON value (same rules) at the start of text[0..len), with the
** whitespace around it. Returns the number of bytes it spans, or 0 if no
** valid value starts there. What follows the value is not judged, which lets a
** caller step over the members of a document it has validated. */
size_t ob__json_scan(const char* text, size_t len);

/* Readers of a document that ob__json_valid accepted (they do not check
** again). */

/* Skip JSON whitespace. */
const char* ob__json_skip_ws(const char* p);

/* Decode the JSON string whose opening quote is at p into buf,
** NUL-terminated. Returns the decoded length, or cap if it needs cap bytes
** or more. A \u escape of a non-ASCII character decodes to the byte 0xFF:
** callers compare with ASCII text, which that byte never matches. \u0000
** decodes to a NUL byte counted in the length. */
size_t ob__json_str_decode(const char* p, char* buf, size_t cap);

/* Decode the JSON string whose opening quote is at p into buf, exactly:
** \u escapes become UTF-8 (a surrogate pair one 4-byte sequence), \u0000 a
** NUL byte counted in the length. buf needs as many bytes as the string's
** text spans from its opening quote to its closing one (a decoded string is
** never longer than its escaped form, and the NUL written after it fits in
** the closing quote's place). Returns the decoded length. */
size_t ob__json_str_unescape(const char* p, char* buf);

/* In a valid JSON object text[0..len), find where the value of each of the
** `count` ASCII member names starts (val[] must be zeroed; names up to 63
** bytes, each listed once). Unknown members are skipped, and counted in
** *unknown when it is not NULL (the caller zeroes it). Returns the index of
** the first name seen twice (the scan stops there), or -1. */
int ob__json_members(const char* text, size_t len, const char* const* names,
                     int count, const char* val[], int* unknown);

#endif
