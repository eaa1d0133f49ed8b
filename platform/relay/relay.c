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
**   - credentials, TLS or a missing queue are configuration faults: rows are
**     not charged, the relay backs off as if offline and says why. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "core/engine/engine_int.h"
#include "core/relay/cloudevents.h"
#include "core/relay/relay_policy.h"
#include "platform/aws/aws_config.h"
#include "platform/sqs/sqs_client.h"

#define MAX_CLAIM OB__SQS_MAX_BATCH_ENTRIES

typedef struct relay_s {
  ob_engine_t* e;
  uv_loop_t* loop;
  ob_relay_options_t opts;
  char* queue_url;
  char* source;
  int fifo;
  ob__aws_config_t aws;
  ob__sqs_client_t* client;
  uv_timer_t timer;
  int timer_open;
  ob__relay_link_t link;
  char token[OB_UUID_BUFLEN];

  /* The batch in flight. */
  ob__sqs_req_t req;
  int in_flight;
  ob__relay_row_t rows[MAX_CLAIM];
  char* bodies[MAX_CLAIM];
  size_t nrows;      /* rows claimed */
  size_t sent_from;  /* first row of the sub-batch in flight */
  size_t sent_n;     /* rows in the sub-batch in flight */

  int closing;
  int pending_closes;
  void (*done)(void*);
  void* done_arg;
  int64_t published;
} relay_t;

static void arm(relay_t* r, int64_t delay_ms);

static int64_t now_ms(relay_t* r) {
  return ob__now(r->e);
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
  if (r->e->db.in_tx) return;
  if (ob__relay_status_set(&r->e->db, "outbox", online, published_at, error,
                           now_ms(r)) < 0)
    ob__log(r->e, OB_LOG_WARN, "relay: cannot record status: %s",
            ob_errmsg(r->e));
}

/* Give the claims back (shutdown, configuration fault): another relay, or
** this one later, publishes the rows. */
static void release_claims(relay_t* r) {
  if (ob__relay_release(&r->e->db, r->token) < 0)
    ob__log(r->e, OB_LOG_WARN, "relay: cannot release claims (they expire "
            "with their lease): %s", ob_errmsg(r->e));
  free_rows(r);
}

static int send_next(relay_t* r);

/* Mark each row of the sub-batch in one transaction. ok[i]: 1 published,
** 0 failed (error[i], park[i]). */
static void settle(relay_t* r, const int* ok, const char* const* error,
                   const int* park) {
  int64_t now = now_ms(r);
  int rc, published = 0;
  /* synchronous=NORMAL for the marks: a mark lost to a power cut only
  ** publishes the row again with the same id, which at-least-once allows;
  ** paying an fsync per batch for it halved the relay's rate
  ** (docs/decisions/0008-relay-bookkeeping-durability.md). */
  rc = ob__db_begin_relaxed(&r->e->db);
  for (size_t i = 0; rc >= 0 && i < r->sent_n; i++) {
    ob__relay_row_t* row = &r->rows[r->sent_from + i];
    if (ok[i]) {
      rc = ob__relay_mark_published(&r->e->db, row->id, r->token, now);
      if (rc == 1) published++;
    } else {
      int64_t d = ob__relay_row_backoff(r->opts.backoff_base_ms,
                                        r->opts.backoff_cap_ms,
                                        row->attempt_count + 1,
                                        r->e->opts.clock);
      rc = ob__relay_mark_failed(&r->e->db, row->id, r->token, now + d,
                                 error[i], park[i] ? r->opts.park_after : 0,
                                 now);
      if (rc == 1 && park[i] && r->opts.park_after > 0 &&
          row->attempt_count + 1 >= r->opts.park_after)
        ob__log(r->e, OB_LOG_WARN, "relay: event %s parked after %d "
                "attempts: %s", row->id, row->attempt_count + 1, error[i]);
    }
    if (rc == 0)
      ob__log(r->e, OB_LOG_DEBUG, "relay: lease on %s was lost", row->id);
  }
  if (rc >= 0 && published > 0)
    rc = ob__relay_status_set(&r->e->db, "outbox", 1, now, NULL, now);
  if (rc >= 0) rc = ob__db_commit(&r->e->db);
  else ob__db_rollback(&r->e->db);
  if (rc < 0) {
    /* Nothing marked: the rows stay claimed until the lease expires and are
    ** published again then. At-least-once, as documented. */
    ob__log(r->e, OB_LOG_ERROR, "relay: cannot record results: %s",
            ob_errmsg(r->e));
    return;
  }
  r->published += published;
}

