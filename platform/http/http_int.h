/* SPDX-License-Identifier: Apache-2.0 */
/*
** Internals of the HTTP client, shared by its files (not for other layers):
**   url.c       URL parsing
**   tls.c       mbedTLS engine on memory buffers (no sockets; unit-testable)
**   tls_record.c  the server's plaintext TLS records, for failure messages
**   response.c  llhttp-based response parser with header/body caps
**   conn.c      one connection: DNS, TCP, TLS handshake, byte pumping, pool
**   client.c    client object, requests, completion delivery
**   errors.c    error table
*/
#ifndef OB_PLATFORM_HTTP_INT_H
#define OB_PLATFORM_HTTP_INT_H

#include <stddef.h>
#include <stdint.h>

#include <llhttp.h>
#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>
#include <mbedtls/ssl.h>
#include <mbedtls/x509_crt.h>
#include <uv.h>

#include "platform/http/http_client.h"
#include "platform/http/tls_record.h"

#define OB__CONTAINER_OF(ptr, type, field) \
  ((type*)(void*)((char*)(ptr)-offsetof(type, field)))

/* ---- intrusive circular list (libuv's QUEUE idea, typed) ---------------- */
typedef struct ob__hlink_s {
  struct ob__hlink_s* prev;
  struct ob__hlink_s* next;
} ob__hlink_t;

static inline void ob__hlist_init(ob__hlink_t* h) { h->prev = h->next = h; }
static inline int ob__hlist_empty(const ob__hlink_t* h) { return h->next == h; }
static inline void ob__hlist_push(ob__hlink_t* h, ob__hlink_t* n) {
  n->prev = h->prev;
  n->next = h;
  h->prev->next = n;
  h->prev = n;
}
static inline void ob__hlist_remove(ob__hlink_t* n) {
  n->prev->next = n->next;
  n->next->prev = n->prev;
  n->prev = n->next = n;
}

/* ---- url.c -------------------------------------------------------------- */
#define OB__HTTP_HOST_MAX 255

typedef struct ob__http_url_s {
  int tls;                          /* https */
  char host[OB__HTTP_HOST_MAX + 1]; /* lower-cased; IPv6 without brackets */
  uint16_t port;                    /* explicit or 443 / 80 */
  const char* target;               /* into the parsed string: "/p?q" or "" */
  size_t target_len;                /* fragment excluded */
} ob__http_url_t;

/* Parse an absolute http(s) URL. No userinfo, no whitespace, control or
** non-ASCII bytes. Returns 0 or OB__HTTP_E_URL. */
int ob__http_url_parse(const char* url, ob__http_url_t* out);

/* ---- tls.c -------------------------------------------------------------- */
/* Shared, read-only per client: RNG, CA chain, mbedTLS config. */
typedef struct ob__tls_conf_s {
  mbedtls_entropy_context entropy;
  mbedtls_ctr_drbg_context drbg;
  mbedtls_x509_crt ca;
  mbedtls_ssl_config conf;
  int ca_count;
} ob__tls_conf_t;

/* Seed the DRBG, load ca_file (OB__HTTP_E_TLS_CA if it yields nothing) and
** build the client config: TLS 1.2, and 1.3 where mbedTLS has it (3.6),
** VERIFY_REQUIRED, and the explicit
** allow-lists of docs/security.md "TLS parameters" (cipher suites, groups,
** signature hashes, certificate profile). Reads the file synchronously: call
** at startup, not from a hot loop callback. On failure everything is freed
** (OB__HTTP_E_TLS also when this mbedTLS build lacks every allowed suite). */
int ob__tls_conf_init(ob__tls_conf_t* tc, const char* ca_file, char* err,
                      size_t errlen);
void ob__tls_conf_free(ob__tls_conf_t* tc);

typedef struct ob__bytes_s {
  uint8_t* p;
  size_t off; /* read position */
  size_t len; /* end of data */
  size_t cap;
} ob__bytes_t;

/* "Call again": returned by handshake/read/write when the engine needs more
** ciphertext in, or the outgoing buffer drained. Not an error code. */
#define OB__TLS_AGAIN (-999)
#define OB__TLS_OUT_CAP (64 * 1024)   /* bound on queued outgoing ciphertext */
#define OB__TLS_IN_CAP (1024 * 1024)  /* bound on unconsumed incoming ciphertext */

