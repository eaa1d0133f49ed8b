/* SPDX-License-Identifier: Apache-2.0 */
/* The failure store: messages that exhausted their retries, were
** unrecoverable or wait for a person to resolve an effect, until an
** operator retries or removes them. Every move between the queue and the
** store is ob__sql_move's (one statement on PostgreSQL, so a row moves
** exactly once even when two processes move the same rows at once). */
#include <stdint.h>
#include <string.h>

#include "storage/sql.h"

int ob__failed_insert(ob__db_t* db, const ob__queue_row_t* r,
                          const char* error_class, const char* reason,
                          int attempts, int64_t now) {
  return ob__failed_insert_effect(db, r, error_class, reason, attempts,
                                      NULL, now);
}

int ob__failed_insert_effect(ob__db_t* db, const ob__queue_row_t* r,
                                 const char* error_class, const char* reason,
                                 int attempts, const char* effect_key,
                                 int64_t now) {
  static const char sql[] =
      "INSERT INTO failed_message(queue_name, message_id, type, headers, body,"
      " error_class, reason, attempts, first_failed_at, last_failed_at,"
      " created_at, effect_key, source) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,"
      "?10,?11,?12,?13)";
  ob__sql_t s;
  int rc;
  ob__sql_prepare(db, &s, OB__F_INSERT, sql, "failure store insert");
  ob__sql_message(&s, r);
  ob__sql_text(&s, 6, error_class);
  ob__sql_text(&s, 7, reason);
  ob__sql_int(&s, 8, attempts);
  ob__sql_int(&s, 9, r->first_failed_at ? r->first_failed_at : now);
  ob__sql_int(&s, 10, now);
  ob__sql_int(&s, 11, r->created_at);
  ob__sql_text(&s, 12, effect_key);
  ob__sql_text(&s, 13, r->source);
  if ((rc = ob__sql_done(&s)) < 0) return rc;
  /* rowid 0: a message from outside (SQS) that never had a queue row. */
  return r->rowid > 0 ? ob__queue_delete(db, r->rowid) : 0;
}

/* ---- filters over a backlog ------------------------------------------------
** One WHERE clause for every statement of the store; the filter's values
** are bound (?1..?5), never part of the SQL text. instr() on SQLite,
** strpos() on PostgreSQL (the same arguments), not LIKE: a reason holding %
** or _ needs no escaping. ?6/?7 bound the ids, (?6, ?7]: one batch, or one
** id. ?8 is each statement's own (limit, offset or now). */
#define WHERE(find)                                                         \
  " WHERE (?1 IS NULL OR type = ?1) AND (?2 IS NULL OR error_class = ?2)"   \
  " AND (?3 <= 0 OR last_failed_at >= ?3) AND (?4 <= 0 OR last_failed_at"  \
  " < ?4) AND (?5 IS NULL OR " find "(reason, ?5) > 0)"                     \
  " AND id > ?6 AND id <= ?7"
#define FILTERED(head, tail)                                                \
  { head WHERE("instr") tail, head WHERE("strpos") tail }

#define FAILED_COLUMNS                                                      \
  "id, message_id, queue_name, type, headers, body, error_class, reason,"   \
  " attempts, first_failed_at, last_failed_at, source"

/* The statement's parameters: a filter (NULL: all) over ids (lo, hi]. */
typedef struct {
  const ob_failed_filter_t* fl;
  const char* type;   /* ?1 when fl is NULL */
  int64_t lo, hi;
  int64_t extra;      /* ?8 */
} filter_t;

/* "" selects everything, as NULL does (ob_failed_filter_t). */
static const char* nonempty(const char* s) {
  return s != NULL && s[0] != '\0' ? s : NULL;
}

