/* SPDX-License-Identifier: Apache-2.0 */
/* The PostgreSQL connection: open, error mapping, transactions. (Its
** statements run through storage/sql.h: sql_pg.c.) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/assert.h"
#include "storage/postgresql/pg_int.h"

/* ---- errors ------------------------------------------------------------- */

int ob__pg_map_sqlstate(const char* s) {
  if (s == NULL || strlen(s) != 5) return OB_EIO;
  if (strncmp(s, "23", 2) == 0) return OB_ECONSTRAINT;
  /* Serialization failure, deadlock, a lock not granted in lock_timeout:
  ** the engine's batch is rolled back and tried again, as on SQLITE_BUSY. */
  if (!strcmp(s, "40001") || !strcmp(s, "40P01") || !strcmp(s, "55P03") ||
      !strcmp(s, "57014"))
    return OB_EBUSY;
  if (!strcmp(s, "53100")) return OB_ENOSPC;
  if (!strcmp(s, "53200")) return OB_ENOMEM;
  if (strncmp(s, "08", 2) == 0 || strncmp(s, "57P", 3) == 0 ||
      !strcmp(s, "53300"))
    return OB_EIO;
  if (!strcmp(s, "42501") || !strcmp(s, "25006") || strncmp(s, "28", 2) == 0)
    return OB_EPERM;
  if (strncmp(s, "54", 2) == 0) return OB_ETOOBIG;
  if (!strcmp(s, "XX001") || !strcmp(s, "XX002")) return OB_ECORRUPT;
  return OB_EDB;
}

/* The server's message without its trailing newline; never the
** connection string (libpq's connection errors name host and user, never
** the password). */
static void copy_message(char* out, size_t n, const char* m) {
  size_t len;
  snprintf(out, n, "%s", m ? m : "");
  len = strlen(out);
  while (len > 0 && (out[len - 1] == '\n' || out[len - 1] == ' '))
    out[--len] = '\0';
}

int ob__pg_fail(ob__db_t* db, const PGresult* res, const char* what) {
  struct ob__pg_s* pg = db->pg;
  const char* state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
  char msg[320];
  int code;
  copy_message(msg, sizeof msg,
               res && PQresultErrorMessage(res)[0]
                   ? PQresultErrorMessage(res)
                   : (pg && pg->conn ? PQerrorMessage(pg->conn) : ""));
  code = ob__pg_map_sqlstate(state);
  if (pg != NULL && (pg->conn == NULL || PQstatus(pg->conn) != CONNECTION_OK))
    code = OB_EIO;
  if (code == OB_EIO && pg != NULL) pg->broken = 1;
  db->last_err = code;
  if (state != NULL)
    ob__db_seterr(db, code, "%s: %s (SQLSTATE %s)", what, msg, state);
  else
    ob__db_seterr(db, code, "%s: %s (PostgreSQL at %s)", what,
                  msg[0] ? msg : "no answer from the server",
                  pg ? pg->shown : "?");
  return code;
}

/* ---- running statements -------------------------------------------------- */

int ob__pg_conn_ready(ob__db_t* db, const char* what) {
  if (db->pg == NULL || db->pg->conn == NULL)
    return ob__db_seterr(db, OB_ESTATE, "%s: the database is not open",
                         what);
  if (db->pg->broken)
    return db->last_err = ob__db_seterr(
               db, OB_EIO, "%s: the connection to PostgreSQL at %s was lost "
               "(reconnected at the next transaction)", what, db->pg->shown);
  return 0;
}

int ob__pg_exec(ob__db_t* db, const char* sql, const char* what) {
  PGresult* res;
  ExecStatusType st;
  int rc;
  if ((rc = ob__pg_conn_ready(db, what)) < 0) return rc;
  res = PQexec(db->pg->conn, sql);
  st = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
  if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
    rc = ob__pg_fail(db, res, what);
    PQclear(res);
    return rc;
  }
  PQclear(res);
  return 0;
}

/* ---- open and close ---------------------------------------------------- */

