/* SPDX-License-Identifier: Apache-2.0 */
/* One report's figures in one read transaction (platform/metrics/figures.h). */
#include "platform/metrics/figures.h"

#include <string.h>

typedef struct read_s {
  ob_engine_t* e;
  ob__figures_t* f;
  int rc;
} read_t;

static int read_all(ob_tx_t* tx, void* arg) {
  read_t* r = arg;
  if ((r->rc = ob_stats(r->e, &r->f->s)) < 0 ||
      (r->rc = ob_module_figures(tx, r->f->mod, OB_MAX_FIGURES)) < 0)
    return 1;
  r->f->nmod = (size_t)r->rc;
  return 0;
}

int ob__figures_read(ob_engine_t* e, ob__figures_t* f) {
  read_t r;
  int rc;
  memset(f, 0, sizeof *f);
  r.e = e;
  r.f = f;
  r.rc = 0;
  rc = ob_read(e, read_all, &r);
  if (rc == 1) return r.rc < 0 ? r.rc : OB_EDB;
  return rc;
}
