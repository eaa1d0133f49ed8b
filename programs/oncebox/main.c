/* SPDX-License-Identifier: Apache-2.0 */
/* oncebox: the shipped command-line program, ob_cli_main (oncebox_cli.h)
** with the built-in modules registered on every engine it opens. */
#include "oncebox.h"
#include "oncebox_charge.h"
#include "oncebox_cli.h"
#include "oncebox_payout.h"

/* The payout and ChargeOrder modules; the first failure's code. */
static int register_builtins(ob_engine_t* e, void* arg) {
  int rc;
  (void)arg;
  rc = ob_register_payout(e);
  if (rc >= 0) rc = ob_register_charge_order(e);
  return rc;
}

int main(int argc, char** argv) {
  return ob_cli_main(argc, argv, register_builtins, NULL);
}
