/* SPDX-License-Identifier: Apache-2.0 */
/* plsim: the power-loss simulator VFS shim (see plsim.h and
** docs/reliability.md, "The power-loss simulator (plsim)").
**
** Bookkeeping per tracked file F, all in F's directory:
**   F.pending      records {i64 off; i32 len; bytes} appended after each
**                  successful write (len >= 0), truncate (len -1, off = new
**                  size) or size hint (len -2, off = size to extend to);
**                  one writev per record; a torn record at the end (a SIGKILL
**                  mid-append) is ignored
**   F.durable      what a power loss would leave of F; absent = F was never
**                  synced and would not exist
**   F.durable.tmp  the first copy of F's pre-existing content, renamed to
**                  F.durable when complete
**   F.plsim        the marker: F is tracked; created LAST, so a kill during
**                  the bookkeeping of an open leaves no half state behind
**
** The shim runs in the worker, which may die at any instruction; restore and
** forget run in the supervisor after it died. */
#include "tests/crash/plsim.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <sqlite3.h>

#define TRACKED_FLAGS \
  (SQLITE_OPEN_MAIN_DB | SQLITE_OPEN_WAL | SQLITE_OPEN_MAIN_JOURNAL)
#define REC_HDR 12 /* i64 off + i32 len, little-endian host order */
#define REC_TRUNCATE (-1)
#define REC_EXTEND (-2)
#define SECTOR 512

typedef struct plsim_file_s {
  sqlite3_file base;
  sqlite3_file* real; /* the unix file, allocated right after this struct */
  char* path;         /* tracked: the file's full path; NULL: untracked */
  int pending_fd;     /* tracked: F.pending, O_APPEND */
} plsim_file_t;

/* The real file follows at an 8-byte boundary whatever the struct's size
** (20 bytes on 32-bit ARM, 32 on 64-bit). */
#define REAL_OFFSET ((sizeof(plsim_file_t) + 7) & ~(size_t)7)

static sqlite3_vfs* g_real;
static sqlite3_vfs g_vfs;
static plsim_config_t g_cfg;
static int64_t g_syncs, g_writes;

#define REAL(f) (((plsim_file_t*)(f))->real)
#define FWD(f) REAL(f)->pMethods

/* ---- small helpers (worker side and supervisor side) --------------------- */

static char* with_suffix(const char* path, const char* suffix) {
  size_t a = strlen(path), b = strlen(suffix);
  char* s = malloc(a + b + 1);
  if (s == NULL) return NULL;
  memcpy(s, path, a);
  memcpy(s + a, suffix, b + 1);
  return s;
}

/* The simulator cannot go on without its bookkeeping: a silent error here
** would make the campaign prove nothing. */
static void broken(const char* what, const char* path) {
  fprintf(stderr, "plsim: %s %s: %s\n", what, path ? path : "",
          strerror(errno));
  _exit(PLSIM_EXIT_BROKEN);
}

