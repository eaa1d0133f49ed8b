/* SPDX-License-Identifier: Apache-2.0 */
/*
** The simulated network: the transport of platform/http's test seam
** (ob__http_set_transport). A request reaches its host's service at once
** (the server acts when it arrives); the answer, or the failure, comes back
** after a simulated latency, on a libuv timer of the caller's loop, so the
** client's callback runs later, from the loop, as over a socket. The world
** sets the link: a partition refuses connections, a loss drops the answer
** after the server acted (request_sent 1), a 5xx answers without acting,
** latencies past the client's deadline are answered too late (the client's
** own deadline fires and cancels). A service may hold a request (SQS's
** long poll): it is asked again when the hold ends or when something
** changed at the server (sim_net_kick), and answers then. While the process
** is dead (sim_net_set_dead) nothing leaves it and nothing reaches it.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <uv.h>

#include "platform/http/http_client.h"
#include "tests/sim/sim.h"

typedef struct route_s {
  char host[128];
  sim_service_fn fn;
  void* ctx;
} route_t;

typedef struct pending_s {
  uv_timer_t timer;
  ob__http_xfer_t* xfer;
  char* raw;
  size_t len;
  int err;
  int sent;
  unsigned id;
  int64_t lat;        /* the answer's latency */
  /* The request, kept while its server holds it (hold 1). */
  int hold;
  int64_t hold_ms;
  int64_t since;      /* when the server first saw it */
  route_t* route;
  char *method, *url, *target, *body;
  char idem[128], date[32];
  size_t body_len;
  struct pending_s* next;
} pending_t;

static route_t g_routes[4];
static size_t g_nroutes;
static pending_t* g_pending;
static int g_partition;
static int64_t g_lat_min = 5, g_lat_max = 60;
static unsigned g_lost, g_err;
static sim_rng_t g_rng;
static sim_net_stats_t g_stats;
static unsigned g_next_id;
static int g_dead;

void sim_net_seed(uint64_t seed) {
  sim_rng_init(&g_rng, seed, 5);
  memset(&g_stats, 0, sizeof g_stats);
  g_partition = 0;
  g_lat_min = 5;
  g_lat_max = 60;
  g_lost = g_err = 0;
  g_next_id = 0;
  g_nroutes = 0;
  g_dead = 0;
}

void sim_net_set_dead(int dead) { g_dead = dead; }

void sim_net_route(const char* host, sim_service_fn fn, void* ctx) {
  if (g_nroutes == sizeof g_routes / sizeof g_routes[0]) return;
  snprintf(g_routes[g_nroutes].host, sizeof g_routes[0].host, "%s", host);
  g_routes[g_nroutes].fn = fn;
  g_routes[g_nroutes].ctx = ctx;
  g_nroutes++;
}

void sim_net_set_partition(int on) { g_partition = on; }
void sim_net_set_latency(int64_t min_ms, int64_t max_ms) {
  g_lat_min = min_ms;
  g_lat_max = max_ms < min_ms ? min_ms : max_ms;
}
void sim_net_set_loss(unsigned lost, unsigned err) {
  g_lost = lost;
  g_err = err;
}
void sim_net_stats(sim_net_stats_t* s) { *s = g_stats; }

static void unlink_pending(pending_t* p) {
  for (pending_t** pp = &g_pending; *pp; pp = &(*pp)->next)
    if (*pp == p) {
      *pp = p->next;
      return;
    }
}

static void on_closed(uv_handle_t* h) {
  pending_t* p = h->data;
  free(p->raw);
  free(p->method);
  free(p->url);
  free(p->target);
  free(p->body);
  free(p);
}

static const char* header(const ob__http_xfer_info_t* in, const char* name) {
  for (size_t i = 0; i < in->nheaders; i++)
    if (strcasecmp(in->headers[i].name, name) == 0) return in->headers[i].value;
  return "";
}

/* "https://host[:port]/..." -> host */
static void host_of(const char* url, char* out, size_t n) {
  const char* p = strstr(url, "://");
  size_t k = 0;
  p = p ? p + 3 : url;
  while (p[k] && p[k] != '/' && p[k] != ':' && k + 1 < n) {
    out[k] = p[k];
    k++;
  }
  out[k] = '\0';
}

