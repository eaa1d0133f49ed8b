/* SPDX-License-Identifier: Apache-2.0 */
/* The modules' hooks: fixed-size tables, allocated on the first one added
** (an engine without modules carries one NULL pointer), and the schema a
** module applies after ob_open. */
#include "core/engine/modules.h"

#include <stdlib.h>
#include <string.h>

#include "core/engine/engine_int.h"

typedef struct ob__hook_s {
  const char* name;
  void* fn;  /* ob_check_fn or ob_stats_fn: the table says which */
  void* arg;
} ob__hook_t;

typedef struct ob__hooks_s {
  ob__hook_t h[OB_MAX_HOOKS];
  size_t n;
} ob__hooks_t;

struct ob__modules_s {
  ob__hooks_t checks;
  ob__hooks_t stats;
  /* ob_mark_priority_event's, copied; NULL-terminated */
  char* priority[OB_MAX_HOOKS + 1];
  size_t npriority;
};

static int modules_of(ob_engine_t* e) {
  if (e->modules == NULL && (e->modules = calloc(1, sizeof *e->modules)) ==
                                NULL)
    return ob__db_seterr(&e->db, OB_ENOMEM, "out of memory");
  return 0;
}

static int add_hook(ob_engine_t* e, int stats, const char* name, void* fn,
                    void* arg) {
  ob__hooks_t* t;
  if (e == NULL || name == NULL || fn == NULL) return OB_EINVAL;
  if (modules_of(e) < 0) return OB_ENOMEM;
  t = stats ? &e->modules->stats : &e->modules->checks;
  for (size_t i = 0; i < t->n; i++)
    if (strcmp(t->h[i].name, name) == 0) return OB_EEXIST;
  if (t->n == OB_MAX_HOOKS)
    return ob__db_seterr(&e->db, OB_ENOMEM,
                         "too many %s hooks (%d) adding %s",
                         stats ? "statistics" : "check", OB_MAX_HOOKS, name);
  t->h[t->n].name = name;
  t->h[t->n].fn = fn;
  t->h[t->n].arg = arg;
  t->n++;
  return 0;
}

int ob_add_check(ob_engine_t* e, const char* name, ob_check_fn fn,
                 void* arg) {
  return add_hook(e, 0, name, (void*)fn, arg);
}

int ob_add_stats(ob_engine_t* e, const char* name, ob_stats_fn fn,
                 void* arg) {
  return add_hook(e, 1, name, (void*)fn, arg);
}

int ob__engine_run_checks(ob_engine_t* e, ob_violation_cb cb, void* arg) {
  ob_tx_t tx;
  int total = 0;
  if (e->modules == NULL) return 0;
  /* A read-only tx over the transaction ob_check already holds. */
  ob__tx_init_embedder(&tx, e, OB__TX_READ);
  e->db.user_read_only = 1;
  for (size_t i = 0; i < e->modules->checks.n; i++) {
    ob__hook_t* h = &e->modules->checks.h[i];
    int n = ((ob_check_fn)h->fn)(&tx, cb, arg, h->arg);
    if (n >= 0 && tx.fatal < 0) n = tx.fatal;
    if (n < 0) {
      total = n;
      break;
    }
    total += n;
  }
  e->db.user_read_only = 0;
  return total;
}

int ob_module_figures(ob_tx_t* tx, ob_figure_t* out, size_t cap) {
  ob_engine_t* e;
  size_t have = 0;
  if (tx == NULL || tx->e == NULL || out == NULL) return OB_EINVAL;
  e = tx->e;
  if (tx->kind != OB__TX_READ)
    return ob__db_seterr(&e->db, OB_ESTATE,
                         "ob_module_figures needs an ob_read's transaction");
  if (e->modules == NULL) return 0;
  for (size_t i = 0; i < e->modules->stats.n; i++) {
    ob__hook_t* h = &e->modules->stats.h[i];
    int n = ((ob_stats_fn)h->fn)(tx, out + have, cap - have, h->arg);
    if (n < 0) return n;
    have += (size_t)n < cap - have ? (size_t)n : cap - have;
  }
  return (int)have;
}

typedef struct report_s {
  ob_violation_cb cb;
  void* arg;
  int n;
} report_t;

