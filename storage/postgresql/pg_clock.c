/* SPDX-License-Identifier: Apache-2.0 */
/* The clocks on PostgreSQL: the engine clock, the observed clock retention
** counts on, and the probe for deadlines computed on a clock that went
** back. */
#include <string.h>

#include "storage/postgresql/pg_int.h"

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
