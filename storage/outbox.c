/* SPDX-License-Identifier: Apache-2.0 */
/* Outbox rows: written in the handling transaction, read by in-process
** sinks (ob_outbox_drain) and operators (ob_outbox_list); the relay's
** claims are relay.c's. On PostgreSQL outbox_event is partitioned by
** created_at, so its key is (id, created_at): the marks find a row by id
** through that key's index in every partition. */
#include <stdint.h>
#include <string.h>

#include "storage/sql.h"

int ob__outbox_insert(ob__db_t* db, const char* id,
                          const char* causation_id, const char* event_type,
                          const char* aggregate_id, const char* payload,
                          size_t payload_len, const char* traceparent,
                          const char* tracestate, int64_t now,
                          int64_t wall_behind_ms) {
  static const char sql[] =
      "INSERT INTO outbox_event(id, causation_id, event_type, aggregate_id,"
      " payload, created_at, next_attempt_at, traceparent, tracestate,"
      " wall_behind_ms) VALUES (?1,?2,?3,?4,?5,?6,?6,?7,?8,nullif(?9, 0))";
  ob__sql_t s;
  int rc;
  /* PostgreSQL's text holds no NUL (and a payload with one is not JSON). */
  if (ob__sql_is_pg(db) && strlen(payload) != payload_len)
    return ob__db_seterr(db, OB_EINVAL, "outbox payload holds a NUL byte");
  ob__sql_prepare(db, &s, OB__O_INSERT, sql, "outbox insert");
  ob__sql_text(&s, 1, id);
  ob__sql_text(&s, 2, causation_id);
  ob__sql_text(&s, 3, event_type);
  ob__sql_text(&s, 4, aggregate_id);
  ob__sql_textn(&s, 5, payload, payload_len);
  ob__sql_int(&s, 6, now);
  ob__sql_text(&s, 7, traceparent);
  ob__sql_text(&s, 8, tracestate);
  ob__sql_int(&s, 9, wall_behind_ms > 0 ? wall_behind_ms : 0);
  rc = ob__sql_done(&s);
  return rc < 0 ? rc : 0;
}

/* A limit past INT64_MAX is no limit; with a 32-bit size_t (armhf) none
** is, and the comparison would be always false (-Wtype-limits). */
static int64_t limit_of(size_t n) {
#if SIZE_MAX > INT64_MAX
  if (n > INT64_MAX) return INT64_MAX;
#endif
  return (int64_t)n;
}

int ob__outbox_due(ob__db_t* db, int64_t now, size_t max,
                       int (*cb)(void* arg, const ob_event_t* ev),
                       void* arg) {
  /* A plain read: ob_outbox_drain runs it outside any transaction and
  ** marks the rows afterwards in one transaction of its own. */
  static const char sql[] =
      "SELECT id, causation_id, event_type, aggregate_id, payload, created_at,"
      " attempt_count, traceparent, tracestate, coalesce(wall_behind_ms, 0)"
      " FROM outbox_event WHERE published_at IS NULL AND parked_at IS NULL"
      " AND next_attempt_at <= ?1 ORDER BY created_at, id LIMIT ?2";
  ob__sql_t s;
  int rc, n = 0;
  ob__sql_prepare(db, &s, OB__O_DUE, sql, "outbox read");
  ob__sql_int(&s, 1, now);
  ob__sql_int(&s, 2, limit_of(max));
  while ((rc = ob__sql_step(&s)) > 0) {
    ob_event_t ev;
    ev.id = ob__sql_col_text(&s, 0);
    ev.causation_id = ob__sql_col_text(&s, 1);
    ev.event_type = ob__sql_col_text(&s, 2);
    ev.aggregate_id = ob__sql_col_text(&s, 3);
    ev.payload = ob__sql_col_textn(&s, 4, &ev.payload_len);
    ev.created_at_ms = ob__sql_col_int(&s, 5);
    ev.attempt_count = (int)ob__sql_col_int(&s, 6);
    ev.traceparent = ob__sql_col_text(&s, 7);
    ev.tracestate = ob__sql_col_text(&s, 8);
    ev.wall_behind_ms = ob__sql_col_int(&s, 9);
    if (!ev.id || !ev.causation_id || !ev.event_type || !ev.aggregate_id ||
        !ev.payload) {
      rc = ob__db_seterr(db, OB_ENOMEM, "outbox read: out of memory");
      break;
    }
    n++;
    if (cb(arg, &ev) != 0) break;
  }
  ob__sql_finish(&s);
  return rc < 0 ? rc : n;
}

