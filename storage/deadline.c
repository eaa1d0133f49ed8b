/* SPDX-License-Identifier: Apache-2.0 */
/* Deadlines and a wall clock that jumps: finding rows computed on a clock
** ahead of this one, and moving their deadlines (store.h, "deadline_store";
** the rule is core/engine/deadlines.c's). Each statement reads one range of
** a partial index on clock_ref, which holds only rows that wait (of
** outbox_event, only unpublished ones).
**
** The one difference of the dialects: on PostgreSQL the leases
** (outbox_event.claim_until, effect.lease_until) are on the server's clock
** (OB__PG_SERVER_MS), which this host's jump did not touch, so they are
** not moved; on SQLite every lease is on the engine's clock. queue's
** lease_until moves on both (no claim sets it on PostgreSQL). */
#include "storage/sql.h"

int ob__deadlines_ahead(ob__db_t* db, int64_t now, int64_t ahead_ms,
                            int64_t* max_ref) {
  static const char sql[] =
      "SELECT max(m) FROM (SELECT max(clock_ref) AS m FROM queue WHERE"
      " clock_ref > ?1 UNION ALL SELECT max(clock_ref) FROM outbox_event"
      " WHERE clock_ref > ?1 UNION ALL SELECT max(clock_ref) FROM effect"
      " WHERE clock_ref > ?1) AS t";
  ob__sql_t s;
  int rc;
  ob__sql_prepare(db, &s, OB__DL_AHEAD, sql, "deadlines ahead");
  ob__sql_int(&s, 1, now + ahead_ms);
  *max_ref = 0;
  rc = ob__sql_int1(&s, max_ref);
  return rc == OB_ENOTFOUND ? 0 : rc;
}

/* The three UPDATEs (?1 now, ?2 jump, ?3 ahead_ms) in one transaction,
** relaxed: a re-base lost to a power cut is made again at the next open
** (the rows' clock_ref is still ahead), a forward shift lost with every
** process that held a lease. The rows changed. */
static int run_all(ob__db_t* db, const ob__sql_text_t* t, int64_t now,
                   int64_t jump, int64_t ahead_ms, const char* what) {
  const char* sql[3];
  const int64_t args[3] = {now, jump, ahead_ms};
  for (int i = 0; i < 3; i++)
    sql[i] = ob__sql_is_pg(db) ? t[i].pg : t[i].sqlite;
  return ob__sql_run_own_tx(db, sql, 3, args, 3, 1, what);
}

/* min(?2, ?1 - clock_ref): the measured jump for a row written before it
** (exact), or, unmeasured (?2 = 0) or for a row ahead by more than the
** jump, the whole lead: the deadline is then its full remaining length
** from now. NULL deadlines stay NULL. */
#define BACK(d)                                                           \
  d " = " d " + CASE WHEN ?2 < ?1 - clock_ref THEN ?2 ELSE ?1 - clock_ref" \
    " END"
#define REBASED ", clock_ref = ?1 WHERE clock_ref > ?1 + ?3"

int ob__deadlines_rebase(ob__db_t* db, int64_t now, int64_t jump,
                             int64_t ahead_ms) {
  static const char queue[] = "UPDATE queue SET " BACK("available_at") ", "
                              BACK("lease_until") REBASED;
  static const ob__sql_text_t sql[] = {
      {queue, queue},
      {"UPDATE outbox_event SET " BACK("next_attempt_at") ", "
       BACK("claim_until") REBASED,
       "UPDATE outbox_event SET " BACK("next_attempt_at") REBASED},
      {"UPDATE effect SET " BACK("next_attempt_at") ", " BACK("lease_until")
       REBASED,
       "UPDATE effect SET " BACK("next_attempt_at") REBASED}};
  return run_all(db, sql, now, jump > 0 ? 0 : jump, ahead_ms,
                 "re-base deadlines");
}

/* Rows computed before the jump (clock_ref <= ?1 - ?2) with a deadline
** after it; a deadline already passed stays passed. */
#define MOVE(a) a " = " a " + ?2"
#define BEFORE " clock_ref = ?1 WHERE clock_ref <= ?1 - ?2 AND "
#define AFTER(a) a " > ?1 - ?2"
#define FWD(a, b)                                                         \
  MOVE(a) ", " MOVE(b) "," BEFORE "(" AFTER(a) " OR " AFTER(b) ")"
#define FWD1(a) MOVE(a) "," BEFORE AFTER(a)

int ob__deadlines_shift(ob__db_t* db, int64_t now, int64_t jump) {
  static const char queue[] =
      "UPDATE queue SET " FWD("available_at", "lease_until");
  static const ob__sql_text_t sql[] = {
      {queue, queue},
      {"UPDATE outbox_event SET " FWD("next_attempt_at", "claim_until"),
       "UPDATE outbox_event SET " FWD1("next_attempt_at")},
      {"UPDATE effect SET " FWD("next_attempt_at", "lease_until"),
       "UPDATE effect SET " FWD1("next_attempt_at")}};
  if (jump <= 0) return 0;
  return run_all(db, sql, now, jump, 0, "shift deadlines");
}
