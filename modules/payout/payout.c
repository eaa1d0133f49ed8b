/* SPDX-License-Identifier: Apache-2.0 */
/* The payout module: PaymentCaptured -> one merchant payout and one
** MerchantPayoutCreated outbox event, in the handling transaction. Built on
** oncebox.h alone, as an embedder's module is (decision 0024). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oncebox_payout.h"
#include "payout_msg.h"

/* ---- the schema ----------------------------------------------------------
** One table. Files made before the module had a schema of its own already
** hold it (oncebox's own schema made it then): hence IF NOT EXISTS, so
** version 1 adopts them as they are. */
static const ob_migration_t sqlite_schema[] = {
    {"payout", 1,
     "CREATE TABLE IF NOT EXISTS merchant_payout ("
     "  id TEXT PRIMARY KEY,"
     "  source_payment_id TEXT NOT NULL UNIQUE,"
     "  merchant_id TEXT NOT NULL,"
     "  amount_minor INTEGER NOT NULL CHECK (amount_minor > 0),"
     "  currency TEXT NOT NULL CHECK (length(currency) = 3),"
     "  source_event_id TEXT NOT NULL,"
     "  created_at INTEGER NOT NULL"
     ") STRICT;"},
};

static const ob_migration_t postgresql_schema[] = {
    {"payout", 1,
     "CREATE TABLE IF NOT EXISTS merchant_payout ("
     "  id TEXT PRIMARY KEY,"
     "  source_payment_id TEXT NOT NULL UNIQUE,"
     "  merchant_id TEXT NOT NULL,"
     "  amount_minor BIGINT NOT NULL CHECK (amount_minor > 0),"
     "  currency TEXT NOT NULL CHECK (length(currency) = 3),"
     "  source_event_id TEXT NOT NULL,"
     "  created_at BIGINT NOT NULL);"},
};

/* ---- the handler ---------------------------------------------------------- */

/* The payment's UNIQUE decides, atomically, across processes: a second
** inserter waits for the first's transaction and then sees the conflict.
** No RETURNING: on SQLite its ephemeral b-tree costs more than the insert;
** the count of rows changed says whether it inserted. */
static const char insert_sql[] =
    "INSERT INTO merchant_payout(id, source_payment_id, merchant_id,"
    " amount_minor, currency, source_event_id, created_at)"
    " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (source_payment_id) DO NOTHING";

/* Off the hot path: conflicts are rare. */
static const char paid_by_sql[] =
    "SELECT source_event_id FROM merchant_payout WHERE source_payment_id = ?";

static int copy_text(void* arg, const ob_value_t* cols, size_t ncols) {
  char* out = arg;
  size_t n = 0;
  if (ncols > 0 && cols[0].type == OB_TYPE_TEXT)
    n = cols[0].n < OB_UUID_BUFLEN - 1 ? cols[0].n : OB_UUID_BUFLEN - 1;
  if (n > 0) memcpy(out, cols[0].p, n);
  out[n] = '\0';
  return 1;
}

static int payout_handle(ob_tx_t* tx, const ob_message_t* msg, void* arg) {
  ob_payout__captured_t p;
  char reason[256], payout_id[OB_UUID_BUFLEN], existing[OB_UUID_BUFLEN] = "";
  char* payload;
  int rc;
  (void)arg;

  if (ob_payout__parse(msg->body, msg->body_len, &p, reason,
                       sizeof reason) != 0)
    return ob_tx_fail(tx, reason);

  ob_tx_new_id(tx, payout_id);
  {
    ob_value_t v[7] = {OB_VTEXT(payout_id),       OB_VTEXT(p.payment_id),
                       OB_VTEXT(p.merchant_id),   OB_VINT(p.amount_minor),
                       OB_VTEXT(p.currency),      OB_VTEXT(msg->id),
                       OB_VINT(ob_tx_now_ms(tx))};
    rc = ob_tx_exec(tx, insert_sql, v, 7, NULL, NULL);
  }
  if (rc < 0) return rc;
  if (rc == 0) {
    ob_value_t v[1] = {OB_VTEXT(p.payment_id)};
    rc = ob_tx_exec(tx, paid_by_sql, v, 1, copy_text, existing);
    if (rc < 0) return rc;
    /* The same event paid it: its dedup record was already swept by
    ** retention, but the payout itself is the proof. Nothing to do. */
    if (strcmp(existing, msg->id) == 0) return OB_DONE;
    snprintf(reason, sizeof reason,
             "payment %s already has a payout (created by event %s); "
             "event %s would pay it twice",
             p.payment_id, existing[0] ? existing : "?", msg->id);
    return ob_tx_fail(tx, reason);
  }
  payload = ob_payout__event_payload(payout_id, &p);
  if (payload == NULL) return OB_ENOMEM;
  rc = ob_tx_emit(tx, OB_PAYOUT_EVENT_TYPE, p.payment_id, payload,
                  strlen(payload), NULL);
  free(payload);
  return rc < 0 ? rc : OB_DONE;
}

