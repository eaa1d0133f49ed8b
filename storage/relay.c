/* SPDX-License-Identifier: Apache-2.0 */
/* The outbox relay's rows: claims with a token and a lease, the marks that
** check it, parking, and connectivity status. Several relay processes may
** share one database: every claim carries a token and a lease, and every
** mark checks the token.
**
** The claims are where the dialects differ. On SQLite one UPDATE ...
** RETURNING under the write lock, the lease on the engine's clock. On
** PostgreSQL, where relays on several hosts claim at once, the rows are
** locked with FOR UPDATE SKIP LOCKED first, so a concurrent claim skips
** them; once it commits, their lease makes them unpublishable to everyone
** else (READ COMMITTED re-checks a locked row's conditions on its newest
** version, so a claim that waited never takes a row just claimed). There
** the lease is on the server's clock (OB__PG_SERVER_MS): on the hosts'
** own, a host whose clock runs ahead would see every other relay's lease
** as run out and publish its rows a second time.
**
** The ordered rule needs no lock of its own: a row is a candidate only
** when no earlier unpublished row of its aggregate exists, so each
** aggregate has at most one candidate, its oldest unpublished row, and the
** claim (the write lock, the row lock) lets one relay take it. A published
** row never goes back; only a row inserted later with an earlier
** created_at could pass one over. */
#include <stdlib.h>
#include <string.h>

#include "core/util/assert.h"
#include "storage/sql.h"

void ob__relay_row_free(ob__relay_row_t* r) {
  free(r->id);
  free(r->causation_id);
  free(r->event_type);
  free(r->aggregate_id);
  free(r->payload);
  free(r->traceparent);
  free(r->tracestate);
  memset(r, 0, sizeof *r);
}

static int row_cmp(const void* a, const void* b) {
  const ob__relay_row_t* x = a;
  const ob__relay_row_t* y = b;
  if (x->created_at != y->created_at)
    return x->created_at < y->created_at ? -1 : 1;
  return strcmp(x->id, y->id);
}

/* The publishable set of table alias o; ?1 = now (the host's, for
** next_attempt_at), a lease on the engine's clock or the server's. */
#define PUBLISHABLE(now)                                                    \
  "o.published_at IS NULL AND o.parked_at IS NULL AND (o.claim_until IS"    \
  " NULL OR o.claim_until <= " now ") AND o.next_attempt_at <= ?1"
#define NO_EARLIER_OF_AGGREGATE                                             \
  " AND NOT EXISTS (SELECT 1 FROM outbox_event p"                           \
  " WHERE p.aggregate_id = o.aggregate_id AND p.published_at IS NULL"       \
  " AND (p.created_at < o.created_at OR (p.created_at = o.created_at"       \
  " AND p.id < o.id)))"
#define RETURNING                                                           \
  " RETURNING id, causation_id, event_type, aggregate_id, payload,"         \
  " created_at, attempt_count, traceparent, tracestate,"                    \
  " coalesce(wall_behind_ms, 0)"

/* The claim proper of the rows sel selects (id, created_at; ?4 the rows
** still wanted), ?2 the token. clock_ref is the claiming host's now on
** both: the row's next_attempt_at was judged due on that clock, and if it
** goes back before the row is published, re-basing moves next_attempt_at
** with it. On PostgreSQL the lease is its length (?3 - ?1) from the
** server's now, and the locking select runs once (MATERIALIZED), before
** the update. */
#define CLAIM_SQLITE(sel)                                                   \
  "UPDATE outbox_event SET claim_token = ?2, claim_until = ?3,"             \
  " clock_ref = ?1 WHERE id IN (" sel ")" RETURNING
#define CLAIM_PG(sel)                                                       \
  "WITH c AS MATERIALIZED (" sel " FOR UPDATE OF o SKIP LOCKED)"           \
  " UPDATE outbox_event SET claim_token = ?2, claim_until = "               \
  OB__PG_SERVER_MS " + (?3 - ?1), clock_ref = ?1 WHERE (id, created_at) IN" \
  " (SELECT id, created_at FROM c)" RETURNING
