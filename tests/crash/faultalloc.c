/* SPDX-License-Identifier: Apache-2.0 */
/* faultalloc: countdown allocators for SQLite and for oncebox's own
** allocations (see faultalloc.h). */
#include "tests/crash/faultalloc.h"

#include <stddef.h>
#include <string.h>

#include <sqlite3.h>

static int g_armed = -1; /* armed kind, or -1 */
static int g_persistent;
static int64_t g_target, g_count, g_hits;

/* 1 if this allocation of `kind` must fail. */
static int tick(int kind) {
  int fail;
  if (g_armed != kind) return 0;
  g_count++;
  fail = g_target > 0 &&
         (g_count == g_target || (g_persistent && g_count > g_target));
  if (fail) g_hits++;
  return fail;
}

void fa_arm(fa_kind_t kind, int64_t k, int persistent) {
  g_target = k;
  g_persistent = persistent;
  g_count = g_hits = 0;
  g_armed = (int)kind;
}

void fa_disarm(void) { g_armed = -1; }
int64_t fa_count(void) { return g_count; }
int64_t fa_hits(void) { return g_hits; }

/* ---- SQLite: SQLITE_CONFIG_MALLOC around the default allocator ---------- */

static sqlite3_mem_methods g_orig;

static void* s_malloc(int n) {
  if (tick(FA_SQLITE)) return NULL;
  return g_orig.xMalloc(n);
}
static void s_free(void* p) { g_orig.xFree(p); }
static void* s_realloc(void* p, int n) {
  if (tick(FA_SQLITE)) return NULL;
  return g_orig.xRealloc(p, n);
}
static int s_size(void* p) { return g_orig.xSize(p); }
static int s_roundup(int n) { return g_orig.xRoundup(n); }
static int s_init(void* arg) {
  (void)arg;
  return g_orig.xInit(g_orig.pAppData);
}
static void s_shutdown(void* arg) {
  (void)arg;
  g_orig.xShutdown(g_orig.pAppData);
}

int fa_sqlite_install(void) {
  static sqlite3_mem_methods m;
  int rc = sqlite3_config(SQLITE_CONFIG_GETMALLOC, &g_orig);
  if (rc != SQLITE_OK) return rc;
  memset(&m, 0, sizeof m);
  m.xMalloc = s_malloc;
  m.xFree = s_free;
  m.xRealloc = s_realloc;
  m.xSize = s_size;
  m.xRoundup = s_roundup;
  m.xInit = s_init;
  m.xShutdown = s_shutdown;
  return sqlite3_config(SQLITE_CONFIG_MALLOC, &m);
}

/* ---- libc, through the linker's --wrap ----------------------------------- */

#if defined(FA_WITH_WRAP) && FA_WITH_WRAP
void* __real_malloc(size_t n);
void* __real_calloc(size_t n, size_t size);
void* __real_realloc(void* p, size_t n);
char* __real_strdup(const char* s);
void* __wrap_malloc(size_t n);
void* __wrap_calloc(size_t n, size_t size);
void* __wrap_realloc(void* p, size_t n);
char* __wrap_strdup(const char* s);

void* __wrap_malloc(size_t n) {
  if (tick(FA_LIBC)) return NULL;
  return __real_malloc(n);
}
void* __wrap_calloc(size_t n, size_t size) {
  if (tick(FA_LIBC)) return NULL;
  return __real_calloc(n, size);
}
void* __wrap_realloc(void* p, size_t n) {
  if (tick(FA_LIBC)) return NULL;
  return __real_realloc(p, n);
}
char* __wrap_strdup(const char* s) {
  if (tick(FA_LIBC)) return NULL;
  return __real_strdup(s);
}

int fa_libc_available(void) { return 1; }
#else
int fa_libc_available(void) { return 0; }
#endif
