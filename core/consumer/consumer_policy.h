/* SPDX-License-Identifier: Apache-2.0 */
/*
** oncebox internal: the SQS consumer's rules, free of I/O so they are tested
** without a server, and the names it stores messages under. The consumer
** worker is platform/consumer/consumer.c; its one transaction of its own
** (a body that is not a CloudEvent) is core/consumer/consumer_tx.h.
*/
#ifndef OB_CORE_CONSUMER_POLICY_H
#define OB_CORE_CONSUMER_POLICY_H

#include <stdint.h>

#include "oncebox.h"

/* Local queue name of every message from SQS (ob_message_t.queue, the
** failure store's queue_name, the retry policy: ob_set_retry_policy(e,
** OB__CONSUMER_QUEUE, ...)). */
#define OB__CONSUMER_QUEUE "sqs"

/* The component's name (ob__component_t.name). */
#define OB__CONSUMER_NAME "sqs-consumer"

/* What the failure store records for a body that is not a CloudEvent: its
** type, and the dedup consumer that makes a redelivered invalid message
** (a lost DeleteMessage reply) land in the failure store only once. */
#define OB__CONSUMER_INVALID_TYPE "oncebox.InvalidCloudEvent"
#define OB__CONSUMER_INVALID_CONSUMER "oncebox-sqs-invalid"

/* SQS: a message stays invisible at most 12 h; the consumer keeps this
** margin below it (our clock and SQS's differ, a request takes time). */
#define OB__CONSUMER_MAX_VISIBILITY_S 43200
#define OB__CONSUMER_VISIBILITY_MARGIN_S 60

/* The visibility timeout in force when visibility_timeout_s is 0 (the
** queue's) and the queue's VisibilityTimeout can't be read: SQS's own
** default for a new queue. */
#define OB__CONSUMER_DEFAULT_VISIBILITY_S 30


/*
** The id under which a message that is not a valid CloudEvent is stored in
** the failure store: the SQS MessageId when it is a UUID (lower-cased),
** else the UUIDv5 (RFC 9562, SHA-1 name-based) of the MessageId in the
** namespace OB__CONSUMER_ID_NAMESPACE, so that any UUID library recomputes
** it: uuid.uuid5(UUID("6bcd7d03-..."), message_id). Deterministic: a
** redelivery of the same SQS message gets the same id. Returns 0, OB_EINVAL
** for NULL, OB_EIO if mbedTLS fails.
*/
#define OB__CONSUMER_ID_NAMESPACE "6bcd7d03-f7c5-57f9-8ac2-72830ca14323"
int ob__consumer_failure_id(const char* sqs_message_id, char out[OB_UUID_BUFLEN]);

/*
** Seconds a message first received at first_receive_ms (SQS's clock) may
** still be made invisible for at server_now_ms: what is left of the 12 h,
** less OB__CONSUMER_VISIBILITY_MARGIN_S, at most 43200. <= 0 when nothing
** is left. This function can't fail.
*/
int ob__consumer_visibility_budget_s(int64_t first_receive_ms,
                                     int64_t server_now_ms);

/*
** VisibilityTimeout for "retry after delay_ms": the delay in whole seconds,
** rounded up (a negative delay counts as 0), capped by budget_s. -1 when
** the budget is exhausted (budget_s < 0): the message can't be held any
** longer and comes back when its current visibility ends. This function
** can't fail.
*/
int ob__consumer_retry_visibility_s(int64_t delay_ms, int budget_s);

/*
** The visibility timeout in force from the queue's VisibilityTimeout
** attribute (a decimal string, as GetQueueAttributes returns it): 1..43200.
** A queue's 0 gives 1: a consumer that holds messages (the prefetch buffer,
** the keepalive) needs them hidden at least for a moment. -1 when value is
** NULL or not a decimal integer in 0..43200. This function can't fail.
*/
int ob__consumer_queue_visibility_s(const char* value);

/*
** Validate options (NULL fields and ranges as documented in oncebox.h).
** Returns 0, or OB_EINVAL with the reason in errbuf.
*/
int ob__consumer_options_check(const ob_consumer_options_t* o, char* errbuf,
                               size_t errlen);

#endif
