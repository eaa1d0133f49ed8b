/* SPDX-License-Identifier: Apache-2.0 */
/*
** The HTTP client object and its requests: validation and serialization,
** per-request deadline, the once-only stale-connection retry, completion
** delivery on the next loop tick, and the asynchronous close.
**
** Every completion goes through the `done` list and a uv_idle handle, so a
** callback never runs inside ob__http_request/ob__http_cancel/ob__http_close,
** nor in the middle of a connection's read loop: the callback may freely
** start, cancel or close anything.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <mbedtls/platform_util.h>

#include "core/util/errbuf.h"
#include "platform/http/http_int.h"

/* The test transport (tests/sim), NULL in every real process. */
static const ob__http_transport_t* g_transport;

static void maybe_closed(ob__http_client_t* c);
static void op_on_ready(ob__http_op_t* op);
static void op_on_data(ob__http_op_t* op, const char* data, size_t len);
static void op_on_error(ob__http_op_t* op, int err, const char* detail);

/* What conn.c reports (http_int.h): conn.c calls nothing else here. */
static const ob__http_conn_events_t k_conn_events = {
    .on_ready = op_on_ready,
    .on_data = op_on_data,
    .on_error = op_on_error,
    .maybe_closed = maybe_closed,
};

void ob__http_set_transport(const ob__http_transport_t* t) {
  g_transport = t;
}

void ob__http_config_init(ob__http_config_t* cfg) {
  if (cfg == NULL) return;
  memset(cfg, 0, sizeof *cfg);
  cfg->ca_file = NULL;
  cfg->allow_plain_http = 0;
  cfg->connect_timeout_ms = 10000;
  cfg->request_timeout_ms = 30000;
  cfg->max_header_bytes = 16 * 1024;
  cfg->max_headers = 100;
  cfg->max_body_bytes = 12 * 1024 * 1024;
  cfg->max_idle_per_host = 4;
  cfg->idle_timeout_ms = 15000;
  cfg->dns_ttl_ms = 60000;
}

static void free_resolve(ob__http_client_t* c) {
  for (size_t i = 0; i < c->nresolve; i++) {
    free((char*)c->resolve[i].host);
    free((char*)c->resolve[i].addr);
  }
  free(c->resolve);
  c->resolve = NULL;
  c->nresolve = 0;
}

static int copy_resolve(ob__http_client_t* c, const ob__http_config_t* cfg) {
  struct sockaddr_in6 a6;
  struct sockaddr_in a4;

  if (cfg->nresolve == 0) return 0;
  if (cfg->resolve == NULL) return OB_EINVAL;
  c->resolve = calloc(cfg->nresolve, sizeof *c->resolve);
  if (c->resolve == NULL) return OB_ENOMEM;
  for (size_t i = 0; i < cfg->nresolve; i++) {
    const ob__http_resolve_t* r = &cfg->resolve[i];
    char* host;
    if (r->host == NULL || r->addr == NULL || r->host[0] == '\0' ||
        strlen(r->host) > OB__HTTP_HOST_MAX)
      return OB_EINVAL;
    if (uv_ip4_addr(r->addr, 0, &a4) != 0 && uv_ip6_addr(r->addr, 0, &a6) != 0)
      return OB_EINVAL;
    host = strdup(r->host);
    c->resolve[i].host = host;
    c->resolve[i].addr = strdup(r->addr);
    c->nresolve = i + 1;
    if (host == NULL || c->resolve[i].addr == NULL) return OB_ENOMEM;
    for (char* h = host; *h; h++)
      if (*h >= 'A' && *h <= 'Z') *h = (char)(*h - 'A' + 'a');
  }
  return 0;
}

