/* SPDX-License-Identifier: Apache-2.0 */
/* The outbox relay's rows: leases, marks, parking, connectivity status.
** Several relay processes may share one database: every claim carries a
** token and a lease, and every mark checks the token. */
#include <sqlite3.h>
#include <stdint.h> /* SIZE_MAX, INT64_MAX: also in #if */
#include <stdlib.h>
#include <string.h>

#include "core/util/assert.h"
#include "storage/sqlite/sqlite_store.h"

static char* dup_text(sqlite3_stmt* st, int i, size_t* len) {
  const unsigned char* t = sqlite3_column_text(st, i);
  int n = sqlite3_column_bytes(st, i);
  char* out;
  if (t == NULL) return NULL;
  out = malloc((size_t)n + 1);
  if (out == NULL) return NULL;
  memcpy(out, t, (size_t)n);
  out[n] = '\0';
  if (len) *len = (size_t)n;
  return out;
}

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
  if (x->created_at != y->created_at) return x->created_at < y->created_at ? -1 : 1;
  return strcmp(x->id, y->id);
}

/* The publishable set, shared by claim and next_due. ?1 = now. */
#define PUBLISHABLE                                                          \
  "published_at IS NULL AND parked_at IS NULL"                               \
  " AND (claim_until IS NULL OR claim_until <= ?1)"
#define NO_EARLIER_OF_AGGREGATE                                              \
  " AND NOT EXISTS (SELECT 1 FROM outbox_event p"                            \
  " WHERE p.aggregate_id = o.aggregate_id AND p.published_at IS NULL"        \
  " AND (p.created_at < o.created_at OR (p.created_at = o.created_at"        \
  " AND p.id < o.id)))"

/* The priority claim: one branch per priority type (?5 .. ?12; a slot bound
** to NULL matches nothing), each the oldest publishable rows of its type
** read in order from outbox_unpublished_type, then the oldest max of them
** all. Unordered, a branch stops at max rows. Ordered, a branch looks at the
** oldest ?13 (PRIORITY_WINDOW) publishable rows of its type and keeps those
** with no earlier unpublished row in their aggregate: without the window a
** type whose rows all wait behind their aggregates (a receipt before each
** charge) would be probed row by row, the whole backlog of it, every claim
** (0.16 s per claim on 100,000 rows here, against 1 ms). A priority row
** beyond the window waits for the oldest-first fill below, which frees the
** aggregates in front of it. */
#define PRIORITY_WINDOW 64
#define PRIORITY_BRANCH(k)                                                   \
  "SELECT id, created_at FROM (SELECT id, created_at FROM outbox_event o"    \
  " WHERE event_type = ?" k " AND " PUBLISHABLE " AND next_attempt_at <= ?1" \
  " ORDER BY created_at, id LIMIT ?4)"
#define PRIORITY_BRANCH_ORDERED(k)                                           \
  "SELECT id, created_at FROM (SELECT id, created_at FROM (SELECT id,"       \
  " created_at, aggregate_id FROM outbox_event WHERE event_type = ?" k       \
  " AND " PUBLISHABLE " AND next_attempt_at <= ?1 ORDER BY created_at, id"   \
  " LIMIT ?13) o WHERE 1" NO_EARLIER_OF_AGGREGATE                            \
  " ORDER BY created_at, id LIMIT ?4)"
#define PRIORITY_SELECT(B)                                                   \
  B("5") " UNION ALL " B("6") " UNION ALL " B("7") " UNION ALL " B("8")      \
  " UNION ALL " B("9") " UNION ALL " B("10") " UNION ALL " B("11")           \
  " UNION ALL " B("12") " ORDER BY created_at, id LIMIT ?4"
#define CLAIM_RETURNING                                                      \
  " RETURNING id, causation_id, event_type, aggregate_id, payload,"          \
  " created_at, attempt_count, traceparent, tracestate,"                    \
  " coalesce(wall_behind_ms, 0)"

_Static_assert(OB__RELAY_MAX_PRIORITY == 8, "one branch per priority slot");

