/* SPDX-License-Identifier: Apache-2.0 */
/* The example shop: its schema and its handler. */
#ifndef SHOP_H
#define SHOP_H

#include <oncebox.h>

/* The shop's migrations (shop_register applies them; an embedder may give
** them in ob_options_t.migrations too). */
extern const ob_migration_t shop_migrations[];
extern const size_t shop_nmigrations;

/* Register the shop module on e, in the shape of oncebox's own modules
** (docs/decisions/0024-module-contract.md): its schema (ob_migrate), its
** check (a reservation names a stocked sku), its figure
** (shop_reservations) and the OrderPlaced handler ({"sku":"...","qty":N}):
** it reserves the stock and emits StockReserved, or fails the order for
** good when the stock is short. Returns the first negative code of those
** calls, else ob_register's. */
int shop_register(ob_engine_t* e);

#endif
