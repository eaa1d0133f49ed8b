/* SPDX-License-Identifier: Apache-2.0 */
/* SQL that handlers run through ob_tx_exec: prepared once per text, always
** with bound parameters, never allowed to touch the transaction itself. */
#include <ctype.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "storage/sqlite/sqlite_store.h"

/* Handlers must not end, nest or escape the engine's transaction, nor reach
** other files: the one-transaction guarantee depends on it. */
static int user_authorizer(void* arg, int action, const char* a,
                           const char* b, const char* c, const char* d) {
  (void)arg; (void)a; (void)b; (void)c; (void)d;
  switch (action) {
    case SQLITE_TRANSACTION:
    case SQLITE_SAVEPOINT:
    case SQLITE_ATTACH:
    case SQLITE_DETACH:
    case SQLITE_PRAGMA:
      return SQLITE_DENY;
    default:
      return SQLITE_OK;
  }
}

/* The cached statement of sql, prepared on first use; NULL with *code set
** (and errmsg): OB_EINVAL for SQL a handler may not run or that does not
** prepare (a syntax error, an unknown table), else the storage's own code
** (OB_ENOMEM, OB_EIO, ...), which the transaction must not swallow. */
static sqlite3_stmt* lookup_or_prepare(ob__db_t* db, const char* sql,
                                       int* code) {
  int victim = 0, rc;
  const char* tail = NULL;
  sqlite3_stmt* st = NULL;

  *code = 0;
  db->use_clock++;
  for (int i = 0; i < OB__USER_STMT_CACHE; i++) {
    if (db->user[i].sql != NULL && strcmp(db->user[i].sql, sql) == 0) {
      db->user[i].last_used = db->use_clock;
      return db->user[i].st;
    }
    if (db->user[i].last_used < db->user[victim].last_used) victim = i;
  }

  sqlite3_set_authorizer(db->db, user_authorizer, NULL);
  rc = sqlite3_prepare_v3(db->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st,
                          &tail);
  sqlite3_set_authorizer(db->db, NULL, NULL);
  if (rc != SQLITE_OK) {
    if ((rc & 0xff) == SQLITE_AUTH)
      *code = ob__db_seterr(db, OB_EINVAL,
                            "handler SQL may not control transactions, "
                            "attach databases or run pragmas: %s", sql);
    else if ((*code = ob__db_fail(db, rc, "handler SQL")) == OB_EDB)
      *code = OB_EINVAL;
    return NULL;
  }
  if (st == NULL) {
    *code = ob__db_seterr(db, OB_EINVAL, "handler SQL is empty");
    return NULL;
  }
  while (tail && *tail && isspace((unsigned char)*tail)) tail++;
  if (tail && *tail) {
    sqlite3_finalize(st);
    *code = ob__db_seterr(db, OB_EINVAL,
                          "handler SQL must be one statement; extra text: "
                          "%.40s", tail);
    return NULL;
  }
  char* copy = strdup(sql);
  if (copy == NULL) {
    sqlite3_finalize(st);
    *code = ob__db_seterr(db, OB_ENOMEM, "out of memory caching handler SQL");
    return NULL;
  }
  sqlite3_finalize(db->user[victim].st);
  free(db->user[victim].sql);
  db->user[victim].sql = copy;
  db->user[victim].st = st;
  db->user[victim].last_used = db->use_clock;
  return st;
}

static int bind_all(ob__db_t* db, sqlite3_stmt* st, const ob_value_t* params,
                    size_t n) {
  int want = sqlite3_bind_parameter_count(st);
  if ((size_t)want != n)
    return ob__db_seterr(db, OB_EINVAL,
                         "handler SQL has %d parameters, %zu given", want, n);
  for (size_t i = 0; i < n; i++) {
    int idx = (int)i + 1, rc;
    const ob_value_t* v = &params[i];
    switch (v->type) {
      case OB_TYPE_NULL: rc = sqlite3_bind_null(st, idx); break;
      case OB_TYPE_INT: rc = sqlite3_bind_int64(st, idx, v->i); break;
      case OB_TYPE_REAL: rc = sqlite3_bind_double(st, idx, v->d); break;
      case OB_TYPE_TEXT:
        rc = sqlite3_bind_text64(st, idx, v->p ? v->p : "", v->n,
                                 SQLITE_STATIC, SQLITE_UTF8);
        break;
      case OB_TYPE_BLOB:
        rc = sqlite3_bind_blob64(st, idx, v->p ? v->p : "", v->n,
                                 SQLITE_STATIC);
        break;
      default:
        return ob__db_seterr(db, OB_EINVAL, "parameter %d has unknown type %d",
                             idx, (int)v->type);
    }
    if (rc != SQLITE_OK) return ob__db_fail(db, rc, "bind");
  }
  return 0;
}

#define MAX_COLS 64

int ob__sqlite_user_exec(ob__db_t* db, const char* sql, const ob_value_t* params,
                  size_t nparams, ob_row_cb row, void* arg) {
  ob_value_t cols[MAX_COLS];
  sqlite3_stmt* st;
  int rc, ncols, changes;

  if (sql == NULL || (nparams > 0 && params == NULL))
    return ob__db_seterr(db, OB_EINVAL, "handler SQL or parameters missing");
  st = lookup_or_prepare(db, sql, &rc);
  if (st == NULL) return rc;
  if (db->user_read_only && !sqlite3_stmt_readonly(st))
    return ob__db_seterr(db, OB_EINVAL,
                         "a read transaction (ob_read) may not write: %s",
                         sql);
  rc = bind_all(db, st, params, nparams);
  if (rc < 0) {
    sqlite3_clear_bindings(st);
    return rc;
  }
  ncols = sqlite3_column_count(st);
  if (ncols > MAX_COLS) ncols = MAX_COLS;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    if (row == NULL) continue;
    for (int i = 0; i < ncols; i++) {
      ob_value_t* c = &cols[i];
      memset(c, 0, sizeof *c);
      switch (sqlite3_column_type(st, i)) {
        case SQLITE_INTEGER:
          c->type = OB_TYPE_INT;
          c->i = sqlite3_column_int64(st, i);
          break;
        case SQLITE_FLOAT:
          c->type = OB_TYPE_REAL;
          c->d = sqlite3_column_double(st, i);
          break;
        case SQLITE_TEXT:
          c->type = OB_TYPE_TEXT;
          c->p = sqlite3_column_text(st, i);
          c->n = (size_t)sqlite3_column_bytes(st, i);
          break;
        case SQLITE_BLOB:
          c->type = OB_TYPE_BLOB;
          c->p = sqlite3_column_blob(st, i);
          c->n = (size_t)sqlite3_column_bytes(st, i);
          break;
        default:
          c->type = OB_TYPE_NULL;
      }
    }
    if (row(arg, cols, (size_t)ncols) != 0) {
      rc = SQLITE_DONE;
      break;
    }
  }
  changes = sqlite3_changes(db->db);
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  if (rc != SQLITE_DONE) return ob__db_fail(db, rc, "handler SQL");
  return sqlite3_stmt_readonly(st) ? 0 : changes;
}
