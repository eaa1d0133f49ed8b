/* SPDX-License-Identifier: Apache-2.0 */
/* faultalloc: out-of-memory injection, in the manner of SQLite's malloc
** tests (test_malloc.c, faultsim): fail the k-th allocation, once (only
** allocation k fails) or persistently (k and every later one fail until
** disarmed): out-of-memory injection (T6 in docs/reliability.md). Two
** allocators:
**
**   FA_SQLITE  every allocation SQLite makes: a countdown wrapper around
**              SQLite's default allocator, installed with
**              sqlite3_config(SQLITE_CONFIG_MALLOC) by fa_sqlite_install(),
**              which must run before sqlite3_initialize() (the first thing
**              in main()). xMalloc and xRealloc count; xFree never fails.
**   FA_LIBC    oncebox's own malloc/calloc/realloc/strdup calls. oncebox
**              has no allocation hook, so the test executable is linked
**              with -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,
**              --wrap=strdup: every call to those functions from the
**              objects linked statically into it (liboncebox.a, and the
**              test's own code) goes to __wrap_* here. Shared libraries
**              (libsqlite3, libcjson, libc itself) are not affected.
**              Compiled only with FA_WITH_WRAP=1 (CMake sets it together
**              with the link options).
**
** Only one allocator is armed at a time. Counting happens only while armed,
** so the test's own setup and checks are never counted.
*/
#ifndef OB_TESTS_CRASH_FAULTALLOC_H
#define OB_TESTS_CRASH_FAULTALLOC_H

#include <stdint.h>

typedef enum { FA_SQLITE = 0, FA_LIBC = 1 } fa_kind_t;

/* Install the countdown allocator into SQLite. Call before anything else
** touches SQLite. Returns 0, or the SQLite error code (SQLITE_MISUSE when
** SQLite was already initialized). */
int fa_sqlite_install(void);

/* 1 if the --wrap allocator is compiled in (FA_WITH_WRAP). */
int fa_libc_available(void);

/* Count allocations of `kind` from 0; the k-th (1-based) fails and, with
** persistent != 0, every later one too. k <= 0: count only. */
void fa_arm(fa_kind_t kind, int64_t k, int persistent);
void fa_disarm(void);
/* Allocations counted / made to fail since the last fa_arm. */
int64_t fa_count(void);
int64_t fa_hits(void);

#endif
