/* SPDX-License-Identifier: Apache-2.0 */
/*
** oncebox internal: the detailed codes of the network layers, and the one
** place that maps them to public codes and classifies them.
**
** platform/http and platform/sqs report failures with these detailed codes
** (OB__HTTP_E_* in -100..-139, OB__SQS_E_* in -140..-159), so that logs,
** `oncebox sqs` and the HTTP tests can say exactly what happened. They never
** cross the public API: every public function that can meet one returns
** ob__err_public(code) instead, a code of oncebox.h's OB_ERRNO_MAP (OB_ENET,
** OB_ETLS, OB_EPROTO, OB_EAUTH, OB_EREMOTE, OB_EUNAVAIL, ...), and every
** worker decides what a failure means through ob__net_classify() alone
** (docs/decisions/0010-one-worker-one-error-space.md).
*/
#ifndef OB_CORE_UTIL_NET_ERROR_H
#define OB_CORE_UTIL_NET_ERROR_H

#include "oncebox.h"

/* HTTP and TLS (platform/http). */
#define OB__HTTP_ERRNO_MAP(XX)                                                \
  XX(TLS_HOSTNAME, -100, "TLS: certificate does not match the hostname")      \
  XX(TLS_EXPIRED, -101, "TLS: certificate has expired")                       \
  XX(TLS_FUTURE, -102, "TLS: certificate is not valid yet")                   \
  XX(TLS_UNTRUSTED, -103, "TLS: certificate is not signed by a trusted CA")   \
  XX(TLS_CERT, -104, "TLS: certificate rejected")                             \
  XX(TLS_PROTOCOL, -105, "TLS: protocol version refused (TLS 1.2 minimum)")   \
  XX(TLS_HANDSHAKE_EOF, -106, "TLS: connection closed during the handshake")  \
  XX(TLS, -107, "TLS: error")                                                 \
  XX(TLS_NO_HOSTNAME, -108, "TLS: no hostname to verify the certificate")     \
  XX(TLS_CA, -109, "TLS: no CA certificate could be loaded")                  \
  XX(CONNECT_TIMEOUT, -110, "connect timeout")                                \
  XX(DEADLINE, -111, "request deadline exceeded")                             \
  XX(CONNECT, -112, "connection refused or unreachable")                      \
  XX(DNS, -113, "host name lookup failed")                                    \
  XX(RESET, -114, "connection reset by peer")                                 \
  XX(EOF, -115, "connection closed before the response was complete")        \
  XX(STALE, -116,                                                             \
     "reused connection closed before any response byte (not resent)")       \
  XX(IO, -117, "network I/O error")                                           \
  XX(HEADER_TOO_BIG, -118, "response header too large")                       \
  XX(BODY_TOO_BIG, -119, "response body too large")                           \
  XX(BAD_CONTENT_LENGTH, -120,                                                \
     "invalid or duplicate Content-Length in response")                      \
  XX(BAD_FRAMING, -121,                                                       \
     "conflicting Content-Length and Transfer-Encoding in response")         \
  XX(BAD_CHUNK, -122, "invalid chunked encoding in response")                 \
  XX(BAD_RESPONSE, -123, "malformed HTTP response")                           \
  XX(CANCELED, -124, "request canceled")                                      \
  XX(CLOSING, -125, "HTTP client is closing")                                 \
  XX(URL, -126, "invalid or unsupported URL")                                 \
  XX(PLAIN_HTTP, -127, "plain http:// not allowed by the client config")

typedef enum {
#define OB__HTTP_ERR_ENUM(name, code, text) OB__HTTP_E_##name = (code),
  OB__HTTP_ERRNO_MAP(OB__HTTP_ERR_ENUM)
#undef OB__HTTP_ERR_ENUM
  OB__HTTP__ERR_LAST = -139
} ob__http_errno_t;