/* ---- the invariants (ob_check) ---------------------------------------------
** One row per violation, its text in column 0; the same text on both
** dialects. */
static const char* const checks[] = {
    "SELECT 'payment ' || source_payment_id || ' has ' || count(*) ||"
    " ' payouts' FROM merchant_payout GROUP BY source_payment_id"
    " HAVING count(*) > 1",
    /* The outbox rows counted per (cause, payment) first, then joined: no
    ** index on outbox_event.causation_id (decision 0017), so a join on the
    ** table itself would scan it once per payout; this way it is one scan,
    ** a sort and an automatic index. None is fine where a sweep may have
    ** deleted it once published. */
    "WITH o AS MATERIALIZED (SELECT causation_id, aggregate_id, count(*) AS n"
    " FROM outbox_event WHERE event_type = 'MerchantPayoutCreated'"
    " GROUP BY causation_id, aggregate_id)"
    " SELECT 'payout ' || p.id || ' (payment ' || p.source_payment_id ||"
    " ') has ' || coalesce(o.n, 0) || ' MerchantPayoutCreated outbox rows'"
    " FROM merchant_payout p LEFT JOIN o"
    " ON o.causation_id = p.source_event_id"
    " AND o.aggregate_id = p.source_payment_id"
    " WHERE o.n > 1 OR (o.n IS NULL AND"
    " p.created_at > (SELECT coalesce(max(outbox_created_before_ms), -1)"
    " FROM retention_swept))",
    "SELECT 'outbox event ' || o.id || ' (MerchantPayoutCreated, cause ' ||"
    " o.causation_id || ') has no payout' FROM outbox_event o"
    " WHERE o.event_type = 'MerchantPayoutCreated' AND NOT EXISTS"
    " (SELECT 1 FROM merchant_payout p WHERE p.source_event_id ="
    " o.causation_id AND p.source_payment_id = o.aggregate_id)",
    /* A payout whose dedup record was already swept by retention is fine
    ** (older than every record left, or inside what a sweep recorded it
    ** deleted); one created inside the window without its record is not. */
    "SELECT 'payout ' || p.id || ' has no processed_message record for"
    " event ' || p.source_event_id FROM merchant_payout p"
    " WHERE p.created_at >= (SELECT coalesce(min(processed_at), -1)"
    " FROM processed_message) AND p.created_at > (SELECT"
    " coalesce(max(processed_before_ms), -1) FROM retention_swept)"
    " AND NOT EXISTS (SELECT 1 FROM"
    " processed_message m WHERE m.consumer_name = 'create-merchant-payout-v1'"
    " AND m.message_id = p.source_event_id)",
};

static int payout_check(ob_tx_t* tx, ob_violation_cb cb, void* cb_arg,
                        void* arg) {
  (void)arg;
  return ob_tx_check_sql(tx, checks, sizeof checks / sizeof checks[0], cb,
                         cb_arg);
}

/* ---- the figures ---------------------------------------------------------- */

static int copy_int(void* arg, const ob_value_t* cols, size_t ncols) {
  if (ncols > 0 && cols[0].type == OB_TYPE_INT) *(int64_t*)arg = cols[0].i;
  return 1;
}

static int count_payouts(ob_tx_t* tx, int64_t* n) {
  *n = 0;
  return ob_tx_exec(tx, "SELECT count(*) FROM merchant_payout", NULL, 0,
                    copy_int, n);
}

static int payout_figures(ob_tx_t* tx, ob_figure_t* out, size_t cap,
                          void* arg) {
  int64_t n;
  int rc;
  (void)arg;
  if (cap == 0) return 0;
  if ((rc = count_payouts(tx, &n)) < 0) return rc;
  out[0].name = "payouts";
  out[0].help = "Payouts recorded (rows in merchant_payout).";
  out[0].value = n;
  out[0].alarm = 0;
  return 1;
}

/* ---- registration ---------------------------------------------------------- */

int ob_register_payout(ob_engine_t* e) {
  int rc;
  if (e == NULL) return OB_EINVAL;
  rc = ob_dialect(e) == OB_DIALECT_POSTGRESQL
           ? ob_migrate(e, postgresql_schema,
                        sizeof postgresql_schema / sizeof postgresql_schema[0])
           : ob_migrate(e, sqlite_schema,
                        sizeof sqlite_schema / sizeof sqlite_schema[0]);
  if (rc < 0) return rc;
  rc = ob_add_check(e, "payout", payout_check, NULL);
  if (rc < 0 && rc != OB_EEXIST) return rc;
  rc = ob_add_stats(e, "payout", payout_figures, NULL);
  if (rc < 0 && rc != OB_EEXIST) return rc;
  /* Money: its event goes out first when the link is back. */
  rc = ob_mark_priority_event(e, OB_PAYOUT_EVENT_TYPE);
  if (rc < 0) return rc;
  /* Money: it may still enter a database at its cap's reserve. */
  rc = ob_mark_critical(e, OB_PAYOUT_MESSAGE_TYPE);
  if (rc < 0) return rc;
  return ob_register(e, OB_PAYOUT_MESSAGE_TYPE, OB_PAYOUT_CONSUMER,
                     payout_handle, NULL);
}

/* ---- ob_payout_stats: any database, the module registered or not ------- */

static int read_stats(ob_tx_t* tx, void* arg) {
  int rc = ob_tx_has_table(tx, "merchant_payout");
  if (rc <= 0) return rc < 0 ? rc : OB_ENOTFOUND;
  rc = count_payouts(tx, &((ob_payout_stats_t*)arg)->payouts);
  return rc < 0 ? rc : 0;
}

int ob_payout_stats(ob_engine_t* e, ob_payout_stats_t* s) {
  int rc;
  if (e == NULL || s == NULL) return OB_EINVAL;
  memset(s, 0, sizeof *s);
  rc = ob_read(e, read_stats, s);
  if (rc < 0) memset(s, 0, sizeof *s);
  return rc < 0 ? rc : 0;
}
