/* SPDX-License-Identifier: Apache-2.0 */
/* The local durable queue: insert, claim ready rows, ack, reschedule, FIFO
** groups held behind their first row, and messages that wait for an
** effect.
**
** On SQLite the handling transaction's write lock makes a read of the
** ready rows a claim. On PostgreSQL the claims take row locks with FOR
** UPDATE SKIP LOCKED inside that transaction: the locks last exactly as
** long as it does, so several processes (on several hosts) share the queue
** and none takes a row another holds; a process that dies releases its
** rows with its connection. */
#include <stdlib.h>
#include <string.h>

#include "core/util/assert.h"
#include "storage/sql.h"

/* A row never due by itself: held behind its group's first row. */
#define HELD "9223372036854775807"
#define LOCKED " FOR UPDATE SKIP LOCKED"

int ob__queue_insert(ob__db_t* db, const char* queue,
                         const char* message_id, const char* type,
                         const char* headers, const void* body,
                         size_t body_len, int64_t available_at, int64_t now) {
  /* clock_ref only for a message that waits (store.h). */
  static const char sql[] =
      "INSERT INTO queue(queue_name, message_id, type, headers, body,"
      " available_at, created_at, clock_ref) VALUES (?1, ?2, ?3, ?4, ?5, ?6,"
      " ?7, CASE WHEN ?6 > ?7 THEN ?7 END)";
  ob__sql_t s;
  int rc;
  ob__sql_prepare(db, &s, OB__Q_ENQUEUE, sql, "enqueue");
  ob__sql_text(&s, 1, queue);
  ob__sql_text(&s, 2, message_id);
  ob__sql_text(&s, 3, type);
  ob__sql_text(&s, 4, headers);
  /* An empty body is an empty blob, never NULL. */
  ob__sql_blob(&s, 5, body_len ? body : "", body_len);
  ob__sql_int(&s, 6, available_at);
  ob__sql_int(&s, 7, now);
  rc = ob__sql_done(&s);
  return rc < 0 ? rc : 0;
}

int ob__queue_insert_held(ob__db_t* db, const ob__queue_row_t* r,
                              int64_t now) {
  /* Held: never due (and no deadline to re-base) until the trigger
  ** queue_group_release makes it the group's first row. */
  static const char sql[] =
      "INSERT INTO queue(queue_name, message_id, type, headers, body,"
      " available_at, attempts, created_at, source, group_key) VALUES (?1, ?2,"
      " ?3, ?4, ?5, " HELD ", ?6, ?7, ?8, ?9)";
  ob__sql_t s;
  int rc;
  if (r->group_key == NULL)
    return ob__db_seterr(db, OB_EINVAL,
                         "queue a message behind its group: no group");
  ob__sql_prepare(db, &s, OB__Q_INSERT_HELD, sql,
                  "queue a message behind its group");
  ob__sql_message(&s, r);
  ob__sql_int(&s, 6, r->attempts);
  ob__sql_int(&s, 7, now);
  ob__sql_text(&s, 8, r->source);
  ob__sql_text(&s, 9, r->group_key);
  rc = ob__sql_done(&s);
  return rc < 0 ? rc : 0;
}

int ob__queue_group_busy(ob__db_t* db, const char* group_key) {
  static const char sql[] = "SELECT 1 FROM queue WHERE group_key = ?1 LIMIT 1";
  ob__sql_t s;
  int rc;
  ob__sql_prepare(db, &s, OB__Q_GROUP_BUSY, sql, "messages of a group");
  ob__sql_text(&s, 1, group_key);
  rc = ob__sql_done(&s);
  return rc < 0 ? rc : rc > 0;
}

void ob__queue_row_free(ob__queue_row_t* r) {
  free(r->queue);
  free(r->message_id);
  free(r->type);
  free(r->headers);
  free(r->body);
  free(r->source);
  free(r->group_key);
  memset(r, 0, sizeof *r);
}

