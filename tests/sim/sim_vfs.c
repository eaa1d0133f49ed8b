/* SPDX-License-Identifier: Apache-2.0 */
/*
** The simulated disk: an in-memory SQLite VFS, registered as the default
** (sim.h). Files live in 4 KiB chunks, twice: what the OS holds (cur) and
** what survived the last fsync (dur). A write changes cur and marks the
** chunk dirty; xSync copies the file's dirty chunks to dur. A kill freezes
** the disk (every later write, sync and delete fails: the process is
** gone); a power loss brings every file back to dur, and drops a file
** never synced. Shared memory (the WAL index) is dropped on every restart,
** as it does not outlive the processes that map it. The space used is the
** sum of the files' sizes rounded up to chunks, plus the "external" bytes
** the world sets; a write past the filesystem's size fails with
** SQLITE_FULL. Locks (file and shm) are counted for real, since the engine
** may hold two connections for a moment.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "tests/sim/sim.h"

#define CHUNK 4096
#define SHM_SLOTS 8

typedef struct handle_s handle_t;

typedef struct mfile_s {
  char* name;
  int64_t size, dsize;
  uint8_t** cur;
  uint8_t** dur;
  uint8_t* dirty;
  size_t cap;       /* chunks in the three arrays */
  size_t* dlist;    /* dirty chunk indexes */
  size_t ndl, dlcap;
  int ever_synced;
  int is_main;
  int nopen;
  int unlinked;     /* deleted while open: freed at the last close */
  /* file locks */
  int shared_cnt;
  handle_t* writer;
  /* shared memory */
  uint8_t** shm;
  int nshm;
  int shm_mapped;
  int shm_shared[SHM_SLOTS];
  handle_t* shm_excl[SHM_SLOTS];
  struct mfile_s* next;
} mfile_t;

struct handle_s {
  sqlite3_file base;
  mfile_t* f;
  int lock;
  unsigned shm_sh, shm_ex;
  int shm_on;
  int temp;   /* delete on close */
};

static mfile_t* g_files;
static int64_t g_fs_size = (int64_t)1 << 40;
static int64_t g_external;
static int64_t g_used;
static int g_dead;
static unsigned g_eio;
static sim_rng_t g_rng;
static sim_disk_stats_t g_stats;
static int g_tmpn;
static char g_dir[512];

static int64_t blocks(int64_t size) { return (size + CHUNK - 1) / CHUNK * CHUNK; }

static mfile_t* find(const char* name) {
  for (mfile_t* f = g_files; f; f = f->next)
    if (!f->unlinked && strcmp(f->name, name) == 0) return f;
  return NULL;
}

static int grow(mfile_t* f, size_t chunks) {
  size_t n = f->cap ? f->cap : 16;
  if (chunks <= f->cap) return 0;
  while (n < chunks) n *= 2;
  uint8_t** c = realloc(f->cur, n * sizeof *c);
  if (c == NULL) return -1;
  f->cur = c;
  uint8_t** d = realloc(f->dur, n * sizeof *d);
  if (d == NULL) return -1;
  f->dur = d;
  uint8_t* y = realloc(f->dirty, n);
  if (y == NULL) return -1;
  f->dirty = y;
  for (size_t i = f->cap; i < n; i++) {
    f->cur[i] = f->dur[i] = NULL;
    f->dirty[i] = 0;
  }
  f->cap = n;
  return 0;
}

static int mark(mfile_t* f, size_t i) {
  if (f->dirty[i]) return 0;
  if (f->ndl == f->dlcap) {
    size_t n = f->dlcap ? f->dlcap * 2 : 64;
    size_t* l = realloc(f->dlist, n * sizeof *l);
    if (l == NULL) return -1;
    f->dlist = l;
    f->dlcap = n;
  }
  f->dlist[f->ndl++] = i;
  f->dirty[i] = 1;
  return 0;
}

static void set_size(mfile_t* f, int64_t n) {
  g_used += blocks(n) - blocks(f->size);
  f->size = n;
}

static void free_shm(mfile_t* f) {
  for (int i = 0; i < f->nshm; i++) free(f->shm[i]);
  free(f->shm);
  f->shm = NULL;
  f->nshm = 0;
  memset(f->shm_shared, 0, sizeof f->shm_shared);
  memset(f->shm_excl, 0, sizeof f->shm_excl);
}

