/* SPDX-License-Identifier: Apache-2.0 */
/* The built-in payout ledger. */
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "storage/check_sql.h"
#include "storage/sqlite/sqlite_store.h"

int ob__sqlite_payout_insert(ob__db_t* db, const char* payout_id,
                      const char* payment_id, const char* merchant_id,
                      int64_t amount_minor, const char* currency,
                      const char* event_id, int64_t now,
                      char existing_event[OB_UUID_BUFLEN]) {
  int rc, inserted;
  sqlite3_stmt* st = ob__db_stmt(
      db, OB__PAY_INSERT,
      "INSERT INTO merchant_payout(id, source_payment_id, merchant_id,"
      " amount_minor, currency, source_event_id, created_at)"
      " VALUES (?1,?2,?3,?4,?5,?6,?7)"
      " ON CONFLICT(source_payment_id) DO NOTHING");
  if (st == NULL) return db->last_err;
  sqlite3_bind_text(st, 1, payout_id, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 2, payment_id, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 3, merchant_id, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 4, amount_minor);
  sqlite3_bind_text(st, 5, currency, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 6, event_id, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 7, now);
  /* No RETURNING: its ephemeral b-tree costs more than the insert (see
  ** ob__processed_claim); sqlite3_changes() is 1 if it inserted, 0 on the
  ** payment's conflict. merchant_payout has no triggers. */
  rc = sqlite3_step(st);
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  if (rc != SQLITE_DONE) return ob__db_fail(db, rc, "payout insert");
  inserted = sqlite3_changes(db->db) == 1;
  if (inserted) return 1;

  /* Already paid: name the event that paid it, for the failure reason. The
  ** lookup is off the hot path (conflicts are rare), so it is not cached. */
  if (existing_event != NULL) {
    sqlite3_stmt* q = NULL;
    existing_event[0] = '\0';
    rc = sqlite3_prepare_v2(db->db,
                            "SELECT source_event_id FROM merchant_payout"
                            " WHERE source_payment_id = ?1",
                            -1, &q, NULL);
    if (rc != SQLITE_OK) return ob__db_fail(db, rc, "payout lookup");
    sqlite3_bind_text(q, 1, payment_id, -1, SQLITE_STATIC);
    if (sqlite3_step(q) == SQLITE_ROW) {
      const unsigned char* t = sqlite3_column_text(q, 0);
      snprintf(existing_event, OB_UUID_BUFLEN, "%s", t ? (const char*)t : "");
    }
    sqlite3_finalize(q);
  }
  return 0;
}

int ob__sqlite_payout_stats(ob__db_t* db, ob_payout_stats_t* s) {
  int rc, began;
  memset(s, 0, sizeof *s);
  rc = ob__db_join_read(db, &began);
  if (rc < 0) return rc;
  rc = ob__stats_table_exists(db, "merchant_payout");
  if (rc == 0)
    rc = ob__db_seterr(db, OB_ENOTFOUND,
                       "no merchant_payout table: not a payout database");
  if (rc > 0)
    rc = ob__stats_scalar(db, "SELECT count(*) FROM merchant_payout", 0,
                          &s->payouts);
  ob__db_end_joined_read(db, began);
  if (rc < 0) memset(s, 0, sizeof *s);
  return rc < 0 ? rc : 0;
}

/* The payout invariants, one row per violation (see ob__check_queries). */
static const char* const payout_checks[] = {OB__CHECK_SQL_PAYOUT};

int ob__sqlite_payout_check(ob__db_t* db, void (*cb)(void* arg, const char* v),
                     void* arg) {
  return ob__check_queries(db, payout_checks,
                           sizeof payout_checks / sizeof payout_checks[0], cb,
                           arg);
}
