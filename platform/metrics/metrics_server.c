/* SPDX-License-Identifier: Apache-2.0 */
/* /metrics and /health over plain HTTP on the engine's loop
** (ob_metrics_enable in oncebox.h). A component: bound when the engine is
** attached, closed when it is detached. Small on purpose: one request per
** connection (Prometheus and curl both send one), answered and closed, so
** there is no keep-alive state, no body and no chunked input to parse. */
#include <arpa/inet.h>
#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "core/engine/engine_host.h"
#include "core/util/errbuf.h"
#include "core/util/health.h"
#include "core/util/prometheus.h"
#include "platform/metrics/figures.h"

#undef OB__LOG_COMPONENT
#define OB__LOG_COMPONENT "metrics"

#define HEAD_MAX 8192        /* request head; more is 431 */
#define MAX_CONNS 16         /* beyond: accepted and closed at once */
#define CONN_TIMEOUT_MS 5000 /* a client that sends nothing is dropped */

typedef struct snapshot_s {
  ob__figures_t fig;
  int64_t read_at_ms;    /* wall clock of the read; 0: none yet */
  uint64_t read_mono;    /* uv_now of the read */
} snapshot_t;

typedef struct server_s {
  ob_engine_t* e;
  ob_metrics_options_t opts;
  char listen[64];
  struct sockaddr_storage addr;
  uv_tcp_t tcp;
  int started, open_handles, nconns;
  void (*done)(void*);
  void* done_arg;
  snapshot_t snap;
  int closing;
  uv_loop_t* loop;
  struct conn_s* conns;  /* open connections, to close with the server */
} server_t;

typedef struct conn_s {
  server_t* srv;
  struct conn_s *prev, *next;
  uv_tcp_t tcp;
  uv_timer_t timer;
  uv_write_t wr;
  char head[HEAD_MAX];
  size_t len;
  char* reply;
  int open_handles;
  int answered;
} conn_t;

/* ---- the figures ---------------------------------------------------------- */

/* Refresh the database figures when they are older than stats_refresh_ms:
** the counters are always fresh, the table counts at most that often. 0,
** or -1 when no figures could ever be read. */
static int refresh(server_t* srv) {
  uint64_t now = uv_now(srv->loop);
  ob__figures_t fig;
  const ob_clock_t* clk = ob__engine_clock(srv->e);
  if (srv->snap.read_at_ms != 0 &&
      now - srv->snap.read_mono < (uint64_t)srv->opts.stats_refresh_ms)
    return 0;
  if (ob__engine_in_tx(srv->e) || ob__figures_read(srv->e, &fig) < 0) {
    /* The last good figures stay, with their own time. */
    ob__log(srv->e, OB_LOG_WARN, "metrics: cannot read the figures: %s",
            ob_errmsg(srv->e));
    return srv->snap.read_at_ms != 0 ? 0 : -1;
  }
  srv->snap.fig = fig;
  srv->snap.read_at_ms = clk->now_ms(clk->ctx);
  srv->snap.read_mono = now;
  return 0;
}

static void health_input(server_t* srv, const ob_counters_t* c,
                         ob__health_input_t* in) {
  const ob_clock_t* clk = ob__engine_clock(srv->e);
  memset(in, 0, sizeof *in);
  in->stats = &srv->snap.fig.s;
  in->counters = c;
  in->write_probe = -1;
  in->now_ms = clk->now_ms(clk->ctx);
  in->relay_failing_ms = srv->opts.relay_failing_ms;
  in->write_error_ms = srv->opts.write_error_ms;
  in->effects_unknown_max = srv->opts.effects_unknown_max;
  in->period_ms = srv->opts.period_ms;
  in->failed_max = srv->opts.failed_max;
  in->retried_max = srv->opts.retried_max;
  in->failed_in_period = ob__engine_recent_sum(srv->e, OB__RECENT_FAILED);
  in->retried_in_period = ob__engine_recent_sum(srv->e, OB__RECENT_RETRIED);
}