/* Amazon SQS (platform/sqs), on top of the HTTP codes. */
#define OB__SQS_ERRNO_MAP(XX)                                                 \
  XX(SERVICE, -140, "SQS returned an error")                                  \
  XX(THROTTLED, -141, "SQS throttled the request")                            \
  XX(UNAVAILABLE, -142, "SQS server error")                                   \
  XX(AUTH, -143, "SQS refused the credentials or the signature")              \
  XX(NO_QUEUE, -144, "the queue does not exist")                              \
  XX(CHECKSUM, -145, "MD5 checksum mismatch in the SQS response")             \
  XX(BAD_RESPONSE, -146, "malformed SQS response")                          \
  XX(NOT_JSON_API, -147, "the server is not an SQS JSON-protocol endpoint")

typedef enum {
#define OB__SQS_ERR_ENUM(name, code, text) OB__SQS_E_##name = (code),
  OB__SQS_ERRNO_MAP(OB__SQS_ERR_ENUM)
#undef OB__SQS_ERR_ENUM
  OB__SQS__ERR_LAST = -159
} ob__sqs_errno_t;

/* Static text / symbolic name of any code: public, HTTP or SQS ("unknown
** error" / "OB_UNKNOWN" otherwise). These functions can't fail. */
const char* ob__net_strerror(int err);
const char* ob__net_err_name(int err);
/* The layers' historical names for the same two functions. */
#define ob__http_strerror ob__net_strerror
#define ob__http_err_name ob__net_err_name
#define ob__sqs_strerror ob__net_strerror
#define ob__sqs_err_name ob__net_err_name

/*
** The public code for any code (identity for 0 and public codes):
**   TLS verification, TLS setup and handshake errors  -> OB_ETLS
**   connection refused, DNS, reset, closed, stale, I/O -> OB_ENET
**   connect timeout, request deadline                  -> OB_ETIMEDOUT
**   framing, size limits, malformed or unverifiable
**   responses (HTTP or SQS, checksum mismatch)         -> OB_EPROTO
**   SQS credentials or signature refused               -> OB_EAUTH
**   SQS throttling or 5xx after the client's retries   -> OB_EUNAVAIL
**   SQS: the queue does not exist                      -> OB_ENOTFOUND
**   SQS: the server is not the SQS JSON API (415, an
**   unknown operation, XML, nothing at the path, ...)  -> OB_EPROTO
**   SQS: any other service error about the request     -> OB_EREMOTE
**   canceled / client closing                          -> OB_ECANCELED / OB_ESTATE
**   bad or plain-http URL                              -> OB_EINVAL
** An unknown negative code maps to OB_EINVAL. This function can't fail.
*/
int ob__err_public(int code);

/* What a failed network operation means for the worker that made it. */
typedef enum {
  OB__NET_OK = 0,     /* 0: it worked */
  OB__NET_TRANSIENT,  /* the peer could not be reached, timed out, is
                      ** overloaded: try again later, costs the work
                      ** nothing (OB_ENET, OB_ETIMEDOUT, OB_EUNAVAIL) */
  OB__NET_CONFIG,     /* certificate, TLS version, URL, missing queue, a
                      ** server that is not the SQS JSON API: a person
                      ** must fix it (OB_ETLS verification, OB_ENOTFOUND
                      ** for a queue, OB_EINVAL, OB__SQS_E_NOT_JSON_API) */
  OB__NET_AUTH,       /* the credentials were refused (OB_EAUTH) */
  OB__NET_PEER,       /* the peer answered, but refused this request or sent
                      ** something malformed (OB_EREMOTE, OB_EPROTO) */
  OB__NET_CANCELED,   /* canceled by a close (OB_ECANCELED) */
  OB__NET_LOCAL       /* refused here before sending (OB_ENOMEM, bad
                      ** argument, wrong state) */
} ob__net_class_t;

/* Classify any code, detailed or public. This function can't fail. */
ob__net_class_t ob__net_classify(int code);
/* Static name of a class, for logs ("transient", "configuration", ...). */
const char* ob__net_class_name(ob__net_class_t c);

/* 1 when ob__net_classify(status) is OB__NET_TRANSIENT. */
static inline int ob__sqs_status_is_transient(int status) {
  return ob__net_classify(status) == OB__NET_TRANSIENT;
}

#endif
