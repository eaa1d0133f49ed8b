/* SPDX-License-Identifier: Apache-2.0 */
/* The outbox relay: claims publishable outbox rows under a lease, sends
** them to SQS with SendMessageBatch as CloudEvents, and marks each row
** published only after SQS accepted it. When SQS cannot be reached it goes
** offline and probes with backoff; a commit with new outbox rows wakes an
** online relay at once.
**
** Failure accounting (docs/decisions/0007-relay-failures.md):
**   - an entry SQS rejected (Failed, sender fault) costs the row an attempt
**     and parks it after park_after attempts;
**   - an entry failed on SQS's side costs an attempt and backs the row off,
**     but never parks it;
**   - a lost connection, a 5xx/throttle after the client's own retries or a
**     checksum mismatch costs the rows nothing: the relay goes offline and
**     probes; an outage must not turn a backlog into parked or backed-off
**     rows;
**   - credentials, TLS, a missing queue, or a server that is not the SQS
**     JSON API (it speaks only the query protocol, lacks the operation, has
**     nothing at the endpoint: OB__SQS_E_NOT_JSON_API, decision 0014) are
**     configuration faults: rows are not charged, the relay backs off as if
**     offline and says why, in the log and in relay_status for `stats`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "core/engine/modules.h"
#include "core/relay/cloudevents.h"
#include "core/util/errbuf.h"
#include "core/relay/relay_policy.h"
#include "core/relay/relay_tx.h"
#include "platform/aws/aws_config.h"
#include "platform/loop/worker.h"
#include "platform/relay/relay.h"
#include "platform/sqs/sqs_client.h"

/* The component of this file's log records (ob__log). */
#undef OB__LOG_COMPONENT
#define OB__LOG_COMPONENT "relay"

#define MAX_CLAIM OB__SQS_MAX_BATCH_ENTRIES

typedef struct relay_s {
  ob__worker_t w;          /* timer, link, close sequence (worker.h) */
  ob_relay_options_t opts;
  char* queue_url;
  char* source;
  int fifo;
  ob__aws_config_t aws;
  ob__sqs_client_t* client;
  char token[OB_UUID_BUFLEN];

  /* The batch in flight. */
  ob__sqs_req_t req;
  int in_flight;
  ob__relay_row_t rows[MAX_CLAIM];
  char* bodies[MAX_CLAIM];
  size_t nrows;      /* rows claimed */
  size_t sent_from;  /* first row of the sub-batch in flight */
  size_t sent_n;     /* rows in the sub-batch in flight */

  /* The event types claimed first (copies; NULL-terminated). */
  char* priority[OB__RELAY_MAX_PRIORITY + 1];
  int npriority;

  /* Since ob_relay_enable (ob__relay_progress). */
  int64_t published;
  int64_t parked;
  char tls_logged[96]; /* "version suite" last logged (debug) */
} relay_t;

static void log_tls(relay_t* r);

#define ENGINE(r) ((r)->w.e)

static void arm(relay_t* r, int64_t delay_ms) {
  ob__worker_arm(&r->w, delay_ms);
}

static void free_rows(relay_t* r) {
  for (size_t i = 0; i < r->nrows; i++) {
    ob__relay_row_free(&r->rows[i]);
    free(r->bodies[i]);
    r->bodies[i] = NULL;
  }
  r->nrows = r->sent_from = r->sent_n = 0;
}

/* Record connectivity for `oncebox stats`; only on changes, so an online
** relay does not write a row per batch beyond the publish time. */
static void record_status(relay_t* r, int online, int64_t published_at,
                          const char* error) {
  if (ob__relay_record_status(ENGINE(r), online, published_at, error) < 0)
    ob__log(ENGINE(r), OB_LOG_WARN, "relay: cannot record status: %s",
            ob_errmsg(ENGINE(r)));
}

/* Give the claims back (shutdown, configuration fault): another relay, or
** this one later, publishes the rows. */
static void release_claims(relay_t* r) {
  if (ob__relay_give_back(ENGINE(r), r->token) < 0)
    ob__log(ENGINE(r), OB_LOG_WARN, "relay: cannot release claims (they "
            "expire with their lease): %s", ob_errmsg(ENGINE(r)));
  free_rows(r);
}

