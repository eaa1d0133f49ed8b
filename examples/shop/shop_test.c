/* SPDX-License-Identifier: Apache-2.0 */
/* The shop end to end on a real SQLite file, with oncebox's public fake
** clock: stock seeded with ob_write, an order delivered three times makes
** one reservation and one StockReserved event, an order the stock can't
** cover goes to the failure store with nothing kept, and a retried message
** waits for the clock. No server, no network. */
#include <oncebox.h>
#include <oncebox_test.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shop.h"

static int failures;
#define CHECK(c)                                                   \
  do {                                                             \
    if (!(c)) {                                                    \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c); \
      failures++;                                                  \
    }                                                              \
  } while (0)

static int seed(ob_tx_t* tx, void* arg) {
  ob_value_t p[1] = {OB_VTEXT("sku-1")};
  (void)arg;
  return ob_tx_exec(tx, "INSERT INTO stock VALUES (?, 5)", p, 1, NULL, NULL) <
                 0
             ? -1
             : 0;
}

static int read_int(void* arg, const ob_value_t* cols, size_t n) {
  if (n > 0) *(long long*)arg = cols[0].i;
  return 0;
}

static long long on_hand;
static int read_stock(ob_tx_t* tx, void* arg) {
  (void)arg;
  return ob_tx_exec(tx, "SELECT on_hand FROM stock", NULL, 0, read_int,
                    &on_hand) < 0
             ? -1
             : 0;
}

static int events;
static int sink(void* arg, const ob_event_t* ev) {
  (void)arg;
  if (strcmp(ev->event_type, "StockReserved") == 0) events++;
  return 0;
}

static int order(ob_engine_t* e, const char* id, int qty) {
  char body[64];
  ob_envelope_t env;
  snprintf(body, sizeof body, "{\"sku\":\"sku-1\",\"qty\":%d}", qty);
  memset(&env, 0, sizeof env);
  env.id = id;
  env.type = "OrderPlaced";
  env.body = body;
  env.body_len = strlen(body);
  return ob_enqueue(e, &env);
}

/* The module's figure, read as `oncebox stats` reads it. */
static int64_t reservations = -1;
static int read_figure(ob_tx_t* tx, void* arg) {
  ob_figure_t fig[4];
  int n = ob_module_figures(tx, fig, 4);
  (void)arg;
  if (n != 1 || strcmp(fig[0].name, "shop_reservations") != 0) return -1;
  reservations = fig[0].value;
  return 0;
}

int main(void) {
  char dir[] = "/tmp/shop-test-XXXXXX", path[128], err[256];
  ob_fake_clock_t clock;
  ob_options_t o;
  ob_engine_t* e;
  ob_batch_result_t r;
  ob_stats_t st;
  size_t published = 0;

  if (mkdtemp(dir) == NULL) return 1;
  snprintf(path, sizeof path, "%s/shop.db", dir);
  ob_fake_clock_init(&clock, 1796083200000LL, 7);
  ob_options_init(&o);
  o.db_path = path;
  o.clock = ob_fake_clock(&clock);
  if (ob_open(&e, &o, err, sizeof err) != 0) {
    fprintf(stderr, "ob_open: %s\n", err);
    return 1;
  }
  CHECK(shop_register(e) == 0);
  CHECK(ob_write(e, seed, NULL) == 0);

  /* One order delivered three times (a producer's retries). */
  for (int i = 0; i < 3; i++)
    CHECK(order(e, "0190b6d8-3ae7-7ca2-a653-000000000001", 2) == 0);
  /* One the stock can't cover. */
  CHECK(order(e, "0190b6d8-3ae7-7ca2-a653-000000000002", 9) == 0);
  for (int i = 0; i < 8; i++) CHECK(ob_run_once(e, &r) == 0);

  CHECK(ob_read(e, read_stock, NULL) == 0);
  CHECK(on_hand == 3);
  CHECK(ob_stats(e, &st) == 0);
  CHECK(st.failed == 1);
  CHECK(ob_outbox_drain(e, sink, NULL, 100, &published) == 0);
  CHECK(published == 1 && events == 1);
  CHECK(ob_check(e, NULL, NULL) == 0);
  CHECK(ob_read(e, read_figure, NULL) == 0);
  CHECK(reservations == 1);

  /* Later, on the fake clock: nothing left, nothing due. */
  ob_fake_clock_advance(&clock, 3600 * 1000);
  CHECK(ob_run_once(e, &r) == 0 && r.claimed == 0);
  ob_close(e);

  /* A newer shop schema in the file than this program knows: refused. */
  o.migrations = shop_migrations;
  o.nmigrations = 1;
  CHECK(ob_open(&e, &o, err, sizeof err) == OB_EVERSION);

  unlink(path);
  {
    char p2[160];
    snprintf(p2, sizeof p2, "%s-wal", path);
    unlink(p2);
    snprintf(p2, sizeof p2, "%s-shm", path);
    unlink(p2);
  }
  rmdir(dir);
  if (failures == 0) printf("shop_test: oncebox %s, all checks passed\n", ob_version());
  return failures == 0 ? 0 : 1;
}
