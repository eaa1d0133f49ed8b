/* SPDX-License-Identifier: Apache-2.0 */
/* sql.h over libpq: ?N rewritten to $N and the parameters typed by their
** binds at the first prepare (once per connection, keyed by the text's
** address, in pg_db.c's table), integers sent as text and bytea in binary,
** the whole result fetched at the first step, SQLSTATEs mapped by
** ob__pg_fail. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/postgresql/pg_int.h"
#include "storage/sql.h"

/* The type OIDs of pg_type.h (stable since PostgreSQL 7). */
#define OID_BYTEA 17
#define OID_INT8 20
#define OID_TEXT 25

static const char* prepared_name(ob__sql_t* s) {
  struct ob__pg_s* pg = s->db->pg;
  ob__pg_prepared_t* slot;
  Oid types[OB__SQL_MAX_PARAMS];
  char why[160];
  size_t len;
  char* text;
  PGresult* res;
  int n, rc;
  for (int i = 0; i < pg->nprepared; i++)
    if (pg->prepared[i].sql == s->sql) return pg->prepared[i].name;
  if (pg->nprepared >= OB__PG_MAX_PREPARED) {
    ob__db_seterr(s->db, OB_ENOMEM, "%s: too many prepared statements",
                  s->what);
    return NULL;
  }
  len = strlen(s->sql) + 16;
  if ((text = malloc(len)) == NULL) {
    ob__db_seterr(s->db, OB_ENOMEM, "%s: out of memory", s->what);
    return NULL;
  }
  rc = ob__pg_rewrite_placeholders(s->sql, text, len, &n, why, sizeof why);
  if (rc < 0) {
    free(text);
    s->db->last_err = rc;
    ob__db_seterr(s->db, rc, "%s: %s", s->what, why);
    return NULL;
  }
  for (int i = 0; i < s->nargs; i++)
    types[i] = s->arg[i].type == OB__SQL_INT    ? OID_INT8
               : s->arg[i].type == OB__SQL_TEXT ? OID_TEXT
               : s->arg[i].type == OB__SQL_BLOB ? OID_BYTEA
                                                : 0;
  slot = &pg->prepared[pg->nprepared];
  snprintf(slot->name, sizeof slot->name, "ob%lu", pg->next_name++);
  res = PQprepare(pg->conn, slot->name, text, s->nargs, types);
  free(text);
  if (res == NULL || PQresultStatus(res) != PGRES_COMMAND_OK) {
    ob__pg_fail(s->db, res, s->what);
    PQclear(res);
    return NULL;
  }
  PQclear(res);
  slot->sql = s->sql;
  pg->nprepared++;
  return slot->name;
}

static int run(ob__sql_t* s) {
  const char* v[OB__SQL_MAX_PARAMS];
  int len[OB__SQL_MAX_PARAMS], fmt[OB__SQL_MAX_PARAMS];
  char num[OB__SQL_MAX_PARAMS][24];
  const char* name;
  ExecStatusType st;
  int rc = ob__pg_conn_ready(s->db, s->what);
  if (rc < 0) return rc;
  if ((name = prepared_name(s)) == NULL)
    return s->db->last_err ? s->db->last_err : OB_EDB;
  for (int i = 0; i < s->nargs; i++) {
    const ob__sql_arg_t* a = &s->arg[i];
    len[i] = (int)a->n;
    fmt[i] = a->type == OB__SQL_BLOB;
    v[i] = a->p;
    if (a->type == OB__SQL_INT) {
      snprintf(num[i], sizeof num[i], "%lld", (long long)a->i);
      v[i] = num[i];
    } else if (a->type == OB__SQL_NULL) {
      v[i] = NULL;
    }
  }
  s->res = PQexecPrepared(s->db->pg->conn, name, s->nargs, v, len, fmt, 0);
  st = s->res ? PQresultStatus(s->res) : PGRES_FATAL_ERROR;
  if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
    rc = ob__pg_fail(s->db, s->res, s->what);
    PQclear(s->res);
    s->res = NULL;
    return rc;
  }
  s->nrows = PQntuples(s->res);
  return 0;
}

static void drop_held(ob__sql_t* s) {
  for (int i = 0; i < s->nheld; i++) PQfreemem(s->held[i]);
  s->nheld = 0;
}

int ob__sql_pg_step(ob__sql_t* s) {
  int rc;
  drop_held(s);
  if (s->res == NULL && (rc = run(s)) < 0) return rc;
  if (s->row < s->nrows) s->row++;
  return s->row < s->nrows;
}

int ob__sql_pg_changes(ob__sql_t* s, int rows) {
  const char* n = s->res ? PQcmdTuples(s->res) : "";
  return n[0] ? atoi(n) : rows;
}

int64_t ob__sql_pg_col_int(ob__sql_t* s, int i) {
  if (PQgetisnull(s->res, s->row, i)) return 0;
  return strtoll(PQgetvalue(s->res, s->row, i), NULL, 10);
}

const void* ob__sql_pg_col(ob__sql_t* s, int i, size_t* n, int blob) {
  unsigned char* raw;
  size_t len = 0;
  if (n) *n = 0;
  if (PQgetisnull(s->res, s->row, i)) return NULL;
  if (!blob) {
    if (n) *n = (size_t)PQgetlength(s->res, s->row, i);
    return PQgetvalue(s->res, s->row, i);
  }
  if (s->nheld == (int)(sizeof s->held / sizeof s->held[0])) return NULL;
  raw = PQunescapeBytea((const unsigned char*)PQgetvalue(s->res, s->row, i),
                        &len);
  if (raw == NULL) return NULL;
  s->held[s->nheld++] = raw;
  if (n) *n = len;
  return raw;
}

int ob__sql_pg_col_null(ob__sql_t* s, int i) {
  return PQgetisnull(s->res, s->row, i);
}

void ob__sql_pg_finish(ob__sql_t* s) {
  drop_held(s);
  PQclear(s->res);
  s->res = NULL;
}
