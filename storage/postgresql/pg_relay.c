/* SPDX-License-Identifier: Apache-2.0 */
/* The outbox relay's rows on PostgreSQL: claims with a token and a lease,
** the marks that check it, parking, and connectivity status.
**
** Several relay processes on several hosts may claim at once. A claim
** locks the rows it takes with FOR UPDATE SKIP LOCKED, so a concurrent
** claim skips them; once it commits, their lease makes them unpublishable
** to everyone else (READ COMMITTED re-checks a locked row's conditions on
** its newest version, so a claim that waited never takes a row just
** claimed). The lease is on the server's clock (OB__PG_SERVER_MS): on the
** hosts' own, a host whose clock runs ahead would see every other relay's
** lease as run out and publish its rows a second time.
**
** The ordered rule needs no lock of its own: a row is a candidate only
** when no earlier unpublished row of its aggregate exists, so each
** aggregate has at most one candidate, its oldest unpublished row, and the
** row lock lets one claim take it. A published row never goes back, so
** two snapshots cannot name two different oldest rows of one aggregate
** while the first is still unpublished; only a row inserted later with an
** earlier created_at could, as on SQLite. (An advisory lock per aggregate
** would last only the claim's transaction, not the row's flight, so it
** would add nothing to that.) */
#include <stdlib.h>
#include <string.h>

#include "core/util/assert.h"
#include "storage/postgresql/pg_int.h"

static int row_cmp(const void* a, const void* b) {
  const ob__relay_row_t* x = a;
  const ob__relay_row_t* y = b;
  if (x->created_at != y->created_at)
    return x->created_at < y->created_at ? -1 : 1;
  return strcmp(x->id, y->id);
}

/* The publishable set of table alias o, shared by the claims. $1 = now
** (the host's, for next_attempt_at); a lease is on the server's clock. */
#define PUBLISHABLE                                                         \
  "o.published_at IS NULL AND o.parked_at IS NULL AND (o.claim_until IS"    \
  " NULL OR o.claim_until <= " OB__PG_SERVER_MS ")"
#define DUE " AND o.next_attempt_at <= $1::bigint"
#define NO_EARLIER_OF_AGGREGATE                                             \
  " AND NOT EXISTS (SELECT 1 FROM outbox_event p"                           \
  " WHERE p.aggregate_id = o.aggregate_id AND p.published_at IS NULL"       \
  " AND (p.created_at < o.created_at OR (p.created_at = o.created_at"       \
  " AND p.id < o.id)))"

/* The claim proper: c holds the (id, created_at) keys taken, locked. The
** lease is its length ($3 - $1) from the server's now. clock_ref is the
** claiming host's now, as on SQLite: the row's next_attempt_at was judged
** due on that clock, and if it goes back a day before the row is
** published (a relay killed holding it, restarted with its clock set
** back), re-basing moves next_attempt_at back with it; the lease it
** leaves alone. */
#define CLAIM_UPDATE                                                        \
  " UPDATE outbox_event SET claim_token = $2::text, claim_until = "         \
  OB__PG_SERVER_MS " + ($3::bigint - $1::bigint), clock_ref = $1::bigint"   \
  " WHERE (id, created_at) IN"                                              \
  " (SELECT id, created_at FROM c) RETURNING id, causation_id,"             \
  " event_type, aggregate_id, payload, created_at, attempt_count,"          \
  " traceparent, tracestate, coalesce(wall_behind_ms, 0)"

/* MATERIALIZED: the locking select runs once, before the update. */
#define CLAIM_PLAIN(cond)                                                   \
  "WITH c AS MATERIALIZED (SELECT o.id, o.created_at FROM outbox_event o"   \
  " WHERE " PUBLISHABLE DUE cond " ORDER BY o.created_at, o.id"             \
  " LIMIT $4::bigint FOR UPDATE OF o SKIP LOCKED)" CLAIM_UPDATE

/* The priority claim: one branch per priority type ($5 .. $12; a slot
** bound to NULL matches nothing), each the oldest publishable rows of its
** type read in order from outbox_unpublished_type. Unordered, a branch
** stops at max rows. Ordered, a branch looks at the oldest $13
** (PRIORITY_WINDOW) publishable rows of its type and keeps those with no
** earlier unpublished row in their aggregate: the cost stays bounded when
** the type's rows all wait behind their aggregates (a receipt before each
** sale). A priority row beyond the window waits for the oldest-first
** fill, which frees the aggregates in front of it.
**
** The branches lock nothing (FOR UPDATE is not allowed over a UNION):
** the outer select locks the oldest max of their rows, skipping those
** another claim holds, and re-checks them, so only rows claimed get
** locked. */
#define PRIORITY_WINDOW 64
#define PRIORITY_BRANCH(k)                                                  \
  "SELECT * FROM (SELECT o.id, o.created_at FROM outbox_event o"            \
  " WHERE o.event_type = $" k "::text AND " PUBLISHABLE DUE                 \
  " ORDER BY o.created_at, o.id LIMIT $4::bigint) b" k