/* The oldest publishable rows (and cond): their ids on SQLite, the key
** (id, created_at) of the partitioned table on PostgreSQL. */
#define OLDEST(cols, now, cond)                                             \
  "SELECT " cols " FROM outbox_event o WHERE " PUBLISHABLE(now) cond        \
  " ORDER BY o.created_at, o.id LIMIT ?4"
#define PLAIN(cond)                                                         \
  {CLAIM_SQLITE(OLDEST("o.id", "?1", cond)),                                \
   CLAIM_PG(OLDEST("o.id, o.created_at", OB__PG_SERVER_MS, cond))}

/* The priority claim: one branch per priority type (?5 .. ?12; a slot
** bound to NULL matches nothing), each the oldest publishable rows of its
** type read in order from outbox_unpublished_type, then the oldest ?4 of
** them all. Unordered, a branch stops at ?4 rows. Ordered, a branch looks
** at the oldest ?13 (PRIORITY_WINDOW) publishable rows of its type and
** keeps those with no earlier unpublished row in their aggregate: without
** the window a type whose rows all wait behind their aggregates (a receipt
** before each sale) would be probed row by row, the whole backlog of it,
** every claim (0.16 s per claim on 100,000 rows, against 1 ms). A priority
** row beyond the window waits for the oldest-first fill, which frees the
** aggregates in front of it. On PostgreSQL the branches lock nothing (FOR
** UPDATE is not allowed over a UNION): the outer select locks the oldest
** ?4 of their rows, skipping those another claim holds, and re-checks
** them, so only rows claimed get locked. */
#define PRIORITY_WINDOW 64
#define BRANCH(now, k)                                                      \
  "SELECT * FROM (SELECT o.id, o.created_at FROM outbox_event o WHERE"      \
  " o.event_type = ?" k " AND " PUBLISHABLE(now) " ORDER BY o.created_at,"  \
  " o.id LIMIT ?4) AS b" k
#define BRANCH_ORDERED(now, k)                                              \
  "SELECT * FROM (SELECT o.id, o.created_at FROM (SELECT o.id,"             \
  " o.created_at, o.aggregate_id FROM outbox_event o WHERE o.event_type ="  \
  " ?" k " AND " PUBLISHABLE(now) " ORDER BY o.created_at, o.id LIMIT ?13)" \
  " AS o WHERE 1 = 1" NO_EARLIER_OF_AGGREGATE " ORDER BY o.created_at,"     \
  " o.id LIMIT ?4) AS b" k
#define UNION(B, now)                                                       \
  B(now, "5") " UNION ALL " B(now, "6") " UNION ALL " B(now, "7")           \
  " UNION ALL " B(now, "8") " UNION ALL " B(now, "9") " UNION ALL "         \
  B(now, "10") " UNION ALL " B(now, "11") " UNION ALL " B(now, "12")
#define PRIORITY(B)                                                         \
  {CLAIM_SQLITE("SELECT id FROM (" UNION(B, "?1") ") AS u ORDER BY"        \
                " created_at, id LIMIT ?4"),                                \
   CLAIM_PG("SELECT o.id, o.created_at FROM outbox_event o WHERE (o.id,"    \
            " o.created_at) IN (" UNION(B, OB__PG_SERVER_MS) ") AND "       \
            PUBLISHABLE(OB__PG_SERVER_MS) " ORDER BY o.created_at, o.id"    \
            " LIMIT ?4")}

_Static_assert(OB__RELAY_MAX_PRIORITY == 8, "one branch per priority slot");

