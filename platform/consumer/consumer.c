/*
** The SQS consumer component (see consumer.h for the life of a message).
**
** Everything runs on the engine's loop. Handling is synchronous (one
** transaction, inside ob__handle_external), one message per loop turn, so
** SQS requests in flight and timers progress between messages. Requests:
** at most one ReceiveMessage, one DeleteMessageBatch and one
** ChangeMessageVisibilityBatch in flight at a time, each up to 10 entries.
**
** Every message the consumer holds is in c->msgs, in receive order, in one
** of these states:
**   M_NEW        received, waiting for its transaction (the prefetch buffer)
**   M_DONE       committed (handled, duplicate, or in the failure store):
**                waiting for its delete
**   M_DELETING   in the DeleteMessageBatch in flight
**   M_VIS        retried (vis_s = the delay) or released at close (vis_s 0):
**                waiting for its visibility change, then forgotten
**   M_VIS_SENT   in the ChangeMessageVisibilityBatch in flight
** M_NEW and M_DONE messages are kept invisible (the keepalive); ka_sent
** marks one whose extension is in the visibility batch in flight. A message
** in a batch in flight is never freed by anything but that batch's
** callback.
**
** pump() is the one place that decides what happens next (deletes,
** visibility changes, the next transaction, the next receive, closing);
** every callback and timer ends by calling it.
*/
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "core/engine/engine_int.h"
#include "core/relay/cloudevents.h"
#include "core/relay/relay_policy.h"
#include "platform/aws/aws_config.h"
#include "platform/consumer/consumer.h"
#include "platform/sqs/sqs_client.h"

#define BATCH_MAX OB__SQS_MAX_BATCH_ENTRIES
/* Close: how long committed messages may take to be deleted (and unhandled
** ones released) before they are left to SQS. */
#define CLOSE_DEADLINE_MS 5000
/* After a keepalive extension failed as a whole: try again after this. */
#define KA_RETRY_MS 1000
/* Storage failures pause handling like the runner does: 100 ms doubling. */
#define PAUSE_MAX_MS 30000
/* An empty receive that came back sooner than this (short polling,
** wait_seconds 0) waits out the rest before the next one. */
#define MIN_EMPTY_POLL_MS 1000

enum { M_NEW, M_DONE, M_DELETING, M_VIS, M_VIS_SENT };

typedef struct msg_s {
  struct msg_s* next;
  int state;
  int ka_sent;                /* its extension is in the batch in flight */
  int ka_off;                 /* no more extensions (12 h, or SQS said no) */
  int vis_s;                  /* M_VIS: the visibility to set */
  int receive_count;          /* ApproximateReceiveCount (0 if absent) */
  int64_t first_receive_ms;   /* ApproximateFirstReceiveTimestamp (SQS) */
  int64_t sent_ms;            /* SentTimestamp, -1 if absent */
  uint64_t visible_until;     /* monotonic ms: when it may reappear */
  uint64_t ka_retry_at;       /* monotonic ms: no extension before */
  char* sqs_id;
  char* receipt;
  char* body;                 /* NUL-terminated copy */
  size_t body_len;
} msg_t;

typedef struct batch_s {
  ob__sqs_req_t req;
  int inflight;
  size_t n;
  msg_t* msgs[BATCH_MAX];
  int value[BATCH_MAX];       /* visibility asked for (CMV batches) */
  uint64_t sent_at;           /* monotonic ms */
} batch_t;

typedef struct consumer_s {
  /* Configuration, from ob_consumer_enable. */
  char* queue_url;
  int wait_s;
  int prefetch;
  int vt_s;
  int64_t probe_base_ms;
  int64_t probe_cap_ms;
  ob__aws_config_t aws;        /* kept for a later re-attach; wiped at destroy */

  /* Running state, reset by start(). */
  ob_engine_t* e;
  uv_loop_t* loop;
  ob__sqs_client_t* client;
  uv_timer_t t_handle;        /* the next transaction (0 ms, or a pause) */
  uv_timer_t t_receive;       /* the next receive, after a failed one or
                              ** an early empty one */
  uv_timer_t t_keepalive;     /* the next extension that falls due */
  uv_timer_t t_close;         /* close deadline */
  int timers_open;
  int started;
  ob__relay_link_t link;      /* online until a receive fails */
  ob__sqs_req_t recv;
  uint64_t recv_started;      /* monotonic ms */
  int recv_inflight;
  int recv_wait;              /* wait for t_receive before receiving */
  int received_once;
  int last_empty;             /* the last receive brought no message */
  batch_t del;
  batch_t cmv;
  msg_t* msgs;                /* everything in hand, in receive order */
  int db_failures;
  uint64_t pause_until;       /* monotonic ms: no handling before */
  int closing;                /* 1 flushing, 2 client closing, 3 timers */
  int handling;               /* inside handle_one (handlers may call us) */
  int close_deferred;         /* close() came from inside a handler */
  void (*done)(void* arg);
  void* done_arg;
} consumer_t;

static const char* const k_system_attrs[] = {
    "ApproximateReceiveCount", "ApproximateFirstReceiveTimestamp",
    "SentTimestamp"};
static const char* const k_all_attrs[] = {"All"};

static void pump(consumer_t* c);
static void begin_closing(consumer_t* c);

static uint64_t mono_ms(void) {
  return uv_hrtime() / 1000000u;
}

/* SQS's clock, as the SQS client learned it from Date headers. */
static int64_t server_now(const consumer_t* c) {
  ob__sqs_stats_t s;
  ob__sqs_client_stats(c->client, &s);
  return ob__now(c->e) + s.clock_offset_ms;
}

