/* SPDX-License-Identifier: Apache-2.0 */
/* Opening the database, pragmas, error mapping, transactions and the
** statement cache. */
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/assert.h"
#include "core/util/errbuf.h"
#include "storage/sql.h"
#include "storage/sqlite/private_file.h"
#include "storage/sqlite/sqlite_store.h"

static int map_rc(int rc) {
  switch (rc & 0xff) {
    case SQLITE_OK: return 0;
    case SQLITE_NOMEM: return OB_ENOMEM;
    case SQLITE_BUSY: case SQLITE_LOCKED: return OB_EBUSY;
    case SQLITE_FULL: return OB_ENOSPC;
    case SQLITE_IOERR: return OB_EIO;
    case SQLITE_CORRUPT: case SQLITE_NOTADB: return OB_ECORRUPT;
    case SQLITE_CONSTRAINT: return OB_ECONSTRAINT;
    case SQLITE_TOOBIG: return OB_ETOOBIG;
    case SQLITE_PERM: case SQLITE_READONLY: case SQLITE_AUTH:
    case SQLITE_CANTOPEN: return OB_EPERM;
    default: return OB_EDB;
  }
}

int ob__db_fail(ob__db_t* db, int rc, const char* what) {
  int code = map_rc(rc);
  if (code == 0) code = OB_EDB;
  db->last_err = code;
  /* SQLITE_FULL from max_page_count and from ENOSPC look the same to the
  ** caller: both mean "free space and it resumes". */
  ob__db_seterr(db, code, "%s: %s (%s)", what,
                db->db ? sqlite3_errmsg(db->db) : sqlite3_errstr(rc),
                sqlite3_errstr(rc));
  return code;
}

int ob__db_exec_fixed(ob__db_t* db, const char* sql) {
  char* msg = NULL;
  int rc = sqlite3_exec(db->db, sql, NULL, NULL, &msg);
  if (rc != SQLITE_OK) {
    int code = map_rc(rc);
    ob__db_seterr(db, code ? code : OB_EDB, "%s: %s (%s)", sql,
                  msg ? msg : sqlite3_errmsg(db->db), sqlite3_errstr(rc));
    sqlite3_free(msg);
    return code ? code : OB_EDB;
  }
  return 0;
}

/* A pragma that returns one text value, e.g. journal_mode. */
static int pragma_text(ob__db_t* db, const char* sql, char* out, size_t n) {
  sqlite3_stmt* st = NULL;
  int rc = sqlite3_prepare_v2(db->db, sql, -1, &st, NULL);
  if (rc != SQLITE_OK) return ob__db_fail(db, rc, sql);
  rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    const unsigned char* t = sqlite3_column_text(st, 0);
    /* NULL for a non-NULL value means the conversion ran out of memory. */
    if (t == NULL && sqlite3_column_type(st, 0) != SQLITE_NULL) {
      sqlite3_finalize(st);
      return ob__db_fail(db, SQLITE_NOMEM, sql);
    }
    snprintf(out, n, "%s", t ? (const char*)t : "");
    rc = SQLITE_OK;
  } else if (rc == SQLITE_DONE) {
    out[0] = '\0';
    rc = SQLITE_OK;
  }
  /* Some pragmas (journal_mode=WAL on a new file) commit their change when
  ** the statement is finalized: its result is the pragma's. */
  {
    int frc = sqlite3_finalize(st);
    if (rc == SQLITE_OK && frc != SQLITE_OK) rc = frc;
  }
  return rc == SQLITE_OK ? 0 : ob__db_fail(db, rc, sql);
}

/* PRAGMA max_page_count takes no bound parameter; the value is an integer
** computed here, never text from outside. */
static int apply_size_cap(ob__db_t* db, int64_t max_bytes) {
  char sql[64], page[32];
  long long page_size, pages;
  int rc = pragma_text(db, "PRAGMA page_size", page, sizeof page);
  if (rc < 0) return rc;
  page_size = atoll(page);
  if (page_size <= 0) page_size = 4096;
  pages = (long long)(max_bytes / page_size);
  if (pages < 16) pages = 16;
  snprintf(sql, sizeof sql, "PRAGMA max_page_count=%lld", pages);
  return ob__db_exec_fixed(db, sql);
}