static void free_file(mfile_t* f) {
  mfile_t** pp = &g_files;
  while (*pp != f) pp = &(*pp)->next;
  *pp = f->next;
  g_used -= blocks(f->size);
  for (size_t i = 0; i < f->cap; i++) {
    free(f->cur[i]);
    free(f->dur[i]);
  }
  free(f->cur);
  free(f->dur);
  free(f->dirty);
  free(f->dlist);
  free_shm(f);
  free(f->name);
  free(f);
}

static mfile_t* create(const char* name) {
  mfile_t* f = calloc(1, sizeof *f);
  if (f == NULL) return NULL;
  f->name = strdup(name);
  if (f->name == NULL || grow(f, 16) < 0) {
    free(f->name);
    free(f);
    return NULL;
  }
  f->next = g_files;
  g_files = f;
  return f;
}

/* ---- file methods ---------------------------------------------------------- */

static int m_close(sqlite3_file* pf) {
  handle_t* h = (handle_t*)pf;
  mfile_t* f = h->f;
  if (f == NULL) return SQLITE_OK;
  if (h->lock >= SQLITE_LOCK_SHARED) f->shared_cnt--;
  if (f->writer == h) f->writer = NULL;
  f->nopen--;
  if ((h->temp || f->unlinked) && f->nopen == 0) free_file(f);
  h->f = NULL;
  return SQLITE_OK;
}

static int m_read(sqlite3_file* pf, void* buf, int amt, sqlite3_int64 off) {
  mfile_t* f = ((handle_t*)pf)->f;
  uint8_t* p = buf;
  int64_t n = amt;
  int64_t avail = f->size - off;
  int64_t got = avail < 0 ? 0 : (avail < n ? avail : n);
  for (int64_t done = 0; done < got;) {
    size_t ci = (size_t)((off + done) / CHUNK);
    size_t co = (size_t)((off + done) % CHUNK);
    size_t k = CHUNK - co;
    if ((int64_t)k > got - done) k = (size_t)(got - done);
    if (f->cur[ci]) memcpy(p + done, f->cur[ci] + co, k);
    else memset(p + done, 0, k);
    done += (int64_t)k;
  }
  if (got < n) {
    memset(p + got, 0, (size_t)(n - got));
    return SQLITE_IOERR_SHORT_READ;
  }
  return SQLITE_OK;
}

static int m_write(sqlite3_file* pf, const void* buf, int amt,
                   sqlite3_int64 off) {
  mfile_t* f = ((handle_t*)pf)->f;
  const uint8_t* p = buf;
  int64_t end = off + amt;
  if (g_dead) return SQLITE_IOERR_WRITE;
  if (g_eio && sim_rng_chance(&g_rng, g_eio)) {
    g_stats.eio++;
    return SQLITE_IOERR_WRITE;
  }
  if (end > f->size &&
      g_used + g_external + blocks(end) - blocks(f->size) > g_fs_size) {
    g_stats.full++;
    return SQLITE_FULL;
  }
  if (grow(f, (size_t)((end + CHUNK - 1) / CHUNK)) < 0) return SQLITE_NOMEM;
  for (int64_t done = 0; done < amt;) {
    size_t ci = (size_t)((off + done) / CHUNK);
    size_t co = (size_t)((off + done) % CHUNK);
    size_t k = CHUNK - co;
    if ((int64_t)k > amt - done) k = (size_t)(amt - done);
    if (f->cur[ci] == NULL && (f->cur[ci] = calloc(1, CHUNK)) == NULL)
      return SQLITE_NOMEM;
    if (mark(f, ci) < 0) return SQLITE_NOMEM;
    memcpy(f->cur[ci] + co, p + done, k);
    done += (int64_t)k;
  }
  if (end > f->size) set_size(f, end);
  sim_activity();  /* only a write that happened: failing ones are not work */
  return SQLITE_OK;
}

static int m_truncate(sqlite3_file* pf, sqlite3_int64 size) {
  mfile_t* f = ((handle_t*)pf)->f;
  if (g_dead) return SQLITE_IOERR_TRUNCATE;
  if (size >= f->size) return SQLITE_OK;
  for (size_t i = (size_t)((size + CHUNK - 1) / CHUNK); i < f->cap; i++) {
    if (f->cur[i] == NULL && f->dur[i] == NULL) continue;
    if (mark(f, i) < 0) return SQLITE_NOMEM;
    free(f->cur[i]);
    f->cur[i] = NULL;
  }
  if (size % CHUNK) {
    size_t ci = (size_t)(size / CHUNK);
    if (f->cur[ci]) {
      if (mark(f, ci) < 0) return SQLITE_NOMEM;
      memset(f->cur[ci] + size % CHUNK, 0, (size_t)(CHUNK - size % CHUNK));
    }
  }
  set_size(f, size);
  return SQLITE_OK;
}

