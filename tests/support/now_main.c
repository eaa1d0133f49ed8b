/* SPDX-License-Identifier: Apache-2.0 */
/* ob-test-now: prints the system clock oncebox reads (ob_system_clock), in
** whole seconds since the epoch. The probe that tells the tests whether
** libfaketime reaches this build's clock calls (tests/support). */
#include <stdio.h>

#include "oncebox.h"

int main(void) {
  const ob_clock_t* c = ob_system_clock();
  long long ms = (long long)c->now_ms(c->ctx);
  printf("%lld\n", ms >= 0 ? ms / 1000 : -((-ms + 999) / 1000));
  return 0;
}