int ob__sqlite_db_page_size(ob__db_t* db, int* out) {
  char page[32];
  int rc = pragma_text(db, "PRAGMA page_size", page, sizeof page);
  if (rc < 0) return rc;
  *out = atoi(page);
  return 0;
}

int ob__sqlite_db_repage(ob__db_t* db, int page_size, int64_t max_bytes) {
  char sql[64], mode[32];
  int rc, old, back;
  if (db->in_tx) return ob__db_seterr(db, OB_ESTATE, "vacuum inside a transaction");
  if ((rc = ob__sqlite_db_page_size(db, &old)) < 0) return rc;
  if (old == page_size) return 0;
  /* The copy at a smaller page size needs more pages than the cap allows
  ** in pages: lifted for the copy, set again from bytes after. */
  if ((rc = ob__db_exec_fixed(db, "PRAGMA max_page_count=4294967294")) < 0)
    return rc;
  /* Only out of WAL can the page size change. Leaving WAL needs the only
  ** connection: with another process on the file it fails and nothing
  ** changed. */
  rc = pragma_text(db, "PRAGMA journal_mode=DELETE", mode, sizeof mode);
  if (rc == 0 && strcmp(mode, "delete") != 0)
    rc = ob__db_seterr(db, OB_EBUSY, "journal_mode stayed '%s'", mode);
  if (rc < 0) {
    if (db->last_err == OB_EBUSY || rc == OB_EBUSY)
      ob__db_seterr(db, OB_EBUSY, "another connection has the database open "
                    "(stop every oncebox process on it first): nothing "
                    "changed");
    if (max_bytes > 0) (void)apply_size_cap(db, max_bytes);
    return rc < 0 ? rc : OB_EBUSY;
  }
  snprintf(sql, sizeof sql, "PRAGMA page_size=%d", page_size);
  rc = ob__db_exec_fixed(db, sql);
  /* VACUUM copies every row into a new file image in one transaction of
  ** the rollback journal: a crash leaves the old file whole. */
  if (rc == 0) rc = ob__db_exec_fixed(db, "VACUUM");
  db->page_size = 0;  /* space.c reads it again */
  back = pragma_text(db, "PRAGMA journal_mode=WAL", mode, sizeof mode);
  if (back == 0 && strcmp(mode, "wal") != 0)
    back = ob__db_seterr(db, OB_EWAL, "journal_mode is '%s' after the vacuum",
                         mode);
  if (max_bytes > 0 && back == 0) back = apply_size_cap(db, max_bytes);
  return rc < 0 ? rc : back;
}

/* sqlite3_open_v2's "unable to open database file" says nothing of why;
** the operator needs the errno, or that a symlink was refused. */
static int open_failed(ob__db_t* db, int rc, const char* path) {
  int sys = db->db ? sqlite3_system_errno(db->db) : 0;
  size_t len = strlen(path);
  int shown = len > 200 ? 200 : (int)len; /* the reason must still fit */
  const char* more = len > 200 ? "..." : "";
  if (rc == SQLITE_CANTOPEN_SYMLINK)
    return ob__db_seterr(db, OB_EPERM,
                         "%.*s%s is a symbolic link: name the database file "
                         "itself (symlinks are refused)", shown, path, more);
  if (sys != 0)
    return ob__db_seterr(db, map_rc(rc),
                         "cannot open %.*s%s: %s (%s)", shown, path, more,
                         strerror(sys), sqlite3_errstr(rc));
  return ob__db_fail(db, rc, "open");
}

/* The pragmas take no bound parameter; both values are integers. */
int ob__sqlite_db_set_wal_policy(ob__db_t* db, int checkpoint_pages,
                          int64_t size_limit_bytes) {
  char sql[128];
  snprintf(sql, sizeof sql,
           "PRAGMA wal_autocheckpoint=%d; PRAGMA journal_size_limit=%lld;",
           checkpoint_pages, (long long)size_limit_bytes);
  return ob__db_exec_fixed(db, sql);
}

