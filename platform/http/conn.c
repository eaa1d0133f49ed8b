/* SPDX-License-Identifier: Apache-2.0 */
/*
** One HTTP connection on the loop: name lookup (or a literal / configured
** address), TCP connect trying each address in turn, the TLS handshake
** through the memory-BIO engine, then byte pumping both ways, and the
** keep-alive pool.
**
** Ownership: a connection serves at most one request (op) at a time and
** reports to it through the client's events table (http_int.h: conn.c
** calls nothing in client.c directly). Closing is always asynchronous: the
** memory lives until every handle's close callback ran, so a caller may
** keep using the pointer (reading conn->state) after closing it.
*/
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/errbuf.h"
#include "platform/http/http_int.h"

struct ob__http_gai_s {
  uv_getaddrinfo_t req;
  ob__http_client_t* client;
  ob__http_conn_t* conn;  /* NULL once the connection gave up on it */
};

#define TLS_WRITE_CHUNK 16384  /* one TLS record of plaintext per write */
#define PLAIN_WRITE_CHUNK (64 * 1024)

static void send_pump(ob__http_conn_t* conn);
static void tls_pump(ob__http_conn_t* conn);
static void connect_next(ob__http_conn_t* conn);

static int map_uv(int st) {
  if (st <= UV_EAI_ADDRFAMILY && st >= UV_EAI_PROTOCOL) return OB__HTTP_E_DNS;
  switch (st) {
    case UV_ECONNREFUSED:
    case UV_ENETUNREACH:
    case UV_EHOSTUNREACH:
    case UV_EADDRNOTAVAIL:
    case UV_ENETDOWN:
    case UV_EHOSTDOWN:
    case UV_EAFNOSUPPORT:
      return OB__HTTP_E_CONNECT;
    case UV_ECONNRESET:
    case UV_EPIPE:
    case UV_ECONNABORTED:
      return OB__HTTP_E_RESET;
    case UV_EOF:
      return OB__HTTP_E_EOF;
    case UV_ENOMEM:
    case UV_ENOBUFS:
      return OB_ENOMEM;
    default:
      return OB__HTTP_E_IO;
  }
}

static const char* stage_name(const ob__http_conn_t* conn) {
  switch (conn->state) {
    case OB__CONN_RESOLVING: return "name lookup";
    case OB__CONN_CONNECTING: return "TCP connect";
    case OB__CONN_HANDSHAKE: return "TLS handshake";
    default: return "request";
  }
}

/* ---- teardown ----------------------------------------------------------- */

static void conn_free(ob__http_conn_t* conn) {
  ob__http_client_t* c = conn->client;

  if (conn->tls_init) ob__tls_free(&conn->tls);
  ob__hlist_remove(&conn->link);
  c->nconns_alive--;
  free(conn);
  c->events->maybe_closed(c);
}

static void on_handle_closed(uv_handle_t* h) {
  ob__http_conn_t* conn = h->data;
  if (--conn->handles_open == 0) conn_free(conn);
}

/* Best effort, no callback: a close_notify or an alert on the way out. */
static void try_flush(ob__http_conn_t* conn) {
  uint8_t* buf;
  size_t len;
  uv_buf_t b;

  if (!conn->tls_init || !conn->tcp_init || ob__tls_out_len(&conn->tls) == 0)
    return;
  ob__tls_take_out(&conn->tls, &buf, &len);
  b = uv_buf_init((char*)buf, (unsigned)len);
  (void)uv_try_write((uv_stream_t*)&conn->tcp, &b, 1);
  free(buf);
}

void ob__http_conn_close(ob__http_conn_t* conn, int graceful) {
  ob__http_client_t* c = conn->client;

  if (conn->state == OB__CONN_CLOSING) return;
  conn->state = OB__CONN_CLOSING;
  if (conn->idle) {
    ob__hlist_remove(&conn->idle_link);
    conn->idle = 0;
    c->nidle--;
  }
  if (conn->op != NULL) {
    conn->op->conn = NULL;
    conn->op = NULL;
  }
  if (conn->gai != NULL) {
    /* The lookup may be running in the threadpool: its callback frees it. */
    conn->gai->conn = NULL;
    (void)uv_cancel((uv_req_t*)&conn->gai->req);
    conn->gai = NULL;
  }
  if (graceful && conn->tls_init && conn->tls.handshake_done) {
    ob__tls_close_notify(&conn->tls);
    try_flush(conn);
  }
  if (conn->tcp_init) {
    conn->tcp_init = 0;
    uv_close((uv_handle_t*)&conn->tcp, on_handle_closed);  /* cancels I/O */
  }
  uv_close((uv_handle_t*)&conn->timer, on_handle_closed);
}

