/* SPDX-License-Identifier: Apache-2.0 */
/* Outbox rows on PostgreSQL: written in the handling transaction, read by
** in-process sinks (ob_outbox_drain) and operators (ob_outbox_list).
**
** outbox_event is partitioned by created_at, so its key is (id,
** created_at): the marks find a row by id through that key's index in
** every partition. */
#include <stdint.h>
#include <string.h>

#include "storage/postgresql/pg_int.h"

int ob__pg_outbox_insert(ob__db_t* db, const char* id,
                         const char* causation_id, const char* event_type,
                         const char* aggregate_id, const char* payload,
                         size_t payload_len, const char* traceparent,
                         const char* tracestate, int64_t now,
                         int64_t wall_behind_ms) {
  static const char sql[] =
      "INSERT INTO outbox_event(id, causation_id, event_type, aggregate_id,"
      " payload, created_at, next_attempt_at, traceparent, tracestate,"
      " wall_behind_ms) VALUES ($1::text, $2::text, $3::text, $4::text,"
      " $5::text, $6::bigint, $6::bigint, $7::text, $8::text,"
      " nullif($9::bigint, 0))";
  ob__pg_params_t p;
  int rc;
  /* A text parameter ends at its NUL; a payload with one is not JSON
  ** (and PostgreSQL's text holds no NUL). */
  if (strlen(payload) != payload_len)
    return ob__db_seterr(db, OB_EINVAL, "outbox payload holds a NUL byte");
  ob__pg_params_init(&p);
  ob__pg_p_text(&p, id);
  ob__pg_p_text(&p, causation_id);
  ob__pg_p_text(&p, event_type);
  ob__pg_p_text(&p, aggregate_id);
  ob__pg_p_text(&p, payload);
  ob__pg_p_int(&p, now);
  ob__pg_p_text(&p, traceparent);
  ob__pg_p_text(&p, tracestate);
  ob__pg_p_int(&p, wall_behind_ms > 0 ? wall_behind_ms : 0);
  rc = ob__pg_run_done(db, sql, &p, "outbox insert");
  return rc < 0 ? rc : 0;
}

/* A text column, NULL for SQL NULL. Valid until the result is cleared. */
static const char* col(const PGresult* res, int i, int c) {
  return ob__pg_isnull(res, i, c) ? NULL : PQgetvalue(res, i, c);
}

int ob__pg_outbox_due(ob__db_t* db, int64_t now, size_t max,
                      int (*cb)(void* arg, const ob_event_t* ev),
                      void* arg) {
  /* A plain read, as on SQLite: ob_outbox_drain runs it outside any
  ** transaction (row locks would end with the statement) and marks the
  ** rows afterwards in one transaction of its own. */
  static const char sql[] =
      "SELECT id, causation_id, event_type, aggregate_id, payload,"
      " created_at, attempt_count, traceparent, tracestate,"
      " coalesce(wall_behind_ms, 0) FROM outbox_event"
      " WHERE published_at IS NULL AND parked_at IS NULL"
      " AND next_attempt_at <= $1::bigint ORDER BY created_at, id"
      " LIMIT $2::bigint";
  ob__pg_params_t p;
  PGresult* res;
  int n, visited = 0;
#if SIZE_MAX > INT64_MAX
  if (max > INT64_MAX) max = INT64_MAX;
#endif
  ob__pg_params_init(&p);
  ob__pg_p_int(&p, now);
  ob__pg_p_int(&p, (int64_t)max);
  /* Every row is in res before the first callback: cb may call other
  ** store functions on this connection. */
  res = ob__pg_run(db, sql, &p, "outbox read");
  if (res == NULL) return db->last_err ? db->last_err : OB_EDB;
  n = PQntuples(res);
  for (int i = 0; i < n; i++) {
    ob_event_t ev;
    ev.id = PQgetvalue(res, i, 0);
    ev.causation_id = PQgetvalue(res, i, 1);
    ev.event_type = PQgetvalue(res, i, 2);
    ev.aggregate_id = PQgetvalue(res, i, 3);
    ev.payload = PQgetvalue(res, i, 4);
    ev.payload_len = (size_t)PQgetlength(res, i, 4);
    ev.created_at_ms = ob__pg_int(res, i, 5);
    ev.attempt_count = (int)ob__pg_int(res, i, 6);
    ev.traceparent = col(res, i, 7);
    ev.tracestate = col(res, i, 8);
    ev.wall_behind_ms = ob__pg_int(res, i, 9);
    visited++;
    if (cb(arg, &ev) != 0) break;
  }
  PQclear(res);
  return visited;
}