static uint64_t vt_ms(const consumer_t* c) {
  return (uint64_t)c->vt_s * 1000u;
}

/* ---- messages ------------------------------------------------------------ */

static void msg_free(msg_t* m) {
  if (m == NULL) return;
  free(m->sqs_id);
  free(m->receipt);
  free(m->body);
  free(m);
}

static msg_t* msg_new(consumer_t* c, const ob__sqs_message_t* s,
                      uint64_t now) {
  msg_t* m = calloc(1, sizeof *m);
  if (m == NULL) return NULL;
  m->sqs_id = strdup(s->message_id ? s->message_id : "");
  m->receipt = strdup(s->receipt_handle ? s->receipt_handle : "");
  m->body = malloc(s->body_len + 1);
  if (m->sqs_id == NULL || m->receipt == NULL || m->body == NULL) {
    msg_free(m);
    return NULL;
  }
  if (s->body_len > 0) memcpy(m->body, s->body, s->body_len);
  m->body[s->body_len] = '\0';
  m->body_len = s->body_len;
  m->receive_count = s->receive_count > INT_MAX ? INT_MAX
                     : s->receive_count < 0   ? 0
                                              : (int)s->receive_count;
  /* Without the attribute, now is a safe stand-in: it is not earlier. */
  m->first_receive_ms = s->first_receive_timestamp_ms >= 0
                            ? s->first_receive_timestamp_ms
                            : server_now(c);
  m->sent_ms = s->sent_timestamp_ms;
  /* We asked for VisibilityTimeout = vt_s: it runs from about now. */
  m->visible_until = now + vt_ms(c);
  return m;
}

static void msg_append(consumer_t* c, msg_t* m) {
  msg_t** pp = &c->msgs;
  while (*pp != NULL) pp = &(*pp)->next;
  m->next = NULL;
  *pp = m;
}

/* Unlink and free. */
static void msg_remove(consumer_t* c, msg_t* m) {
  for (msg_t** pp = &c->msgs; *pp != NULL; pp = &(*pp)->next)
    if (*pp == m) {
      *pp = m->next;
      break;
    }
  msg_free(m);
}

static int in_flight(const msg_t* m) {
  return m->ka_sent || m->state == M_DELETING || m->state == M_VIS_SENT;
}

/* Forget every message that no batch in flight refers to: it stays with
** SQS and comes back when its visibility ends (a committed one as a
** duplicate). */
static void drop_idle_messages(consumer_t* c) {
  msg_t** pp = &c->msgs;
  while (*pp != NULL) {
    msg_t* m = *pp;
    if (in_flight(m)) {
      pp = &m->next;
      continue;
    }
    *pp = m->next;
    msg_free(m);
  }
}

static msg_t* first_in(const consumer_t* c, int state) {
  for (msg_t* m = c->msgs; m != NULL; m = m->next)
    if (m->state == state) return m;
  return NULL;
}

/* Seconds this message may still be held invisible (<= 0: none). */
static int budget_s(const consumer_t* c, const msg_t* m) {
  return ob__consumer_visibility_budget_s(m->first_receive_ms, server_now(c));
}

/* Batch entry Ids: "0".."9", the index into batch.msgs. */
static void batch_id(char id[2], size_t i) {
  id[0] = (char)('0' + i);
  id[1] = '\0';
}

static int batch_index(const char* id) {
  if (id == NULL || id[0] < '0' || id[0] > '9' || id[1] != '\0') return -1;
  return id[0] - '0';
}

/* ---- deletes ------------------------------------------------------------- */

static void on_deleted(ob__sqs_req_t* req, int status) {
  consumer_t* c = req->data;
  ob_engine_t* e = c->e;

  c->del.inflight = 0;
  /* A failed delete is harmless: each of these messages is committed, so
  ** when SQS delivers it again the dedup guard finds it processed, it is
  ** acknowledged as a duplicate and deleted then. That also covers a lost
  ** reply (the delete applied, the answer gone): the client's retry of it
  ** succeeds or SQS never brings the message back. */
  if (status == 0) {
    for (size_t i = 0; i < req->batch.nfailed; i++) {
      const ob__sqs_batch_err_t* f = &req->batch.failed[i];
      int k = batch_index(f->id);
      ob__log(e, OB_LOG_WARN,
              "sqs consumer: delete of message %s refused: %s: %s; it will "
              "come back and be acknowledged as a duplicate",
              k >= 0 && (size_t)k < c->del.n ? c->del.msgs[k]->sqs_id : "?",
              f->code, f->message);
    }
  } else if (status != OB_ECANCELED) {
    ob__log(e, OB_LOG_WARN,
            "sqs consumer: DeleteMessageBatch of %zu messages failed: %s; "
            "they will come back and be acknowledged as duplicates",
            c->del.n, req->detail);
  }
  for (size_t i = 0; i < c->del.n; i++) msg_remove(c, c->del.msgs[i]);
  c->del.n = 0;
  ob__sqs_req_cleanup(req);
  pump(c);
}

