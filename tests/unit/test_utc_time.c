/* SPDX-License-Identifier: Apache-2.0 */
/* core/util/utc_time.c: calendar dates by int64 arithmetic, and every
** place that prints a time through it (CloudEvents' `time`, the CLI, the
** SigV4 date). The dates past 2038 are the point: on a 32-bit terminal a
** time_t path wraps there (tests/cross.sh armhf runs this under qemu). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "core/relay/cloudevents.h"
#include "core/sigv4/sigv4.h"
#include "core/util/utc_time.h"
#include "oncebox.h"
#include "programs/oncebox/cli.h"

typedef struct vec_s {
  int64_t s;
  const char* want;
} vec_t;

/* Checked against Python's datetime (proleptic Gregorian, no leap
** seconds), as RFC 3339 and POSIX time count. */
static const vec_t vecs[] = {
    {0, "1970-01-01T00:00:00Z"},
    {-1, "1969-12-31T23:59:59Z"},
    {951782400, "2000-02-29T00:00:00Z"},      /* a 400-year leap day */
    {2147483647, "2038-01-19T03:14:07Z"},     /* the last 32-bit second */
    {2147483648, "2038-01-19T03:14:08Z"},     /* the first after it */
    {2240611200, "2041-01-01T00:00:00Z"},
    {4107542400, "2100-03-01T00:00:00Z"},     /* 2100 is not a leap year */
    {4294967296, "2106-02-07T06:28:16Z"},     /* past an unsigned 32 bits */
    {OB__UTC_MAX_S, "9999-12-31T23:59:59Z"},
    {OB__UTC_MIN_S, "0000-01-01T00:00:00Z"},
};

static void test_vectors(void** state) {
  char out[OB__UTC_S_LEN];
  (void)state;
  for (size_t i = 0; i < sizeof vecs / sizeof vecs[0]; i++) {
    assert_int_equal(ob__utc_format_s(vecs[i].s * 1000, out), 0);
    assert_string_equal(out, vecs[i].want);
  }
}

static void test_milliseconds(void** state) {
  char out[OB__UTC_MS_LEN];
  (void)state;
  assert_int_equal(ob__utc_format_ms(INT64_C(2147483648123), out), 0);
  assert_string_equal(out, "2038-01-19T03:14:08.123Z");
  /* Before the epoch, as a clock reads: 1 ms before is .999 of the second
  ** before, not .001 of a second after. */
  assert_int_equal(ob__utc_format_ms(-1, out), 0);
  assert_string_equal(out, "1969-12-31T23:59:59.999Z");
}

/* Every day from 1970 to 2200 follows the one before: the calendar never
** skips or repeats a day, and the fields stay in range. */
static void test_days_are_consecutive(void** state) {
  ob__utc_t prev, cur;
  (void)state;
  assert_int_equal(ob__utc_from_unix(0, &prev), 0);
  for (int64_t d = 1; d < 84000; d++) {
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int leap, last;
    assert_int_equal(ob__utc_from_unix(d * 86400 + 86399, &cur), 0);
    assert_int_equal(cur.hour * 3600 + cur.minute * 60 + cur.second, 86399);
    leap = (prev.year % 4 == 0 && prev.year % 100 != 0) || prev.year % 400 == 0;
    last = mdays[prev.month - 1] + (prev.month == 2 && leap);
    if (prev.day < last) {
      assert_int_equal(cur.year, prev.year);
      assert_int_equal(cur.month, prev.month);
      assert_int_equal(cur.day, prev.day + 1);
    } else if (prev.month < 12) {
      assert_int_equal(cur.year, prev.year);
      assert_int_equal(cur.month, prev.month + 1);
      assert_int_equal(cur.day, 1);
    } else {
      assert_int_equal(cur.year, prev.year + 1);
      assert_int_equal(cur.month, 1);
      assert_int_equal(cur.day, 1);
    }
    prev = cur;
  }
}

static void test_out_of_range(void** state) {
  char out[OB__UTC_MS_LEN];
  ob__utc_t t;
  (void)state;
  assert_int_equal(ob__utc_from_unix(OB__UTC_MAX_S + 1, &t), -1);
  assert_int_equal(ob__utc_from_unix(OB__UTC_MIN_S - 1, &t), -1);
  assert_int_equal(ob__utc_format_ms(INT64_MAX, out), -1);
  assert_string_equal(out, "-");
  assert_int_equal(ob__utc_format_s(INT64_MIN, out), -1);
  assert_string_equal(out, "-");
}

