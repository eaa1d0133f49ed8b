/* SPDX-License-Identifier: Apache-2.0 */
/* The database's figures of one report (`oncebox stats`, the metrics
** listener): the engine's and the business modules', from one read
** transaction so that they agree. Not API. */
#ifndef OB_PLATFORM_METRICS_FIGURES_H
#define OB_PLATFORM_METRICS_FIGURES_H

#include "oncebox.h"
#include "oncebox_charge.h"
#include "oncebox_payout.h"

typedef struct ob__figures_s {
  ob_stats_t s;
  ob_payout_stats_t ps;
  ob_charge_stats_t cs;
  int has_pay, has_charge;  /* 0: the database has no table of that module */
} ob__figures_t;

/* Fill *f in one ob_read on e. Returns 0, or a negative code (detail in
** ob_errmsg); *f is then not to be used. */
int ob__figures_read(ob_engine_t* e, ob__figures_t* f);

#endif
