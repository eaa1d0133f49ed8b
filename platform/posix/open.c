/* SPDX-License-Identifier: Apache-2.0 */
/* ob_open: the engine (core/engine) on the system clock unless the options
** name another, so that core itself never reads a clock. */
#include "core/engine/engine_host.h"

int ob_open(ob_engine_t** out, const ob_options_t* opts, char* errbuf,
            size_t errlen) {
  ob_options_t o;
  if (opts == NULL || opts->clock != NULL)
    return ob__engine_open(out, opts, errbuf, errlen);
  o = *opts;
  o.clock = ob_system_clock();
  return ob__engine_open(out, &o, errbuf, errlen);
}
