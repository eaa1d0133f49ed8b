/* SPDX-License-Identifier: Apache-2.0 */
/* The local durable queue on PostgreSQL: insert, claim, ack, reschedule,
** FIFO groups held behind their first row, and messages that wait for an
** effect.
**
** The claims take row locks with FOR UPDATE SKIP LOCKED inside the engine's
** handling transaction: the locks last exactly as long as it does, so
** several processes (on several hosts) share the queue and none takes a
** row another holds; a process that dies releases its rows with its
** connection. */
#include <string.h>

#include "storage/postgresql/pg_int.h"

int ob__pg_queue_insert(ob__db_t* db, const char* queue,
                        const char* message_id, const char* type,
                        const char* headers, const void* body,
                        size_t body_len, int64_t available_at, int64_t now) {
  /* clock_ref only for a message that waits (store.h). */
  static const char sql[] =
      "INSERT INTO queue(queue_name, message_id, type, headers, body,"
      " available_at, created_at, clock_ref) VALUES ($1::text, $2::text,"
      " $3::text, $4::text, $5::bytea, $6::bigint, $7::bigint,"
      " CASE WHEN $6::bigint > $7::bigint THEN $7::bigint END)";
  ob__pg_params_t p;
  int rc;
  ob__pg_params_init(&p);
  ob__pg_p_text(&p, queue);
  ob__pg_p_text(&p, message_id);
  ob__pg_p_text(&p, type);
  ob__pg_p_text(&p, headers);
  /* An empty body is an empty bytea, never NULL (ob__pg_p_blob). */
  ob__pg_p_blob(&p, body, body_len);
  ob__pg_p_int(&p, available_at);
  ob__pg_p_int(&p, now);
  rc = ob__pg_run_done(db, sql, &p, "enqueue");
  return rc < 0 ? rc : 0;
}

void ob__pg_p_message(ob__pg_params_t* p, const ob__queue_row_t* r) {
  ob__pg_p_text(p, r->queue);
  ob__pg_p_text(p, r->message_id);
  ob__pg_p_text(p, r->type);
  ob__pg_p_text(p, r->headers);
  ob__pg_p_blob(p, r->body, r->body_len);
}

int ob__pg_queue_insert_held(ob__db_t* db, const ob__queue_row_t* r,
                             int64_t now) {
  /* Held: never due (and no deadline to re-base) until the trigger
  ** queue_group_release makes it the group's first row. */
  static const char sql[] =
      "INSERT INTO queue(queue_name, message_id, type, headers, body,"
      " available_at, attempts, created_at, source, group_key) VALUES"
      " ($1::text, $2::text, $3::text, $4::text, $5::bytea,"
      " 9223372036854775807, $6::bigint, $7::bigint, $8::text, $9::text)";
  ob__pg_params_t p;
  int rc;
  if (r->group_key == NULL)
    return ob__db_seterr(db, OB_EINVAL,
                         "queue a message behind its group: no group");
  ob__pg_params_init(&p);
  ob__pg_p_message(&p, r);
  ob__pg_p_int(&p, r->attempts);
  ob__pg_p_int(&p, now);
  ob__pg_p_text(&p, r->source);
  ob__pg_p_text(&p, r->group_key);
  rc = ob__pg_run_done(db, sql, &p, "queue a message behind its group");
  return rc < 0 ? rc : 0;
}

int ob__pg_queue_group_busy(ob__db_t* db, const char* group_key) {
  static const char sql[] =
      "SELECT 1 FROM queue WHERE group_key = $1::text LIMIT 1";
  ob__pg_params_t p;
  int rc;
  ob__pg_params_init(&p);
  ob__pg_p_text(&p, group_key);
  rc = ob__pg_run_done(db, sql, &p, "messages of a group");
  return rc < 0 ? rc : rc > 0;
}