/* One TLS session over two byte queues; it never touches a socket. */
typedef struct ob__tls_s {
  mbedtls_ssl_context ssl;
  ob__bytes_t in;   /* ciphertext received, not yet consumed by mbedTLS */
  ob__bytes_t out;  /* ciphertext to send; at most out_cap bytes */
  size_t out_cap;
  int eof;          /* the peer closed its side */
  int ready;        /* init succeeded with a hostname */
  int handshake_done;
  int failed;       /* sticky error code */
  char host[OB__HTTP_HOST_MAX + 1];  /* without a trailing dot */
  /* The host is an IP literal: its 4 or 16 bytes (0: a DNS name). Checked
  ** only against iPAddress SANs, and no SNI is sent for it. */
  size_t ip_len;
  uint8_t ip[16];
  /* Filled by the verify callback, for the failure detail. */
  char name_why[384];    /* why the name check failed, "" if it did not */
  char chain_top[128];   /* issuer of the last certificate of the chain */
  char leaf_from[24];    /* validity of the server's certificate, UTC */
  char leaf_to[24];
  char detail[560];
  ob__tls_sniff_t sniff; /* the server's plaintext records, as fed */
} ob__tls_t;

/* Prepare a session for hostname. Refuses (OB__HTTP_E_TLS_NO_HOSTNAME) a NULL
** or empty hostname: without one mbedTLS 2.28 accepts any certificate.
** A DNS name is sent as SNI and checked by mbedTLS and again, more strictly,
** by our verify callback (dNSName SANs only, no CN, RFC 9525 wildcards). An
** IPv4 or IPv6 literal ("127.0.0.1", "::1") is sent without SNI and matched
** by the callback against iPAddress SANs only. out_cap 0 means
** OB__TLS_OUT_CAP. ob__tls_free() is safe after any return. */
int ob__tls_init(ob__tls_t* t, ob__tls_conf_t* tc, const char* hostname,
                 size_t out_cap);
/* Append received ciphertext (copied). 0, OB_ENOMEM, or OB__HTTP_E_IO when
** more than OB__TLS_IN_CAP would be pending. */
int ob__tls_feed(ob__tls_t* t, const void* data, size_t len);
/* The transport reached EOF. */
void ob__tls_feed_eof(ob__tls_t* t);
/* Advance the handshake: 0 done, OB__TLS_AGAIN, or a negative OB__HTTP_E_*
** (detail in t->detail). Refuses to start without a hostname. */
int ob__tls_handshake(ob__tls_t* t);
/* Decrypt: > 0 bytes, 0 the peer closed (close_notify or EOF),
** OB__TLS_AGAIN, or a negative error. */
int ob__tls_read(ob__tls_t* t, void* buf, size_t len);
/* Encrypt: > 0 bytes consumed, OB__TLS_AGAIN (outgoing buffer full: drain
** it, then call again with the SAME arguments, as mbedtls_ssl_write wants),
** or a negative error. */
int ob__tls_write(ob__tls_t* t, const void* buf, size_t len);
/* Queue a close_notify alert (best effort). */
void ob__tls_close_notify(ob__tls_t* t);
/* Pending outgoing ciphertext length. */
static inline size_t ob__tls_out_len(const ob__tls_t* t) { return t->out.len; }
/* Move the pending ciphertext to the caller: *buf (malloc'd, caller frees)
** and *len; the engine's queue is left empty. */
void ob__tls_take_out(ob__tls_t* t, uint8_t** buf, size_t* len);
void ob__tls_free(ob__tls_t* t);
/* After the handshake: "TLSv1.2" / "TLSv1.3" and the suite's mbedTLS name
** ("TLS-ECDHE-RSA-WITH-AES-128-GCM-SHA256", "TLS1-3-AES-128-GCM-SHA256");
** "" before. Static strings. */
const char* ob__tls_version(const ob__tls_t* t);
const char* ob__tls_suite(const ob__tls_t* t);

/* ---- response.c --------------------------------------------------------- */
typedef struct ob__http_limits_s {
  size_t max_header_bytes;
  size_t max_headers;
  size_t max_body_bytes;
} ob__http_limits_t;

