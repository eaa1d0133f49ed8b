/* SPDX-License-Identifier: Apache-2.0 */
/* The local durable queue on PostgreSQL: insert, claim, ack, reschedule.
** The claim takes row locks with SKIP LOCKED inside the handling
** transaction: several processes share the queue, none takes a row another
** holds, and a process that dies releases its rows with its connection. */
#include <stdlib.h>
#include <string.h>

#include "storage/postgresql/pg_int.h"

int ob__pg_queue_insert(ob__db_t* db, const char* queue,
                        const char* message_id, const char* type,
                        const char* headers, const void* body,
                        size_t body_len, int64_t available_at, int64_t now) {
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
  ob__pg_p_blob(&p, body, body_len);
  ob__pg_p_int(&p, available_at);
  ob__pg_p_int(&p, now);
  rc = ob__pg_run_done(db, sql, &p, "enqueue");
  return rc < 0 ? rc : 0;
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
  if (oom || r->queue == NULL || r->message_id == NULL || r->type == NULL ||
      r->body == NULL) {
    ob__queue_row_free(r);
    return OB_ENOMEM;
  }
  return 0;
}

int ob__pg_queue_claim_ready(ob__db_t* db, int64_t now, int max,
                             ob__queue_row_t* rows) {
  static const char sql[] =
      "SELECT " OB__QUEUE_ROW_COLUMNS " FROM queue"
      " WHERE available_at <= $1::bigint AND (lease_until IS NULL OR"
      " lease_until <= $1::bigint) ORDER BY available_at, id"
      " LIMIT $2::bigint FOR UPDATE SKIP LOCKED";
  ob__pg_params_t p;
  PGresult* res;
  int n;
  ob__pg_params_init(&p);
  ob__pg_p_int(&p, now);
  ob__pg_p_int(&p, max);
  res = ob__pg_run(db, sql, &p, "read ready messages");
  if (res == NULL) return db->last_err;
  n = PQntuples(res);
  for (int i = 0; i < n; i++)
    if (ob__pg_queue_row_read(res, i, &rows[i]) != 0) {
      for (int j = 0; j < i; j++) ob__queue_row_free(&rows[j]);
      PQclear(res);
      return ob__db_seterr(db, OB_ENOMEM, "read ready messages: out of "
                           "memory");
    }
  PQclear(res);
  return n;
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
  /* Two index probes, as on SQLite: the earliest unleased row, and the
  ** (rare) leased ones. */
  static const char sql[] =
      "SELECT least((SELECT available_at FROM queue WHERE lease_until IS"
      " NULL ORDER BY available_at LIMIT 1), (SELECT min(greatest("
      "available_at, lease_until)) FROM queue WHERE lease_until IS NOT"
      " NULL))";
  return ob__pg_run_int(db, sql, NULL, "next due message", at);
}

int ob__pg_queue_next_due_unwaited(ob__db_t* db, int64_t* at) {
  static const char sql[] =
      "SELECT min(greatest(available_at, coalesce(lease_until, 0)))"
      " FROM queue WHERE waiting_on IS NULL"
      " AND available_at < 9223372036854775807";
  return ob__pg_run_int(db, sql, NULL, "next due message", at);
}
