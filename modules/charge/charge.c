/* SPDX-License-Identifier: Apache-2.0 */
/* The ChargeOrder module: one provider charge per order behind the fence
** "charge:<orderId>", then one charge row and one OrderCharged event in the
** transaction that records the provider's answer. Built on oncebox.h
** alone, as an embedder's module is (decision 0024). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "charge_msg.h"
#include "oncebox_charge.h"

/* ---- the schema: files made before the module had a schema of its own
** already hold the table (IF NOT EXISTS adopts it) ---------------------- */
static const ob_migration_t sqlite_schema[] = {
    {"charge", 1,
     "CREATE TABLE IF NOT EXISTS charge ("
     "  order_id TEXT PRIMARY KEY,"
     "  amount_minor INTEGER NOT NULL CHECK (amount_minor > 0),"
     "  currency TEXT NOT NULL CHECK (length(currency) = 3),"
     "  provider_charge_id TEXT NOT NULL,"
     "  effect_key TEXT NOT NULL,"
     "  message_id TEXT NOT NULL,"
     "  created_at INTEGER NOT NULL"
     ") STRICT;"},
};

static const ob_migration_t postgresql_schema[] = {
    {"charge", 1,
     "CREATE TABLE IF NOT EXISTS charge ("
     "  order_id TEXT PRIMARY KEY,"
     "  amount_minor BIGINT NOT NULL CHECK (amount_minor > 0),"
     "  currency TEXT NOT NULL CHECK (length(currency) = 3),"
     "  provider_charge_id TEXT NOT NULL,"
     "  effect_key TEXT NOT NULL,"
     "  message_id TEXT NOT NULL,"
     "  created_at BIGINT NOT NULL);"},
};

/* ---- the handler ---------------------------------------------------------- */

static const char insert_sql[] =
    "INSERT INTO charge(order_id, amount_minor, currency, provider_charge_id,"
    " effect_key, message_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)"
    " ON CONFLICT (order_id) DO NOTHING";

static int charge_handle(ob_tx_t* tx, const ob_message_t* msg, void* arg) {
  ob_charge__order_t o;
  ob_effect_request_t req;
  ob_effect_t ef;
  char reason[256], key[OB_CHARGE__ORDER_ID_MAX + 16];
  char *body, *payload;
  const char* ref;
  int rc;
  (void)arg;

  if (ob_charge__parse(msg->body, msg->body_len, &o, reason,
                       sizeof reason) != 0)
    return ob_tx_fail(tx, reason);
  snprintf(key, sizeof key, "charge:%s", o.order_id);
  body = ob_charge__request_body(&o);
  if (body == NULL) return OB_ENOMEM;
  memset(&req, 0, sizeof req);
  req.provider = OB_CHARGE_PROVIDER;
  req.method = "POST";
  req.path = "/v1/charges";
  req.body = body;
  req.body_len = strlen(body);
  req.lookup_reference = o.order_id;  /* the provider knows charges by it */
  /* What the provider's offline limits count (docs/offline.md). */
  req.amount = o.amount_minor;
  req.currency = o.currency;
  rc = ob_tx_effect(tx, key, &req, &ef);
  free(body);
  /* OB_EOFFLINE (offline, over a limit) too: a retry, the order is not
  ** consumed and nothing of it is recorded. */
  if (rc != OB_DONE) return rc;

  /* Confirmed. A provider that answered 2xx without an id still charged:
  ** the idempotency key then stands in as the reference. */
  ref = ef.reference ? ef.reference : ef.idempotency_key;
  {
    ob_value_t v[7] = {OB_VTEXT(o.order_id), OB_VINT(o.amount_minor),
                       OB_VTEXT(o.currency), OB_VTEXT(ref),
                       OB_VTEXT(key),        OB_VTEXT(msg->id),
                       OB_VINT(ob_tx_now_ms(tx))};
    rc = ob_tx_exec(tx, insert_sql, v, 7, NULL, NULL);
  }
  if (rc < 0) return rc;
  if (rc == 0) return OB_DONE;  /* another message recorded this order */
  payload = ob_charge__event_payload(&o, ref);
  if (payload == NULL) return OB_ENOMEM;
  rc = ob_tx_emit(tx, OB_CHARGE_EVENT_TYPE, o.order_id, payload,
                  strlen(payload), NULL);
  free(payload);
  return rc < 0 ? rc : OB_DONE;
}

/* ---- the invariants (ob_check): every recorded charge stands on a
** confirmed effect with its provider reference, and each charge has one
** OrderCharged event. (That a reference is confirmed once is the engine's
** own check.) One row per violation, the same text on both dialects. ---- */
static const char* const checks[] = {
    "SELECT 'charge of order ' || c.order_id || ' (provider charge ' ||"
    " c.provider_charge_id || ') has no confirmed fence ' || c.effect_key"
    " FROM charge c WHERE NOT EXISTS (SELECT 1 FROM effect f WHERE"
    " f.key = c.effect_key AND f.state = 'confirmed' AND"
    " f.reference = c.provider_charge_id)",
    "SELECT 'charge of order ' || c.order_id || ' has ' || count(o.id) ||"
    " ' OrderCharged outbox rows' FROM charge c LEFT JOIN outbox_event o"
    " ON o.event_type = 'OrderCharged' AND o.aggregate_id = c.order_id"
    " GROUP BY c.order_id, c.created_at HAVING count(o.id) > 1 OR"
    " (count(o.id) = 0 AND c.created_at > (SELECT"
    " coalesce(max(outbox_created_before_ms), -1) FROM retention_swept))",
};