/* Detach the op, close, then tell the op (which may start a retry). */
static void conn_fail(ob__http_conn_t* conn, int err, const char* detail) {
  ob__http_op_t* op = conn->op;

  if (conn->state == OB__CONN_CLOSING) return;
  if (op != NULL) {
    op->conn = NULL;
    conn->op = NULL;
  }
  ob__http_conn_close(conn, 0);
  if (op != NULL) op->client->events->on_error(op, err, detail);
}

__attribute__((format(printf, 3, 4))) static void conn_failf(
    ob__http_conn_t* conn, int err, const char* fmt, ...) {
  char detail[OB__HTTP_DETAIL];
  va_list ap;

  va_start(ap, fmt);
  ob__errbuf_vset(detail, sizeof detail, 0, fmt, ap);
  va_end(ap);
  conn_fail(conn, err, detail);
}

/* ---- timers ------------------------------------------------------------- */

static void on_timer(uv_timer_t* t) {
  ob__http_conn_t* conn = t->data;

  if (conn->state == OB__CONN_CLOSING) return;
  if (conn->idle) {  /* idle timeout: the server would drop it soon anyway */
    ob__http_conn_close(conn, 1);
    return;
  }
  if (conn->state < OB__CONN_READY)
    conn_failf(conn, OB__HTTP_E_CONNECT_TIMEOUT,
               "no connection to %s:%u within %llu ms (stuck in %s%s%s)",
               conn->host, (unsigned)conn->port,
               (unsigned long long)conn->client->cfg.connect_timeout_ms,
               stage_name(conn), conn->peer[0] ? " with " : "", conn->peer);
}

/* ---- writing ------------------------------------------------------------ */

static void on_write(uv_write_t* req, int status) {
  ob__http_conn_t* conn = req->data;

  free(conn->wbuf);
  conn->wbuf = NULL;
  conn->writing = 0;
  if (conn->state == OB__CONN_CLOSING) return;
  if (status < 0) {
    conn_failf(conn, map_uv(status), "write to %s: %s", conn->peer,
               uv_strerror(status));
    return;
  }
  if (conn->use_tls && !conn->tls.handshake_done)
    tls_pump(conn);
  else
    send_pump(conn);
}

/* Takes ownership of buf. One write in flight bounds what we queue. */
static void write_buf(ob__http_conn_t* conn, uint8_t* buf, size_t len) {
  uv_buf_t b = uv_buf_init((char*)buf, (unsigned)len);
  int rc;

  conn->wbuf = buf;
  conn->wreq.data = conn;
  rc = uv_write(&conn->wreq, (uv_stream_t*)&conn->tcp, &b, 1, on_write);
  if (rc < 0) {
    free(buf);
    conn->wbuf = NULL;
    conn_failf(conn, map_uv(rc), "write to %s: %s", conn->peer,
               uv_strerror(rc));
    return;
  }
  conn->writing = 1;
}

static void tls_flush(ob__http_conn_t* conn) {
  uint8_t* buf;
  size_t len;

  if (conn->writing || conn->state == OB__CONN_CLOSING) return;
  if (ob__tls_out_len(&conn->tls) == 0) return;
  ob__tls_take_out(&conn->tls, &buf, &len);
  write_buf(conn, buf, len);
}

