/* SPDX-License-Identifier: Apache-2.0 */
/* The effects executor: performs a provider's fenced effects (ob_tx_effect)
** over HTTPS while the engine is attached to a loop.
**
** A round takes due effects under a lease (ob__effect_take, at most
** max_in_flight at once), makes each call or lookup outside any
** transaction, and records each answer with ob__effect_settle, which also
** re-runs the messages waiting on an effect that reached an outcome. Every
** decision (call, lookup or park; what an answer means; backoff) is core's
** (core/fence); this file only moves bytes and keeps time on the loop.
**
** Connectivity, as the relay (docs/decisions/0007-relay-failures.md): a
** request that certainly never reached the provider (connection refused,
** DNS, TLS failure) costs the effect nothing (settle records it as not
** sent) and takes the executor offline; it then probes with one effect at a
** time, with backoff and jitter, until an answer arrives;
** ob_network_changed() probes at once.
**
** Shutdown: the HTTP client's close cancels what is in flight. A canceled
** request that was not sent gives its lease back; one that may have reached
** the provider is NOT settled as an answer: its lease expires and core
** decides (repeat with the same idempotency key, look the key up, or park).
**
** Credentials: the Authorization value (ob_provider_options_t.authorization)
** is a secret. It is copied at enable, sent on every call and lookup, and
** wiped before it is freed. A 401 or 403 answer (core: the provider did
** nothing) is treated like a connectivity fault: logged at ERROR once per
** outage and probe, then one probe at a time with backoff, so wrong
** credentials do not hammer the provider. Its body is neither logged nor
** recorded (some providers echo part of the key in it).
**
** Logs name the effect key, the action and the HTTP status (and the
** provider's reason or reference); never request bodies nor header values. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <uv.h>

#include "core/fence/fence.h"
#include "core/util/errbuf.h"
#include "core/util/peer_text.h"
#include "core/util/secret.h"
#include "platform/http/http_client.h"
#include "platform/http/http_int.h"
#include "platform/loop/worker.h"

/* The component of this file's log records (ob__log). */
#undef OB__LOG_COMPONENT
#define OB__LOG_COMPONENT "effects"

/* Look again at least this often: another process may have claimed an
** effect whose message this one then handles. */
#define MAX_SLEEP_MS 60000
/* Something is due but could not be taken (in flight here, or leased by
** another process): look again after this long instead of spinning. */
#define LEASED_RETRY_MS 1000
#define MAX_IN_FLIGHT_LIMIT 64
#define MAX_TIMEOUT_MS 600000
#define CONNECT_TIMEOUT_MS 10000
/* Longest Authorization value accepted. */
#define MAX_AUTHORIZATION 8192

typedef struct executor_s executor_t;

typedef struct slot_s {
  executor_t* x;
  ob__http_req_t req;
  ob__effect_job_t job;
  int busy;       /* job is held (under its lease) */
  int in_flight;  /* a request is submitted and its callback pending */
  int probe;      /* taken while offline */
} slot_t;

struct executor_s {
  ob__worker_t w;        /* timer, link, close sequence (worker.h) */
  char* component_name;  /* "effects:<name>" */
  char* name;
  char* base_url;        /* without trailing slashes */
  char* ca_file;
  char* authorization;   /* secret: NULL, or the header value; wiped */
  int allow_http;
  int idempotency_keys;
  int64_t timeout_ms;
  int max_in_flight;

  ob__http_client_t* client;
  slot_t* slots;
  ob__effect_job_t* taken;  /* scratch for ob__effect_take */
  int in_flight;
};

#define ENGINE(x) ((x)->w.e)

static void arm(executor_t* x, int64_t delay_ms) {
  if (delay_ms > MAX_SLEEP_MS) delay_ms = MAX_SLEEP_MS;
  ob__worker_arm(&x->w, delay_ms);
}

static int closing(const executor_t* x) {
  return !ob__worker_active(&x->w);
}

/* HTTP 401/403: the provider refused the credentials (core counts it as
** not sent: nothing was done). */
static int credentials_refused(int status) {
  return status == 401 || status == 403;
}

static void slot_clear(slot_t* s) {
  if (s->busy) ob__effect_job_free(&s->job);
  memset(&s->job, 0, sizeof s->job);
  s->busy = 0;
  s->probe = 0;
}