static void on_sent(ob__sqs_req_t* req, int status) {
  relay_t* r = req->data;
  int ok[MAX_CLAIM], park[MAX_CLAIM];
  const char* error[MAX_CLAIM];
  char errbuf[MAX_CLAIM][OB__REASON_LEN];
  int64_t delay;

  r->in_flight = 0;
  if (status == OB_ECANCELED) {
    /* Shutdown: we cannot know whether SQS applied it. Give the rows back:
    ** they are published again later, with the same ids. */
    ob__sqs_req_cleanup(req);
    release_claims(r);
    return;
  }
  memset(park, 0, sizeof park);
  if (status == 0) {
    int back = ob__relay_link_ok(&r->link);
    if (back) ob__log(r->e, OB_LOG_INFO, "relay: SQS reachable again");
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
    settle(r, ok, error, park);
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

  /* The request as a whole failed. */
  if (status == OB__SQS_E_AUTH || status == OB__SQS_E_NO_QUEUE ||
      status == OB__HTTP_E_TLS_HOSTNAME || status == OB__HTTP_E_TLS_EXPIRED ||
      status == OB__HTTP_E_TLS_FUTURE || status == OB__HTTP_E_TLS_UNTRUSTED ||
      status == OB__HTTP_E_TLS_CERT || status == OB__HTTP_E_TLS_PROTOCOL) {
    ob__log(r->e, OB_LOG_ERROR, "relay: %s (%s); retrying with backoff",
            req->detail, ob__sqs_err_name(status));
    record_status(r, req->http_status != 0, 0, req->detail);
    ob__sqs_req_cleanup(req);
    release_claims(r);
    delay = ob__relay_link_failed(&r->link, now_ms(r), r->e->opts.clock);
    arm(r, delay);
    return;
  }
  if (ob__sqs_status_is_transient(status) || status == OB__SQS_E_CHECKSUM) {
    /* SQS unreachable, overloaded or throttling after the client's own
    ** retries: nothing is wrong with the rows. They are not charged and not
    ** backed off (the relay's probing decides when to try again), so a
    ** terminal that comes back online publishes everything at once. A
    ** checksum mismatch may mean SQS did take the batch: sending again
    ** later only duplicates, with the same ids. */
    if (r->link.online)
      ob__log(r->e, OB_LOG_WARN, "relay: SQS unreachable (%s); outbox "
              "accumulates, probing with backoff", req->detail);
    record_status(r, req->http_status != 0, 0, req->detail);
    delay = ob__relay_link_failed(&r->link, now_ms(r), r->e->opts.clock);
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
    settle(r, ok, error, park);
    ob__log(r->e, OB_LOG_WARN, "relay: batch refused: %s", req->detail);
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
      int saved = r->opts.park_after;
      r->opts.park_after = 1;
      settle(r, &ok, &err, &park);
      r->opts.park_after = saved;
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
    ob__log(r->e, OB_LOG_ERROR, "relay: cannot send batch: %s (%s)",
            r->req.detail, ob__sqs_err_name(rc));
    r->sent_n = 0;
    return rc;
  }
  r->in_flight = 1;
  return 0;
}

static void timer_cb(uv_timer_t* t) {
  relay_t* r = t->data;
  int64_t now = now_ms(r), at;
  int n, rc;

  if (r->closing || r->in_flight || r->e->stopping) return;
  if (!r->link.online && now < r->link.next_probe_at) {
    arm(r, r->link.next_probe_at - now);
    return;
  }
  /* Never claim inside a handler's transaction (the loop is ours here, but
  ** be explicit: the claim is its own short transaction). */
  if (r->e->db.in_tx) {
    arm(r, 10);
    return;
  }
  n = ob__relay_claim(&r->e->db, r->token, now, now + r->opts.lease_ms,
                      MAX_CLAIM, r->opts.ordered, r->rows);
  if (n < 0) {
    ob__log(r->e, OB_LOG_ERROR, "relay: claim failed: %s", ob_errmsg(r->e));
    arm(r, 1000);
    return;
  }
  if (n == 0) {
    /* Nothing publishable now: sleep until the next row is due; new rows
    ** wake us through kick(). */
    rc = ob__relay_next_due(&r->e->db, now, r->opts.ordered, &at);
    if (rc == 0) arm(r, at > now ? at - now : 0);
    return;
  }
#ifdef OB_MUTANT_PUBLISH_BEFORE_2XX
  /* MUTANT for tests/integration/relay only (issue 6 item 2): the claimed
  ** rows are marked published before SQS answered. Built into a separate
  ** test library; never define it elsewhere. */
  for (int i = 0; i < n; i++)
    (void)ob__relay_mark_published(&r->e->db, r->rows[i].id, r->token, now);
#endif
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
    r->bodies[i] = ob__cloudevent_encode(&ev, r->source, NULL);
    if (r->bodies[i] == NULL) {
      ob__log(r->e, OB_LOG_ERROR, "relay: out of memory");
      release_claims(r);
      arm(r, 1000);
      return;
    }
  }
  if (send_next(r) < 0) {
    release_claims(r);
    arm(r, 1000);
  }
}

