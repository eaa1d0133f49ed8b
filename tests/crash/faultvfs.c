/* SPDX-License-Identifier: Apache-2.0 */
/* faultvfs: fail the N-th VFS operation, once or persistently (see
** faultvfs.h). */
#include "tests/crash/faultvfs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

typedef struct fv_file_s {
  sqlite3_file base;
  sqlite3_file* real; /* the unix file, allocated right after this struct */
} fv_file_t;

_Static_assert(sizeof(fv_file_t) % 8 == 0, "keeps the real file aligned");

static sqlite3_vfs* g_real;
static sqlite3_vfs g_vfs;
static int g_armed;
static int g_persistent;
static int64_t g_target, g_ops, g_hits;
static fv_op_t g_first;
static int g_open_files;
static int g_trace; /* $OB_FAULTS_TRACE set: print every counted op */

static const char* const g_names[FV__COUNT] = {
    "xOpen",     "xDelete",   "xAccess", "xRead",
    "xWrite",    "xTruncate", "xSync",   "xFileSize",
    "xLock",     "xUnlock",   "xCheckReservedLock", "xShmMap"};

static const int g_errors[FV__COUNT] = {
    SQLITE_CANTOPEN,      SQLITE_IOERR_DELETE,   SQLITE_IOERR_ACCESS,
    SQLITE_IOERR_READ,    SQLITE_IOERR_WRITE,    SQLITE_IOERR_TRUNCATE,
    SQLITE_IOERR_FSYNC,   SQLITE_IOERR_FSTAT,    SQLITE_IOERR_LOCK,
    SQLITE_IOERR_UNLOCK,  SQLITE_IOERR_CHECKRESERVEDLOCK,
    SQLITE_IOERR_SHMMAP};

const char* fv_op_name(fv_op_t op) {
  return (unsigned)op < (unsigned)FV__COUNT ? g_names[op] : "none";
}

/* Count one operation; returns the error to inject, or SQLITE_OK. */
static int tick(fv_op_t op) {
  int fail;
  if (!g_armed) return SQLITE_OK;
  g_ops++;
  if (g_trace)
    fprintf(stderr, "faultvfs: op %lld %s\n", (long long)g_ops, g_names[op]);
  fail = g_target > 0 &&
         (g_ops == g_target || (g_persistent && g_ops > g_target));
  if (!fail) return SQLITE_OK;
  if (g_hits++ == 0) g_first = op;
  return g_errors[op];
}

void fv_arm(int64_t n, int persistent) {
  g_target = n;
  g_persistent = persistent;
  g_ops = g_hits = 0;
  g_first = FV__COUNT;
  g_armed = 1;
}

void fv_disarm(void) { g_armed = 0; }
int64_t fv_ops(void) { return g_ops; }
int64_t fv_hits(void) { return g_hits; }
fv_op_t fv_first_hit(void) { return g_first; }
int fv_open_files(void) { return g_open_files; }

#define REAL(f) (((fv_file_t*)(f))->real)
#define FWD(f) REAL(f)->pMethods

static int f_close(sqlite3_file* f) {
  int rc = FWD(f)->xClose(REAL(f));
  g_open_files--;
  return rc;
}

static int f_read(sqlite3_file* f, void* b, int n, sqlite3_int64 off) {
  int rc = tick(FV_READ);
  return rc ? rc : FWD(f)->xRead(REAL(f), b, n, off);
}

static int f_write(sqlite3_file* f, const void* b, int n, sqlite3_int64 off) {
  int rc = tick(FV_WRITE);
  return rc ? rc : FWD(f)->xWrite(REAL(f), b, n, off);
}

static int f_truncate(sqlite3_file* f, sqlite3_int64 size) {
  int rc = tick(FV_TRUNCATE);
  return rc ? rc : FWD(f)->xTruncate(REAL(f), size);
}

static int f_sync(sqlite3_file* f, int flags) {
  int rc = tick(FV_SYNC);
  return rc ? rc : FWD(f)->xSync(REAL(f), flags);
}

static int f_file_size(sqlite3_file* f, sqlite3_int64* size) {
  int rc = tick(FV_FILESIZE);
  return rc ? rc : FWD(f)->xFileSize(REAL(f), size);
}

static int f_lock(sqlite3_file* f, int l) {
  int rc = tick(FV_LOCK);
  return rc ? rc : FWD(f)->xLock(REAL(f), l);
}

static int f_unlock(sqlite3_file* f, int l) {
  int rc = tick(FV_UNLOCK);
  return rc ? rc : FWD(f)->xUnlock(REAL(f), l);
}

static int f_check_reserved(sqlite3_file* f, int* out) {
  int rc = tick(FV_CHECKRESERVED);
  return rc ? rc : FWD(f)->xCheckReservedLock(REAL(f), out);
}

static int f_file_control(sqlite3_file* f, int op, void* arg) {
  return FWD(f)->xFileControl(REAL(f), op, arg);
}

static int f_sector_size(sqlite3_file* f) {
  return FWD(f)->xSectorSize(REAL(f));
}

static int f_device_chars(sqlite3_file* f) {
  return FWD(f)->xDeviceCharacteristics(REAL(f));
}