typedef struct ob__http_hdr_s {
  size_t name_off;
  size_t value_off;
} ob__http_hdr_t;

#define OB__HTTP_MAX_INTERIM 8 /* 1xx responses tolerated before the final */

/* Where the parser is in the header section. */
typedef enum {
  OB__HSTATE_BETWEEN = 0,  /* between header fields */
  OB__HSTATE_NAME,         /* in a field name */
  OB__HSTATE_VALUE         /* in a field value */
} ob__http_hstate_t;

typedef struct ob__http_parser_s {
  llhttp_t llh;
  ob__http_limits_t lim;
  int head_request;
  int err;              /* sticky OB__HTTP_E_* */
  char detail[192];
  char* hbuf;           /* header arena: "name\0value\0"... */
  size_t hlen, hcap;
  ob__http_hdr_t* hdrs;
  size_t nhdrs, hdrs_cap;
  ob__http_hstate_t hstate;
  size_t head_bytes;    /* status line + header lines as counted */
  size_t raw_head;      /* bytes fed before the header section ended */
  int status;
  int interim_count;
  int is_interim;
  int headers_done;
  int complete;
  int keep_alive;
  int started;          /* at least one byte arrived */
  uint8_t* body;
  size_t body_len, body_cap;
  ob__http_header_t* view;
} ob__http_parser_t;

void ob__http_parser_init(ob__http_parser_t* p, const ob__http_limits_t* lim,
                          int head_request);
/* Feed bytes. 0: need more; 1: response complete and *used bytes of data
** belong to it (the rest does not); negative: OB__HTTP_E_* (p->detail). */
int ob__http_parser_feed(ob__http_parser_t* p, const char* data, size_t len,
                         size_t* used);
/* The peer closed: 1 if that ends the response (body delimited by close),
** else a negative code (OB__HTTP_E_EOF for a truncated response). */
int ob__http_parser_eof(ob__http_parser_t* p);
/* Fill res (status, headers once complete, body) from p; pointers stay
** valid until ob__http_parser_free. 0 or OB_ENOMEM. */
int ob__http_parser_response(ob__http_parser_t* p, ob__http_response_t* res);
void ob__http_parser_free(ob__http_parser_t* p);

/* ---- conn.c / client.c -------------------------------------------------- */
typedef struct ob__http_conn_s ob__http_conn_t;
typedef struct ob__http_op_s ob__http_op_t;
typedef struct ob__http_conn_events_s ob__http_conn_events_t;

typedef enum { OB__OP_ACTIVE = 1, OB__OP_DONE } ob__http_op_state_t;

typedef enum {
  OB__CONN_RESOLVING = 1,
  OB__CONN_CONNECTING,
  OB__CONN_HANDSHAKE,
  OB__CONN_READY,
  OB__CONN_CLOSING
} ob__http_conn_state_t;

#define OB__HTTP_KEY_MAX (OB__HTTP_HOST_MAX + 24)
#define OB__HTTP_RBUF (64 * 1024)
#define OB__HTTP_DETAIL 600
#define OB__HTTP_MAX_ADDRS 8   /* addresses of one name tried in turn */
#define OB__HTTP_DNS_SLOTS 4   /* names whose addresses are kept */

struct ob__http_conn_s {
  ob__http_client_t* client;
  ob__hlink_t link;       /* client->conns */
  ob__hlink_t idle_link;  /* client->idle while pooled */
  int idle;
  ob__http_conn_state_t state;
  char key[OB__HTTP_KEY_MAX];
  char host[OB__HTTP_HOST_MAX + 1];
  uint16_t port;
  int use_tls;
  char peer[80];          /* "127.0.0.1:443", for details */
  ob__http_op_t* op;      /* request using the connection, or NULL */
  int handles_open;
  uv_timer_t timer;       /* connect timeout, then idle timeout */
  uv_tcp_t tcp;
  int tcp_init;
  int retrying;           /* closing tcp to try the next address */
  struct ob__http_gai_s* gai;
  /* The addresses to try, in order: a literal, the cache's or a lookup's
  ** (copied: the lookup's list is freed at once). */
  struct sockaddr_storage addr[OB__HTTP_MAX_ADDRS];
  int naddr, next_addr;
  uv_connect_t connect_req;
  ob__tls_t tls;
  int tls_init;
  uv_write_t wreq;        /* at most one write in flight */
  uint8_t* wbuf;
  int writing;
  size_t tx_off;          /* bytes of op->sendbuf handed on */
  char rbuf[OB__HTTP_RBUF];
};