static void arm(relay_t* r, int64_t delay_ms) {
  if (r->closing || !r->timer_open) return;
  if (delay_ms < 0) delay_ms = 0;
  uv_timer_start(&r->timer, timer_cb, (uint64_t)delay_ms, 0);
}

/* ---- component interface ------------------------------------------------ */

static int relay_start(void* self, ob_engine_t* e, uv_loop_t* loop) {
  relay_t* r = self;
  ob__sqs_client_config_t cfg;
  char err[256];
  int rc;

  r->e = e;
  r->loop = loop;
  r->closing = 0;
  ob__uuid7_next(&e->idgen, e->opts.clock, r->token);
  ob__relay_link_init(&r->link, r->opts.probe_base_ms, r->opts.probe_cap_ms);
  ob__sqs_client_config_init(&cfg);
  ob__sqs_client_config_from_aws(&cfg, &r->aws);
  cfg.clock = e->opts.clock;
  rc = ob__sqs_client_open(&r->client, loop, &cfg, err, sizeof err);
  if (rc < 0) {
    ob__db_seterr(&e->db, rc, "relay: %s", err);
    return rc;
  }
  uv_timer_init(loop, &r->timer);
  r->timer.data = r;
  r->timer_open = 1;
  arm(r, 0);
  ob__log(e, OB_LOG_INFO, "relay: publishing the outbox to %s%s",
          r->queue_url, r->fifo ? " (FIFO)" : "");
  return 0;
}

static void relay_kick(void* self) {
  relay_t* r = self;
  if (!r->in_flight && r->link.online) arm(r, 0);
}

static void relay_network(void* self) {
  relay_t* r = self;
  ob__relay_link_nudge(&r->link, now_ms(r));
  if (!r->in_flight) arm(r, 0);
}

static int relay_idle(void* self) {
  relay_t* r = self;
  int64_t at, now = now_ms(r);
  if (r->in_flight) return 0;
  if (!r->link.online) return 1;  /* cannot publish right now */
  if (ob__relay_next_due(&r->e->db, now, r->opts.ordered, &at) != 0) return 1;
  return at > now;
}

static void part_closed(relay_t* r) {
  if (--r->pending_closes > 0) return;
  r->client = NULL;
  if (r->done) r->done(r->done_arg);
}