static void bind_filter(ob__sql_t* s, const void* arg) {
  const filter_t* f = arg;
  const ob_failed_filter_t* fl = f->fl;
  ob__sql_text(s, 1, fl ? nonempty(fl->type) : f->type);
  ob__sql_text(s, 2, fl ? nonempty(fl->error_class) : NULL);
  ob__sql_int(s, 3, fl ? fl->failed_after_ms : 0);
  ob__sql_int(s, 4, fl ? fl->failed_before_ms : 0);
  ob__sql_text(s, 5, fl ? nonempty(fl->reason_contains) : NULL);
  ob__sql_int(s, 6, f->lo);
  ob__sql_int(s, 7, f->hi);
  ob__sql_int(s, 8, f->extra);
}

/* The ids of id (> 0), or all (0 or less). */
static void by_id(filter_t* f, int64_t id) {
  memset(f, 0, sizeof *f);
  f->lo = id > 0 ? id - 1 : INT64_MIN;
  f->hi = id > 0 ? id : INT64_MAX;
}

/* The filter's limit as ?8: none is the largest. */
static int64_t limit_of(const ob_failed_filter_t* fl) {
  return fl != NULL && fl->limit > 0 ? fl->limit : INT64_MAX;
}

/* Hand each row (FAILED_COLUMNS, id order, at most the filter's limit) to
** cb (may be NULL; non-zero stops). The rows visited, or < 0. */
static int visit(ob__db_t* db, const filter_t* f,
                 int (*cb)(void* arg, const ob_failed_t* row), void* arg) {
  static const ob__sql_text_t sql = FILTERED(
      "SELECT " FAILED_COLUMNS " FROM failed_message", " ORDER BY id LIMIT ?8");
  ob__sql_t s;
  int rc, n = 0;
  /* Operator path: prepared per call on SQLite, not cached. */
  ob__sql_prepare2(db, &s, OB__SQL_ONCE, &sql, "failed list");
  bind_filter(&s, f);
  while ((rc = ob__sql_step(&s)) > 0) {
    ob_failed_t r;
    memset(&r, 0, sizeof r);
    r.id = ob__sql_col_int(&s, 0);
    r.message_id = ob__sql_col_text(&s, 1);
    r.queue = ob__sql_col_text(&s, 2);
    r.type = ob__sql_col_text(&s, 3);
    r.headers = ob__sql_col_text(&s, 4);
    r.body = ob__sql_col_blob(&s, 5, &r.body_len);
    r.error_class = ob__sql_col_text(&s, 6);
    r.reason = ob__sql_col_text(&s, 7);
    r.attempts = (int)ob__sql_col_int(&s, 8);
    r.first_failed_at_ms = ob__sql_col_int(&s, 9);
    r.last_failed_at_ms = ob__sql_col_int(&s, 10);
    r.source = ob__sql_col_text(&s, 11);
    if (r.body == NULL) r.body = "", r.body_len = 0;
    n++;
    if (cb && cb(arg, &r) != 0) break;
  }
  ob__sql_finish(&s);
  return rc < 0 ? rc : n;
}

int ob__failed_list(ob__db_t* db, int64_t id, const char* type,
                        int (*cb)(void* arg, const ob_failed_t* f),
                        void* arg) {
  filter_t f;
  by_id(&f, id);
  f.type = type;
  f.extra = INT64_MAX;
  return visit(db, &f, cb, arg);
}

int ob__failed_list_filter(ob__db_t* db, const ob_failed_filter_t* fl,
                               int (*cb)(void* arg, const ob_failed_t* f),
                               void* arg) {
  filter_t f = {fl, NULL, INT64_MIN, INT64_MAX, limit_of(fl)};
  return visit(db, &f, cb, arg);
}

int ob__failed_count(ob__db_t* db, const ob_failed_filter_t* fl) {
  /* The bodies are never read: the count runs over the row ids only. */
  static const ob__sql_text_t sql = FILTERED(
      "SELECT count(*) FROM (SELECT 1 FROM failed_message", " LIMIT ?8) AS s");
  filter_t f = {fl, NULL, INT64_MIN, INT64_MAX, limit_of(fl)};
  ob__sql_t s;
  int64_t n = 0;
  int rc;
  ob__sql_prepare2(db, &s, OB__SQL_ONCE, &sql, "failed count");
  bind_filter(&s, &f);
  if ((rc = ob__sql_int1(&s, &n)) < 0 && rc != OB_ENOTFOUND) return rc;
  return n > INT32_MAX ? INT32_MAX : (int)n;
}

