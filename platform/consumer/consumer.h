/*
** The SQS consumer: an engine component (core/engine/engine_int.h,
** ob__component_t) that consumes one Amazon SQS queue of CloudEvents with
** the same handling transaction and dedup guard as local queue rows.
**
** Internal to oncebox (platform layer). The public entry points are
** ob_consumer_options_init / ob_consumer_enable in oncebox.h; this header
** adds the seams the tests use and the pure decisions, kept free of I/O so
** they are tested without a server.
**
** Life of one SQS message (one loop thread, nothing blocks but the handling
** transaction itself):
**   ReceiveMessage (long poll, VisibilityTimeout = visibility_timeout_s)
**     -> the prefetch buffer (kept invisible by the keepalive)
**     -> one transaction: ob__handle_external (dedup guard, handlers, ack /
**        failure store), or, for a body that is not a valid CloudEvent,
**        the failure store directly
**     -> after COMMIT: DeleteMessageBatch (handled, duplicate, failed), or
**        ChangeMessageVisibility(Batch) to the retry delay (retried)
** Nothing is deleted before its transaction committed; everything that is
** lost on the way (a crash, a lost reply, an expired visibility) comes back
** from SQS and is then a duplicate that the dedup guard acknowledges.
*/
#ifndef OB_PLATFORM_CONSUMER_H
#define OB_PLATFORM_CONSUMER_H

#include <stdint.h>

#include "oncebox.h"
#include "platform/aws/aws_config.h"

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

/*
** ob_consumer_enable with an explicit environment lookup (NULL: the process
** environment). Same contract as ob_consumer_enable.
*/
int ob__consumer_enable_env(ob_engine_t* e, const ob_consumer_options_t* o,
                            ob__aws_getenv_fn getenv_fn, void* env_ctx,
                            char* errbuf, size_t errlen);

/* ---- pure decisions (consumer_policy.c) -------------------------------- */

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
** Validate options (NULL fields and ranges as documented in oncebox.h).
** Returns 0, or OB_EINVAL with the reason in errbuf.
*/
int ob__consumer_options_check(const ob_consumer_options_t* o, char* errbuf,
                               size_t errlen);

#endif
