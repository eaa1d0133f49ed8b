/* SPDX-License-Identifier: Apache-2.0 */
/*
** The SQS consumer: an engine worker (platform/loop/worker.h) that consumes one Amazon SQS queue of CloudEvents with
** the same handling transaction and dedup guard as local queue rows.
**
** Internal to oncebox (platform layer). The public entry points are
** ob_consumer_options_init / ob_consumer_enable in oncebox.h; this header
** adds the seams the tests use and the pure decisions, kept free of I/O so
** they are tested without a server.
**
** Life of one SQS message (one loop thread, nothing blocks but the handling
** transaction itself):
**   ReceiveMessage (long poll, VisibilityTimeout = the one in force: the
**   configured visibility_timeout_s, else the queue's own, read at start)
**     -> the prefetch buffer (kept invisible by the keepalive)
**     -> one transaction: ob__engine_handle_external (dedup guard, handlers, ack /
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
#include "core/consumer/consumer_policy.h"
#include "platform/aws/aws_config.h"

/*
** ob_consumer_enable with an explicit environment lookup (NULL: the process
** environment). Same contract as ob_consumer_enable.
*/
int ob__consumer_enable_env(ob_engine_t* e, const ob_consumer_options_t* o,
                            ob__aws_getenv_fn getenv_fn, void* env_ctx,
                            char* errbuf, size_t errlen);

#endif
