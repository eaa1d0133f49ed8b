/* SPDX-License-Identifier: Apache-2.0 */
/* Decisions of the outbox relay, free of I/O so they are tested with a fake
** clock: what goes into one SendMessageBatch, how long a failed row waits,
** when an offline relay probes again. */
#ifndef OB_CORE_RELAY_POLICY_H
#define OB_CORE_RELAY_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "oncebox.h"

#include "core/sqs/sqs.h"  /* OB__SQS_MAX_BATCH_ENTRIES, _BYTES */

/*
** The CloudEvents source the relay publishes under: CloudEvents requires a
** non-empty URI-reference (RFC 3986), and the official SDKs refuse every
** event of a source that is not one. Returns 0, or OB_EINVAL with a
** sentence naming the offending byte in err. This function can't fail
** otherwise.
*/
int ob__relay_source_check(const char* source, char* err, size_t errlen);

/* A source for this host: "urn:oncebox:" and host, any byte of it that a
** URN may not hold as '-'. out needs strlen(host) + 13 bytes. */
void ob__relay_default_source(const char* host, char* out, size_t cap);

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

#endif
