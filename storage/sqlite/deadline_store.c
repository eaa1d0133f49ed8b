/* SPDX-License-Identifier: Apache-2.0 */
/* Deadlines and a wall clock that jumps: finding rows computed on a clock
** ahead of this one, and moving their deadlines (store.h, "deadline_store";
** the rule is core/engine/deadlines.c's). Each statement reads one range of
** a partial index on clock_ref, which holds only rows that wait. */
#include <sqlite3.h>

#include "storage/sqlite/sqlite_store.h"

int ob__sqlite_deadlines_ahead(ob__db_t* db, int64_t now, int64_t ahead_ms,
                        int64_t* max_ref) {
  int rc;
  sqlite3_stmt* st = ob__db_stmt(
      db, OB__DL_AHEAD,
      "SELECT max(coalesce((SELECT max(clock_ref) FROM queue"
      " WHERE clock_ref > ?1), 0), coalesce((SELECT max(clock_ref)"
      " FROM outbox_event WHERE clock_ref > ?1), 0),"
      " coalesce((SELECT max(clock_ref) FROM effect WHERE clock_ref > ?1), 0))");
  if (st == NULL) return db->last_err;
  sqlite3_bind_int64(st, 1, now + ahead_ms);
  rc = sqlite3_step(st);
  *max_ref = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  return rc == SQLITE_ROW ? 0 : ob__db_fail(db, rc, "deadlines ahead");
}

/* Run sql (bound ?1 now, ?2 jump, ?3 ahead_ms when it uses it) for each
** table in one transaction; the rows changed. Relaxed durability: a
** re-base lost to a power cut is made again at the next open (the rows'
** clock_ref is still ahead), a forward shift lost with every process that
** held a lease. */
static int run_all(ob__db_t* db, const char* const* sql, int n, int64_t now,
                   int64_t jump, int64_t ahead_ms, const char* what) {
  int rc, changed = 0;
  rc = ob__sqlite_db_begin_relaxed(db);
  if (rc < 0) return rc;
  for (int i = 0; i < n; i++) {
    sqlite3_stmt* st = NULL;
    rc = sqlite3_prepare_v2(db->db, sql[i], -1, &st, NULL);
    if (rc != SQLITE_OK) {
      rc = ob__db_fail(db, rc, what);
      ob__sqlite_db_rollback(db);
      return rc;
    }
    sqlite3_bind_int64(st, 1, now);
    sqlite3_bind_int64(st, 2, jump);
    if (sqlite3_bind_parameter_count(st) >= 3)
      sqlite3_bind_int64(st, 3, ahead_ms);
    rc = ob__db_step_done(db, st, what);
    sqlite3_finalize(st);
    if (rc < 0) {
      ob__sqlite_db_rollback(db);
      return rc;
    }
    changed += rc;
  }
  rc = ob__sqlite_db_commit(db);
  return rc < 0 ? rc : changed;
}

/* min(?2, ?1 - clock_ref): the measured jump for a row written before it
** (exact), or, unmeasured (?2 = 0) or for a row ahead by more than the
** jump, the whole lead: the deadline is then its full remaining length
** from now. NULL deadlines stay NULL. */
#define BACK(d) d " = " d " + min(?2, ?1 - clock_ref)"

int ob__sqlite_deadlines_rebase(ob__db_t* db, int64_t now, int64_t jump,
                         int64_t ahead_ms) {
  static const char* const sql[] = {
      "UPDATE queue SET " BACK("available_at") ", " BACK("lease_until")
      ", clock_ref = ?1 WHERE clock_ref > ?1 + ?3",
      "UPDATE outbox_event SET " BACK("next_attempt_at") ", "
      BACK("claim_until") ", clock_ref = ?1 WHERE clock_ref > ?1 + ?3",
      "UPDATE effect SET " BACK("next_attempt_at") ", " BACK("lease_until")
      ", clock_ref = ?1 WHERE clock_ref > ?1 + ?3"};
  return run_all(db, sql, 3, now, jump > 0 ? 0 : jump, ahead_ms,
                 "re-base deadlines");
}

/* Rows computed before the jump (clock_ref <= ?1 - ?2) with a deadline
** after it; a deadline already passed stays passed. */
#define FWD(a, b)                                                        \
  a " = " a " + ?2, " b " = " b " + ?2, clock_ref = ?1"                  \
  " WHERE clock_ref <= ?1 - ?2 AND (" a " > ?1 - ?2 OR " b " > ?1 - ?2)"

int ob__sqlite_deadlines_shift(ob__db_t* db, int64_t now, int64_t jump) {
  static const char* const sql[] = {
      "UPDATE queue SET " FWD("available_at", "lease_until"),
      "UPDATE outbox_event SET " FWD("next_attempt_at", "claim_until"),
      "UPDATE effect SET " FWD("next_attempt_at", "lease_until")};
  if (jump <= 0) return 0;
  return run_all(db, sql, 3, now, jump, 0, "shift deadlines");
}