static int send_next(relay_t* r);

/* Mark each row of the sub-batch in one transaction. ok[i]: 1 published,
** 0 failed (error[i], park[i]). */
static void settle(relay_t* r, const int* ok, const char* const* error,
                   const int* park, int park_after) {
  ob__relay_result_t res[MAX_CLAIM];
  ob__relay_settled_t out;
  for (size_t i = 0; i < r->sent_n; i++) {
    res[i].ok = ok[i];
    res[i].park = park[i];
    res[i].error = error[i];
  }
  if (ob__relay_settle(ENGINE(r), r->token, &r->rows[r->sent_from], res,
                       r->sent_n, park_after, r->opts.backoff_base_ms,
                       r->opts.backoff_cap_ms, &out) < 0) {
    /* Nothing marked: the rows stay claimed until the lease expires and are
    ** published again then. At-least-once, as documented. */
    ob__log(ENGINE(r), OB_LOG_ERROR, "relay: cannot record results: %s",
            ob_errmsg(ENGINE(r)));
    return;
  }
  r->published += out.published;
  r->parked += out.parked;
  ob__engine_counters(ENGINE(r))->relay_events_published += out.published;
  ob__engine_counters(ENGINE(r))->relay_events_parked += out.parked;
  ob__engine_recent_add(ENGINE(r), OB__RECENT_FAILED, out.parked);
}

/* Count one request's result (ob_counters_t). */
static void count_request(relay_t* r, int status, size_t nfailed) {
  ob_counters_t* c = ob__engine_counters(ENGINE(r));
  if (status == 0) {
    if (nfailed > 0)
      c->relay_requests_partial++;
    else
      c->relay_requests_ok++;
    c->relay_failing_since_ms = 0;
    return;
  }
  c->relay_requests_failed++;
  if (c->relay_failing_since_ms == 0)
    c->relay_failing_since_ms = ob__engine_clock(ENGINE(r))->now_ms(
        ob__engine_clock(ENGINE(r))->ctx);
}