/* Delete up to 10 committed messages. Only when SQS can be reached: an
** offline consumer keeps them (and drops them at close). */
static void flush_deletes(consumer_t* c) {
  ob__sqs_handle_entry_t ent[BATCH_MAX];
  char ids[BATCH_MAX][2];
  size_t n = 0;
  int rc;

  if (c->del.inflight || !c->link.online || c->closing >= 2) return;
  for (msg_t* m = c->msgs; m != NULL && n < BATCH_MAX; m = m->next) {
    if (m->state != M_DONE || m->ka_sent) continue;
    batch_id(ids[n], n);
    ent[n].id = ids[n];
    ent[n].receipt_handle = m->receipt;
    ent[n].visibility_timeout = -1;
    c->del.msgs[n++] = m;
  }
  if (n == 0) return;
  c->del.req.data = c;
  rc = ob__sqs_delete_message_batch(c->client, &c->del.req, c->queue_url, ent,
                                   n, on_deleted);
  if (rc < 0) {
    ob__log(c->e, OB_LOG_WARN,
            "sqs consumer: cannot send DeleteMessageBatch: %s (%s); the "
            "messages will come back and be acknowledged as duplicates",
            ob__sqs_strerror(rc), c->del.req.detail);
    for (size_t i = 0; i < n; i++) msg_remove(c, c->del.msgs[i]);
    ob__sqs_req_cleanup(&c->del.req);
    return;
  }
  for (size_t i = 0; i < n; i++) c->del.msgs[i]->state = M_DELETING;
  c->del.n = n;
  c->del.inflight = 1;
}

/* ---- visibility: retries, releases, keepalive ---------------------------- */

static const ob__sqs_batch_err_t* entry_failed(const ob__sqs_req_t* req,
                                               size_t i) {
  for (size_t k = 0; k < req->batch.nfailed; k++)
    if (batch_index(req->batch.failed[k].id) == (int)i)
      return &req->batch.failed[k];
  return NULL;
}

static void on_visibility(ob__sqs_req_t* req, int status) {
  consumer_t* c = req->data;
  ob_engine_t* e = c->e;
  uint64_t now = mono_ms();

  c->cmv.inflight = 0;
  if (status != 0 && status != OB_ECANCELED)
    ob__log(e, OB_LOG_WARN,
            "sqs consumer: ChangeMessageVisibilityBatch failed: %s",
            req->detail);
  for (size_t i = 0; i < c->cmv.n; i++) {
    msg_t* m = c->cmv.msgs[i];
    const ob__sqs_batch_err_t* f = status == 0 ? entry_failed(req, i) : NULL;
    if (m->state == M_VIS_SENT) {
      /* Not applied: it comes back when its current visibility ends, which
      ** is only sooner than asked. */
      if (f != NULL)
        ob__log(e, OB_LOG_WARN,
                "sqs consumer: visibility %d s of message %s refused: %s: %s",
                c->cmv.value[i], m->sqs_id, f->code, f->message);
      msg_remove(c, m);
      continue;
    }
    m->ka_sent = 0;
    if (status == 0 && f == NULL) {
      /* Counted from the call: the request left at sent_at or later. */
      m->visible_until = c->cmv.sent_at + (uint64_t)c->cmv.value[i] * 1000u;
    } else if (status == 0) {
      /* SQS no longer holds it for us (e.g. its visibility already ended):
      ** stop extending; handling it is still right, the dedup guard makes
      ** a second delivery a duplicate. */
      m->ka_off = 1;
      ob__log(e, OB_LOG_INFO,
              "sqs consumer: keepalive of message %s refused: %s: %s",
              m->sqs_id, f->code, f->message);
    } else {
      m->ka_retry_at = now + KA_RETRY_MS;
    }
  }
  c->cmv.n = 0;
  ob__sqs_req_cleanup(req);
  pump(c);
}

static void on_keepalive_timer(uv_timer_t* t) {
  pump(t->data);
}

/* Send the pending visibility changes (retry delays, releases) and the
** keepalive extensions that fall due, up to 10; arm the keepalive timer for
** the next one. An extension falls due when less than half the visibility
** timeout is left. */
static void flush_visibility(consumer_t* c, uint64_t now) {
  ob__sqs_handle_entry_t ent[BATCH_MAX];
  char ids[BATCH_MAX][2];
  uint64_t half = vt_ms(c) / 2;
  uint64_t next_due = UINT64_MAX;
  size_t n = 0;
  int rc;

  if (c->cmv.inflight || c->closing >= 2) return;  /* its callback pumps */
  uv_timer_stop(&c->t_keepalive);
  if (!c->link.online) {
    /* Nothing can reach SQS: retried messages come back when their
    ** current visibility ends, a bit early; no extension is attempted. */
    msg_t** pp = &c->msgs;
    while (*pp != NULL) {
      msg_t* m = *pp;
      if (m->state == M_VIS) {
        *pp = m->next;
        msg_free(m);
      } else {
        pp = &m->next;
      }
    }
    return;
  }
  for (msg_t* m = c->msgs; m != NULL && n < BATCH_MAX; m = m->next) {
    if (m->state != M_VIS) continue;
    batch_id(ids[n], n);
    ent[n].id = ids[n];
    ent[n].receipt_handle = m->receipt;
    ent[n].visibility_timeout = m->vis_s;
    c->cmv.value[n] = m->vis_s;
    c->cmv.msgs[n++] = m;
  }
  for (msg_t* m = c->msgs; m != NULL; m = m->next) {
    uint64_t due;
    int ext;
    if ((m->state != M_NEW && m->state != M_DONE) || m->ka_off) continue;
    due = m->visible_until > half ? m->visible_until - half : 0;
    if (m->ka_retry_at > due) due = m->ka_retry_at;
    if (due > now || n == BATCH_MAX) {
      if (due < next_due) next_due = due;
      continue;
    }
    /* Never past 12 h after the first receive. */
    ext = budget_s(c, m);
    if (ext > c->vt_s) ext = c->vt_s;
    if (ext < 1) {
      m->ka_off = 1;
      ob__log(c->e, OB_LOG_INFO,
              "sqs consumer: message %s reached the 12 h visibility limit; "
              "no more keepalive",
              m->sqs_id);
      continue;
    }
    batch_id(ids[n], n);
    ent[n].id = ids[n];
    ent[n].receipt_handle = m->receipt;
    ent[n].visibility_timeout = ext;
    c->cmv.value[n] = ext;
    c->cmv.msgs[n++] = m;
  }
  if (n > 0) {
    c->cmv.req.data = c;
    rc = ob__sqs_change_visibility_batch(c->client, &c->cmv.req, c->queue_url,
                                        ent, n, on_visibility);
    if (rc == 0) {
      for (size_t i = 0; i < n; i++) {
        if (c->cmv.msgs[i]->state == M_VIS) c->cmv.msgs[i]->state = M_VIS_SENT;
        else c->cmv.msgs[i]->ka_sent = 1;
      }
      c->cmv.n = n;
      c->cmv.sent_at = now;
      c->cmv.inflight = 1;
      return;
    }
    ob__log(c->e, OB_LOG_WARN,
            "sqs consumer: cannot send ChangeMessageVisibilityBatch: %s (%s)",
            ob__sqs_strerror(rc), c->cmv.req.detail);
    ob__sqs_req_cleanup(&c->cmv.req);
    for (size_t i = 0; i < n; i++) {
      msg_t* m = c->cmv.msgs[i];
      if (m->state == M_VIS) {
        msg_remove(c, m);
      } else {
        m->ka_retry_at = now + KA_RETRY_MS;
        if (m->ka_retry_at < next_due) next_due = m->ka_retry_at;
      }
    }
  }
  if (next_due != UINT64_MAX)
    uv_timer_start(&c->t_keepalive, on_keepalive_timer,
                   next_due > now ? next_due - now : 0, 0);
}

