/* SPDX-License-Identifier: Apache-2.0 */
/* ob_postgresql_register: the static archive's one call (only in
** liboncebox-postgresql.a; the plugin is found by ob_open itself). */
#include "oncebox_postgresql.h"

const ob_dialect_t* oncebox_dialect_entry(const ob_dialect_host_t* host);

int ob_postgresql_register(char* errbuf, size_t errlen) {
  return ob_dialect_register(oncebox_dialect_entry, errbuf, errlen);
}
