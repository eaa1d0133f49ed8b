/* SPDX-License-Identifier: Apache-2.0 */
/* The ChargeOrder module's business table: one charge per order. */
#include <sqlite3.h>
#include <string.h>

#include "storage/check_sql.h"
#include "storage/sqlite/sqlite_store.h"

int ob__sqlite_charge_insert(ob__db_t* db, const char* order_id, int64_t amount_minor,
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

/* A provider success recorded without a confirmed fence: a charge whose
** fence is missing, not confirmed or carries another reference, and every
** reference confirmed under more than one key beyond the first. */
#define UNFENCED_SQL                                                       \
  "SELECT (SELECT count(*) FROM charge c WHERE NOT EXISTS (SELECT 1 FROM"   \
  " effect f WHERE f.key = c.effect_key AND f.state = 'confirmed' AND"      \
  " f.reference = c.provider_charge_id)) + (SELECT coalesce(sum(n - 1), 0)" \
  " FROM (SELECT count(*) AS n FROM effect WHERE state = 'confirmed' AND"   \
  " reference IS NOT NULL GROUP BY reference HAVING count(*) > 1))"

int ob__sqlite_charge_stats(ob__db_t* db, ob_charge_stats_t* s) {
  int rc, began;
  memset(s, 0, sizeof *s);
  rc = ob__db_join_read(db, &began);
  if (rc < 0) return rc;
  rc = ob__stats_table_exists(db, "charge");
  if (rc == 0)
    rc = ob__db_seterr(db, OB_ENOTFOUND,
                       "no charge table: not a ChargeOrder database");
  if (rc > 0 &&
      (rc = ob__stats_scalar(db, "SELECT count(*) FROM charge", 0,
                             &s->charges)) == 0)
    rc = ob__stats_scalar(db, UNFENCED_SQL, 0, &s->unfenced_successes);
  ob__db_end_joined_read(db, began);
  if (rc < 0) memset(s, 0, sizeof *s);
  return rc < 0 ? rc : 0;
}

/* The ChargeOrder invariants: every recorded charge stands on a confirmed
** effect with its provider reference, and each charge has one OrderCharged
** event. (That a reference is confirmed once is the engine's own check.) */
static const char* const charge_checks[] = {OB__CHECK_SQL_CHARGE};

int ob__sqlite_charge_check(ob__db_t* db, void (*cb)(void* arg, const char* v),
                     void* arg) {
  return ob__check_queries(db, charge_checks,
                           sizeof charge_checks / sizeof charge_checks[0], cb,
                           arg);
}
