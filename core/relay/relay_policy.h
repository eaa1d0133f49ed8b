/* Decisions of the outbox relay, free of I/O so they are tested with a fake
** clock: what goes into one SendMessageBatch, how long a failed row waits,
** when an offline relay probes again. */
#ifndef OB_CORE_RELAY_POLICY_H
#define OB_CORE_RELAY_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "oncebox.h"

#include "core/sqs/sqs.h"  /* OB__SQS_MAX_BATCH_ENTRIES, _BYTES */

/* 1 if the queue URL names a FIFO queue (its name ends in ".fifo"). */
int ob__relay_queue_is_fifo(const char* queue_url);

/*
** How many of the next sizes[0..n) fit one SendMessageBatch: at most 10
** entries and at most max_bytes in total. Always at least 1 when n > 0 and
** sizes[0] <= max_bytes; 0 when sizes[0] alone is too large (that row can
** never be sent and must be parked).
*/
size_t ob__relay_batch_fit(const size_t* sizes, size_t n, size_t max_bytes);

/* Backoff of a row after its attempt-th failure (1 = first): base doubling
** to cap, +-10% jitter from c. */
int64_t ob__relay_row_backoff(int64_t base_ms, int64_t cap_ms, int attempt,
                              const ob_clock_t* c);

/* Connectivity: online until a transport failure; then offline, probing
** with backoff (base doubling to cap, jitter) until a request succeeds. */
typedef struct ob__relay_link_s {
  int online;            /* 1 until proven otherwise */
  int failures;          /* consecutive transport failures */
  int64_t next_probe_at; /* when offline: earliest next attempt */
  int64_t base_ms;
  int64_t cap_ms;
} ob__relay_link_t;

void ob__relay_link_init(ob__relay_link_t* l, int64_t base_ms, int64_t cap_ms);
/* A request reached SQS and got an answer (any HTTP status). Returns 1 if
** this brought the link back online. */
int ob__relay_link_ok(ob__relay_link_t* l);
/* A request could not reach SQS. Returns the delay until the next probe;
** the link is offline. */
int64_t ob__relay_link_failed(ob__relay_link_t* l, int64_t now,
                              const ob_clock_t* c);
/* The host said the network is back: probe now. */
void ob__relay_link_nudge(ob__relay_link_t* l, int64_t now);

#endif