int ob__pg_outbox_mark_published(ob__db_t* db, const char* id, int64_t now) {
  static const char sql[] =
      "UPDATE outbox_event SET published_at = $2::bigint, claim_token = NULL,"
      " claim_until = NULL, clock_ref = NULL"
      " WHERE id = $1::text AND published_at IS NULL";
  ob__pg_params_t p;
  int rc;
  ob__pg_params_init(&p);
  ob__pg_p_text(&p, id);
  ob__pg_p_int(&p, now);
  rc = ob__pg_run_done(db, sql, &p, "outbox mark published");
  return rc < 0 ? rc : 0;
}

int ob__pg_outbox_mark_failed(ob__db_t* db, const char* id,
                              int64_t next_attempt_at, const char* error,
                              int64_t now) {
  /* clock_ref only while the retry lies ahead (store.h). */
  static const char sql[] =
      "UPDATE outbox_event SET attempt_count = attempt_count + 1,"
      " next_attempt_at = $2::bigint, last_error = $3::text,"
      " claim_token = NULL, claim_until = NULL, clock_ref = CASE WHEN"
      " $2::bigint > $4::bigint THEN $4::bigint END"
      " WHERE id = $1::text AND published_at IS NULL";
  ob__pg_params_t p;
  int rc;
  ob__pg_params_init(&p);
  ob__pg_p_text(&p, id);
  ob__pg_p_int(&p, next_attempt_at);
  ob__pg_p_text(&p, error);
  ob__pg_p_int(&p, now);
  rc = ob__pg_run_done(db, sql, &p, "outbox mark failed");
  return rc < 0 ? rc : 0;
}

int ob__pg_outbox_list(ob__db_t* db, int filter, size_t limit,
                       int (*cb)(void* arg, const ob_outbox_row_t* r),
                       void* arg) {
  /* filter is OB__OUTBOX_ALL, _UNPUBLISHED or _PARKED (store.h). */
  static const char sql[] =
      "SELECT id, causation_id, event_type, aggregate_id, payload,"
      " created_at, coalesce(published_at, 0), next_attempt_at,"
      " coalesce(parked_at, 0), attempt_count, last_error FROM outbox_event"
      " WHERE $1::bigint = 0 OR ($1::bigint = 1 AND published_at IS NULL)"
      " OR ($1::bigint = 2 AND parked_at IS NOT NULL AND"
      " published_at IS NULL) ORDER BY created_at, id LIMIT $2::bigint";
  ob__pg_params_t p;
  PGresult* res;
  int n, visited = 0;
  /* A limit past INT64_MAX is no limit; with a 32-bit size_t none is. */
#if SIZE_MAX > INT64_MAX
  if (limit > INT64_MAX) limit = INT64_MAX;
#endif
  ob__pg_params_init(&p);
  ob__pg_p_int(&p, filter);
  ob__pg_p_int(&p, (int64_t)limit);
  res = ob__pg_run(db, sql, &p, "outbox list");
  if (res == NULL) return db->last_err ? db->last_err : OB_EDB;
  n = PQntuples(res);
  for (int i = 0; i < n; i++) {
    ob_outbox_row_t r;
    r.id = PQgetvalue(res, i, 0);
    r.causation_id = PQgetvalue(res, i, 1);
    r.event_type = PQgetvalue(res, i, 2);
    r.aggregate_id = PQgetvalue(res, i, 3);
    r.payload = PQgetvalue(res, i, 4);
    r.payload_len = (size_t)PQgetlength(res, i, 4);
    r.created_at_ms = ob__pg_int(res, i, 5);
    r.published_at_ms = ob__pg_int(res, i, 6);
    r.next_attempt_at_ms = ob__pg_int(res, i, 7);
    r.parked_at_ms = ob__pg_int(res, i, 8);
    r.attempt_count = (int)ob__pg_int(res, i, 9);
    r.last_error = col(res, i, 10);
    visited++;
    if (cb && cb(arg, &r) != 0) break;
  }
  PQclear(res);
  return visited;
}