static int m_sync(sqlite3_file* pf, int flags) {
  mfile_t* f = ((handle_t*)pf)->f;
  (void)flags;
  if (g_dead) return SQLITE_IOERR_FSYNC;
  if (g_eio && sim_rng_chance(&g_rng, g_eio)) {
    g_stats.eio++;
    return SQLITE_IOERR_FSYNC;
  }
  g_stats.syncs++;
  for (size_t k = 0; k < f->ndl; k++) {
    size_t i = f->dlist[k];
    f->dirty[i] = 0;
    if (f->cur[i] == NULL) {
      free(f->dur[i]);
      f->dur[i] = NULL;
      continue;
    }
    if (f->dur[i] == NULL && (f->dur[i] = malloc(CHUNK)) == NULL)
      return SQLITE_NOMEM;
    memcpy(f->dur[i], f->cur[i], CHUNK);
  }
  f->ndl = 0;
  f->dsize = f->size;
  f->ever_synced = 1;
  return SQLITE_OK;
}

static int m_size(sqlite3_file* pf, sqlite3_int64* out) {
  *out = ((handle_t*)pf)->f->size;
  return SQLITE_OK;
}

static int m_lock(sqlite3_file* pf, int lvl) {
  handle_t* h = (handle_t*)pf;
  mfile_t* f = h->f;
  if (lvl <= h->lock) return SQLITE_OK;
  if (lvl == SQLITE_LOCK_SHARED) {
    if (f->writer && f->writer != h && f->writer->lock >= SQLITE_LOCK_PENDING)
      return SQLITE_BUSY;
    f->shared_cnt++;
  } else if (lvl == SQLITE_LOCK_RESERVED) {
    if (f->writer && f->writer != h) return SQLITE_BUSY;
    f->writer = h;
  } else {
    if (f->writer && f->writer != h) return SQLITE_BUSY;
    f->writer = h;
    if (f->shared_cnt > 1) {
      h->lock = SQLITE_LOCK_PENDING;
      return SQLITE_BUSY;
    }
  }
  h->lock = lvl;
  return SQLITE_OK;
}

static int m_unlock(sqlite3_file* pf, int lvl) {
  handle_t* h = (handle_t*)pf;
  mfile_t* f = h->f;
  if (lvl >= h->lock) return SQLITE_OK;
  if (lvl < SQLITE_LOCK_RESERVED && f->writer == h) f->writer = NULL;
  if (lvl < SQLITE_LOCK_SHARED && h->lock >= SQLITE_LOCK_SHARED)
    f->shared_cnt--;
  h->lock = lvl;
  return SQLITE_OK;
}

static int m_check_reserved(sqlite3_file* pf, int* out) {
  handle_t* h = (handle_t*)pf;
  *out = h->f->writer != NULL && h->f->writer != h;
  return SQLITE_OK;
}

static int m_fcntl(sqlite3_file* pf, int op, void* arg) {
  (void)pf;
  (void)op;
  (void)arg;
  return SQLITE_NOTFOUND;
}

static int m_sector(sqlite3_file* pf) {
  (void)pf;
  return 512;
}

static int m_devchar(sqlite3_file* pf) {
  (void)pf;
  return 0;
}

static int m_shm_map(sqlite3_file* pf, int pg, int sz, int extend,
                     void volatile** pp) {
  handle_t* h = (handle_t*)pf;
  mfile_t* f = h->f;
  if (!h->shm_on) {
    h->shm_on = 1;
    f->shm_mapped++;
  }
  if (pg >= f->nshm) {
    if (!extend) {
      *pp = NULL;
      return SQLITE_OK;
    }
    uint8_t** n = realloc(f->shm, (size_t)(pg + 1) * sizeof *n);
    if (n == NULL) return SQLITE_NOMEM;
    f->shm = n;
    for (int i = f->nshm; i <= pg; i++) {
      f->shm[i] = calloc(1, (size_t)sz);
      if (f->shm[i] == NULL) {
        f->nshm = i;
        return SQLITE_NOMEM;
      }
    }
    f->nshm = pg + 1;
  }
  *pp = f->shm[pg];
  return SQLITE_OK;
}

