/* What a handler can do inside the handling transaction. Nothing here
** exposes SQLite: the same handler code can later run on another store. */
#include <stdio.h>
#include <string.h>

#include "core/engine/engine_int.h"
#include "core/util/assert.h"
#include "core/util/errbuf.h"
#include "core/util/json_check.h"

int ob_tx_exec(ob_tx_t* tx, const char* sql, const ob_value_t* params,
               size_t nparams, ob_row_cb row, void* arg) {
  int rc;
  if (tx == NULL || tx->e == NULL) return OB_EINVAL;
  rc = ob__user_exec(&tx->e->db, sql, params, nparams, row, arg);
  /* A full disk or I/O error poisons the transaction even if the handler
  ** ignores the return value. */
  if (rc < 0 && ob__is_fatal(rc)) tx->fatal = rc;
  return rc;
}

int ob_tx_emit(ob_tx_t* tx, const char* event_type, const char* aggregate_id,
               const char* payload, size_t payload_len, char id_out[OB_UUID_BUFLEN]) {
  char id[OB_UUID_BUFLEN];
  int rc;
  ob_engine_t* e;
  if (tx == NULL || tx->e == NULL) return OB_EINVAL;
  OB__ASSERT(tx->msg != NULL);  /* a handler's tx always carries its message */
  e = tx->e;
  if (event_type == NULL || event_type[0] == '\0' || aggregate_id == NULL ||
      aggregate_id[0] == '\0' || payload == NULL)
    return ob__db_seterr(&e->db, OB_EINVAL,
                         "outbox event needs a type, an aggregate id and a "
                         "payload");
  if (!ob__json_valid(payload, payload_len))
    return ob__db_seterr(&e->db, OB_EINVAL,
                         "outbox payload of %s is not valid JSON", event_type);
  ob__uuid7_next(&e->idgen, e->opts.clock, id);
  /* A traced message's events continue its trace (CloudEvents'
  ** distributed-tracing extension): the same trace id, this handling as
  ** their parent. */
  if (tx->msg->traceparent != NULL && tx->trace_child[0] == '\0') {
    unsigned char span[8];
    e->opts.clock->random(e->opts.clock->ctx, span, sizeof span);
    ob__traceparent_child(tx->msg->traceparent, span, tx->trace_child);
  }
  rc = ob__outbox_insert(&e->db, id, tx->msg->id, event_type, aggregate_id,
                         payload, payload_len,
                         tx->msg->traceparent ? tx->trace_child : NULL,
                         tx->msg->traceparent ? tx->msg->tracestate : NULL,
                         tx->now);
  if (rc < 0) {
    if (ob__is_fatal(rc)) tx->fatal = rc;
    return rc;
  }
  if (id_out) memcpy(id_out, id, sizeof id);
  return 0;
}

static int set_retry(ob_tx_t* tx, int64_t delay_ms, const char* reason,
                     int forced) {
  if (tx == NULL) return OB_RETRY;
  tx->verdict = OB_RETRY;
  tx->forced = forced;
  tx->retry_delay_ms = delay_ms;
  return ob__errbuf_set(tx->reason, sizeof tx->reason, OB_RETRY, "%s",
                        reason ? reason : "retry");
}

int ob_tx_retry(ob_tx_t* tx, int64_t delay_ms, const char* reason) {
  return set_retry(tx, delay_ms, reason, 0);
}

int ob_tx_retry_forced(ob_tx_t* tx, int64_t delay_ms, const char* reason) {
  return set_retry(tx, delay_ms, reason, 1);
}

int ob_tx_fail(ob_tx_t* tx, const char* reason) {
  if (tx == NULL) return OB_UNRECOVERABLE;
  tx->verdict = OB_UNRECOVERABLE;
  return ob__errbuf_set(tx->reason, sizeof tx->reason, OB_UNRECOVERABLE, "%s",
                        reason ? reason : "unrecoverable");
}

int64_t ob_tx_now_ms(const ob_tx_t* tx) {
  return tx->now;
}

void ob_tx_new_id(ob_tx_t* tx, char out[OB_UUID_BUFLEN]) {
  ob__uuid7_next(&tx->e->idgen, tx->e->opts.clock, out);
}