/* Retry (back to the queue with attempts reset, due at ?8, in id order: a
** replay passes the same dedup guard as any delivery) or remove the rows of
** f, inside the open transaction. The rows moved or removed, or < 0. */
static int take(ob__db_t* db, int retry, const filter_t* f, const char* what) {
  static const ob__sql_text_t move = {
      "INSERT INTO queue(queue_name, message_id, type, headers, body,"
      " available_at, attempts, created_at, source) SELECT queue_name,"
      " message_id, type, headers, body, ?8, 0, created_at, source FROM"
      " failed_message" WHERE("instr") " ORDER BY id",
      "WITH f AS (DELETE FROM failed_message" WHERE("strpos")
      " RETURNING id, queue_name, message_id, type, headers, body,"
      " created_at, source) INSERT INTO queue(queue_name, message_id, type,"
      " headers, body, available_at, attempts, created_at, source)"
      " SELECT queue_name, message_id, type, headers, body, ?8, 0,"
      " created_at, source FROM f ORDER BY id"};
  static const ob__sql_text_t drop =
      FILTERED("DELETE FROM failed_message", "");
  if (retry) return ob__sql_move(db, &move, drop.sqlite, bind_filter, f, what);
  return ob__sql_move(db, &drop, NULL, bind_filter, f, what);
}

/* take() by id in a transaction of its own; OB_ENOTFOUND for an id that
** is not there. */
static int take_id(ob__db_t* db, int retry, int64_t id, int64_t now) {
  const char* what = retry ? "failed retry" : "failed remove";
  filter_t f;
  int rc, n;
  by_id(&f, id);
  f.extra = now;
  if ((rc = ob__db_begin(db)) < 0) return rc;
  if ((n = take(db, retry, &f, what)) <= 0) {
    ob__db_rollback(db);
    if (n < 0) return n;
  } else if ((rc = ob__db_commit(db)) < 0) {
    return rc;
  }
  if (n == 0 && id > 0)
    return ob__db_seterr(db, OB_ENOTFOUND, "no failed message with id %lld",
                         (long long)id);
  return n;
}

int ob__failed_retry(ob__db_t* db, int64_t id, int64_t now) {
  return take_id(db, 1, id, now);
}

int ob__failed_remove(ob__db_t* db, int64_t id) {
  return take_id(db, 0, id, 0);
}

int ob__failed_apply_filter(ob__db_t* db, int retry,
                                const ob_failed_filter_t* fl, int batch,
                                int64_t now, ob_failed_progress_fn progress,
                                void* arg) {
  static const char top[] = "SELECT max(id) FROM failed_message";
  /* The batch's last id: the want-th matching row after the previous
  ** batch (none when fewer remain: then all the rest). */
  static const ob__sql_text_t last_of = FILTERED(
      "SELECT id FROM failed_message", " ORDER BY id LIMIT 1 OFFSET ?8");
  const char* what = retry ? "failed retry" : "failed remove";
  int64_t max_id = 0, last = INT64_MIN;
  int total, done = 0, rc;
  ob__sql_t s;
  if (batch <= 0) batch = 500;
  /* The rows there now: failures arriving during a long run are not swept
  ** into a selection the operator counted before. */
  ob__sql_prepare(db, &s, OB__SQL_ONCE, top, what);
  if ((rc = ob__sql_int1(&s, &max_id)) < 0 && rc != OB_ENOTFOUND) return rc;
  if ((total = ob__failed_count(db, fl)) <= 0) return total;
  while (done < total) {
    int want = total - done < batch ? total - done : batch, n;
    filter_t f = {fl, NULL, last, max_id, want - 1};
    int64_t hi = max_id;
    if ((rc = ob__db_begin(db)) < 0) return rc;
    ob__sql_prepare2(db, &s, OB__SQL_ONCE, &last_of, what);
    bind_filter(&s, &f);
    if ((rc = ob__sql_int1(&s, &hi)) < 0 && rc != OB_ENOTFOUND) goto fail;
    f.hi = hi;
    f.extra = now;
    if ((n = take(db, retry, &f, what)) < 0) {
      rc = n;
      goto fail;
    }
    if ((rc = ob__db_commit(db)) < 0) return rc;
    done += n;
    last = hi;
    /* Once per commit: what it reports is durable. */
    if (progress && progress(arg, done, total) != 0) break;
    if (n == 0 || hi >= max_id) break;
  }
  return done;

fail:
  ob__db_rollback(db);
  return rc;
}

