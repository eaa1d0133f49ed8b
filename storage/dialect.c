/* SPDX-License-Identifier: Apache-2.0 */
/* The dialects built apart (storage/dialect.h): what the library lends
** them, their registration with its checks, and loading the plugin of one
** that a database name asks for. */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "core/util/assert.h"
#include "platform/posix/plugin.h"
#include "storage/dialect.h"

/* core/util/assert.c: defined in every build, declared by assert.h only
** where asserts are on; a dialect built with them may call it. */
_Noreturn void ob__assert_fail(const char* file, int line, const char* expr);

static void assert_fail(const char* file, int line, const char* expr) {
  ob__assert_fail(file, line, expr);
}

const ob_dialect_host_t ob__dialect_host = {
    .abi = OB__DIALECT_ABI,
    .version = OB_VERSION_STRING,
    .db_size = sizeof(ob__db_t),
    .db_seterr = ob__db_seterr,
    .assert_fail = assert_fail,
    .observed_clock_load = ob__observed_clock_load,
    .schema_ext_check = ob__schema_ext_check,
    .schema_ext_missing = ob__schema_ext_missing,
    .schema_ext_apply = ob__schema_ext_apply,
    .engine_clock_record = ob__sql_engine_clock_record,
    .sql_prepare = ob__sql_prepare,
    .sql_int = ob__sql_int,
    .sql_text = ob__sql_text,
    .sql_step = ob__sql_step,
    .sql_col_int = ob__sql_col_int,
    .sql_col_text = ob__sql_col_text,
    .sql_finish = ob__sql_finish,
    .sql_done = ob__sql_done,
    .sql_int1 = ob__sql_int1,
    .sql_run = ob__sql_run,
    .sql_lock_key = ob__sql_lock_key,
};

/* The dialects a database name can ask for besides SQLite: the plugin's
** file name and the Debian package that installs it. */
static const struct {
  int dialect;
  const char* name;
  const char* package;
  const char* register_fn;
} known[] = {
    {OB_DIALECT_POSTGRESQL, "postgresql", "oncebox-postgresql",
     "ob_postgresql_register() of liboncebox-postgresql.a"},
};

/* Indexed by OB_DIALECT_*: written once per process in practice, read on
** every open, from any thread. */
static _Atomic(const ob__store_ops_t*) registered[OB_DIALECT_POSTGRESQL + 1];

const ob__store_ops_t* ob__dialect_find(int dialect) {
  if (dialect <= OB_DIALECT_SQLITE || dialect > OB_DIALECT_POSTGRESQL)
    return NULL;
  return atomic_load(&registered[dialect]);
}

__attribute__((format(printf, 4, 5))) static int refuse(
    char* errbuf, size_t errlen, int code, const char* fmt, ...) {
  va_list ap;
  if (errbuf != NULL && errlen > 0) {
    va_start(ap, fmt);
    vsnprintf(errbuf, errlen, fmt, ap);
    va_end(ap);
  }
  return code;
}

int ob_dialect_register(ob_dialect_entry_fn entry, char* errbuf,
                        size_t errlen) {
  const ob_dialect_t* d;
  int dialect;
  if (entry == NULL)
    return refuse(errbuf, errlen, OB_EINVAL,
                  "ob_dialect_register: no entry point given");
  d = entry(&ob__dialect_host);
  if (d == NULL)
    return refuse(errbuf, errlen, OB_ENOTSUP,
                  "the dialect refused this library (oncebox %s): it "
                  "serves another version of oncebox; install the one of "
                  "the same version",
                  OB_VERSION_STRING);
  if (d->abi != OB__DIALECT_ABI || d->version == NULL ||
      strcmp(d->version, OB_VERSION_STRING) != 0 ||
      d->db_size != sizeof(ob__db_t) || d->ops == NULL)
    return refuse(errbuf, errlen, OB_ENOTSUP,
                  "the dialect was built for oncebox %s, this is oncebox %s: "
                  "install the one of the same version",
                  d->version ? d->version : "(unknown)", OB_VERSION_STRING);
  dialect = d->ops->dialect;
  if (dialect <= OB_DIALECT_SQLITE || dialect > OB_DIALECT_POSTGRESQL)
    return refuse(errbuf, errlen, OB_ENOTSUP,
                  "the dialect '%s' is not one this library knows",
                  d->ops->backend ? d->ops->backend : "?");
  atomic_store(&registered[dialect], d->ops);
  return 0;
}

int ob__dialect_load(int dialect, const ob__store_ops_t** out, char* why,
                     size_t n) {
  ob_dialect_entry_fn entry;
  char cause[512];
  int rc;
  *out = NULL;
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
    if (known[i].dialect != dialect) continue;
    rc = ob__plugin_entry(known[i].name, &entry, cause, sizeof cause);
    if (rc == 0) rc = ob_dialect_register(entry, cause, sizeof cause);
    if (rc == 0) {
      *out = ob__dialect_find(dialect);
      return 0;
    }
    if (why == NULL || n == 0) return rc;
    if (rc == OB_ENOTSUP && entry == NULL)
      snprintf(why, n,
               "the %s dialect is not installed (%s): install the package "
               "%s, or link %s",
               known[i].name, cause, known[i].package, known[i].register_fn);
    else
      snprintf(why, n, "the %s dialect cannot be used: %s", known[i].name,
               cause);
    return rc;
  }
  if (why != NULL && n > 0) snprintf(why, n, "no such dialect");
  return OB_EINVAL;
}
