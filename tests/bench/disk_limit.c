/* SPDX-License-Identifier: Apache-2.0 */
/* See disk_limit.h. Both loops overwrite space that is already allocated,
** as SQLite does with a WAL reset after a checkpoint: that is the best case,
** so a ratio to it is a fair "fraction of the physical limit". */
#include "tests/bench/disk_limit.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/bench/bench_common.h"

#define SMALL 4096
#define LARGE (1024 * 1024)
#define SPAN (16 * LARGE) /* the scratch file: the loops wrap around in it */

static int write_all(int fd, const char* buf, size_t n, off_t at) {
  while (n > 0) {
    ssize_t w = pwrite(fd, buf, n, at);
    if (w < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    buf += w;
    n -= (size_t)w;
    at += w;
  }
  return 0;
}

/* chunk-byte writes, each followed by fdatasync, for about `seconds` (and at
** least 20 of them). Returns the flushes per second, or -1. */
static double flush_loop(int fd, const char* buf, size_t chunk,
                         double seconds) {
  double t0 = bc_mono_s(), t;
  long done = 0;
  off_t at = 0;
  do {
    if (write_all(fd, buf, chunk, at) < 0 || fdatasync(fd) < 0) return -1;
    done++;
    at = (at + (off_t)chunk) % SPAN;
    t = bc_mono_s() - t0;
  } while (t < seconds || done < 20);
  return (double)done / t;
}

int bc_disk_limit(const char* dir, double seconds, bc_disk_limit_t* out) {
  char path[4200];
  char* buf;
  int fd, rc = -1, saved;
  double small, large;

  snprintf(path, sizeof path, "%s/disk-limit.scratch", dir);
  buf = malloc(LARGE);
  if (buf == NULL) return -1;
  /* Not zeros: a filesystem that compresses or dedups would flatter them. */
  for (size_t i = 0; i < LARGE; i++) buf[i] = (char)(i * 2654435761u >> 13);
  fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) goto out;
  for (off_t at = 0; at < SPAN; at += LARGE)
    if (write_all(fd, buf, LARGE, at) < 0) goto out;
  if (fsync(fd) < 0) goto out;
  if ((small = flush_loop(fd, buf, SMALL, seconds)) < 0) goto out;
  if ((large = flush_loop(fd, buf, LARGE, seconds)) < 0) goto out;
  out->fsyncs_per_s = small;
  out->bytes_per_s = large * LARGE;
  rc = 0;
out:
  saved = errno;
  if (rc < 0) fprintf(stderr, "bench: disk limit in %s: %s\n", dir, strerror(saved));
  if (fd >= 0) close(fd);
  unlink(path);
  free(buf);
  errno = saved;
  return rc;
}
