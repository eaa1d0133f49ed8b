/* SPDX-License-Identifier: Apache-2.0 */
/* The ChargeOrder message, the provider request it makes and the
** OrderCharged event: strict parsing and encoding. Pure. */
#ifndef OB_CORE_CHARGE_MSG_H
#define OB_CORE_CHARGE_MSG_H

#include <stddef.h>
#include <stdint.h>

#define OB__CHARGE_MAX_BODY 4096
#define OB__CHARGE_ORDER_ID_MAX 64

typedef struct ob__charge_order_s {
  char order_id[OB__CHARGE_ORDER_ID_MAX + 1];  /* printable ASCII */
  int64_t amount_minor;                        /* 1 .. 2^53 - 1 */
  char currency[4];                            /* three upper-case letters */
} ob__charge_order_t;

/*
** Parse {"orderId","amountInMinorUnits","currency"}. Returns 0 and fills
** out, or -1 with a specific reason ("missing field orderId", "orderId must
** be 1..64 printable ASCII characters", the amount and currency reasons of
** PaymentCaptured, ...). Unknown fields are ignored; known ones twice are
** refused. Never allocates.
*/
int ob__charge_order_parse(const char* body, size_t len,
                           ob__charge_order_t* out, char* reason,
                           size_t reason_len);

/* The provider request {"order_id","amount_minor","currency"} and the
** OrderCharged payload {"orderId","amountInMinorUnits","currency",
** "chargeId"}: malloc'd, NUL-terminated; NULL when out of memory. */
char* ob__charge_request_body(const ob__charge_order_t* o);
char* ob__charge_event_payload(const ob__charge_order_t* o,
                               const char* charge_id);

#endif