/* ---- handling ------------------------------------------------------------ */

/* {"sqsMessageId":"..."} for ids of safe characters (SQS's are UUIDs);
** NULL-equivalent "" otherwise. */
static const char* headers_json(const char* sqs_id, char* buf, size_t cap) {
  size_t n = strlen(sqs_id);
  if (n == 0 || n > 128 ||
      strspn(sqs_id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                     "0123456789-_.:") != n)
    return NULL;
  ob__fmt(buf, cap, "{\"sqsMessageId\":\"%s\"}", sqs_id);
  return buf;
}

static int attempts_of(const msg_t* m) {
  return m->receive_count > 1 ? m->receive_count - 1 : 0;
}

/*
** A body that is not a valid CloudEvent can never be handled: store it in
** the failure store with the reason, in one transaction, then delete it.
** The failure store needs a message id and the body has none we can trust,
** so the id is the SQS MessageId when it is a UUID, else a UUIDv5 derived
** from it (ob__consumer_failure_id): the same SQS message always gets the
** same id. The dedup claim under OB__CONSUMER_INVALID_CONSUMER makes a
** redelivery (a lost delete reply) a duplicate instead of a second failure
** row. Returns 0 (stored or already stored) or a negative code (nothing
** committed).
*/
static int store_invalid(consumer_t* c, const msg_t* m, const char* why,
                         const char* headers) {
  ob_engine_t* e = c->e;
  ob__queue_row_t row;
  char id[OB_UUID_BUFLEN], reason[OB__REASON_LEN];
  int64_t now;
  int rc, claimed = 0;

  rc = ob__consumer_failure_id(m->sqs_id, id);
  if (rc < 0)
    return ob__db_seterr(&e->db, rc, "failure id of SQS message %s: %s",
                         m->sqs_id, ob_strerror(rc));
  if (e->db.in_tx)
    return ob__db_seterr(&e->db, OB_ESTATE, "handling inside a handler");
  ob__fmt(reason, sizeof reason, "invalid CloudEvent: %s", why);
  memset(&row, 0, sizeof row);
  row.queue = (char*)OB__CONSUMER_QUEUE;
  row.message_id = id;
  row.type = (char*)OB__CONSUMER_INVALID_TYPE;
  row.headers = (char*)headers;
  row.body = m->body;
  row.body_len = m->body_len;
  row.attempts = attempts_of(m);
  rc = ob__db_begin(&e->db);
  if (rc < 0) return rc;
  now = ob__now(e);
  row.created_at = m->sent_ms >= 0 ? m->sent_ms : now;
  claimed = ob__processed_claim(&e->db, OB__CONSUMER_INVALID_CONSUMER, id, now);
  if (claimed < 0) {
    rc = claimed;
    goto fail;
  }
  if (claimed == 1) {
    rc = ob__failed_insert(&e->db, &row, "unrecoverable", reason, row.attempts,
                           now);
    if (rc < 0) goto fail;
  }
  rc = ob__db_commit(&e->db);
  if (rc < 0) goto fail;
  if (claimed == 1)
    ob__log(e, OB_LOG_WARN,
            "sqs message %s moved to the failure store as %s: %s", m->sqs_id,
            id, reason);
  else
    ob__log(e, OB_LOG_DEBUG,
            "sqs message %s: invalid, already in the failure store as %s",
            m->sqs_id, id);
  return 0;

fail:
  ob__db_rollback(&e->db);
  return rc;
}

/* Other components (the relay) may have work: outbox rows committed. */
static void kick_others(consumer_t* c) {
  ob_engine_t* e = c->e;
  for (size_t i = 0; i < e->ncomponents; i++)
    if (e->components[i].self != c && e->components[i].kick != NULL)
      e->components[i].kick(e->components[i].self);
}

