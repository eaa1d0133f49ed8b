/* SPDX-License-Identifier: Apache-2.0 */
/* What the disk-full policy reads: the pages in use; and the WAL's
** checkpoint. (The published rows it gives back are storage/retention.c's.) */
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

int ob__sqlite_space_checkpoint(ob__db_t* db, int truncate) {
  /* PASSIVE never waits for readers (it runs on a loop); TRUNCATE, after
  ** a full disk, also gives the WAL file's blocks back. */
  return ob__db_exec_fixed(db, truncate ? "PRAGMA wal_checkpoint(TRUNCATE)"
                                        : "PRAGMA wal_checkpoint(PASSIVE)");
}