/* ---- HTTP ----------------------------------------------------------------- */

static void conn_closed(uv_handle_t* h) {
  conn_t* c = h->data;
  server_t* srv = c->srv;
  if (--c->open_handles > 0) return;
  if (c->prev) c->prev->next = c->next;
  else srv->conns = c->next;
  if (c->next) c->next->prev = c->prev;
  free(c->reply);
  free(c);
  srv->nconns--;
  if (srv->closing && srv->nconns == 0 && srv->open_handles == 0 && srv->done)
    srv->done(srv->done_arg);
}

static void conn_close(conn_t* c) {
  if (!uv_is_closing((uv_handle_t*)&c->tcp))
    uv_close((uv_handle_t*)&c->tcp, conn_closed);
  if (!uv_is_closing((uv_handle_t*)&c->timer))
    uv_close((uv_handle_t*)&c->timer, conn_closed);
}

static void written(uv_write_t* w, int status) {
  (void)status;
  conn_close(w->data);
}

static void reply(conn_t* c, int code, const char* reason, const char* type,
                  const char* body, size_t blen, int head_only) {
  char hdr[256];
  int n;
  uv_buf_t b;
  if (c->answered) return;
  c->answered = 1;
  uv_read_stop((uv_stream_t*)&c->tcp);
  n = snprintf(hdr, sizeof hdr,
               "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
               "Cache-Control: no-store\r\nConnection: close\r\n\r\n",
               code, reason, type, blen);
  if (n < 0 || (size_t)n >= sizeof hdr ||
      (c->reply = malloc((size_t)n + (head_only ? 0 : blen))) == NULL) {
    conn_close(c);
    return;
  }
  memcpy(c->reply, hdr, (size_t)n);
  if (!head_only && blen) memcpy(c->reply + n, body, blen);
  b = uv_buf_init(c->reply, (unsigned)((size_t)n + (head_only ? 0 : blen)));
  c->wr.data = c;
  if (uv_write(&c->wr, (uv_stream_t*)&c->tcp, &b, 1, written) != 0)
    conn_close(c);
}

static void reply_text(conn_t* c, int code, const char* reason,
                       const char* text) {
  reply(c, code, reason, "text/plain; charset=utf-8", text, strlen(text), 0);
}

static void serve_metrics(conn_t* c, int head_only) {
  server_t* srv = c->srv;
  ob_counters_t cnt;
  ob__prom_input_t in;
  size_t len = 0;
  char* text;
  if (refresh(srv) < 0) {
    reply_text(c, 503, "Service Unavailable",
               "the database's figures cannot be read\n");
    return;
  }
  (void)ob_counters(srv->e, &cnt);
  memset(&in, 0, sizeof in);
  in.stats = &srv->snap.fig.s;
  in.figures = srv->snap.fig.mod;
  in.nfigures = srv->snap.fig.nmod;
  in.version = ob_version();
  in.now_ms = srv->snap.read_at_ms;
  in.counters = &cnt;
  text = ob__prom_render(&in, &len);
  if (text == NULL) {
    reply_text(c, 500, "Internal Server Error", "out of memory\n");
    return;
  }
  reply(c, 200, "OK", "text/plain; version=0.0.4; charset=utf-8", text, len,
        head_only);
  free(text);
}

static void serve_health(conn_t* c, int head_only) {
  server_t* srv = c->srv;
  ob_counters_t cnt;
  ob__health_input_t in;
  ob__health_t h;
  char* body;
  if (refresh(srv) < 0) {
    static const char unreadable[] =
        "{\"status\":\"unhealthy\",\"reasons\":[\"db_not_readable\"]}\n";
    reply(c, 503, "Service Unavailable", "application/json", unreadable,
          sizeof unreadable - 1, head_only);
    return;
  }
  (void)ob_counters(srv->e, &cnt);
  health_input(srv, &cnt, &in);
  ob__health_eval(&in, &h);
  body = ob__health_json(&in, &h);
  if (body == NULL) {
    reply_text(c, 500, "Internal Server Error", "out of memory\n");
    return;
  }
  reply(c, h.reasons ? 503 : 200, h.reasons ? "Service Unavailable" : "OK",
        "application/json", body, strlen(body), head_only);
  free(body);
}