static char* http_date(char* buf, size_t n) {
  time_t t = (time_t)(sim_true_ms() / 1000);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(buf, n, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  return buf;
}

static char* render(const sim_http_res_t* r, unsigned id, size_t* len) {
  char date[64];
  char head[768];
  int hn = snprintf(head, sizeof head,
                    "HTTP/1.1 %d %s\r\nContent-Type: application/x-amz-json-1.0"
                    "\r\nx-amzn-RequestId: sim-%u\r\nDate: %s\r\n%s%s"
                    "Content-Length: %zu\r\n\r\n",
                    r->status, r->status < 300 ? "OK" : "Error", id,
                    http_date(date, sizeof date), r->header,
                    r->header[0] ? "\r\n" : "", r->body_len);
  char* raw = malloc((size_t)hn + r->body_len);
  if (raw == NULL) return NULL;
  memcpy(raw, head, (size_t)hn);
  if (r->body_len) memcpy(raw + hn, r->body, r->body_len);
  *len = (size_t)hn + r->body_len;
  return raw;
}

static uint64_t fnv(const void* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) {
    h ^= ((const unsigned char*)p)[i];
    h *= 1099511628211ull;
  }
  return h;
}

/* The server acts on the request: an answer (raw, or a loss), or a hold. */
static void serve(pending_t* p) {
  sim_http_req_t rq;
  sim_http_res_t r;
  memset(&r, 0, sizeof r);
  rq.method = p->method;
  rq.url = p->url;
  rq.target = p->target;
  rq.idem_key = p->idem;
  rq.amz_date = p->date;
  rq.body = p->body;
  rq.body_len = p->body_len;
  rq.held_ms = sim_mono_ms() - p->since;
  p->hold = 0;
  if (p->route->fn(p->route->ctx, &rq, &r) < 0) {
    free(r.body);
    memset(&r, 0, sizeof r);
    r.status = 500;
  }
  if (r.status == 0 && r.hold_ms > 0) {
    free(r.body);
    p->hold = 1;
    p->hold_ms = r.hold_ms;
    return;
  }
  sim_trace("net %u served %d body %zu %016llx", p->id, r.status, r.body_len,
            (unsigned long long)fnv(r.body ? r.body : "", r.body_len));
  if (g_lost && sim_rng_chance(&g_rng, g_lost)) {
    g_stats.lost++;
    p->err = OB__HTTP_E_RESET;
    p->sent = 1;
  } else {
    p->raw = render(&r, p->id, &p->len);
    if (p->raw == NULL) {
      p->err = OB__HTTP_E_IO;
      p->sent = 1;
    }
  }
  free(r.body);
}

static void on_timer(uv_timer_t* t) {
  pending_t* p = t->data;
  if (p->hold && !g_dead) {
    /* The hold ended, or the server changed: ask it again. */
    serve(p);
    uv_timer_start(&p->timer, on_timer,
                   (uint64_t)(p->hold ? p->hold_ms : p->lat), 0);
    return;
  }
  unlink_pending(p);
  sim_activity();
  if (g_dead && (p->hold || p->raw != NULL)) {
    /* The process died meanwhile: nothing reaches it. */
    free(p->raw);
    p->raw = NULL;
    p->hold = 0;
    p->err = OB__HTTP_E_RESET;
    p->sent = 1;
  }
  if (p->raw != NULL) {
    sim_trace("net %u answer %zu bytes", p->id, p->len);
    ob__http_xfer_feed(p->xfer, p->raw, p->len);
  } else {
    sim_trace("net %u fail %d sent %d", p->id, p->err, p->sent);
    ob__http_xfer_fail(p->xfer, p->err, p->sent,
                       p->err == OB__HTTP_E_CONNECT
                           ? "simulated partition: connection refused"
                           : "simulated loss: connection reset after the "
                             "request was sent");
  }
  uv_close((uv_handle_t*)&p->timer, on_closed);
}

