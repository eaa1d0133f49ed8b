/* SPDX-License-Identifier: Apache-2.0 */
/* The real clock: wall time and kernel randomness. */
#include <errno.h>
#include <stdlib.h>
#include <sys/random.h>
#include <sys/types.h>
#include <time.h>

#include "oncebox.h"

/* CMakeLists.txt asks for these on 32-bit targets; a build without them
** would read a wrapped clock in 2038 and misreport files past 2 GiB. */
_Static_assert(sizeof(time_t) >= 8, "time_t must be 64-bit (_TIME_BITS=64)");
_Static_assert(sizeof(off_t) >= 8, "off_t must be 64-bit (_FILE_OFFSET_BITS=64)");

static int64_t system_now_ms(void* ctx) {
  struct timespec ts;
  (void)ctx;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void system_random(void* ctx, void* buf, size_t len) {
  unsigned char* p = buf;
  (void)ctx;
  while (len > 0) {
    ssize_t n = getrandom(p, len, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      /* getrandom only fails on a kernel older than 3.17 or with bad
      ** arguments; jitter and ids would silently lose their randomness,
      ** which is worse than stopping. */
      abort();
    }
    p += n;
    len -= (size_t)n;
  }
}

static int64_t system_monotonic_ms(void* ctx) {
  struct timespec ts;
  (void)ctx;
  clock_gettime(CLOCK_BOOTTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const ob_clock_t system_clock = {NULL, system_now_ms, system_random,
                                        system_monotonic_ms};

const ob_clock_t* ob_system_clock(void) {
  return &system_clock;
}
