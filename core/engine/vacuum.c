/* SPDX-License-Identifier: Apache-2.0 */
/* ob_vacuum: the documented step that gives an existing database the page
** size of new ones (docs/decisions/0017-pages-and-wal-for-flash.md). Never
** run by ob_open: on a big file it takes minutes and twice the space. */
#include "core/engine/engine_int.h"

int ob_vacuum(ob_engine_t* e, int page_size, int* old_page_size) {
  int rc, now;
  if (old_page_size) *old_page_size = 0;
  if (e == NULL) return OB_EINVAL;
  if (page_size == 0) page_size = OB__NEW_PAGE_SIZE;
  if (page_size < 512 || page_size > 65536 || (page_size & (page_size - 1)))
    return ob__db_seterr(&e->db, OB_EINVAL, "page size %d: want a power of "
                         "two from 512 to 65536", page_size);
  if (e->db.in_tx || e->hooks.runner != NULL)
    return ob__db_seterr(&e->db, OB_ESTATE, "vacuum needs an engine that is "
                         "neither attached nor inside a transaction");
  if ((rc = ob__db_page_size(&e->db, &now)) < 0) return rc;
  if (old_page_size) *old_page_size = now;
  if (now == page_size) return 0;
  rc = ob__db_repage(&e->db, page_size, e->opts.max_db_bytes);
  if (rc < 0) return rc;
  ob__log(e, OB_LOG_INFO, "vacuum: pages of %d bytes, were %d", page_size,
          now);
  return 0;
}