int ob__http_client_open(ob__http_client_t** out, uv_loop_t* loop,
                        const ob__http_config_t* cfg, char* errbuf,
                        size_t errlen) {
  ob__http_client_t* c = NULL;
  int rc;

  if (out != NULL) *out = NULL;
  if (out == NULL || loop == NULL || cfg == NULL) {
    return ob__errbuf_set(errbuf, errlen, OB_EINVAL, "NULL argument");
  }
  if (cfg->connect_timeout_ms == 0 || cfg->request_timeout_ms == 0 ||
      cfg->max_header_bytes == 0 || cfg->max_headers == 0 ||
      cfg->max_body_bytes == 0 || cfg->max_body_bytes >= SIZE_MAX / 2 ||
      cfg->idle_timeout_ms == 0) {
    return ob__errbuf_set(errbuf, errlen, OB_EINVAL,
                          "zero timeout or limit in the HTTP config");
  }
  c = calloc(1, sizeof *c);
  if (c == NULL) {
    return ob__errbuf_set(errbuf, errlen, OB_ENOMEM, "out of memory");
  }
  c->loop = loop;
  c->events = &k_conn_events;
  c->cfg = *cfg;
  c->cfg.ca_file = NULL;  /* not kept: used once, below */
  c->cfg.resolve = NULL;
  c->cfg.nresolve = 0;
  rc = copy_resolve(c, cfg);
  if (rc < 0) {
    ob__errbuf_set(errbuf, errlen, 0, "%s",
                   rc == OB_ENOMEM
                       ? "out of memory"
                       : "resolve entry needs a host and an IP literal");
    goto fail;
  }
  /* No sockets under the test transport, so no TLS either. */
  c->simulated = g_transport != NULL;
  rc = c->simulated ? 0 : ob__tls_conf_init(&c->tls, cfg->ca_file, errbuf,
                                            errlen);
  if (rc < 0) goto fail;  /* freed itself; loud detail in errbuf */
  ob__hlist_init(&c->ops);
  ob__hlist_init(&c->done);
  ob__hlist_init(&c->conns);
  ob__hlist_init(&c->idle);
  uv_idle_init(loop, &c->defer);  /* cannot fail */
  c->defer.data = c;
  *out = c;
  return 0;

fail:
  free_resolve(c);
  free(c);
  return rc;
}

/* ---- completion ----------------------------------------------------------- */

/* The serialized request may carry credentials (an Authorization header):
** wiped before it is freed. */
static void free_sendbuf(ob__http_op_t* op) {
  if (op->sendbuf == NULL) return;
  mbedtls_platform_zeroize(op->sendbuf, op->sendlen);
  free(op->sendbuf);
  op->sendbuf = NULL;
}

static void on_op_closed(uv_handle_t* h) {
  ob__http_op_t* op = h->data;
  ob__http_client_t* c = op->client;

  free(op);
  c->nops_alive--;
  maybe_closed(c);
}

static void deliver(ob__http_op_t* op) {
  ob__http_response_t res;
  ob__http_req_t* req = op->req;

  memset(&res, 0, sizeof res);
  if (ob__http_parser_response(&op->parser, &res) != 0 && op->result == 0) {
    op->result = OB_ENOMEM;
    snprintf(op->detail, sizeof op->detail, "out of memory");
  }
  res.detail = op->detail;
  res.reused = op->reused;
  res.request_sent = op->request_sent;
  req->op_ = NULL;  /* the callback may reuse req at once */
  op->cb(req, op->result, &res);
  ob__http_parser_free(&op->parser);
  free_sendbuf(op);
  uv_close((uv_handle_t*)&op->deadline, on_op_closed);
}

static void on_defer(uv_idle_t* h) {
  ob__http_client_t* c = h->data;
  ob__hlink_t batch;

  /* Only what is done now; completions queued by these callbacks wait for
  ** the next tick. */
  ob__hlist_init(&batch);
  while (!ob__hlist_empty(&c->done)) {
    ob__hlink_t* l = c->done.next;
    ob__hlist_remove(l);
    ob__hlist_push(&batch, l);
  }
  uv_idle_stop(&c->defer);
  while (!ob__hlist_empty(&batch)) {
    ob__hlink_t* l = batch.next;
    ob__hlist_remove(l);
    deliver(OB__CONTAINER_OF(l, ob__http_op_t, link));
  }
  maybe_closed(c);
}