static void on_sent(ob__sqs_req_t* req, int status) {
  relay_t* r = req->data;
  int ok[MAX_CLAIM], park[MAX_CLAIM];
  const char* error[MAX_CLAIM];
  char errbuf[MAX_CLAIM][OB__REASON_LEN];
  ob__net_class_t cls;
  int64_t delay;

  r->in_flight = 0;
  if (status == OB_ECANCELED) {
    /* Shutdown: we cannot know whether SQS applied it. Give the rows back:
    ** they are published again later, with the same ids. */
    ob__sqs_req_cleanup(req);
    release_claims(r);
    return;
  }
  count_request(r, status, status == 0 ? req->batch.nfailed : 0);
  memset(park, 0, sizeof park);
  if (status == 0) {
    if (ob__worker_link_ok(&r->w))
      ob__log(ENGINE(r), OB_LOG_INFO, "relay: SQS reachable again");
    log_tls(r);
    for (size_t i = 0; i < r->sent_n; i++) {
      ok[i] = 1;
      error[i] = NULL;
    }
    for (size_t k = 0; k < req->batch.nfailed; k++) {
      const ob__sqs_batch_err_t* f = &req->batch.failed[k];
      size_t i = (size_t)atoi(f->id + 1);  /* ids are "e0".."e9" */
      if (f->id[0] != 'e' || i >= r->sent_n) continue;
      ok[i] = 0;
      ob__fmt(errbuf[i], sizeof errbuf[i], "%s: %s", f->code, f->message);
      error[i] = errbuf[i];
      park[i] = f->sender_fault;
    }
    settle(r, ok, error, park, r->opts.park_after);
    ob__sqs_req_cleanup(req);
    r->sent_from += r->sent_n;
    r->sent_n = 0;
    if (r->sent_from < r->nrows) {
      if (send_next(r) == 0) return;
    }
    free_rows(r);
    arm(r, 0);  /* there may be more */
    return;
  }

  /* The request as a whole failed. What that means is the one
  ** classification every worker uses (core/util/net_error.h). */
  cls = ob__net_classify(status);
  if (cls == OB__NET_CONFIG || cls == OB__NET_AUTH) {
    ob_log_record_t lr = OB__LOG_RECORD(OB_LOG_ERROR, "relay",
                                        "relay_request_failed");
    lr.error = ob__err_public(status);
    ob__logr(ENGINE(r), &lr, "relay: %s (%s); retrying with backoff",
             req->detail, ob__sqs_err_name(status));
    record_status(r, req->http_status != 0, 0, req->detail);
    ob__sqs_req_cleanup(req);
    release_claims(r);
    arm(r, ob__worker_link_failed(&r->w));
    return;
  }
  if (cls == OB__NET_TRANSIENT || status == OB__SQS_E_CHECKSUM) {
    /* SQS unreachable, overloaded or throttling after the client's own
    ** retries: nothing is wrong with the rows. They are not charged and not
    ** backed off (the relay's probing decides when to try again), so a
    ** terminal that comes back online publishes everything at once. A
    ** checksum mismatch may mean SQS did take the batch: sending again
    ** later only duplicates, with the same ids. */
    /* Every failed probe is a record; the repeat limiter keeps one per
    ** window and counts the rest. */
    ob_log_record_t lr = OB__LOG_RECORD(OB_LOG_WARN, "relay",
                                        "relay_unreachable");
    lr.error = ob__err_public(status);
    ob__logr(ENGINE(r), &lr, "relay: SQS unreachable (%s); outbox "
             "accumulates, probing with backoff", req->detail);
    record_status(r, req->http_status != 0, 0, req->detail);
    delay = ob__worker_link_failed(&r->w);
  } else {
    /* A service error about the request: charge the rows; the sender's
    ** fault counts toward parking. */
    for (size_t i = 0; i < r->sent_n; i++) {
      ok[i] = 0;
      ob__fmt(errbuf[i], sizeof errbuf[i], "%s: %s", ob__sqs_err_name(status),
              req->detail);
      error[i] = errbuf[i];
      park[i] = status == OB__SQS_E_SERVICE && req->error.sender_fault != 0;
    }
    settle(r, ok, error, park, r->opts.park_after);
    {
      ob_log_record_t lr = OB__LOG_RECORD(OB_LOG_WARN, "relay",
                                          "relay_batch_failed");
      lr.error = ob__err_public(status);
      ob__logr(ENGINE(r), &lr, "relay: batch refused: %s", req->detail);
    }
    delay = 0;
  }
  ob__sqs_req_cleanup(req);
  /* Rows not yet sent in this claim go back. */
  r->sent_from += r->sent_n;
  r->sent_n = 0;
  release_claims(r);
  arm(r, delay);
}

/* Send the next sub-batch of the claimed rows that fits one request.
** Returns 0 when a request is in flight, < 0 when nothing was sent. */
static int send_next(relay_t* r) {
  ob__sqs_send_t entries[MAX_CLAIM];
  ob__sqs_attr_t attrs[MAX_CLAIM][3];
  char ids[MAX_CLAIM][8];
  size_t sizes[MAX_CLAIM], n, first = r->sent_from;
  int rc;

  while (first < r->nrows) {
    for (size_t i = first; i < r->nrows; i++) {
      const ob__relay_row_t* row = &r->rows[i];
      sizes[i - first] = strlen(r->bodies[i]) + strlen(row->event_type) +
                         strlen(row->aggregate_id) + strlen(row->causation_id) +
                         64;
    }
    n = ob__relay_batch_fit(sizes, r->nrows - first, OB__SQS_MAX_BATCH_BYTES);
    if (n > 0) break;
    /* This row can never be sent: park it with the reason, then go on. */
    {
      int ok = 0, park = 1;
      char why[160];
      const char* err = why;
      snprintf(why, sizeof why, "event is %zu bytes, over SQS's 1 MiB limit",
               sizes[0]);
      r->sent_from = first;
      r->sent_n = 1;
      settle(r, &ok, &err, &park, 1);
      first++;
      r->sent_from = first;
      r->sent_n = 0;
    }
  }
  if (first >= r->nrows) return -1;

  memset(entries, 0, sizeof entries);
  for (size_t i = 0; i < n; i++) {
    const ob__relay_row_t* row = &r->rows[first + i];
    ids[i][0] = 'e';
    ids[i][1] = (char)('0' + i);  /* i < 10 */
    ids[i][2] = '\0';
    attrs[i][0] = (ob__sqs_attr_t){"eventType", "String", row->event_type,
                                   strlen(row->event_type)};
    attrs[i][1] = (ob__sqs_attr_t){"aggregateId", "String", row->aggregate_id,
                                   strlen(row->aggregate_id)};
    attrs[i][2] = (ob__sqs_attr_t){"causationId", "String", row->causation_id,
                                   strlen(row->causation_id)};
    entries[i].id = ids[i];
    entries[i].body = r->bodies[first + i];
    entries[i].body_len = strlen(r->bodies[first + i]);
    entries[i].delay_seconds = -1;
    entries[i].attrs = attrs[i];
    entries[i].nattrs = 3;
    if (r->fifo) {
      entries[i].dedup_id = row->id;
      entries[i].group_id = row->aggregate_id;
    }
  }
  r->sent_from = first;
  r->sent_n = n;
  r->req.data = r;
  rc = ob__sqs_send_message_batch(r->client, &r->req, r->queue_url, entries, n,
                                 on_sent);
  if (rc < 0) {
    ob__log(ENGINE(r), OB_LOG_ERROR, "relay: cannot send batch: %s (%s)",
            r->req.detail, ob__sqs_err_name(rc));
    r->sent_n = 0;
    return rc;
  }
  r->in_flight = 1;
  return 0;
}

