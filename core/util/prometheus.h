/* SPDX-License-Identifier: Apache-2.0 */
/* The statistics as Prometheus text exposition format 0.0.4 (the textfile
** collector's and a /metrics endpoint's format). Pure text from structs:
** it lives in core/util, beside no I/O, so `oncebox stats --prometheus`
** (programs/oncebox) and a later HTTP listener render one text. The metrics
** are listed in docs/operations.md; keep the two in step. */
#ifndef OB_CORE_UTIL_PROMETHEUS_H
#define OB_CORE_UTIL_PROMETHEUS_H

#include <stddef.h>
#include <stdint.h>

#include "oncebox.h"

/* What one exposition shows: figures of one read transaction. */
typedef struct ob__prom_input_s {
  const ob_stats_t* stats;           /* required */
  const ob_figure_t* figures;        /* the modules' (ob_module_figures) */
  size_t nfigures;
  const char* version;               /* oncebox_build_info's label */
  int64_t now_ms;                    /* when the figures were read */
  /* A running process's counters (the HTTP listener); NULL for a one-shot
  ** read (`stats --prometheus`): the counter families are then omitted. */
  const ob_counters_t* counters;
} ob__prom_input_t;

/* The exposition, NUL-terminated, from malloc (the caller frees it), its
** length in *len when len is not NULL. NULL when out of memory or when in
** or in->stats is NULL. */
char* ob__prom_render(const ob__prom_input_t* in, size_t* len);

/* in escaped as a label value must be (a backslash, a double quote and a
** line feed as \\, \" and \n) into out, truncated to fit n bytes (never
** in the middle of an escape) and NUL-terminated. Returns the length
** written, or (size_t)-1 when n is 0. */
size_t ob__prom_escape_label(const char* in, char* out, size_t n);

#endif /* OB_CORE_UTIL_PROMETHEUS_H */