/* ---- messages that wait for an effect ----------------------------------- */

typedef struct {
  const char* key;
  const char* reason;
  int64_t now;
} effect_arg_t;

static void bind_effect(ob__sql_t* s, const void* arg) {
  const effect_arg_t* a = arg;
  ob__sql_text(s, 1, a->key);
  ob__sql_text(s, 2, a->reason);
  ob__sql_int(s, 3, a->now);
}

int ob__effect_park_waiting(ob__db_t* db, const char* key,
                                const char* reason, int64_t now) {
  /* Every row waiting on key, in id order, with the effect remembered so
  ** resolving it moves them back (requeue below). A row another
  ** transaction holds is waited for, not skipped: every one is moved. */
  static const ob__sql_text_t move = {
      "INSERT INTO failed_message(queue_name, message_id, type, headers,"
      " body, error_class, reason, attempts, first_failed_at,"
      " last_failed_at, created_at, effect_key, source) SELECT queue_name,"
      " message_id, type, headers, body, 'effect_unknown', ?2, attempts,"
      " coalesce(first_failed_at, ?3), ?3, created_at, ?1, source FROM queue"
      " WHERE waiting_on = ?1 ORDER BY id",
      "WITH q AS (DELETE FROM queue WHERE waiting_on = ?1 RETURNING"
      " id, queue_name, message_id, type, headers, body, attempts,"
      " first_failed_at, created_at, source)"
      " INSERT INTO failed_message(queue_name, message_id, type, headers,"
      " body, error_class, reason, attempts, first_failed_at,"
      " last_failed_at, created_at, effect_key, source)"
      " SELECT queue_name, message_id, type, headers, body,"
      " 'effect_unknown', ?2, attempts, coalesce(first_failed_at, ?3), ?3,"
      " created_at, ?1, source FROM q ORDER BY id"};
  effect_arg_t a = {key, reason, now};
  return ob__sql_move(db, &move, "DELETE FROM queue WHERE waiting_on = ?1",
                      bind_effect, &a,
                      "park messages of an effect");
}

int ob__effect_requeue_failed(ob__db_t* db, const char* key,
                                  int64_t now) {
  /* Due now, attempts reset, created anew. */
  static const ob__sql_text_t move = {
      "INSERT INTO queue(queue_name, message_id, type, headers, body,"
      " available_at, attempts, created_at, source) SELECT queue_name,"
      " message_id, type, headers, body, ?3, 0, ?3, source FROM"
      " failed_message WHERE effect_key = ?1 ORDER BY id",
      "WITH f AS (DELETE FROM failed_message WHERE effect_key = ?1"
      " RETURNING id, queue_name, message_id, type, headers, body, source)"
      " INSERT INTO queue(queue_name, message_id, type, headers, body,"
      " available_at, attempts, created_at, source)"
      " SELECT queue_name, message_id, type, headers, body, ?3, 0,"
      " ?3, source FROM f ORDER BY id"};
  effect_arg_t a = {key, NULL, now};
  return ob__sql_move(db, &move,
                      "DELETE FROM failed_message WHERE effect_key = ?1",
                      bind_effect, &a,
                      "requeue messages of an effect");
}