static slot_t* free_slot(executor_t* x) {
  for (int i = 0; i < x->max_in_flight; i++)
    if (!x->slots[i].busy) return &x->slots[i];
  return NULL;
}

/* The relay (and any other component) publishes what a settled effect's
** messages just wrote to the outbox. */
static void kick_others(executor_t* x) {
  ob__worker_kick_others(&x->w);
}

static const char* action_name(const ob__effect_job_t* j) {
  return j->lookup == 2 ? "lookup by reference"
         : j->lookup    ? "lookup"
                        : "call";
}

/* Percent-encode everything outside RFC 3986's unreserved characters.
** malloc'd, NULL when out of memory. */
static char* pct_encode(const char* s) {
  static const char hex[] = "0123456789ABCDEF";
  size_t n = strlen(s);
  char* out = malloc(n * 3 + 1);
  char* p = out;
  if (out == NULL) return NULL;
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
        (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
        c == '~') {
      *p++ = (char)c;
    } else {
      *p++ = '%';
      *p++ = hex[c >> 4];
      *p++ = hex[c & 15];
    }
  }
  *p = '\0';
  return out;
}

/* base_url + a + b (a path gets a leading '/' if it lacks one). */
static char* join_url(const char* base, const char* a, const char* b) {
  size_t nb = strlen(base), na = strlen(a), n2 = b ? strlen(b) : 0;
  int slash = a[0] != '/';
  char* u = malloc(nb + (size_t)slash + na + n2 + 1);
  if (u == NULL) return NULL;
  memcpy(u, base, nb);
  if (slash) u[nb] = '/';
  memcpy(u + nb + slash, a, na);
  if (b) memcpy(u + nb + slash + na, b, n2);
  u[nb + slash + na + n2] = '\0';
  return u;
}

/* base + path with "{reference}" replaced by enc, or enc appended when
** the path has no placeholder (a search query may need a closing quote
** after it: "...metadata['order_id']:'{reference}'"). */
static char* lookup_url(const char* base, const char* path, const char* enc) {
  static const char mark[] = "{reference}";
  const char* at = strstr(path, mark);
  char *head, *u;
  size_t n;
  if (at == NULL) return join_url(base, path, enc);
  n = (size_t)(at - path);
  head = malloc(n + strlen(enc) + strlen(at + sizeof mark - 1) + 1);
  if (head == NULL) return NULL;
  memcpy(head, path, n);
  strcpy(head + n, enc);
  strcat(head, at + sizeof mark - 1);
  u = join_url(base, head, NULL);
  free(head);
  return u;
}

static void on_reply(ob__http_req_t* req, int status,
                     const ob__http_response_t* res);

/* Submit the slot's job (call or lookup). Returns 0 when in flight, else a
** negative code and nothing was sent. */
static int submit(executor_t* x, slot_t* s) {
  const ob__effect_job_t* j = &s->job;
  ob__http_header_t h[4];
  size_t nh = 0;
  char* url = NULL;
  char* enc = NULL;
  int rc;

  memset(&s->req, 0, sizeof s->req);
  s->req.data = s;
  if (j->lookup) {
    const char* arg = j->lookup == 2 ? j->lookup_reference : j->idempotency_key;
    if (j->lookup_path == NULL || arg == NULL) return OB_EINVAL;
    enc = pct_encode(arg);
    if (enc == NULL) return OB_ENOMEM;
    url = j->lookup == 2 ? lookup_url(x->base_url, j->lookup_path, enc)
                         : join_url(x->base_url, j->lookup_path, enc);
    free(enc);
    h[nh++] = (ob__http_header_t){"Accept", "application/json"};
    s->req.method = "GET";
  } else {
    if (j->method == NULL || j->path == NULL || j->idempotency_key == NULL)
      return OB_EINVAL;
    url = join_url(x->base_url, j->path, NULL);
    h[nh++] = (ob__http_header_t){"Idempotency-Key", j->idempotency_key};
    h[nh++] = (ob__http_header_t){"Content-Type", "application/json"};
    h[nh++] = (ob__http_header_t){"Accept", "application/json"};
    s->req.method = j->method;
    s->req.body = j->body;
    s->req.body_len = j->body ? j->body_len : 0;
  }
  if (url == NULL) return OB_ENOMEM;
  if (x->authorization != NULL)
    h[nh++] = (ob__http_header_t){"Authorization", x->authorization};
  s->req.url = url;
  s->req.headers = h;
  s->req.nheaders = nh;
  rc = ob__http_request(x->client, &s->req, on_reply);  /* copies all */
  free(url);
  s->req.url = NULL;
  s->req.headers = NULL;
  s->req.body = NULL;
  if (rc < 0) return rc;
  s->in_flight = 1;
  x->in_flight++;
  return 0;
}