/* Run one claim for the rest of max (the priority types, if any, and the
** window bound too), appending copies to rows[*n..max). 0 or < 0 (the
** copies made by this call freed, *n back where it was). */
static int claim_run(ob__db_t* db, int id, const ob__sql_text_t* t,
                     const char* token, int64_t now, int64_t lease_until,
                     int max, const char* const* priority, int npriority,
                     ob__relay_row_t* rows, int* n) {
  ob__sql_t s;
  int rc, first = *n;
  ob__sql_prepare2(db, &s, id, t, "relay claim");
  ob__sql_int(&s, 1, now);
  ob__sql_text(&s, 2, token);
  ob__sql_int(&s, 3, lease_until);
  ob__sql_int(&s, 4, max - first);
  if (priority != NULL) {
    for (int i = 0; i < OB__RELAY_MAX_PRIORITY; i++)
      ob__sql_text(&s, 5 + i, i < npriority ? priority[i] : NULL);
    ob__sql_int(&s, 13, PRIORITY_WINDOW);
  }
  while ((rc = ob__sql_step(&s)) > 0) {
    ob__relay_row_t* r = &rows[*n];
    int bad = 0;
    OB__ASSERT(*n < max);  /* LIMIT ?4 */
    if (*n == max) break;
    memset(r, 0, sizeof *r);
    bad |= ob__sql_col_dup(&s, 0, 0, &r->id, NULL);
    bad |= ob__sql_col_dup(&s, 1, 0, &r->causation_id, NULL);
    bad |= ob__sql_col_dup(&s, 2, 0, &r->event_type, NULL);
    bad |= ob__sql_col_dup(&s, 3, 0, &r->aggregate_id, NULL);
    bad |= ob__sql_col_dup(&s, 4, 0, &r->payload, &r->payload_len);
    r->created_at = ob__sql_col_int(&s, 5);
    r->attempt_count = (int)ob__sql_col_int(&s, 6);
    bad |= ob__sql_col_dup(&s, 7, 0, &r->traceparent, NULL);
    bad |= ob__sql_col_dup(&s, 8, 0, &r->tracestate, NULL);
    r->wall_behind_ms = ob__sql_col_int(&s, 9);
    (*n)++;
    /* The NOT NULL columns are never NULL: a NULL copy is out of memory. */
    if (bad || !r->id || !r->causation_id || !r->event_type ||
        !r->aggregate_id || !r->payload) {
      rc = ob__db_seterr(db, OB_ENOMEM, "relay claim: out of memory");
      break;
    }
  }
  ob__sql_finish(&s);
  if (rc < 0)
    while (*n > first) ob__relay_row_free(&rows[--*n]);
  return rc < 0 ? rc : 0;
}

int ob__relay_claim(ob__db_t* db, const char* token, int64_t now,
                        int64_t lease_until, int max, int ordered,
                        const char* const* priority, int npriority,
                        ob__relay_row_t* rows) {
  static const ob__sql_text_t plain[2] = {PLAIN(""),
                                          PLAIN(NO_EARLIER_OF_AGGREGATE)};
  static const ob__sql_text_t prio[2] = {PRIORITY(BRANCH),
                                         PRIORITY(BRANCH_ORDERED)};
  int rc, n = 0;
  OB__ASSERT(npriority >= 0 && npriority <= OB__RELAY_MAX_PRIORITY);
  if (max < 1) return 0;
  /* A lost claim only delays a row until its lease would have expired. */
  if ((rc = ob__db_begin_relaxed(db)) < 0) return rc;
  if (npriority > 0) {
    /* The priority rows first. Whatever they leave of max goes to the
    ** oldest rows of any type below: every publishable priority row is in
    ** hand by then (this transaction sees its own claims), so that claim
    ** cannot pass one over. */
    rc = claim_run(db,
                   ordered ? OB__R_CLAIM_PRIORITY_ORDERED
                           : OB__R_CLAIM_PRIORITY,
                   &prio[ordered != 0], token, now, lease_until, max,
                   priority, npriority, rows, &n);
  }
  if (rc == 0 && n < max)
    rc = claim_run(db, ordered ? OB__R_CLAIM_ORDERED : OB__R_CLAIM,
                   &plain[ordered != 0], token, now, lease_until, max, NULL,
                   0, rows, &n);
  if (rc == 0)
    rc = ob__db_commit(db);
  else
    ob__db_rollback(db);
  if (rc < 0) {
    while (n > 0) ob__relay_row_free(&rows[--n]);
    return rc;
  }
  /* RETURNING gives no order; a batch goes out oldest first (what a FIFO
  ** queue keeps per message group). */
  qsort(rows, (size_t)n, sizeof *rows, row_cmp);
  return n;
}

