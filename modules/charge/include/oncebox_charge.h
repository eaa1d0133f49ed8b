/* SPDX-License-Identifier: Apache-2.0 */
/*
** oncebox ChargeOrder module: one provider charge per order, behind the
** fence.
**
** A business module built on the public API of oncebox.h alone (which
** this header includes), as an embedder's own would be (modules/charge,
** docs/decisions/0024-module-contract.md): message type "ChargeOrder" with body
** {"orderId","amountInMinorUnits","currency"}, consumer "charge-order-v1",
** provider "payments": POST /v1/charges {"order_id","amount_minor",
** "currency"} under the fence key "charge:<orderId>" (ob_tx_effect); once
** the effect is confirmed, one row in `charge` per order and one
** OrderCharged outbox event. See docs/fence.md.
**
** The module's table (charge) is its own schema "charge" (ob_migrate),
** applied when the module is registered.
*/
#ifndef ONCEBOX_CHARGE_H
#define ONCEBOX_CHARGE_H

#include "oncebox.h"

#ifdef __cplusplus
extern "C" {
#endif

#define OB_CHARGE_MESSAGE_TYPE "ChargeOrder"
#define OB_CHARGE_CONSUMER "charge-order-v1"
#define OB_CHARGE_PROVIDER "payments"
#define OB_CHARGE_EVENT_TYPE "OrderCharged"
#define OB_CHARGE_LOOKUP_PATH "/v1/charges?idempotency_key="

/*
** Register the ChargeOrder module on e: its schema (ob_migrate: the table
** charge, schema "charge"), the handler of message type
** OB_CHARGE_MESSAGE_TYPE under consumer OB_CHARGE_CONSUMER, its figures
** "charges" and "unfenced_successes" (ob_add_stats, the second an alarm)
** and its invariants (ob_add_check), which ob_check runs after the
** engine's own:
** every charge stands on a confirmed effect carrying its provider
** reference, and each charge has one OB_CHARGE_EVENT_TYPE outbox row.
** Register the provider OB_CHARGE_PROVIDER too (ob_provider_enable or
** ob_provider_register); without it the handler's ob_tx_effect fails with
** OB_ENOTFOUND. Register before handling.
**
** Returns 0, OB_EEXIST if the handler is already registered on e (nothing
** changes), OB_EINVAL when e is NULL, OB_ENOMEM, or ob_migrate's code
** (the schema could not be applied: nothing else is registered). After
** the schema, an error may leave the hooks registered without the
** handler; they only read, so that is harmless.
*/
OB_EXTERN int ob_register_charge_order(ob_engine_t* e);

/* What the ChargeOrder module holds. */
typedef struct ob_charge_stats_s {
  int64_t charges;            /* rows in charge */
  /* Provider successes recorded without a confirmed fence: charges with no
  ** confirmed effect carrying their provider reference, plus every
  ** provider reference confirmed for more than one effect key beyond the
  ** first. It must be 0; otherwise a customer may have been charged twice
  ** or a charge is unaccounted for (`oncebox check` names them). */
  int64_t unfenced_successes;
} ob_charge_stats_t;

/*
** Fill *s from one read transaction of its own (ob_read: inside an
** ob_read's fn, that one's). The module need not be registered on e.
** Returns 0, OB_EINVAL when e or s is NULL, OB_ENOTFOUND
** when the database has no charge table, or a negative storage code
** (detail in ob_errmsg); *s is zeroed on every error except OB_EINVAL.
*/
OB_EXTERN int ob_charge_stats(ob_engine_t* e, ob_charge_stats_t* s);

#ifdef __cplusplus
}
#endif
#endif /* ONCEBOX_CHARGE_H */
