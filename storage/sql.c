/* SPDX-License-Identifier: Apache-2.0 */
/* The statement interface of sql.h: binding, and the choice of dialect. */
#include <stdlib.h>
#include <string.h>

#include "core/util/assert.h"
#include "storage/sql.h"

/* The open database's dialect: its table holds the statement layer. */
#define D(s) ((s)->db->ops)

void ob__sql_prepare(ob__db_t* db, ob__sql_t* s, int id, const char* sql,
                     const char* what) {
  OB__ASSERT(id == OB__SQL_ONCE || (id >= 0 && id < OB__STMT_COUNT));
  s->db = db;
  s->sql = sql;
  s->what = what;
  s->id = id;
  s->nargs = 0;
  s->st = NULL;
  s->res = NULL;
  s->row = -1;
  s->nrows = 0;
  s->nheld = 0;
}

void ob__sql_prepare2(ob__db_t* db, ob__sql_t* s, int id,
                      const ob__sql_text_t* t, const char* what) {
  ob__sql_prepare(db, s, id, ob__sql_is_pg(db) ? t->pg : t->sqlite, what);
}

static ob__sql_arg_t* arg(ob__sql_t* s, int i, int type) {
  OB__ASSERT(i >= 1 && i <= OB__SQL_MAX_PARAMS);
  /* A gap (?2 bound, ?1 not) binds NULL. */
  while (s->nargs < i) {
    ob__sql_arg_t* a = &s->arg[s->nargs++];
    a->type = OB__SQL_NULL;
    a->i = 0;
    a->p = NULL;
    a->n = 0;
  }
  s->arg[i - 1].type = type;
  return &s->arg[i - 1];
}

void ob__sql_int(ob__sql_t* s, int i, int64_t v) {
  arg(s, i, OB__SQL_INT)->i = v;
}

void ob__sql_text(ob__sql_t* s, int i, const char* v) {
  ob__sql_textn(s, i, v, v ? strlen(v) : 0);
}

void ob__sql_textn(ob__sql_t* s, int i, const char* v, size_t n) {
  ob__sql_arg_t* a = arg(s, i, OB__SQL_TEXT);
  a->p = v;
  a->n = n;
}

void ob__sql_blob(ob__sql_t* s, int i, const void* v, size_t n) {
  ob__sql_arg_t* a = arg(s, i, OB__SQL_BLOB);
  a->p = v;
  a->n = v ? n : 0;
}

void ob__sql_null(ob__sql_t* s, int i) {
  ob__sql_arg_t* a = arg(s, i, OB__SQL_NULL);
  a->p = NULL;
  a->n = 0;
}

int ob__sql_step(ob__sql_t* s) {
  /* The operations written once are called directly, not through a
  ** backend's table whose absence would say so: a closed db is refused
  ** here, as store.c's dispatchers refuse it. */
  if (s->db->ops == NULL) {
    s->db->last_err = OB_ESTATE;
    return ob__db_seterr(s->db, OB_ESTATE, "%s: the database is not open",
                         s->what ? s->what : "storage");
  }
  return D(s)->sql_step(s);
}

int64_t ob__sql_col_int(ob__sql_t* s, int i) {
  return D(s)->sql_col_int(s, i);
}

const char* ob__sql_col_text(ob__sql_t* s, int i) {
  return D(s)->sql_col(s, i, NULL, 0);
}

const char* ob__sql_col_textn(ob__sql_t* s, int i, size_t* n) {
  return D(s)->sql_col(s, i, n, 0);
}

const void* ob__sql_col_blob(ob__sql_t* s, int i, size_t* n) {
  return D(s)->sql_col(s, i, n, 1);
}

int ob__sql_col_null(ob__sql_t* s, int i) {
  return D(s)->sql_col_null(s, i);
}

int ob__sql_col_dup(ob__sql_t* s, int i, int blob, char** out, size_t* len) {
  size_t n = 0;
  const void* p =
      blob ? ob__sql_col_blob(s, i, &n) : ob__sql_col_textn(s, i, &n);
  *out = NULL;
  if (len) *len = 0;
  if (p == NULL) return !ob__sql_col_null(s, i);
  if ((*out = malloc(n + 1)) == NULL) return 1;
  memcpy(*out, p, n);
  (*out)[n] = '\0';
  if (len) *len = n;
  return 0;
}