static void timer_closed(uv_handle_t* h) {
  relay_t* r = h->data;
  r->timer_open = 0;
  part_closed(r);
}

static void client_closed(ob__sqs_client_t* c, void* arg) {
  (void)c;
  part_closed(arg);
}

static void relay_close(void* self, void (*done)(void*), void* arg) {
  relay_t* r = self;
  r->closing = 1;
  r->done = done;
  r->done_arg = arg;
  r->pending_closes = 2;
  uv_timer_stop(&r->timer);
  uv_close((uv_handle_t*)&r->timer, timer_closed);
  /* In-flight batch: completes with OB_ECANCELED, which releases the claims
  ** before the client's close callback. */
  ob__sqs_client_close(r->client, client_closed, r);
  if (!r->in_flight && r->nrows == 0 && !r->e->db.in_tx)
    ob__relay_release(&r->e->db, r->token);  /* defensive: nothing held */
}

static void relay_destroy(void* self) {
  relay_t* r = self;
  free_rows(r);
  ob__aws_config_free(&r->aws);
  free(r->queue_url);
  free(r->source);
  free(r);
}

void ob_relay_options_init(ob_relay_options_t* o) {
  memset(o, 0, sizeof *o);
  o->park_after = 10;
  o->backoff_base_ms = 1000;
  o->backoff_cap_ms = 300000;
  o->probe_base_ms = 1000;
  o->probe_cap_ms = 300000;
  o->lease_ms = 60000;
}

int ob_relay_enable(ob_engine_t* e, const ob_relay_options_t* o, char* errbuf,
                    size_t errlen) {
  relay_t* r;
  ob__component_t c;
  char host[128], source[200];
  const char* why;
  int rc;

  if (errbuf && errlen) errbuf[0] = '\0';
  if (e == NULL || o == NULL) return OB_EINVAL;
  if (e->runner != NULL) return OB_ESTATE;
  if ((why = ob__sqs_queue_url_problem(o->queue_url)) != NULL) {
    if (errbuf) snprintf(errbuf, errlen, "outbox queue URL %s", why);
    return OB_EINVAL;
  }
  if (o->park_after < 0 || o->backoff_base_ms < 1 || o->backoff_cap_ms < 1 ||
      o->probe_base_ms < 1 || o->probe_cap_ms < 1 || o->lease_ms < 1000) {
    if (errbuf) snprintf(errbuf, errlen, "relay options out of range "
                         "(backoffs >= 1 ms, lease >= 1 s, park_after >= 0)");
    return OB_EINVAL;
  }
  r = calloc(1, sizeof *r);
  if (r == NULL) return OB_ENOMEM;
  r->opts = *o;
  if (o->source == NULL) {
    if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "terminal");
    host[sizeof host - 1] = '\0';
    snprintf(source, sizeof source, "urn:oncebox:%s", host);
  }
  r->queue_url = strdup(o->queue_url);
  r->source = strdup(o->source ? o->source : source);
  r->fifo = ob__relay_queue_is_fifo(o->queue_url);
  if (r->queue_url == NULL || r->source == NULL) {
    relay_destroy(r);
    return OB_ENOMEM;
  }
  rc = ob__aws_config_load(&r->aws, NULL, NULL, NULL, errbuf, errlen);
  if (rc < 0) {
    relay_destroy(r);
    return rc;
  }
  memset(&c, 0, sizeof c);
  c.name = "relay";
  c.self = r;
  c.start = relay_start;
  c.kick = relay_kick;
  c.network = relay_network;
  c.idle = relay_idle;
  c.close = relay_close;
  c.destroy = relay_destroy;
  rc = ob__engine_add_component(e, &c);
  if (rc < 0) {
    relay_destroy(r);
    if (errbuf && rc == OB_EEXIST) snprintf(errbuf, errlen, "a relay is "
                                            "already enabled");
    return rc;
  }
  return 0;
}
