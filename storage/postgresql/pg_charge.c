/* SPDX-License-Identifier: Apache-2.0 */
/* The ChargeOrder module's business table on PostgreSQL: one charge per
** order (its statistics and invariants are pg_stats.c's). */
#include "storage/postgresql/pg_int.h"

int ob__pg_charge_insert(ob__db_t* db, const char* order_id,
                         int64_t amount_minor, const char* currency,
                         const char* provider_charge_id,
                         const char* effect_key, const char* message_id,
                         int64_t now) {
  /* The order id's PRIMARY KEY decides, across processes: a second
  ** inserter waits for the first's transaction, then sees the conflict. */
  static const char sql[] =
      "INSERT INTO charge(order_id, amount_minor, currency,"
      " provider_charge_id, effect_key, message_id, created_at)"
      " VALUES ($1::text, $2::bigint, $3::text, $4::text, $5::text,"
      " $6::text, $7::bigint) ON CONFLICT (order_id) DO NOTHING RETURNING 1";
  ob__pg_params_t p;
  int rc;
  ob__pg_params_init(&p);
  ob__pg_p_text(&p, order_id);
  ob__pg_p_int(&p, amount_minor);
  ob__pg_p_text(&p, currency);
  ob__pg_p_text(&p, provider_charge_id);
  ob__pg_p_text(&p, effect_key);
  ob__pg_p_text(&p, message_id);
  ob__pg_p_int(&p, now);
  rc = ob__pg_run_done(db, sql, &p, "charge insert");
  return rc < 0 ? rc : rc > 0;
}
