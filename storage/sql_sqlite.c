/* SPDX-License-Identifier: Apache-2.0 */
/* sql.h over SQLite: the statement cache of db->stmt, binding at the first
** step, columns, and SQLite's result codes (ob__db_fail, db.c). */
#include <sqlite3.h>

#include "core/util/assert.h"
#include "storage/sql.h"
#include "storage/sqlite/sqlite_store.h"

/* The cached statement for id, prepared from sql on first use. NULL on
** error: errmsg set, and the code in db->last_err. */
static sqlite3_stmt* cached(ob__db_t* db, int id, const char* sql) {
  int rc;
  OB__ASSERT(db->db != NULL);  /* only an open connection caches statements */
  if (db->stmt[id] != NULL) return db->stmt[id];
  rc = sqlite3_prepare_v3(db->db, sql, -1, SQLITE_PREPARE_PERSISTENT,
                          &db->stmt[id], NULL);
  if (rc != SQLITE_OK) {
    ob__db_fail(db, rc, "prepare");
    db->stmt[id] = NULL;
  }
  return db->stmt[id];
}

static int bind_all(ob__sql_t* s) {
  int rc = SQLITE_OK, max = sqlite3_bind_parameter_count(s->st);
  for (int i = 0; i < s->nargs && i < max && rc == SQLITE_OK; i++) {
    const ob__sql_arg_t* a = &s->arg[i];
    if (a->type == OB__SQL_INT)
      rc = sqlite3_bind_int64(s->st, i + 1, a->i);
    else if (a->type == OB__SQL_TEXT && a->p != NULL)
      rc = sqlite3_bind_text(s->st, i + 1, a->p, (int)a->n, SQLITE_STATIC);
    else if (a->type == OB__SQL_BLOB && a->p != NULL)
      rc = sqlite3_bind_blob64(s->st, i + 1, a->p, a->n, SQLITE_STATIC);
  }
  return rc;
}

int ob__sql_sqlite_step(ob__sql_t* s) {
  int rc;
  if (s->st == NULL) {
    if (s->id == OB__SQL_ONCE) {
      rc = sqlite3_prepare_v2(s->db->db, s->sql, -1, &s->st, NULL);
      if (rc != SQLITE_OK) return ob__db_fail(s->db, rc, s->what);
    } else if ((s->st = cached(s->db, s->id, s->sql)) == NULL) {
      return s->db->last_err;
    }
    if ((rc = bind_all(s)) != SQLITE_OK) return ob__db_fail(s->db, rc, s->what);
  }
  rc = sqlite3_step(s->st);
  if (rc == SQLITE_ROW) return 1;
  if (rc == SQLITE_DONE) return 0;
  return ob__db_fail(s->db, rc, s->what);
}

/* A query's rows; a write's changes (sqlite3_changes keeps the last
** write's count through any SELECT). */
int ob__sql_sqlite_changes(ob__sql_t* s, int rows) {
  return sqlite3_stmt_readonly(s->st) ? rows : sqlite3_changes(s->db->db);
}

int64_t ob__sql_sqlite_col_int(ob__sql_t* s, int i) {
  return sqlite3_column_int64(s->st, i);
}

const void* ob__sql_sqlite_col(ob__sql_t* s, int i, size_t* n, int blob) {
  const void* v;
  if (blob) {
    int bytes;
    v = sqlite3_column_blob(s->st, i);
    bytes = sqlite3_column_bytes(s->st, i);
    if (n) *n = (size_t)bytes;
    /* An empty blob reads NULL: "" keeps NULL for SQL NULL only. */
    if (v == NULL && bytes == 0 && sqlite3_column_type(s->st, i) != SQLITE_NULL)
      v = "";
    return v;
  }
  v = sqlite3_column_text(s->st, i);
  if (n) *n = (size_t)sqlite3_column_bytes(s->st, i);
  return v;
}

int ob__sql_sqlite_col_null(ob__sql_t* s, int i) {
  return sqlite3_column_type(s->st, i) == SQLITE_NULL;
}

void ob__sql_sqlite_finish(ob__sql_t* s) {
  if (s->st == NULL) return;
  if (s->id == OB__SQL_ONCE) {
    sqlite3_finalize(s->st);
  } else {
    sqlite3_reset(s->st);
    sqlite3_clear_bindings(s->st);
  }
  s->st = NULL;
}
