/* SPDX-License-Identifier: Apache-2.0 */
/*
** oncebox payout module: PaymentCaptured -> one merchant payout.
**
** A business module built on the public API of oncebox.h alone (which
** this header includes), as an embedder's own would be (modules/payout,
** docs/decisions/0024-module-contract.md). Nothing here is needed to use
** the engine; include it to handle the first article's scenario: a
** point-of-sale terminal captures a payment and creates exactly one
** merchant payout, telling head office through one MerchantPayoutCreated
** outbox event. See docs/payout.md.
**
** The module's table (merchant_payout) is its own schema "payout"
** (ob_migrate), applied when the module is registered.
*/
#ifndef ONCEBOX_PAYOUT_H
#define ONCEBOX_PAYOUT_H

#include "oncebox.h"

#ifdef __cplusplus
extern "C" {
#endif

#define OB_PAYOUT_MESSAGE_TYPE "PaymentCaptured"
#define OB_PAYOUT_CONSUMER "create-merchant-payout-v1"
#define OB_PAYOUT_EVENT_TYPE "MerchantPayoutCreated"

/*
** Register the payout module on e: its schema (ob_migrate: the table
** merchant_payout, schema "payout"), the handler of message type
** OB_PAYOUT_MESSAGE_TYPE under consumer OB_PAYOUT_CONSUMER, its figure
** "payouts" (ob_add_stats) and its invariants (ob_add_check), which
** ob_check then runs after the engine's own:
** one payout per payment, one OB_PAYOUT_EVENT_TYPE outbox row per payout
** whose causation id is the event that paid it, no such event without its
** payout, no payout without its dedup record (unless retention swept it).
** Register before handling (ob_run_once, ob_attach).
**
** Returns 0, OB_EEXIST if the handler is already registered on e (nothing
** changes), OB_EINVAL when e is NULL, OB_ENOMEM, or ob_migrate's code
** (the schema could not be applied: nothing else is registered). After
** the schema, an error may leave the hooks registered without the
** handler; they only read, so that is harmless.
*/
OB_EXTERN int ob_register_payout(ob_engine_t* e);

/* What the payout module holds. */
typedef struct ob_payout_stats_s {
  int64_t payouts;            /* rows in merchant_payout */
} ob_payout_stats_t;

/*
** Fill *s from one read transaction of its own (ob_read: inside an
** ob_read's fn, that one's). The module need not be registered on e.
** Returns 0, OB_EINVAL when e or s is NULL, OB_ENOTFOUND when the database
** has no merchant_payout table, or a negative storage code (detail in
** ob_errmsg); *s is zeroed on every error except OB_EINVAL.
*/
OB_EXTERN int ob_payout_stats(ob_engine_t* e, ob_payout_stats_t* s);

#ifdef __cplusplus
}
#endif
#endif /* ONCEBOX_PAYOUT_H */