/* The request line of a complete head: METHOD SP TARGET SP HTTP/1.x. */
static void dispatch(conn_t* c) {
  char method[8], target[256], version[16];
  char* q;
  int head_only;
  if (sscanf(c->head, "%7[A-Z] %255[^ \r\n] %15[^\r\n]", method, target,
             version) != 3 ||
      strncmp(version, "HTTP/1.", 7) != 0 || version[8] != '\0') {
    reply_text(c, 400, "Bad Request", "not an HTTP/1.x request\n");
    return;
  }
  head_only = strcmp(method, "HEAD") == 0;
  if (!head_only && strcmp(method, "GET") != 0) {
    reply_text(c, 405, "Method Not Allowed", "GET or HEAD only\n");
    return;
  }
  if ((q = strchr(target, '?')) != NULL) *q = '\0';
  if (strcmp(target, "/metrics") == 0)
    serve_metrics(c, head_only);
  else if (strcmp(target, "/health") == 0)
    serve_health(c, head_only);
  else
    reply_text(c, 404, "Not Found", "try /metrics or /health\n");
}

static void on_alloc(uv_handle_t* h, size_t hint, uv_buf_t* b) {
  conn_t* c = h->data;
  (void)hint;
  /* One byte kept for the terminating NUL. */
  *b = uv_buf_init(c->head + c->len, (unsigned)(HEAD_MAX - 1 - c->len));
}

static void on_read(uv_stream_t* s, ssize_t n, const uv_buf_t* b) {
  conn_t* c = s->data;
  (void)b;
  if (n < 0) {
    conn_close(c);
    return;
  }
  c->len += (size_t)n;
  c->head[c->len] = '\0';
  if (memchr(c->head, '\0', c->len) != NULL) {
    reply_text(c, 400, "Bad Request", "NUL in the request\n");
  } else if (strstr(c->head, "\r\n\r\n") != NULL ||
             strstr(c->head, "\n\n") != NULL) {
    dispatch(c);
  } else if (c->len >= HEAD_MAX - 1) {
    reply_text(c, 431, "Request Header Fields Too Large",
               "request head over 8 KiB\n");
  }
}

static void on_timeout(uv_timer_t* t) {
  conn_close(t->data);
}

static void on_connection(uv_stream_t* server, int status) {
  server_t* srv = server->data;
  conn_t* c;
  if (status < 0) return;
  c = calloc(1, sizeof *c);
  if (c == NULL) return;
  c->srv = srv;
  uv_tcp_init(server->loop, &c->tcp);
  uv_timer_init(server->loop, &c->timer);
  c->tcp.data = c->timer.data = c;
  c->open_handles = 2;
  srv->nconns++;
  c->next = srv->conns;
  if (srv->conns) srv->conns->prev = c;
  srv->conns = c;
  if (uv_accept(server, (uv_stream_t*)&c->tcp) != 0 || srv->closing ||
      srv->nconns > MAX_CONNS) {
    conn_close(c);
    return;
  }
  /* Neither keeps an until-idle run alive. */
  uv_unref((uv_handle_t*)&c->tcp);
  uv_unref((uv_handle_t*)&c->timer);
  uv_timer_start(&c->timer, on_timeout, CONN_TIMEOUT_MS, 0);
  if (uv_read_start((uv_stream_t*)&c->tcp, on_alloc, on_read) != 0)
    conn_close(c);
}

/* ---- the component ------------------------------------------------------- */