int ob__relay_mark_published(ob__db_t* db, const char* id,
                                 const char* token, int64_t now) {
  static const char sql[] =
      "UPDATE outbox_event SET published_at = ?3, claim_token = NULL,"
      " claim_until = NULL, last_error = NULL, clock_ref = NULL"
      " WHERE id = ?1 AND claim_token = ?2 AND published_at IS NULL";
  ob__sql_t s;
  ob__sql_prepare(db, &s, OB__R_MARK_PUBLISHED, sql, "relay mark published");
  ob__sql_text(&s, 1, id);
  ob__sql_text(&s, 2, token);
  ob__sql_int(&s, 3, now);
  return ob__sql_done(&s);
}

int ob__relay_mark_failed(ob__db_t* db, const char* id, const char* token,
                              int64_t next_attempt_at, const char* error,
                              int park_after, int64_t now) {
  /* attempt_count on the right is the value before this update. */
  static const char sql[] =
      "UPDATE outbox_event SET attempt_count = attempt_count + 1,"
      " next_attempt_at = ?3, last_error = ?4, claim_token = NULL,"
      " claim_until = NULL, clock_ref = CASE WHEN ?3 > ?6 THEN ?6 END,"
      " parked_at = CASE WHEN ?5 > 0 AND"
      " attempt_count + 1 >= ?5 THEN ?6 ELSE NULL END"
      " WHERE id = ?1 AND claim_token = ?2 AND published_at IS NULL";
  ob__sql_t s;
  ob__sql_prepare(db, &s, OB__R_MARK_FAILED, sql, "relay mark failed");
  ob__sql_text(&s, 1, id);
  ob__sql_text(&s, 2, token);
  ob__sql_int(&s, 3, next_attempt_at);
  ob__sql_text(&s, 4, error);
  ob__sql_int(&s, 5, park_after);
  ob__sql_int(&s, 6, now);
  return ob__sql_done(&s);
}

/* One write statement (?1 text, or else ?1 value) in a transaction of its
** own: the rows changed, or < 0. */
static int own_tx(ob__db_t* db, const char* sql, const char* text,
                  int64_t value, const char* what) {
  ob__sql_t s;
  int rc, n;
  if ((rc = ob__db_begin(db)) < 0) return rc;
  ob__sql_prepare(db, &s, OB__SQL_ONCE, sql, what);
  if (text)
    ob__sql_text(&s, 1, text);
  else
    ob__sql_int(&s, 1, value);
  if ((n = ob__sql_done(&s)) < 0) {
    ob__db_rollback(db);
    return n;
  }
  return (rc = ob__db_commit(db)) < 0 ? rc : n;
}

int ob__relay_release(ob__db_t* db, const char* token) {
  /* A claimed row was due: nothing of it waits. */
  return own_tx(db,
                "UPDATE outbox_event SET claim_token = NULL, claim_until ="
                " NULL, clock_ref = NULL WHERE claim_token = ?1",
                token, 0, "relay release");
}

int ob__relay_retry_parked(ob__db_t* db, int64_t now) {
  return own_tx(db,
                "UPDATE outbox_event SET parked_at = NULL, attempt_count = 0,"
                " next_attempt_at = ?1, clock_ref = NULL"
                " WHERE parked_at IS NOT NULL AND published_at IS NULL",
                NULL, now, "outbox retry-parked");
}

