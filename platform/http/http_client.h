/* SPDX-License-Identifier: Apache-2.0 */
/*
** oncebox internal: asynchronous HTTP/1.1 client on a libuv loop, with TLS
** (mbedTLS 2.28) driven through memory BIOs and responses parsed by llhttp.
**
** Not public API (not in oncebox.h): the SQS layer and the CLI use it.
**
** Threading: a client and its requests belong to the loop thread. Call every
** function from that thread.
**
** Callback rules (libuv's): a function that takes a callback and returns an
** error never calls it; when it returns 0 the callback runs exactly once,
** later, from the loop, never from inside the registering call.
**
** Security defaults, none of which can be turned off:
**   - TLS 1.2 minimum (Debian's mbedTLS 2.28 would otherwise negotiate 1.1),
**     certificate verification required, the expected hostname always set
**     (mbedTLS 2.28.3 skips the name check without it, CVE-2025-27809): a
**     connection with no hostname is refused before the handshake starts.
**   - Only the TLS 1.2 parameters of docs/security.md are offered and
**     accepted: ECDHE with AES-GCM or ChaCha20-Poly1305, groups x25519,
**     P-256, P-384, SHA-256/384/512 signatures, certificate chains signed
**     with SHA-2 and keys of RSA 2048+ or P-256/P-384 (P-521 for CAs).
**   - The server's name is matched the RFC 9525 way by our own check on top
**     of mbedTLS's: a DNS name only against dNSName SANs (a wildcard only as
**     the whole left-most label), an IP literal only against iPAddress
**     SANs, never the subject CN.
**   - The CA bundle must load at least one certificate or the client does not
**     open.
**   - No proxy is used (ob__http_proxy_note says when one is configured).
**   - Plain http:// only when the config says so (local emulators); https
**     never falls back to http.
**   - Response framing is strict: conflicting Content-Length and
**     Transfer-Encoding, duplicate or malformed Content-Length and bad chunk
**     sizes are errors, and header, body and time are all bounded.
*/
#ifndef OB_PLATFORM_HTTP_CLIENT_H
#define OB_PLATFORM_HTTP_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "core/util/net_error.h"
#include "oncebox.h"

/* Error codes: OB__HTTP_E_* (core/util/net_error.h). Functions here may
** also return OB_EINVAL, OB_ENOMEM and OB_ESTATE from oncebox.h. */

#define OB__HTTP_DEFAULT_CA_FILE "/etc/ssl/certs/ca-certificates.crt"

/* Map a host name to a literal IP address without DNS (curl --resolve):
** the URL's host still names the server (Host header, SNI, certificate
** check); only the address connected to changes. */
typedef struct ob__http_resolve_s {
  const char* host;   /* e.g. "sqs.test" (case-insensitive) */
  const char* addr;   /* e.g. "127.0.0.1"; IPv4 or IPv6 literal */
} ob__http_resolve_t;

typedef struct ob__http_config_s {
  /* PEM bundle of trusted CAs. NULL: OB__HTTP_DEFAULT_CA_FILE. The caller
  ** passes AWS_CA_BUNDLE here; this layer reads no environment. */
  const char* ca_file;
  int allow_plain_http;         /* 0: http:// URLs are refused */
  uint64_t connect_timeout_ms;  /* 10000: DNS + TCP connect + TLS handshake */
  uint64_t request_timeout_ms;  /* 30000: total per request, from submit */
  size_t max_header_bytes;      /* 16384: status line + header fields */
  size_t max_headers;           /* 100 header fields */
  size_t max_body_bytes;        /* 12 MiB */
  size_t max_idle_per_host;     /* 4 idle keep-alive connections per origin */
  uint64_t idle_timeout_ms;     /* 15000: idle pooled connections closed */
  /* 60000: a name's addresses are kept this long after a lookup, failed
  ** connects or not (retries and probes reuse them); 0: look up each time. */
  uint64_t dns_ttl_ms;
  const ob__http_resolve_t* resolve;  /* copied at open */
  size_t nresolve;
} ob__http_config_t;

/* Fill cfg with the defaults above. This function can't fail. */
void ob__http_config_init(ob__http_config_t* cfg);

typedef struct ob__http_header_s {
  const char* name;
  const char* value;
} ob__http_header_t;

