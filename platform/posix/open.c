/* SPDX-License-Identifier: Apache-2.0 */
/* ob_open: the engine (core/engine) on the system clock unless the options
** name another, and with the size of the database's filesystem for the
** default cap (docs/decisions/0021-default-cap.md), so that core itself
** never reads a clock or makes a system call. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "core/engine/engine_host.h"
#include "core/util/space_policy.h"

/* The bytes of the filesystem that holds path's directory (the file may
** not exist yet), measured now; 0 if unknown (then no default cap). A plain
** statvfs on the directory: tests interpose it to simulate small disks. */
static int64_t fs_bytes_of(const char* path) {
  struct statvfs sv;
  const char* slash = strrchr(path, '/');
  char* dir;
  int rc;
  if (slash == NULL) {
    rc = statvfs(".", &sv);
  } else {
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    dir = malloc(n + 1);
    if (dir == NULL) return 0;
    memcpy(dir, path, n);
    dir[n] = '\0';
    rc = statvfs(dir, &sv);
    free(dir);
  }
  if (rc != 0) return 0;
  return ob__space_fs_bytes((int64_t)sv.f_blocks, (int64_t)sv.f_bfree,
                            (int64_t)sv.f_bavail, (int64_t)sv.f_frsize);
}

int ob_open(ob_engine_t** out, const ob_options_t* opts, char* errbuf,
            size_t errlen) {
  ob_options_t o;
  int64_t fs = 0;
  if (opts == NULL) return ob__engine_open(out, opts, errbuf, errlen);
  o = *opts;
  if (o.clock == NULL) o.clock = ob_system_clock();
  /* Measured at each open: a resized or moved filesystem gets its own. */
  if (o.max_db_bytes == 0 && o.db_path != NULL && o.db_path[0] != '\0')
    fs = fs_bytes_of(o.db_path);
  return ob__engine_open_fs(out, &o, fs, errbuf, errlen);
}