struct ob__http_op_s {
  ob__http_client_t* client;
  ob__http_req_t* req;
  ob__http_cb cb;
  ob__hlink_t link;       /* client->ops while active, client->done after */
  ob__http_op_state_t state;
  ob__http_url_t url;     /* target not valid after submit */
  char key[OB__HTTP_KEY_MAX];
  int idempotent;
  int fresh_only;         /* after a stale pooled connection: no reuse */
  uint8_t* sendbuf;
  size_t sendlen;
  uint64_t timeout_ms;
  ob__http_conn_t* conn;
  uv_timer_t deadline;
  ob__http_parser_t parser;
  int result;
  char detail[OB__HTTP_DETAIL];
  int reused, retried, request_sent;
  int xfer;               /* held by the test transport (tests/sim) */
};


/* A name's addresses, kept for cfg.dns_ttl_ms after a lookup so that a
** retry, a probe or a new connection to the same peer does not wake the
** resolver's thread pool each time (docs/performance.md, the footprint's
** wake-ups; libcurl keeps 60 s as well). */
typedef struct ob__http_dns_s {
  char host[OB__HTTP_HOST_MAX + 1];
  uint16_t port;
  uint64_t at;            /* uv_now() of the lookup; 0: empty */
  struct sockaddr_storage addr[OB__HTTP_MAX_ADDRS];
  int naddr;
} ob__http_dns_t;

struct ob__http_client_s {
  uv_loop_t* loop;
  ob__http_config_t cfg;
  ob__http_resolve_t* resolve; /* owned copies */
  size_t nresolve;
  ob__tls_conf_t tls;
  uv_idle_t defer;            /* delivers completions on the next tick */
  ob__hlink_t ops;            /* active requests */
  ob__hlink_t done;           /* completed, callback pending */
  ob__hlink_t conns;          /* every connection not yet freed */
  ob__hlink_t idle;           /* pooled connections, oldest first */
  size_t nidle;
  size_t nops_alive;          /* ops not yet freed */
  size_t nconns_alive;
  size_t ngai;                /* lookups in the threadpool */
  int closing;
  int final_close;
  ob__http_close_cb close_cb;
  void* close_arg;
  ob__http_stats_t stats;
  ob__http_dns_t dns[OB__HTTP_DNS_SLOTS];
  int simulated;              /* opened with the test transport: no TLS */
  const ob__http_conn_events_t* events;  /* client.c's, for conn.c */
};

/* conn.c: open a connection for op (which it reports to), to op->url. */
int ob__http_conn_open(ob__http_client_t* c, ob__http_op_t* op,
                       ob__http_conn_t** out);
/* Take a pooled connection for key (most recently used first), or NULL. */
ob__http_conn_t* ob__http_pool_take(ob__http_client_t* c, const char* key);
/* Start sending op->sendbuf on a ready connection attached to op. */
void ob__http_conn_start(ob__http_conn_t* conn);
/* All of op->sendbuf has been handed to the socket. */
int ob__http_conn_sent_all(const ob__http_conn_t* conn);
/* The op is done with conn: pool it if reusable, else close it. */
void ob__http_conn_release(ob__http_conn_t* conn, int reusable);
/* Close (async; freed later). graceful: send close_notify if TLS is up. */
void ob__http_conn_close(ob__http_conn_t* conn, int graceful);

/* What a connection reports to its op and its client. client.c sets the
** table on the client when it opens it (c->events); conn.c reaches client.c
** only through it, so client.c -> conn.c is a one-way dependency. */
struct ob__http_conn_events_s {
  /* The connection is ready for op's request. */
  void (*on_ready)(ob__http_op_t* op);
  /* Bytes of op's response arrived. */
  void (*on_data)(ob__http_op_t* op, const char* data, size_t len);
  /* The connection failed; conn has already been detached and closed when
  ** this runs. */
  void (*on_error)(ob__http_op_t* op, int err, const char* detail);
  /* A connection or lookup was freed: the client may finish closing. */
  void (*maybe_closed)(ob__http_client_t* c);
};

#endif
