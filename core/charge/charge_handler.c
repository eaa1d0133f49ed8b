/* SPDX-License-Identifier: Apache-2.0 */
/* The built-in ChargeOrder module: one provider charge per order behind the
** fence "charge:<orderId>", then one charge row and one OrderCharged event
** in the transaction that records the provider's answer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/charge/charge_msg.h"
#include "core/engine/engine_int.h"
#include "core/engine/modules.h"
#include "oncebox_charge.h"

static int charge_handle(ob_tx_t* tx, const ob_message_t* msg, void* arg) {
  ob__charge_order_t o;
  ob_effect_request_t req;
  ob_effect_t ef;
  char reason[256], key[OB__EFFECT_KEY_MAX + 1];
  char *body, *payload;
  int rc;
  (void)arg;

  if (ob__charge_order_parse(msg->body, msg->body_len, &o, reason,
                             sizeof reason) != 0)
    return ob_tx_fail(tx, reason);
  snprintf(key, sizeof key, "charge:%s", o.order_id);
  body = ob__charge_request_body(&o);
  if (body == NULL) {
    tx->fatal = OB_ENOMEM;
    return OB_ENOMEM;
  }
  memset(&req, 0, sizeof req);
  req.provider = OB_CHARGE_PROVIDER;
  req.method = "POST";
  req.path = "/v1/charges";
  req.body = body;
  req.body_len = strlen(body);
  req.lookup_reference = o.order_id;  /* the provider knows charges by it */
  rc = ob_tx_effect(tx, key, &req, &ef);
  free(body);
  if (rc != OB_DONE) return rc;

  /* Confirmed. A provider that answered 2xx without an id still charged:
  ** the idempotency key then stands in as the reference. */
  {
    const char* ref = ef.reference ? ef.reference : ef.idempotency_key;
    rc = ob__charge_insert(&tx->e->db, o.order_id, o.amount_minor, o.currency,
                           ref, key, msg->id, tx->now);
    if (rc < 0) {
      if (ob__is_fatal(rc)) tx->fatal = rc;
      return rc;
    }
    if (rc == 0) return OB_DONE;  /* another message recorded this order */
    payload = ob__charge_event_payload(&o, ref);
  }
  if (payload == NULL) {
    tx->fatal = OB_ENOMEM;
    return OB_ENOMEM;
  }
  rc = ob_tx_emit(tx, OB_CHARGE_EVENT_TYPE, o.order_id, payload,
                  strlen(payload), NULL);
  free(payload);
  return rc < 0 ? rc : OB_DONE;
}

static int charge_check(ob_engine_t* e, void (*cb)(void* arg, const char* v),
                        void* arg) {
  return ob__charge_check(&e->db, cb, arg);
}

int ob_register_charge_order(ob_engine_t* e) {
  int rc;
  if (e == NULL) return OB_EINVAL;
  rc = ob__engine_add_check(e, "charge", charge_check);
  if (rc < 0 && rc != OB_EEXIST) return rc;
  /* Money: it may still enter a database at its cap's reserve. */
  rc = ob_mark_critical(e, OB_CHARGE_MESSAGE_TYPE);
  if (rc < 0) return rc;
  return ob_register(e, OB_CHARGE_MESSAGE_TYPE, OB_CHARGE_CONSUMER,
                     charge_handle, NULL);
}

int ob_charge_stats(ob_engine_t* e, ob_charge_stats_t* s) {
  if (e == NULL || s == NULL) return OB_EINVAL;
  return ob__charge_stats(&e->db, s);
}
