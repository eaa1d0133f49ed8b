/* SPDX-License-Identifier: Apache-2.0 */
/* ob__errbuf_set: formats, truncates, NUL-terminates, is NULL/0-safe and
** returns the code it was given. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "core/util/errbuf.h"
#include "oncebox.h"

static int vwrap(char* buf, size_t len, int code, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int vwrap(char* buf, size_t len, int code, const char* fmt, ...) {
  va_list ap;
  int rc;
  va_start(ap, fmt);
  rc = ob__errbuf_vset(buf, len, code, fmt, ap);
  va_end(ap);
  return rc;
}

static void test_formats_and_returns_code(void** state) {
  char buf[64];
  (void)state;
  assert_int_equal(ob__errbuf_set(buf, sizeof buf, OB_EINVAL, "%s:%d", "a", 7),
                   OB_EINVAL);
  assert_string_equal(buf, "a:7");
  assert_int_equal(vwrap(buf, sizeof buf, -1, "x=%u", 42u), -1);
  assert_string_equal(buf, "x=42");
}

static void test_truncates_with_nul(void** state) {
  char buf[8];
  (void)state;
  memset(buf, 'z', sizeof buf);
  assert_int_equal(ob__errbuf_set(buf, 4, 0, "%s", "abcdef"), 0);
  assert_string_equal(buf, "abc");
  assert_int_equal(buf[4], 'z');  /* nothing past errlen */
}

static void test_null_and_zero_are_safe(void** state) {
  char buf[5] = "keep";
  (void)state;
  assert_int_equal(ob__errbuf_set(NULL, 100, OB_ENOMEM, "%s", "x"),
                   OB_ENOMEM);
  assert_int_equal(ob__errbuf_set(buf, 0, OB_EIO, "%s", "x"), OB_EIO);
  assert_string_equal(buf, "keep");
  assert_int_equal(vwrap(NULL, 0, 3, "%d", 1), 3);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_formats_and_returns_code),
    cmocka_unit_test(test_truncates_with_nul),
    cmocka_unit_test(test_null_and_zero_are_safe),
  };
  return cmocka_run_group_tests_name("errbuf", tests, NULL, NULL);
}
