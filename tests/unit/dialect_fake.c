/* SPDX-License-Identifier: Apache-2.0 */
/* A plugin that is not the library's match, for test_dialect.c: built as
** fake-other-version/postgresql.so (OB_FAKE_VERSION: claims another
** release, a table the library must refuse before calling anything in it)
** and fake-no-entry/postgresql.so (OB_FAKE_NO_ENTRY: no entry point). A
** stand-in: a real plugin of another release cannot be built here. */
#include "storage/dialect.h"

#if defined(OB_FAKE_NO_ENTRY)
__attribute__((visibility("default"))) int oncebox_something_else(void);
int oncebox_something_else(void) { return 0; }
#else
static const ob__store_ops_t ops = {.backend = "postgresql",
                                    .dialect = OB_DIALECT_POSTGRESQL};
static const ob_dialect_t fake = {.abi = OB__DIALECT_ABI,
                                  .version = OB_FAKE_VERSION,
                                  .db_size = sizeof(ob__db_t),
                                  .ops = &ops};

__attribute__((visibility("default"))) const ob_dialect_t*
oncebox_dialect_entry(const ob_dialect_host_t* host);

const ob_dialect_t* oncebox_dialect_entry(const ob_dialect_host_t* host) {
  (void)host;
  return &fake;
}
#endif
