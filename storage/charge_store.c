/* The ChargeOrder module's business table: one charge per order. */
#include <sqlite3.h>

#include "storage/store.h"

int ob__charge_insert(ob__db_t* db, const char* order_id, int64_t amount_minor,
                      const char* currency, const char* provider_charge_id,
                      const char* effect_key, const char* message_id,
                      int64_t now) {
  int rc, inserted;
  sqlite3_stmt* st = ob__db_stmt(
      db, OB__CH_INSERT,
      "INSERT INTO charge(order_id, amount_minor, currency,"
      " provider_charge_id, effect_key, message_id, created_at)"
      " VALUES (?1,?2,?3,?4,?5,?6,?7)"
      " ON CONFLICT(order_id) DO NOTHING RETURNING 1");
  if (st == NULL) return db->last_err;
  sqlite3_bind_text(st, 1, order_id, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 2, amount_minor);
  sqlite3_bind_text(st, 3, currency, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 4, provider_charge_id, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 5, effect_key, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 6, message_id, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 7, now);
  rc = sqlite3_step(st);
  inserted = rc == SQLITE_ROW;
  if (rc == SQLITE_ROW) rc = sqlite3_step(st);
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  if (rc != SQLITE_DONE) return ob__db_fail(db, rc, "charge insert");
  return inserted;
}