/*
** A response, valid only during the request callback; everything it points
** to is owned by the client and freed when the callback returns (copy what
** you keep).
*/
typedef struct ob__http_response_s {
  int status;                 /* HTTP status (200...), 0 if none was read */
  const ob__http_header_t* headers;  /* in arrival order, NUL-terminated */
  size_t nheaders;
  const uint8_t* body;        /* NUL-terminated for convenience; never NULL */
  size_t body_len;
  /* Human detail for a failure ("" on success), e.g. "TLS: certificate for
  ** 'sqs.test' rejected: The certificate validity has expired". */
  const char* detail;
  int reused;        /* the (last) connection came from the keep-alive pool */
  /* 0: no byte of the HTTP request reached the socket (e.g. every TLS
  ** failure); the server cannot have acted on it. 1: it may have. */
  int request_sent;
} ob__http_response_t;

typedef struct ob__http_client_s ob__http_client_t;
typedef struct ob__http_req_s ob__http_req_t;

/* status: 0, or a negative OB__HTTP_E_* / OB_E* code. A non-2xx HTTP status
** is not an error here (status 0, res->status 404). res is never NULL. */
typedef void (*ob__http_cb)(ob__http_req_t* req, int status,
                           const ob__http_response_t* res);
typedef void (*ob__http_close_cb)(ob__http_client_t* client, void* arg);

/*
** A request. Caller-allocated (libuv's uv_req_t style) and zeroed before its
** first use (op_ must be NULL); it must stay valid and unmoved until its
** callback runs, and may be submitted again from that callback. The fields
** below are read and copied by ob__http_request(), so the strings, headers
** and body need only live during that call.
*/
struct ob__http_req_s {
  void* data;                       /* free for the caller */
  const char* method;               /* "GET", "POST", ... (token chars) */
  const char* url;                  /* https://host[:port]/path?query */
  const ob__http_header_t* headers;  /* extra request headers */
  size_t nheaders;
  const void* body;
  size_t body_len;
  uint64_t timeout_ms;              /* 0: the client's request_timeout_ms */
  /* private */
  struct ob__http_op_s* op_;
};

/*
** Open a client on loop. The CA bundle is parsed here (fails with
** OB__HTTP_E_TLS_CA if it yields no certificate), and the CTR-DRBG is seeded
** from the entropy source with a fixed personalization string.
** On success *out is the client; on failure *out is NULL, nothing is left
** allocated, and if errbuf is not NULL a NUL-terminated detail is written.
** Errors: OB_EINVAL (NULL argument, zero limits, bad resolve entry),
** OB_ENOMEM, OB__HTTP_E_TLS_CA, OB__HTTP_E_TLS.
*/
int ob__http_client_open(ob__http_client_t** out, uv_loop_t* loop,
                        const ob__http_config_t* cfg, char* errbuf,
                        size_t errlen);

/*
** Pooled keep-alive connections do not keep the loop alive (uv_unref, as
** Node's agent does), but they are handles: close the client before
** uv_loop_close().
**
** Close the client: every request still pending completes with
** OB__HTTP_E_CANCELED, pooled connections are closed (TLS close_notify sent
** best effort), then close_cb(client, arg) runs from the loop. The client
** pointer is invalid once close_cb returns. close_cb may be NULL. Calling it
** twice is an error (ignored). Requests made after it fail with
** OB__HTTP_E_CLOSING. This function can't fail.
*/
void ob__http_client_close(ob__http_client_t* client, ob__http_close_cb cb,
                          void* arg);

/*
** Start req. Returns 0 and later calls cb exactly once; or returns an error
** and never calls cb:
**   OB_EINVAL      NULL argument, bad method, header name/value with CR/LF
**                  or control characters, a caller-set Host,
**                  Content-Length, Transfer-Encoding or Connection header
**   OB_ESTATE      req is already in flight
**   OB__HTTP_E_URL, OB__HTTP_E_PLAIN_HTTP, OB__HTTP_E_CLOSING, OB_ENOMEM
**
** Callback status: 0 with a response of any HTTP status, or one of the
** OB__HTTP_E_* codes with res->detail; res->request_sent says whether any
** byte of the request reached the socket.
**
** Keep-alive: connections are pooled per scheme://host:port. If a pooled
** connection turns out dead (closed or reset before any response byte), an
** idempotent request (GET, HEAD, OPTIONS, TRACE, PUT, DELETE) is sent once
** more on a fresh connection, as RFC 9110 section 9.2.2 allows. Any other
** method (POST: SQS actions) is NOT resent: it fails with OB__HTTP_E_STALE
** and the caller's retry policy decides, because the server may have acted
** on the first copy.
**
** Framing: a body is sent with Content-Length (also "0" for POST, PUT and
** PATCH). The Host header is derived from the URL.
*/
int ob__http_request(ob__http_client_t* client, ob__http_req_t* req,
                    ob__http_cb cb);

