/* SPDX-License-Identifier: Apache-2.0 */
#include "core/util/amount.h"

#include <stddef.h>
#include <stdint.h>

#define AMOUNT_NOT_INT "amountInMinorUnits must be an integer"

/* Judge the amount from its exact decimal text at p. Any number whose value
** is an integer counts (1e3, 1000.0: JSON has one number type, and JSON
** Schema's "integer" means the same). Returns NULL and sets *out, or the
** reason. */
const char* ob__amount_parse(const char* p, int64_t* out) {
  const char *ip, *fp = NULL;
  size_t ni, nf = 0, total, k, first, last;
  int64_t exp = 0, e10;
  uint64_t v = 0;
  int neg = 0, eneg = 0;

  if (*p == '-') {
    neg = 1;
    p++;
  }
  if (*p < '0' || *p > '9') return AMOUNT_NOT_INT; /* string, bool, ... */
  for (ip = p; *p >= '0' && *p <= '9'; p++) {}
  ni = (size_t)(p - ip);
  if (*p == '.') {
    for (fp = ++p; *p >= '0' && *p <= '9'; p++) {}
    nf = (size_t)(p - fp);
  }
  if (*p == 'e' || *p == 'E') {
    p++;
    if (*p == '+' || *p == '-') eneg = *p++ == '-';
    /* Clamp: the body is at most 4 KiB, so |exp| beyond 10^6 decides
    ** nothing more. */
    for (; *p >= '0' && *p <= '9'; p++)
      if (exp < 1000000) exp = exp * 10 + (*p - '0');
    if (eneg) exp = -exp;
  }

  /* value = digits(ip ++ fp) * 10^(exp - nf); strip zeros on both ends. */
  total = ni + nf;
#define DIGIT(i) ((i) < ni ? ip[(i)] : fp[(i) - ni])
  for (first = 0; first < total && DIGIT(first) == '0'; first++) {}
  if (first == total) return "amountInMinorUnits must be > 0"; /* 0, -0.0 */
  for (last = total - 1; DIGIT(last) == '0'; last--) {}
  e10 = exp - (int64_t)nf + (int64_t)(total - 1 - last);
  if (e10 < 0) return AMOUNT_NOT_INT;
  /* 19 digits or fewer: below 10^19, fits in uint64. More: beyond int64. */
  if ((int64_t)(last - first + 1) + e10 > 19)
    return "amountInMinorUnits overflows int64";
  for (k = first; k <= last; k++) v = v * 10 + (uint64_t)(DIGIT(k) - '0');
#undef DIGIT
  while (e10-- > 0) v *= 10;
  if (v > (uint64_t)INT64_MAX + (neg ? 1u : 0u))
    return "amountInMinorUnits overflows int64";
  if (neg) return "amountInMinorUnits must be > 0";
  if (v > (uint64_t)OB__AMOUNT_MAX)
    return "amountInMinorUnits exceeds 9007199254740991";
  *out = (int64_t)v;
  return NULL;
}

