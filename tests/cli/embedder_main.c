/* SPDX-License-Identifier: Apache-2.0 */
/* A vendor's own command line in ten lines: ob_cli_main (oncebox_cli.h)
** with a handler for "OrderPlaced" that writes one row per order into the
** handling transaction. Uses nothing but the public headers and the
** library. Driven by test_embedder.sh. */
#include <string.h>

#include "oncebox.h"
#include "oncebox_cli.h"

/* Book the order: the row commits with the dedup record, or not at all. */
static int on_order(ob_tx_t* tx, const ob_message_t* msg, void* arg) {
  ob_value_t p[2];
  int rc;
  (void)arg;
  rc = ob_tx_exec(tx, "CREATE TABLE IF NOT EXISTS vendor_orders("
                  "id TEXT PRIMARY KEY, body TEXT NOT NULL)",
                  NULL, 0, NULL, NULL);
  if (rc < 0) return rc;
  p[0] = OB_VTEXT(msg->id);
  p[1] = OB_VTEXTN(msg->body, msg->body_len);
  rc = ob_tx_exec(tx, "INSERT INTO vendor_orders(id, body) VALUES (?, ?)", p,
                  2, NULL, NULL);
  return rc < 0 ? rc : OB_DONE;
}

static int register_vendor(ob_engine_t* e, void* arg) {
  (void)arg;
  return ob_register(e, "OrderPlaced", "vendor-orders-v1", on_order, NULL);
}

int main(int argc, char** argv) {
  return ob_cli_main(argc, argv, register_vendor, NULL);
}
