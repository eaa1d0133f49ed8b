/* SPDX-License-Identifier: Apache-2.0 */
/* The embedder's schema (ob_options_t.migrations, ob_migrate) on both
** dialects: the list's shape, the version schema_migration records per
** name, the refusal of a database holding a newer version than the
** program gives, and each missing step run and recorded in the
** migration's transaction (a row exists exactly when the step's effects
** do). How a step's SQL runs is the dialect's migration_exec: SQLite's
** under the authorizer that keeps oncebox's own tables as they are. oncebox's own migrations are each dialect's
** schema file. */
#include <string.h>

#include "storage/sql.h"

static int valid_schema_name(const char* s) {
  size_t n;
  if (s == NULL) return 0;
  n = strlen(s);
  if (n == 0 || n > 64) return 0;
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] > 0x7e) return 0;
  return 1;
}

int ob__schema_ext_check(ob__db_t* db, const ob__schema_ext_t* ext) {
  if (ext->n > 0 && ext->steps == NULL)
    return ob__db_seterr(db, OB_EINVAL, "options: migrations is NULL");
  for (size_t i = 0; i < ext->n; i++) {
    const ob_migration_t* m = &ext->steps[i];
    int prev = 0;
    if (!valid_schema_name(m->name) || m->sql == NULL)
      return ob__db_seterr(db, OB_EINVAL,
                           "migration %zu: needs a name (1..64 printable "
                           "ASCII, no spaces) and sql", i);
    for (size_t j = 0; j < i; j++)
      if (strcmp(ext->steps[j].name, m->name) == 0)
        prev = ext->steps[j].version;
    if (m->version != prev + 1)
      return ob__db_seterr(db, OB_EINVAL,
                           "migration %s %d: versions of a schema must be "
                           "1, 2, ... in order (expected %d)", m->name,
                           m->version, prev + 1);
  }
  return 0;
}

/* The newest version of name given in ext. */
static int newest_given(const ob__schema_ext_t* ext, const char* name) {
  int v = 0;
  for (size_t i = 0; i < ext->n; i++)
    if (strcmp(ext->steps[i].name, name) == 0 && ext->steps[i].version > v)
      v = ext->steps[i].version;
  return v;
}

/* The version of name schema_migration records (0: none). */
static int recorded_version(ob__db_t* db, const char* name, int* out) {
  static const char sql[] =
      "SELECT coalesce(max(version), 0) FROM schema_migration"
      " WHERE name = ?1";
  ob__sql_t s;
  int64_t v = 0;
  int rc;
  ob__sql_prepare(db, &s, OB__SQL_ONCE, sql, "schema_migration");
  ob__sql_text(&s, 1, name);
  rc = ob__sql_int1(&s, &v);
  *out = (int)v;
  return rc == OB_ENOTFOUND ? 0 : rc;
}

int ob__schema_ext_missing(ob__db_t* db, const ob__schema_ext_t* ext,
                           int recorded, size_t* missing) {
  *missing = 0;
  for (size_t i = 0; i < ext->n; i++) {
    const ob_migration_t* m = &ext->steps[i];
    int have = 0, want, rc;
    if (m->version != 1) continue;  /* once per name */
    if (recorded && (rc = recorded_version(db, m->name, &have)) < 0)
      return rc;
    want = newest_given(ext, m->name);
    if (have > want)
      return ob__db_seterr(db, OB_EVERSION,
                           "embedder schema \"%s\" is at version %d in the "
                           "database, newer than the newest this program "
                           "gives (%d); upgrade the program", m->name, have,
                           want);
    *missing += (size_t)(want - have);
  }
  return 0;
}

int ob__schema_ext_apply(ob__db_t* db, const ob__schema_ext_t* ext) {
  static const char ins[] =
      "INSERT INTO schema_migration (name, version, applied_at)"
      " VALUES (?1, ?2, ?3)";
  for (size_t i = 0; i < ext->n; i++) {
    const ob_migration_t* m = &ext->steps[i];
    ob__sql_t s;
    int have, rc;
    if ((rc = recorded_version(db, m->name, &have)) < 0) return rc;
    if (m->version <= have) continue;
    rc = db->ops->migration_exec(db, m);
    if (rc < 0) return rc;
    ob__sql_prepare(db, &s, OB__SQL_ONCE, ins, "schema_migration");
    ob__sql_text(&s, 1, m->name);
    ob__sql_int(&s, 2, m->version);
    ob__sql_int(&s, 3, ext->now_ms);
    if ((rc = ob__sql_done(&s)) < 0) return rc;
  }
  return 0;
}