/* On a new file, journal_mode=WAL upgrades a read lock to a write lock to
** write the header. When another process is doing the same (two terminals'
** services started at once), SQLite answers SQLITE_BUSY at once instead of
** calling the busy handler: waiting while holding the read lock could
** deadlock. Only a retry of the whole statement, which drops the read lock
** in between, honours the caller's busy timeout. */
static int switch_to_wal(ob__db_t* db, int busy_timeout_ms, char* mode,
                         size_t n) {
  int waited_ms = 0;
  for (;;) {
    int rc = pragma_text(db, "PRAGMA journal_mode=WAL", mode, n);
    int step_ms;
    if (rc != OB_EBUSY || waited_ms >= busy_timeout_ms) return rc;
    step_ms = waited_ms < 10 ? 1 : 10;
    sqlite3_sleep(step_ms);
    waited_ms += step_ms;
  }
}

int ob__sqlite_db_open_ext(ob__db_t* db, const char* path, ob_sync_t sync,
                    int busy_timeout_ms, int64_t max_bytes,
                    const struct ob__schema_ext_s* ext) {
  char mode[32];
  int rc;

  memset(db, 0, sizeof *db);
  db->ops = &ob__sqlite_store_ops;
  rc = ob__fs_prepare_private_file(path, db->errmsg, sizeof db->errmsg);
  if (rc < 0) return rc;

  rc = sqlite3_open_v2(path, &db->db,
                       SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX |
                           SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_EXRESCODE,
                       NULL);
  if (rc != SQLITE_OK) {
    rc = open_failed(db, rc, path);
    goto fail;
  }
  sqlite3_extended_result_codes(db->db, 1);
  sqlite3_busy_timeout(db->db, busy_timeout_ms);
  /* Defensive mode: no writable_schema tricks, no shadow-table writes, even
  ** if a handler's SQL tries. */
  sqlite3_db_config(db->db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
  sqlite3_db_config(db->db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, NULL);

  /* Read-only, before anything writes: a file that is not a database fails
  ** here, and another application's database is refused while it is still
  ** exactly as it was (journal_mode=WAL would rewrite its header). */
  rc = ob__sqlite_schema_identify(db, ext != NULL && ext->adopt);
  if (rc < 0) goto fail;
  /* A new file gets 2 KiB pages (docs/decisions/0017-pages-and-wal-for-
  ** flash.md): half the bytes per message of 4 KiB ones. On a file that
  ** exists this does nothing (only a VACUUM changes it: `oncebox vacuum`),
  ** and it must come before WAL, which fixes the size. */
  rc = ob__db_exec_fixed(db, "PRAGMA page_size=" OB__NEW_PAGE_SIZE_STR);
  if (rc < 0) goto fail;
  rc = switch_to_wal(db, busy_timeout_ms, mode, sizeof mode);
  if (rc < 0) goto fail;
  if (strcmp(mode, "wal") != 0) {
    rc = ob__db_seterr(db, OB_EWAL,
                       "journal_mode is '%s' after asking for WAL "
                       "(network file system or read-only directory?)",
                       mode);
    goto fail;
  }
  rc = ob__db_exec_fixed(db, sync == OB_SYNC_NORMAL
                                 ? "PRAGMA synchronous=NORMAL"
                                 : "PRAGMA synchronous=FULL");
  if (rc < 0) goto fail;
  db->sync_full = sync != OB_SYNC_NORMAL;
  rc = ob__db_exec_fixed(db,
                         "PRAGMA foreign_keys=ON;"
                         "PRAGMA temp_store=MEMORY;");
  if (rc < 0) goto fail;
  rc = ob__sqlite_db_set_wal_policy(db, OB__WAL_CHECKPOINT_PAGES,
                             OB__WAL_SIZE_LIMIT_BYTES);
  if (rc < 0) goto fail;
  rc = pragma_text(db, "PRAGMA foreign_keys", mode, sizeof mode);
  if (rc < 0) goto fail;
  if (strcmp(mode, "1") != 0) {
    rc = ob__db_seterr(db, OB_EDB, "foreign_keys could not be enabled");
    goto fail;
  }
  rc = ob__sqlite_schema_migrate(db, ext);
  if (rc < 0) goto fail;
  if (max_bytes > 0 && (rc = apply_size_cap(db, max_bytes)) < 0) goto fail;
  return 0;

fail:
  {
    /* Keep the message: close() must not clobber it. */
    char msg[OB__ERRMSG_LEN];
    memcpy(msg, db->errmsg, sizeof msg);
    ob__sqlite_db_close(db);
    memcpy(db->errmsg, msg, sizeof msg);
  }
  return rc;
}

void ob__sqlite_user_cache_clear(ob__db_t* db) {
  for (int i = 0; i < OB__USER_STMT_CACHE; i++) {
    sqlite3_finalize(db->user[i].st);
    free(db->user[i].sql);
    db->user[i].st = NULL;
    db->user[i].sql = NULL;
  }
}

void ob__sqlite_db_close(ob__db_t* db) {
  if (db->db == NULL) return;
  for (int i = 0; i < OB__STMT_COUNT; i++) {
    sqlite3_finalize(db->stmt[i]);
    db->stmt[i] = NULL;
  }
  ob__sqlite_user_cache_clear(db);
  if (db->in_tx) sqlite3_exec(db->db, "ROLLBACK", NULL, NULL, NULL);
  /* Every statement is finalized above, so close cannot return BUSY. */
  sqlite3_close(db->db);
  db->db = NULL;
  db->in_tx = 0;
  db->savepoints = 0;
}

/* Back to synchronous=FULL after a relaxed transaction. */
static void restore_sync(ob__db_t* db) {
  if (!db->relaxed) return;
  if (ob__db_exec_fixed(db, "PRAGMA synchronous=FULL") == 0) db->relaxed = 0;
}

static int begin_immediate(ob__db_t* db) {
  int rc = ob__db_exec_fixed(db, "BEGIN IMMEDIATE");
  if (rc == 0) db->in_tx = 1;
  return rc;
}

int ob__sqlite_db_begin(ob__db_t* db) {
  /* If restoring FULL failed after a relaxed transaction, try again, and
  ** never run a durable transaction at NORMAL. */
  restore_sync(db);
  if (db->relaxed)
    return ob__db_seterr(db, OB_EIO, "cannot restore synchronous=FULL");
  return begin_immediate(db);
}

int ob__sqlite_db_begin_relaxed(ob__db_t* db) {
  int rc;
  restore_sync(db);
  if (db->sync_full) {
    rc = ob__db_exec_fixed(db, "PRAGMA synchronous=NORMAL");
    if (rc < 0) return rc;
    db->relaxed = 1;
  }
  rc = begin_immediate(db);
  if (rc < 0) restore_sync(db);
  return rc;
}

int ob__sqlite_db_begin_read(ob__db_t* db) {
  int rc = ob__db_exec_fixed(db, "BEGIN");
  if (rc == 0) db->in_tx = 1;
  return rc;
}

int ob__sqlite_db_commit(ob__db_t* db) {
  int rc;
  OB__ASSERT(db->in_tx);  /* every commit follows a successful begin */
  /* The engine clock rides on a transaction that writes anyway: no commit
  ** of its own, and never one that only read. */
  if (db->clock_pending > db->clock_stored &&
      sqlite3_txn_state(db->db, "main") == SQLITE_TXN_WRITE) {
    rc = ob__sql_engine_clock_record(db);
    if (rc < 0) {
      ob__sqlite_db_rollback(db);
      return rc;
    }
  }
  rc = ob__db_exec_fixed(db, "COMMIT");
  /* A failed COMMIT (disk full, I/O error) may leave the transaction open;
  ** roll it back so the connection is usable and nothing half-applies. */
  if (rc < 0) {
    ob__sqlite_db_rollback(db);
    return rc;
  }
  db->in_tx = 0;
  db->savepoints = 0;
  if (db->clock_pending > db->clock_stored) db->clock_stored = db->clock_pending;
  restore_sync(db);
  return 0;
}

void ob__sqlite_db_rollback(ob__db_t* db) {
  if (db->db == NULL) return;
  if (!sqlite3_get_autocommit(db->db))
    sqlite3_exec(db->db, "ROLLBACK", NULL, NULL, NULL);
  db->in_tx = 0;
  db->savepoints = 0;
  restore_sync(db);
}