static void send_pump(ob__http_conn_t* conn) {
  ob__http_op_t* op = conn->op;

  if (conn->state != OB__CONN_READY) return;
  if (conn->use_tls) {
    while (op != NULL && conn->tx_off < op->sendlen) {
      size_t n = op->sendlen - conn->tx_off;
      int r;
      if (n > TLS_WRITE_CHUNK) n = TLS_WRITE_CHUNK;
      /* After AGAIN the same (pointer, length) comes back next time, as
      ** mbedtls_ssl_write requires: tx_off did not move. */
      r = ob__tls_write(&conn->tls, op->sendbuf + conn->tx_off, n);
      if (r == OB__TLS_AGAIN) break;
      if (r < 0) {
        conn_fail(conn, r, conn->tls.detail);
        return;
      }
      conn->tx_off += (size_t)r;
      op->request_sent = 1;
    }
    tls_flush(conn);
    return;
  }
  if (op != NULL && !conn->writing && conn->tx_off < op->sendlen) {
    size_t n = op->sendlen - conn->tx_off;
    uint8_t* buf;
    if (n > PLAIN_WRITE_CHUNK) n = PLAIN_WRITE_CHUNK;
    /* A copy, so the op may go away while the write is in flight. */
    buf = malloc(n);
    if (buf == NULL) {
      conn_fail(conn, OB_ENOMEM, "out of memory");
      return;
    }
    memcpy(buf, op->sendbuf + conn->tx_off, n);
    conn->tx_off += n;
    op->request_sent = 1;
    write_buf(conn, buf, n);
  }
}

void ob__http_conn_start(ob__http_conn_t* conn) {
  conn->tx_off = 0;
  send_pump(conn);
}

int ob__http_conn_sent_all(const ob__http_conn_t* conn) {
  return conn->op != NULL && conn->tx_off == conn->op->sendlen &&
         !conn->writing &&
         (!conn->use_tls || ob__tls_out_len(&conn->tls) == 0);
}

/* ---- reading ------------------------------------------------------------ */

static void deliver(ob__http_conn_t* conn, const char* data, size_t len) {
  if (conn->op != NULL)
    conn->client->events->on_data(conn->op, data, len);
  else  /* bytes on an idle connection: the peer is confused, drop it */
    ob__http_conn_close(conn, 0);
}

static void peer_closed(ob__http_conn_t* conn) {
  conn_failf(conn, OB__HTTP_E_EOF, "%s closed the connection", conn->peer);
}

static void become_ready(ob__http_conn_t* conn) {
  uv_timer_stop(&conn->timer);
  conn->state = OB__CONN_READY;
  if (conn->op != NULL) conn->client->events->on_ready(conn->op);
}

static void tls_pump(ob__http_conn_t* conn) {
  char buf[16384];
  int rc;

  if (!conn->tls.handshake_done) {
    rc = ob__tls_handshake(&conn->tls);
    if (rc < 0 && rc != OB__TLS_AGAIN) {
      try_flush(conn);  /* the alert, if any; the TLS error is what counts */
      conn_fail(conn, rc, conn->tls.detail);
      return;
    }
    tls_flush(conn);
    if (rc == OB__TLS_AGAIN || conn->state == OB__CONN_CLOSING) return;
    snprintf(conn->client->stats.tls_version,
             sizeof conn->client->stats.tls_version, "%s",
             ob__tls_version(&conn->tls));
    snprintf(conn->client->stats.tls_suite,
             sizeof conn->client->stats.tls_suite, "%s",
             ob__tls_suite(&conn->tls));
    become_ready(conn);
    if (conn->state == OB__CONN_CLOSING) return;
  }
  for (;;) {
    rc = ob__tls_read(&conn->tls, buf, sizeof buf);
    if (rc == OB__TLS_AGAIN) break;
    if (rc == 0) {
      peer_closed(conn);
      return;
    }
    if (rc < 0) {
      conn_fail(conn, rc, conn->tls.detail);
      return;
    }
    deliver(conn, buf, (size_t)rc);
    if (conn->state == OB__CONN_CLOSING) return;
  }
  tls_flush(conn);
}

static void on_alloc(uv_handle_t* h, size_t hint, uv_buf_t* buf) {
  ob__http_conn_t* conn = h->data;
  (void)hint;
  *buf = uv_buf_init(conn->rbuf, sizeof conn->rbuf);
}

