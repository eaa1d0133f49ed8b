/* SPDX-License-Identifier: Apache-2.0 */
/* Strict base64 decoding (RFC 4648 section 4), for CloudEvents'
** data_base64. Pure. */
#ifndef OB_CORE_BASE64_H
#define OB_CORE_BASE64_H

#include <stddef.h>

/* The most bytes that n characters of base64 decode to. */
#define OB__BASE64_DECODED_MAX(n) ((n) / 4 * 3)

/*
** Decode s[0..n), base64 in the standard alphabet (A-Z a-z 0-9 + /) padded
** with '=' to a multiple of 4 characters, as the CloudEvents SDKs write it.
** ^Refused: any other byte (the URL-safe '-' and '_', whitespace and line
** breaks included), a length that is not a multiple of 4, '=' anywhere but
** in the last two places. ^Accepted: non-zero bits in the last character
** before the padding (RFC 4648 section 3.5 lets a decoder refuse them; the
** decoding is unambiguous, and refusing would lose the message for good).
** out needs OB__BASE64_DECODED_MAX(n) bytes and may be NULL when that is 0.
** ^Returns 0 with the decoded length in *out_len, or -1 with a sentence in
** reason naming the first problem and its byte offset (out's content is
** then unspecified). Never allocates; this function can't fail otherwise.
*/
int ob__base64_decode(const char* s, size_t n, unsigned char* out,
                      size_t* out_len, char* reason, size_t reason_len);

#endif
