/* SPDX-License-Identifier: Apache-2.0 */
/*
** statvfs and fstatvfs of the simulated filesystem (sim_vfs.c), for paths
** under the simulator's directory: the engine sizes its defaults from them.
** Other paths get the real answer. Compiled without _FILE_OFFSET_BITS, so
** that both the plain and the 64 names can be defined here (on 64-bit
** glibc they share one layout).
*/
#undef _FILE_OFFSET_BITS
#undef _TIME_BITS
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "tests/sim/sim.h"

const char* sim_vfs_dir(void);
int64_t sim_vfs_fs_size(void);

_Static_assert(sizeof(struct statvfs) == sizeof(struct statvfs64),
               "statvfs and statvfs64 differ on this target");

static int ours(const char* path) {
  const char* d = sim_vfs_dir();
  size_t n = strlen(d);
  return n > 0 && strncmp(path, d, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

static void fill(struct statvfs* b) {
  memset(b, 0, sizeof *b);
  b->f_bsize = b->f_frsize = 4096;
  b->f_blocks = (fsblkcnt_t)(sim_vfs_fs_size() / 4096);
  b->f_bfree = b->f_bavail = (fsblkcnt_t)(sim_vfs_free() / 4096);
  b->f_files = 65536;
  b->f_ffree = b->f_favail = 65000;
  b->f_namemax = 255;
}

typedef int (*statvfs_fn)(const char*, struct statvfs*);
typedef int (*fstatvfs_fn)(int, struct statvfs*);

int statvfs(const char* path, struct statvfs* b) {
  if (ours(path)) {
    fill(b);
    return 0;
  }
  return ((statvfs_fn)dlsym(RTLD_NEXT, "statvfs"))(path, b);
}

int statvfs64(const char* path, struct statvfs64* b) {
  return statvfs(path, (struct statvfs*)(void*)b);
}

int fstatvfs(int fd, struct statvfs* b) {
  char link[64], path[1024];
  ssize_t n;
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  n = readlink(link, path, sizeof path - 1);
  if (n > 0) {
    path[n] = '\0';
    if (ours(path)) {
      fill(b);
      return 0;
    }
  }
  return ((fstatvfs_fn)dlsym(RTLD_NEXT, "fstatvfs"))(fd, b);
}

int fstatvfs64(int fd, struct statvfs64* b) {
  return fstatvfs(fd, (struct statvfs*)(void*)b);
}
