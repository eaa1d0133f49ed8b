/* The dedup guard. */
#include <sqlite3.h>

#include "storage/store.h"

int ob__processed_claim(ob__db_t* db, const char* consumer,
                        const char* message_id, int64_t now) {
  int rc, claimed;
  /* Never check-then-insert: the UNIQUE key decides, atomically. */
  sqlite3_stmt* st = ob__db_stmt(
      db, OB__P_CLAIM,
      "INSERT INTO processed_message(consumer_name, message_id, processed_at)"
      " VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING RETURNING 1");
  if (st == NULL) return db->last_err;
  sqlite3_bind_text(st, 1, consumer, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 2, message_id, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 3, now);
  rc = sqlite3_step(st);
  claimed = rc == SQLITE_ROW;
  if (rc == SQLITE_ROW) rc = sqlite3_step(st);
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  if (rc != SQLITE_DONE) return ob__db_fail(db, rc, "dedup claim");
  return claimed;
}
