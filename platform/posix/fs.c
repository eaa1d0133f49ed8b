#include "platform/posix/fs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

int ob__fs_prepare_private_file(const char* path, char* err, size_t errlen) {
  struct stat st;
  int fd;

  if (path == NULL || *path == '\0') {
    snprintf(err, errlen, "database path is empty");
    return OB_EINVAL;
  }
  if (stat(path, &st) == 0) {
    if (!S_ISREG(st.st_mode)) {
      snprintf(err, errlen, "%s is not a regular file", path);
      return OB_EINVAL;
    }
    return 0;
  }
  if (errno != ENOENT) {
    int e = errno;
    snprintf(err, errlen, "cannot stat %s: %s", path, strerror(e));
    return errno_to_ob(e);
  }
  /* O_EXCL: two processes racing to create the file must not both think
  ** they created it with the right mode; the loser sees EEXIST and moves on. */
  fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    int e = errno;
    if (e == EEXIST) return 0;
    snprintf(err, errlen, "cannot create %s: %s", path, strerror(e));
    return errno_to_ob(e);
  }
  /* The umask can only remove bits from 0600, but make the intent explicit
  ** and independent of it. */
  if (fchmod(fd, 0600) != 0) {
    int e = errno;
    close(fd);
    snprintf(err, errlen, "cannot chmod %s: %s", path, strerror(e));
    return errno_to_ob(e);
  }
  if (fsync(fd) != 0) {
    int e = errno;
    close(fd);
    snprintf(err, errlen, "cannot fsync %s: %s", path, strerror(e));
    return errno_to_ob(e);
  }
  close(fd);
  return 0;
}