static void on_read(uv_stream_t* s, ssize_t nread, const uv_buf_t* buf) {
  ob__http_conn_t* conn = s->data;
  int rc;

  (void)buf;
  if (conn->state == OB__CONN_CLOSING || nread == 0) return;
  if (nread < 0) {
    if (nread == UV_EOF) {
      if (conn->use_tls) {  /* let TLS say "handshake EOF" or "closed" */
        ob__tls_feed_eof(&conn->tls);
        tls_pump(conn);
        if (conn->state != OB__CONN_CLOSING) peer_closed(conn);
        return;
      }
      peer_closed(conn);
      return;
    }
    conn_failf(conn, map_uv((int)nread), "read from %s: %s", conn->peer,
               uv_strerror((int)nread));
    return;
  }
  if (!conn->use_tls) {
    deliver(conn, conn->rbuf, (size_t)nread);
    return;
  }
  rc = ob__tls_feed(&conn->tls, conn->rbuf, (size_t)nread);
  if (rc < 0) {
    conn_fail(conn, rc, rc == OB_ENOMEM ? "out of memory" : conn->tls.detail);
    return;
  }
  tls_pump(conn);
}

/* ---- connecting --------------------------------------------------------- */

/* A failed attempt's socket is closed: go on with the next address. */
static void on_tcp_retry_closed(uv_handle_t* h) {
  ob__http_conn_t* conn = h->data;

  conn->retrying = 0;
  if (--conn->handles_open == 0) {
    conn_free(conn);
    return;
  }
  if (conn->state != OB__CONN_CLOSING) connect_next(conn);
}

static void on_connect(uv_connect_t* req, int status) {
  ob__http_conn_t* conn = req->data;
  ob__http_client_t* c = conn->client;
  int rc;

  if (status == UV_ECANCELED || conn->state == OB__CONN_CLOSING) return;
  if (status < 0) {
    if (conn->next_addr < conn->naddr) {
      /* The socket is spent; close it and try the next address. */
      conn->retrying = 1;
      conn->tcp_init = 0;
      uv_close((uv_handle_t*)&conn->tcp, on_tcp_retry_closed);
      return;
    }
    conn_failf(conn, status == UV_ETIMEDOUT ? OB__HTTP_E_CONNECT_TIMEOUT
                                            : map_uv(status),
               "connect to %s (%s): %s", conn->peer, conn->host,
               uv_strerror(status));
    return;
  }
  (void)uv_tcp_nodelay(&conn->tcp, 1);
  rc = uv_read_start((uv_stream_t*)&conn->tcp, on_alloc, on_read);
  if (rc < 0) {
    conn_failf(conn, map_uv(rc), "read from %s: %s", conn->peer,
               uv_strerror(rc));
    return;
  }
  if (!conn->use_tls) {
    become_ready(conn);
    return;
  }
  conn->tls_init = 1;
  rc = ob__tls_init(&conn->tls, &c->tls, conn->host, 0);
  if (rc < 0) {
    conn_fail(conn, rc, conn->tls.detail);
    return;
  }
  conn->state = OB__CONN_HANDSHAKE;
  tls_pump(conn);  /* the ClientHello goes out */
}

static void connect_addr(ob__http_conn_t* conn, const struct sockaddr* sa) {
  ob__http_client_t* c = conn->client;
  char ip[48] = "?";
  int rc;

  if (sa->sa_family == AF_INET6) {
    uv_ip6_name((const struct sockaddr_in6*)sa, ip, sizeof ip);
    snprintf(conn->peer, sizeof conn->peer, "[%s]:%u", ip,
             (unsigned)conn->port);
  } else {
    uv_ip4_name((const struct sockaddr_in*)sa, ip, sizeof ip);
    snprintf(conn->peer, sizeof conn->peer, "%s:%u", ip, (unsigned)conn->port);
  }
  rc = uv_tcp_init(c->loop, &conn->tcp);
  if (rc < 0) {
    conn_failf(conn, map_uv(rc), "socket for %s: %s", conn->peer,
               uv_strerror(rc));
    return;
  }
  conn->tcp.data = conn;
  conn->tcp_init = 1;
  conn->handles_open++;
  conn->state = OB__CONN_CONNECTING;
  conn->connect_req.data = conn;
  rc = uv_tcp_connect(&conn->connect_req, &conn->tcp, sa, on_connect);
  if (rc < 0) {
    if (conn->next_addr < conn->naddr) {
      conn->retrying = 1;
      conn->tcp_init = 0;
      uv_close((uv_handle_t*)&conn->tcp, on_tcp_retry_closed);
      return;
    }
    conn_failf(conn, map_uv(rc), "connect to %s (%s): %s", conn->peer,
               conn->host, uv_strerror(rc));
  }
}

