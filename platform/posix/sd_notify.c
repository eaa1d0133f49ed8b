/* SPDX-License-Identifier: Apache-2.0 */
/* sd_notify(3) without libsystemd: see sd_notify.h. */
#include "platform/posix/sd_notify.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>
#include <unistd.h>

#include "oncebox.h"

int ob__sd_notify(const char* state) {
  const char* path = getenv("NOTIFY_SOCKET");
  struct sockaddr_un sa;
  struct iovec iov;
  struct msghdr mh;
  socklen_t salen;
  size_t n;
  ssize_t sent;
  int fd;

  if (path == NULL || path[0] == '\0') return 0;
  if (state == NULL) return OB_EINVAL;
  n = strlen(path);
  /* "vsock:..." (systemd 254+, for VMs) is not for a terminal daemon. */
  if ((path[0] != '/' && path[0] != '@') || n >= sizeof sa.sun_path)
    return OB_EINVAL;
  memset(&sa, 0, sizeof sa);
  sa.sun_family = AF_UNIX;
  memcpy(sa.sun_path, path, n);
  /* Abstract: a leading NUL, and the length says where the name ends. */
  if (path[0] == '@') sa.sun_path[0] = '\0';
  salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n +
                      (path[0] == '/' ? 1 : 0));

  fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return OB_EIO;
  iov.iov_base = (void*)state;
  iov.iov_len = strlen(state);
  memset(&mh, 0, sizeof mh);
  mh.msg_name = &sa;
  mh.msg_namelen = salen;
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  do {
    sent = sendmsg(fd, &mh, MSG_NOSIGNAL);
  } while (sent < 0 && errno == EINTR);
  close(fd);
  return sent == (ssize_t)iov.iov_len ? 1 : OB_EIO;
}

/* A decimal number that fits; -1 for anything else. */
static long long parse_u(const char* s) {
  char* end;
  unsigned long long v;
  if (s == NULL || *s < '0' || *s > '9') return -1;
  errno = 0;
  v = strtoull(s, &end, 10);
  if (errno != 0 || *end != '\0' || v > (unsigned long long)INT64_MAX)
    return -1;
  return (long long)v;
}

int ob__sd_watchdog_usec(uint64_t* usec) {
  const char* pid = getenv("WATCHDOG_PID");
  long long v = parse_u(getenv("WATCHDOG_USEC"));
  if (v <= 0) return 0;
  /* The variables are inherited: a child of the service must not ping. */
  if (pid != NULL && pid[0] != '\0' && parse_u(pid) != (long long)getpid())
    return 0;
  *usec = (uint64_t)v;
  return 1;
}