int ob__relay_backlog(ob__db_t* db, int64_t* unpublished,
                          int64_t* parked) {
  static const char sql[] =
      "SELECT count(*), count(parked_at) FROM outbox_event"
      " WHERE published_at IS NULL";
  ob__sql_t s;
  int rc;
  ob__sql_prepare(db, &s, OB__R_BACKLOG, sql, "outbox backlog");
  if ((rc = ob__sql_step(&s)) > 0) {
    *unpublished = ob__sql_col_int(&s, 0);
    *parked = ob__sql_col_int(&s, 1);
  }
  ob__sql_finish(&s);
  if (rc == 0) return ob__db_seterr(db, OB_EDB, "outbox backlog: no answer");
  return rc < 0 ? rc : 0;
}

int ob__relay_pending(ob__db_t* db, int64_t now, int due_only) {
  static const char sql[] =
      "SELECT CASE WHEN EXISTS (SELECT 1 FROM outbox_event WHERE published_at"
      " IS NULL AND parked_at IS NULL AND (?2 = 0 OR next_attempt_at <= ?1))"
      " THEN 1 ELSE 0 END";
  ob__sql_t s;
  int64_t v = 0;
  int rc;
  ob__sql_prepare(db, &s, OB__R_PENDING, sql, "outbox pending");
  ob__sql_int(&s, 1, now);
  ob__sql_int(&s, 2, due_only != 0);
  rc = ob__sql_int1(&s, &v);
  if (rc == OB_ENOTFOUND)
    return ob__db_seterr(db, OB_EDB, "outbox pending: no answer");
  return rc < 0 ? rc : v != 0;
}

/* The earliest a row can be published: its next attempt, or its lease's
** end (on PostgreSQL brought to the caller's clock: now plus what is left
** of it on the server's). */
#define NEXT_DUE(lease_end, cond)                                           \
  "SELECT min(CASE WHEN " lease_end " > o.next_attempt_at THEN " lease_end  \
  " ELSE o.next_attempt_at END) FROM outbox_event o WHERE"                  \
  " o.published_at IS NULL AND o.parked_at IS NULL" cond
#define LEASE_END_PG                                                        \
  "coalesce(?1 + (o.claim_until - " OB__PG_SERVER_MS "), 0)"

int ob__relay_next_due(ob__db_t* db, int64_t now, int ordered,
                           int64_t* at) {
  static const ob__sql_text_t sql[2] = {
      {NEXT_DUE("coalesce(o.claim_until, 0)", ""),
       NEXT_DUE(LEASE_END_PG, "")},
      {NEXT_DUE("coalesce(o.claim_until, 0)", NO_EARLIER_OF_AGGREGATE),
       NEXT_DUE(LEASE_END_PG, NO_EARLIER_OF_AGGREGATE)}};
  ob__sql_t s;
  ob__sql_prepare2(db, &s, ordered ? OB__R_NEXT_DUE_ORDERED : OB__R_NEXT_DUE,
                   &sql[ordered != 0], "relay next due");
  ob__sql_int(&s, 1, now);
  /* NULL (nothing waiting) is OB_ENOTFOUND. */
  return ob__sql_int1(&s, at);
}

int ob__relay_status_set(ob__db_t* db, const char* name, int online,
                             int64_t last_publish_at, const char* last_error,
                             int64_t now) {
  static const char sql[] =
      "INSERT INTO relay_status(name, online, last_publish_at, last_error,"
      " updated_at) VALUES (?1, ?2, nullif(?3, 0), ?4, ?5)"
      " ON CONFLICT (name) DO UPDATE SET online = excluded.online,"
      " last_publish_at = coalesce(excluded.last_publish_at,"
      " relay_status.last_publish_at), last_error = excluded.last_error,"
      " updated_at = excluded.updated_at";
  ob__sql_t s;
  int rc;
  ob__sql_prepare(db, &s, OB__R_STATUS, sql, "relay status");
  ob__sql_text(&s, 1, name);
  ob__sql_int(&s, 2, online);
  ob__sql_int(&s, 3, last_publish_at);
  ob__sql_text(&s, 4, last_error);
  ob__sql_int(&s, 5, now);
  rc = ob__sql_done(&s);
  return rc < 0 ? rc : 0;
}
