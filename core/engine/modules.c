/* SPDX-License-Identifier: Apache-2.0 */
/* The registry of module checks: a fixed-size table, allocated on the first
** registration (an engine without modules carries one NULL pointer). */
#include "core/engine/modules.h"

#include <stdlib.h>
#include <string.h>

#include "core/engine/engine_int.h"

typedef struct ob__check_s {
  const char* name;
  ob__check_fn fn;
} ob__check_t;

struct ob__modules_s {
  ob__check_t checks[OB__MAX_CHECKS];
  size_t nchecks;
};

int ob__engine_add_check(ob_engine_t* e, const char* name, ob__check_fn fn) {
  struct ob__modules_s* m = e->modules;
  if (m == NULL) {
    m = calloc(1, sizeof *m);
    if (m == NULL)
      return ob__db_seterr(&e->db, OB_ENOMEM,
                           "out of memory registering the %s checks", name);
    e->modules = m;
  }
  for (size_t i = 0; i < m->nchecks; i++)
    if (strcmp(m->checks[i].name, name) == 0) return OB_EEXIST;
  if (m->nchecks == OB__MAX_CHECKS)
    return ob__db_seterr(&e->db, OB_ENOMEM,
                         "too many module checks (%d) registering %s",
                         OB__MAX_CHECKS, name);
  m->checks[m->nchecks].name = name;
  m->checks[m->nchecks].fn = fn;
  m->nchecks++;
  return 0;
}

int ob__engine_run_checks(ob_engine_t* e,
                          void (*cb)(void* arg, const char* violation),
                          void* arg) {
  int total = 0;
  if (e->modules == NULL) return 0;
  for (size_t i = 0; i < e->modules->nchecks; i++) {
    int n = e->modules->checks[i].fn(e, cb, arg);
    if (n < 0) return n;
    total += n;
  }
  return total;
}

void ob__engine_modules_free(ob_engine_t* e) {
  free(e->modules);
  e->modules = NULL;
}
