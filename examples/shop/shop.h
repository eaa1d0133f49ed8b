/* SPDX-License-Identifier: Apache-2.0 */
/* The example shop: its schema and its handler. */
#ifndef SHOP_H
#define SHOP_H

#include <oncebox.h>

/* The shop's migrations, for ob_options_t.migrations. */
extern const ob_migration_t shop_migrations[];
extern const size_t shop_nmigrations;

/* Register the OrderPlaced handler ({"sku":"...","qty":N}): reserves the
** stock and emits StockReserved, or fails the order for good when the
** stock is short. Returns ob_register's code. */
int shop_register(ob_engine_t* e);

#endif