/*
** Cancel req: its callback runs later with OB__HTTP_E_CANCELED and its
** connection is closed. Returns 0, or OB_ESTATE if req is not in flight or
** its result is already on the way (the callback then reports that result).
*/
int ob__http_cancel(ob__http_req_t* req);

/* First header named name (case-insensitive) or NULL. */
const char* ob__http_header_get(const ob__http_response_t* res,
                               const char* name);

/*
** Proxies are not supported: every connection goes directly to the host of
** the URL (docs/security.md "Proxies"). This returns NULL, or a static
** sentence naming the first proxy variable that is set and non-empty, in
** this order: HTTPS_PROXY, https_proxy, ALL_PROXY, all_proxy, HTTP_PROXY,
** http_proxy (NO_PROXY=* or no_proxy=* exempts every host: NULL). The
** variable's value is never quoted, since it may carry credentials.
**
** For the callers' logs: call it once at startup and log the sentence, if
** any, once. The client itself logs nothing; it only appends "(note:
** HTTPS_PROXY is set, but this client does not use proxies ...)" to the
** detail of a DNS, connect or connect-timeout failure while a variable is
** set. Reads the environment on every call (no cache); the string is
** static (never free it). Any thread. This function can't fail.
*/
const char* ob__http_proxy_note(void);

/* Counters, for tests and diagnostics. */
typedef struct ob__http_stats_s {
  uint64_t connections_opened;  /* TCP connections started */
  uint64_t connections_reused;  /* requests served by a pooled connection */
  uint64_t lookups;             /* name lookups started (the cache missed) */
  uint64_t retries;             /* idempotent requests resent once */
  size_t idle_connections;      /* in the pool now */
  /* The last TLS handshake completed: "TLSv1.2"/"TLSv1.3" and mbedTLS's
  ** suite name; "" before the first. */
  char tls_version[16];
  char tls_suite[64];
} ob__http_stats_t;

void ob__http_client_stats(const ob__http_client_t* client, ob__http_stats_t* s);

/*
** Test-only transport seam (tests/sim, docs/simulator.md). When a transport
** is installed, ob__http_client_open skips the CA bundle and TLS, and every
** request, instead of going to a socket, is handed to start() with its
** method, URL, headers and body; the serialized request, the deadline, the
** response parser (llhttp) and the completion path stay the real ones. The
** transport completes the exchange LATER, from the loop, exactly once, with
** ob__http_xfer_feed (raw HTTP/1.1 response bytes) or ob__http_xfer_fail
** (a transport error), unless cancel() was called first (deadline, cancel,
** client close): then it must forget xfer and never touch it again.
** Process-global; install before opening clients, remove after closing
** them. NULL removes it. Not thread-safe; costs one pointer test when unset.
*/
typedef struct ob__http_xfer_s ob__http_xfer_t;  /* an op, opaque */

typedef struct ob__http_xfer_info_s {
  uv_loop_t* loop;                  /* the client's loop */
  const char* method;
  const char* url;
  const ob__http_header_t* headers; /* the caller's extra headers */
  size_t nheaders;
  const void* body;
  size_t body_len;
  uint64_t timeout_ms;              /* the request's deadline */
} ob__http_xfer_info_t;

typedef struct ob__http_transport_s {
  void* ctx;
  /* 0: the transport owns the exchange; < 0: the request fails at once
  ** with that OB__HTTP_E_* code (request_sent 0). info lives during the
  ** call only. */
  int (*start)(void* ctx, ob__http_xfer_t* xfer,
               const ob__http_xfer_info_t* info);
  void (*cancel)(void* ctx, ob__http_xfer_t* xfer);
} ob__http_transport_t;

void ob__http_set_transport(const ob__http_transport_t* t);
/* The server's answer (the whole response; an incomplete one is a
** connection closed early). Marks the request sent. */
void ob__http_xfer_feed(ob__http_xfer_t* xfer, const void* raw, size_t len);
/* A transport error (OB__HTTP_E_*); request_sent 1: the server may have
** acted on it (an answer lost). */
void ob__http_xfer_fail(ob__http_xfer_t* xfer, int err, int request_sent,
                        const char* detail);

#endif
