/* SPDX-License-Identifier: Apache-2.0 */
/* Loading a dialect's plugin: dlopen of a file the administrator
** installed, with the checks a loader of code owes its process (the file
** is not writable by someone else) and its one symbol. */
#define _GNU_SOURCE 1 /* secure_getenv */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "platform/posix/plugin.h"
#include "storage/dialect.h"

#ifndef OB_DIALECT_DIR
#define OB_DIALECT_DIR "/usr/local/lib/oncebox"
#endif

/* "path: cause" into why. */
static void say(char* why, size_t n, const char* path, const char* cause) {
  if (why != NULL && n > 0) snprintf(why, n, "%s: %s", path, cause);
}

int ob__plugin_entry(const char* name, ob_dialect_entry_fn* entry,
                     char* why, size_t n) {
  const char* dir = secure_getenv("ONCEBOX_DIALECT_DIR");
  char path[1024];
  struct stat st;
  void* h;
  void* sym;
  *entry = NULL;
  if (dir == NULL || dir[0] == '\0') dir = OB_DIALECT_DIR;
  if ((size_t)snprintf(path, sizeof path, "%s/%s.so", dir, name) >=
      sizeof path) {
    say(why, n, dir, "the plugin folder's name is too long");
    return OB_EINVAL;
  }
  if (stat(path, &st) != 0) {
    say(why, n, path, strerror(errno));
    return OB_ENOTSUP;
  }
  if (!S_ISREG(st.st_mode)) {
    say(why, n, path, "not a regular file");
    return OB_ENOTSUP;
  }
  /* Code others may rewrite would run as this process. */
  if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    say(why, n, path,
        "refused: writable by its group or by others (chmod go-w)");
    return OB_EPERM;
  }
  /* RTLD_NOW: a plugin that misses a symbol fails here, not mid-batch;
  ** RTLD_LOCAL: its libpq and its names stay its own. Never closed. */
  if ((h = dlopen(path, RTLD_NOW | RTLD_LOCAL)) == NULL) {
    const char* e = dlerror();
    say(why, n, path, e ? e : "cannot be loaded");
    return OB_EIO;
  }
  if ((sym = dlsym(h, OB__DIALECT_ENTRY_NAME)) == NULL) {
    say(why, n, path,
        "not an oncebox dialect (no " OB__DIALECT_ENTRY_NAME ")");
    dlclose(h);
    return OB_ENOTSUP;
  }
  /* POSIX: a data pointer from dlsym converts to a function pointer. */
  memcpy(entry, &sym, sizeof *entry);
  return 0;
}
