/* SPDX-License-Identifier: Apache-2.0 */
/* Handler SQL on PostgreSQL (ob_tx_exec, ob_read, ob_write): the same
** contract as on SQLite (storage/sqlite/user_sql.c). ? placeholders are
** rewritten to $n for libpq; each text is prepared once per connection
** (an LRU of OB__USER_STMT_CACHE); parameters are always bound.
**
** Two differences PostgreSQL forces. A failed statement aborts the whole
** transaction there, while the contract (and SQLite) undoes that statement
** only: each statement runs inside SAVEPOINT ob_stmt, two more round trips
** per statement. And there is no authorizer: transaction control and
** session settings are refused by their first keyword, which is what a
** handler could use to end or weaken the engine's transaction. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "storage/postgresql/pg_int.h"

#define MAX_COLS 64
#define MAX_SQL 65536

static int set_err(char* err, size_t n, const char* what) {
  snprintf(err, n, "%s", what);
  return OB_EINVAL;
}

/* Copies bytes from in up to (not including) end into out at *o. */
static int put(char* out, size_t outsz, size_t* o, const char* s, size_t n) {
  if (*o + n >= outsz) return OB_ETOOBIG;
  memcpy(out + *o, s, n);
  *o += n;
  return 0;
}

int ob__pg_rewrite_placeholders(const char* in, char* out, size_t outsz,
                                int* nparams, char* err, size_t errsz) {
  size_t o = 0;
  const char* p = in;
  int seq = 0, numbered = 0, plain = 0, max = 0, rc;
  *nparams = 0;
  while (*p) {
    const char* start = p;
    if (*p == '\'' || *p == '"') {  /* '' and "" escape themselves */
      char q = *p++;
      for (;;) {
        if (*p == '\0')
          return set_err(err, errsz, "handler SQL has an unterminated "
                                     "quoted string or identifier");
        if (*p == q && p[1] == q) { p += 2; continue; }
        if (*p++ == q) break;
      }
    } else if (p[0] == '-' && p[1] == '-') {
      while (*p && *p != '\n') p++;
    } else if (p[0] == '/' && p[1] == '*') {
      int depth = 0;  /* PostgreSQL's block comments nest */
      do {
        if (*p == '\0')
          return set_err(err, errsz, "handler SQL has an unterminated "
                                     "comment");
        if (p[0] == '/' && p[1] == '*') { depth++; p += 2; }
        else if (p[0] == '*' && p[1] == '/') { depth--; p += 2; }
        else p++;
      } while (depth > 0);
    } else if (*p == '$' && (p == in || !(isalnum((unsigned char)p[-1]) ||
                                          p[-1] == '_'))) {
      /* $tag$ ... $tag$ (tag empty or an identifier); $1 is left as is */
      const char* t = p + 1;
      while (isalnum((unsigned char)*t) || *t == '_') t++;
      if (*t == '$' && !isdigit((unsigned char)p[1])) {
        size_t taglen = (size_t)(t - p) + 1;
        const char* close = t + 1;
        for (;;) {
          close = strchr(close, '$');
          if (close == NULL)
            return set_err(err, errsz, "handler SQL has an unterminated "
                                       "dollar-quoted string");
          if (strncmp(close, p, taglen) == 0) break;
          close++;
        }
        p = close + taglen;
      } else {
        p++;
      }
    } else if (*p == ';') {
      const char* rest = p + 1;
      while (isspace((unsigned char)*rest)) rest++;
      if (*rest != '\0')
        return set_err(err, errsz, "handler SQL must be one statement");
      p = rest;
      continue;  /* the trailing ';' is dropped */
    } else if (*p == '?') {
      char num[16];
      int n;
      p++;
      if (isdigit((unsigned char)*p)) {
        n = 0;
        while (isdigit((unsigned char)*p) && n < 100000) n = n * 10 + (*p++ - '0');
        if (n == 0 || n > 65535)
          return set_err(err, errsz, "handler SQL: ?NNN must be 1..65535");
        numbered = 1;
      } else {
        n = ++seq;
        plain = 1;
      }
      if (numbered && plain)
        return set_err(err, errsz, "handler SQL mixes ? and ?NNN");
      if (n > max) max = n;
      snprintf(num, sizeof num, "$%d", n);
      if ((rc = put(out, outsz, &o, num, strlen(num))) < 0) return rc;
      continue;
    } else {
      p++;
    }
    if ((rc = put(out, outsz, &o, start, (size_t)(p - start))) < 0) return rc;
  }
  out[o] = '\0';
  *nparams = max;
  return 0;
}