/* The worker's timer: claim what is publishable and send it. */
static void relay_run(ob__worker_t* w) {
  relay_t* r = w->self;
  ob_engine_t* e = ENGINE(r);
  int64_t now, at;
  int n, rc;

  if (r->in_flight) return;
  if (ob__worker_wait_for_probe(w)) return;
  n = ob__relay_take(e, r->token, r->opts.lease_ms, MAX_CLAIM,
                     r->opts.ordered, (const char* const*)r->priority,
                     r->npriority, r->rows);
  if (n < 0) {
    ob__log(e, OB_LOG_ERROR, "relay: claim failed: %s", ob_errmsg(e));
    arm(r, ob__worker_storage_failed(w));
    return;
  }
  ob__worker_storage_ok(w);
  if (n == 0) {
    /* Nothing publishable now: sleep until the next row is due; new rows
    ** wake us through kick(). */
    now = ob__worker_now(w);
    rc = ob__relay_due_at(e, r->opts.ordered, &at);
    if (rc == 0) arm(r, at > now ? at - now : 0);
    return;
  }
  r->nrows = (size_t)n;
  r->sent_from = r->sent_n = 0;
  for (int i = 0; i < n; i++) {
    ob_event_t ev;
    memset(&ev, 0, sizeof ev);
    ev.id = r->rows[i].id;
    ev.causation_id = r->rows[i].causation_id;
    ev.event_type = r->rows[i].event_type;
    ev.aggregate_id = r->rows[i].aggregate_id;
    ev.payload = r->rows[i].payload;
    ev.payload_len = r->rows[i].payload_len;
    ev.created_at_ms = r->rows[i].created_at;
    ev.traceparent = r->rows[i].traceparent;
    ev.tracestate = r->rows[i].tracestate;
    ev.wall_behind_ms = r->rows[i].wall_behind_ms;
    r->bodies[i] = ob__cloudevent_encode(&ev, r->source, NULL);
    if (r->bodies[i] == NULL) {
      ob__log(e, OB_LOG_ERROR, "relay: out of memory");
      release_claims(r);
      arm(r, ob__worker_storage_failed(w));
      return;
    }
  }
  if (send_next(r) < 0) {
    release_claims(r);
    arm(r, ob__worker_storage_failed(w));
  }
}

/* ---- the worker's callbacks ----------------------------------------------- */

static int relay_open(ob__worker_t* w, uv_loop_t* loop, char* err,
                      size_t errlen) {
  relay_t* r = w->self;
  return ob__sqs_client_open_aws(&r->client, loop, &r->aws,
                                 ob__engine_clock(w->e), err, errlen);
}

static void relay_close_client(ob__worker_t* w) {
  relay_t* r = w->self;
  /* In-flight batch: completes with OB_ECANCELED, which releases the claims
  ** before the client's close callback. */
  ob__worker_close_sqs(w, &r->client);
}