static int report_row(void* arg, const ob_value_t* cols, size_t ncols) {
  report_t* r = arg;
  char line[1024];
  size_t n = 0;
  if (ncols > 0 && cols[0].type == OB_TYPE_TEXT)
    n = cols[0].n < sizeof line - 1 ? cols[0].n : sizeof line - 1;
  if (n > 0) memcpy(line, cols[0].p, n);
  line[n] = '\0';
  if (r->cb != NULL) r->cb(r->arg, n > 0 ? line : "(violation)");
  r->n++;
  return 0;
}

int ob_tx_check_sql(ob_tx_t* tx, const char* const* sqls, size_t n,
                    ob_violation_cb report, void* report_arg) {
  report_t r = {report, report_arg, 0};
  if (tx == NULL || (sqls == NULL && n > 0)) return OB_EINVAL;
  /* The checker is checked too: a statement that fails is an error, never
  ** silently "ok". */
  for (size_t i = 0; i < n; i++) {
    int rc = ob_tx_exec(tx, sqls[i], NULL, 0, report_row, &r);
    if (rc < 0) return rc;
  }
  return r.n;
}

static int first_int(void* arg, const ob_value_t* cols, size_t ncols) {
  if (ncols > 0 && cols[0].type == OB_TYPE_INT) *(int64_t*)arg = cols[0].i;
  return 1;
}

int ob_tx_has_table(ob_tx_t* tx, const char* name) {
  int64_t have = 0;
  int rc;
  if (tx == NULL || tx->e == NULL || name == NULL) return OB_EINVAL;
  {
    ob_value_t v[1] = {OB_VTEXT(name)};
    rc = ob_tx_exec(tx,
                    ob__db_is_postgresql(&tx->e->db)
                        ? "SELECT count(*) FROM pg_tables WHERE schemaname ="
                          " current_schema() AND tablename = ?"
                        : "SELECT count(*) FROM sqlite_schema WHERE"
                          " type = 'table' AND name = ?",
                    v, 1, first_int, &have);
  }
  return rc < 0 ? rc : have > 0;
}

int ob_mark_priority_event(ob_engine_t* e, const char* event_type) {
  struct ob__modules_s* m;
  if (e == NULL || event_type == NULL || event_type[0] == '\0' ||
      strlen(event_type) > 128)
    return OB_EINVAL;
  if (modules_of(e) < 0) return OB_ENOMEM;
  m = e->modules;
  for (size_t i = 0; i < m->npriority; i++)
    if (strcmp(m->priority[i], event_type) == 0) return 0;
  if (m->npriority == OB_MAX_HOOKS)
    return ob__db_seterr(&e->db, OB_ENOMEM, "more than %d priority event "
                         "types", OB_MAX_HOOKS);
  if ((m->priority[m->npriority] = strdup(event_type)) == NULL)
    return ob__db_seterr(&e->db, OB_ENOMEM, "out of memory");
  m->npriority++;
  return 0;
}

size_t ob__engine_priority_events(const ob_engine_t* e,
                                  const char* const** types) {
  static const char* const none[1] = {NULL};
  if (e->modules == NULL) {
    *types = none;
    return 0;
  }
  *types = (const char* const*)e->modules->priority;
  return e->modules->npriority;
}

void ob__engine_modules_free(ob_engine_t* e) {
  if (e->modules != NULL)
    for (size_t i = 0; i < e->modules->npriority; i++)
      free(e->modules->priority[i]);
  free(e->modules);
  e->modules = NULL;
}

int ob_dialect(const ob_engine_t* e) {
  if (e == NULL) return 0;
  return ob__db_is_postgresql(&e->db) ? OB_DIALECT_POSTGRESQL
                                      : OB_DIALECT_SQLITE;
}

int ob_migrate(ob_engine_t* e, const ob_migration_t* steps, size_t nsteps) {
  ob__schema_ext_t ext;
  if (e == NULL || (steps == NULL && nsteps > 0)) return OB_EINVAL;
  if (e->db.in_tx)
    return ob__db_seterr(&e->db, OB_ESTATE,
                         "ob_migrate inside a handler or a transaction");
  if (nsteps == 0) return 0;
  memset(&ext, 0, sizeof ext);
  ext.steps = steps;
  ext.n = nsteps;
  ext.now_ms = ob__now(e);
  return ob__schema_migrate(&e->db, &ext);
}
