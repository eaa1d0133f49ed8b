/* SPDX-License-Identifier: Apache-2.0 */
/* The disk-full policy's thresholds (core/util/space_policy.c). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/util/space_policy.h"
#include "oncebox.h"

#define KIB 1024LL
#define MIB (1024LL * 1024)

static void test_auto_reserve(void** state) {
  (void)state;
  assert_int_equal(ob__space_reserve(0, OB_RESERVE_AUTO), 0);
  assert_int_equal(ob__space_reserve(0, 5 * MIB), 0);  /* no cap, no policy */
  assert_int_equal(ob__space_reserve(8 * MIB, OB_RESERVE_AUTO), 1 * MIB);
  /* At least 64 KiB, at most half the cap, at most 64 MiB. */
  assert_int_equal(ob__space_reserve(256 * KIB, OB_RESERVE_AUTO), 64 * KIB);
  assert_int_equal(ob__space_reserve(100 * KIB, OB_RESERVE_AUTO), 50 * KIB);
  assert_int_equal(ob__space_reserve(4096 * MIB, OB_RESERVE_AUTO), 64 * MIB);
  assert_int_equal(ob__space_reserve(8 * MIB, 0), 0);
  assert_int_equal(ob__space_reserve(8 * MIB, 3 * MIB), 3 * MIB);
}

static void test_levels(void** state) {
  const int64_t cap = 8 * MIB, r = 1 * MIB;
  (void)state;
  assert_int_equal(ob__space_level(0, 0, 0), OB__SPACE_OK);  /* no cap */
  assert_int_equal(ob__space_level(cap - r - 1, cap, r), OB__SPACE_OK);
  assert_int_equal(ob__space_level(cap - r, cap, r), OB__SPACE_CRITICAL);
  assert_int_equal(ob__space_level(cap - r / 2 - 1, cap, r),
                   OB__SPACE_CRITICAL);
  assert_int_equal(ob__space_level(cap - r / 2, cap, r), OB__SPACE_REFUSING);
  assert_int_equal(ob__space_level(cap - r / 4, cap, r), OB__SPACE_PAUSED);
  assert_int_equal(ob__space_level(cap, cap, r), OB__SPACE_PAUSED);
  /* No reserve: everything runs to the cap. */
  assert_int_equal(ob__space_level(cap - 1, cap, 0), OB__SPACE_OK);
  assert_int_equal(ob__space_level(cap, cap, 0), OB__SPACE_PAUSED);
}

static void test_admission(void** state) {
  (void)state;
  assert_true(ob__space_admits(OB__SPACE_OK, 0));
  assert_true(ob__space_admits(OB__SPACE_OK, 1));
  assert_false(ob__space_admits(OB__SPACE_CRITICAL, 0));
  assert_true(ob__space_admits(OB__SPACE_CRITICAL, 1));
  assert_false(ob__space_admits(OB__SPACE_REFUSING, 1));
  assert_false(ob__space_admits(OB__SPACE_PAUSED, 1));
}

/* One judgement per message: its estimated row (bytes plus the slack)
** against the thresholds, and the level it would bring. */
static void test_judge(void** state) {
  const int64_t cap = 8 * MIB, r = 1 * MIB;
  ob__space_level_t lv = OB__SPACE_PAUSED;
  (void)state;
  assert_true(ob__space_judge(0, 100, 0, 0, 0, &lv));  /* no cap */
  assert_int_equal(lv, OB__SPACE_OK);
  /* The slack counts: a row that fits by its bytes alone is refused. */
  assert_true(ob__space_judge(cap - r - 100 - OB__SPACE_ROW_SLACK - 1, 100,
                              cap, r, 0, &lv));
  assert_int_equal(lv, OB__SPACE_OK);
  assert_false(ob__space_judge(cap - r - 100, 100, cap, r, 0, &lv));
  assert_int_equal(lv, OB__SPACE_CRITICAL);
  assert_true(ob__space_judge(cap - r - 100, 100, cap, r, 1, &lv));
  assert_false(ob__space_judge(cap - r / 2, 0, cap, r, 1, &lv));
  assert_int_equal(lv, OB__SPACE_REFUSING);
}

static void test_reclaim_target(void** state) {
  (void)state;
  /* One and a half reserves below the cap: below the first threshold, so
  ** that new messages are accepted again after a reclaim. */
  assert_int_equal(ob__space_reclaim_target(8 * MIB, 1 * MIB),
                   8 * MIB - 1 * MIB - 512 * KIB);
  assert_true(ob__space_level(ob__space_reclaim_target(8 * MIB, 1 * MIB),
                              8 * MIB, 1 * MIB) == OB__SPACE_OK);
  assert_int_equal(ob__space_reclaim_target(8 * MIB, 0), 7 * MIB);
  assert_int_equal(ob__space_reclaim_target(0, 0), 0);
}