static void relay_started(ob__worker_t* w) {
  relay_t* r = w->self;
  ob__engine_new_id(w->e, r->token);
  arm(r, 0);
  ob__log(w->e, OB_LOG_INFO, "relay: publishing the outbox to %s%s",
          r->queue_url, r->fifo ? " (FIFO)" : "");
}

static void relay_kick(ob__worker_t* w) {
  relay_t* r = w->self;
  if (!r->in_flight && w->link.online) arm(r, 0);
}

static void relay_network(ob__worker_t* w) {
  relay_t* r = w->self;
  if (!r->in_flight) arm(r, 0);
}

static int relay_idle(ob__worker_t* w) {
  relay_t* r = w->self;
  int64_t at, now = ob__worker_now(w);
  if (r->in_flight) return OB__IDLE_BUSY;
  if (ob__relay_due_at(w->e, r->opts.ordered, &at) != 0) return OB__IDLE_DONE;
  /* Rows left: publishable later, or now but SQS can't be reached. */
  if (!w->link.online) return OB__IDLE_BLOCKED;
  /* A row due within the horizon (a retry's backoff about to end) is
  ** published in this run; later ones are left for the next. */
  return at - now > ob__idle_horizon_ms(w->e) ? OB__IDLE_DONE : OB__IDLE_BUSY;
}

static int relay_drain(ob__worker_t* w) {
  relay_t* r = w->self;
  if (!r->in_flight && r->nrows == 0 && !ob__engine_in_tx(w->e))
    (void)ob__relay_give_back(w->e, r->token);  /* defensive: nothing held */
  return 0;
}

static void relay_destroy(void* self) {
  relay_t* r = self;
  free_rows(r);
  for (int i = 0; i < r->npriority; i++) free(r->priority[i]);
  ob__aws_config_free(&r->aws);
  free(r->queue_url);
  free(r->source);
  free(r);
}

static const ob__worker_ops_t relay_ops = {
    .open = relay_open,
    .close_client = relay_close_client,
    .started = relay_started,
    .run = relay_run,
    .idle = relay_idle,
    .kick = relay_kick,
    .network = relay_network,
    .drain = relay_drain,
    .destroy = relay_destroy,
};

/* The TLS version and suite to SQS, at debug level, when they change. */
static void log_tls(relay_t* r) {
  ob__sqs_stats_t st;
  char now[sizeof r->tls_logged];
  if (r->client == NULL) return;
  ob__sqs_client_stats(r->client, &st);
  snprintf(now, sizeof now, "%s %s", st.tls_version, st.tls_suite);
  if (st.tls_version[0] == '\0' || strcmp(now, r->tls_logged) == 0) return;
  memcpy(r->tls_logged, now, sizeof now);
  ob__log(ENGINE(r), OB_LOG_DEBUG, "relay: SQS over %s, %s", st.tls_version,
          st.tls_suite);
}

int ob__relay_progress(ob_engine_t* e, ob__relay_progress_t* out) {
  memset(out, 0, sizeof *out);
  for (size_t i = 0; e != NULL && i < ob__engine_ncomponents(e); i++) {
    const ob__component_t* c = ob__engine_component(e, i);
    const ob__worker_t* w = c->self;
    const relay_t* r;
    /* "relay" is this file's component (ob_relay_enable registers it, at
    ** most once per engine); its self is the worker embedded in relay_t. */
    if (strcmp(c->name, "relay") != 0 || w == NULL) continue;
    r = w->self;
    out->published = r->published;
    out->parked = r->parked;
    out->busy = r->in_flight || r->nrows > 0;
    out->online = w->link.online;
    if (r->client != NULL) {
      ob__sqs_stats_t st;
      ob__sqs_client_stats(r->client, &st);
      memcpy(out->tls_version, st.tls_version, sizeof out->tls_version);
      memcpy(out->tls_suite, st.tls_suite, sizeof out->tls_suite);
    }
    return 0;
  }
  return OB_ENOTFOUND;
}