/* Bound and listening before libuv sees it: a start that fails leaves no
** handle to close (the component contract), only a closed descriptor. */
static int listen_socket(server_t* srv, int* fd_out) {
  const struct sockaddr* a = (const struct sockaddr*)&srv->addr;
  socklen_t alen = a->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                            : sizeof(struct sockaddr_in);
  int one = 1, err;
  int fd = socket(a->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -errno;
  /* A restart binds again at once, past the old sockets' TIME_WAIT. */
  (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(fd, a, alen) != 0 || listen(fd, 16) != 0) {
    err = errno;
    close(fd);
    return -err;
  }
  *fd_out = fd;
  return 0;
}

static int srv_start(void* self, ob_engine_t* e, struct uv_loop_s* loop) {
  server_t* srv = self;
  int fd = -1, rc;
  srv->e = e;
  srv->loop = loop;
  srv->closing = 0;
  if ((rc = listen_socket(srv, &fd)) < 0) {
    ob__log(e, OB_LOG_ERROR, "metrics: cannot listen on %s: %s", srv->listen,
            strerror(-rc));
    return ob__engine_seterr(e, OB_ENET, "metrics: cannot listen on %s: %s",
                             srv->listen, strerror(-rc));
  }
  uv_tcp_init(loop, &srv->tcp);
  srv->tcp.data = srv;
  srv->open_handles = 1;
  srv->started = 1;
  /* The handle is open from here on: it is closed with the component even
  ** if serving fails (not expected on a listening socket; said once). */
  if ((rc = uv_tcp_open(&srv->tcp, fd)) != 0) {
    close(fd);
    ob__log(e, OB_LOG_ERROR, "metrics: cannot serve on %s: %s", srv->listen,
            uv_strerror(rc));
    return 0;
  }
  if ((rc = uv_listen((uv_stream_t*)&srv->tcp, 16, on_connection)) != 0) {
    ob__log(e, OB_LOG_ERROR, "metrics: cannot serve on %s: %s", srv->listen,
            uv_strerror(rc));
    return 0;
  }
  uv_unref((uv_handle_t*)&srv->tcp);
  ob__log(e, OB_LOG_INFO, "metrics: serving /metrics and /health on http://%s",
          srv->listen);
  return 0;
}

static int srv_idle(void* self) {
  (void)self;
  return OB__IDLE_DONE;
}

static void srv_closed(uv_handle_t* h) {
  server_t* srv = h->data;
  srv->open_handles = 0;
  if (srv->nconns == 0 && srv->done) srv->done(srv->done_arg);
}

static void srv_close(void* self, void (*done)(void*), void* arg) {
  server_t* srv = self;
  srv->done = done;
  srv->done_arg = arg;
  srv->closing = 1;
  srv->started = 0;
  uv_close((uv_handle_t*)&srv->tcp, srv_closed);
  /* A scrape in flight is cut: the scraper tries again next interval. The
  ** last close callback calls done. */
  for (conn_t* c = srv->conns; c != NULL; c = c->next) conn_close(c);
}

static void srv_destroy(void* self) {
  free(self);
}

void ob_metrics_options_init(ob_metrics_options_t* o) {
  memset(o, 0, sizeof *o);
  o->stats_refresh_ms = 5000;
  o->relay_failing_ms = 300000;
  o->write_error_ms = 0;
  o->effects_unknown_max = 0;
  o->period_ms = 60000;
  o->failed_max = 5;
  o->retried_max = 5;
}

/* "HOST:PORT" / "[V6]:PORT", numeric. 0, or -1 with the reason. */
static int parse_listen(const char* s, struct sockaddr_storage* out,
                        int* loopback, char* err, size_t errlen) {
  char host[64];
  const char* colon;
  long port;
  char* end;
  size_t hn;
  if (s[0] == '[') {
    const char* close = strchr(s, ']');
    if (close == NULL || close[1] != ':')
      return ob__errbuf_set(err, errlen, -1, "metrics listen address '%s': "
                            "want [IPv6]:PORT", s);
    hn = (size_t)(close - s - 1);
    if (hn >= sizeof host) hn = sizeof host - 1;
    memcpy(host, s + 1, hn);
    host[hn] = '\0';
    colon = close + 1;
  } else {
    colon = strrchr(s, ':');
    if (colon == NULL)
      return ob__errbuf_set(err, errlen, -1, "metrics listen address '%s': "
                            "want HOST:PORT, e.g. 127.0.0.1:9464", s);
    hn = (size_t)(colon - s);
    if (hn >= sizeof host) hn = sizeof host - 1;
    memcpy(host, s, hn);
    host[hn] = '\0';
  }
  port = strtol(colon + 1, &end, 10);
  if (colon[1] == '\0' || *end != '\0' || port < 1 || port > 65535)
    return ob__errbuf_set(err, errlen, -1, "metrics listen address '%s': "
                          "the port must be 1..65535", s);
  memset(out, 0, sizeof *out);
  if (s[0] == '[') {
    struct sockaddr_in6* a = (struct sockaddr_in6*)out;
    if (uv_ip6_addr(host, (int)port, a) != 0)
      return ob__errbuf_set(err, errlen, -1, "metrics listen address '%s': "
                            "'%s' is not a numeric IPv6 address", s, host);
    *loopback = IN6_IS_ADDR_LOOPBACK(&a->sin6_addr);
  } else {
    struct sockaddr_in* a = (struct sockaddr_in*)out;
    if (inet_pton(AF_INET, host, &a->sin_addr) != 1 ||
        uv_ip4_addr(host, (int)port, a) != 0)
      return ob__errbuf_set(err, errlen, -1, "metrics listen address '%s': "
                            "'%s' is not a numeric IPv4 address (names are "
                            "not resolved)", s, host);
    *loopback = (ntohl(a->sin_addr.s_addr) >> 24) == 127;
  }
  return 0;
}

int ob_metrics_enable(ob_engine_t* e, const ob_metrics_options_t* o,
                      char* errbuf, size_t errlen) {
  ob__component_t c;
  server_t* srv;
  int loopback = 0, rc;
  if (errbuf && errlen) errbuf[0] = '\0';
  if (e == NULL || o == NULL || o->listen == NULL)
    return ob__errbuf_set(errbuf, errlen, OB_EINVAL,
                          "metrics: a listen address is required");
  if (ob__engine_has_component(e, "metrics"))
    return ob__errbuf_set(errbuf, errlen, OB_EEXIST,
                          "metrics: already enabled");
  if (ob__engine_runner(e) != NULL)
    return ob__errbuf_set(errbuf, errlen, OB_ESTATE,
                          "metrics: enable before attaching");
  if (o->stats_refresh_ms < 100 || o->relay_failing_ms < 0 ||
      o->write_error_ms < 0 || o->effects_unknown_max < 0 || o->period_ms < 0)
    return ob__errbuf_set(errbuf, errlen, OB_EINVAL,
                          "metrics: stats_refresh_ms must be at least 100 and "
                          "the health thresholds and period non-negative");
  srv = calloc(1, sizeof *srv);
  if (srv == NULL) return OB_ENOMEM;
  srv->opts = *o;
  if (parse_listen(o->listen, &srv->addr, &loopback, errbuf, errlen) < 0) {
    free(srv);
    return OB_EINVAL;
  }
  if (!loopback && !o->allow_remote) {
    free(srv);
    return ob__errbuf_set(errbuf, errlen, OB_EINVAL,
                          "metrics: %s is not a loopback address; the "
                          "figures tell the shop's business to anyone who "
                          "can reach it (allow it explicitly to serve them "
                          "beyond this host)", o->listen);
  }
  snprintf(srv->listen, sizeof srv->listen, "%s", o->listen);
  srv->opts.listen = srv->listen;
  srv->e = e;
  memset(&c, 0, sizeof c);
  c.name = "metrics";
  c.self = srv;
  c.start = srv_start;
  c.idle = srv_idle;
  c.close = srv_close;
  c.destroy = srv_destroy;
  rc = ob__engine_add_component(e, &c);
  if (rc < 0) free(srv);
  else if (o->period_ms > 0) ob__engine_recent_enable(e, o->period_ms);
  return rc;
}