/* Go offline after a request that never reached the provider. */
static void link_failed(executor_t* x, const slot_t* s, int code,
                        const char* detail) {
  int64_t d;
  /* Several requests in flight fail together when the network goes: count
  ** the outage once, and then once per probe. */
  if (!x->w.link.online && !s->probe) return;
  d = ob__worker_link_failed(&x->w);
  if (ob__net_classify(code) == OB__NET_CONFIG) {
    /* A configuration fault: fixed once, by a person. */
    ob_log_record_t lr = OB__LOG_RECORD(OB_LOG_ERROR, "effects",
                                        "provider_request_failed");
    lr.error = ob__err_public(code);
    ob__logr(ENGINE(x), &lr, "effects: provider %s: %s (%s); effects "
             "wait, probing again in %lld ms", x->name, detail,
             ob__http_err_name(code), (long long)d);
  } else {
    /* Each probe that fails is a record; the repeat limiter keeps one per
    ** window of an outage and counts the rest. */
    ob_log_record_t lr = OB__LOG_RECORD(OB_LOG_WARN, "effects",
                                        "provider_unreachable");
    lr.error = ob__err_public(code);
    ob__logr(ENGINE(x), &lr, "effects: provider %s unreachable (%s); effects "
             "wait, probing again in %lld ms", x->name, detail, (long long)d);
  }
}

/* The provider refused the credentials (401/403). Nothing works until a
** person fixes them: go offline and probe with backoff, as when it cannot
** be reached, so every effect is not sent to be refused again at once.
** Logged at ERROR (a configuration fault), once per outage and probe;
** never the value, never the answer's headers or body. */
static void credentials_failed(executor_t* x, const slot_t* s, int status) {
  int64_t d;
  if (!x->w.link.online && !s->probe) return;
  ob_log_record_t lr = OB__LOG_RECORD(OB_LOG_ERROR, "effects",
                                      "provider_auth_refused");
  lr.error = OB_EAUTH;
  d = ob__worker_link_failed(&x->w);
  ob__logr(ENGINE(x), &lr, "effects: provider %s refused the credentials "
           "(HTTP %d); effects wait, probing again in %lld ms", x->name,
           status, (long long)d);
}

/* Record an answer that never left (a request refused before sending).
** Costs the effect nothing; the executor goes offline so it is not tried
** again at once. */
static void settle_unsent(executor_t* x, slot_t* s, int code) {
  ob_effect_reply_t reply;
  ob_batch_result_t br;
  int rc;

  memset(&reply, 0, sizeof reply);
  memset(&br, 0, sizeof br);
  reply.status = ob__err_public(code);
  reply.sent = 0;
  reply.body = "";
  reply.detail = ob__http_strerror(code);
  ob__log(ENGINE(x), OB_LOG_ERROR, "effects: %s: %s not sent: %s (%s)",
          s->job.key, action_name(&s->job), reply.detail,
          ob__http_err_name(code));
  rc = ob__effect_settle(ENGINE(x), &s->job, &reply, &br);
  if (rc == 1 || rc < 0) {
    /* 1 cannot happen for an unsent reply; give the lease back anyway. */
    if (ob__effect_release(ENGINE(x), &s->job) < 0)
      ob__log(ENGINE(x), OB_LOG_WARN, "effects: %s: cannot give the lease back "
              "(it expires): %s", s->job.key, ob_errmsg(ENGINE(x)));
  }
  if (br.handled > 0) kick_others(x);
  link_failed(x, s, code, reply.detail);
  slot_clear(s);
}

/* Submit the slot's job; a request refused before sending is settled as
** unsent at once. */
static void start_job(executor_t* x, slot_t* s) {
  int rc = submit(x, s);
  if (rc < 0) settle_unsent(x, s, rc);
}

