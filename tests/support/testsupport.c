/* SPDX-License-Identifier: Apache-2.0 */
#include "tests/support/testsupport.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <ftw.h>

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
