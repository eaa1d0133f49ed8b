/* SPDX-License-Identifier: Apache-2.0 */
/* oncebox internal: the SQS consumer's own transaction (the handling one is
** ob__engine_handle_external). */
#ifndef OB_CORE_CONSUMER_TX_H
#define OB_CORE_CONSUMER_TX_H

#include <stddef.h>
#include <stdint.h>

#include "oncebox.h"

/*
** A body that is not a valid CloudEvent can never be handled: store it in
** the failure store with the reason, in one transaction. The failure store
** needs a message id and the body has none we can trust, so the id is the
** SQS MessageId when it is a UUID, else a UUIDv5 derived from it
** (ob__consumer_failure_id): the same SQS message always gets the same id.
** The dedup claim under OB__CONSUMER_INVALID_CONSUMER makes a redelivery (a
** lost delete reply) a duplicate instead of a second failure row.
** *stored is 1 when this call stored it, 0 when it was already stored.
** Returns 0, or a negative code when nothing was committed.
*/
int ob__consumer_store_invalid(ob_engine_t* e, const char* sqs_id,
                               const char* why, const char* headers,
                               const char* body, size_t body_len,
                               int attempts, int64_t sent_ms,
                               char id_out[OB_UUID_BUFLEN], int* stored);

#endif