int ob__pg_queue_row_read(const PGresult* res, int i, ob__queue_row_t* r) {
  int oom = 0;
  memset(r, 0, sizeof *r);
  r->rowid = ob__pg_int(res, i, 0);
  r->queue = ob__pg_dup(res, i, 1, NULL, &oom);
  r->message_id = ob__pg_dup(res, i, 2, NULL, &oom);
  r->type = ob__pg_dup(res, i, 3, NULL, &oom);
  r->headers = ob__pg_dup(res, i, 4, NULL, &oom);
  r->body = ob__pg_dup_bytea(res, i, 5, &r->body_len, &oom);
  r->attempts = (int)ob__pg_int(res, i, 6);
  r->first_failed_at = ob__pg_int(res, i, 7);
  r->created_at = ob__pg_int(res, i, 8);
  r->source = ob__pg_dup(res, i, 9, NULL, &oom);
  r->group_key = ob__pg_dup(res, i, 10, NULL, &oom);
  /* The NOT NULL columns are never NULL: a NULL copy is out of memory. */
  if (oom || r->queue == NULL || r->message_id == NULL || r->type == NULL ||
      r->body == NULL) {
    ob__queue_row_free(r);
    return OB_ENOMEM;
  }
  return 0;
}

/* Run a SELECT of queue rows (OB__QUEUE_ROW_COLUMNS, LIMIT max) and copy
** them into rows[]. The count, or < 0 with every copy made so far freed. */
static int rows_read(ob__db_t* db, const char* sql, const ob__pg_params_t* p,
                     int max, ob__queue_row_t* rows, const char* what) {
  PGresult* res = ob__pg_run(db, sql, p, what);
  int n;
  if (res == NULL) return db->last_err ? db->last_err : OB_EDB;
  n = PQntuples(res);
  if (n > max) n = max;  /* the statement's LIMIT is max */
  for (int i = 0; i < n; i++)
    if (ob__pg_queue_row_read(res, i, &rows[i]) != 0) {
      for (int j = 0; j < i; j++) ob__queue_row_free(&rows[j]);
      PQclear(res);
      return ob__db_seterr(db, OB_ENOMEM, "%s: out of memory", what);
    }
  PQclear(res);
  return n;
}

int ob__pg_queue_claim_ready(ob__db_t* db, int64_t now, int max,
                             ob__queue_row_t* rows) {
  /* The rows stay locked until the handling transaction ends; another
  ** process's claim skips them and takes the next ones. */
  static const char sql[] =
      "SELECT " OB__QUEUE_ROW_COLUMNS " FROM queue"
      " WHERE available_at <= $1::bigint AND (lease_until IS NULL OR"
      " lease_until <= $1::bigint) ORDER BY available_at, id"
      " LIMIT $2::bigint FOR UPDATE SKIP LOCKED";
  ob__pg_params_t p;
  if (max < 1) return 0;
  ob__pg_params_init(&p);
  ob__pg_p_int(&p, now);
  ob__pg_p_int(&p, max);
  return rows_read(db, sql, &p, max, rows, "read ready messages");
}

int ob__pg_queue_delete(ob__db_t* db, int64_t rowid) {
  static const char sql[] = "DELETE FROM queue WHERE id = $1::bigint";
  ob__pg_params_t p;
  int rc;
  ob__pg_params_init(&p);
  ob__pg_p_int(&p, rowid);
  rc = ob__pg_run_done(db, sql, &p, "ack");
  return rc < 0 ? rc : 0;
}

int ob__pg_queue_reschedule(ob__db_t* db, int64_t rowid, int attempts,
                            int64_t available_at, int64_t first_failed_at,
                            const char* last_error, int64_t now) {
  static const char sql[] =
      "UPDATE queue SET attempts = $2::bigint, available_at = $3::bigint,"
      " lease_until = NULL, first_failed_at = $4::bigint,"
      " last_error = $5::text, waiting_on = NULL, clock_ref = CASE WHEN"
      " $3::bigint > $6::bigint THEN $6::bigint END WHERE id = $1::bigint";
  ob__pg_params_t p;
  int rc;
  ob__pg_params_init(&p);
  ob__pg_p_int(&p, rowid);
  ob__pg_p_int(&p, attempts);
  ob__pg_p_int(&p, available_at);
  ob__pg_p_int(&p, first_failed_at);
  ob__pg_p_text(&p, last_error);
  ob__pg_p_int(&p, now);
  rc = ob__pg_run_done(db, sql, &p, "reschedule");
  return rc < 0 ? rc : 0;
}

