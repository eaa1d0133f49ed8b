/* SPDX-License-Identifier: Apache-2.0 */
/* The dialects built apart (storage/dialect.h, platform/posix/plugin.c,
** docs/decisions/0025-dialect-plugin.md): a PostgreSQL connection string
** without the plugin, with a plugin of another version, one without the
** entry point, one writable by others: each refused with a clear error,
** nothing opened, no password shown; then the static archive registered
** with one call (in a build with PostgreSQL), which the loader never needs
** to look for. Real files and the real dlopen; the wrong plugins are
** stand-ins (dialect_fake.c). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "oncebox.h"
#include "tests/support/testsupport.h"
#if defined(OB_TEST_STATIC_PG)
#include "oncebox_postgresql.h"
#endif

#define URI "postgresql://u:s3cr3t-pw@/x?host=/nonexistent-oncebox-dir"

static char* dir;

/* ob_open on URI with the plugin folder pdir: its code, errmsg in err. */
static int open_with(const char* pdir, char* err, size_t n) {
  ob_options_t o;
  ob_engine_t* e = NULL;
  int rc;
  setenv("ONCEBOX_DIALECT_DIR", pdir, 1);
  ob_options_init(&o);
  o.db_path = URI;
  err[0] = '\0';
  rc = ob_open(&e, &o, err, n);
  assert_null(e);
  assert_null(strstr(err, "s3cr3t"));
  return rc;
}

static void test_missing(void** state) {
  char err[512];
  (void)state;
  assert_int_equal(open_with(dir, err, sizeof err), OB_ENOTSUP);
  assert_non_null(strstr(err, "postgresql dialect is not installed"));
  assert_non_null(strstr(err, "install the package oncebox-postgresql"));
  assert_non_null(strstr(err, "ob_postgresql_register()"));
}

static char* copy_fake(const char* fake, const char* sub, mode_t mode) {
  char* to = ts_path(dir, sub);
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "mkdir -p '%s' && cp '%s/tests/unit/%s' '%s/postgresql.so'",
           to, getenv("OB_BINARY_DIR"), fake, to);
  assert_int_equal(system(cmd), 0);
  {
    char* so = ts_path(to, "postgresql.so");
    assert_int_equal(chmod(so, mode), 0);
    free(so);
  }
  return to;
}

static void test_other_version(void** state) {
  char err[512];
  char* d = copy_fake("fake-other-version.so", "other", 0755);
  (void)state;
  assert_int_equal(open_with(d, err, sizeof err), OB_ENOTSUP);
  assert_non_null(strstr(err, "built for oncebox 9.9.9"));
  assert_non_null(strstr(err, "this is oncebox " OB_VERSION_STRING));
  free(d);
}

static void test_no_entry(void** state) {
  char err[512];
  char* d = copy_fake("fake-no-entry.so", "noentry", 0755);
  (void)state;
  assert_int_equal(open_with(d, err, sizeof err), OB_ENOTSUP);
  assert_non_null(strstr(err, "not an oncebox dialect"));
  free(d);
}

static void test_writable_by_others(void** state) {
  char err[512];
  char* d = copy_fake("fake-other-version.so", "writable", 0775);
  (void)state;
  assert_int_equal(open_with(d, err, sizeof err), OB_EPERM);
  assert_non_null(strstr(err, "writable by its group or by others"));
  free(d);
}

static const ob_dialect_t* refuses(const ob_dialect_host_t* host) {
  (void)host;
  return NULL;
}

static void test_register_refusals(void** state) {
  char err[256];
  (void)state;
  assert_int_equal(ob_dialect_register(NULL, err, sizeof err), OB_EINVAL);
  assert_int_equal(ob_dialect_register(refuses, err, sizeof err), OB_ENOTSUP);
  assert_non_null(strstr(err, "refused this library"));
  /* Nothing was registered by any of them. */
  assert_int_equal(open_with(dir, err, sizeof err), OB_ENOTSUP);
}

#if defined(OB_TEST_STATIC_PG)
static void test_static_archive(void** state) {
  char err[512];
  char shown[256];
  (void)state;
  assert_int_equal(ob_postgresql_register(err, sizeof err), 0);
  assert_int_equal(ob_postgresql_register(err, sizeof err), 0);
  /* No plugin folder holds it: the registered archive answers. The server
  ** does not exist, so the open fails on the connection, not the dialect. */
  assert_int_not_equal(open_with(dir, err, sizeof err), OB_ENOTSUP);
  assert_null(strstr(err, "not installed"));
  ob_db_display_name(URI, shown, sizeof shown);
  assert_non_null(strstr(shown, "dbname=x"));
  assert_null(strstr(shown, "s3cr3t"));
}
#endif

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_missing),
      cmocka_unit_test(test_other_version),
      cmocka_unit_test(test_no_entry),
      cmocka_unit_test(test_writable_by_others),
      cmocka_unit_test(test_register_refusals),
#if defined(OB_TEST_STATIC_PG)
      cmocka_unit_test(test_static_archive),
#endif
  };
  int rc;
  dir = ts_mkdtemp("dialect");
  rc = cmocka_run_group_tests(tests, NULL, NULL);
  ts_rmdir(dir);
  return rc;
}