/* One message, one transaction. Afterwards the message is M_DONE (to
** delete), M_VIS (to make invisible for the retry delay), or gone (nothing
** committed: SQS redelivers it). */
static void handle_one(consumer_t* c, msg_t* m) {
  ob_engine_t* e = c->e;
  ob__cloudevent_t ce;
  ob__queue_row_t row;
  ob_batch_result_t res;
  char why[256], hbuf[192];
  const char* headers = headers_json(m->sqs_id, hbuf, sizeof hbuf);
  const char* outcome;
  char* data = NULL;
  int64_t delay = -1;
  int rc, vis;

  if (ob__cloudevent_decode(m->body, m->body_len, &ce, why, sizeof why) != 0) {
    rc = store_invalid(c, m, why, headers);
    if (rc < 0) goto fail;
    c->db_failures = 0;
    m->state = M_DONE;
    ob__log(e, OB_LOG_DEBUG,
            "sqs message %s: invalid, committed to the failure store; "
            "deleting",
            m->sqs_id);
    return;
  }
  /* Handlers get a NUL-terminated body, as for queue rows. */
  data = malloc(ce.data_len + 1);
  if (data == NULL) {
    rc = ob__db_seterr(&e->db, OB_ENOMEM, "out of memory");
    goto fail;
  }
  memcpy(data, ce.data, ce.data_len);
  data[ce.data_len] = '\0';
  memset(&row, 0, sizeof row);
  row.queue = (char*)OB__CONSUMER_QUEUE;
  row.message_id = ce.id;
  row.type = ce.type;
  row.headers = (char*)headers;
  row.body = data;
  row.body_len = ce.data_len;
  row.attempts = attempts_of(m);
  row.created_at = m->sent_ms >= 0 ? m->sent_ms : ob__now(e);
  rc = ob__handle_external(e, &row, &res, &delay);
  free(data);
  if (rc < 0) goto fail;
  c->db_failures = 0;
  if (res.retried > 0) {
    vis = ob__consumer_retry_visibility_s(delay, budget_s(c, m));
    if (vis < 0) {
      ob__log(e, OB_LOG_INFO,
              "sqs message %s (event %s): retry; the 12 h visibility limit "
              "is reached, it comes back when its visibility ends",
              m->sqs_id, ce.id);
      msg_remove(c, m);
      return;
    }
    m->state = M_VIS;
    m->vis_s = vis;
    ob__log(e, OB_LOG_DEBUG,
            "sqs message %s (event %s): retry, invisible for %d s", m->sqs_id,
            ce.id, vis);
    return;
  }
  /* Waiting for an effect: it is now a local queue row, committed, so SQS
  ** can forget it like a handled one. */
  outcome = res.handled      ? "handled"
            : res.duplicates ? "duplicate"
            : res.waiting    ? "waiting for an effect in the local queue"
                             : "in the failure store";
  m->state = M_DONE;
  /* Tests stop a worker on this line: after COMMIT, before the delete. */
  ob__log(e, OB_LOG_DEBUG, "sqs message %s (event %s): %s, committed; deleting",
          m->sqs_id, ce.id, outcome);
  if (res.handled > 0 || res.waiting > 0) kick_others(c);
  return;

fail:
  /* Nothing was committed: leave the message to SQS, it comes back after
  ** its visibility timeout (no longer extended). Pause handling for a
  ** while, as the runner does after a failed batch. */
  ob__log(e, OB_LOG_ERROR,
          "sqs message %s: handling failed, left to SQS: %s: %s", m->sqs_id,
          ob_strerror(rc), ob_errmsg(e));
  msg_remove(c, m);
  if (c->db_failures < 9) c->db_failures++;
  c->pause_until = mono_ms() + ((100u << c->db_failures) > PAUSE_MAX_MS
                                    ? PAUSE_MAX_MS
                                    : (100u << c->db_failures));
}

/* A keepalive in flight must reach SQS before a (possibly slow) handler
** blocks the loop; wait for it, but not for long. */
static uint64_t keepalive_wait_ms(const consumer_t* c) {
  uint64_t w = vt_ms(c) / 4;
  return w < 100 ? 100 : w > 2000 ? 2000 : w;
}

static void on_handle_timer(uv_timer_t* t) {
  consumer_t* c = t->data;
  uint64_t now = mono_ms();
  msg_t* m = first_in(c, M_NEW);

  if (c->closing || c->e->stopping) return;
  if (now < c->pause_until ||
      (c->cmv.inflight && now < c->cmv.sent_at + keepalive_wait_ms(c))) {
    pump(c);  /* re-arms for the rest of the wait */
    return;
  }
  if (m != NULL) {
    /* A handler may call ob_network_changed or ob_detach: what they ask is
    ** done once the transaction returned, never on the message in hand. */
    c->handling = 1;
    handle_one(c, m);
    c->handling = 0;
    uv_update_time(c->loop);  /* the transaction took time */
    if (c->close_deferred) {
      c->close_deferred = 0;
      begin_closing(c);
      return;
    }
  }
  pump(c);
}

static void arm_handle(consumer_t* c, uint64_t now) {
  uint64_t delay = 0;
  if (c->e->stopping || first_in(c, M_NEW) == NULL) {
    uv_timer_stop(&c->t_handle);
    return;
  }
  if (now < c->pause_until) {
    delay = c->pause_until - now;
  } else if (c->cmv.inflight) {
    uint64_t until = c->cmv.sent_at + keepalive_wait_ms(c);
    if (now < until) delay = until - now;  /* its callback pumps sooner */
  }
  uv_timer_start(&c->t_handle, on_handle_timer, delay, 0);
}

/* ---- receiving ----------------------------------------------------------- */

