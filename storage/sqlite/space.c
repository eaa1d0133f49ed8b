/* SPDX-License-Identifier: Apache-2.0 */
/* What the disk-full policy reads and deletes: the pages in use, and
** published outbox rows given back early under space pressure. */
#include <sqlite3.h>

#include "storage/sqlite/sqlite_store.h"

int ob__sqlite_space_used_bytes(ob__db_t* db, int64_t* used) {
  int rc;
  /* Free pages are reused before the file grows: they are not "used". */
  sqlite3_stmt* st = ob__db_stmt(
      db, OB__D_USED_BYTES,
      "SELECT (p.page_count - f.freelist_count) * s.page_size"
      " FROM pragma_page_count() p, pragma_freelist_count() f,"
      " pragma_page_size() s");
  if (st == NULL) return db->last_err;
  rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    *used = sqlite3_column_int64(st, 0);
    sqlite3_reset(st);
    return 0;
  }
  sqlite3_reset(st);
  return ob__db_fail(db, rc, "space in use");
}

int ob__sqlite_space_delete_published(ob__db_t* db, int batch, int64_t* deleted) {
  int rc, n;
  /* Oldest publication first, through outbox_published_age; an unpublished
  ** (or parked) row is never selected. */
  sqlite3_stmt* st = ob__db_stmt(
      db, OB__D_DELETE_PUBLISHED,
      "DELETE FROM outbox_event WHERE id IN (SELECT id FROM outbox_event"
      " WHERE published_at IS NOT NULL ORDER BY published_at LIMIT ?1)");
  sqlite3_stmt* mark;
  *deleted = 0;
  if (st == NULL) return db->last_err;
  mark = ob__db_stmt(
      db, OB__D_MARK_SWEPT,
      "INSERT INTO retention_swept(id, outbox_created_before_ms) SELECT 1, m"
      " FROM (SELECT max(created_at) AS m FROM (SELECT created_at FROM"
      " outbox_event WHERE published_at IS NOT NULL ORDER BY published_at"
      " LIMIT ?1)) WHERE m IS NOT NULL"
      " ON CONFLICT(id) DO UPDATE SET outbox_created_before_ms ="
      " max(outbox_created_before_ms, excluded.outbox_created_before_ms)");
  if (mark == NULL) return db->last_err;
  rc = ob__sqlite_db_begin(db);
  if (rc < 0) return rc;
  /* The same rows as the DELETE: one transaction, one snapshot. */
  sqlite3_bind_int(mark, 1, batch);
  n = ob__db_step_done(db, mark, "reclaim published events");
  if (n >= 0) {
    sqlite3_bind_int(st, 1, batch);
    n = ob__db_step_done(db, st, "reclaim published events");
  }
  if (n < 0) {
    ob__sqlite_db_rollback(db);
    return n;
  }
  rc = ob__sqlite_db_commit(db);
  if (rc < 0) return rc;
  *deleted = n;
  return 0;
}

int ob__sqlite_space_checkpoint(ob__db_t* db, int truncate) {
  /* PASSIVE never waits for readers (it runs on a loop); TRUNCATE, after
  ** a full disk, also gives the WAL file's blocks back. */
  return ob__db_exec_fixed(db, truncate ? "PRAGMA wal_checkpoint(TRUNCATE)"
                                        : "PRAGMA wal_checkpoint(PASSIVE)");
}