int ob__sql_queue_row_read(ob__sql_t* s, ob__queue_row_t* r) {
  int bad = 0;
  memset(r, 0, sizeof *r);
  r->rowid = ob__sql_col_int(s, 0);
  bad |= ob__sql_col_dup(s, 1, 0, &r->queue, NULL);
  bad |= ob__sql_col_dup(s, 2, 0, &r->message_id, NULL);
  bad |= ob__sql_col_dup(s, 3, 0, &r->type, NULL);
  bad |= ob__sql_col_dup(s, 4, 0, &r->headers, NULL);
  bad |= ob__sql_col_dup(s, 5, 1, &r->body, &r->body_len);
  r->attempts = (int)ob__sql_col_int(s, 6);
  r->first_failed_at = ob__sql_col_int(s, 7);
  r->created_at = ob__sql_col_int(s, 8);
  bad |= ob__sql_col_dup(s, 9, 0, &r->source, NULL);
  bad |= ob__sql_col_dup(s, 10, 0, &r->group_key, NULL);
  /* The NOT NULL columns are never NULL: a NULL copy is out of memory. */
  if (bad || !r->queue || !r->message_id || !r->type || !r->body) {
    ob__queue_row_free(r);
    return ob__db_seterr(s->db, OB_ENOMEM, "%s: out of memory", s->what);
  }
  return 0;
}

int ob__sql_queue_rows_read(ob__sql_t* s, ob__queue_row_t* rows, int max) {
  int n = 0, rc;
  while ((rc = ob__sql_step(s)) > 0) {
    OB__ASSERT(n < max);  /* the statement's LIMIT is max */
    if (n == max) break;
    if ((rc = ob__sql_queue_row_read(s, &rows[n])) < 0) break;
    n++;
  }
  ob__sql_finish(s);
  if (rc < 0)
    while (n > 0) ob__queue_row_free(&rows[--n]);
  return rc < 0 ? rc : n;
}

#define READY                                                               \
  "SELECT " OB__QUEUE_ROW_COLUMNS " FROM queue WHERE available_at <= ?1"    \
  " AND (lease_until IS NULL OR lease_until <= ?1)"                         \
  " ORDER BY available_at, id LIMIT ?2"

int ob__queue_claim_ready(ob__db_t* db, int64_t now, int max,
                              ob__queue_row_t* rows) {
  static const ob__sql_text_t sql = {READY, READY LOCKED};
  ob__sql_t s;
  OB__ASSERT(max >= 1);  /* the batch size, checked by ob_open */
  ob__sql_prepare2(db, &s, OB__Q_CLAIM_READY, &sql, "read ready messages");
  ob__sql_int(&s, 1, now);
  ob__sql_int(&s, 2, max);
  return ob__sql_queue_rows_read(&s, rows, max);
}

int ob__queue_delete(ob__db_t* db, int64_t rowid) {
  ob__sql_t s;
  int rc;
  ob__sql_prepare(db, &s, OB__Q_DELETE, "DELETE FROM queue WHERE id = ?1",
                  "ack");
  ob__sql_int(&s, 1, rowid);
  rc = ob__sql_done(&s);
  return rc < 0 ? rc : 0;
}

int ob__queue_reschedule(ob__db_t* db, int64_t rowid, int attempts,
                             int64_t available_at, int64_t first_failed_at,
                             const char* last_error, int64_t now) {
  static const char sql[] =
      "UPDATE queue SET attempts = ?2, available_at = ?3, lease_until = NULL,"
      " first_failed_at = ?4, last_error = ?5, waiting_on = NULL,"
      " clock_ref = CASE WHEN ?3 > ?6 THEN ?6 END WHERE id = ?1";
  ob__sql_t s;
  int rc;
  ob__sql_prepare(db, &s, OB__Q_RESCHEDULE, sql, "reschedule");
  ob__sql_int(&s, 1, rowid);
  ob__sql_int(&s, 2, attempts);
  ob__sql_int(&s, 3, available_at);
  ob__sql_int(&s, 4, first_failed_at);
  ob__sql_text(&s, 5, last_error);
  ob__sql_int(&s, 6, now);
  rc = ob__sql_done(&s);
  return rc < 0 ? rc : 0;
}

/* The later of available_at and a lease's end. */
#define DUE_AT                                                              \
  "CASE WHEN lease_until > available_at THEN lease_until ELSE available_at" \
  " END"

