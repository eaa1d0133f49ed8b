/* SPDX-License-Identifier: Apache-2.0 */
/*
** Simulated time and entropy for the whole process (sim.h). The sim
** executable defines clock_gettime, gettimeofday, time, getrandom,
** epoll_wait and epoll_pwait and exports them (-rdynamic), so the static
** library's calls and libuv.so's resolve here, not to libc.
**
** Every read of a clock moves time on by one microsecond: code that spins
** on the clock still gets out, and it stays deterministic because the
** number of reads is.
*/
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "tests/sim/sim.h"

/* ---- rng: splitmix64, one stream per purpose ---------------------------- */

void sim_rng_init(sim_rng_t* r, uint64_t seed, uint64_t stream) {
  r->s = seed * 0x9E3779B97F4A7C15ull + stream * 0xD1B54A32D192ED03ull + 1;
}

uint64_t sim_rng_next(sim_rng_t* r) {
  uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t sim_rng_below(sim_rng_t* r, uint64_t n) {
  return n == 0 ? 0 : sim_rng_next(r) % n;
}

int sim_rng_chance(sim_rng_t* r, unsigned per_mille) {
  return sim_rng_below(r, 1000) < per_mille;
}

/* ---- trace ---------------------------------------------------------------- */

int sim_trace_verbose;
static uint64_t g_hash = 1469598103934665603ull;
static uint64_t g_count;

void sim_trace(const char* fmt, ...) {
  char line[1024];
  int n;
  va_list ap;
  n = snprintf(line, sizeof line, "%lld.%03lld ",
               (long long)(sim_mono_ms() / 1000),
               (long long)(sim_mono_ms() % 1000));
  va_start(ap, fmt);
  vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
  va_end(ap);
  for (const char* p = line; *p; p++) {
    g_hash ^= (unsigned char)*p;
    g_hash *= 1099511628211ull;
  }
  g_count++;
  if (sim_trace_verbose) printf("trace %s\n", line);
}

uint64_t sim_trace_hash(void) { return g_hash; }
uint64_t sim_trace_count(void) { return g_count; }

/* ---- the clocks ------------------------------------------------------------ */

/* Boot at 1000 s of monotonic time; wall = monotonic + offset. */
static int64_t g_mono_ns = 1000000000000ll;
static int64_t g_wall_off_ns;
static int64_t g_true_off_ns;
static sim_rng_t g_entropy;
static int64_t g_stuck;

void sim_clock_init(uint64_t seed, int64_t wall_ms) {
  g_mono_ns = 1000000000000ll;
  g_wall_off_ns = wall_ms * 1000000ll - g_mono_ns;
  g_true_off_ns = g_wall_off_ns;
  sim_rng_init(&g_entropy, seed, 7);
  g_stuck = 0;
  g_hash = 1469598103934665603ull;
  g_count = 0;
}

int64_t sim_mono_ms(void) { return g_mono_ns / 1000000; }
int64_t sim_wall_ms(void) { return (g_mono_ns + g_wall_off_ns) / 1000000; }
int64_t sim_true_ms(void) { return (g_mono_ns + g_true_off_ns) / 1000000; }
int64_t sim_clock_stuck_waits(void) { return g_stuck; }

void sim_clock_advance_ms(int64_t ms) {
  if (ms > 0) g_mono_ns += ms * 1000000;
}

/* ---- activity: the longest stretch in which nothing happened ------------ */

static int64_t g_last_act, g_max_gap;

void sim_activity(void) {
  int64_t t = sim_mono_ms();
  if (t - g_last_act > g_max_gap) g_max_gap = t - g_last_act;
  g_last_act = t;
}

int64_t sim_activity_idle_ms(void) { return sim_mono_ms() - g_last_act; }

static void (*g_watch)(void*);
static void* g_watch_arg;

void sim_clock_watch(void (*fn)(void*), void* arg) {
  g_watch = fn;
  g_watch_arg = arg;
}

int64_t sim_activity_gap_reset(void) {
  int64_t gap;
  sim_activity();
  gap = g_max_gap;
  g_max_gap = 0;
  return gap;
}

void sim_clock_jump_ms(int64_t delta_ms) { g_wall_off_ns += delta_ms * 1000000; }

static void to_ts(int64_t ns, struct timespec* ts) {
  ts->tv_sec = (time_t)(ns / 1000000000);
  ts->tv_nsec = (long)(ns % 1000000000);
}

int clock_gettime(clockid_t id, struct timespec* ts) {
  g_mono_ns += 1000;
  switch (id) {
    case CLOCK_REALTIME:
    case CLOCK_REALTIME_COARSE:
    case CLOCK_TAI:
      to_ts(g_mono_ns + g_wall_off_ns, ts);
      return 0;
    case CLOCK_MONOTONIC:
    case CLOCK_MONOTONIC_COARSE:
    case CLOCK_MONOTONIC_RAW:
    case CLOCK_BOOTTIME:
      to_ts(g_mono_ns, ts);
      return 0;
    default:  /* CPU-time clocks: the real ones, never used for decisions */
      return (int)syscall(SYS_clock_gettime, id, ts);
  }
}

int gettimeofday(struct timeval* restrict tv, void* restrict tz) {
  struct timespec ts;
  (void)tz;
  clock_gettime(CLOCK_REALTIME, &ts);
  tv->tv_sec = ts.tv_sec;
  tv->tv_usec = ts.tv_nsec / 1000;
  return 0;
}

time_t time(time_t* t) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  if (t != NULL) *t = ts.tv_sec;
  return ts.tv_sec;
}

ssize_t getrandom(void* buf, size_t len, unsigned int flags) {
  unsigned char* p = buf;
  (void)flags;
  for (size_t i = 0; i < len; i += 8) {
    uint64_t v = sim_rng_next(&g_entropy);
    size_t n = len - i < 8 ? len - i : 8;
    memcpy(p + i, &v, n);
  }
  return (ssize_t)len;
}

/* The loop never sleeps: what it would have waited for, simulated time
** skips. A wait with no timeout and nothing ready would block forever in a
** real process; here it moves an hour and is counted (a liveness smell). */
static int sim_wait(int epfd, struct epoll_event* ev, int maxevents,
                    int timeout) {
  long n = syscall(SYS_epoll_pwait, epfd, ev, maxevents, 0, NULL,
                   (size_t)(_NSIG / 8));
  if (n != 0 || timeout == 0) return (int)n;
  if (timeout < 0) {
    g_stuck++;
    sim_clock_advance_ms(3600 * 1000);
  } else {
    sim_clock_advance_ms(timeout);
  }
  if (g_watch != NULL) g_watch(g_watch_arg);
  return 0;
}

int epoll_wait(int epfd, struct epoll_event* ev, int maxevents, int timeout) {
  return sim_wait(epfd, ev, maxevents, timeout);
}

int epoll_pwait(int epfd, struct epoll_event* ev, int maxevents, int timeout,
                const sigset_t* sigmask) {
  (void)sigmask;
  return sim_wait(epfd, ev, maxevents, timeout);
}