/* An event created in 2041 says 2041 on the wire. */
static void test_cloudevent_time_past_2038(void** state) {
  ob_event_t ev;
  size_t len = 0;
  char* json;
  (void)state;
  memset(&ev, 0, sizeof ev);
  ev.id = "0190b6d8-3ae7-7ca2-a653-000000000001";
  ev.event_type = "MerchantPayoutCreated";
  ev.aggregate_id = "m-1";
  ev.payload = "{}";
  ev.payload_len = 2;
  ev.created_at_ms = INT64_C(2240611200) * 1000 + 42;
  json = ob__cloudevent_encode(&ev, "urn:oncebox:test", &len);
  assert_non_null(json);
  assert_non_null(strstr(json, "\"time\":\"2041-01-01T00:00:00.042Z\""));
  free(json);
}

static void test_cli_and_sigv4_past_2038(void** state) {
  char out[OB__UTC_S_LEN], amz[17];
  (void)state;
  ob__cli_format_time(INT64_C(4294967296) * 1000, out);
  assert_string_equal(out, "2106-02-07T06:28:16Z");
  ob__cli_format_time(0, out);
  assert_string_equal(out, "-");
  assert_int_equal(ob__sigv4_amz_date(INT64_C(2147483648), amz), 0);
  assert_string_equal(amz, "20380119T031408Z");
  assert_int_equal(ob__sigv4_amz_date(-1, amz), OB_EINVAL);
}

/* The parser is the formatter's inverse, past 2038 and 2106 too, and
** refuses anything but the strict UTC form. */
static void test_parse(void** state) {
  static const char* bad[] = {
      "", "2026-12-01", "2026-12-01T00:00:00", "2026-12-01t00:00:00Z",
      "2026-12-01 00:00:00Z", "2026-12-01T00:00:00+00:00", "2026-13-01T00:00:00Z",
      "2026-02-29T00:00:00Z", "2100-02-29T00:00:00Z", "2026-04-31T00:00:00Z",
      "2026-12-01T24:00:00Z", "2026-12-01T00:60:00Z", "2026-12-01T00:00:60Z",
      "2026-12-01T00:00:00.Z", "2026-12-01T00:00:00.1234567890Z",
      "2026-12-01T00:00:00Zx", "+026-12-01T00:00:00Z", "2026-1-01T00:00:00Z",
      "2h"};
  char out[OB__UTC_MS_LEN];
  int64_t ms = 7;
  (void)state;
  assert_int_equal(ob__utc_parse_ms("1970-01-01T00:00:00Z", &ms), 0);
  assert_int_equal(ms, 0);
  assert_int_equal(ob__utc_parse_ms("2038-01-19T03:14:08Z", &ms), 0);
  assert_int_equal(ms, INT64_C(2147483648) * 1000);
  assert_int_equal(ob__utc_parse_ms("2106-02-07T06:28:16Z", &ms), 0);
  assert_int_equal(ms, INT64_C(4294967296) * 1000);
  assert_int_equal(ob__utc_parse_ms("2000-02-29T23:59:59.5Z", &ms), 0);
  assert_int_equal(ms, INT64_C(951868799500));
  assert_int_equal(ob__utc_parse_ms("1969-12-31T23:59:59.999999Z", &ms), 0);
  assert_int_equal(ms, -1);
  assert_int_equal(ob__utc_parse_ms("9999-12-31T23:59:59Z", &ms), 0);
  assert_int_equal(ms, OB__UTC_MAX_S * 1000);
  assert_int_equal(ob__utc_parse_ms("0000-01-01T00:00:00Z", &ms), 0);
  assert_int_equal(ms, OB__UTC_MIN_S * 1000);
  /* Round trip over a spread of times, 1970 to 9999. */
  for (int64_t t = 0; t < OB__UTC_MAX_S * 1000; t += INT64_C(86399999) * 997) {
    assert_int_equal(ob__utc_format_ms(t, out), 0);
    assert_int_equal(ob__utc_parse_ms(out, &ms), 0);
    assert_int_equal(ms, t);
  }
  ms = 7;
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    if (ob__utc_parse_ms(bad[i], &ms) != -1) fail_msg("accepted '%s'", bad[i]);
    assert_int_equal(ms, 7);
  }
}

int main(void) {
  static const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_vectors),
      cmocka_unit_test(test_milliseconds),
      cmocka_unit_test(test_days_are_consecutive),
      cmocka_unit_test(test_out_of_range),
      cmocka_unit_test(test_cloudevent_time_past_2038),
      cmocka_unit_test(test_cli_and_sigv4_past_2038),
      cmocka_unit_test(test_parse),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