int ob__queue_next_due(ob__db_t* db, int64_t* at) {
  /* Two index probes, not a scan: the earliest unleased row through
  ** queue_ready, and leased rows (rare) through queue_leased. A scan here
  ** made draining a backlog quadratic (3/4 of a batch's CPU with 2,000
  ** rows queued). NULL from both is an empty queue: OB_ENOTFOUND. */
  static const char sql[] =
      "SELECT min(x) FROM (SELECT * FROM (SELECT available_at AS x FROM queue"
      " WHERE lease_until IS NULL ORDER BY available_at LIMIT 1) AS a"
      " UNION ALL SELECT max(" DUE_AT ") FROM queue"
      " WHERE lease_until IS NOT NULL) AS u";
  ob__sql_t s;
  ob__sql_prepare(db, &s, OB__Q_NEXT_DUE, sql, "next due message");
  return ob__sql_int1(&s, at);
}

int ob__queue_next_due_unwaited(ob__db_t* db, int64_t* at) {
  /* Off the hot path (an until-idle run deciding to stop): not cached. */
  static const char sql[] =
      "SELECT min(" DUE_AT ") FROM queue WHERE waiting_on IS NULL"
      " AND available_at < " HELD;
  ob__sql_t s;
  ob__sql_prepare(db, &s, OB__SQL_ONCE, sql, "next due message");
  return ob__sql_int1(&s, at);
}

/* ---- messages that wait for an effect ---------------------------------- */

int ob__queue_wait(ob__db_t* db, int64_t rowid, const char* key,
                       int64_t available_at, int64_t now) {
  static const char sql[] =
      "UPDATE queue SET waiting_on = ?2, available_at = ?3, lease_until = NULL,"
      " clock_ref = CASE WHEN ?3 > ?4 THEN ?4 END WHERE id = ?1";
  ob__sql_t s;
  int rc;
  ob__sql_prepare(db, &s, OB__Q_WAIT, sql, "wait for effect");
  ob__sql_int(&s, 1, rowid);
  ob__sql_text(&s, 2, key);
  ob__sql_int(&s, 3, available_at);
  ob__sql_int(&s, 4, now);
  rc = ob__sql_done(&s);
  return rc < 0 ? rc : 0;
}

int ob__queue_insert_waiting(ob__db_t* db, const ob__queue_row_t* r,
                                 const char* key, int64_t available_at,
                                 int64_t now) {
  static const char sql[] =
      "INSERT INTO queue(queue_name, message_id, type, headers, body,"
      " available_at, attempts, created_at, waiting_on, clock_ref, source,"
      " group_key) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9, CASE WHEN ?6 > ?10"
      " THEN ?10 END, ?11, ?12)";
  ob__sql_t s;
  int rc;
  ob__sql_prepare(db, &s, OB__Q_INSERT_WAITING, sql,
                  "queue a message waiting for an effect");
  ob__sql_message(&s, r);
  ob__sql_int(&s, 6, available_at);
  ob__sql_int(&s, 7, r->attempts);
  ob__sql_int(&s, 8, r->created_at ? r->created_at : now);
  ob__sql_text(&s, 9, key);
  ob__sql_int(&s, 10, now);
  ob__sql_text(&s, 11, r->source);
  ob__sql_text(&s, 12, r->group_key);
  rc = ob__sql_done(&s);
  return rc < 0 ? rc : 0;
}

#define WAITING                                                             \
  "SELECT " OB__QUEUE_ROW_COLUMNS " FROM queue WHERE waiting_on = ?1"       \
  " ORDER BY id LIMIT ?2"

int ob__queue_claim_waiting(ob__db_t* db, const char* key, int max,
                                ob__queue_row_t* rows) {
  /* Locked like the ready claim on PostgreSQL: two processes settling the
  ** same effect never hand its waiting messages over twice. */
  static const ob__sql_text_t sql = {WAITING, WAITING LOCKED};
  ob__sql_t s;
  if (max < 1) return 0;
  ob__sql_prepare2(db, &s, OB__Q_CLAIM_WAITING, &sql,
                   "messages waiting for an effect");
  ob__sql_text(&s, 1, key);
  ob__sql_int(&s, 2, max);
  return ob__sql_queue_rows_read(&s, rows, max);
}