#define PRIORITY_BRANCH_ORDERED(k)                                          \
  "SELECT * FROM (SELECT o.id, o.created_at FROM (SELECT o.id,"             \
  " o.created_at, o.aggregate_id FROM outbox_event o WHERE o.event_type ="  \
  " $" k "::text AND " PUBLISHABLE DUE " ORDER BY o.created_at, o.id"       \
  " LIMIT $13::bigint) o WHERE TRUE" NO_EARLIER_OF_AGGREGATE                \
  " ORDER BY o.created_at, o.id LIMIT $4::bigint) b" k
#define PRIORITY_UNION(B)                                                   \
  B("5") " UNION ALL " B("6") " UNION ALL " B("7") " UNION ALL " B("8")     \
  " UNION ALL " B("9") " UNION ALL " B("10") " UNION ALL " B("11")          \
  " UNION ALL " B("12")
#define CLAIM_PRIORITY(B)                                                   \
  "WITH c AS MATERIALIZED (SELECT o.id, o.created_at FROM outbox_event o"   \
  " WHERE (o.id, o.created_at) IN (" PRIORITY_UNION(B) ") AND "             \
  PUBLISHABLE DUE " ORDER BY o.created_at, o.id LIMIT $4::bigint"           \
  " FOR UPDATE OF o SKIP LOCKED)" CLAIM_UPDATE

_Static_assert(OB__RELAY_MAX_PRIORITY == 8, "one branch per priority slot");

/* The parameters every claim statement starts with: $1 now, $2 token,
** $3 lease_until, $4 the rows still wanted. */
static void claim_params(ob__pg_params_t* p, const char* token, int64_t now,
                         int64_t lease_until, int left) {
  ob__pg_params_init(p);
  ob__pg_p_int(p, now);
  ob__pg_p_text(p, token);
  ob__pg_p_int(p, lease_until);
  ob__pg_p_int(p, left);
}

/* Run one claim statement for the rest of max (p from claim_params, with
** the statement's own parameters after), appending copies to
** rows[*n..max). 0 or < 0 (the copies made by this call freed, *n back
** where it was). */
static int claim_run(ob__db_t* db, const char* sql, const ob__pg_params_t* p,
                     int max, ob__relay_row_t* rows, int* n) {
  PGresult* res;
  int got, first = *n;
  res = ob__pg_run(db, sql, p, "relay claim");
  if (res == NULL) return db->last_err ? db->last_err : OB_EDB;
  got = PQntuples(res);
  OB__ASSERT(got <= max - first);  /* LIMIT $4 */
  if (got > max - first) got = max - first;
  for (int i = 0; i < got; i++) {
    ob__relay_row_t* r = &rows[*n];
    int oom = 0;
    memset(r, 0, sizeof *r);
    r->id = ob__pg_dup(res, i, 0, NULL, &oom);
    r->causation_id = ob__pg_dup(res, i, 1, NULL, &oom);
    r->event_type = ob__pg_dup(res, i, 2, NULL, &oom);
    r->aggregate_id = ob__pg_dup(res, i, 3, NULL, &oom);
    r->payload = ob__pg_dup(res, i, 4, &r->payload_len, &oom);
    r->created_at = ob__pg_int(res, i, 5);
    r->attempt_count = (int)ob__pg_int(res, i, 6);
    r->traceparent = ob__pg_dup(res, i, 7, NULL, &oom);
    r->tracestate = ob__pg_dup(res, i, 8, NULL, &oom);
    r->wall_behind_ms = ob__pg_int(res, i, 9);
    (*n)++;
    /* The NOT NULL columns are never NULL: a NULL copy is out of memory. */
    if (oom || !r->id || !r->causation_id || !r->event_type ||
        !r->aggregate_id || !r->payload) {
      PQclear(res);
      while (*n > first) ob__relay_row_free(&rows[--*n]);
      return ob__db_seterr(db, OB_ENOMEM, "relay claim: out of memory");
    }
  }
  PQclear(res);
  return 0;
}