static int charge_check(ob_tx_t* tx, ob_violation_cb cb, void* cb_arg,
                        void* arg) {
  (void)arg;
  return ob_tx_check_sql(tx, checks, sizeof checks / sizeof checks[0], cb,
                         cb_arg);
}

/* ---- the figures ---------------------------------------------------------- */

/* A provider success recorded without a confirmed fence: a charge whose
** fence is missing, not confirmed or carries another reference, and every
** reference confirmed under more than one key beyond the first. */
/* CAST: PostgreSQL's sum of bigints is a numeric. */
static const char unfenced_sql[] =
    "SELECT CAST((SELECT count(*) FROM charge c WHERE NOT EXISTS (SELECT 1"
    " FROM effect f WHERE f.key = c.effect_key AND f.state = 'confirmed' AND"
    " f.reference = c.provider_charge_id)) + (SELECT coalesce(sum(n - 1), 0)"
    " FROM (SELECT count(*) AS n FROM effect WHERE state = 'confirmed' AND"
    " reference IS NOT NULL GROUP BY reference HAVING count(*) > 1) AS r)"
    " AS BIGINT)";

static int copy_int(void* arg, const ob_value_t* cols, size_t ncols) {
  if (ncols > 0 && cols[0].type == OB_TYPE_INT) *(int64_t*)arg = cols[0].i;
  return 1;
}

static int read_figures(ob_tx_t* tx, ob_charge_stats_t* s) {
  int rc;
  s->charges = s->unfenced_successes = 0;
  rc = ob_tx_exec(tx, "SELECT count(*) FROM charge", NULL, 0, copy_int,
                  &s->charges);
  if (rc >= 0)
    rc = ob_tx_exec(tx, unfenced_sql, NULL, 0, copy_int,
                    &s->unfenced_successes);
  return rc < 0 ? rc : 0;
}

static int charge_figures(ob_tx_t* tx, ob_figure_t* out, size_t cap,
                          void* arg) {
  ob_charge_stats_t s;
  int rc;
  (void)arg;
  if (cap < 2) return 0;
  if ((rc = read_figures(tx, &s)) < 0) return rc;
  out[0].name = "charges";
  out[0].help = "Charges recorded (rows in charge).";
  out[0].value = s.charges;
  out[0].alarm = 0;
  out[1].name = "unfenced_successes";
  out[1].help =
      "Provider successes recorded without a confirmed fence (a charge with "
      "no confirmed effect carrying its reference, or one reference "
      "confirmed for two keys); must be 0: a customer may have been charged "
      "twice or a charge is unaccounted for. Run oncebox check and "
      "reconcile with the provider.";
  out[1].value = s.unfenced_successes;
  out[1].alarm = 1;
  return 2;
}

/* ---- registration ---------------------------------------------------------- */

int ob_register_charge_order(ob_engine_t* e) {
  int rc;
  if (e == NULL) return OB_EINVAL;
  rc = ob_dialect(e) == OB_DIALECT_POSTGRESQL
           ? ob_migrate(e, postgresql_schema,
                        sizeof postgresql_schema / sizeof postgresql_schema[0])
           : ob_migrate(e, sqlite_schema,
                        sizeof sqlite_schema / sizeof sqlite_schema[0]);
  if (rc < 0) return rc;
  rc = ob_add_check(e, "charge", charge_check, NULL);
  if (rc < 0 && rc != OB_EEXIST) return rc;
  rc = ob_add_stats(e, "charge", charge_figures, NULL);
  if (rc < 0 && rc != OB_EEXIST) return rc;
  /* Money: its event goes out first when the link is back. */
  rc = ob_mark_priority_event(e, OB_CHARGE_EVENT_TYPE);
  if (rc < 0) return rc;
  /* Money: it may still enter a database at its cap's reserve. */
  rc = ob_mark_critical(e, OB_CHARGE_MESSAGE_TYPE);
  if (rc < 0) return rc;
  return ob_register(e, OB_CHARGE_MESSAGE_TYPE, OB_CHARGE_CONSUMER,
                     charge_handle, NULL);
}

/* ---- ob_charge_stats: any database, the module registered or not ------- */

static int read_stats(ob_tx_t* tx, void* arg) {
  int rc = ob_tx_has_table(tx, "charge");
  if (rc <= 0) return rc < 0 ? rc : OB_ENOTFOUND;
  return read_figures(tx, arg);
}

int ob_charge_stats(ob_engine_t* e, ob_charge_stats_t* s) {
  int rc;
  if (e == NULL || s == NULL) return OB_EINVAL;
  memset(s, 0, sizeof *s);
  rc = ob_read(e, read_stats, s);
  if (rc < 0) memset(s, 0, sizeof *s);
  return rc < 0 ? rc : 0;
}
