/* SPDX-License-Identifier: Apache-2.0 */
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
  int rc, traced;
  ob_engine_t* e;
  if (tx == NULL || tx->e == NULL) return OB_EINVAL;
  e = tx->e;
  if (tx->kind == OB__TX_READ)
    return ob__db_seterr(&e->db, OB_EINVAL,
                         "a read transaction (ob_read) may not emit events");
  /* A handler's tx always carries its message; an ob_write's its id. */
  OB__ASSERT(tx->kind == OB__TX_WRITE || tx->msg != NULL);
  if (event_type == NULL || event_type[0] == '\0' || aggregate_id == NULL ||
      aggregate_id[0] == '\0' || payload == NULL)
    return ob__db_seterr(&e->db, OB_EINVAL,
                         "outbox event needs a type, an aggregate id and a "
                         "payload");
  if (!ob__json_valid(payload, payload_len))
    return ob__db_seterr(&e->db, OB_EINVAL,
                         "outbox payload of %s is not valid JSON", event_type);
  ob__uuid7_next_at(&e->idgen, e->opts.clock, ob__now(e), id);
  /* A traced message's events continue its trace (CloudEvents'
  ** distributed-tracing extension): the same trace id, this handling as
  ** their parent. */
  if (tx->msg != NULL && tx->msg->traceparent != NULL &&
      tx->trace_child[0] == '\0') {
    unsigned char span[8];
    e->opts.clock->random(e->opts.clock->ctx, span, sizeof span);
    ob__traceparent_child(tx->msg->traceparent, span, tx->trace_child);
  }
  traced = tx->msg != NULL && tx->msg->traceparent != NULL;
  rc = ob__outbox_insert(&e->db, id, tx->msg ? tx->msg->id : tx->write_id,
                         event_type, aggregate_id, payload, payload_len,
                         traced ? tx->trace_child : NULL,
                         traced ? tx->msg->tracestate : NULL, tx->now,
                         ob__eclock_wall_behind(e));
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
  if (tx->kind != OB__TX_HANDLER) return OB_ESTATE;
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
  if (tx->kind != OB__TX_HANDLER) return OB_ESTATE;
  tx->verdict = OB_UNRECOVERABLE;
  return ob__errbuf_set(tx->reason, sizeof tx->reason, OB_UNRECOVERABLE, "%s",
                        reason ? reason : "unrecoverable");
}

int64_t ob_tx_now_ms(const ob_tx_t* tx) {
  return tx->now;
}

void ob_tx_new_id(ob_tx_t* tx, char out[OB_UUID_BUFLEN]) {
  ob__uuid7_next_at(&tx->e->idgen, tx->e->opts.clock, ob__now(tx->e),
                    out);
}

/* ---- the embedder's transactions (ob_read / ob_write) ------------------- */

void ob__tx_init_embedder(ob_tx_t* tx, ob_engine_t* e, int kind) {
  memset(tx, 0, sizeof *tx);
  tx->e = e;
  tx->kind = kind;
  tx->verdict = OB_DONE;
  tx->retry_delay_ms = -1;
  tx->now = ob__now(e);
}

static int embedder_tx(ob_engine_t* e, ob_tx_fn fn, void* arg, int kind) {
  ob_tx_t tx;
  int rc, out;

  if (e == NULL || fn == NULL) return OB_EINVAL;
  /* A read inside an ob_read's fn joins its snapshot: a module's statistics
  ** read there agree with what the caller read. */
  if (kind == OB__TX_READ && e->db.in_tx && e->db.user_read_only) {
    ob__tx_init_embedder(&tx, e, kind);
    out = fn(&tx, arg);
    return out != 0 ? out : tx.fatal;
  }
  /* A handler's transaction, or an ob_write, is open on the one
  ** connection: this would nest in it. */
  if (e->db.in_tx)
    return ob__db_seterr(&e->db, OB_ESTATE,
                         "%s inside a handler or another transaction",
                         kind == OB__TX_READ ? "ob_read" : "ob_write");
  /* New business rows, like handling's: paused when the size cap's reserve
  ** pauses handling (core/engine/space.c), so the last bytes stay for the
  ** publish marks and retention that give space back. */
  if (kind == OB__TX_WRITE && (rc = ob__space_may_handle(e)) < 0) return rc;
  ob__tx_init_embedder(&tx, e, kind);
  if (kind == OB__TX_WRITE)
    ob__uuid7_next_at(&e->idgen, e->opts.clock, tx.now, tx.write_id);
  rc = kind == OB__TX_READ ? ob__db_begin_read(&e->db) : ob__db_begin(&e->db);
  if (rc < 0) return rc;
  e->db.user_read_only = kind == OB__TX_READ;
  out = fn(&tx, arg);
  e->db.user_read_only = 0;
  if (kind == OB__TX_READ) {
    ob__db_rollback(&e->db);  /* nothing to keep */
    return out != 0 ? out : tx.fatal;
  }
  if (out != 0 || tx.fatal != 0) {
    ob__engine_rollback(e);
    return out != 0 ? out : tx.fatal;
  }
  rc = ob__engine_commit(e);
  if (rc < 0) return rc;
  /* New outbox rows, maybe: the relay may want to know. */
  ob__engine_kick_components(e, NULL);
  return 0;
}

int ob_read(ob_engine_t* e, ob_tx_fn fn, void* arg) {
  return embedder_tx(e, fn, arg, OB__TX_READ);
}

int ob_write(ob_engine_t* e, ob_tx_fn fn, void* arg) {
  return embedder_tx(e, fn, arg, OB__TX_WRITE);
}
