/* SPDX-License-Identifier: Apache-2.0 */
/* The PaymentCaptured message and the MerchantPayoutCreated event: strict
** parsing and encoding. Pure. The module's own, not API. */
#ifndef OB_PAYOUT_MSG_H
#define OB_PAYOUT_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "oncebox.h"

#define OB_PAYOUT__MAX_BODY 4096
/* Largest amount accepted: 2^53 - 1 (ob_json_amount, decision 0003). */
#define OB_PAYOUT__MAX_AMOUNT 9007199254740991LL

typedef struct ob_payout__captured_s {
  char payment_id[OB_UUID_BUFLEN];    /* lower-case canonical UUID */
  char merchant_id[OB_UUID_BUFLEN];   /* lower-case canonical UUID */
  int64_t amount_minor;   /* 1 .. OB_PAYOUT__MAX_AMOUNT */
  char currency[4];       /* three upper-case ASCII letters */
} ob_payout__captured_t;

/*
** Parse a PaymentCaptured body {"paymentId","merchantId",
** "amountInMinorUnits","currency"}. Returns 0 and fills out, or -1 and
** writes a specific human-readable reason (NUL-terminated, truncated to
** reason_len) such as:
**   "body is 5000 bytes, over the 4096-byte limit"
**   "body is not valid JSON"            "body is not a JSON object"
**   "missing field paymentId"           "field paymentId must be a string"
**   "paymentId is not a UUID"           "duplicate field currency"
**   "amountInMinorUnits must be an integer"
**   "amountInMinorUnits must be > 0"    "amountInMinorUnits overflows int64"
**   "amountInMinorUnits exceeds 9007199254740991"
**   "currency must be three upper-case letters (ISO 4217)"
** Unknown extra fields are ignored (forward compatibility), duplicates of
** them too; a known field twice is "duplicate field X", checked first.
** Then fields in the order of the first line, each for missing, type, value;
** the first problem is the one reported. Keys and strings are compared
** after unescaping, byte for byte: "payment\u0049d" is paymentId,
** "paymentId\u0000" is not. The amount is judged from its exact decimal
** text (ob_json_amount). out is written only on success (may be NULL);
** reason may be NULL and is set to "" on success. Never allocates: the only
** failure is a rejection.
*/
int ob_payout__parse(const char* body, size_t len, ob_payout__captured_t* out,
                     char* reason, size_t reason_len);

/*
** JSON payload of MerchantPayoutCreated:
** {"payoutId":..,"paymentId":..,"merchantId":..,"amountInMinorUnits":..,
**  "currency":..}, the amount as a plain integer (never an exponent), strings
** escaped. payout_id and p must not be NULL. Returns a malloc'd
** NUL-terminated string the caller frees, or NULL when out of memory.
*/
char* ob_payout__event_payload(const char* payout_id,
                               const ob_payout__captured_t* p);

#endif
