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

#endif