/* Record the result and queue the callback. Releases the connection: to the
** pool if the exchange left it clean (reusable), else closed. */
static void op_complete(ob__http_op_t* op, int err, const char* detail,
                        int reusable) {
  ob__http_client_t* c = op->client;
  ob__http_conn_t* conn = op->conn;

  if (op->state != OB__OP_ACTIVE) return;
  op->state = OB__OP_DONE;
  if (op->xfer) {  /* deadline, cancel or close: the transport lets go */
    op->xfer = 0;
    if (g_transport != NULL) g_transport->cancel(g_transport->ctx,
                                                 (ob__http_xfer_t*)op);
  }
  op->result = err;
  snprintf(op->detail, sizeof op->detail, "%s", detail ? detail : "");
  uv_timer_stop(&op->deadline);
  if (conn != NULL) {
    op->conn = NULL;
    conn->op = NULL;
    if (err == 0)
      ob__http_conn_release(conn, reusable);
    else
      ob__http_conn_close(conn, 0);
  }
  ob__hlist_remove(&op->link);
  ob__hlist_push(&c->done, &op->link);
  uv_idle_start(&c->defer, on_defer);
}

static void op_start(ob__http_op_t* op) {
  ob__http_client_t* c = op->client;
  ob__http_conn_t* conn = NULL;
  int rc;

  if (!op->fresh_only) conn = ob__http_pool_take(c, op->key);
  if (conn != NULL) {
    op->reused = 1;
    c->stats.connections_reused++;
    conn->op = op;
    op->conn = conn;
    ob__http_conn_start(conn);
    return;
  }
  op->reused = 0;
  rc = ob__http_conn_open(c, op, &conn);
  if (rc < 0) op_complete(op, rc, "out of memory", 0);
}

/* ---- proxies ------------------------------------------------------------------ */

/* The variables curl honours, in its order of precedence for https URLs,
** then the http ones (plain http:// is for local emulators only). Each
** note is a static sentence: no buffer, nothing to free, any thread. The
** value is never quoted (it may hold proxy credentials). */
#define OB__PROXY_NOTE(var)                                                  \
  var " is set, but oncebox's HTTP client does not use proxies: it "         \
      "connects directly to SQS and to the payment provider; where only a "   \
      "proxy can reach them, connections will fail (see docs/security.md "    \
      "\"Proxies\")"
static const struct {
  const char* var;
  const char* note;
} k_proxy_vars[] = {
    {"HTTPS_PROXY", OB__PROXY_NOTE("HTTPS_PROXY")},
    {"https_proxy", OB__PROXY_NOTE("https_proxy")},
    {"ALL_PROXY", OB__PROXY_NOTE("ALL_PROXY")},
    {"all_proxy", OB__PROXY_NOTE("all_proxy")},
    {"HTTP_PROXY", OB__PROXY_NOTE("HTTP_PROXY")},
    {"http_proxy", OB__PROXY_NOTE("http_proxy")},
};
#undef OB__PROXY_NOTE

/* Index of the first proxy variable set (non-empty), or -1. NO_PROXY=*
** (or no_proxy=*) exempts every host, which is what happens anyway. */
static int proxy_index(void) {
  const char* np = getenv("NO_PROXY");
  if (np == NULL || np[0] == '\0') np = getenv("no_proxy");
  if (np != NULL && strcmp(np, "*") == 0) return -1;
  for (size_t i = 0; i < sizeof k_proxy_vars / sizeof k_proxy_vars[0]; i++) {
    const char* v = getenv(k_proxy_vars[i].var);
    if (v != NULL && v[0] != '\0') return (int)i;
  }
  return -1;
}

const char* ob__http_proxy_note(void) {
  int i = proxy_index();
  return i < 0 ? NULL : k_proxy_vars[i].note;
}

/* ---- events from the connection ---------------------------------------- */

static void op_on_ready(ob__http_op_t* op) {
  if (op->conn != NULL) ob__http_conn_start(op->conn);
}

static void op_on_data(ob__http_op_t* op, const char* data, size_t len) {
  size_t used = 0;
  int rc;
  int reusable;

  if (op->state != OB__OP_ACTIVE) return;
  rc = ob__http_parser_feed(&op->parser, data, len, &used);
  if (rc == 0) return;
  if (rc < 0) {
    op_complete(op, rc, op->parser.detail, 0);
    return;
  }
  /* Reuse only a connection that is provably between messages: the server
  ** agreed, sent nothing extra, and got our whole request. */
  reusable = op->parser.keep_alive && used == len && op->conn != NULL &&
             ob__http_conn_sent_all(op->conn);
  op_complete(op, 0, "", reusable);
}

