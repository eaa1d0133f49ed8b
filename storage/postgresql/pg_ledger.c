/* SPDX-License-Identifier: Apache-2.0 */
/* What the payout handler writes on PostgreSQL (the outbox row is
** pg_outbox.c's), the observed clock retention counts on, and the probe
** for deadlines computed on a clock that went back. */
#include <stdio.h>
#include <string.h>

#include "storage/postgresql/pg_int.h"

int ob__pg_payout_insert(ob__db_t* db, const char* payout_id,
                         const char* payment_id, const char* merchant_id,
                         int64_t amount_minor, const char* currency,
                         const char* event_id, int64_t now,
                         char existing_event[OB_UUID_BUFLEN]) {
  /* The payment's UNIQUE decides, atomically, across processes: a second
  ** inserter waits for the first's transaction and then sees the conflict. */
  static const char sql[] =
      "INSERT INTO merchant_payout(id, source_payment_id, merchant_id,"
      " amount_minor, currency, source_event_id, created_at)"
      " VALUES ($1::text, $2::text, $3::text, $4::bigint, $5::text,"
      " $6::text, $7::bigint) ON CONFLICT (source_payment_id) DO NOTHING"
      " RETURNING 1";
  static const char who[] =
      "SELECT source_event_id FROM merchant_payout"
      " WHERE source_payment_id = $1::text";
  ob__pg_params_t p;
  PGresult* res;
  int rc;
  ob__pg_params_init(&p);
  ob__pg_p_text(&p, payout_id);
  ob__pg_p_text(&p, payment_id);
  ob__pg_p_text(&p, merchant_id);
  ob__pg_p_int(&p, amount_minor);
  ob__pg_p_text(&p, currency);
  ob__pg_p_text(&p, event_id);
  ob__pg_p_int(&p, now);
  rc = ob__pg_run_done(db, sql, &p, "payout insert");
  if (rc != 0) return rc < 0 ? rc : 1;
  if (existing_event != NULL) {
    existing_event[0] = '\0';
    ob__pg_params_init(&p);
    ob__pg_p_text(&p, payment_id);
    res = ob__pg_run(db, who, &p, "payout lookup");
    if (res == NULL) return db->last_err;
    if (PQntuples(res) > 0)
      snprintf(existing_event, OB_UUID_BUFLEN, "%s", PQgetvalue(res, 0, 0));
    PQclear(res);
  }
  return 0;
}

int ob__pg_engine_clock_load(ob__db_t* db, int64_t* ms) {
  static const char sql[] = "SELECT ms FROM engine_clock WHERE id = 1";
  return ob__pg_run_int(db, sql, NULL, "engine clock", ms);
}

int ob__pg_engine_clock_record(ob__db_t* db) {
  static const char sql[] =
      "INSERT INTO engine_clock(id, ms) VALUES (1, $1::bigint)"
      " ON CONFLICT (id) DO UPDATE SET ms ="
      " greatest(engine_clock.ms, EXCLUDED.ms)";
  ob__pg_params_t p;
  int rc;
  ob__pg_params_init(&p);
  ob__pg_p_int(&p, db->clock_pending);
  rc = ob__pg_run_done(db, sql, &p, "engine clock");
  return rc < 0 ? rc : 0;
}

int ob__pg_observed_clock_load(ob__db_t* db, int64_t* ms) {
  static const char sql[] =
      "SELECT observed_ms FROM retention_clock WHERE id = 1";
  return ob__pg_run_int(db, sql, NULL, "observed clock", ms);
}

int ob__pg_observed_clock_store(ob__db_t* db, int64_t ms) {
  static const char sql[] =
      "INSERT INTO retention_clock(id, observed_ms) VALUES (1, $1::bigint)"
      " ON CONFLICT (id) DO UPDATE SET observed_ms ="
      " greatest(retention_clock.observed_ms, EXCLUDED.observed_ms)";
  ob__pg_params_t p;
  int rc;
  ob__pg_params_init(&p);
  ob__pg_p_int(&p, ms);
  rc = ob__pg_run_done(db, sql, &p, "observed clock");
  return rc < 0 ? rc : 0;
}

int ob__pg_deadlines_ahead(ob__db_t* db, int64_t now, int64_t ahead_ms,
                           int64_t* max_ref) {
  static const char sql[] =
      "SELECT greatest((SELECT max(clock_ref) FROM queue),"
      " (SELECT max(clock_ref) FROM outbox_event),"
      " (SELECT max(clock_ref) FROM effect))";
  int64_t m = 0;
  int rc = ob__pg_run_int(db, sql, NULL, "deadlines", &m);
  if (rc == OB_ENOTFOUND) m = 0, rc = 0;
  if (rc < 0) return rc;
  *max_ref = m > now + ahead_ms ? m : 0;
  return 0;
}