static int m_shm_lock(sqlite3_file* pf, int ofst, int n, int flags) {
  handle_t* h = (handle_t*)pf;
  mfile_t* f = h->f;
  if (flags & SQLITE_SHM_UNLOCK) {
    for (int i = ofst; i < ofst + n; i++) {
      unsigned b = 1u << i;
      if ((flags & SQLITE_SHM_SHARED) && (h->shm_sh & b)) {
        h->shm_sh &= ~b;
        f->shm_shared[i]--;
      }
      if ((flags & SQLITE_SHM_EXCLUSIVE) && (h->shm_ex & b)) {
        h->shm_ex &= ~b;
        f->shm_excl[i] = NULL;
      }
    }
    return SQLITE_OK;
  }
  for (int i = ofst; i < ofst + n; i++) {
    unsigned b = 1u << i;
    if (f->shm_excl[i] && f->shm_excl[i] != h) return SQLITE_BUSY;
    if ((flags & SQLITE_SHM_EXCLUSIVE) &&
        f->shm_shared[i] - ((h->shm_sh & b) ? 1 : 0) > 0)
      return SQLITE_BUSY;
  }
  for (int i = ofst; i < ofst + n; i++) {
    unsigned b = 1u << i;
    if (flags & SQLITE_SHM_SHARED) {
      if (!(h->shm_sh & b)) {
        h->shm_sh |= b;
        f->shm_shared[i]++;
      }
    } else {
      h->shm_ex |= b;
      f->shm_excl[i] = h;
    }
  }
  return SQLITE_OK;
}

static void m_shm_barrier(sqlite3_file* pf) { (void)pf; }

static int m_shm_unmap(sqlite3_file* pf, int del) {
  handle_t* h = (handle_t*)pf;
  mfile_t* f = h->f;
  m_shm_lock(pf, 0, SHM_SLOTS, SQLITE_SHM_UNLOCK | SQLITE_SHM_SHARED);
  m_shm_lock(pf, 0, SHM_SLOTS, SQLITE_SHM_UNLOCK | SQLITE_SHM_EXCLUSIVE);
  if (h->shm_on) {
    h->shm_on = 0;
    f->shm_mapped--;
  }
  if (del && f->shm_mapped == 0) free_shm(f);
  return SQLITE_OK;
}

/* Version 2: shared memory but no mmap (xFetch). */
static const sqlite3_io_methods k_io = {
    2,        m_close,   m_read,      m_write,          m_truncate,
    m_sync,   m_size,    m_lock,      m_unlock,         m_check_reserved,
    m_fcntl,  m_sector,  m_devchar,   m_shm_map,        m_shm_lock,
    m_shm_barrier, m_shm_unmap, NULL, NULL};

/* ---- the VFS ------------------------------------------------------------------ */

static int v_open(sqlite3_vfs* vfs, const char* name, sqlite3_file* pf,
                  int flags, int* out_flags) {
  handle_t* h = (handle_t*)pf;
  char tmp[64];
  mfile_t* f;
  (void)vfs;
  memset(h, 0, sizeof *h);
  if (name == NULL) {
    snprintf(tmp, sizeof tmp, "/sim-temp-%d", ++g_tmpn);
    name = tmp;
    h->temp = 1;
  }
  if (flags & SQLITE_OPEN_DELETEONCLOSE) h->temp = 1;
  f = find(name);
  if (f == NULL) {
    /* ob_open made the main file (empty) on the real disk first. */
    if (!(flags & (SQLITE_OPEN_CREATE | SQLITE_OPEN_MAIN_DB)))
      return SQLITE_CANTOPEN;
    if ((f = create(name)) == NULL) return SQLITE_NOMEM;
  }
  if (flags & SQLITE_OPEN_MAIN_DB) f->is_main = 1;
  f->nopen++;
  h->f = f;
  h->base.pMethods = &k_io;
  if (out_flags) *out_flags = flags;
  return SQLITE_OK;
}

static int v_delete(sqlite3_vfs* vfs, const char* name, int sync_dir) {
  mfile_t* f = find(name);
  (void)vfs;
  (void)sync_dir;
  if (g_dead) return SQLITE_IOERR_DELETE;
  if (f == NULL) return SQLITE_IOERR_DELETE_NOENT;
  if (f->nopen > 0) f->unlinked = 1;
  else free_file(f);
  return SQLITE_OK;
}

static int v_access(sqlite3_vfs* vfs, const char* name, int flags, int* out) {
  mfile_t* f = find(name);
  (void)vfs;
  if (flags == SQLITE_ACCESS_EXISTS) *out = f != NULL && f->size > 0;
  else *out = f != NULL || strcmp(name, g_dir) == 0;
  return SQLITE_OK;
}

static int v_fullpath(sqlite3_vfs* vfs, const char* name, int n, char* out) {
  (void)vfs;
  snprintf(out, (size_t)n, "%s", name);
  return SQLITE_OK;
}

