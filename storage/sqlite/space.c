/* SPDX-License-Identifier: Apache-2.0 */
/* What the disk-full policy reads: the pages in use; and the WAL's
** checkpoint. (The published rows it gives back are storage/retention.c's.) */
#include <sqlite3.h>

#include "storage/sqlite/sqlite_store.h"

/* One PRAGMA's integer, its statement prepared once. The table-valued
** form (pragma_page_count() joined with two others) parsed three virtual
** tables' declarations on every step: three quarters of an enqueue's
** instructions, since each new message is judged against the cap. */
static int pragma_int(ob__db_t* db, int id, const char* sql, int64_t* out) {
  sqlite3_stmt* st = ob__db_stmt(db, id, sql);
  int rc;
  if (st == NULL) return db->last_err;
  rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) *out = sqlite3_column_int64(st, 0);
  sqlite3_reset(st);
  return rc == SQLITE_ROW ? 0 : ob__db_fail(db, rc, "space in use");
}

int ob__sqlite_space_used_bytes(ob__db_t* db, int64_t* used) {
  int64_t pages = 0, free_pages = 0;
  int rc;
  /* The page size changes only with ob_vacuum (db_repage forgets it). */
  if (db->page_size == 0 &&
      (rc = ob__sqlite_db_page_size(db, &db->page_size)) < 0)
    return rc;
  /* Free pages are reused before the file grows: they are not "used". */
  if ((rc = pragma_int(db, OB__D_USED_BYTES, "PRAGMA page_count", &pages)) <
          0 ||
      (rc = pragma_int(db, OB__D_FREE_PAGES, "PRAGMA freelist_count",
                       &free_pages)) < 0)
    return rc;
  *used = (pages - free_pages) * db->page_size;
  return 0;
}

int ob__sqlite_space_checkpoint(ob__db_t* db, int truncate) {
  /* PASSIVE never waits for readers (it runs on a loop); TRUNCATE, after
  ** a full disk, also gives the WAL file's blocks back. */
  return ob__db_exec_fixed(db, truncate ? "PRAGMA wal_checkpoint(TRUNCATE)"
                                        : "PRAGMA wal_checkpoint(PASSIVE)");
}
