/* ob_strerror, ob_err_name, ob_version, ob_uuid_valid, policy defaults. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "core/util/retry.h"
#include "oncebox.h"

static void test_every_code_has_text_and_name(void** state) {
  (void)state;
#define CHECK(name, code, text)                                  \
  assert_int_equal(OB_##name, code);                             \
  assert_string_equal(ob_strerror(code), text);                  \
  assert_string_equal(ob_err_name(code), "OB_" #name);
  OB_ERRNO_MAP(CHECK)
#undef CHECK
}

static void test_success(void** state) {
  (void)state;
  assert_string_equal(ob_strerror(OB_OK), "success");
  assert_string_equal(ob_err_name(OB_OK), "OB_OK");
}

/* One past the most negative code in the map. */
#define COUNT(name, code, text) +1
enum { N_CODES = 0 OB_ERRNO_MAP(COUNT) };
#undef COUNT

static void test_unknown_codes(void** state) {
  static const int bad[] = {1, 2, -(N_CODES + 1), -63, OB__ERR_LAST, -65,
                            -1000, INT_MIN, INT_MAX};
  size_t i;
  (void)state;
  for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_string_equal(ob_strerror(bad[i]), "unknown error");
    assert_string_equal(ob_err_name(bad[i]), "OB_UNKNOWN");
  }
}

/* Texts and names are distinct (a log line names one code) and static (the
** same pointer each time: nothing is allocated). */
static void test_distinct_and_static(void** state) {
#define CODE(name, code, text) code,
  static const int codes[] = {OB_OK, OB_ERRNO_MAP(CODE)};
#undef CODE
  size_t n = sizeof codes / sizeof codes[0], a, b;
  (void)state;
  assert_int_equal(n, N_CODES + 1);
  /* Codes are dense: -1 .. -N_CODES, so a new one is appended, never
  ** renumbered (logs compare across a fleet). */
  for (a = 1; a < n; a++) assert_int_equal(codes[a], -(int)a);
  for (a = 0; a < n; a++) {
    assert_ptr_equal(ob_strerror(codes[a]), ob_strerror(codes[a]));
    assert_ptr_equal(ob_err_name(codes[a]), ob_err_name(codes[a]));
    assert_string_not_equal(ob_strerror(codes[a]), "unknown error");
    for (b = a + 1; b < n; b++) {
      assert_string_not_equal(ob_strerror(codes[a]), ob_strerror(codes[b]));
      assert_string_not_equal(ob_err_name(codes[a]), ob_err_name(codes[b]));
    }
  }
}

static void test_version(void** state) {
  char buf[32];
  (void)state;
  snprintf(buf, sizeof buf, "%d.%d.%d", OB_VERSION_MAJOR, OB_VERSION_MINOR,
           OB_VERSION_PATCH);
  assert_string_equal(ob_version(), OB_VERSION_STRING);
  assert_string_equal(ob_version(), buf);
}

static void test_uuid_valid(void** state) {
  (void)state;
  assert_int_equal(ob_uuid_valid("0190f3a4-7b2c-7def-8123-456789abcdef"), 1);
  assert_int_equal(ob_uuid_valid("0190F3A4-7B2C-7DEF-8123-456789ABCDEF"), 1);
  assert_int_equal(ob_uuid_valid("0190f3a4-7b2c-7def-8123-456789abcde"), 0);
  assert_int_equal(ob_uuid_valid("0190f3a47b2c7def8123456789abcdef"), 0);
  assert_int_equal(ob_uuid_valid(""), 0);
  assert_int_equal(ob_uuid_valid(NULL), 0);
}

static void test_policy_defaults(void** state) {
  ob_retry_policy_t p;
  (void)state;
  memset(&p, 0xA5, sizeof p);
  ob_retry_policy_init(&p);
  assert_int_equal(p.max_retries, 3);
  assert_int_equal(p.delay_ms, 1000);
  assert_true(p.multiplier == 2.0);
  assert_int_equal(p.max_delay_ms, 0);
  assert_true(p.jitter == 0.1);
  assert_int_equal(ob__retry_policy_check(&p), 0);
  ob_retry_policy_init(NULL); /* tolerated: must not crash */
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_every_code_has_text_and_name),
    cmocka_unit_test(test_success),
    cmocka_unit_test(test_unknown_codes),
    cmocka_unit_test(test_distinct_and_static),
    cmocka_unit_test(test_version),
    cmocka_unit_test(test_uuid_valid),
    cmocka_unit_test(test_policy_defaults),
  };
  return cmocka_run_group_tests_name("error", tests, NULL, NULL);
}