static int v_random(sqlite3_vfs* vfs, int n, char* out) {
  (void)vfs;
  for (int i = 0; i < n; i++) out[i] = (char)sim_rng_next(&g_rng);
  return n;
}

static int v_sleep(sqlite3_vfs* vfs, int us) {
  (void)vfs;
  sim_clock_advance_ms(us / 1000 > 0 ? us / 1000 : 1);
  return us;
}

static int v_time64(sqlite3_vfs* vfs, sqlite3_int64* out) {
  (void)vfs;
  *out = 210866760000000ll + sim_wall_ms();
  return SQLITE_OK;
}

static int v_time(sqlite3_vfs* vfs, double* out) {
  (void)vfs;
  *out = (210866760000000.0 + (double)sim_wall_ms()) / 86400000.0;
  return SQLITE_OK;
}

static int v_lasterr(sqlite3_vfs* vfs, int n, char* out) {
  (void)vfs;
  if (n > 0) out[0] = '\0';
  return 0;
}

static sqlite3_vfs g_vfs = {
    2, sizeof(handle_t), 512, NULL, "sim", NULL, v_open, v_delete, v_access,
    v_fullpath, NULL, NULL, NULL, NULL, v_random, v_sleep, v_time, v_lasterr,
    v_time64, NULL, NULL, NULL};

int sim_vfs_install(const char* dir, uint64_t seed) {
  snprintf(g_dir, sizeof g_dir, "%s", dir);
  sim_rng_init(&g_rng, seed, 3);
  memset(&g_stats, 0, sizeof g_stats);
  return sqlite3_vfs_register(&g_vfs, 1) == SQLITE_OK ? 0 : -1;
}

const char* sim_vfs_dir(void);
const char* sim_vfs_dir(void) { return g_dir; }

void sim_vfs_set_size(int64_t fs_bytes) { g_fs_size = fs_bytes; }
void sim_vfs_set_external(int64_t bytes) { g_external = bytes; }
void sim_vfs_set_eio(unsigned per_mille) { g_eio = per_mille; }
int64_t sim_vfs_used(void) { return g_used; }

int64_t sim_vfs_free(void) {
  int64_t f = g_fs_size - g_used - g_external;
  return f < 0 ? 0 : f;
}

int64_t sim_vfs_fs_size(void);
int64_t sim_vfs_fs_size(void) { return g_fs_size; }

void sim_vfs_kill(void) {
  g_dead = 1;
  g_stats.kills++;
}

void sim_vfs_revive(int power_loss) {
  mfile_t* next;
  g_dead = 0;
  if (power_loss) g_stats.power_losses++;
  for (mfile_t* f = g_files; f; f = next) {
    next = f->next;
    free_shm(f);
    f->shm_mapped = 0;
    if (!power_loss) continue;
    if (!f->ever_synced && !f->is_main && f->nopen == 0) {
      free_file(f);
      continue;
    }
    for (size_t k = 0; k < f->ndl; k++) {
      size_t i = f->dlist[k];
      f->dirty[i] = 0;
      free(f->cur[i]);
      f->cur[i] = NULL;
      if (f->dur[i] && (f->cur[i] = malloc(CHUNK)) != NULL)
        memcpy(f->cur[i], f->dur[i], CHUNK);
    }
    f->ndl = 0;
    set_size(f, f->dsize);
  }
}

void sim_vfs_stats(sim_disk_stats_t* s) { *s = g_stats; }

void sim_vfs_describe(char* out, size_t n) {
  size_t k = 0;
  out[0] = '\0';
  for (mfile_t* f = g_files; f && k + 1 < n; f = f->next) {
    const char* base = strrchr(f->name, '/');
    int m = snprintf(out + k, n - k, "%s%s=%lld(open %d, shm read %d%d%d%d%d%d%d%d)",
                     k ? " " : "", base ? base + 1 : f->name,
                     (long long)f->size, f->nopen, f->shm_shared[0],
                     f->shm_shared[1], f->shm_shared[2], f->shm_shared[3],
                     f->shm_shared[4], f->shm_shared[5], f->shm_shared[6],
                     f->shm_shared[7]);
    if (m < 0) break;
    k += (size_t)m;
  }
}

void sim_vfs_reset(void) {
  while (g_files) free_file(g_files);
  g_used = 0;
  g_external = 0;
  g_dead = 0;
  g_eio = 0;
  g_fs_size = (int64_t)1 << 40;
  sqlite3_vfs_unregister(&g_vfs);
}