/* host, port, dbname and user of the connection string, for messages: never
** its password (nor any other keyword, which may hold secrets). */
void ob__pg_display_name(const char* conninfo, char* out, size_t n) {
  static const char* const keys[] = {"host", "hostaddr", "port", "dbname",
                                     "user"};
  char* err = NULL;
  PQconninfoOption* opts = PQconninfoParse(conninfo, &err);
  size_t used = 0;
  out[0] = '\0';
  if (opts == NULL) {
    PQfreemem(err);
    snprintf(out, n, "(an unparsable connection string)");
    return;
  }
  for (PQconninfoOption* o = opts; o->keyword != NULL; o++) {
    if (o->val == NULL || o->val[0] == '\0') continue;
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
      if (strcmp(o->keyword, keys[k]) == 0 && used < n) {
        int w = snprintf(out + used, n - used, "%s%s=%s", used ? " " : "",
                         o->keyword, o->val);
        if (w > 0) used += (size_t)w;
      }
  }
  if (out[0] == '\0') snprintf(out, n, "(libpq's defaults)");
  PQconninfoFree(opts);
}

/* 1 if the connection string sets keyword. */
static int has_keyword(const char* conninfo, const char* keyword,
                       char* val, size_t n) {
  char* err = NULL;
  int found = 0;
  PQconninfoOption* opts = PQconninfoParse(conninfo, &err);
  if (opts == NULL) {
    PQfreemem(err);
    return 0;
  }
  for (PQconninfoOption* o = opts; o->keyword != NULL; o++)
    if (strcmp(o->keyword, keyword) == 0 && o->val != NULL &&
        o->val[0] != '\0') {
      found = 1;
      if (val) snprintf(val, n, "%s", o->val);
    }
  PQconninfoFree(opts);
  return found;
}

/* The session's settings: durability as asked (never weaker than the
** configuration says, whatever the server's default), the busy timeout as
** lock_timeout, and a server that cannot keep a commit refused. */
static int session_setup(ob__db_t* db) {
  struct ob__pg_s* pg = db->pg;
  char sql[160];
  PGresult* res;
  int rc;
  res = PQexec(pg->conn, "SHOW fsync");
  if (res == NULL || PQresultStatus(res) != PGRES_TUPLES_OK) {
    rc = ob__pg_fail(db, res, "read the server's fsync setting");
    PQclear(res);
    return rc;
  }
  if (pg->sync_full && strcmp(PQgetvalue(res, 0, 0), "off") == 0) {
    PQclear(res);
    return ob__db_seterr(db, OB_EWAL,
                         "the PostgreSQL server at %s runs with fsync=off: "
                         "a committed ack would not survive a crash of its "
                         "host; oncebox refuses it at synchronous=FULL (turn "
                         "fsync on, or choose synchronous=NORMAL knowingly)",
                         pg->shown);
  }
  PQclear(res);
  /* Integers computed here, never text from outside. */
  snprintf(sql, sizeof sql,
           "SET synchronous_commit = %s; SET lock_timeout = %d;"
           " SET application_name = 'oncebox'; SET TIME ZONE 'UTC'",
           pg->sync_full ? "on" : "off", pg->busy_timeout_ms);
  return ob__pg_exec(db, sql, "session settings");
}

static int connect_server(ob__db_t* db, const char* conninfo) {
  struct ob__pg_s* pg = db->pg;
  const char* keys[4];
  const char* vals[4];
  int k = 0;
  char mode[32];
  keys[k] = "dbname";
  vals[k++] = conninfo;
  /* A CA given means the server is to be verified: certificate and host
  ** name (verify-full), unless the string asks for a mode itself; a weaker
  ** mode next to a CA is a mistake worth refusing. */
  if (has_keyword(conninfo, "sslrootcert", NULL, 0)) {
    if (!has_keyword(conninfo, "sslmode", mode, sizeof mode)) {
      keys[k] = "sslmode";
      vals[k++] = "verify-full";
    } else if (strcmp(mode, "verify-full") != 0 &&
               strcmp(mode, "verify-ca") != 0) {
      return ob__db_seterr(db, OB_EINVAL,
                           "the connection string gives a CA (sslrootcert) "
                           "and sslmode=%s, which does not verify the "
                           "server with it: use sslmode=verify-full", mode);
    }
  }
  keys[k] = "connect_timeout";
  vals[k++] = "10";
  keys[k] = NULL;
  vals[k] = NULL;
  pg->conn = PQconnectdbParams(keys, vals, 1);
  if (pg->conn == NULL)
    return ob__db_seterr(db, OB_ENOMEM, "out of memory connecting");
  if (PQstatus(pg->conn) != CONNECTION_OK) {
    char msg[300];
    copy_message(msg, sizeof msg, PQerrorMessage(pg->conn));
    return ob__db_seterr(db, OB_EIO, "cannot connect to PostgreSQL at %s: %s",
                         pg->shown, msg);
  }
  return session_setup(db);
}