static void log_answer(executor_t* x, const ob__effect_job_t* j,
                       const ob_effect_reply_t* reply) {
  char why[256];
  ob__fence_answer_t a = ob__fence_classify(j->lookup, reply);
  switch (a) {
    case OB__ANSWER_CONFIRMED:
      if ((j->lookup == 2
               ? ob__fence_found(reply->body, reply->body_len, why, 128) != 1
               : ob__fence_reference(reply->body, reply->body_len, why,
                                     128) != 0))
        snprintf(why, sizeof why, "no reference");
      ob__log(ENGINE(x), OB_LOG_INFO, "effects: %s: %s answered HTTP %d: "
              "confirmed (%s)", j->key, action_name(j), reply->status, why);
      break;
    case OB__ANSWER_FAILED:
      ob__fence_reason(reply, why, sizeof why);
      ob__log(ENGINE(x), OB_LOG_INFO, "effects: %s: %s answered HTTP %d: "
              "refused: %s", j->key, action_name(j), reply->status, why);
      break;
    case OB__ANSWER_ABSENT:
      ob__log(ENGINE(x), OB_LOG_INFO, "effects: %s: %s answered HTTP %d: the "
              "provider has nothing for it; calling", j->key, action_name(j),
              reply->status);
      break;
    case OB__ANSWER_IN_FLIGHT:
      ob__log(ENGINE(x), OB_LOG_INFO, "effects: %s: %s answered HTTP %d: the "
              "first request with this key still runs at the provider; "
              "asking again later", j->key, action_name(j), reply->status);
      break;
    case OB__ANSWER_CONFLICT:
    case OB__ANSWER_REPLAYED_ERROR:
      ob__fence_reason(reply, why, sizeof why);
      ob__log(ENGINE(x), OB_LOG_WARN, "effects: %s: %s answered HTTP %d: %s; "
              "parked for a person: %s", j->key, action_name(j),
              reply->status, a == OB__ANSWER_CONFLICT
                                 ? "a conflict at the provider"
                                 : "an error it saved and replays",
              why);
      break;
    case OB__ANSWER_NOT_SENT:
      if (reply->status > 0)  /* 401/403 */
        ob__log(ENGINE(x), OB_LOG_INFO, "effects: %s: %s answered HTTP %d: "
                "credentials refused; nothing changed", j->key,
                action_name(j), reply->status);
      else {
        /* With its code: a record with an error does not tell the repeat
        ** limiter that the provider works again. */
        ob_log_record_t lr = OB__LOG_RECORD(OB_LOG_INFO, "effects",
                                            "effect_not_sent");
        lr.error = ob__err_public(reply->status);
        ob__logr(ENGINE(x), &lr, "effects: %s: %s not sent: %s; nothing "
                 "changed", j->key, action_name(j),
                 reply->detail ? reply->detail
                               : ob__http_strerror(reply->status));
      }
      break;
    case OB__ANSWER_UNKNOWN:
    default:
      if (reply->status > 0) {
        ob__fence_reason(reply, why, sizeof why);
        ob__log(ENGINE(x), OB_LOG_INFO, "effects: %s: %s answered HTTP %d: "
                "outcome unknown: %s", j->key, action_name(j), reply->status,
                why);
      } else {
        ob__log(ENGINE(x), OB_LOG_INFO, "effects: %s: %s got no answer: %s; "
                "outcome unknown", j->key, action_name(j),
                reply->detail ? reply->detail
                              : ob__http_strerror(reply->status));
      }
      break;
  }
}