/* The first keyword after blanks, comments and parentheses, upper-cased. */
static void first_keyword(const char* s, char* out, size_t n) {
  size_t k = 0;
  for (;;) {
    while (isspace((unsigned char)*s) || *s == '(') s++;
    if (s[0] == '-' && s[1] == '-') {
      while (*s && *s != '\n') s++;
    } else if (s[0] == '/' && s[1] == '*') {
      const char* e = strstr(s + 2, "*/");
      s = e ? e + 2 : s + strlen(s);
    } else {
      break;
    }
  }
  while (isalpha((unsigned char)*s) && k + 1 < n)
    out[k++] = (char)toupper((unsigned char)*s++);
  out[k] = '\0';
}

/* What would end, nest or weaken the engine's transaction or session. */
static int refused_keyword(const char* kw) {
  static const char* const no[] = {
      "BEGIN",   "START",   "COMMIT", "END",     "ROLLBACK", "ABORT",
      "SAVEPOINT", "RELEASE", "PREPARE", "SET",  "RESET",    "DISCARD",
      "CALL",    "DO",      "LISTEN", "UNLISTEN", "VACUUM",  "CHECKPOINT",
      "COPY",    "DEALLOCATE", "PRAGMA", "ATTACH", "DETACH",  "LOAD"};
  for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
    if (strcmp(kw, no[i]) == 0) return 1;
  return 0;
}

void ob__pg_user_cache_clear(ob__db_t* db) {
  struct ob__pg_s* pg = db->pg;
  if (pg == NULL) return;
  for (int i = 0; i < OB__USER_STMT_CACHE; i++) {
    if (pg->user[i].sql != NULL && pg->conn != NULL && !pg->broken) {
      char sql[48];
      snprintf(sql, sizeof sql, "DEALLOCATE %s", pg->user[i].name);
      PQclear(PQexec(pg->conn, sql));
    }
    free(pg->user[i].sql);
    pg->user[i].sql = NULL;
  }
}

static ob__pg_user_stmt_t* lookup_or_prepare(ob__db_t* db, const char* sql) {
  struct ob__pg_s* pg = db->pg;
  int victim = 0, nparams = 0, rc;
  char kw[16], why[160];
  char* text;
  size_t textsz;
  PGresult* res;
  ob__pg_user_stmt_t* u;

  pg->user_clock++;
  for (int i = 0; i < OB__USER_STMT_CACHE; i++) {
    if (pg->user[i].sql != NULL && strcmp(pg->user[i].sql, sql) == 0) {
      pg->user[i].last_used = pg->user_clock;
      return &pg->user[i];
    }
    if (pg->user[i].last_used < pg->user[victim].last_used) victim = i;
  }
  first_keyword(sql, kw, sizeof kw);
  if (kw[0] == '\0') {
    ob__db_seterr(db, OB_EINVAL, "handler SQL is empty");
    return NULL;
  }
  if (refused_keyword(kw)) {
    ob__db_seterr(db, OB_EINVAL, "handler SQL may not control transactions "
                  "or change the session (%s): %s", kw, sql);
    return NULL;
  }
  /* Room for ? becoming $n; a text that outgrows it is refused
  ** (OB_ETOOBIG), never overrun. */
  textsz = strlen(sql) * 3 + 16 < MAX_SQL ? strlen(sql) * 3 + 16 : MAX_SQL;
  text = malloc(textsz);
  if (text == NULL) {
    ob__db_seterr(db, OB_ENOMEM, "out of memory");
    return NULL;
  }
  rc = ob__pg_rewrite_placeholders(sql, text, textsz, &nparams, why,
                                   sizeof why);
  if (rc < 0) {
    free(text);
    ob__db_seterr(db, rc, "%s", rc == OB_ETOOBIG ? "handler SQL too long"
                                                 : why);
    return NULL;
  }
  if (pg->user[victim].sql != NULL) {
    char dealloc[48];
    snprintf(dealloc, sizeof dealloc, "DEALLOCATE %s", pg->user[victim].name);
    PQclear(PQexec(pg->conn, dealloc));
    free(pg->user[victim].sql);
    pg->user[victim].sql = NULL;
  }
  u = &pg->user[victim];
  snprintf(u->name, sizeof u->name, "obu%lu", pg->next_name++);
  res = PQprepare(pg->conn, u->name, text, 0, NULL);
  free(text);
  if (res == NULL || PQresultStatus(res) != PGRES_COMMAND_OK) {
    int code = ob__pg_fail(db, res, "handler SQL");
    PQclear(res);
    /* Any statement that does not prepare is the handler's mistake, as on
    ** SQLite; a lost connection stays what it is. */
    if (code != OB_EIO) ob__db_seterr(db, OB_EINVAL, "%s", db->errmsg);
    return NULL;
  }
  PQclear(res);
  u->sql = strdup(sql);
  if (u->sql == NULL) {
    ob__db_seterr(db, OB_ENOMEM, "out of memory caching handler SQL");
    return NULL;
  }
  u->nparams = nparams;
  u->last_used = pg->user_clock;
  return u;
}