/* Step one claim statement (bound but for ?4), appending to rows[*n..max).
** Returns SQLITE_DONE or the failing SQLite code. */
static int claim_step(sqlite3_stmt* st, int max, ob__relay_row_t* rows,
                      int* n) {
  int rc, first = *n;
  sqlite3_bind_int(st, 4, max - first);
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    ob__relay_row_t* r;
    OB__ASSERT(*n < max);  /* LIMIT ?4 */
    r = &rows[*n];
    memset(r, 0, sizeof *r);
    r->id = dup_text(st, 0, NULL);
    r->causation_id = dup_text(st, 1, NULL);
    r->event_type = dup_text(st, 2, NULL);
    r->aggregate_id = dup_text(st, 3, NULL);
    r->payload = dup_text(st, 4, &r->payload_len);
    r->created_at = sqlite3_column_int64(st, 5);
    r->attempt_count = sqlite3_column_int(st, 6);
    r->traceparent = dup_text(st, 7, NULL);
    r->tracestate = dup_text(st, 8, NULL);
    r->wall_behind_ms = sqlite3_column_int64(st, 9);
    (*n)++;
    if (!r->id || !r->causation_id || !r->event_type || !r->aggregate_id ||
        !r->payload ||
        (sqlite3_column_type(st, 7) != SQLITE_NULL && !r->traceparent) ||
        (sqlite3_column_type(st, 8) != SQLITE_NULL && !r->tracestate)) {
      rc = SQLITE_NOMEM;
      break;
    }
  }
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  return rc;
}

int ob__sqlite_relay_claim(ob__db_t* db, const char* token, int64_t now,
                    int64_t lease_until, int max, int ordered,
                    const char* const* priority, int npriority,
                    ob__relay_row_t* rows) {
  static const char* const sql[2] = {
      "UPDATE outbox_event SET claim_token = ?2, claim_until = ?3, clock_ref = ?1"
      " WHERE id IN (SELECT id FROM outbox_event o WHERE " PUBLISHABLE
      " AND next_attempt_at <= ?1 ORDER BY created_at, id LIMIT ?4)"
      CLAIM_RETURNING,
      "UPDATE outbox_event SET claim_token = ?2, claim_until = ?3, clock_ref = ?1"
      " WHERE id IN (SELECT id FROM outbox_event o WHERE " PUBLISHABLE
      " AND next_attempt_at <= ?1" NO_EARLIER_OF_AGGREGATE
      " ORDER BY created_at, id LIMIT ?4)" CLAIM_RETURNING};
  static const char* const priority_sql[2] = {
      "UPDATE outbox_event SET claim_token = ?2, claim_until = ?3, clock_ref = ?1"
      " WHERE id IN (SELECT id FROM (" PRIORITY_SELECT(PRIORITY_BRANCH) "))"
      CLAIM_RETURNING,
      "UPDATE outbox_event SET claim_token = ?2, claim_until = ?3, clock_ref = ?1"
      " WHERE id IN (SELECT id FROM ("
      PRIORITY_SELECT(PRIORITY_BRANCH_ORDERED) "))" CLAIM_RETURNING};
  sqlite3_stmt* st;
  int rc, n = 0;

  OB__ASSERT(npriority >= 0 && npriority <= OB__RELAY_MAX_PRIORITY);
  /* A lost claim only delays a row until its lease would have expired. */
  rc = ob__sqlite_db_begin_relaxed(db);
  if (rc < 0) return rc;
  rc = SQLITE_DONE;
  if (npriority > 0) {
    /* The priority rows first. Whatever they leave of max goes to the
    ** oldest rows of any type below: every publishable priority row is in
    ** hand by then, so that claim cannot pass one over. */
    st = ob__db_stmt(db, ordered ? OB__R_CLAIM_PRIORITY_ORDERED
                                 : OB__R_CLAIM_PRIORITY,
                     priority_sql[ordered ? 1 : 0]);
    if (st == NULL) {
      int code = db->last_err;
      ob__sqlite_db_rollback(db);
      return code;
    }
    sqlite3_bind_int64(st, 1, now);
    sqlite3_bind_text(st, 2, token, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, lease_until);
    for (int i = 0; i < npriority; i++)
      sqlite3_bind_text(st, 5 + i, priority[i], -1, SQLITE_STATIC);
    if (ordered) sqlite3_bind_int(st, 13, PRIORITY_WINDOW);
    rc = claim_step(st, max, rows, &n);
  }
  if (rc == SQLITE_DONE && n < max) {
    st = ob__db_stmt(db, ordered ? OB__R_CLAIM_ORDERED : OB__R_CLAIM,
                     sql[ordered ? 1 : 0]);
    if (st == NULL) {
      int code = db->last_err;
      for (int i = 0; i < n; i++) ob__relay_row_free(&rows[i]);
      ob__sqlite_db_rollback(db);
      return code;
    }
    sqlite3_bind_int64(st, 1, now);
    sqlite3_bind_text(st, 2, token, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, lease_until);
    rc = claim_step(st, max, rows, &n);
  }
  if (rc != SQLITE_DONE) {
    for (int i = 0; i < n; i++) ob__relay_row_free(&rows[i]);
    rc = ob__db_fail(db, rc, "relay claim");
    ob__sqlite_db_rollback(db);
    return rc;
  }
  rc = ob__sqlite_db_commit(db);
  if (rc < 0) {
    for (int i = 0; i < n; i++) ob__relay_row_free(&rows[i]);
    return rc;
  }
  /* RETURNING gives no order guarantee; a batch goes out oldest first
  ** (what a FIFO queue keeps per message group). */
  qsort(rows, (size_t)n, sizeof *rows, row_cmp);
  return n;
}