static void op_on_error(ob__http_op_t* op, int err, const char* detail) {
  ob__http_client_t* c = op->client;
  char buf[OB__HTTP_DETAIL];

  if (op->state != OB__OP_ACTIVE) return;
  if (err == OB__HTTP_E_EOF && op->parser.started) {
    /* A body delimited by the close is complete now; anything else is a
    ** truncated response. */
    int rc = ob__http_parser_eof(&op->parser);
    if (rc == 1)
      op_complete(op, 0, "", 0);
    else
      op_complete(op, rc, op->parser.detail, 0);
    return;
  }
  if (op->reused && !op->parser.started &&
      (err == OB__HTTP_E_EOF || err == OB__HTTP_E_RESET || err == OB__HTTP_E_IO)) {
    /* The pooled connection was dead (the server's idle close raced us). */
    if (op->idempotent && !op->retried) {
      ob__http_limits_t lim = op->parser.lim;
      int head = op->parser.head_request;
      op->retried = 1;
      op->fresh_only = 1;
      c->stats.retries++;
      ob__http_parser_free(&op->parser);
      ob__http_parser_init(&op->parser, &lim, head);
      op_start(op);
      return;
    }
    snprintf(buf, sizeof buf,
             "%.200s; request not resent (not idempotent): the server may "
             "have received it",
             detail ? detail : "");
    op_complete(op, OB__HTTP_E_STALE, buf, 0);
    return;
  }
  if (err == OB__HTTP_E_DNS || err == OB__HTTP_E_CONNECT ||
      err == OB__HTTP_E_CONNECT_TIMEOUT) {
    /* The failure a direct connection gets where only a proxy gets out. */
    int pi = proxy_index();
    if (pi >= 0) {
      snprintf(buf, sizeof buf,
               "%.360s (note: %s is set, but this client does not use "
               "proxies and connected directly)",
               detail ? detail : "", k_proxy_vars[pi].var);
      op_complete(op, err, buf, 0);
      return;
    }
  }
  if (err == OB__HTTP_E_EOF && !op->parser.started) {
    snprintf(buf, sizeof buf, "%.200s before any response byte",
             detail ? detail : "connection closed");
    op_complete(op, err, buf, 0);
    return;
  }
  op_complete(op, err, detail, 0);
}

static void on_deadline(uv_timer_t* t) {
  ob__http_op_t* op = t->data;
  char buf[OB__HTTP_DETAIL];
  const char* stage = "waiting for the response";

  if (op->conn != NULL && op->conn->state < OB__CONN_READY)
    stage = "while connecting";
  else if (op->parser.headers_done)
    stage = "while reading the body";
  else if (op->parser.started)
    stage = "while reading the header";
  snprintf(buf, sizeof buf, "no complete response from %s:%u within %llu ms (%s)",
           op->url.host, (unsigned)op->url.port,
           (unsigned long long)op->timeout_ms, stage);
  op_complete(op, OB__HTTP_E_DEADLINE, buf, 0);
}

/* ---- request construction ----------------------------------------------- */

static int tchar(int ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
         (ch >= '0' && ch <= '9') || (ch != 0 && strchr("!#$%&'*+-.^_`|~", ch));
}

static int token_ok(const char* s) {
  if (s == NULL || *s == '\0') return 0;
  for (; *s; s++)
    if (!tchar((unsigned char)*s)) return 0;
  return 1;
}

/* No CR/LF/NUL (header injection) and no other controls except HTAB. */
static int value_ok(const char* s) {
  if (s == NULL) return 0;
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if ((ch < 0x20 && ch != '\t') || ch == 0x7f) return 0;
  }
  return 1;
}

/* Framing headers are ours: a caller-set one could desynchronize the
** connection (request smuggling) or the pool. */
static int reserved_header(const char* name) {
  return strcasecmp(name, "host") == 0 ||
         strcasecmp(name, "content-length") == 0 ||
         strcasecmp(name, "transfer-encoding") == 0 ||
         strcasecmp(name, "connection") == 0;
}

static int is_idempotent(const char* m) {
  static const char* const k[] = {"GET", "HEAD", "OPTIONS", "TRACE", "PUT",
                                  "DELETE"};
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
    if (strcmp(m, k[i]) == 0) return 1;
  return 0;
}

static char* put(char* p, const char* s, size_t n) {
  memcpy(p, s, n);
  return p + n;
}