int ob__pg_queue_next_due(ob__db_t* db, int64_t* at) {
  /* Two index probes, as on SQLite: the earliest unleased row through
  ** queue_ready, and the (rare) leased rows through queue_leased. LEAST
  ** skips a NULL side; NULL from both is an empty queue. */
  static const char sql[] =
      "SELECT LEAST((SELECT available_at FROM queue WHERE lease_until IS"
      " NULL ORDER BY available_at LIMIT 1), (SELECT max(GREATEST("
      "available_at, lease_until)) FROM queue WHERE lease_until IS NOT"
      " NULL))";
  return ob__pg_run_int(db, sql, NULL, "next due message", at);
}

int ob__pg_queue_next_due_unwaited(ob__db_t* db, int64_t* at) {
  /* Off the hot path (an until-idle run deciding to stop). A row held
  ** behind its group's first row is never due by itself. */
  static const char sql[] =
      "SELECT min(GREATEST(available_at, coalesce(lease_until, 0)))"
      " FROM queue WHERE waiting_on IS NULL"
      " AND available_at < 9223372036854775807";
  return ob__pg_run_int(db, sql, NULL, "next due message", at);
}

int ob__pg_queue_wait(ob__db_t* db, int64_t rowid, const char* key,
                      int64_t available_at, int64_t now) {
  static const char sql[] =
      "UPDATE queue SET waiting_on = $2::text, available_at = $3::bigint,"
      " lease_until = NULL, clock_ref = CASE WHEN $3::bigint > $4::bigint"
      " THEN $4::bigint END WHERE id = $1::bigint";
  ob__pg_params_t p;
  int rc;
  ob__pg_params_init(&p);
  ob__pg_p_int(&p, rowid);
  ob__pg_p_text(&p, key);
  ob__pg_p_int(&p, available_at);
  ob__pg_p_int(&p, now);
  rc = ob__pg_run_done(db, sql, &p, "wait for effect");
  return rc < 0 ? rc : 0;
}

int ob__pg_queue_insert_waiting(ob__db_t* db, const ob__queue_row_t* r,
                                const char* key, int64_t available_at,
                                int64_t now) {
  static const char sql[] =
      "INSERT INTO queue(queue_name, message_id, type, headers, body,"
      " available_at, attempts, created_at, waiting_on, clock_ref, source,"
      " group_key) VALUES ($1::text, $2::text, $3::text, $4::text,"
      " $5::bytea, $6::bigint, $7::bigint, $8::bigint, $9::text,"
      " CASE WHEN $6::bigint > $10::bigint THEN $10::bigint END,"
      " $11::text, $12::text)";
  ob__pg_params_t p;
  int rc;
  ob__pg_params_init(&p);
  ob__pg_p_message(&p, r);
  ob__pg_p_int(&p, available_at);
  ob__pg_p_int(&p, r->attempts);
  ob__pg_p_int(&p, r->created_at ? r->created_at : now);
  ob__pg_p_text(&p, key);
  ob__pg_p_int(&p, now);
  ob__pg_p_text(&p, r->source);
  ob__pg_p_text(&p, r->group_key);
  rc = ob__pg_run_done(db, sql, &p, "queue a message waiting for an effect");
  return rc < 0 ? rc : 0;
}

int ob__pg_queue_claim_waiting(ob__db_t* db, const char* key, int max,
                               ob__queue_row_t* rows) {
  /* Locked like the ready claim: two processes settling the same effect
  ** never hand its waiting messages over twice. */
  static const char sql[] =
      "SELECT " OB__QUEUE_ROW_COLUMNS " FROM queue WHERE waiting_on = $1::text"
      " ORDER BY id LIMIT $2::bigint FOR UPDATE SKIP LOCKED";
  ob__pg_params_t p;
  if (max < 1) return 0;
  ob__pg_params_init(&p);
  ob__pg_p_text(&p, key);
  ob__pg_p_int(&p, max);
  return rows_read(db, sql, &p, max, rows, "messages waiting for an effect");
}