static void on_reply(ob__http_req_t* req, int status,
                     const ob__http_response_t* res) {
  slot_t* s = req->data;
  executor_t* x = s->x;
  ob_engine_t* e = ENGINE(x);
  ob_effect_reply_t reply;
  ob_batch_result_t br;
  int rc, refused;

  s->in_flight = 0;
  x->in_flight--;
  if (status == OB__HTTP_E_CANCELED) {
    /* Shutdown. Never an answer: we cannot know what the provider did. */
    if (!res->request_sent) {
      if (ob__effect_release(e, &s->job) < 0)
        ob__log(e, OB_LOG_WARN, "effects: %s: cannot give the lease back "
                "(it expires): %s", s->job.key, ob_errmsg(e));
    } else {
      ob__log(e, OB_LOG_INFO, "effects: %s: %s canceled after it was sent; "
              "outcome unknown, asked again when its lease expires",
              s->job.key, action_name(&s->job));
    }
    slot_clear(s);
    return;
  }

  memset(&reply, 0, sizeof reply);
  memset(&br, 0, sizeof br);
  reply.status = status == 0 ? res->status : ob__err_public(status);
  reply.sent = status == 0 ? 1 : res->request_sent != 0;
  reply.body = (const char*)res->body;
  reply.body_len = res->body_len;
  reply.detail = status == 0 ? NULL : res->detail;
  if (status == 0) {
    /* Stripe marks an answer it saved for the key and replays. */
    const char* rp = ob__http_header_get(res, "Idempotent-Replayed");
    reply.replayed = rp != NULL && strcasecmp(rp, "true") == 0;
  }
  if (reply.detail != NULL && reply.detail[0] == '\0')
    reply.detail = ob__http_strerror(status);
  refused = status == 0 && credentials_refused(reply.status);
  if (refused) {
    /* Neither logged nor recorded: a provider may echo (part of) the key
    ** it refused. The status says enough. */
    reply.body = "";
    reply.body_len = 0;
  }
  log_answer(x, &s->job, &reply);
  rc = ob__effect_settle(e, &s->job, &reply, &br);
  if (rc < 0)
    ob__log(e, OB_LOG_ERROR, "effects: %s: cannot record the answer (asked "
            "again when its lease expires): %s", s->job.key, ob_errmsg(e));
  if (!reply.sent) {
    link_failed(x, s, status, reply.detail);
  } else if (refused) {
    credentials_failed(x, s, reply.status);
  } else if (ob__worker_link_ok(&x->w)) {
    ob__log(e, OB_LOG_INFO, "effects: provider %s reachable again", x->name);
  }
  if (br.handled > 0) kick_others(x);
  if (rc == 1) {
    /* The lookup found no trace of the key: make the call now, under the
    ** same lease. Not while shutting down: then the lease goes back. */
    s->probe = 0;
    if (!closing(x)) {
      start_job(x, s);
      arm(x, 0);
      return;
    }
    if (ob__effect_release(e, &s->job) < 0)
      ob__log(e, OB_LOG_WARN, "effects: %s: cannot give the lease back (it "
              "expires): %s", s->job.key, ob_errmsg(e));
  }
  slot_clear(s);
  if (rc < 0) arm(x, ob__worker_storage_failed(&x->w));
  else arm(x, 0);
}

/* One round: take what is due into the free slots, submit, then sleep until
** the next effect is due (completions and kicks wake us sooner). */
static void executor_run(ob__worker_t* w) {
  executor_t* x = w->self;
  ob_engine_t* e = ENGINE(x);
  int64_t now, at, delay;
  int want, cap, n = 0, rc;

  if (ob__worker_wait_for_probe(w)) return;
  /* Offline: one effect at a time probes. */
  cap = w->link.online ? x->max_in_flight : 1;
  want = cap - x->in_flight;
  if (want > 0) {
    n = ob__effect_take(e, x->name, want, x->taken);
    if (n < 0) {
      ob__log(e, OB_LOG_ERROR, "effects: provider %s: cannot take effects: "
              "%s", x->name, ob_errmsg(e));
      arm(x, ob__worker_storage_failed(w));
      return;
    }
    ob__worker_storage_ok(w);
    for (int i = 0; i < n; i++) {
      slot_t* s = free_slot(x);
      if (s == NULL) {  /* cannot happen: want counts free slots */
        if (ob__effect_release(e, &x->taken[i]) < 0)
          ob__log(e, OB_LOG_WARN, "effects: %s: cannot give the lease back "
                  "(it expires): %s", x->taken[i].key, ob_errmsg(e));
        ob__effect_job_free(&x->taken[i]);
        continue;
      }
      s->job = x->taken[i];
      memset(&x->taken[i], 0, sizeof x->taken[i]);
      s->busy = 1;
      s->probe = !w->link.online;
      start_job(x, s);
    }
  }
  if (!w->link.online && x->in_flight == 0) {
    /* The probe failed before it was sent: wait for the next probe. One
    ** that is due and took nothing (no effect due, or each leased
    ** elsewhere) looks again later: at once would spin (the simulator's
    ** seed 24 with orders every 3 to 30 minutes, docs/simulator.md). */
    delay = w->link.next_probe_at - ob__worker_link_now(w);
    arm(x, delay > 0 ? delay : LEASED_RETRY_MS);
    return;
  }
  /* Every slot busy: a completion runs the next round. */
  if (x->in_flight >= cap) return;
  rc = ob__effect_next_due(e, x->name, &at);
  now = ob__worker_now(w);
  if (rc == OB_ENOTFOUND) {
    delay = MAX_SLEEP_MS;
  } else if (rc < 0) {
    ob__log(e, OB_LOG_WARN, "effects: provider %s: cannot read the next due "
            "effect: %s", x->name, ob_errmsg(e));
    delay = ob__worker_storage_failed(w);
  } else {
    delay = at - now;
    /* Due now but not taken: it is in flight here or leased elsewhere. */
    if (delay <= 0) delay = n < want ? LEASED_RETRY_MS : 0;
  }
  if (delay > MAX_SLEEP_MS) delay = MAX_SLEEP_MS;
  arm(x, delay);
}