int ob__pg_db_open_ext(ob__db_t* db, const char* conninfo, ob_sync_t sync,
                       int busy_timeout_ms, int64_t max_bytes,
                       const struct ob__schema_ext_s* ext) {
  struct ob__pg_s* pg;
  int rc;
  memset(db, 0, sizeof *db);
  db->ops = &ob__pg_store_ops;
  pg = calloc(1, sizeof *pg);
  if (pg == NULL) return ob__db_seterr(db, OB_ENOMEM, "out of memory");
  db->pg = pg;
  pg->sync_full = sync != OB_SYNC_NORMAL;
  pg->busy_timeout_ms = busy_timeout_ms > 0 ? busy_timeout_ms : 0;
  db->sync_full = pg->sync_full;
  ob__pg_display_name(conninfo, pg->shown, sizeof pg->shown);
  /* The size cap is SQLite's max_page_count; a PostgreSQL server's space
  ** is its operator's (a tablespace, a quota): docs/postgresql.md. */
  (void)max_bytes;
  rc = connect_server(db, conninfo);
  if (rc == 0) rc = ob__pg_schema_migrate(db, ext);
  if (rc < 0) {
    char msg[OB__ERRMSG_LEN];
    memcpy(msg, db->errmsg, sizeof msg);
    ob__pg_db_close(db);
    memcpy(db->errmsg, msg, sizeof msg);
    db->ops = NULL;
    return rc;
  }
  return 0;
}

static void forget_statements(struct ob__pg_s* pg) {
  pg->nprepared = 0;
  for (int i = 0; i < OB__USER_STMT_CACHE; i++) {
    free(pg->user[i].sql);
    pg->user[i].sql = NULL;
  }
}

void ob__pg_db_close(ob__db_t* db) {
  struct ob__pg_s* pg = db->pg;
  if (pg == NULL) return;
  forget_statements(pg);
  if (pg->conn) PQfinish(pg->conn);  /* an open transaction rolls back */
  free(pg);
  db->pg = NULL;
  db->in_tx = 0;
  db->savepoints = 0;
}

/* A lost connection is replaced at the next transaction (the engine's next
** batch): its prepared statements went with it. */
static int reconnect_if_broken(ob__db_t* db) {
  struct ob__pg_s* pg = db->pg;
  if (pg == NULL || pg->conn == NULL)
    return ob__db_seterr(db, OB_ESTATE, "the database is not open");
  if (!pg->broken && PQstatus(pg->conn) == CONNECTION_OK) return 0;
  PQreset(pg->conn);
  forget_statements(pg);
  if (PQstatus(pg->conn) != CONNECTION_OK) {
    char msg[300];
    pg->broken = 1;
    copy_message(msg, sizeof msg, PQerrorMessage(pg->conn));
    return db->last_err = ob__db_seterr(
               db, OB_EIO, "cannot reconnect to PostgreSQL at %s: %s",
               pg->shown, msg);
  }
  pg->broken = 0;
  return session_setup(db);
}

/* ---- transactions ------------------------------------------------------ */

static int begin_with(ob__db_t* db, const char* sql) {
  int rc = reconnect_if_broken(db);
  if (rc == 0) rc = ob__sql_run(db, OB__SQL_ONCE, sql, sql);
  if (rc < 0) return rc;
  db->in_tx = 1;
  db->savepoints = 0;
  return 0;
}