static int f_shm_map(sqlite3_file* f, int pg, int sz, int ext,
                     void volatile** pp) {
  int rc = tick(FV_SHMMAP);
  if (rc) {
    *pp = NULL;
    return rc;
  }
  return FWD(f)->xShmMap(REAL(f), pg, sz, ext, pp);
}

static int f_shm_lock(sqlite3_file* f, int off, int n, int flags) {
  return FWD(f)->xShmLock(REAL(f), off, n, flags);
}

static void f_shm_barrier(sqlite3_file* f) { FWD(f)->xShmBarrier(REAL(f)); }

static int f_shm_unmap(sqlite3_file* f, int del) {
  return FWD(f)->xShmUnmap(REAL(f), del);
}

/* Version 2: no xFetch/xUnfetch, so no mmap. */
static const sqlite3_io_methods g_io = {
    2,              f_close,          f_read,         f_write,
    f_truncate,     f_sync,           f_file_size,    f_lock,
    f_unlock,       f_check_reserved, f_file_control, f_sector_size,
    f_device_chars, f_shm_map,        f_shm_lock,     f_shm_barrier,
    f_shm_unmap,    NULL,             NULL};

static int v_open(sqlite3_vfs* vfs, const char* name, sqlite3_file* f,
                  int flags, int* out_flags) {
  fv_file_t* p = (fv_file_t*)f;
  int rc;
  (void)vfs;
  memset(p, 0, sizeof *p);
  p->real = (sqlite3_file*)(p + 1);
  rc = tick(FV_OPEN);
  if (rc) return rc; /* pMethods stays NULL: SQLite will not call xClose */
  rc = g_real->xOpen(g_real, name, p->real, flags, out_flags);
  /* SQLite calls xClose iff pMethods is set, even when xOpen failed. */
  if (p->real->pMethods == NULL) return rc;
  p->base.pMethods = &g_io;
  g_open_files++;
  return rc;
}

static int v_delete(sqlite3_vfs* v, const char* name, int dir_sync) {
  int rc = tick(FV_DELETE);
  (void)v;
  return rc ? rc : g_real->xDelete(g_real, name, dir_sync);
}

static int v_access(sqlite3_vfs* v, const char* name, int flags, int* out) {
  int rc = tick(FV_ACCESS);
  (void)v;
  if (rc) {
    *out = 0;
    return rc;
  }
  return g_real->xAccess(g_real, name, flags, out);
}

/* Everything else is the real VFS's, called with the real VFS. */
static int v_full_pathname(sqlite3_vfs* v, const char* name, int n,
                           char* out) {
  (void)v;
  return g_real->xFullPathname(g_real, name, n, out);
}
static void* v_dl_open(sqlite3_vfs* v, const char* name) {
  (void)v;
  return g_real->xDlOpen(g_real, name);
}
static void v_dl_error(sqlite3_vfs* v, int n, char* msg) {
  (void)v;
  g_real->xDlError(g_real, n, msg);
}
typedef void (*fv_sym_t)(void);
static fv_sym_t v_dl_sym(sqlite3_vfs* v, void* h, const char* sym) {
  (void)v;
  return g_real->xDlSym(g_real, h, sym);
}
static void v_dl_close(sqlite3_vfs* v, void* h) {
  (void)v;
  g_real->xDlClose(g_real, h);
}
static int v_randomness(sqlite3_vfs* v, int n, char* out) {
  (void)v;
  return g_real->xRandomness(g_real, n, out);
}
static int v_sleep(sqlite3_vfs* v, int us) {
  (void)v;
  return g_real->xSleep(g_real, us);
}
static int v_current_time(sqlite3_vfs* v, double* out) {
  (void)v;
  return g_real->xCurrentTime(g_real, out);
}
static int v_get_last_error(sqlite3_vfs* v, int n, char* out) {
  (void)v;
  return g_real->xGetLastError ? g_real->xGetLastError(g_real, n, out) : 0;
}
static int v_current_time64(sqlite3_vfs* v, sqlite3_int64* out) {
  (void)v;
  return g_real->xCurrentTimeInt64(g_real, out);
}

int fv_install(void) {
  g_real = sqlite3_vfs_find("unix");
  if (g_real == NULL || g_real->iVersion < 2) return -1;
  memset(&g_vfs, 0, sizeof g_vfs);
  g_vfs.iVersion = 2;
  g_vfs.szOsFile = (int)sizeof(fv_file_t) + g_real->szOsFile;
  g_vfs.mxPathname = g_real->mxPathname;
  g_vfs.zName = "faultvfs";
  g_vfs.xOpen = v_open;
  g_vfs.xDelete = v_delete;
  g_vfs.xAccess = v_access;
  g_vfs.xFullPathname = v_full_pathname;
  g_vfs.xDlOpen = v_dl_open;
  g_vfs.xDlError = v_dl_error;
  g_vfs.xDlSym = v_dl_sym;
  g_vfs.xDlClose = v_dl_close;
  g_vfs.xRandomness = v_randomness;
  g_vfs.xSleep = v_sleep;
  g_vfs.xCurrentTime = v_current_time;
  g_vfs.xGetLastError = v_get_last_error;
  g_vfs.xCurrentTimeInt64 = v_current_time64;
  g_armed = 0;
  g_first = FV__COUNT;
  g_trace = getenv("OB_FAULTS_TRACE") != NULL;
  return sqlite3_vfs_register(&g_vfs, 1) == SQLITE_OK ? 0 : -1;
}
