/* SPDX-License-Identifier: Apache-2.0 */
/* PostgreSQL's SQLSTATEs to the engine's codes (storage/postgresql/
** pg_db.c): the classes the engine's rules depend on (retry the batch,
** stop for space, reconnect, a constraint is an answer). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "storage/postgresql/pg_int.h"

static void test_map(void** state) {
  (void)state;
  assert_int_equal(ob__pg_map_sqlstate("23505"), OB_ECONSTRAINT);  /* unique */
  assert_int_equal(ob__pg_map_sqlstate("23514"), OB_ECONSTRAINT);  /* check */
  assert_int_equal(ob__pg_map_sqlstate("40001"), OB_EBUSY);  /* serialization */
  assert_int_equal(ob__pg_map_sqlstate("40P01"), OB_EBUSY);  /* deadlock */
  assert_int_equal(ob__pg_map_sqlstate("55P03"), OB_EBUSY);  /* lock_timeout */
  assert_int_equal(ob__pg_map_sqlstate("53100"), OB_ENOSPC);  /* disk full */
  assert_int_equal(ob__pg_map_sqlstate("53200"), OB_ENOMEM);
  assert_int_equal(ob__pg_map_sqlstate("08006"), OB_EIO);  /* connection */
  assert_int_equal(ob__pg_map_sqlstate("57P01"), OB_EIO);  /* admin shutdown */
  assert_int_equal(ob__pg_map_sqlstate("42501"), OB_EPERM);
  assert_int_equal(ob__pg_map_sqlstate("28P01"), OB_EPERM);  /* password */
  assert_int_equal(ob__pg_map_sqlstate("54000"), OB_ETOOBIG);
  assert_int_equal(ob__pg_map_sqlstate("XX001"), OB_ECORRUPT);
  assert_int_equal(ob__pg_map_sqlstate("42601"), OB_EDB);  /* syntax */
  assert_int_equal(ob__pg_map_sqlstate(NULL), OB_EIO);  /* no answer */
  assert_int_equal(ob__pg_map_sqlstate("bad"), OB_EIO);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_map)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
