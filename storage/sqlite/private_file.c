/* SPDX-License-Identifier: Apache-2.0 */
#include "storage/sqlite/private_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util/errbuf.h"
#include "oncebox.h"

static int errno_to_ob(int err) {
  switch (err) {
    case EACCES: case EPERM: case EROFS: return OB_EPERM;
    case ENOSPC: case EDQUOT: return OB_ENOSPC;
    case ENOMEM: return OB_ENOMEM;
    case ENOENT: case ENOTDIR: return OB_ENOTFOUND;
    default: return OB_EIO;
  }
}

/* Paths in messages are cut at this many bytes, so that a long one cannot
** push the reason out of the caller's buffer. */
#define PATH_SHOWN 200
#define SHOW(path) (int)PATH_SHOWN, (path), (strlen(path) > PATH_SHOWN ? "..." : "")

/* An existing empty file (touched by an installer, say) is not a database
** yet: it becomes one now, so it gets the mode oncebox would have created it
** with. A file that already holds data keeps the mode its owner chose. */
static int make_empty_file_private(const char* path, char* err, size_t errlen) {
  struct stat st;
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return 0; /* SQLite's open reports it, with its reason */
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0 &&
      (st.st_mode & 077) != 0 && st.st_uid == geteuid() &&
      fchmod(fd, 0600) != 0) {
    int e = errno;
    close(fd);
    return ob__errbuf_set(err, errlen, errno_to_ob(e),
                          "cannot chmod 0600 %.*s%s: %s", SHOW(path),
                          strerror(e));
  }
  close(fd);
  return 0;
}

int ob__fs_prepare_private_file(const char* path, char* err, size_t errlen) {
  struct stat st;
  int fd;

  if (path == NULL || *path == '\0') {
    return ob__errbuf_set(err, errlen, OB_EINVAL, "database path is empty");
  }
  if (stat(path, &st) == 0) {
    if (!S_ISREG(st.st_mode)) {
      return ob__errbuf_set(err, errlen, OB_EPERM,
                            "%.*s%s is not a regular file", SHOW(path));
    }
    return make_empty_file_private(path, err, errlen);
  }
  if (errno != ENOENT) {
    int e = errno;
    return ob__errbuf_set(err, errlen, errno_to_ob(e),
                          "cannot stat %.*s%s: %s", SHOW(path),
                          strerror(e));
  }
  /* O_EXCL: two processes racing to create the file must not both think
  ** they created it with the right mode; the loser sees EEXIST and moves on. */
  fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    int e = errno;
    if (e == EEXIST) return 0;
    return ob__errbuf_set(err, errlen, errno_to_ob(e),
                          "cannot create %.*s%s: %s", SHOW(path),
                          strerror(e));
  }
  /* The umask can only remove bits from 0600, but make the intent explicit
  ** and independent of it. */
  if (fchmod(fd, 0600) != 0) {
    int e = errno;
    close(fd);
    return ob__errbuf_set(err, errlen, errno_to_ob(e),
                          "cannot chmod %.*s%s: %s", SHOW(path),
                          strerror(e));
  }
  if (fsync(fd) != 0) {
    int e = errno;
    close(fd);
    return ob__errbuf_set(err, errlen, errno_to_ob(e),
                          "cannot fsync %.*s%s: %s", SHOW(path),
                          strerror(e));
  }
  close(fd);
  return 0;
}
