/* SPDX-License-Identifier: Apache-2.0 */
#include "core/util/utc_time.h"

#include <string.h>

/* Floor division, so times before 1970 fall on the day they belong to. */
static int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

int ob__utc_from_unix(int64_t s, ob__utc_t* out) {
  int64_t days, secs, z, era, doe, yoe, y, doy, mp, d, m;
  if (s < OB__UTC_MIN_S || s > OB__UTC_MAX_S) return -1;
  days = floor_div(s, 86400);
  secs = s - days * 86400;
  /* Howard Hinnant's civil_from_days: 400-year eras from 0000-03-01. */
  z = days + 719468;
  era = floor_div(z, 146097);
  doe = z - era * 146097;
  yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  y = yoe + era * 400;
  doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  mp = (5 * doy + 2) / 153;
  d = doy - (153 * mp + 2) / 5 + 1;
  m = mp < 10 ? mp + 3 : mp - 9;
  if (m <= 2) y++;
  out->year = (int)y;
  out->month = (int)m;
  out->day = (int)d;
  out->hour = (int)(secs / 3600);
  out->minute = (int)(secs / 60 % 60);
  out->second = (int)(secs % 60);
  return 0;
}

static char* put_digits(char* o, int v, int width) {
  for (int k = width - 1; k >= 0; k--) {
    o[k] = (char)('0' + v % 10);
    v /= 10;
  }
  return o + width;
}

/* "YYYY-MM-DDTHH:MM:SS", no terminator; returns the end. */
static char* put_civil(char* o, const ob__utc_t* t) {
  o = put_digits(o, t->year, 4);
  *o++ = '-';
  o = put_digits(o, t->month, 2);
  *o++ = '-';
  o = put_digits(o, t->day, 2);
  *o++ = 'T';
  o = put_digits(o, t->hour, 2);
  *o++ = ':';
  o = put_digits(o, t->minute, 2);
  *o++ = ':';
  return put_digits(o, t->second, 2);
}

int ob__utc_format_s(int64_t ms, char out[OB__UTC_S_LEN]) {
  ob__utc_t t;
  char* o;
  if (ob__utc_from_unix(floor_div(ms, 1000), &t) != 0) {
    memcpy(out, "-", 2);
    return -1;
  }
  o = put_civil(out, &t);
  *o++ = 'Z';
  *o = '\0';
  return 0;
}

int ob__utc_format_ms(int64_t ms, char out[OB__UTC_MS_LEN]) {
  ob__utc_t t;
  int64_t s = floor_div(ms, 1000);
  char* o;
  if (ob__utc_from_unix(s, &t) != 0) {
    memcpy(out, "-", 2);
    return -1;
  }
  o = put_civil(out, &t);
  *o++ = '.';
  o = put_digits(o, (int)(ms - s * 1000), 3);
  *o++ = 'Z';
  *o = '\0';
  return 0;
}

/* width digits at s into *v; 0, or -1 if one is not a digit. */
static int get_digits(const char* s, int width, int* v) {
  *v = 0;
  for (int k = 0; k < width; k++) {
    if (s[k] < '0' || s[k] > '9') return -1;
    *v = *v * 10 + (s[k] - '0');
  }
  return 0;
}

/* Howard Hinnant's days_from_civil, the inverse of the above. */
static int64_t days_from_civil(int64_t y, int64_t m, int64_t d) {
  int64_t era, yoe, doy, doe;
  y -= m <= 2;
  era = floor_div(y, 400);
  yoe = y - era * 400;
  doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

int ob__utc_parse_ms(const char* s, int64_t* ms) {
  static const int mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  int y, mo, d, h, mi, se, frac = 0, leap;
  const char* p = s + 19;
  if (s == NULL || strlen(s) < 20) return -1;
  if (get_digits(s, 4, &y) || s[4] != '-' || get_digits(s + 5, 2, &mo) ||
      s[7] != '-' || get_digits(s + 8, 2, &d) || s[10] != 'T' ||
      get_digits(s + 11, 2, &h) || s[13] != ':' ||
      get_digits(s + 14, 2, &mi) || s[16] != ':' ||
      get_digits(s + 17, 2, &se))
    return -1;
  if (*p == '.') {
    int n = 0;
    for (p++; *p >= '0' && *p <= '9'; p++, n++)
      if (n < 3) frac = frac * 10 + (*p - '0');
    if (n == 0 || n > 9) return -1;
    for (; n < 3; n++) frac *= 10;
  }
  if (p[0] != 'Z' || p[1] != '\0') return -1;
  leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  if (mo < 1 || mo > 12 || d < 1 ||
      d > mdays[mo - 1] + (mo == 2 && leap) || h > 23 || mi > 59 || se > 59)
    return -1;
  *ms = (days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se) * 1000 +
        frac;
  return 0;
}