int ob__pg_relay_claim(ob__db_t* db, const char* token, int64_t now,
                       int64_t lease_until, int max, int ordered,
                       const char* const* priority, int npriority,
                       ob__relay_row_t* rows) {
  static const char plain[] = CLAIM_PLAIN("");
  static const char plain_ordered[] = CLAIM_PLAIN(NO_EARLIER_OF_AGGREGATE);
  static const char prio[] = CLAIM_PRIORITY(PRIORITY_BRANCH);
  static const char prio_ordered[] = CLAIM_PRIORITY(PRIORITY_BRANCH_ORDERED);
  int rc, n = 0;

  OB__ASSERT(npriority >= 0 && npriority <= OB__RELAY_MAX_PRIORITY);
  if (max < 1) return 0;
  /* A lost claim only delays a row until its lease would have expired. */
  rc = ob__pg_db_begin_relaxed(db);
  if (rc < 0) return rc;
  if (npriority > 0) {
    /* The priority rows first. Whatever they leave of max goes to the
    ** oldest rows of any type below: every publishable priority row is in
    ** hand by then (this transaction sees its own claims), so that claim
    ** cannot pass one over. */
    ob__pg_params_t p;
    claim_params(&p, token, now, lease_until, max);
    for (int i = 0; i < OB__RELAY_MAX_PRIORITY; i++)
      ob__pg_p_text(&p, i < npriority ? priority[i] : NULL);
    if (ordered) ob__pg_p_int(&p, PRIORITY_WINDOW);
    rc = claim_run(db, ordered ? prio_ordered : prio, &p, max, rows, &n);
  }
  if (rc == 0 && n < max) {
    ob__pg_params_t p;
    claim_params(&p, token, now, lease_until, max - n);
    rc = claim_run(db, ordered ? plain_ordered : plain, &p, max, rows, &n);
  }
  if (rc == 0) rc = ob__pg_db_commit(db);
  else ob__pg_db_rollback(db);
  if (rc < 0) {
    for (int i = 0; i < n; i++) ob__relay_row_free(&rows[i]);
    return rc;
  }
  /* RETURNING gives no order; a batch goes out oldest first (what a FIFO
  ** queue keeps per message group). */
  qsort(rows, (size_t)n, sizeof *rows, row_cmp);
  return n;
}

int ob__pg_relay_mark_published(ob__db_t* db, const char* id,
                                const char* token, int64_t now) {
  static const char sql[] =
      "UPDATE outbox_event SET published_at = $3::bigint, claim_token = NULL,"
      " claim_until = NULL, last_error = NULL, clock_ref = NULL"
      " WHERE id = $1::text AND claim_token = $2::text"
      " AND published_at IS NULL";
  ob__pg_params_t p;
  ob__pg_params_init(&p);
  ob__pg_p_text(&p, id);
  ob__pg_p_text(&p, token);
  ob__pg_p_int(&p, now);
  return ob__pg_run_done(db, sql, &p, "relay mark published");
}

int ob__pg_relay_mark_failed(ob__db_t* db, const char* id, const char* token,
                             int64_t next_attempt_at, const char* error,
                             int park_after, int64_t now) {
  /* attempt_count on the right is the value before this update. */
  static const char sql[] =
      "UPDATE outbox_event SET attempt_count = attempt_count + 1,"
      " next_attempt_at = $3::bigint, last_error = $4::text,"
      " claim_token = NULL, claim_until = NULL, clock_ref = CASE WHEN"
      " $3::bigint > $6::bigint THEN $6::bigint END, parked_at = CASE WHEN"
      " $5::bigint > 0 AND attempt_count + 1 >= $5::bigint THEN $6::bigint"
      " ELSE NULL END"
      " WHERE id = $1::text AND claim_token = $2::text"
      " AND published_at IS NULL";
  ob__pg_params_t p;
  ob__pg_params_init(&p);
  ob__pg_p_text(&p, id);
  ob__pg_p_text(&p, token);
  ob__pg_p_int(&p, next_attempt_at);
  ob__pg_p_text(&p, error);
  ob__pg_p_int(&p, park_after);
  ob__pg_p_int(&p, now);
  return ob__pg_run_done(db, sql, &p, "relay mark failed");
}

int ob__pg_relay_release(ob__db_t* db, const char* token) {
  /* A claimed row was due: nothing of it waits. */
  static const char sql[] =
      "UPDATE outbox_event SET claim_token = NULL, claim_until = NULL,"
      " clock_ref = NULL WHERE claim_token = $1::text";
  ob__pg_params_t p;
  ob__pg_params_init(&p);
  static const char* const one[] = {sql};
  ob__pg_p_text(&p, token);
  return ob__pg_run_own_tx(db, one, 1, &p, "relay release");
}

