/* SPDX-License-Identifier: Apache-2.0 */
#include "shop.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Version 1 makes the table, version 2 an index: a later release of the
** shop only appends to this list (oncebox applies what a file lacks, in
** the same transaction as its own schema, and refuses a newer file). */
const ob_migration_t shop_migrations[] = {
    {"shop", 1,
     "CREATE TABLE stock (sku TEXT PRIMARY KEY,"
     " on_hand INTEGER NOT NULL CHECK (on_hand >= 0)) STRICT;"},
    {"shop", 2,
     "CREATE TABLE reservation (order_id TEXT PRIMARY KEY, sku TEXT NOT NULL,"
     " qty INTEGER NOT NULL) STRICT;"},
};
const size_t shop_nmigrations =
    sizeof shop_migrations / sizeof shop_migrations[0];

/* A tiny reader for the example's fixed body shape; a real shop would use
** its JSON library. */
static int parse(const char* body, char* sku, size_t cap, long* qty) {
  const char* s = strstr(body, "\"sku\":\"");
  const char* q = strstr(body, "\"qty\":");
  size_t n;
  if (s == NULL || q == NULL) return -1;
  s += 7;
  n = strcspn(s, "\"");
  if (n == 0 || n >= cap) return -1;
  memcpy(sku, s, n);
  sku[n] = '\0';
  *qty = strtol(q + 6, NULL, 10);
  return *qty > 0 ? 0 : -1;
}

static int on_order(ob_tx_t* tx, const ob_message_t* m, void* arg) {
  char sku[64], payload[160];
  long qty;
  int rc;
  (void)arg;
  if (parse(m->body, sku, sizeof sku, &qty) != 0)
    return ob_tx_fail(tx, "order body is not {\"sku\":...,\"qty\":N}");
  {
    ob_value_t p[2] = {OB_VINT(qty), OB_VTEXT(sku)};
    /* The CHECK refuses a negative stock: the order fails, nothing kept. */
    rc = ob_tx_exec(tx, "UPDATE stock SET on_hand = on_hand - ? WHERE sku = ?",
                    p, 2, NULL, NULL);
  }
  if (rc == 0) return ob_tx_fail(tx, "unknown sku");
  if (rc < 0) return ob_tx_fail(tx, "not enough stock");
  {
    ob_value_t p[3] = {OB_VTEXT(m->id), OB_VTEXT(sku), OB_VINT(qty)};
    rc = ob_tx_exec(tx, "INSERT INTO reservation VALUES (?, ?, ?)", p, 3, NULL,
                    NULL);
    if (rc < 0) return rc;
  }
  snprintf(payload, sizeof payload, "{\"sku\":\"%s\",\"qty\":%ld}", sku, qty);
  rc = ob_tx_emit(tx, "StockReserved", sku, payload, strlen(payload), NULL);
  return rc < 0 ? rc : OB_DONE;
}

/* The shop's invariant: a reservation names a sku the shop stocks. One row
** per violation, its text in column 0 (ob_tx_check_sql). */
static const char* const shop_checks[] = {
    "SELECT 'reservation ' || r.order_id || ' names unknown sku ' || r.sku"
    " FROM reservation r WHERE NOT EXISTS (SELECT 1 FROM stock s"
    " WHERE s.sku = r.sku)",
};

static int shop_check(ob_tx_t* tx, ob_violation_cb report, void* report_arg,
                      void* arg) {
  (void)arg;
  return ob_tx_check_sql(tx, shop_checks, 1, report, report_arg);
}

static int first_int(void* arg, const ob_value_t* cols, size_t ncols) {
  if (ncols > 0 && cols[0].type == OB_TYPE_INT) *(int64_t*)arg = cols[0].i;
  return 1;
}

/* One figure: oncebox_shop_reservations in /metrics, shopReservations in
** `stats --json`. */
static int shop_figures(ob_tx_t* tx, ob_figure_t* out, size_t cap,
                        void* arg) {
  int64_t n = 0;
  int rc;
  (void)arg;
  if (cap == 0) return 0;
  rc = ob_tx_exec(tx, "SELECT count(*) FROM reservation", NULL, 0, first_int,
                  &n);
  if (rc < 0) return rc;
  out[0].name = "shop_reservations";
  out[0].help = "Orders whose stock the shop reserved.";
  out[0].value = n;
  out[0].alarm = 0;
  return 1;
}

int shop_register(ob_engine_t* e) {
  /* The module's shape (docs/decisions/0024-module-contract.md): its
  ** schema, its check, its figures, then its handler. */
  int rc = ob_migrate(e, shop_migrations, shop_nmigrations);
  if (rc < 0) return rc;
  if ((rc = ob_add_check(e, "shop", shop_check, NULL)) < 0 && rc != OB_EEXIST)
    return rc;
  if ((rc = ob_add_stats(e, "shop", shop_figures, NULL)) < 0 &&
      rc != OB_EEXIST)
    return rc;
  return ob_register(e, "OrderPlaced", "shop-reserve-v1", on_order, NULL);
}