static void on_receive_timer(uv_timer_t* t) {
  consumer_t* c = t->data;
  c->recv_wait = 0;
  pump(c);
}

static void receive_failed(consumer_t* c, int status, const char* detail) {
  ob_engine_t* e = c->e;
  int was_online = c->link.online;
  int64_t delay = ob__relay_link_failed(&c->link, ob__now(e), e->opts.clock);

  if (!ob__sqs_status_is_transient(status))
    ob__log(e, OB_LOG_ERROR,
            "sqs consumer: ReceiveMessage failed: %s (%s); retrying in %lld "
            "ms",
            ob__sqs_strerror(status), detail, (long long)delay);
  else if (was_online)
    ob__log(e, OB_LOG_WARN,
            "sqs consumer: offline: %s; retrying in %lld ms", detail,
            (long long)delay);
  else
    ob__log(e, OB_LOG_DEBUG, "sqs consumer: still offline: %s; next try in "
            "%lld ms", detail, (long long)delay);
  c->recv_wait = 1;
  uv_timer_start(&c->t_receive, on_receive_timer, (uint64_t)delay, 0);
}

static void on_received(ob__sqs_req_t* req, int status) {
  consumer_t* c = req->data;
  ob_engine_t* e = c->e;
  uint64_t now = mono_ms();

  c->recv_inflight = 0;
  if (status == OB_ECANCELED) goto out;
  if (status != 0) {
    if (!c->closing) receive_failed(c, status, req->detail);
    goto out;
  }
  if (ob__relay_link_ok(&c->link))
    ob__log(e, OB_LOG_INFO, "sqs consumer: online again");
  c->received_once = 1;
  c->last_empty = req->receive.n == 0;
  for (size_t i = 0; i < req->receive.n; i++) {
    msg_t* m = msg_new(c, &req->receive.messages[i], now);
    if (m == NULL) {
      /* It comes back after its visibility timeout. */
      ob__log(e, OB_LOG_ERROR, "sqs consumer: out of memory for message %s",
              req->receive.messages[i].message_id);
      continue;
    }
    if (c->closing) {
      /* Received while closing (the cancel came too late): release it. */
      m->state = M_VIS;
      m->vis_s = 0;
    }
    msg_append(c, m);
  }
  ob__log(e, OB_LOG_DEBUG, "sqs consumer: received %zu messages",
          req->receive.n);
  if (c->last_empty && !c->closing &&
      now - c->recv_started < MIN_EMPTY_POLL_MS) {
    /* Nothing there and no long poll held us: don't hammer SQS. */
    c->recv_wait = 1;
    uv_timer_start(&c->t_receive, on_receive_timer,
                   MIN_EMPTY_POLL_MS - (now - c->recv_started), 0);
  }
out:
  ob__sqs_req_cleanup(req);
  pump(c);
}

static void maybe_receive(consumer_t* c) {
  ob__sqs_receive_t p;
  size_t done = 0;
  int rc;

  if (c->recv_inflight || c->recv_wait || c->closing || c->e->stopping) return;
  for (const msg_t* m = c->msgs; m != NULL; m = m->next) {
    if (m->state == M_NEW) return;  /* the prefetch buffer is not empty */
    if (m->state == M_DONE) done++;
  }
  /* Let the deletes catch up first. Offline, the receive is the probe. */
  if (c->link.online && done >= BATCH_MAX) return;
  ob__sqs_receive_init(&p);
  p.queue_url = c->queue_url;
  p.system_attribute_names = k_system_attrs;
  p.nsystem_attribute_names = sizeof k_system_attrs / sizeof k_system_attrs[0];
  p.message_attribute_names = k_all_attrs;
  p.nmessage_attribute_names = 1;
  p.max_messages = c->prefetch;
  p.wait_time_seconds = c->wait_s;
  /* Our own visibility timeout, not the queue's: the keepalive then knows
  ** exactly when each message would reappear. */
  p.visibility_timeout = c->vt_s;
  c->recv.data = c;
  rc = ob__sqs_receive_message(c->client, &c->recv, &p, on_received);
  if (rc < 0) {
    receive_failed(c, rc, c->recv.detail);
    ob__sqs_req_cleanup(&c->recv);
    return;
  }
  c->recv_inflight = 1;
  c->recv_started = mono_ms();
  ob__log(c->e, OB_LOG_DEBUG, "sqs consumer: receiving (up to %d, %d s)",
          c->prefetch, c->wait_s);
}

/* ---- closing ------------------------------------------------------------- */

static void on_timer_closed(uv_handle_t* h) {
  consumer_t* c = h->data;
  void (*done)(void*) = c->done;
  void* arg = c->done_arg;

  if (--c->timers_open > 0) return;
  drop_idle_messages(c);
  c->started = 0;
  c->closing = 0;
  c->done = NULL;
  c->done_arg = NULL;
  ob__log(c->e, OB_LOG_INFO, "sqs consumer: closed");
  if (done != NULL) done(arg);
}

static void on_client_closed(ob__sqs_client_t* client, void* arg) {
  consumer_t* c = arg;
  (void)client;
  c->client = NULL;
  c->closing = 3;
  c->timers_open = 4;
  uv_close((uv_handle_t*)&c->t_handle, on_timer_closed);
  uv_close((uv_handle_t*)&c->t_receive, on_timer_closed);
  uv_close((uv_handle_t*)&c->t_keepalive, on_timer_closed);
  uv_close((uv_handle_t*)&c->t_close, on_timer_closed);
}

