/* SPDX-License-Identifier: Apache-2.0 */
/* The disk-full policy on PostgreSQL: the server keeps its own WAL, so
** there is nothing to checkpoint from here. (The size it reads is
** storage/stats.c's; the published rows it gives back,
** storage/retention.c's.) */
#include "storage/postgresql/pg_int.h"

int ob__pg_space_checkpoint(ob__db_t* db, int truncate) {
  /* SQLite's wal_checkpoint gives the WAL file back to the disk. A
  ** PostgreSQL server checkpoints and recycles its WAL on its own schedule
  ** (checkpoint_timeout, max_wal_size), and CHECKPOINT needs rights an
  ** application role should not hold: nothing to do. */
  (void)db;
  (void)truncate;
  return 0;
}