/* The next address to try; called again after a failed attempt's socket
** has closed (on_tcp_retry_closed). */
static void connect_next(ob__http_conn_t* conn) {
  if (conn->next_addr < conn->naddr) {
    connect_addr(conn, (const struct sockaddr*)&conn->addr[conn->next_addr++]);
    return;
  }
  conn_failf(conn, OB__HTTP_E_DNS, "no usable address for %s", conn->host);
}

/* The kept addresses of host:port, or NULL (none, or older than the TTL). */
static ob__http_dns_t* dns_find(ob__http_client_t* c, const char* host,
                                uint16_t port) {
  uint64_t now = uv_now(c->loop);
  for (int i = 0; i < OB__HTTP_DNS_SLOTS; i++) {
    ob__http_dns_t* d = &c->dns[i];
    if (d->at != 0 && d->port == port && strcmp(d->host, host) == 0)
      return now - d->at < c->cfg.dns_ttl_ms ? d : NULL;
  }
  return NULL;
}

/* Keep a lookup's addresses, in the slot of the same name or the oldest. */
static void dns_keep(ob__http_client_t* c, const ob__http_conn_t* conn) {
  ob__http_dns_t* d = &c->dns[0];
  if (c->cfg.dns_ttl_ms == 0 || conn->naddr == 0) return;
  for (int i = 0; i < OB__HTTP_DNS_SLOTS; i++) {
    ob__http_dns_t* s = &c->dns[i];
    if (s->at != 0 && s->port == conn->port &&
        strcmp(s->host, conn->host) == 0) {
      d = s;
      break;
    }
    if (s->at < d->at) d = s;
  }
  memcpy(d->host, conn->host, sizeof d->host);
  d->port = conn->port;
  d->at = uv_now(c->loop);
  if (d->at == 0) d->at = 1;
  memcpy(d->addr, conn->addr, sizeof d->addr);
  d->naddr = conn->naddr;
}

static void on_gai(uv_getaddrinfo_t* req, int status, struct addrinfo* res) {
  struct ob__http_gai_s* gai = req->data;
  ob__http_client_t* c = gai->client;
  ob__http_conn_t* conn = gai->conn;

  c->ngai--;
  free(gai);
  if (conn == NULL) {  /* abandoned */
    if (res != NULL) uv_freeaddrinfo(res);
    c->events->maybe_closed(c);
    return;
  }
  conn->gai = NULL;
  if (status < 0) {
    conn_failf(conn, OB__HTTP_E_DNS, "cannot resolve %s: %s", conn->host,
               uv_strerror(status));
    return;
  }
  for (struct addrinfo* ai = res; ai != NULL && conn->naddr < OB__HTTP_MAX_ADDRS;
       ai = ai->ai_next)
    if ((ai->ai_family == AF_INET || ai->ai_family == AF_INET6) &&
        ai->ai_addrlen <= sizeof conn->addr[0])
      memcpy(&conn->addr[conn->naddr++], ai->ai_addr, ai->ai_addrlen);
  uv_freeaddrinfo(res);
  dns_keep(c, conn);
  conn->state = OB__CONN_CONNECTING;
  connect_next(conn);
}

static int literal_addr(const char* s, uint16_t port,
                        struct sockaddr_storage* ss) {
  memset(ss, 0, sizeof *ss);
  if (uv_ip4_addr(s, port, (struct sockaddr_in*)ss) == 0) return 1;
  if (uv_ip6_addr(s, port, (struct sockaddr_in6*)ss) == 0) return 1;
  return 0;
}