/* Close the client once nothing is in flight and nothing is left to send. */
static void maybe_finish_close(consumer_t* c) {
  if (c->closing != 1) return;
  if (c->recv_inflight || c->del.inflight || c->cmv.inflight) return;
  if (!c->link.online) drop_idle_messages(c);
  if (c->msgs != NULL) return;
  uv_timer_stop(&c->t_close);
  c->closing = 2;
  ob__sqs_client_close(c->client, on_client_closed, c);
}

static void on_close_deadline(uv_timer_t* t) {
  consumer_t* c = t->data;
  size_t n = 0;
  for (const msg_t* m = c->msgs; m != NULL; m = m->next) n++;
  ob__log(c->e, OB_LOG_WARN,
          "sqs consumer: close: %zu messages not settled after %d ms; they "
          "are left to SQS (committed ones come back as duplicates)",
          n, CLOSE_DEADLINE_MS);
  /* Offline from here on: nothing more is sent, what is held is dropped
  ** once its request is canceled. */
  c->link.online = 0;
  if (c->recv_inflight) (void)ob__sqs_cancel(&c->recv);
  if (c->del.inflight) (void)ob__sqs_cancel(&c->del.req);
  if (c->cmv.inflight) (void)ob__sqs_cancel(&c->cmv.req);
  maybe_finish_close(c);
}

/* ---- the component ------------------------------------------------------- */

static void pump(consumer_t* c) {
  uint64_t now;
  if (!c->started || c->closing >= 2 || c->handling) return;
  now = mono_ms();
  flush_deletes(c);
  flush_visibility(c, now);
  if (c->closing) {
    maybe_finish_close(c);
    return;
  }
  arm_handle(c, now);
  maybe_receive(c);
}

static int c_start(void* self, ob_engine_t* e, uv_loop_t* loop) {
  consumer_t* c = self;
  ob__sqs_client_config_t cfg;
  char err[512];
  int rc;

  c->e = e;
  c->loop = loop;
  ob__sqs_client_config_init(&cfg);
  ob__sqs_client_config_from_aws(&cfg, &c->aws);
  cfg.clock = e->opts.clock;
  rc = ob__sqs_client_open(&c->client, loop, &cfg, err, sizeof err);
  if (rc < 0) {
    ob__log(e, OB_LOG_ERROR, "sqs consumer: cannot open the SQS client: %s",
            err);
    return rc == OB_ENOMEM ? OB_ENOMEM : OB_EINVAL;
  }
  uv_timer_init(loop, &c->t_handle);
  uv_timer_init(loop, &c->t_receive);
  uv_timer_init(loop, &c->t_keepalive);
  uv_timer_init(loop, &c->t_close);
  c->t_handle.data = c->t_receive.data = c->t_keepalive.data = c;
  c->t_close.data = c;
  ob__relay_link_init(&c->link, c->probe_base_ms, c->probe_cap_ms);
  memset(&c->recv, 0, sizeof c->recv);
  memset(&c->del, 0, sizeof c->del);
  memset(&c->cmv, 0, sizeof c->cmv);
  c->recv_inflight = c->recv_wait = 0;
  c->recv_started = 0;
  c->received_once = c->last_empty = 0;
  c->msgs = NULL;
  c->db_failures = 0;
  c->pause_until = 0;
  c->closing = 0;
  c->handling = c->close_deferred = 0;
  c->started = 1;
  ob__log(e, OB_LOG_INFO,
          "sqs consumer: consuming %s (prefetch %d, long poll %d s, "
          "visibility %d s)",
          c->queue_url, c->prefetch, c->wait_s, c->vt_s);
  pump(c);
  return 0;
}

static void c_network(void* self) {
  consumer_t* c = self;
  if (!c->started || c->closing) return;
  ob__relay_link_nudge(&c->link, ob__now(c->e));
  if (c->recv_wait) {
    uv_timer_stop(&c->t_receive);
    c->recv_wait = 0;
  }
  pump(c);
}

/* Idle: nothing to handle, nothing being deleted or changed, and either the
** last receive came back empty (nothing held) or SQS can't be reached (what
** is held can't progress now). */
static int c_idle(void* self) {
  consumer_t* c = self;
  if (!c->started) return 1;
  if (c->handling || c->del.inflight || c->cmv.inflight) return 0;
  if (first_in(c, M_NEW) != NULL) return 0;
  if (!c->link.online) return 1;
  return c->msgs == NULL && c->received_once && c->last_empty;
}

static void c_close(void* self, void (*done)(void* arg), void* arg) {
  consumer_t* c = self;
  c->done = done;
  c->done_arg = arg;
  if (c->handling) {
    c->close_deferred = 1;  /* on_handle_timer closes after the handler */
    return;
  }
  begin_closing(c);
}

static void begin_closing(consumer_t* c) {
  size_t release = 0, commit = 0;

  c->closing = 1;
  uv_timer_stop(&c->t_handle);
  uv_timer_stop(&c->t_receive);
  uv_timer_stop(&c->t_keepalive);
  c->recv_wait = 0;
  /* The long poll: its callback follows with OB_ECANCELED (or with the
  ** messages it already had, which are then released). */
  if (c->recv_inflight) (void)ob__sqs_cancel(&c->recv);
  /* Handling is synchronous, so no message is half-handled here. What was
  ** committed is deleted (if SQS answers before the deadline); what was
  ** received but not handled is made visible again at once for whoever
  ** consumes next. */
  for (msg_t* m = c->msgs; m != NULL; m = m->next) {
    if (m->state == M_NEW) {
      m->state = M_VIS;
      m->vis_s = 0;
      release++;
    } else if (m->state == M_DONE || m->state == M_DELETING) {
      commit++;
    }
  }
  if (release + commit > 0)
    ob__log(c->e, OB_LOG_INFO,
            "sqs consumer: closing: deleting %zu committed messages, "
            "releasing %zu unhandled",
            commit, release);
  uv_timer_start(&c->t_close, on_close_deadline, CLOSE_DEADLINE_MS, 0);
  pump(c);
}

