/* SPDX-License-Identifier: Apache-2.0 */
/* The end of a write transaction that may have claimed effects: commit or
** roll back, tell the parts that keep state across it (the fence's fresh
** claims, through its hook), and recover the connection after an I/O error
** or a full disk. Called by the handling transaction (engine.c), the
** embedder's ob_write (tx.c) and the fence's outcome transactions
** (core/fence/effect_drive.c); it calls only space.c and storage/. */
#include <string.h>

#include "core/engine/engine_int.h"

/* After a failed write, before the next transaction:
**   - an I/O error: the kernel may have dropped the dirty pages of a failed
**     fsync and report success next time ("fsyncgate"), so the connection is
**     not trusted again: a new one replaces it (the old one stays if the
**     new one can't open);
**   - a full disk: the WAL may hold most of the space; a TRUNCATE checkpoint
**     gives it back, so freeing a little space is enough to resume.
** The failure's message is kept for ob_errmsg. */
static void recover_after(ob_engine_t* e, int rc) {
  char msg[OB__ERRMSG_LEN];
  memcpy(msg, e->db.errmsg, sizeof msg);
  if (rc == OB_EIO) {
    ob__db_t fresh;
    int orc = ob__db_open(&fresh, e->db_path, e->opts.synchronous,
                          e->opts.busy_timeout_ms, e->opts.max_db_bytes);
    if (orc == 0 && ob__space_wal_policy(e, &fresh) < 0) {
      ob__db_close(&fresh);
      orc = -1;
    }
    if (orc == 0) {
      ob__db_close(&e->db);
      e->db = fresh;
      ob__log(e, OB_LOG_WARN, "I/O error: the database connection was "
              "reopened");
    } else {
      ob__log(e, OB_LOG_ERROR, "I/O error, and reopening failed: %s",
              fresh.errmsg);
    }
  } else if (rc == OB_ENOSPC) {
    ob__space_note_full(e);
    if (!e->db.in_tx)
      (void)ob__space_checkpoint(&e->db, 1);
  }
  memcpy(e->db.errmsg, msg, sizeof msg);
}

int ob__engine_commit(ob_engine_t* e) {
  int rc = ob__db_commit(&e->db);
  /* The claims of a transaction that did not commit did not happen. */
  if (e->fence != NULL) e->fence->tx_end(e, rc == 0);
  if (rc < 0) {
    recover_after(e, rc);
    return rc;
  }
  return 0;
}

void ob__engine_rollback(ob_engine_t* e) {
  int rc = e->db.last_err;
  ob__db_rollback(&e->db);
  if (e->fence != NULL) e->fence->tx_end(e, 0);
  if (rc == OB_EIO || rc == OB_ENOSPC) recover_after(e, rc);
}
