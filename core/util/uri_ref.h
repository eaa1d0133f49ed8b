/* SPDX-License-Identifier: Apache-2.0 */
/* RFC 3986 URI-reference syntax (https://www.rfc-editor.org/rfc/rfc3986,
** section 4.1), for CloudEvents' source attribute. Pure. */
#ifndef OB_CORE_URI_REF_H
#define OB_CORE_URI_REF_H

#include <stddef.h>

/*
** Check that s[0..n) is an RFC 3986 URI-reference: a URI (scheme ":"
** hier-part ["?" query] ["#" fragment], section 3) or a relative-ref
** (section 4.2). The rules checked: the scheme's characters; an authority's
** userinfo, host (an IP-literal "[...]" holding an IPv6 address or an
** IPvFuture, or a reg-name) and port (digits); the characters of path,
** query and fragment; '%' followed by two hex digits; and path-noscheme
** (a relative-ref's first path segment holds no ':').
**
** ^Returns 0 when s is one, with reason set to "" (when reason_len > 0).
** ^Returns -1 otherwise, with one sentence in reason (truncated to
** reason_len, always NUL-terminated) that names the first problem and its
** byte offset in s, e.g. "a space at byte 24 is not allowed in a
** URI-reference (percent-encode it as %20)". A NULL reason or a zero
** reason_len writes nothing.
**
** ^The empty string is a valid URI-reference (RFC 3986 section 4.1); a
** caller that needs a non-empty one checks that itself. ^There is no length
** limit. s need not be NUL-terminated; a NUL byte within n is refused.
** Syntax only: no normalization, no scheme-specific rules, no IPv6 zone
** identifiers (RFC 6874). Never allocates; this function can't fail.
*/
int ob__uri_reference_check(const char* s, size_t n, char* reason,
                            size_t reason_len);

#endif
