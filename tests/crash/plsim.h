/* SPDX-License-Identifier: Apache-2.0 */
/* plsim: a power-loss simulator for SQLite, as a VFS shim over "unix"
** (docs/reliability.md, "The power-loss simulator (plsim)").
**
** In the process that installs it (a crash-campaign worker, never the
** supervisor), every file SQLite opens as a main database, WAL or rollback
** journal is "tracked":
**   - writes and truncations go to the real file at once (the process runs at
**     normal speed and can be SIGKILLed at any instruction), and each one is
**     also appended as a record to <file>.pending;
**   - xSync(file) applies that file's pending records, in order, to
**     <file>.durable and empties <file>.pending (fsync scope: one file). The
**     real fdatasync is skipped: the .durable image defines what survives a
**     power loss;
**   - what the file held before this process first opened it counts as
**     durable (copied to .durable with tmp + rename; the marker <file>.plsim
**     is created last, so a kill during that bookkeeping leaves it ignored);
**   - a tracked file with no .durable was never synced: after a power loss
**     it does not exist;
**   - xDeviceCharacteristics is 0 (no atomic, safe-append, sequential or
**     powersafe-overwrite claims), io methods are version 2 (no mmap), the
**     shm methods pass through.
**
** After the worker died, the supervisor calls plsim_restore(): every tracked
** file becomes its .durable image (strict), or the image plus a random
** subset of the pending records torn per 512-byte sector (torn); -shm files
** are deleted (shared memory does not survive a power loss). Then the
** database is opened with the stock VFS and checked.
**
** Limitation (docs/reliability.md, "Limits"): an unlink (the WAL deleted at close) is
** durable at once; a file resurrected by a power loss is not modelled.
*/
#ifndef OB_TESTS_CRASH_PLSIM_H
#define OB_TESTS_CRASH_PLSIM_H

#include <stdint.h>

/* Exit codes of a worker that crashed on purpose inside the shim. */
#define PLSIM_EXIT_SYNC_CRASH 77   /* crash_at_sync reached */
#define PLSIM_EXIT_WRITE_CRASH 78  /* crash_at_write reached */
#define PLSIM_EXIT_BROKEN 79       /* the simulator's own bookkeeping failed */

typedef struct plsim_config_s {
  /* > 0: _exit(PLSIM_EXIT_SYNC_CRASH) just BEFORE the N-th xSync of a
  ** tracked file (1-based), as SQLite's crash tests do with iCrash. */
  int64_t crash_at_sync;
  /* > 0: _exit(PLSIM_EXIT_WRITE_CRASH) just before the N-th xWrite of a
  ** tracked file. */
  int64_t crash_at_write;
  /* 1: after every sync, compare <file>.durable with the real file byte for
  ** byte and _exit(PLSIM_EXIT_BROKEN) on a difference: proves that every
  ** change to the file went through the journal. Slow; small tests only. */
  int verify;
} plsim_config_t;

/* Register the shim as the DEFAULT VFS (sqlite3_vfs_register(&shim, 1)) of
** this process with config c (copied; NULL: no crash points). Call before
** the first sqlite3_open in the worker process only. Returns 0, or -1 if
** "unix" is missing or registering failed. */
int plsim_install(const plsim_config_t* c);

/* Counters of this process: xSync and xWrite calls on tracked files. */
int64_t plsim_syncs(void);
int64_t plsim_writes(void);

typedef struct plsim_restore_stats_s {
  int files;          /* tracked files restored (durable image kept) */
  int removed;        /* tracked files that were never synced: deleted */
  int64_t records;    /* complete pending records found */
  int64_t applied;    /* ... written whole (torn mode) */
  int64_t torn;       /* ... written sector by sector: skip/write/garbage */
  int64_t lost;       /* ... dropped */
} plsim_restore_stats_t;

/*
** Simulate the power coming back in directory dir after the process that
** used the shim there died. torn == 0 (strict): every tracked file becomes
** exactly its durable image. torn != 0: a random subset (seeded by seed) of
** its pending records is applied on top, in order: per record 50% lost, 25%
** written, 25% torn per 512-byte sector (each sector skipped, written or
** filled with garbage). Files never synced are deleted, every -shm file is
** deleted, the simulator's bookkeeping is removed. st may be NULL. Returns 0,
** or -1 with a message on stderr if a file operation failed.
*/
int plsim_restore(const char* dir, int torn, uint64_t seed,
                  plsim_restore_stats_t* st);

/* A process crash without power loss: the real files (and -shm) are what
** the OS holds; only the bookkeeping is removed. Returns 0 or -1. */
int plsim_forget(const char* dir);

#endif
