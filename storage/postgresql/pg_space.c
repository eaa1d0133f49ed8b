/* SPDX-License-Identifier: Apache-2.0 */
/* What the disk-full policy deletes on PostgreSQL: published outbox rows
** given back early under space pressure (SQLite's storage/sqlite/space.c).
** The size it reads is pg_stats.c's ob__pg_space_used_bytes; the server
** keeps its own WAL, so there is nothing to checkpoint from here. */
#include "storage/postgresql/pg_int.h"

int ob__pg_space_delete_published(ob__db_t* db, int batch, int64_t* deleted) {
  /* Oldest publication first; an unpublished (or parked) row is never
  ** selected. The mark is taken from the rows the DELETE returns, in the
  ** same statement: one snapshot, exactly what went. SKIP LOCKED: another
  ** process reclaiming at the same moment takes other rows, not a wait.
  ** No index on published_at (SQLite's outbox_published_age is not in the
  ** PostgreSQL schema): a sort of the published rows, under pressure only. */
  static const char sql[] =
      "WITH d AS (DELETE FROM outbox_event WHERE (id, created_at) IN"
      " (SELECT id, created_at FROM outbox_event"
      " WHERE published_at IS NOT NULL ORDER BY published_at"
      " LIMIT $1::bigint FOR UPDATE SKIP LOCKED) RETURNING created_at),"
      " m AS (INSERT INTO retention_swept(id, outbox_created_before_ms)"
      " SELECT 1, max(created_at) FROM d HAVING count(*) > 0"
      " ON CONFLICT (id) DO UPDATE SET outbox_created_before_ms ="
      " GREATEST(retention_swept.outbox_created_before_ms,"
      " EXCLUDED.outbox_created_before_ms) RETURNING 1)"
      " SELECT 1 FROM d";  /* one row per row deleted */
  static const char* const one[] = {sql};
  ob__pg_params_t p;
  int rc;
  *deleted = 0;
  if (batch <= 0) return 0;
  ob__pg_params_init(&p);
  ob__pg_p_int(&p, batch);
  rc = ob__pg_run_own_tx(db, one, 1, &p, "reclaim published events");
  if (rc < 0) return rc;
  *deleted = rc;
  return 0;
}

int ob__pg_space_checkpoint(ob__db_t* db, int truncate) {
  /* SQLite's wal_checkpoint gives the WAL file back to the disk. A
  ** PostgreSQL server checkpoints and recycles its WAL on its own schedule
  ** (checkpoint_timeout, max_wal_size), and CHECKPOINT needs rights an
  ** application role should not hold: nothing to do. */
  (void)db;
  (void)truncate;
  return 0;
}
