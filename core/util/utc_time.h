/* SPDX-License-Identifier: Apache-2.0 */
/* UTC calendar dates from int64 Unix times, by arithmetic: no time_t, so
** nothing wraps in 2038 on a 32-bit terminal, and no TZ, locale or libc
** state. Pure. */
#ifndef OB_CORE_UTC_TIME_H
#define OB_CORE_UTC_TIME_H

#include <stdint.h>

/* The range RFC 3339 can write: 0000-01-01T00:00:00Z to
** 9999-12-31T23:59:59Z, in seconds since 1970-01-01T00:00:00Z. */
#define OB__UTC_MIN_S INT64_C(-62167219200)
#define OB__UTC_MAX_S INT64_C(253402300799)

typedef struct ob__utc_s {
  int year;   /* 0..9999 */
  int month;  /* 1..12 */
  int day;    /* 1..31 */
  int hour, minute, second;
} ob__utc_t;

/* Break s (seconds since the epoch, proleptic Gregorian, no leap seconds)
** into *out. ^Returns 0, or -1 (and *out untouched) when s is outside
** [OB__UTC_MIN_S, OB__UTC_MAX_S]. */
int ob__utc_from_unix(int64_t s, ob__utc_t* out);

/* "2040-01-01T00:00:00Z": 21 bytes with the NUL. */
#define OB__UTC_S_LEN 21
/* "2040-01-01T00:00:00.123Z": 25 bytes with the NUL. */
#define OB__UTC_MS_LEN 25

/* Write the time ms (milliseconds since the epoch; negative ones round
** towards the past, as a clock reads them) as RFC 3339 UTC, whole seconds
** (ob__utc_format_s) or with milliseconds (ob__utc_format_ms). ^Returns 0,
** or -1 with out set to "-" when the time is outside the range above. */
int ob__utc_format_s(int64_t ms, char out[OB__UTC_S_LEN]);
int ob__utc_format_ms(int64_t ms, char out[OB__UTC_MS_LEN]);

/* Parse a strict RFC 3339 UTC time, "2040-01-01T00:00:00Z" with an optional
** fraction of 1 to 9 digits (".123", kept to the millisecond), into *ms
** (milliseconds since the epoch). Only 'T' and 'Z', no offset, no leap
** second; the day must exist. ^Returns 0, or -1 (*ms untouched). */
int ob__utc_parse_ms(const char* s, int64_t* ms);

#endif
