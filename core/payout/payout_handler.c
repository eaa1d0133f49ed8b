/* SPDX-License-Identifier: Apache-2.0 */
/* The built-in payout module: PaymentCaptured -> one merchant payout and one
** MerchantPayoutCreated outbox event, in the handling transaction. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine/engine_int.h"
#include "core/engine/modules.h"
#include "core/payout/payout_msg.h"
#include "oncebox_payout.h"

static int payout_handle(ob_tx_t* tx, const ob_message_t* msg, void* arg) {
  ob__payment_captured_t p;
  char reason[256], payout_id[OB_UUID_BUFLEN], existing[OB_UUID_BUFLEN];
  char* payload;
  int rc;
  (void)arg;

  if (ob__payment_captured_parse(msg->body, msg->body_len, &p, reason,
                                 sizeof reason) != 0)
    return ob_tx_fail(tx, reason);

  ob_tx_new_id(tx, payout_id);
  rc = ob__payout_insert(&tx->e->db, payout_id, p.payment_id, p.merchant_id,
                         p.amount_minor, p.currency, msg->id, tx->now,
                         existing);
  if (rc < 0) {
    if (ob__is_fatal(rc)) tx->fatal = rc;
    return rc;
  }
  if (rc == 0) {
    /* The same event paid it: its dedup record was already swept by
    ** retention, but the payout itself is the proof. Nothing to do. */
    if (strcmp(existing, msg->id) == 0) return OB_DONE;
    char why[OB__REASON_LEN];
    ob__fmt(why, sizeof why,
             "payment %s already has a payout (created by event %s); "
             "event %s would pay it twice",
             p.payment_id, existing[0] ? existing : "?", msg->id);
    return ob_tx_fail(tx, why);
  }
  payload = ob__payout_event_payload(payout_id, &p);
  if (payload == NULL) {
    tx->fatal = ob__db_seterr(&tx->e->db, OB_ENOMEM,
                              "out of memory encoding the payout event");
    return OB_ENOMEM;
  }
  rc = ob_tx_emit(tx, OB_PAYOUT_EVENT_TYPE, p.payment_id, payload,
                  strlen(payload), NULL);
  free(payload);
  return rc < 0 ? rc : OB_DONE;
}

static int payout_check(ob_engine_t* e, void (*cb)(void* arg, const char* v),
                        void* arg) {
  return ob__payout_check(&e->db, cb, arg);
}

int ob_register_payout(ob_engine_t* e) {
  int rc;
  if (e == NULL) return OB_EINVAL;
  rc = ob__engine_add_check(e, "payout", payout_check);
  if (rc < 0 && rc != OB_EEXIST) return rc;
  /* Money: it may still enter a database at its cap's reserve. */
  rc = ob_mark_critical(e, OB_PAYOUT_MESSAGE_TYPE);
  if (rc < 0) return rc;
  return ob_register(e, OB_PAYOUT_MESSAGE_TYPE, OB_PAYOUT_CONSUMER,
                     payout_handle, NULL);
}

int ob_payout_stats(ob_engine_t* e, ob_payout_stats_t* s) {
  if (e == NULL || s == NULL) return OB_EINVAL;
  return ob__payout_stats(&e->db, s);
}
