/* SPDX-License-Identifier: Apache-2.0 */
/* The dedup guard, and the sources it keys foreign events on. */
#include <sqlite3.h>

#include "storage/sqlite/sqlite_store.h"

int ob__sqlite_processed_claim(ob__db_t* db, const char* consumer,
                        const char* message_id, int64_t source_ref,
                        const char* legacy_id, int64_t now) {
  int rc;
  sqlite3_stmt* st;
  /* A record of schema 9 or earlier (source_ref -1) of this id stands for
  ** any source. Probing first is no check-then-insert race: the handling
  ** transaction holds the write lock. Only files that still hold such
  ** records pass legacy_id. */
  if (legacy_id != NULL) {
    st = ob__db_stmt(db, OB__P_LEGACY_PROBE,
                     "SELECT 1 FROM processed_message WHERE consumer_name = ?1"
                     " AND message_id = ?2 AND source_ref = -1");
    if (st == NULL) return db->last_err;
    sqlite3_bind_text(st, 1, consumer, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, legacy_id, -1, SQLITE_STATIC);
    rc = sqlite3_step(st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (rc == SQLITE_ROW) return 0;
    if (rc != SQLITE_DONE) return ob__db_fail(db, rc, "dedup claim");
  }
  /* The key decides, atomically. No RETURNING and no INSERT ... SELECT
  ** from the same table: in SQLite each of those buffers its rows in an
  ** ephemeral b-tree, opened and begun for every message (about 12% of a
  ** batch's instructions, measured with callgrind). sqlite3_changes() says
  ** the same thing: 1 if this statement inserted the row, 0 on a conflict
  ** (processed_message has no triggers to add to it). */
  st = ob__db_stmt(
      db, OB__P_CLAIM,
      "INSERT INTO processed_message(consumer_name, message_id, source_ref,"
      " processed_at) VALUES (?1, ?2, ?3, ?4) ON CONFLICT DO NOTHING");
  if (st == NULL) return db->last_err;
  sqlite3_bind_text(st, 1, consumer, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 2, message_id, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 3, source_ref);
  sqlite3_bind_int64(st, 4, now);
  rc = sqlite3_step(st);
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  if (rc != SQLITE_DONE) return ob__db_fail(db, rc, "dedup claim");
  return sqlite3_changes(db->db) == 1;
}

int ob__sqlite_processed_has_legacy(ob__db_t* db, int* has) {
  sqlite3_stmt* st = NULL;
  int rc;
  /* At open only. Records of schema 9 or earlier are the oldest ones
  ** (retention deletes oldest first): the first few through the age index
  ** tell whether any is left. */
  rc = sqlite3_prepare_v2(db->db,
                          "SELECT count(*) FROM (SELECT source_ref FROM"
                          " processed_message INDEXED BY processed_message_age"
                          " ORDER BY processed_at LIMIT 64) WHERE"
                          " source_ref = -1",
                          -1, &st, NULL);
  if (rc != SQLITE_OK) return ob__db_fail(db, rc, "legacy dedup records");
  rc = sqlite3_step(st);
  *has = rc == SQLITE_ROW && sqlite3_column_int(st, 0) > 0;
  sqlite3_finalize(st);
  return rc == SQLITE_ROW ? 0 : ob__db_fail(db, rc, "legacy dedup records");
}

int ob__sqlite_event_source_ref(ob__db_t* db, const char* uri, int64_t* ref) {
  int rc;
  sqlite3_stmt* st = ob__db_stmt(
      db, OB__P_SOURCE_FIND, "SELECT id FROM event_source WHERE uri = ?1");
  if (st == NULL) return db->last_err;
  sqlite3_bind_text(st, 1, uri, -1, SQLITE_STATIC);
  rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) *ref = sqlite3_column_int64(st, 0);
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  if (rc == SQLITE_ROW) return 0;
  if (rc != SQLITE_DONE) return ob__db_fail(db, rc, "event source");
  /* New: inside the handling transaction, so it goes if that rolls back. */
  st = ob__db_stmt(db, OB__P_SOURCE_ADD,
                   "INSERT INTO event_source(uri) VALUES (?1) RETURNING id");
  if (st == NULL) return db->last_err;
  sqlite3_bind_text(st, 1, uri, -1, SQLITE_STATIC);
  rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    *ref = sqlite3_column_int64(st, 0);
    rc = sqlite3_step(st);
  }
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  if (rc != SQLITE_DONE) return ob__db_fail(db, rc, "event source");
  return 0;
}