/* The default cap (docs/decisions/0021-default-cap.md): 3/5 of the
** filesystem, the WAL a quarter of that up to 16 MiB, so the database, its
** WAL and the -shm stay within three quarters of the filesystem. */
static void test_default_cap(void** state) {
  ob__space_default_t d;
  const int64_t sizes[] = {512 * KIB, 8 * MIB, 64 * MIB, 1024 * MIB,
                           100 * 1024 * MIB, INT64_MAX / 2};
  (void)state;
  ob__space_default(8 * MIB, &d);
  assert_int_equal(d.cap, 5033164);          /* 4.8 MiB */
  assert_int_equal(d.wal_bytes, 1258291);    /* 1.2 MiB */
  ob__space_default(64 * MIB, &d);
  assert_int_equal(d.cap, 40265318);         /* 38.4 MiB */
  assert_int_equal(d.wal_bytes, 10066329);   /* 9.6 MiB: 4,915 pages */
  ob__space_default(1024 * MIB, &d);
  assert_int_equal(d.cap, 644245094);        /* 614.4 MiB */
  assert_int_equal(d.wal_bytes, 16 * MIB);   /* decision 0017's */
  ob__space_default(100 * 1024 * MIB, &d);
  assert_int_equal(d.cap, 64424509440LL);    /* 60 GiB */
  assert_int_equal(d.wal_bytes, 16 * MIB);
  /* Unknown: no default. */
  ob__space_default(0, &d);
  assert_int_equal(d.cap, 0);
  assert_int_equal(d.wal_bytes, 0);
  ob__space_default(-1, &d);
  assert_int_equal(d.cap, 0);
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    ob__space_default(sizes[i], &d);
    assert_true(d.cap > 0);
    assert_true(d.cap + d.wal_bytes <= sizes[i] / 4 * 3);
    assert_true(d.wal_bytes <= d.cap / 4);
    /* The engine's WAL room for a derived cap is the derived WAL. */
    assert_int_equal(ob__space_wal_room(d.cap, 1), d.wal_bytes);
  }
}

/* A configured cap keeps decision 0017's quarter with a 1 MiB floor; a
** derived one has no floor, so a tiny disk's WAL fits too. */
static void test_wal_room(void** state) {
  (void)state;
  assert_int_equal(ob__space_wal_room(0, 0), 0);
  assert_int_equal(ob__space_wal_room(0, 1), 0);
  assert_int_equal(ob__space_wal_room(2 * MIB, 0), 1 * MIB);
  assert_int_equal(ob__space_wal_room(40 * MIB, 0), 10 * MIB);
  assert_int_equal(ob__space_wal_room(2 * MIB, 1), 512 * KIB);
  assert_int_equal(ob__space_wal_room(1024 * MIB, 1), 16 * MIB);
  assert_int_equal(ob__space_wal_room(1024 * MIB, 0), 256 * MIB);
}

/* What an unprivileged process may fill: blocks in use plus those free to
** it (ext4's root reserve is not counted), times the fragment size. */
static void test_fs_bytes(void** state) {
  (void)state;
  /* An 8 MiB tmpfs: no reserve. */
  assert_int_equal(ob__space_fs_bytes(2048, 2048, 2048, 4096), 8 * MIB);
  /* 1000 blocks, 600 free of which 550 to others than root: 950 usable. */
  assert_int_equal(ob__space_fs_bytes(1000, 600, 550, 1024), 950 * 1024);
  /* Nonsense from a filesystem: unknown. */
  assert_int_equal(ob__space_fs_bytes(0, 0, 0, 4096), 0);
  assert_int_equal(ob__space_fs_bytes(100, 200, 0, 4096), 0);
  assert_int_equal(ob__space_fs_bytes(100, 10, 10, 0), 0);
  /* More "available" than free (some network filesystems): as free. */
  assert_int_equal(ob__space_fs_bytes(100, 10, 20, 1), 100);
  /* No overflow. */
  assert_true(ob__space_fs_bytes(INT64_MAX / 2, 0, 0, 4096) > 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_auto_reserve),
      cmocka_unit_test(test_levels),
      cmocka_unit_test(test_admission),
      cmocka_unit_test(test_judge),
      cmocka_unit_test(test_reclaim_target),
      cmocka_unit_test(test_default_cap),
      cmocka_unit_test(test_wal_room),
      cmocka_unit_test(test_fs_bytes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
