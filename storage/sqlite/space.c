/* SPDX-License-Identifier: Apache-2.0 */
/* The WAL's checkpoint, for the disk-full policy. (The pages in use it
** reads are storage/stats.c's; the published rows it gives back,
** storage/retention.c's.) */
#include <sqlite3.h>

#include "storage/sqlite/sqlite_store.h"

int ob__sqlite_space_checkpoint(ob__db_t* db, int truncate) {
  /* PASSIVE never waits for readers (it runs on a loop); TRUNCATE, after
  ** a full disk, also gives the WAL file's blocks back. */
  return ob__db_exec_fixed(db, truncate ? "PRAGMA wal_checkpoint(TRUNCATE)"
                                        : "PRAGMA wal_checkpoint(PASSIVE)");
}
