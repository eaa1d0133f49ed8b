/* SPDX-License-Identifier: Apache-2.0 */
/* The ChargeOrder message, the provider request it makes and the
** OrderCharged event: strict parsing and encoding. Pure. The module's own,
** not API. */
#ifndef OB_CHARGE_MSG_H
#define OB_CHARGE_MSG_H

#include <stddef.h>
#include <stdint.h>

#define OB_CHARGE__MAX_BODY 4096
#define OB_CHARGE__ORDER_ID_MAX 64

typedef struct ob_charge__order_s {
  char order_id[OB_CHARGE__ORDER_ID_MAX + 1];  /* printable ASCII */
  int64_t amount_minor;                        /* 1 .. 2^53 - 1 */
  char currency[4];                            /* three upper-case letters */
} ob_charge__order_t;

/*
** Parse {"orderId","amountInMinorUnits","currency"}. Returns 0 and fills
** out, or -1 with a specific reason ("missing field orderId", "orderId must
** be 1..64 printable ASCII characters", the amount and currency reasons of
** PaymentCaptured, ...). Unknown fields are ignored; known ones twice are
** refused. Never allocates.
*/
int ob_charge__parse(const char* body, size_t len, ob_charge__order_t* out,
                     char* reason, size_t reason_len);

/* The provider request {"order_id","amount_minor","currency"} and the
** OrderCharged payload {"orderId","amountInMinorUnits","currency",
** "chargeId"}: malloc'd, NUL-terminated; NULL when out of memory. */
char* ob_charge__request_body(const ob_charge__order_t* o);
char* ob_charge__event_payload(const ob_charge__order_t* o,
                               const char* charge_id);

#endif