int ob__pg_relay_retry_parked(ob__db_t* db, int64_t now) {
  static const char sql[] =
      "UPDATE outbox_event SET parked_at = NULL, attempt_count = 0,"
      " next_attempt_at = $1::bigint, clock_ref = NULL"
      " WHERE parked_at IS NOT NULL AND published_at IS NULL";
  ob__pg_params_t p;
  ob__pg_params_init(&p);
  static const char* const one[] = {sql};
  ob__pg_p_int(&p, now);
  return ob__pg_run_own_tx(db, one, 1, &p, "outbox retry-parked");
}

int ob__pg_relay_backlog(ob__db_t* db, int64_t* unpublished,
                         int64_t* parked) {
  static const char sql[] =
      "SELECT count(*), count(parked_at) FROM outbox_event"
      " WHERE published_at IS NULL";
  PGresult* res = ob__pg_run(db, sql, NULL, "outbox backlog");
  if (res == NULL) return db->last_err ? db->last_err : OB_EDB;
  *unpublished = ob__pg_int(res, 0, 0);
  *parked = ob__pg_int(res, 0, 1);
  PQclear(res);
  return 0;
}

int ob__pg_relay_pending(ob__db_t* db, int64_t now, int due_only) {
  /* ::int: a boolean's text form is t or f. */
  static const char sql[] =
      "SELECT (EXISTS (SELECT 1 FROM outbox_event WHERE published_at IS NULL"
      " AND parked_at IS NULL AND ($2::bigint = 0 OR"
      " next_attempt_at <= $1::bigint)))::int";
  ob__pg_params_t p;
  int64_t v = 0;
  int rc;
  ob__pg_params_init(&p);
  ob__pg_p_int(&p, now);
  ob__pg_p_int(&p, due_only != 0);
  rc = ob__pg_run_int(db, sql, &p, "outbox pending", &v);
  if (rc == OB_ENOTFOUND)
    return ob__db_seterr(db, OB_EDB, "outbox pending: no answer");
  return rc < 0 ? rc : v != 0;
}

int ob__pg_relay_next_due(ob__db_t* db, int64_t now, int ordered,
                          int64_t* at) {
  /* A lease's end comes back on the caller's clock: now plus what is left
  ** of it on the server's. */
#define LEASE_END                                                           \
  "coalesce($1::bigint + (o.claim_until - " OB__PG_SERVER_MS "), 0)"
  static const char sql[] =
      "SELECT min(GREATEST(o.next_attempt_at, " LEASE_END "))"
      " FROM outbox_event o WHERE published_at IS NULL"
      " AND parked_at IS NULL";
  static const char sql_ordered[] =
      "SELECT min(GREATEST(o.next_attempt_at, " LEASE_END "))"
      " FROM outbox_event o WHERE o.published_at IS NULL"
      " AND o.parked_at IS NULL" NO_EARLIER_OF_AGGREGATE;
#undef LEASE_END
  ob__pg_params_t p;
  ob__pg_params_init(&p);
  ob__pg_p_int(&p, now);
  /* NULL (nothing waiting) is OB_ENOTFOUND. */
  return ob__pg_run_int(db, ordered ? sql_ordered : sql, &p,
                        "relay next due", at);
}

int ob__pg_relay_status_set(ob__db_t* db, const char* name, int online,
                            int64_t last_publish_at, const char* last_error,
                            int64_t now) {
  static const char sql[] =
      "INSERT INTO relay_status(name, online, last_publish_at, last_error,"
      " updated_at) VALUES ($1::text, $2::bigint, nullif($3::bigint, 0),"
      " $4::text, $5::bigint) ON CONFLICT (name) DO UPDATE SET"
      " online = EXCLUDED.online, last_publish_at ="
      " coalesce(EXCLUDED.last_publish_at, relay_status.last_publish_at),"
      " last_error = EXCLUDED.last_error, updated_at = EXCLUDED.updated_at";
  ob__pg_params_t p;
  int rc;
  ob__pg_params_init(&p);
  ob__pg_p_text(&p, name);
  ob__pg_p_int(&p, online);
  ob__pg_p_int(&p, last_publish_at);
  ob__pg_p_text(&p, last_error);
  ob__pg_p_int(&p, now);
  rc = ob__pg_run_done(db, sql, &p, "relay status");
  return rc < 0 ? rc : 0;
}