static void c_destroy(void* self) {
  consumer_t* c = self;
  if (c == NULL) return;
  while (c->msgs != NULL) {
    msg_t* m = c->msgs;
    c->msgs = m->next;
    msg_free(m);
  }
  free(c->queue_url);
  ob__aws_config_free(&c->aws);
  free(c);
}

/* ---- enabling ------------------------------------------------------------ */

void ob_consumer_options_init(ob_consumer_options_t* o) {
  memset(o, 0, sizeof *o);
  o->wait_seconds = 20;
  o->prefetch = 1;
  o->visibility_timeout_s = 30;
  o->probe_base_ms = 1000;
  o->probe_cap_ms = 300000;
}

static void on_probe_closed(ob__sqs_client_t* client, void* arg) {
  (void)client;
  *(int*)arg = 1;
}

/* Open (and close) a client on a loop of its own, so that a bad endpoint,
** credential or CA bundle fails ob_consumer_enable and not the later
** ob_attach. Runs before any loop of the caller's, like the file reads. */
static int check_client(const ob__aws_config_t* aws, const ob_clock_t* clock,
                        char* errbuf, size_t errlen) {
  ob__sqs_client_config_t cfg;
  ob__sqs_client_t* client = NULL;
  uv_loop_t loop;
  int rc, closed = 0;

  if (uv_loop_init(&loop) != 0) return OB_ENOMEM;
  ob__sqs_client_config_init(&cfg);
  ob__sqs_client_config_from_aws(&cfg, aws);
  cfg.clock = clock;
  rc = ob__sqs_client_open(&client, &loop, &cfg, errbuf, errlen);
  if (rc == 0) {
    ob__sqs_client_close(client, on_probe_closed, &closed);
    while (!closed && uv_run(&loop, UV_RUN_ONCE) != 0) {
    }
  }
  uv_run(&loop, UV_RUN_DEFAULT);
  (void)uv_loop_close(&loop);
  return rc;
}

int ob__consumer_enable_env(ob_engine_t* e, const ob_consumer_options_t* o,
                            ob__aws_getenv_fn getenv_fn, void* env_ctx,
                            char* errbuf, size_t errlen) {
  consumer_t* c = NULL;
  ob__component_t comp;
  char err[512] = "";
  int rc;

  if (errbuf != NULL && errlen > 0) errbuf[0] = '\0';
  if (e == NULL) {
    if (errbuf != NULL && errlen > 0)
      snprintf(errbuf, errlen, "consumer: the engine is NULL");
    return OB_EINVAL;
  }
  rc = ob__consumer_options_check(o, errbuf, errlen);
  if (rc < 0) return rc;
  c = calloc(1, sizeof *c);
  if (c == NULL) return OB_ENOMEM;
  c->queue_url = strdup(o->queue_url);
  if (c->queue_url == NULL) {
    rc = OB_ENOMEM;
    goto fail;
  }
  c->wait_s = o->wait_seconds;
  c->prefetch = o->prefetch;
  c->vt_s = o->visibility_timeout_s;
  c->probe_base_ms = o->probe_base_ms;
  c->probe_cap_ms = o->probe_cap_ms;
  if (e->runner != NULL) {
    ob__fmt(err, sizeof err, "consumer: enable it before attaching");
    rc = OB_ESTATE;
    goto fail;
  }
  for (size_t i = 0; i < e->ncomponents; i++)
    if (strcmp(e->components[i].name, OB__CONSUMER_NAME) == 0) {
      ob__fmt(err, sizeof err, "consumer: already enabled");
      rc = OB_EEXIST;
      goto fail;
    }
  rc = ob__aws_config_load(&c->aws, getenv_fn, env_ctx, NULL, err, sizeof err);
  if (rc == 0) rc = check_client(&c->aws, e->opts.clock, err, sizeof err);
  if (rc < 0) {
    /* Every configuration problem is the caller's to fix: OB_EINVAL. */
    if (rc != OB_ENOMEM) rc = OB_EINVAL;
    goto fail;
  }
  memset(&comp, 0, sizeof comp);
  comp.name = OB__CONSUMER_NAME;
  comp.self = c;
  comp.start = c_start;
  comp.kick = NULL;  /* SQS is the source of work, not commits */
  comp.network = c_network;
  comp.idle = c_idle;
  comp.close = c_close;
  comp.destroy = c_destroy;
  rc = ob__engine_add_component(e, &comp);
  if (rc < 0) {
    ob__fmt(err, sizeof err, "consumer: %s",
            rc == OB_ENOMEM ? "too many engine components" : ob_strerror(rc));
    goto fail;
  }
  ob__log(e, OB_LOG_DEBUG, "sqs consumer enabled for %s (endpoint %s)",
          c->queue_url, c->aws.endpoint.url);
  return 0;

fail:
  if (errbuf != NULL && errlen > 0)
    snprintf(errbuf, errlen, "%s", err[0] ? err : ob_strerror(rc));
  c_destroy(c);
  return rc;
}

int ob_consumer_enable(ob_engine_t* e, const ob_consumer_options_t* o,
                       char* errbuf, size_t errlen) {
  return ob__consumer_enable_env(e, o, NULL, NULL, errbuf, errlen);
}
