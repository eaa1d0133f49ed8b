/* SPDX-License-Identifier: Apache-2.0 */
/* The SQS consumer's failure-store transaction (consumer_tx.h). */
#include <string.h>

#include "core/consumer/consumer_policy.h"
#include "core/consumer/consumer_tx.h"
#include "core/engine/engine_int.h"

/* The component of this file's log records (ob__log). */
#undef OB__LOG_COMPONENT
#define OB__LOG_COMPONENT "consumer"

int ob__consumer_store_invalid(ob_engine_t* e, const char* sqs_id,
                               const char* why, const char* headers,
                               const char* body, size_t body_len,
                               int attempts, int64_t sent_ms,
                               char id[OB_UUID_BUFLEN], int* stored) {
  ob__queue_row_t row;
  char reason[OB__REASON_LEN];
  int64_t now;
  int rc, claimed = 0;

  *stored = 0;
  rc = ob__consumer_failure_id(sqs_id, id);
  if (rc < 0)
    return ob__db_seterr(&e->db, rc, "failure id of SQS message %s: %s",
                         sqs_id, ob_strerror(rc));
  if (e->db.in_tx)
    return ob__db_seterr(&e->db, OB_ESTATE, "handling inside a handler");
  ob__fmt(reason, sizeof reason, "invalid CloudEvent: %s", why);
  memset(&row, 0, sizeof row);
  row.queue = (char*)OB__CONSUMER_QUEUE;
  row.message_id = id;
  row.type = (char*)OB__CONSUMER_INVALID_TYPE;
  row.headers = (char*)headers;
  row.body = (char*)body;
  row.body_len = body_len;
  row.attempts = attempts;
  rc = ob__db_begin(&e->db);
  if (rc < 0) return rc;
  now = ob__now(e);
  row.created_at = sent_ms >= 0 ? sent_ms : now;
  claimed = ob__processed_claim(&e->db, OB__CONSUMER_INVALID_CONSUMER, id,
                                OB__SOURCE_LOCAL,
                                e->dedup_legacy ? id : NULL,
                                ob__retention_stamp(e));
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
  *stored = claimed == 1;
  if (claimed == 1)
    ob__log(e, OB_LOG_WARN,
            "sqs message %s moved to the failure store as %s: %s", sqs_id, id,
            reason);
  else
    ob__log(e, OB_LOG_DEBUG,
            "sqs message %s: invalid, already in the failure store as %s",
            sqs_id, id);
  return 0;

fail:
  ob__db_rollback(&e->db);
  return rc;
}