int ob__sqlite_relay_mark_published(ob__db_t* db, const char* id, const char* token,
                             int64_t now) {
  sqlite3_stmt* st = ob__db_stmt(
      db, OB__R_MARK_PUBLISHED,
      "UPDATE outbox_event SET published_at = ?3, claim_token = NULL,"
      " claim_until = NULL, last_error = NULL, clock_ref = NULL"
      " WHERE id = ?1 AND claim_token = ?2 AND published_at IS NULL");
  if (st == NULL) return db->last_err;
  sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 2, token, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 3, now);
  return ob__db_step_done(db, st, "relay mark published");
}

int ob__sqlite_relay_mark_failed(ob__db_t* db, const char* id, const char* token,
                          int64_t next_attempt_at, const char* error,
                          int park_after, int64_t now) {
  sqlite3_stmt* st = ob__db_stmt(
      db, OB__R_MARK_FAILED,
      "UPDATE outbox_event SET attempt_count = attempt_count + 1,"
      " next_attempt_at = ?3, last_error = ?4, claim_token = NULL,"
      " claim_until = NULL, clock_ref = CASE WHEN ?3 > ?6 THEN ?6 END,"
      " parked_at = CASE WHEN ?5 > 0 AND"
      " attempt_count + 1 >= ?5 THEN ?6 ELSE NULL END"
      " WHERE id = ?1 AND claim_token = ?2 AND published_at IS NULL");
  if (st == NULL) return db->last_err;
  sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 2, token, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 3, next_attempt_at);
  sqlite3_bind_text(st, 4, error, -1, SQLITE_STATIC);
  sqlite3_bind_int(st, 5, park_after);
  sqlite3_bind_int64(st, 6, now);
  return ob__db_step_done(db, st, "relay mark failed");
}

/* One write statement in its own transaction; returns rows changed. */
static int exec_own_tx(ob__db_t* db, const char* sql, const char* text,
                       int64_t value, const char* what) {
  sqlite3_stmt* st = NULL;
  int rc, n;
  rc = ob__sqlite_db_begin(db);
  if (rc < 0) return rc;
  rc = sqlite3_prepare_v2(db->db, sql, -1, &st, NULL);
  if (rc != SQLITE_OK) {
    rc = ob__db_fail(db, rc, what);
    ob__sqlite_db_rollback(db);
    return rc;
  }
  if (text) sqlite3_bind_text(st, 1, text, -1, SQLITE_STATIC);
  else sqlite3_bind_int64(st, 1, value);
  n = ob__db_step_done(db, st, what);
  sqlite3_finalize(st);
  if (n < 0) {
    ob__sqlite_db_rollback(db);
    return n;
  }
  rc = ob__sqlite_db_commit(db);
  return rc < 0 ? rc : n;
}

int ob__sqlite_relay_release(ob__db_t* db, const char* token) {
  return exec_own_tx(db,
                     /* A claimed row was due: nothing of it waits. */
                     "UPDATE outbox_event SET claim_token = NULL,"
                     " claim_until = NULL, clock_ref = NULL"
                     " WHERE claim_token = ?1",
                     token, 0, "relay release");
}