void ob__sql_finish(ob__sql_t* s) {
  /* Safe after any outcome, also a step refused on a closed database. */
  if (D(s) != NULL) D(s)->sql_finish(s);
}

int ob__sql_done(ob__sql_t* s) {
  int rc, rows = 0;
  while ((rc = ob__sql_step(s)) > 0) rows++;
  if (rc == 0)
    rc = D(s)->sql_changes(s, rows);
  ob__sql_finish(s);
  return rc;
}

int ob__sql_int1(ob__sql_t* s, int64_t* out) {
  int rc = ob__sql_step(s);
  if (rc > 0 && !ob__sql_col_null(s, 0))
    *out = ob__sql_col_int(s, 0);
  else if (rc >= 0)
    rc = OB_ENOTFOUND;
  ob__sql_finish(s);
  return rc > 0 ? 0 : rc;
}

int ob__sql_run_own_tx(ob__db_t* db, const char* const* stmts, int n,
                       const int64_t* args, int nargs, int relaxed,
                       const char* what) {
  int rc = relaxed ? ob__db_begin_relaxed(db) : ob__db_begin(db);
  int changed = 0;
  if (rc < 0) return rc;
  for (int i = 0; i < n; i++) {
    ob__sql_t s;
    ob__sql_prepare(db, &s, OB__SQL_ONCE, stmts[i], what);
    for (int a = 0; a < nargs; a++) ob__sql_int(&s, a + 1, args[a]);
    if ((rc = ob__sql_done(&s)) < 0) {
      ob__db_rollback(db);
      return rc;
    }
    changed += rc;
  }
  rc = ob__db_commit(db);
  return rc < 0 ? rc : changed;
}

int ob__sql_run(ob__db_t* db, int id, const char* sql, const char* what) {
  ob__sql_t s;
  ob__sql_prepare(db, &s, id, sql, what);
  return ob__sql_done(&s);
}

int ob__sql_lock_key(ob__db_t* db, const char* key) {
  static const char sql[] =
      "SELECT pg_advisory_xact_lock(hashtextextended(?1, 0))";
  ob__sql_t s;
  int rc;
  if (!ob__sql_is_pg(db)) return 0;
  ob__sql_prepare(db, &s, OB__SQL_ONCE, sql, "lock");
  ob__sql_text(&s, 1, key);
  rc = ob__sql_done(&s);
  return rc < 0 ? rc : 0;
}

void ob__sql_message(ob__sql_t* s, const ob__queue_row_t* r) {
  ob__sql_text(s, 1, r->queue);
  ob__sql_text(s, 2, r->message_id);
  ob__sql_text(s, 3, r->type);
  ob__sql_text(s, 4, r->headers);
  /* An empty body is a zero-length value, never NULL. */
  ob__sql_blob(s, 5, r->body ? r->body : "", r->body_len);
}

int ob__sql_move(ob__db_t* db, const ob__sql_text_t* move,
                 const char* then_sqlite,
                 void (*bind)(ob__sql_t* s, const void* arg),
                 const void* arg, const char* what) {
  ob__sql_t s;
  int moved, rc;
  ob__sql_prepare2(db, &s, OB__SQL_ONCE, move, what);
  bind(&s, arg);
  moved = ob__sql_done(&s);
  if (moved <= 0 || then_sqlite == NULL || ob__sql_is_pg(db)) return moved;
  ob__sql_prepare(db, &s, OB__SQL_ONCE, then_sqlite, what);
  bind(&s, arg);
  rc = ob__sql_done(&s);
  return rc < 0 ? rc : moved;
}

int ob__sql_retention_days(ob__db_t* db, int outbox, int64_t cutoff,
                           int64_t* deleted) {
  if (db->ops != NULL && db->ops->retention_days != NULL)
    return db->ops->retention_days(db, outbox, cutoff, deleted);
  return 0;
}
