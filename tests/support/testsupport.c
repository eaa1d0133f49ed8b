/* SPDX-License-Identifier: Apache-2.0 */
#define _GNU_SOURCE 1 /* unshare(2) */
#include "tests/support/testsupport.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <ftw.h>
#include <errno.h>
#include <sched.h>
#include <sys/mount.h>

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

void ts_exec_built(const char* path, char* const argv[]) {
  const char* emu = getenv("OB_EMULATOR");
  size_t n = 0;
  char** v;
  if (emu == NULL || *emu == '\0') {
    execv(path, argv);
    return;
  }
  while (argv[n] != NULL) n++;
  v = calloc(n + 2, sizeof *v);
  if (v == NULL) return;
  v[0] = (char*)emu;
  v[1] = (char*)path;
  for (size_t i = 1; i < n; i++) v[i + 1] = argv[i];
  execv(emu, v);
  free(v);
}

/* 1 if `ob-test-now` under lib with FAKETIME set to 2041 reads 2041: the
** library loaded into this build and fakes the clock call it makes. */
static int faketime_works(const char* lib) {
  const char* bin = getenv("OB_BINARY_DIR");
  char cmd[3072];
  long long s = 0;
  FILE* p;
  if (bin == NULL) return 0;
  snprintf(cmd, sizeof cmd,
           "LD_PRELOAD='%s' FAKETIME='@2041-01-01 00:00:00' $OB_EMULATOR "
           "'%s/tests/ob-test-now' 2>/dev/null",
           lib, bin);
  p = popen(cmd, "r");
  if (p == NULL) return 0;
  if (fscanf(p, "%lld", &s) != 1) s = 0;
  pclose(p);
  /* 2041-01-01T00:00:00Z is 2240611200 s; allow the seconds it ran. */
  return s >= 2240611200LL && s < 2240611200LL + 3600;
}

char* ts_faketime_lib(void) {
  const char* env = getenv("OB_FAKETIME_LIB");
  char lib[1024];
  size_t n = 0;
  if (env != NULL && *env != '\0') {
    if (access(env, R_OK) != 0) return NULL;
    snprintf(lib, sizeof lib, "%s", env);
    n = strlen(lib);
  } else {
    FILE* p;
    if (system("command -v faketime >/dev/null 2>&1") != 0) return NULL;
    p = popen("faketime -f '+0d' sh -c 'printf %s \"$LD_PRELOAD\"'", "r");
    if (p == NULL) return NULL;
    n = fread(lib, 1, sizeof lib - 1, p);
    pclose(p);
    lib[n] = '\0';
  }
  if (n == 0 || !faketime_works(lib)) return NULL;
  return strdup(lib);
}

int ts_sh(const char* fmt, ...) {
  char cmd[8192];
  va_list ap;
  int st;
  va_start(ap, fmt);
  vsnprintf(cmd, sizeof cmd, fmt, ap);
  va_end(ap);
  st = system(cmd);
  return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

char* ts_private_tmpfs(const char* tag, const char* options, char* why,
                       size_t n) {
  char* dir;
  if (geteuid() != 0) {
    snprintf(why, n, "not root (mount needs CAP_SYS_ADMIN)");
    return NULL;
  }
  if (unshare(CLONE_NEWNS) != 0) {
    snprintf(why, n, "unshare(CLONE_NEWNS): %s", strerror(errno));
    return NULL;
  }
  /* Our mounts must not propagate back to the host's namespace. */
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
    snprintf(why, n, "mount --make-rprivate /: %s", strerror(errno));
    return NULL;
  }
  dir = ts_mkdtemp(tag);
  if (chmod(dir, 0755) != 0 ||
      mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV, options) != 0) {
    snprintf(why, n, "mount -t tmpfs -o %s tmpfs %s: %s", options, dir,
             strerror(errno));
    ts_rmdir(dir);
    return NULL;
  }
  return dir;
}