static int write_all(int fd, const void* buf, size_t n, off_t off) {
  const char* p = buf;
  while (n > 0) {
    ssize_t w = pwrite(fd, p, n, off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
    off += w;
  }
  return 0;
}

/* Read the whole file at path into a malloc'd buffer (*len bytes). A missing
** file reads as empty. Returns 0 or -1. */
static int read_file(const char* path, unsigned char** out, size_t* len) {
  struct stat sb;
  unsigned char* buf;
  size_t got = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  *out = NULL;
  *len = 0;
  if (fd < 0) return errno == ENOENT ? 0 : -1;
  if (fstat(fd, &sb) != 0) {
    close(fd);
    return -1;
  }
  buf = malloc((size_t)sb.st_size + 1);
  if (buf == NULL) {
    close(fd);
    return -1;
  }
  while (got < (size_t)sb.st_size) {
    ssize_t r = pread(fd, buf + got, (size_t)sb.st_size - got, (off_t)got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += (size_t)r;
  }
  close(fd);
  *out = buf;
  *len = got;
  return 0;
}

static int copy_file(const char* src, const char* dst) {
  static char buf[1 << 16];
  int in = open(src, O_RDONLY | O_CLOEXEC), out;
  off_t off = 0;
  if (in < 0) return -1;
  out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (out < 0) {
    close(in);
    return -1;
  }
  for (;;) {
    ssize_t r = read(in, buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) goto fail;
    if (r == 0) break;
    if (write_all(out, buf, (size_t)r, off) != 0) goto fail;
    off += r;
  }
  close(in);
  return close(out);
fail:
  close(in);
  close(out);
  return -1;
}

static int touch(const char* path, int flags) {
  int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | flags, 0600);
  if (fd < 0) return -1;
  return close(fd);
}

static int unlink_quiet(const char* path) {
  return unlink(path) == 0 || errno == ENOENT ? 0 : -1;
}

/* One pending record, parsed. */
typedef struct rec_s {
  int64_t off;
  int32_t len;
  const unsigned char* data;
} rec_t;

/* Next complete record at buf[*pos..n); 0 at the end or at a torn tail. */
static int next_rec(const unsigned char* buf, size_t n, size_t* pos, rec_t* r) {
  if (n - *pos < REC_HDR) return 0;
  memcpy(&r->off, buf + *pos, 8);
  memcpy(&r->len, buf + *pos + 8, 4);
  if (r->len < REC_EXTEND) return 0; /* garbage: treat as torn */
  if (r->len > 0 && n - *pos - REC_HDR < (size_t)r->len) return 0;
  r->data = buf + *pos + REC_HDR;
  *pos += REC_HDR + (r->len > 0 ? (size_t)r->len : 0);
  return 1;
}

static int apply_size(int fd, const rec_t* r) {
  struct stat sb;
  if (r->len == REC_TRUNCATE) return ftruncate(fd, (off_t)r->off);
  if (fstat(fd, &sb) != 0) return -1;
  if (sb.st_size < r->off) return ftruncate(fd, (off_t)r->off);
  return 0;
}

/* ---- the worker side: tracking --------------------------------------------- */

/* First open of path by this power epoch: what it holds now is durable. */
static void track_init(const char* path) {
  char* marker = with_suffix(path, ".plsim");
  char* durable = with_suffix(path, ".durable");
  char* tmp = with_suffix(path, ".durable.tmp");
  char* pending = with_suffix(path, ".pending");
  if (!marker || !durable || !tmp || !pending) broken("out of memory", path);
  if (access(marker, F_OK) != 0) {
    if (unlink_quiet(tmp) != 0) broken("unlink", tmp);
    if (access(path, F_OK) == 0) {
      if (copy_file(path, tmp) != 0) broken("copy to", tmp);
      if (rename(tmp, durable) != 0) broken("rename", tmp);
    } else if (errno == ENOENT) {
      if (unlink_quiet(durable) != 0) broken("unlink", durable);
    } else {
      broken("access", path);
    }
    if (touch(pending, O_TRUNC) != 0) broken("create", pending);
    if (touch(marker, O_TRUNC) != 0) broken("create", marker); /* last */
  }
  free(marker);
  free(durable);
  free(tmp);
  free(pending);
}

static void journal(plsim_file_t* p, int64_t off, int32_t len,
                    const void* data) {
  unsigned char hdr[REC_HDR];
  struct iovec iov[2];
  size_t want = REC_HDR + (len > 0 ? (size_t)len : 0);
  ssize_t w;
  memcpy(hdr, &off, 8);
  memcpy(hdr + 8, &len, 4);
  iov[0].iov_base = hdr;
  iov[0].iov_len = REC_HDR;
  iov[1].iov_base = (void*)data;
  iov[1].iov_len = len > 0 ? (size_t)len : 0;
  do {
    w = writev(p->pending_fd, iov, len > 0 ? 2 : 1);
  } while (w < 0 && errno == EINTR);
  if (w != (ssize_t)want) broken("append to the pending file of", p->path);
}

/* xSync: this file's pending records, in order, onto its durable image. */
static void make_durable(plsim_file_t* p) {
  char* pending = with_suffix(p->path, ".pending");
  char* durable = with_suffix(p->path, ".durable");
  unsigned char* buf;
  size_t n, pos = 0;
  rec_t r;
  int fd;
  if (!pending || !durable) broken("out of memory", p->path);
  if (read_file(pending, &buf, &n) != 0) broken("read", pending);
  fd = open(durable, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) broken("open", durable);
  while (next_rec(buf, n, &pos, &r)) {
    int rc = r.len >= 0 ? write_all(fd, r.data, (size_t)r.len, (off_t)r.off)
                        : apply_size(fd, &r);
    if (rc != 0) broken("apply a record to", durable);
  }
  /* Our own records are never torn: the process is alive. */
  if (pos != n) {
    errno = EINVAL;
    broken("torn record in a live pending file", pending);
  }
  if (close(fd) != 0) broken("close", durable);
  if (ftruncate(p->pending_fd, 0) != 0) broken("truncate", pending);
  free(buf);

  if (g_cfg.verify) {
    unsigned char *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    if (read_file(durable, &a, &na) != 0 || read_file(p->path, &b, &nb) != 0)
      broken("verify: read", p->path);
    if (na != nb || (na > 0 && memcmp(a, b, na) != 0)) {
      fprintf(stderr, "plsim: verify: %s.durable (%zu bytes) differs from "
              "the file (%zu bytes) after a sync\n", p->path, na, nb);
      _exit(PLSIM_EXIT_BROKEN);
    }
    free(a);
    free(b);
  }
  free(pending);
  free(durable);
}

static int p_close(sqlite3_file* f) {
  plsim_file_t* p = (plsim_file_t*)f;
  int rc = FWD(f)->xClose(REAL(f));
  if (p->pending_fd >= 0) close(p->pending_fd);
  p->pending_fd = -1;
  free(p->path);
  p->path = NULL;
  return rc;
}

static int p_read(sqlite3_file* f, void* b, int n, sqlite3_int64 off) {
  return FWD(f)->xRead(REAL(f), b, n, off);
}

static int p_write(sqlite3_file* f, const void* b, int n, sqlite3_int64 off) {
  plsim_file_t* p = (plsim_file_t*)f;
  int rc;
  if (p->path != NULL) {
    g_writes++;
    if (g_cfg.crash_at_write > 0 && g_writes == g_cfg.crash_at_write)
      _exit(PLSIM_EXIT_WRITE_CRASH);
  }
  rc = FWD(f)->xWrite(REAL(f), b, n, off);
  if (rc == SQLITE_OK && p->path != NULL) journal(p, off, n, b);
  return rc;
}

static int p_truncate(sqlite3_file* f, sqlite3_int64 size) {
  plsim_file_t* p = (plsim_file_t*)f;
  int rc = FWD(f)->xTruncate(REAL(f), size);
  if (rc == SQLITE_OK && p->path != NULL)
    journal(p, size, REC_TRUNCATE, NULL);
  return rc;
}

static int p_sync(sqlite3_file* f, int flags) {
  plsim_file_t* p = (plsim_file_t*)f;
  if (p->path == NULL) return FWD(f)->xSync(REAL(f), flags);
  g_syncs++;
  if (g_cfg.crash_at_sync > 0 && g_syncs == g_cfg.crash_at_sync)
    _exit(PLSIM_EXIT_SYNC_CRASH);
  /* No real fdatasync: the durable image is what survives. */
  make_durable(p);
  return SQLITE_OK;
}

static int p_file_size(sqlite3_file* f, sqlite3_int64* size) {
  return FWD(f)->xFileSize(REAL(f), size);
}
static int p_lock(sqlite3_file* f, int l) { return FWD(f)->xLock(REAL(f), l); }
static int p_unlock(sqlite3_file* f, int l) {
  return FWD(f)->xUnlock(REAL(f), l);
}
static int p_check_reserved(sqlite3_file* f, int* out) {
  return FWD(f)->xCheckReservedLock(REAL(f), out);
}

static int p_file_control(sqlite3_file* f, int op, void* arg) {
  plsim_file_t* p = (plsim_file_t*)f;
  int rc = FWD(f)->xFileControl(REAL(f), op, arg);
  /* A size hint may grow the file without xWrite (test6.c records it). */
  if (rc == SQLITE_OK && p->path != NULL && op == SQLITE_FCNTL_SIZE_HINT) {
    sqlite3_int64 size = 0;
    if (FWD(f)->xFileSize(REAL(f), &size) == SQLITE_OK)
      journal(p, size, REC_EXTEND, NULL);
  }
  return rc;
}

static int p_sector_size(sqlite3_file* f) {
  return FWD(f)->xSectorSize(REAL(f));
}

/* No ATOMIC*, SAFE_APPEND, SEQUENTIAL or POWERSAFE_OVERWRITE: SQLite must
** assume the worst of a power loss. */
static int p_device_chars(sqlite3_file* f) {
  (void)f;
  return 0;
}

static int p_shm_map(sqlite3_file* f, int pg, int sz, int ext,
                     void volatile** pp) {
  return FWD(f)->xShmMap(REAL(f), pg, sz, ext, pp);
}
static int p_shm_lock(sqlite3_file* f, int off, int n, int flags) {
  return FWD(f)->xShmLock(REAL(f), off, n, flags);
}
static void p_shm_barrier(sqlite3_file* f) { FWD(f)->xShmBarrier(REAL(f)); }
static int p_shm_unmap(sqlite3_file* f, int del) {
  return FWD(f)->xShmUnmap(REAL(f), del);
}

/* Version 2: xShm* but no xFetch/xUnfetch, so SQLite never uses mmap (a
** write through a mapping would bypass the journal). */
static const sqlite3_io_methods g_io = {
    2,           p_close,         p_read,         p_write,
    p_truncate,  p_sync,          p_file_size,    p_lock,
    p_unlock,    p_check_reserved, p_file_control, p_sector_size,
    p_device_chars, p_shm_map,    p_shm_lock,     p_shm_barrier,
    p_shm_unmap, NULL,            NULL};

static int p_open(sqlite3_vfs* vfs, const char* name, sqlite3_file* f,
                  int flags, int* out_flags) {
  plsim_file_t* p = (plsim_file_t*)f;
  int rc;
  (void)vfs;
  memset(p, 0, sizeof *p);
  p->pending_fd = -1;
  p->real = (sqlite3_file*)((char*)p + REAL_OFFSET);
  if (name != NULL && (flags & TRACKED_FLAGS) != 0) {
    char* pending;
    p->path = strdup(name);
    pending = with_suffix(name, ".pending");
    if (p->path == NULL || pending == NULL) broken("out of memory", name);
    track_init(name);
    p->pending_fd = open(pending, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (p->pending_fd < 0) broken("open", pending);
    free(pending);
  }
  rc = g_real->xOpen(g_real, name, p->real, flags, out_flags);
  /* SQLite calls xClose iff pMethods is set, even when xOpen failed. */
  if (p->real->pMethods == NULL) {
    if (p->pending_fd >= 0) close(p->pending_fd);
    free(p->path);
    p->path = NULL;
    p->pending_fd = -1;
    p->base.pMethods = NULL;
    return rc;
  }
  p->base.pMethods = &g_io;
  return rc;
}

/* An unlink is durable at once (the limitation in plsim.h). The durable
** image goes first: from then on a power loss also loses the file. */
static int p_delete(sqlite3_vfs* vfs, const char* name, int dir_sync) {
  char* marker = with_suffix(name, ".plsim");
  int rc;
  (void)vfs;
  if (marker == NULL) return SQLITE_IOERR_NOMEM;
  if (access(marker, F_OK) == 0) {
    char* durable = with_suffix(name, ".durable");
    char* pending = with_suffix(name, ".pending");
    if (!durable || !pending) broken("out of memory", name);
    if (unlink_quiet(durable) != 0) broken("unlink", durable);
    rc = g_real->xDelete(g_real, name, dir_sync);
    if (unlink_quiet(pending) != 0) broken("unlink", pending);
    if (unlink_quiet(marker) != 0) broken("unlink", marker);
    free(durable);
    free(pending);
  } else {
    rc = g_real->xDelete(g_real, name, dir_sync);
  }
  free(marker);
  return rc;
}

/* Everything else is the real VFS's, called with the real VFS. */
static int p_access(sqlite3_vfs* v, const char* name, int flags, int* out) {
  (void)v;
  return g_real->xAccess(g_real, name, flags, out);
}
static int p_full_pathname(sqlite3_vfs* v, const char* name, int n,
                           char* out) {
  (void)v;
  return g_real->xFullPathname(g_real, name, n, out);
}
static void* p_dl_open(sqlite3_vfs* v, const char* name) {
  (void)v;
  return g_real->xDlOpen(g_real, name);
}
static void p_dl_error(sqlite3_vfs* v, int n, char* msg) {
  (void)v;
  g_real->xDlError(g_real, n, msg);
}
typedef void (*plsim_sym_t)(void);
static plsim_sym_t p_dl_sym(sqlite3_vfs* v, void* h, const char* sym) {
  (void)v;
  return g_real->xDlSym(g_real, h, sym);
}
static void p_dl_close(sqlite3_vfs* v, void* h) {
  (void)v;
  g_real->xDlClose(g_real, h);
}
static int p_randomness(sqlite3_vfs* v, int n, char* out) {
  (void)v;
  return g_real->xRandomness(g_real, n, out);
}
static int p_sleep(sqlite3_vfs* v, int us) {
  (void)v;
  return g_real->xSleep(g_real, us);
}
static int p_current_time(sqlite3_vfs* v, double* out) {
  (void)v;
  return g_real->xCurrentTime(g_real, out);
}
static int p_get_last_error(sqlite3_vfs* v, int n, char* out) {
  (void)v;
  return g_real->xGetLastError ? g_real->xGetLastError(g_real, n, out) : 0;
}
static int p_current_time64(sqlite3_vfs* v, sqlite3_int64* out) {
  (void)v;
  return g_real->xCurrentTimeInt64(g_real, out);
}

int plsim_install(const plsim_config_t* c) {
  memset(&g_cfg, 0, sizeof g_cfg);
  if (c != NULL) g_cfg = *c;
  g_syncs = g_writes = 0;
  g_real = sqlite3_vfs_find("unix");
  if (g_real == NULL || g_real->iVersion < 2) return -1;
  memset(&g_vfs, 0, sizeof g_vfs);
  g_vfs.iVersion = 2;
  g_vfs.szOsFile = (int)REAL_OFFSET + g_real->szOsFile;
  g_vfs.mxPathname = g_real->mxPathname;
  g_vfs.zName = "plsim";
  g_vfs.xOpen = p_open;
  g_vfs.xDelete = p_delete;
  g_vfs.xAccess = p_access;
  g_vfs.xFullPathname = p_full_pathname;
  g_vfs.xDlOpen = p_dl_open;
  g_vfs.xDlError = p_dl_error;
  g_vfs.xDlSym = p_dl_sym;
  g_vfs.xDlClose = p_dl_close;
  g_vfs.xRandomness = p_randomness;
  g_vfs.xSleep = p_sleep;
  g_vfs.xCurrentTime = p_current_time;
  g_vfs.xGetLastError = p_get_last_error;
  g_vfs.xCurrentTimeInt64 = p_current_time64;
  return sqlite3_vfs_register(&g_vfs, 1) == SQLITE_OK ? 0 : -1;
}

int64_t plsim_syncs(void) { return g_syncs; }
int64_t plsim_writes(void) { return g_writes; }

/* ---- the supervisor side: restore and forget -------------------------------- */

static uint64_t rng_next(uint64_t* s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

static int ends_with(const char* s, const char* suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* Names in dir (a snapshot: the loop below renames and unlinks). */
static char** list_dir(const char* dir, size_t* n) {
  DIR* d = opendir(dir);
  struct dirent* de;
  char** names = NULL;
  size_t cap = 0;
  *n = 0;
  if (d == NULL) return NULL;
  /* A partial list would replay a partial disk: stop instead. */
  errno = 0;
  while ((de = readdir(d)) != NULL) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
      continue;
    if (*n == cap) {
      char** g = realloc(names, (cap = cap ? cap * 2 : 32) * sizeof *g);
      if (g == NULL) broken("out of memory listing", dir);
      names = g;
    }
    names[*n] = strdup(de->d_name);
    if (names[*n] == NULL) broken("out of memory listing", dir);
    (*n)++;
    errno = 0;
  }
  if (errno != 0) broken("cannot read directory", dir);
  closedir(d);
  return names;
}

static void free_list(char** names, size_t n) {
  for (size_t i = 0; i < n; i++) free(names[i]);
  free(names);
}

static char* join(const char* dir, const char* name, size_t name_len) {
  size_t a = strlen(dir);
  char* s = malloc(a + 1 + name_len + 1);
  if (s == NULL) return NULL;
  memcpy(s, dir, a);
  s[a] = '/';
  memcpy(s + a + 1, name, name_len);
  s[a + 1 + name_len] = '\0';
  return s;
}

/* Torn mode: a random subset of the pending records onto fd, in order. */
static int apply_torn(int fd, const unsigned char* buf, size_t n,
                      uint64_t* rng, plsim_restore_stats_t* st) {
  size_t pos = 0;
  rec_t r;
  unsigned char garbage[SECTOR];
  while (next_rec(buf, n, &pos, &r)) {
    unsigned fate = (unsigned)(rng_next(rng) % 4); /* 0,1 lost; 2 whole; 3 torn */
    st->records++;
    if (fate < 2) {
      st->lost++;
      continue;
    }
    if (r.len < 0) { /* a size change happens or does not */
      st->applied++;
      if (apply_size(fd, &r) != 0) return -1;
      continue;
    }
    if (fate == 2) {
      st->applied++;
      if (write_all(fd, r.data, (size_t)r.len, (off_t)r.off) != 0) return -1;
      continue;
    }
    st->torn++;
    for (int64_t at = r.off; at < r.off + r.len;) {
      int64_t end = (at / SECTOR + 1) * SECTOR;
      size_t len;
      unsigned what = (unsigned)(rng_next(rng) % 3); /* skip, write, garbage */
      if (end > r.off + r.len) end = r.off + r.len;
      len = (size_t)(end - at);
      if (what == 1) {
        if (write_all(fd, r.data + (at - r.off), len, (off_t)at) != 0)
          return -1;
      } else if (what == 2) {
        for (size_t i = 0; i < len; i++)
          garbage[i] = (unsigned char)rng_next(rng);
        if (write_all(fd, garbage, len, (off_t)at) != 0) return -1;
      }
      at = end;
    }
  }
  return 0;
}

static int restore_one(const char* path, int torn, uint64_t* rng,
                       plsim_restore_stats_t* st) {
  char* durable = with_suffix(path, ".durable");
  char* pending = with_suffix(path, ".pending");
  char* marker = with_suffix(path, ".plsim");
  int rc = -1;
  if (!durable || !pending || !marker) goto out;
  if (access(durable, F_OK) != 0) {
    /* Never synced: the directory entry did not survive either. */
    if (unlink_quiet(path) != 0) goto fail;
    st->removed++;
  } else {
    if (torn) {
      unsigned char* buf;
      size_t n;
      int fd;
      if (read_file(pending, &buf, &n) != 0) goto fail;
      fd = open(durable, O_RDWR | O_CLOEXEC);
      if (fd < 0) {
        free(buf);
        goto fail;
      }
      rc = apply_torn(fd, buf, n, rng, st);
      free(buf);
      if (close(fd) != 0 || rc != 0) {
        rc = -1;
        goto fail;
      }
    }
    if (rename(durable, path) != 0) goto fail;
    st->files++;
  }
  if (unlink_quiet(pending) != 0 || unlink_quiet(marker) != 0) goto fail;
  rc = 0;
  goto out;
fail:
  fprintf(stderr, "plsim: restore %s: %s\n", path, strerror(errno));
  rc = -1;
out:
  free(durable);
  free(pending);
  free(marker);
  return rc;
}

/* Remove bookkeeping files whose marker is gone (a kill during an open's
** bookkeeping, or the pass above) and, for a power loss, every -shm. */
static int sweep(const char* dir, int shm) {
  size_t n;
  char** names;
  int rc = 0;
  errno = 0;
  names = list_dir(dir, &n);
  if (names == NULL && errno != 0) return -1;
  for (size_t i = 0; i < n; i++) {
    const char* s = names[i];
    if (ends_with(s, ".plsim") || ends_with(s, ".pending") ||
        ends_with(s, ".durable") || ends_with(s, ".durable.tmp") ||
        (shm && ends_with(s, "-shm"))) {
      char* p = join(dir, s, strlen(s));
      if (p == NULL || unlink_quiet(p) != 0) rc = -1;
      free(p);
    }
  }
  free_list(names, n);
  return rc;
}

int plsim_restore(const char* dir, int torn, uint64_t seed,
                  plsim_restore_stats_t* st_out) {
  plsim_restore_stats_t st;
  uint64_t rng = seed ^ 0x5DEECE66DULL;
  size_t n;
  char** names;
  int rc = 0;
  memset(&st, 0, sizeof st);
  errno = 0;
  names = list_dir(dir, &n);
  if (names == NULL && errno != 0) {
    fprintf(stderr, "plsim: restore: %s: %s\n", dir, strerror(errno));
    return -1;
  }
  for (size_t i = 0; i < n; i++) {
    char* path;
    if (!ends_with(names[i], ".plsim")) continue;
    path = join(dir, names[i], strlen(names[i]) - strlen(".plsim"));
    if (path == NULL || restore_one(path, torn, &rng, &st) != 0) rc = -1;
    free(path);
  }
  free_list(names, n);
  if (sweep(dir, 1) != 0) rc = -1;
  if (st_out) *st_out = st;
  return rc;
}

int plsim_forget(const char* dir) {
  return sweep(dir, 0);
}
