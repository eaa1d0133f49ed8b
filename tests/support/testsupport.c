#include "tests/support/testsupport.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <ftw.h>

static int64_t fake_now(void* ctx) {
  return ((fake_clock_t*)ctx)->now;
}

static void fake_random(void* ctx, void* buf, size_t len) {
  fake_clock_t* fc = ctx;
  unsigned char* p = buf;
  for (size_t i = 0; i < len; i++) {
    fc->state ^= fc->state >> 12;
    fc->state ^= fc->state << 25;
    fc->state ^= fc->state >> 27;
    p[i] = (unsigned char)((fc->state * 2685821657736338717ULL) >> 56);
  }
}

void fake_clock_init(fake_clock_t* fc, int64_t now_ms, uint64_t seed) {
  fc->now = now_ms;
  fc->state = seed ? seed : 0x9E3779B97F4A7C15ULL;
  fc->clock.ctx = fc;
  fc->clock.now_ms = fake_now;
  fc->clock.random = fake_random;
  fc->clock.monotonic_ms = NULL;  /* now_ms is trusted not to jump */
}

void fake_clock_advance(fake_clock_t* fc, int64_t ms) {
  fc->now += ms;
}

char* ts_mkdtemp(const char* tag) {
  const char* base = getenv("TMPDIR");
  char buf[4096];
  snprintf(buf, sizeof buf, "%s/oncebox-%s-XXXXXX", base && *base ? base : "/tmp",
           tag ? tag : "test");
  if (mkdtemp(buf) == NULL) {
    perror("mkdtemp");
    abort();
  }
  return strdup(buf);
}

static int rm_one(const char* p, const struct stat* st, int flag,
                  struct FTW* ftw) {
  (void)st; (void)flag; (void)ftw;
  return remove(p);
}

void ts_rmdir(char* path) {
  if (path == NULL) return;
  if (getenv("OB_KEEP_TMP") == NULL)
    nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
  free(path);
}

char* ts_path(const char* dir, const char* name) {
  size_t n = strlen(dir) + strlen(name) + 2;
  char* p = malloc(n);
  if (p == NULL) abort();
  snprintf(p, n, "%s/%s", dir, name);
  return p;
}

const char* ts_shared_dir(void) {
  const char* d = getenv("OB_SHARED_DIR");
  struct stat st;
  if (d == NULL || stat(d, &st) != 0 || !S_ISDIR(st.st_mode)) return NULL;
  return d;
}