/* The column's value the way SQLite's would type it. */
static void read_col(const PGresult* res, int r, int c, ob_value_t* v,
                     unsigned char** freed) {
  const char* s = PQgetvalue(res, r, c);
  memset(v, 0, sizeof *v);
  *freed = NULL;
  if (PQgetisnull(res, r, c)) {
    v->type = OB_TYPE_NULL;
    return;
  }
  switch (PQftype(res, c)) {
    case 20: case 21: case 23:  /* int8, int2, int4 */
      v->type = OB_TYPE_INT;
      v->i = strtoll(s, NULL, 10);
      break;
    case 16:  /* bool */
      v->type = OB_TYPE_INT;
      v->i = s[0] == 't';
      break;
    case 700: case 701: case 1700:  /* float4, float8, numeric (as double) */
      v->type = OB_TYPE_REAL;
      v->d = strtod(s, NULL);
      break;
    case 17: {  /* bytea */
      size_t n = 0;
      *freed = PQunescapeBytea((const unsigned char*)s, &n);
      v->type = OB_TYPE_BLOB;
      v->p = *freed ? (const void*)*freed : "";
      v->n = *freed ? n : 0;
      break;
    }
    default:
      v->type = OB_TYPE_TEXT;
      v->p = s;
      v->n = (size_t)PQgetlength(res, r, c);
  }
}