/* At most OB__RELAY_MAX_PRIORITY distinct non-empty names. */
static int check_priority(const char* const* types, char* errbuf,
                          size_t errlen) {
  int n = 0;
  for (; types[n] != NULL; n++) {
    if (n == OB__RELAY_MAX_PRIORITY)
      return ob__errbuf_set(errbuf, errlen, OB_EINVAL, "more than %d "
                            "priority event types", OB__RELAY_MAX_PRIORITY);
    if (types[n][0] == '\0')
      return ob__errbuf_set(errbuf, errlen, OB_EINVAL, "priority event type "
                            "%d is empty", n + 1);
    for (int k = 0; k < n; k++)
      if (strcmp(types[k], types[n]) == 0)
        return ob__errbuf_set(errbuf, errlen, OB_EINVAL, "priority event "
                              "type \"%.64s\" is listed twice", types[n]);
  }
  return n;
}

void ob_relay_options_init(ob_relay_options_t* o) {
  memset(o, 0, sizeof *o);
  o->park_after = 10;
  o->backoff_base_ms = 1000;
  o->backoff_cap_ms = 300000;
  ob__probe_options_init(&o->probe, 300000);
  o->lease_ms = 60000;
}

int ob_relay_enable(ob_engine_t* e, const ob_relay_options_t* o, char* errbuf,
                    size_t errlen) {
  relay_t* r;
  const char* const* priority;
  char host[128], source[200], warn[768];
  const char* why;
  int rc, npriority, plain = 0;

  if (errbuf && errlen) errbuf[0] = '\0';
  if (o == NULL) return OB_EINVAL;
  rc = ob__worker_check(e, "relay", &o->probe, errbuf, errlen);
  if (rc == OB_EEXIST)
    return ob__errbuf_set(errbuf, errlen, rc, "a relay is already enabled");
  if (rc < 0) return rc;
  if ((why = ob__sqs_queue_url_problem(o->queue_url)) != NULL)
    return ob__errbuf_set(errbuf, errlen, OB_EINVAL, "outbox queue URL %s",
                          why);
  if (o->park_after < 0 || o->backoff_base_ms < 1 || o->backoff_cap_ms < 1 ||
      o->lease_ms < 1000)
    return ob__errbuf_set(errbuf, errlen, OB_EINVAL, "relay options out of "
                          "range (backoffs >= 1 ms, lease >= 1 s, "
                          "park_after >= 0)");
  /* Unless told otherwise, what the modules marked: their money goes out
  ** first when a terminal is back online. */
  if (o->priority_types != NULL)
    priority = o->priority_types;
  else
    (void)ob__engine_priority_events(e, &priority);
  npriority = check_priority(priority, errbuf, errlen);
  if (npriority < 0) return npriority;
  if (o->source != NULL &&
      (rc = ob__relay_source_check(o->source, errbuf, errlen)) < 0)
    return rc;
  r = calloc(1, sizeof *r);
  if (r == NULL) return OB_ENOMEM;
  r->opts = *o;
  r->opts.priority_types = NULL;  /* the caller's; r->priority is ours */
  for (int i = 0; i < npriority; i++) {
    if ((r->priority[i] = strdup(priority[i])) == NULL) {
      relay_destroy(r);
      return OB_ENOMEM;
    }
    r->npriority = i + 1;
  }
  if (o->source == NULL) {
    if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "terminal");
    host[sizeof host - 1] = '\0';
    ob__relay_default_source(host, source, sizeof source);
  }
  r->queue_url = strdup(o->queue_url);
  r->source = strdup(o->source ? o->source : source);
  r->fifo = ob__relay_queue_is_fifo(o->queue_url);
  if (r->queue_url == NULL || r->source == NULL) {
    relay_destroy(r);
    return OB_ENOMEM;
  }
  rc = ob__aws_config_load(&r->aws, NULL, NULL, NULL, errbuf, errlen);
  /* http:// only with the opt-in (docs/security.md, "Plain HTTP"). */
  if (rc == 0)
    plain = rc = ob__aws_plain_http_check(&r->aws, o->allow_http, warn,
                                          sizeof warn, errbuf, errlen);
  if (rc >= 0)
    rc = ob__worker_register(&r->w, e, "relay", &relay_ops, r, &o->probe,
                             errbuf, errlen);
  if (rc < 0) {
    relay_destroy(r);
    return rc;
  }
  if (plain == 1) ob__log(e, OB_LOG_WARN, "relay: %s", warn);
  ob__engine_counters(e)->relay_enabled = 1;
  return 0;
}