void sim_net_kick(void) {
  for (pending_t* p = g_pending; p; p = p->next)
    if (p->hold) uv_timer_start(&p->timer, on_timer, 0, 0);
}

static void x_cancel(void* ctx, ob__http_xfer_t* xfer) {
  (void)ctx;
  for (pending_t* p = g_pending; p; p = p->next)
    if (p->xfer == xfer) {
      unlink_pending(p);
      sim_trace("net %u canceled by the client", p->id);
      uv_timer_stop(&p->timer);
      uv_close((uv_handle_t*)&p->timer, on_closed);
      return;
    }
}

static char* dup_or_empty(const char* s, size_t n) {
  char* d = malloc(n + 1);
  if (d == NULL) return NULL;
  if (n) memcpy(d, s, n);
  d[n] = '\0';
  return d;
}

static int x_start(void* ctx, ob__http_xfer_t* xfer,
                   const ob__http_xfer_info_t* in) {
  char host[128];
  route_t* route = NULL;
  pending_t* p;
  (void)ctx;
  p = calloc(1, sizeof *p);
  if (p == NULL) return OB__HTTP_E_IO;
  p->xfer = xfer;
  p->id = ++g_next_id;
  sim_activity();
  g_stats.requests++;
  host_of(in->url, host, sizeof host);
  for (size_t i = 0; i < g_nroutes; i++)
    if (strcasecmp(g_routes[i].host, host) == 0) route = &g_routes[i];
  sim_trace("net %u %s %s %s body %zu %016llx", p->id, in->method, host,
            header(in, "X-Amz-Target"), in->body_len,
            (unsigned long long)fnv(in->body, in->body_len));
  p->lat = g_lat_min + (int64_t)sim_rng_below(
                           &g_rng, (uint64_t)(g_lat_max - g_lat_min + 1));
  if (g_dead || g_partition || route == NULL) {
    g_stats.refused++;
    p->err = OB__HTTP_E_CONNECT;
    p->lat = 1 + p->lat / 4;
  } else if (g_err && sim_rng_chance(&g_rng, g_err)) {
    sim_http_res_t r;
    memset(&r, 0, sizeof r);
    g_stats.errors_5xx++;
    r.status = 500;
    r.body = (char*)"{\"__type\":\"com.amazon.coral.service#InternalFailure\"}";
    r.body_len = strlen(r.body);
    snprintf(r.header, sizeof r.header,
             "x-amzn-query-error: InternalFailure;Receiver");
    p->raw = render(&r, p->id, &p->len);
  } else {
    const char* target = header(in, "X-Amz-Target");
    const char* idem = header(in, "Idempotency-Key");
    const char* date = header(in, "X-Amz-Date");
    p->route = route;
    p->since = sim_mono_ms();
    p->method = dup_or_empty(in->method, strlen(in->method));
    p->url = dup_or_empty(in->url, strlen(in->url));
    p->target = dup_or_empty(target, strlen(target));
    snprintf(p->idem, sizeof p->idem, "%s", idem);
    snprintf(p->date, sizeof p->date, "%s", date);
    p->body = dup_or_empty(in->body ? in->body : "", in->body_len);
    p->body_len = in->body_len;
    if (p->method == NULL || p->url == NULL || p->target == NULL ||
        p->body == NULL) {
      p->route = NULL;
      p->err = OB__HTTP_E_IO;
    } else {
      serve(p);
    }
  }
  if ((uint64_t)p->lat >= in->timeout_ms) g_stats.slow++;
  uv_timer_init(in->loop, &p->timer);
  p->timer.data = p;
  uv_timer_start(&p->timer, on_timer,
                 (uint64_t)(p->hold ? p->hold_ms : p->lat), 0);
  p->next = g_pending;
  g_pending = p;
  return 0;
}

static const ob__http_transport_t k_transport = {NULL, x_start, x_cancel};

void sim_net_install(void) { ob__http_set_transport(&k_transport); }
void sim_net_uninstall(void) { ob__http_set_transport(NULL); }
