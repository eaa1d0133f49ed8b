/* SPDX-License-Identifier: Apache-2.0 */
/*
** oncebox internal: the SQS consumer's state, shared by its two files:
**   consumer.c        receiving, handling, deleting, visibility changes,
**                     closing (the life of a message, see its header);
**   consumer_queue.c  what it asks the queue about itself: the queue's
**                     VisibilityTimeout at start, the counts an until-idle
**                     run decides on (core/consumer/consumer_idle.h), and
**                     ob_consumer_status.
** Everything runs on the engine's loop thread.
*/
#ifndef OB_PLATFORM_CONSUMER_INT_H
#define OB_PLATFORM_CONSUMER_INT_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "oncebox.h"
#include "core/consumer/consumer_idle.h"
#include "platform/aws/aws_config.h"
#include "platform/loop/worker.h"
#include "platform/sqs/sqs_client.h"

#define OB__CONSUMER_BATCH_MAX OB__SQS_MAX_BATCH_ENTRIES

/* M_DROPPED: left to SQS while its keepalive is in the visibility batch in
** flight; that batch's callback frees it (consumer.c). */
enum { M_NEW, M_DONE, M_DELETING, M_VIS, M_VIS_SENT, M_DROPPED };

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
  char* group_key;            /* FIFO: queue URL, space, MessageGroupId;
                              ** NULL on a standard queue */
  char* sqs_headers;          /* what SQS said besides the body
                              ** (ob__sqs_headers_json); NULL if it could
                              ** not be rendered */
} msg_t;

typedef struct batch_s {
  ob__sqs_req_t req;
  int inflight;
  size_t n;
  msg_t* msgs[OB__CONSUMER_BATCH_MAX];
  int value[OB__CONSUMER_BATCH_MAX];  /* visibility asked for (CMV batches) */
  uint64_t sent_at;           /* monotonic ms */
} batch_t;

/* Reading the queue's VisibilityTimeout (vt_read). */
enum {
  VT_READ_NONE = 0,   /* nothing to read: configured, read, or given up */
  VT_READ_PENDING,    /* to read before the first receive */
  VT_READ_AGAIN       /* the read could not reach SQS: the default is in
                      ** force, read again once SQS answers */
};

typedef struct consumer_s {
  ob__worker_t w;             /* the t_handle timer, link, close sequence */
  /* Configuration, from ob_consumer_enable. */
  char* queue_url;
  int wait_s;
  int prefetch;
  int vt_cfg;                 /* visibility_timeout_s: 0 = the queue's */
  int fifo;                   /* the queue is FIFO: per-group order */
  int failures_to_sqs;        /* leave failures to the redrive policy */
  ob__aws_config_t aws;       /* kept for a later re-attach; wiped at
                              ** destroy */

  /* Running state, reset by start(). The worker's timer runs the next
  ** transaction (0 ms, or a pause). */
  ob_engine_t* e;
  uv_loop_t* loop;
  ob__sqs_client_t* client;
  uv_timer_t t_receive;       /* the next receive, after a failed one or
                              ** an early empty one */
  uv_timer_t t_keepalive;     /* the next extension that falls due */
  uv_timer_t t_close;         /* close deadline */
  ob__sqs_req_t recv;
  uint64_t recv_started;      /* monotonic ms */
  int recv_inflight;
  int recv_wait;              /* wait for t_receive before receiving */
  int received_once;
  int last_empty;             /* the last receive brought no message */
  batch_t del;
  batch_t cmv;
  msg_t* msgs;                /* everything in hand, in receive order */
  uint64_t pause_until;       /* monotonic ms: no handling before */

  /* The visibility timeout in force (consumer_queue.c sets it at start;
  ** every receive sends it, the keepalive extends by it). */
  int vt_s;
  ob_consumer_vt_source_t vt_source;
  int vt_read;                /* VT_READ_* */

  /* What consumer_queue.c asks the queue (one request at a time, never
  ** while a receive is in flight). */
  ob__sqs_req_t attrs;
  int attrs_inflight;
  int attrs_counts;           /* the request in flight asks for the counts
                              ** (else the VisibilityTimeout) */
  /* Until-idle: set by the first idle() question; from then on every empty
  ** receive is followed by the counts. */
  int idle_asked;
  uint64_t last_empty_started;  /* monotonic ms: the last empty receive */
  int counts_fresh;           /* counts were read after the last receive */
  ob__consumer_counts_t counts;
  int counts_asked;           /* counts were asked at least once */
  char counts_error[128];
  int counts_warned;          /* a refusal was logged this start */
  ob__consumer_idle_t idle;
  ob__consumer_idle_verdict_t verdict;  /* of the fresh counts */
  int stalled;
  int64_t waited_ms;

  /* What consumer_queue.c calls back in consumer.c, set by
  ** ob__consumer_queue_start: the queue's part reaches consumer.c only
  ** through these, so the pair is a one-way dependency. */
  void (*pump)(struct consumer_s* c);
  void (*request_failed)(struct consumer_s* c, const char* op, int status,
                         const char* detail);
} consumer_t;

/* The worker's states, as the consumer reads them. */
static inline int ob__consumer_running(const consumer_t* c) {
  return c->w.state == OB__WORKER_RUNNING;
}
/* The client is closing or closed: nothing may be sent. */
static inline int ob__consumer_client_gone(const consumer_t* c) {
  return c->w.state == OB__WORKER_CLOSING || c->w.state == OB__WORKER_STOPPED;
}

/* consumer.c: monotonic milliseconds (the loop's hrtime). */
uint64_t ob__consumer_mono_ms(void);

/* consumer_queue.c, each called by consumer.c: */
/* Reset at start: the visibility in force (the configured one, or the
** default until the queue's is read) and the until-idle state; and set
** what this part calls back: pump decides what happens next (every
** callback ends with it), request_failed handles a request (op, e.g.
** "GetQueueAttributes") that could not reach SQS or was refused (offline,
** log, hold the next receive for the probe delay). */
void ob__consumer_queue_start(consumer_t* c, void (*pump)(consumer_t* c),
                              void (*request_failed)(consumer_t* c,
                                                     const char* op,
                                                     int status,
                                                     const char* detail));
/* From pump(), before the next receive: send the VisibilityTimeout read or
** the counts when one is due. Returns 1 while the receive must wait (that
** request is due or in flight). */
int ob__consumer_queue_step(consumer_t* c);
/* After a receive that succeeded with n messages; started is when it was
** sent. */
void ob__consumer_queue_received(consumer_t* c, size_t n, uint64_t started);
/* The until-idle answer once the consumer holds nothing and its last
** receive was empty: OB__IDLE_DONE, OB__IDLE_BUSY or OB__IDLE_BLOCKED. */
int ob__consumer_queue_idle(consumer_t* c);
/* Closing: cancel the request in flight (its callback pumps). */
void ob__consumer_queue_drain(consumer_t* c);

#endif
