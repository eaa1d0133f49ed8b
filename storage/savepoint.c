/* SPDX-License-Identifier: Apache-2.0 */
/* One message's savepoint inside the handling transaction (store.h): the
** same three statements on both dialects, prepared once (they run once per
** message: re-parsing them each time cost a few % of a batch's CPU). */
#include "core/util/assert.h"
#include "storage/sql.h"

static int run(ob__db_t* db, int id, const char* sql, const char* what) {
  int rc = ob__sql_run(db, id, sql, what);
  return rc < 0 ? rc : 0;
}

/* Never nested, always inside BEGIN: outside a transaction SAVEPOINT would
** open (and RELEASE commit) one of its own. */
int ob__db_savepoint(ob__db_t* db) {
  int rc;
  OB__ASSERT(db->in_tx && db->savepoints == 0);
  rc = run(db, OB__S_SAVEPOINT, "SAVEPOINT ob_msg", "savepoint");
  if (rc == 0) db->savepoints = 1;
  return rc;
}

int ob__db_release(ob__db_t* db) {
  int rc;
  OB__ASSERT(db->in_tx && db->savepoints == 1);
  rc = run(db, OB__S_RELEASE, "RELEASE SAVEPOINT ob_msg", "release");
  if (rc == 0) db->savepoints = 0;
  return rc;
}

int ob__db_rollback_to(ob__db_t* db) {
  int rc;
  OB__ASSERT(db->in_tx && db->savepoints == 1);
  rc = run(db, OB__S_ROLLBACK_TO, "ROLLBACK TO SAVEPOINT ob_msg",
           "rollback to savepoint");
  return rc < 0 ? rc : ob__db_release(db);
}