static int build_request(ob__http_op_t* op, const ob__http_req_t* req) {
  const ob__http_url_t* u = &op->url;
  int v6 = strchr(u->host, ':') != NULL;
  int default_port = u->port == (u->tls ? 443 : 80);
  char hostport[OB__HTTP_HOST_MAX + 16];
  char cl[48] = "";
  const char* m = req->method;
  size_t need;
  char* p;
  int slash = u->target_len == 0 || u->target[0] != '/';

  if (default_port)
    snprintf(hostport, sizeof hostport, "%s%s%s", v6 ? "[" : "", u->host,
             v6 ? "]" : "");
  else
    snprintf(hostport, sizeof hostport, "%s%s%s:%u", v6 ? "[" : "", u->host,
             v6 ? "]" : "", (unsigned)u->port);
  if (req->body_len > 0 || strcmp(m, "POST") == 0 || strcmp(m, "PUT") == 0 ||
      strcmp(m, "PATCH") == 0)
    snprintf(cl, sizeof cl, "Content-Length: %zu\r\n", req->body_len);
  need = strlen(m) + 1 + (size_t)slash + u->target_len + 11 + 6 +
         strlen(hostport) + 2 + strlen(cl) + 2 + req->body_len;
  for (size_t i = 0; i < req->nheaders; i++) {
    const ob__http_header_t* h = &req->headers[i];
    if (!token_ok(h->name) || !value_ok(h->value) || reserved_header(h->name))
      return OB_EINVAL;
    need += strlen(h->name) + 2 + strlen(h->value) + 2;
  }
  op->sendbuf = malloc(need);
  if (op->sendbuf == NULL) return OB_ENOMEM;
  p = (char*)op->sendbuf;
  p = put(p, m, strlen(m));
  p = put(p, " ", 1);
  if (slash) p = put(p, "/", 1);
  p = put(p, u->target, u->target_len);
  p = put(p, " HTTP/1.1\r\n", 11);
  p = put(p, "Host: ", 6);
  p = put(p, hostport, strlen(hostport));
  p = put(p, "\r\n", 2);
  for (size_t i = 0; i < req->nheaders; i++) {
    const ob__http_header_t* h = &req->headers[i];
    p = put(p, h->name, strlen(h->name));
    p = put(p, ": ", 2);
    p = put(p, h->value, strlen(h->value));
    p = put(p, "\r\n", 2);
  }
  p = put(p, cl, strlen(cl));
  p = put(p, "\r\n", 2);
  if (req->body_len > 0) p = put(p, req->body, req->body_len);
  op->sendlen = (size_t)(p - (char*)op->sendbuf);
  return 0;
}

int ob__http_request(ob__http_client_t* c, ob__http_req_t* req, ob__http_cb cb) {
  ob__http_op_t* op;
  ob__http_limits_t lim;
  int rc;

  if (c == NULL || req == NULL || cb == NULL || req->url == NULL ||
      !token_ok(req->method) || (req->body_len > 0 && req->body == NULL) ||
      (req->nheaders > 0 && req->headers == NULL))
    return OB_EINVAL;
  if (c->closing) return OB__HTTP_E_CLOSING;
  if (req->op_ != NULL) return OB_ESTATE;
  op = calloc(1, sizeof *op);
  if (op == NULL) return OB_ENOMEM;
  rc = ob__http_url_parse(req->url, &op->url);
  if (rc < 0) goto fail;
  if (!op->url.tls && !c->cfg.allow_plain_http) {
    rc = OB__HTTP_E_PLAIN_HTTP;
    goto fail;
  }
  rc = build_request(op, req);
  if (rc < 0) goto fail;
  op->url.target = NULL;  /* pointed into the caller's string */
  op->url.target_len = 0;
  snprintf(op->key, sizeof op->key, "%s://%s:%u", op->url.tls ? "https" : "http",
           op->url.host, (unsigned)op->url.port);
  op->client = c;
  op->req = req;
  op->cb = cb;
  op->idempotent = is_idempotent(req->method);
  op->timeout_ms = req->timeout_ms ? req->timeout_ms : c->cfg.request_timeout_ms;
  lim.max_header_bytes = c->cfg.max_header_bytes;
  lim.max_headers = c->cfg.max_headers;
  lim.max_body_bytes = c->cfg.max_body_bytes;
  ob__http_parser_init(&op->parser, &lim, strcmp(req->method, "HEAD") == 0);
  uv_timer_init(c->loop, &op->deadline);  /* cannot fail */
  op->deadline.data = op;
  op->state = OB__OP_ACTIVE;
  ob__hlist_push(&c->ops, &op->link);
  c->nops_alive++;
  req->op_ = op;
  uv_timer_start(&op->deadline, on_deadline, op->timeout_ms, 0);
  if (c->simulated && g_transport != NULL) {
    ob__http_xfer_info_t info = {c->loop, req->method, req->url, req->headers,
                                 req->nheaders, req->body, req->body_len,
                                 op->timeout_ms};
    op->xfer = 1;
    rc = g_transport->start(g_transport->ctx, (ob__http_xfer_t*)op, &info);
    if (rc < 0) {
      op->xfer = 0;
      op_complete(op, rc, "refused by the test transport", 0);
    }
    return 0;
  }
  op_start(op);
  return 0;

fail:
  free_sendbuf(op);
  free(op);
  return rc;
}