/* READ COMMITTED: each statement sees what committed before it, so a claim
** that waited on a lock sees the winner's row (storage/processed.c), and row
** locks with SKIP LOCKED share the queue between processes. */
int ob__pg_db_begin(ob__db_t* db) {
  static const char sql[] = "BEGIN ISOLATION LEVEL READ COMMITTED";
  return begin_with(db, sql);
}

/* The relay's bookkeeping (store.h): losing the last of these commits at a
** crash of the server republishes with the same id; the flush is skipped
** for this transaction only. */
int ob__pg_db_begin_relaxed(ob__db_t* db) {
  static const char set[] = "SET LOCAL synchronous_commit = off";
  int rc = ob__pg_db_begin(db);
  if (rc == 0 && (rc = ob__sql_run(db, OB__SQL_ONCE, set, "relaxed")) < 0) {
    ob__pg_db_rollback(db);
    return rc;
  }
  if (rc == 0) db->relaxed = 1;
  return rc;
}

/* One snapshot for every statement (stats, ob_read), refusing writes. */
int ob__pg_db_begin_read(ob__db_t* db) {
  static const char sql[] =
      "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY";
  int rc = begin_with(db, sql);
  if (rc == 0) db->pg->read_only_tx = 1;
  return rc;
}

int ob__pg_db_commit(ob__db_t* db) {
  ob__sql_t s;
  int rc = 0;
  OB__ASSERT(db->in_tx);
  /* The engine clock rides on a write transaction (engine_clock.c). */
  if (db->clock_pending > db->clock_stored && !db->pg->read_only_tx &&
      (rc = ob__sql_engine_clock_record(db)) < 0) {
    ob__pg_db_rollback(db);
    return rc;
  }
  ob__sql_prepare(db, &s, OB__SQL_ONCE, "COMMIT", "commit");
  /* A COMMIT of a transaction that failed earlier answers ROLLBACK. */
  if ((rc = ob__sql_step(&s)) >= 0 &&
      strcmp(PQcmdStatus(s.res), "ROLLBACK") == 0)
    rc = ob__db_seterr(db, OB_EDB, "commit: the transaction had failed "
                       "and was rolled back");
  ob__sql_finish(&s);
  if (rc < 0) {
    ob__pg_db_rollback(db);
    return rc;
  }
  db->in_tx = 0;
  db->savepoints = 0;
  db->relaxed = 0;
  if (!db->pg->read_only_tx && db->clock_pending > db->clock_stored)
    db->clock_stored = db->clock_pending;
  db->pg->read_only_tx = 0;
  return 0;
}

void ob__pg_db_rollback(ob__db_t* db) {
  if (db->pg != NULL && db->pg->conn != NULL && !db->pg->broken &&
      PQtransactionStatus(db->pg->conn) != PQTRANS_IDLE) {
    PGresult* res = PQexec(db->pg->conn, "ROLLBACK");
    PQclear(res);
  }
  db->in_tx = 0;
  db->savepoints = 0;
  db->relaxed = 0;
  if (db->pg != NULL) db->pg->read_only_tx = 0;
}

/* The WAL is the server's to manage (max_wal_size, checkpoints). */
int ob__pg_db_set_wal_policy(ob__db_t* db, int checkpoint_pages,
                             int64_t size_limit_bytes) {
  (void)db;
  (void)checkpoint_pages;
  (void)size_limit_bytes;
  return 0;
}

/* PostgreSQL's block size: what the engine scales its WAL policy by, which
** is a no-op here. */
int ob__pg_db_page_size(ob__db_t* db, int* out) {
  (void)db;
  *out = 8192;
  return 0;
}

/* `oncebox vacuum`'s page size is SQLite's file format; PostgreSQL's
** VACUUM is autovacuum's. */
int ob__pg_db_repage(ob__db_t* db, int page_size, int64_t max_bytes) {
  (void)page_size;
  (void)max_bytes;
  return ob__db_seterr(db, OB_ENOTSUP,
                       "changing the page size is for an SQLite file; a "
                       "PostgreSQL server vacuums itself (autovacuum)");
}