int ob__http_conn_open(ob__http_client_t* c, ob__http_op_t* op,
                       ob__http_conn_t** out) {
  ob__http_conn_t* conn;
  const char* addr = op->url.host;
  char portstr[8];
  struct addrinfo hints;
  struct ob__http_gai_s* gai;
  int rc;

  *out = NULL;
  conn = calloc(1, sizeof *conn);
  if (conn == NULL) return OB_ENOMEM;
  conn->client = c;
  ob__hlist_init(&conn->idle_link);
  ob__hlist_push(&c->conns, &conn->link);
  c->nconns_alive++;
  c->stats.connections_opened++;
  memcpy(conn->host, op->url.host, sizeof conn->host);
  conn->port = op->url.port;
  conn->use_tls = op->url.tls;
  memcpy(conn->key, op->key, sizeof conn->key);
  conn->op = op;
  op->conn = conn;
  *out = conn;
  /* The timer first: closing is then always asynchronous. */
  uv_timer_init(c->loop, &conn->timer);
  conn->timer.data = conn;
  conn->handles_open++;
  uv_timer_start(&conn->timer, on_timer, c->cfg.connect_timeout_ms, 0);
  conn->state = OB__CONN_RESOLVING;

  for (size_t i = 0; i < c->nresolve; i++)
    if (strcmp(c->resolve[i].host, conn->host) == 0) {
      addr = c->resolve[i].addr;
      break;
    }
  if (literal_addr(addr, conn->port, &conn->addr[0])) {
    conn->naddr = 1;
    connect_next(conn);
    return 0;
  }
  {
    const ob__http_dns_t* d = dns_find(c, conn->host, conn->port);
    if (d != NULL) {
      memcpy(conn->addr, d->addr, sizeof conn->addr);
      conn->naddr = d->naddr;
      conn->state = OB__CONN_CONNECTING;
      connect_next(conn);
      return 0;
    }
  }
  gai = calloc(1, sizeof *gai);
  if (gai == NULL) {
    conn_fail(conn, OB_ENOMEM, "out of memory");
    return 0;
  }
  gai->client = c;
  gai->conn = conn;
  gai->req.data = gai;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_protocol = IPPROTO_TCP;
  snprintf(portstr, sizeof portstr, "%u", (unsigned)conn->port);
  c->stats.lookups++;
  rc = uv_getaddrinfo(c->loop, &gai->req, on_gai, conn->host, portstr, &hints);
  if (rc < 0) {
    free(gai);
    conn_failf(conn, OB__HTTP_E_DNS, "cannot resolve %s: %s", conn->host,
               uv_strerror(rc));
    return 0;
  }
  c->ngai++;
  conn->gai = gai;
  return 0;
}

/* ---- pool --------------------------------------------------------------- */

ob__http_conn_t* ob__http_pool_take(ob__http_client_t* c, const char* key) {
  for (ob__hlink_t* l = c->idle.prev; l != &c->idle; l = l->prev) {
    ob__http_conn_t* conn = OB__CONTAINER_OF(l, ob__http_conn_t, idle_link);
    if (strcmp(conn->key, key) != 0) continue;
    ob__hlist_remove(l);
    conn->idle = 0;
    c->nidle--;
    uv_timer_stop(&conn->timer);
    uv_ref((uv_handle_t*)&conn->tcp);
    uv_ref((uv_handle_t*)&conn->timer);
    return conn;
  }
  return NULL;
}

void ob__http_conn_release(ob__http_conn_t* conn, int reusable) {
  ob__http_client_t* c = conn->client;
  size_t same = 0;

  if (conn->op != NULL) {
    conn->op->conn = NULL;
    conn->op = NULL;
  }
  conn->tx_off = 0;
  if (conn->state == OB__CONN_CLOSING) return;
  if (!reusable || c->closing || conn->state != OB__CONN_READY ||
      conn->writing) {
    /* The exchange succeeded, so the TLS session is sound: say goodbye. */
    ob__http_conn_close(conn, 1);
    return;
  }
  for (ob__hlink_t* l = c->idle.next; l != &c->idle; l = l->next)
    if (strcmp(OB__CONTAINER_OF(l, ob__http_conn_t, idle_link)->key,
               conn->key) == 0)
      same++;
  if (same >= c->cfg.max_idle_per_host) {
    ob__http_conn_close(conn, 1);
    return;
  }
  conn->idle = 1;
  ob__hlist_push(&c->idle, &conn->idle_link);
  c->nidle++;
  uv_timer_start(&conn->timer, on_timer, c->cfg.idle_timeout_ms, 0);
  /* Pooled connections do not keep the loop alive (Node's agent does the
  ** same); they still read, so a server close is noticed. */
  uv_unref((uv_handle_t*)&conn->tcp);
  uv_unref((uv_handle_t*)&conn->timer);
}