int ob__http_cancel(ob__http_req_t* req) {
  ob__http_op_t* op;

  if (req == NULL || (op = req->op_) == NULL || op->state != OB__OP_ACTIVE)
    return OB_ESTATE;
  op_complete(op, OB__HTTP_E_CANCELED, "request canceled by the caller", 0);
  return 0;
}

/* ---- close ---------------------------------------------------------------- */

static void on_client_closed(uv_handle_t* h) {
  ob__http_client_t* c = h->data;

  if (c->close_cb != NULL) c->close_cb(c, c->close_arg);
  if (!c->simulated) ob__tls_conf_free(&c->tls);
  free_resolve(c);
  free(c);
}

static void maybe_closed(ob__http_client_t* c) {
  if (!c->closing || c->final_close) return;
  if (!ob__hlist_empty(&c->ops) || !ob__hlist_empty(&c->done) ||
      c->nops_alive > 0 || c->nconns_alive > 0 || c->ngai > 0)
    return;
  c->final_close = 1;
  uv_close((uv_handle_t*)&c->defer, on_client_closed);
}

void ob__http_client_close(ob__http_client_t* c, ob__http_close_cb cb,
                          void* arg) {
  if (c == NULL || c->closing) return;
  c->closing = 1;
  c->close_cb = cb;
  c->close_arg = arg;
  while (!ob__hlist_empty(&c->ops))
    op_complete(OB__CONTAINER_OF(c->ops.next, ob__http_op_t, link),
                OB__HTTP_E_CANCELED, "HTTP client closed", 0);
  for (ob__hlink_t* l = c->conns.next; l != &c->conns; l = l->next)
    ob__http_conn_close(OB__CONTAINER_OF(l, ob__http_conn_t, link), 1);
  maybe_closed(c);
}

/* ---- the test transport's answers -------------------------------------- */

void ob__http_xfer_feed(ob__http_xfer_t* xfer, const void* raw, size_t len) {
  ob__http_op_t* op = (ob__http_op_t*)xfer;
  if (op == NULL || !op->xfer || op->state != OB__OP_ACTIVE) return;
  op->xfer = 0;
  op->request_sent = 1;
  op_on_data(op, raw, len);
  if (op->state == OB__OP_ACTIVE)
    op_on_error(op, OB__HTTP_E_EOF, "connection closed");
}

void ob__http_xfer_fail(ob__http_xfer_t* xfer, int err, int request_sent,
                        const char* detail) {
  ob__http_op_t* op = (ob__http_op_t*)xfer;
  if (op == NULL || !op->xfer || op->state != OB__OP_ACTIVE) return;
  op->xfer = 0;
  op->request_sent = request_sent;
  op_on_error(op, err, detail);
}

/* ---- small queries ---------------------------------------------------------- */

const char* ob__http_header_get(const ob__http_response_t* res,
                               const char* name) {
  if (res == NULL || name == NULL) return NULL;
  for (size_t i = 0; i < res->nheaders; i++)
    if (strcasecmp(res->headers[i].name, name) == 0)
      return res->headers[i].value;
  return NULL;
}

void ob__http_client_stats(const ob__http_client_t* c, ob__http_stats_t* s) {
  if (c == NULL || s == NULL) return;
  *s = c->stats;
  s->idle_connections = c->nidle;
}