int ob__outbox_mark_published(ob__db_t* db, const char* id, int64_t now) {
  static const char sql[] =
      "UPDATE outbox_event SET published_at = ?2, claim_token = NULL,"
      " claim_until = NULL, clock_ref = NULL"
      " WHERE id = ?1 AND published_at IS NULL";
  ob__sql_t s;
  int rc;
  ob__sql_prepare(db, &s, OB__O_MARK_PUBLISHED, sql, "outbox mark published");
  ob__sql_text(&s, 1, id);
  ob__sql_int(&s, 2, now);
  rc = ob__sql_done(&s);
  return rc < 0 ? rc : 0;
}

int ob__outbox_mark_failed(ob__db_t* db, const char* id,
                               int64_t next_attempt_at, const char* error,
                               int64_t now) {
  /* clock_ref only while the retry lies ahead (store.h). */
  static const char sql[] =
      "UPDATE outbox_event SET attempt_count = attempt_count + 1,"
      " next_attempt_at = ?2, last_error = ?3, claim_token = NULL,"
      " claim_until = NULL, clock_ref = CASE WHEN ?2 > ?4 THEN ?4 END"
      " WHERE id = ?1 AND published_at IS NULL";
  ob__sql_t s;
  int rc;
  ob__sql_prepare(db, &s, OB__O_MARK_FAILED, sql, "outbox mark failed");
  ob__sql_text(&s, 1, id);
  ob__sql_int(&s, 2, next_attempt_at);
  ob__sql_text(&s, 3, error);
  ob__sql_int(&s, 4, now);
  rc = ob__sql_done(&s);
  return rc < 0 ? rc : 0;
}

int ob__outbox_list(ob__db_t* db, int filter, size_t limit,
                        int (*cb)(void* arg, const ob_outbox_row_t* r),
                        void* arg) {
  /* filter is OB__OUTBOX_ALL, _UNPUBLISHED or _PARKED (store.h). */
  static const char sql[] =
      "SELECT id, causation_id, event_type, aggregate_id, payload, created_at,"
      " coalesce(published_at, 0), next_attempt_at, coalesce(parked_at, 0),"
      " attempt_count, last_error FROM outbox_event"
      " WHERE ?1 = 0 OR (?1 = 1 AND published_at IS NULL)"
      " OR (?1 = 2 AND parked_at IS NOT NULL AND published_at IS NULL)"
      " ORDER BY created_at, id LIMIT ?2";
  ob__sql_t s;
  int rc, n = 0;
  ob__sql_prepare(db, &s, OB__SQL_ONCE, sql, "outbox list");
  ob__sql_int(&s, 1, filter);
  ob__sql_int(&s, 2, limit_of(limit));
  while ((rc = ob__sql_step(&s)) > 0) {
    ob_outbox_row_t r;
    r.id = ob__sql_col_text(&s, 0);
    r.causation_id = ob__sql_col_text(&s, 1);
    r.event_type = ob__sql_col_text(&s, 2);
    r.aggregate_id = ob__sql_col_text(&s, 3);
    r.payload = ob__sql_col_textn(&s, 4, &r.payload_len);
    r.created_at_ms = ob__sql_col_int(&s, 5);
    r.published_at_ms = ob__sql_col_int(&s, 6);
    r.next_attempt_at_ms = ob__sql_col_int(&s, 7);
    r.parked_at_ms = ob__sql_col_int(&s, 8);
    r.attempt_count = (int)ob__sql_col_int(&s, 9);
    r.last_error = ob__sql_col_text(&s, 10);
    n++;
    if (cb && cb(arg, &r) != 0) break;
  }
  ob__sql_finish(&s);
  return rc < 0 ? rc : n;
}