/* ---- component interface ------------------------------------------------ */

/* Origin of the base URL for logs: scheme://host[:port], no path. */
static void origin_of(const char* url, char* out, size_t n) {
  const char* p = strstr(url, "://");
  size_t len = p ? (size_t)(p + 3 - url) + strcspn(p + 3, "/?#") : 0;
  if (len >= n) len = n - 1;
  memcpy(out, url, len);
  out[len] = '\0';
}

static int executor_open(ob__worker_t* w, uv_loop_t* loop, char* err,
                         size_t errlen) {
  executor_t* x = w->self;
  ob__http_config_t hc;
  const char* ca = x->ca_file;
  int rc;

  if (ca == NULL) {
    ca = getenv("AWS_CA_BUNDLE");
    if (ca != NULL && ca[0] == '\0') ca = NULL;
  }
  ob__http_config_init(&hc);
  hc.ca_file = ca;
  hc.allow_plain_http = x->allow_http;
  hc.request_timeout_ms = (uint64_t)x->timeout_ms;
  hc.connect_timeout_ms = x->timeout_ms < CONNECT_TIMEOUT_MS
                              ? (uint64_t)x->timeout_ms
                              : CONNECT_TIMEOUT_MS;
  /* A provider without idempotency keys cannot tell a repeated call from a
  ** new one, so a POST lost to a keep-alive race (the server closed the
  ** pooled connection as we wrote) would leave the effect unknown. Use a
  ** fresh connection for each of its requests. */
  if (!x->idempotency_keys) hc.max_idle_per_host = 0;
  rc = ob__http_client_open(&x->client, loop, &hc, err, errlen);
  if (rc < 0) {
    char why[256];
    snprintf(why, sizeof why, "%s", err);
    snprintf(err, errlen, "provider %s: %s", x->name, why);
    x->client = NULL;
  }
  return rc;
}

static void executor_close_client(ob__worker_t* w) {
  executor_t* x = w->self;
  /* Requests in flight complete with OB__HTTP_E_CANCELED (on_reply gives
  ** back the leases of those not sent) before client_closed runs. */
  ob__worker_close_http(w, &x->client);
}

static void executor_started(ob__worker_t* w) {
  executor_t* x = w->self;
  char origin[160];
  x->in_flight = 0;
  arm(x, 0);
  origin_of(x->base_url, origin, sizeof origin);
  ob__log(w->e, OB_LOG_INFO, "effects: provider %s at %s (%d in flight, %s)",
          x->name, origin, x->max_in_flight,
          x->idempotency_keys ? "idempotency keys" : "no idempotency keys");
}

static void executor_kick(ob__worker_t* w) {
  executor_t* x = w->self;
  if (w->link.online && x->in_flight < x->max_in_flight) arm(x, 0);
}

static int executor_idle(ob__worker_t* w) {
  executor_t* x = w->self;
  int64_t at, now;
  if (x->in_flight > 0) return OB__IDLE_BUSY;
  now = ob__worker_now(w);
  if (ob__effect_next_due(w->e, x->name, &at) != 0) return OB__IDLE_DONE;
  /* Effects open: the provider can't be reached right now. */
  if (!w->link.online) return OB__IDLE_BLOCKED;
  /* A retry (or a lease's end) due within the horizon is waited for; a
  ** later one is scheduled work for the next run, not a stall. */
  return at - now > ob__idle_horizon_ms(w->e) ? OB__IDLE_DONE : OB__IDLE_BUSY;
}