int ob__pg_user_exec(ob__db_t* db, const char* sql, const ob_value_t* params,
                     size_t nparams, ob_row_cb row, void* arg) {
  static const char sp[] = "SAVEPOINT ob_stmt";
  static const char rel[] = "RELEASE SAVEPOINT ob_stmt";
  static const char undo[] = "ROLLBACK TO SAVEPOINT ob_stmt";
  const char* vals[OB__PG_MAX_PARAMS * 4];
  int lens[OB__PG_MAX_PARAMS * 4], fmts[OB__PG_MAX_PARAMS * 4];
  char nums[OB__PG_MAX_PARAMS * 4][32];
  char* copies[OB__PG_MAX_PARAMS * 4];
  ob__pg_user_stmt_t* u;
  PGresult* res;
  ExecStatusType st;
  int rc, changes = 0, guarded;

  if (sql == NULL || (nparams > 0 && params == NULL))
    return ob__db_seterr(db, OB_EINVAL, "handler SQL or parameters missing");
  if (nparams > OB__PG_MAX_PARAMS * 4)
    return ob__db_seterr(db, OB_EINVAL, "handler SQL: at most %d parameters",
                         OB__PG_MAX_PARAMS * 4);
  if (db->pg == NULL || db->pg->conn == NULL)
    return ob__db_seterr(db, OB_ESTATE, "the database is not open");
  /* A statement that fails to prepare aborts the transaction too: the
  ** savepoint comes first. */
  guarded = db->in_tx;
  if (guarded && (rc = ob__sql_run(db, OB__SQL_ONCE, sp, "handler SQL")) < 0)
    return rc;
  u = lookup_or_prepare(db, sql);
  if (u == NULL) {
    rc = db->last_err == OB_EIO ? OB_EIO
         : db->last_err == OB_ENOMEM ? OB_ENOMEM : OB_EINVAL;
    goto undo;
  }
  if ((size_t)u->nparams != nparams) {
    rc = ob__db_seterr(db, OB_EINVAL,
                       "handler SQL has %d parameters, %zu given",
                       u->nparams, nparams);
    goto undo;
  }
  memset(copies, 0, sizeof copies);
  for (size_t i = 0; i < nparams; i++) {
    const ob_value_t* v = &params[i];
    fmts[i] = 0;
    lens[i] = 0;
    switch (v->type) {
      case OB_TYPE_NULL: vals[i] = NULL; break;
      case OB_TYPE_INT:
        snprintf(nums[i], sizeof nums[i], "%lld", (long long)v->i);
        vals[i] = nums[i];
        break;
      case OB_TYPE_REAL:
        snprintf(nums[i], sizeof nums[i], "%.17g", v->d);
        vals[i] = nums[i];
        break;
      case OB_TYPE_TEXT:
        if (v->p != NULL && memchr(v->p, '\0', v->n) != NULL) {
          rc = ob__db_seterr(db, OB_EINVAL, "parameter %zu: text with a "
                             "NUL byte (PostgreSQL text cannot hold one)",
                             i + 1);
          goto out;
        }
        /* Text form, so the server converts it to whatever type the
        ** statement wants there, as SQLite's affinity would. */
        copies[i] = malloc(v->n + 1);
        if (copies[i] == NULL) {
          rc = ob__db_seterr(db, OB_ENOMEM, "out of memory");
          goto out;
        }
        if (v->n) memcpy(copies[i], v->p, v->n);
        copies[i][v->n] = '\0';
        vals[i] = copies[i];
        break;
      case OB_TYPE_BLOB:
        vals[i] = v->p ? (const char*)v->p : "";
        lens[i] = (int)v->n;
        fmts[i] = 1;
        break;
      default:
        rc = ob__db_seterr(db, OB_EINVAL, "parameter %zu has unknown type "
                           "%d", i + 1, (int)v->type);
        goto out;
    }
  }
  res = PQexecPrepared(db->pg->conn, u->name, (int)nparams, vals, lens, fmts,
                       0);
  for (size_t i = 0; i < nparams; i++) free(copies[i]);
  nparams = 0;
  st = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
  if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
    const char* state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    int ro = state != NULL && strcmp(state, "25006") == 0;
    rc = ob__pg_fail(db, res, "handler SQL");
    PQclear(res);
    if (ro)
      rc = ob__db_seterr(db, OB_EINVAL, "a read transaction (ob_read) may "
                         "not write: %s", sql);
    goto undo;
  }
  if (st == PGRES_TUPLES_OK && row != NULL) {
    int ncols = PQnfields(res) < MAX_COLS ? PQnfields(res) : MAX_COLS;
    ob_value_t cols[MAX_COLS];
    unsigned char* freed[MAX_COLS];
    for (int r = 0; r < PQntuples(res); r++) {
      int stop;
      for (int c = 0; c < ncols; c++) read_col(res, r, c, &cols[c], &freed[c]);
      stop = row(arg, cols, (size_t)ncols);
      for (int c = 0; c < ncols; c++) PQfreemem(freed[c]);
      if (stop) break;
    }
  }
  if (strncmp(PQcmdStatus(res), "SELECT", 6) != 0)
    changes = atoi(PQcmdTuples(res));
  PQclear(res);
  if (guarded && (rc = ob__sql_run(db, OB__SQL_ONCE, rel, "handler SQL")) < 0)
    return rc;
  return changes;

out:
  for (size_t i = 0; i < nparams; i++) free(copies[i]);
undo:
  /* The statement's effects, and the transaction's aborted state, undone;
  ** what the handler ran before stays. */
  if (guarded && rc != OB_EIO) {
    char keep[OB__ERRMSG_LEN];
    int u2;
    memcpy(keep, db->errmsg, sizeof keep);
    u2 = ob__sql_run(db, OB__SQL_ONCE, undo, "handler SQL");
    if (u2 >= 0) u2 = ob__sql_run(db, OB__SQL_ONCE, rel, "handler SQL");
    if (u2 < 0) return u2;
    memcpy(db->errmsg, keep, sizeof keep);
  }
  return rc;
}