int ob__sqlite_relay_retry_parked(ob__db_t* db, int64_t now) {
  return exec_own_tx(db,
                     "UPDATE outbox_event SET parked_at = NULL,"
                     " attempt_count = 0, next_attempt_at = ?1, clock_ref = NULL"
                     " WHERE parked_at IS NOT NULL AND published_at IS NULL",
                     NULL, now, "outbox retry-parked");
}

int ob__sqlite_relay_backlog(ob__db_t* db, int64_t* unpublished, int64_t* parked) {
  sqlite3_stmt* st = ob__db_stmt(
      db, OB__R_BACKLOG,
      "SELECT count(*), count(parked_at) FROM outbox_event"
      " WHERE published_at IS NULL");
  int rc;
  if (st == NULL) return db->last_err;
  rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    *unpublished = sqlite3_column_int64(st, 0);
    *parked = sqlite3_column_int64(st, 1);
    sqlite3_reset(st);
    return 0;
  }
  sqlite3_reset(st);
  return ob__db_fail(db, rc, "outbox backlog");
}

int ob__sqlite_relay_pending(ob__db_t* db, int64_t now, int due_only) {
  sqlite3_stmt* st = ob__db_stmt(
      db, OB__R_PENDING,
      "SELECT EXISTS (SELECT 1 FROM outbox_event WHERE published_at IS NULL"
      " AND parked_at IS NULL AND (?2 = 0 OR next_attempt_at <= ?1))");
  int rc;
  if (st == NULL) return db->last_err;
  sqlite3_bind_int64(st, 1, now);
  sqlite3_bind_int(st, 2, due_only != 0);
  rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    int v = sqlite3_column_int(st, 0);
    sqlite3_reset(st);
    return v;
  }
  sqlite3_reset(st);
  return ob__db_fail(db, rc, "outbox pending");
}

int ob__sqlite_relay_next_due(ob__db_t* db, int64_t now, int ordered, int64_t* at) {
  static const char* const sql[2] = {
      "SELECT min(max(next_attempt_at, coalesce(claim_until, 0)))"
      " FROM outbox_event o WHERE published_at IS NULL AND parked_at IS NULL",
      "SELECT min(max(next_attempt_at, coalesce(claim_until, 0)))"
      " FROM outbox_event o WHERE published_at IS NULL AND parked_at IS NULL"
      NO_EARLIER_OF_AGGREGATE};
  sqlite3_stmt* st;
  int rc;
  (void)now;
  st = ob__db_stmt(db, ordered ? OB__R_NEXT_DUE_ORDERED : OB__R_NEXT_DUE,
                   sql[ordered ? 1 : 0]);
  if (st == NULL) return db->last_err;
  rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    int null = sqlite3_column_type(st, 0) == SQLITE_NULL;
    *at = sqlite3_column_int64(st, 0);
    sqlite3_reset(st);
    return null ? OB_ENOTFOUND : 0;
  }
  sqlite3_reset(st);
  return ob__db_fail(db, rc, "relay next due");
}

int ob__sqlite_relay_status_set(ob__db_t* db, const char* name, int online,
                         int64_t last_publish_at, const char* last_error,
                         int64_t now) {
  sqlite3_stmt* st = ob__db_stmt(
      db, OB__R_STATUS,
      "INSERT INTO relay_status(name, online, last_publish_at, last_error,"
      " updated_at) VALUES (?1, ?2, nullif(?3, 0), ?4, ?5)"
      " ON CONFLICT(name) DO UPDATE SET online = excluded.online,"
      " last_publish_at = coalesce(excluded.last_publish_at,"
      " relay_status.last_publish_at), last_error = excluded.last_error,"
      " updated_at = excluded.updated_at");
  if (st == NULL) return db->last_err;
  sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
  sqlite3_bind_int(st, 2, online);
  sqlite3_bind_int64(st, 3, last_publish_at);
  if (last_error) sqlite3_bind_text(st, 4, last_error, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 5, now);
  int rc = ob__db_step_done(db, st, "relay status");
  return rc < 0 ? rc : 0;
}