static void executor_destroy(void* self) {
  executor_t* x = self;
  if (x == NULL) return;
  if (x->slots != NULL)
    for (int i = 0; i < x->max_in_flight; i++) slot_clear(&x->slots[i]);
  free(x->slots);
  free(x->taken);
  free(x->component_name);
  free(x->name);
  free(x->base_url);
  free(x->ca_file);
  ob__secret_forget(x->authorization);
  ob__free_secret(x->authorization);
  x->authorization = NULL;
  free(x);
}

static const ob__worker_ops_t executor_ops = {
    .open = executor_open,
    .close_client = executor_close_client,
    .started = executor_started,
    .run = executor_run,
    .idle = executor_idle,
    .kick = executor_kick,
    .destroy = executor_destroy,
};

/* ---- enabling ----------------------------------------------------------- */


static int has_prefix_ci(const char* s, const char* prefix) {
  for (; *prefix; s++, prefix++) {
    char c = *s;
    if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
    if (c != *prefix) return 0;
  }
  return 1;
}

int ob_provider_enable(ob_engine_t* e, const ob_provider_options_t* o,
                       char* errbuf, size_t errlen) {
  executor_t* x;
  ob__http_url_t u;
  size_t n;
  int rc;

  if (errbuf != NULL && errlen > 0) errbuf[0] = '\0';
  if (e == NULL || o == NULL)
    return ob__errbuf_set(errbuf, errlen, OB_EINVAL, "NULL engine or options");
  if (ob__engine_runner(e) != NULL)
    return ob__errbuf_set(errbuf, errlen, OB_ESTATE, "enable the provider before "
                "attaching the engine to a loop");
  if (o->name == NULL || o->name[0] == '\0')
    return ob__errbuf_set(errbuf, errlen, OB_EINVAL, "provider name is required");
  if (o->base_url == NULL || o->base_url[0] == '\0')
    return ob__errbuf_set(errbuf, errlen, OB_EINVAL, "provider %s: base_url is "
                "required (https://host[:port][/path])", o->name);
  if (has_prefix_ci(o->base_url, "http://")) {
    if (!o->allow_http)
      return ob__errbuf_set(errbuf, errlen, OB_EINVAL, "provider %s: base_url is "
                  "plain http://; use https://, or set allow_http (tests "
                  "and local simulators only)", o->name);
  } else if (!has_prefix_ci(o->base_url, "https://")) {
    return ob__errbuf_set(errbuf, errlen, OB_EINVAL, "provider %s: base_url must "
                "start with https://", o->name);
  }
  if (strpbrk(o->base_url, "?#") != NULL)
    return ob__errbuf_set(errbuf, errlen, OB_EINVAL, "provider %s: base_url must not "
                "have a query or fragment (the request path is appended)",
                o->name);
  if (ob__http_url_parse(o->base_url, &u) != 0)
    return ob__errbuf_set(errbuf, errlen, OB_EINVAL, "provider %s: base_url is not a "
                "valid URL (https://host[:port][/path], no user info, no "
                "spaces)", o->name);
  if (o->timeout_ms < 1 || o->timeout_ms > MAX_TIMEOUT_MS)
    return ob__errbuf_set(errbuf, errlen, OB_EINVAL, "provider %s: timeout_ms must be "
                "1..%d", o->name, MAX_TIMEOUT_MS);
  if (o->max_in_flight < 1 || o->max_in_flight > MAX_IN_FLIGHT_LIMIT)
    return ob__errbuf_set(errbuf, errlen, OB_EINVAL, "provider %s: max_in_flight must "
                "be 1..%d", o->name, MAX_IN_FLIGHT_LIMIT);
  /* A request must end (answer or timeout) while its lease holds, or
  ** another process could take the effect and call concurrently. */
  if (o->lease_ms <= o->timeout_ms)
    return ob__errbuf_set(errbuf, errlen, OB_EINVAL, "provider %s: lease_ms must be "
                "more than timeout_ms (a request must end while its lease "
                "holds)", o->name);
  if (o->lookup_path != NULL &&
      (o->lookup_path[0] != '/' || strpbrk(o->lookup_path, " #") != NULL))
    return ob__errbuf_set(errbuf, errlen, OB_EINVAL, "provider %s: lookup_path must "
                "start with '/' and have no spaces or fragment", o->name);
  /* The value is a secret: no message below may quote it. */
  if (o->authorization != NULL) {
    size_t alen = strnlen(o->authorization, MAX_AUTHORIZATION + 1);
    if (alen == 0)
      return ob__errbuf_set(errbuf, errlen, OB_EINVAL, "provider %s: authorization is "
                  "empty (NULL for none)", o->name);
    if (alen > MAX_AUTHORIZATION)
      return ob__errbuf_set(errbuf, errlen, OB_EINVAL, "provider %s: authorization is "
                  "longer than %d bytes", o->name, MAX_AUTHORIZATION);
    for (size_t i = 0; i < alen; i++) {
      unsigned char ch = (unsigned char)o->authorization[i];
      if (ch < 0x20 || ch == 0x7f)
        return ob__errbuf_set(errbuf, errlen, OB_EINVAL, "provider %s: authorization "
                    "contains a control character (CR, LF, tab, ...) at "
                    "byte %zu (the value is a secret: not shown)", o->name,
                    i + 1);
    }
  }
  if (o->ca_file != NULL && access(o->ca_file, R_OK) != 0)
    return ob__errbuf_set(errbuf, errlen, OB_EINVAL, "provider %s: ca_file %s cannot "
                "be read: %s", o->name, o->ca_file, strerror(errno));

  x = calloc(1, sizeof *x);
  if (x == NULL) return ob__errbuf_set(errbuf, errlen, OB_ENOMEM, "out of memory");
  x->name = strdup(o->name);
  x->base_url = strdup(o->base_url);
  x->ca_file = o->ca_file ? strdup(o->ca_file) : NULL;
  x->authorization = o->authorization ? strdup(o->authorization) : NULL;
  /* What the provider (or a gateway before it) echoes back is cleaned of
  ** it before it is logged, shown or stored (core/util/peer_text.h). */
  if (x->authorization != NULL) (void)ob__secret_hold(x->authorization);
  x->component_name = malloc(strlen(o->name) + sizeof "effects:");
  x->slots = calloc((size_t)o->max_in_flight, sizeof *x->slots);
  x->taken = calloc((size_t)o->max_in_flight, sizeof *x->taken);
  if (x->name == NULL || x->base_url == NULL ||
      (o->ca_file && x->ca_file == NULL) ||
      (o->authorization && x->authorization == NULL) ||
      x->component_name == NULL ||
      x->slots == NULL || x->taken == NULL) {
    executor_destroy(x);
    return ob__errbuf_set(errbuf, errlen, OB_ENOMEM, "out of memory");
  }
  sprintf(x->component_name, "effects:%s", o->name);
  n = strlen(x->base_url);
  while (n > 0 && x->base_url[n - 1] == '/') x->base_url[--n] = '\0';
  x->allow_http = o->allow_http != 0;
  x->idempotency_keys = o->idempotency_keys != 0;
  x->timeout_ms = o->timeout_ms;
  x->max_in_flight = o->max_in_flight;
  for (int i = 0; i < x->max_in_flight; i++) x->slots[i].x = x;

  /* The worker's checks before core registers the provider. */
  rc = ob__worker_check(e, x->component_name, &o->probe, errbuf, errlen);
  if (rc < 0) {
    executor_destroy(x);
    if (rc == OB_EEXIST)
      return ob__errbuf_set(errbuf, errlen, rc, "provider %s is already enabled",
                  o->name);
    return rc;
  }
  rc = ob_provider_register(e, o);
  if (rc < 0) {
    executor_destroy(x);
    if (rc == OB_EEXIST)
      return ob__errbuf_set(errbuf, errlen, rc, "provider %s is already registered",
                  o->name);
    return ob__errbuf_set(errbuf, errlen, rc, "provider %s: %s%s%s", o->name,
                ob_strerror(rc), ob_errmsg(e)[0] ? ": " : "", ob_errmsg(e));
  }
  rc = ob__worker_register(&x->w, e, x->component_name, &executor_ops, x,
                           &o->probe, errbuf, errlen);
  if (rc < 0) {
    /* The provider stays registered without transport. */
    executor_destroy(x);
    return rc;
  }
  return 0;
}
