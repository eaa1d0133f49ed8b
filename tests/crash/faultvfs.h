/* SPDX-License-Identifier: Apache-2.0 */
/* faultvfs: an I/O-error injecting VFS shim over "unix", in the manner of
** SQLite's own ioerr tests (sqlite3_io_error_pending / test_vfs.c):
** count the VFS operations and make the N-th one fail with the error the
** unix VFS itself returns for that operation, either once (only op N
** fails) or persistently (op N and every later op fail until disarmed).
** I/O-error injection (T5 in docs/reliability.md). Used by
** tests/crash/test_faults.c.
**
** Counted operations (each returns, when it is made to fail):
**   xOpen              SQLITE_CANTOPEN (what unixOpen returns when open(2)
**                      fails, whatever errno was)
**   xDelete            SQLITE_IOERR_DELETE
**   xAccess            SQLITE_IOERR_ACCESS
**   xRead              SQLITE_IOERR_READ
**   xWrite             SQLITE_IOERR_WRITE
**   xTruncate          SQLITE_IOERR_TRUNCATE
**   xSync              SQLITE_IOERR_FSYNC
**   xFileSize          SQLITE_IOERR_FSTAT
**   xLock              SQLITE_IOERR_LOCK
**   xUnlock            SQLITE_IOERR_UNLOCK
**   xCheckReservedLock SQLITE_IOERR_CHECKRESERVEDLOCK
**   xShmMap            SQLITE_IOERR_SHMMAP
** Not counted, always passed through: xClose (a failing close would only
** leak the descriptor), xShmLock (the unix VFS answers only OK or BUSY),
** xShmBarrier, xShmUnmap, xFileControl, xSectorSize,
** xDeviceCharacteristics, and the non-file methods.
**
** Unlike plsim, nothing about durability is simulated: every operation that
** does not fail goes to the real file, syncs included. io methods are
** version 2 (no mmap: every page read is an xRead the shim sees).
** With $OB_FAULTS_TRACE set, every counted operation is printed to stderr.
*/
#ifndef OB_TESTS_CRASH_FAULTVFS_H
#define OB_TESTS_CRASH_FAULTVFS_H

#include <stdint.h>

typedef enum {
  FV_OPEN = 0,
  FV_DELETE,
  FV_ACCESS,
  FV_READ,
  FV_WRITE,
  FV_TRUNCATE,
  FV_SYNC,
  FV_FILESIZE,
  FV_LOCK,
  FV_UNLOCK,
  FV_CHECKRESERVED,
  FV_SHMMAP,
  FV__COUNT
} fv_op_t;

/* Register the shim as the default VFS ("faultvfs", over "unix"). Returns 0
** or -1. Until fv_arm() it only passes operations through and counts open
** files. */
int fv_install(void);

/* Start counting operations from 0; the n-th (1-based) fails, and with
** persistent != 0 every one after it too. n <= 0: count only, never fail. */
void fv_arm(int64_t n, int persistent);
/* Stop failing and counting. The counters keep their values. */
void fv_disarm(void);

/* Operations counted since the last fv_arm. */
int64_t fv_ops(void);
/* Operations made to fail since the last fv_arm. */
int64_t fv_hits(void);
/* The kind of the first operation made to fail since fv_arm (FV__COUNT if
** none). */
fv_op_t fv_first_hit(void);
/* Files open through the shim right now (xOpen succeeded, no xClose yet). */
int fv_open_files(void);
/* "xWrite", ... */
const char* fv_op_name(fv_op_t op);

#endif
