/* SPDX-License-Identifier: Apache-2.0 */
/* Deadlines and a wall clock that jumps, on PostgreSQL: finding rows
** computed on a clock ahead of this one, and moving their deadlines
** (store.h, "deadline_store"; the rule is core/engine/deadlines.c's). Each
** statement reads one range of a partial index on clock_ref, which holds
** only rows that wait (of outbox_event, only unpublished ones: a published
** row has no deadline, so no clock_ref).
**
** Unlike SQLite's, the leases (outbox_event.claim_until, effect.lease_until)
** are not moved: they are on the server's clock (OB__PG_SERVER_MS), which
** this host's jump did not touch. queue.lease_until is moved as on SQLite
** (no claim sets it on either backend: the queue's claims are row locks). */
#include "storage/postgresql/pg_int.h"

/* LEAST($2, $1 - clock_ref): the measured jump for a row written before it
** (exact), or, unmeasured ($2 = 0) or for a row ahead by more than the
** jump, the whole lead: the deadline is then its full remaining length
** from now. NULL deadlines stay NULL. */
#define BACK(d) d " = " d " + LEAST($2::bigint, $1::bigint - clock_ref)"
#define BACK_WHERE                                                        \
  ", clock_ref = $1::bigint WHERE clock_ref > $1::bigint + $3::bigint"

int ob__pg_deadlines_rebase(ob__db_t* db, int64_t now, int64_t jump,
                            int64_t ahead_ms) {
  static const char queue[] =
      "UPDATE queue SET " BACK("available_at") ", " BACK("lease_until")
      BACK_WHERE;
  static const char outbox[] =
      "UPDATE outbox_event SET " BACK("next_attempt_at") BACK_WHERE;
  static const char effect[] =
      "UPDATE effect SET " BACK("next_attempt_at") BACK_WHERE;
  static const char* const sql[] = {queue, outbox, effect};
  ob__pg_params_t p;
  ob__pg_params_init(&p);
  ob__pg_p_int(&p, now);
  ob__pg_p_int(&p, jump > 0 ? 0 : jump);
  ob__pg_p_int(&p, ahead_ms);
  return ob__pg_run_own_tx(db, sql, 3, &p, "re-base deadlines");
}

/* Rows computed before the jump (clock_ref <= $1 - $2) with a deadline
** after it; a deadline already passed stays passed. */
#define FWD1(a)                                                           \
  a " = " a " + $2::bigint, clock_ref = $1::bigint WHERE clock_ref <="    \
  " $1::bigint - $2::bigint AND " a " > $1::bigint - $2::bigint"
#define FWD(a, b)                                                         \
  a " = " a " + $2::bigint, " b " = " b " + $2::bigint,"                  \
  " clock_ref = $1::bigint WHERE clock_ref <= $1::bigint - $2::bigint"    \
  " AND (" a " > $1::bigint - $2::bigint OR " b " > $1::bigint -"         \
  " $2::bigint)"

int ob__pg_deadlines_shift(ob__db_t* db, int64_t now, int64_t jump) {
  static const char queue[] =
      "UPDATE queue SET " FWD("available_at", "lease_until");
  static const char outbox[] =
      "UPDATE outbox_event SET " FWD1("next_attempt_at");
  static const char effect[] =
      "UPDATE effect SET " FWD1("next_attempt_at");
  static const char* const sql[] = {queue, outbox, effect};
  ob__pg_params_t p;
  if (jump <= 0) return 0;
  ob__pg_params_init(&p);
  ob__pg_p_int(&p, now);
  ob__pg_p_int(&p, jump);
  return ob__pg_run_own_tx(db, sql, 3, &p, "shift deadlines");
}
