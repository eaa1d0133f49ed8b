/* SPDX-License-Identifier: Apache-2.0 */
/* Handler SQL's ? placeholders rewritten for libpq (storage/postgresql/
** pg_user_sql.c): outside literals, identifiers, comments and
** dollar-quoted strings only; one statement; the parameter count. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "storage/postgresql/pg_int.h"

static void expect(const char* in, const char* want, int want_n) {
  char out[512], err[160];
  int n = -1;
  int rc = ob__pg_rewrite_placeholders(in, out, sizeof out, &n, err,
                                       sizeof err);
  if (rc != 0) fail_msg("%s: %s", in, err);
  assert_string_equal(out, want);
  assert_int_equal(n, want_n);
}

static void expect_refused(const char* in, const char* why) {
  char out[512], err[160];
  int n;
  assert_int_equal(ob__pg_rewrite_placeholders(in, out, sizeof out, &n, err,
                                               sizeof err), OB_EINVAL);
  assert_non_null(strstr(err, why));
}

static void test_rewrites(void** state) {
  (void)state;
  expect("SELECT ?", "SELECT $1", 1);
  expect("INSERT INTO t VALUES (?, ?, ?)", "INSERT INTO t VALUES ($1, $2, $3)",
         3);
  expect("SELECT ?2, ?1, ?2", "SELECT $2, $1, $2", 2);
  expect("SELECT '?', 'it''s ?', \"a?\"\"b\", ?", "SELECT '?', 'it''s ?',"
         " \"a?\"\"b\", $1", 1);
  expect("SELECT ? -- why?\n", "SELECT $1 -- why?\n", 1);
  expect("SELECT /* a /* nested ? */ ? */ ?", "SELECT /* a /* nested ? */"
         " ? */ $1", 1);
  expect("SELECT $$?$$, $q$ ? $q$, ?", "SELECT $$?$$, $q$ ? $q$, $1", 1);
  expect("SELECT 1;  ", "SELECT 1", 0);
  expect("SELECT jsonb '{}' ?| array['a']", "SELECT jsonb '{}' $1| array['a']",
         1);  /* PostgreSQL's ? operators cannot be used: documented */
}

static void test_refusals(void** state) {
  char out[8], err[160];
  int n;
  (void)state;
  expect_refused("SELECT 1; DELETE FROM t", "one statement");
  expect_refused("SELECT 'open", "unterminated");
  expect_refused("SELECT /* open", "unterminated");
  expect_refused("SELECT $x$ open", "unterminated");
  expect_refused("SELECT ?, ?1", "mixes");
  expect_refused("SELECT ?0", "1..65535");
  assert_int_equal(ob__pg_rewrite_placeholders("SELECT 1234567890", out,
                                               sizeof out, &n, err,
                                               sizeof err), OB_ETOOBIG);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rewrites),
      cmocka_unit_test(test_refusals),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
