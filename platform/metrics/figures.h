/* SPDX-License-Identifier: Apache-2.0 */
/* The database's figures of one report (`oncebox stats`, the metrics
** listener): the engine's and the modules', from one read transaction so
** that they agree. Not API. */
#ifndef OB_PLATFORM_METRICS_FIGURES_H
#define OB_PLATFORM_METRICS_FIGURES_H

#include "oncebox.h"

typedef struct ob__figures_s {
  ob_stats_t s;
  ob_figure_t mod[OB_MAX_FIGURES];  /* the modules' (ob_module_figures) */
  size_t nmod;
} ob__figures_t;

/* Fill *f in one ob_read on e. Returns 0, or a negative code (detail in
** ob_errmsg); *f is then not to be used. */
int ob__figures_read(ob_engine_t* e, ob__figures_t* f);

#endif
