/* SPDX-License-Identifier: Apache-2.0 */
/* The failure store on PostgreSQL: moving a message there in the handling
** transaction, listing, retrying (back to the queue, through the same
** dedup guard as any delivery) and removing. The filtered forms are not
** here yet (docs/postgresql.md). */
#include <stdlib.h>
#include <string.h>

#include "storage/postgresql/pg_int.h"

int ob__pg_failed_insert_effect(ob__db_t* db, const ob__queue_row_t* r,
                                const char* error_class, const char* reason,
                                int attempts, const char* effect_key,
                                int64_t now) {
  static const char sql[] =
      "INSERT INTO failed_message(queue_name, message_id, type, headers,"
      " body, error_class, reason, attempts, first_failed_at,"
      " last_failed_at, created_at, effect_key, source) VALUES ($1::text,"
      " $2::text, $3::text, $4::text, $5::bytea, $6::text, $7::text,"
      " $8::bigint, $9::bigint, $10::bigint, $11::bigint, $12::text,"
      " $13::text)";
  ob__pg_params_t p;
  int rc;
  ob__pg_params_init(&p);
  ob__pg_p_text(&p, r->queue);
  ob__pg_p_text(&p, r->message_id);
  ob__pg_p_text(&p, r->type);
  ob__pg_p_text(&p, r->headers);
  ob__pg_p_blob(&p, r->body, r->body_len);
  ob__pg_p_text(&p, error_class);
  ob__pg_p_text(&p, reason);
  ob__pg_p_int(&p, attempts);
  ob__pg_p_int(&p, r->first_failed_at ? r->first_failed_at : now);
  ob__pg_p_int(&p, now);
  ob__pg_p_int(&p, r->created_at);
  ob__pg_p_text(&p, effect_key);
  ob__pg_p_text(&p, r->source);
  rc = ob__pg_run_done(db, sql, &p, "failure store insert");
  if (rc < 0) return rc;
  /* rowid 0: a message from outside (SQS) that never had a queue row. */
  return r->rowid > 0 ? ob__pg_queue_delete(db, r->rowid) : 0;
}

int ob__pg_failed_insert(ob__db_t* db, const ob__queue_row_t* r,
                         const char* error_class, const char* reason,
                         int attempts, int64_t now) {
  return ob__pg_failed_insert_effect(db, r, error_class, reason, attempts,
                                     NULL, now);
}

int ob__pg_failed_list(ob__db_t* db, int64_t id, const char* type,
                       int (*cb)(void* arg, const ob_failed_t* f),
                       void* arg) {
  static const char sql[] =
      "SELECT id, message_id, queue_name, type, headers, body, error_class,"
      " reason, attempts, first_failed_at, last_failed_at, source FROM"
      " failed_message WHERE ($1::bigint <= 0 OR id = $1::bigint) AND"
      " ($2::text IS NULL OR type = $2::text) ORDER BY id";
  ob__pg_params_t p;
  PGresult* res;
  int n;
  ob__pg_params_init(&p);
  ob__pg_p_int(&p, id);
  ob__pg_p_text(&p, type);
  res = ob__pg_run(db, sql, &p, "failed list");
  if (res == NULL) return db->last_err;
  n = PQntuples(res);
  for (int i = 0; i < n; i++) {
    ob_failed_t f;
    int oom = 0;
    char* body;
    size_t body_len;
    memset(&f, 0, sizeof f);
    body = ob__pg_dup_bytea(res, i, 5, &body_len, &oom);
    if (oom) {
      PQclear(res);
      return ob__db_seterr(db, OB_ENOMEM, "failed list: out of memory");
    }
    f.id = ob__pg_int(res, i, 0);
    f.message_id = PQgetvalue(res, i, 1);
    f.queue = PQgetvalue(res, i, 2);
    f.type = PQgetvalue(res, i, 3);
    f.headers = ob__pg_isnull(res, i, 4) ? NULL : PQgetvalue(res, i, 4);
    f.body = body ? body : "";
    f.body_len = body ? body_len : 0;
    f.error_class = PQgetvalue(res, i, 6);
    f.reason = PQgetvalue(res, i, 7);
    f.attempts = (int)ob__pg_int(res, i, 8);
    f.first_failed_at_ms = ob__pg_int(res, i, 9);
    f.last_failed_at_ms = ob__pg_int(res, i, 10);
    f.source = ob__pg_isnull(res, i, 11) ? NULL : PQgetvalue(res, i, 11);
    {
      int stop = cb != NULL && cb(arg, &f) != 0;
      free(body);
      if (stop) {
        PQclear(res);
        return i + 1;
      }
    }
  }
  PQclear(res);
  return n;
}

int ob__pg_failed_retry(ob__db_t* db, int64_t id, int64_t now) {
  /* Back to the queue with attempts reset, in id order, and out of the
  ** store, in one transaction; the rows locked so that two operators'
  ** retries do not queue a message twice. */
  static const char move[] =
      "WITH f AS (DELETE FROM failed_message WHERE id IN (SELECT id FROM"
      " failed_message WHERE ($1::bigint <= 0 OR id = $1::bigint)"
      " ORDER BY id FOR UPDATE) RETURNING id, queue_name, message_id, type,"
      " headers, body, created_at, source)"
      " INSERT INTO queue(queue_name, message_id, type, headers, body,"
      " available_at, attempts, created_at, source) SELECT queue_name,"
      " message_id, type, headers, body, $2::bigint, 0, created_at, source"
      " FROM f ORDER BY id";
  ob__pg_params_t p;
  int rc, moved;
  if ((rc = ob__pg_db_begin(db)) < 0) return rc;
  ob__pg_params_init(&p);
  ob__pg_p_int(&p, id);
  ob__pg_p_int(&p, now);
  moved = ob__pg_run_done(db, move, &p, "failed retry");
  if (moved < 0) {
    ob__pg_db_rollback(db);
    return moved;
  }
  if (moved == 0) {
    ob__pg_db_rollback(db);
    return id > 0 ? ob__db_seterr(db, OB_ENOTFOUND,
                                  "no failed message with id %lld",
                                  (long long)id)
                  : 0;
  }
  rc = ob__pg_db_commit(db);
  return rc < 0 ? rc : moved;
}

int ob__pg_failed_remove(ob__db_t* db, int64_t id) {
  static const char sql[] =
      "DELETE FROM failed_message WHERE ($1::bigint <= 0 OR id = $1::bigint)";
  ob__pg_params_t p;
  int rc, n;
  if ((rc = ob__pg_db_begin(db)) < 0) return rc;
  ob__pg_params_init(&p);
  ob__pg_p_int(&p, id);
  n = ob__pg_run_done(db, sql, &p, "failed remove");
  if (n < 0) {
    ob__pg_db_rollback(db);
    return n;
  }
  if ((rc = ob__pg_db_commit(db)) < 0) return rc;
  if (n == 0 && id > 0)
    return ob__db_seterr(db, OB_ENOTFOUND, "no failed message with id %lld",
                         (long long)id);
  return n;
}
