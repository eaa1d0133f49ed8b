/* SPDX-License-Identifier: Apache-2.0 */
/* Amounts in minor units, judged from their exact JSON text. Pure. */
#ifndef OB_CORE_UTIL_AMOUNT_H
#define OB_CORE_UTIL_AMOUNT_H

#include <stdint.h>

/* Largest amount accepted: 2^53 - 1, the interoperable JSON integer range
** (RFC 8259 section 6); see docs/decisions/0003-amounts.md. */
#define OB__AMOUNT_MAX 9007199254740991LL

/*
** Judge an amountInMinorUnits value from its exact decimal text at p (a
** value inside a document ob__json_valid accepted), never through a double.
** Any JSON number whose value is an integer counts (1e3, 1000.0). Returns
** NULL and sets *out (1 .. OB__AMOUNT_MAX), or a static reason and leaves
** *out alone: "amountInMinorUnits must be an integer" (also for a
** non-number), "amountInMinorUnits must be > 0", "amountInMinorUnits
** overflows int64", "amountInMinorUnits exceeds 9007199254740991". What
** the public ob_json_amount answers. Never allocates.
*/
const char* ob__amount_parse(const char* p, int64_t* out);

#endif
