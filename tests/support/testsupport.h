/* SPDX-License-Identifier: Apache-2.0 */
/* Test support: a fake clock with a seeded random source, temporary
** directories that clean up after themselves. Shared by every test. */
#ifndef OB_TESTSUPPORT_H
#define OB_TESTSUPPORT_H

#include <stdint.h>
#include <stddef.h>

#include "oncebox.h"
#include "oncebox_test.h"

/* The public fake clock (core/include/oncebox_test.h) under the name the
** tests have always used: now_ms returns `now`, random is xorshift64*
** seeded by `seed` (same seed, same bytes). Tests of the library itself may
** read and set .now and pass &fc.clock directly; an embedder may not. */
typedef ob_fake_clock_t fake_clock_t;

/* ob_fake_clock_init and ob_fake_clock_advance. Inline: a test's own
** objects come before the library (or its mutant) on the link line, and
** ob_testsupport after it. */
static inline void fake_clock_init(fake_clock_t* fc, int64_t now_ms,
                                   uint64_t seed) {
  ob_fake_clock_init(fc, now_ms, seed);
}
static inline void fake_clock_advance(fake_clock_t* fc, int64_t ms) {
  ob_fake_clock_advance(fc, ms);
}

/* Create a fresh private directory under $TMPDIR (or /tmp); returns a
** malloc'd path. Aborts the test process on failure. */
char* ts_mkdtemp(const char* tag);
/* rm -rf the directory created by ts_mkdtemp and free the path. */
void ts_rmdir(char* path);
/* malloc'd "dir/name". */
char* ts_path(const char* dir, const char* name);

/* A small filesystem of its own for a full-disk test: moves this process
** into a private mount namespace (children inherit it; even a SIGKILL
** leaves nothing mounted on the host), makes a directory like ts_mkdtemp
** (mode 0755, so a server's user can reach it) and mounts a tmpfs there with
** `options` (e.g. "size=8m,mode=0700"). Returns the malloc'd path, or NULL
** with the reason in why when this machine does not allow it (not root,
** no namespace): the test then skips. Unmounted when the namespace ends. */
char* ts_private_tmpfs(const char* tag, const char* options, char* why,
                       size_t n);

/* Run a shell command made like printf's (system(3), at most 8 KiB). Its
** exit status; 128 when it did not exit (a signal) or could not run. */
int ts_sh(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

/* Directory of the shared test data (../shared next to the source tree),
** from $OB_SHARED_DIR; NULL if it does not exist. */
const char* ts_shared_dir(void);

/* Programs built by this tree, run indirectly (through sh, execv, a fork of
** /proc/self/exe). In a cross build tested under qemu-user, $OB_EMULATOR
** names the emulator (tests/cross.sh sets it); unset or empty natively.
** Shell commands start such a program with a literal `$OB_EMULATOR `
** (the shell drops it when unset); C code execs through ts_exec_built. */
/* execv(path, argv) through $OB_EMULATOR when it is set. Returns only on
** failure, with errno set. */
void ts_exec_built(const char* path, char* const argv[]);

/* The libfaketime library to LD_PRELOAD into programs of this build: the
** file named by $OB_FAKETIME_LIB (a cross build's own architecture's copy,
** /usr/lib/<triplet>/faketime/libfaketime.so.1), else the one the host's
** faketime wrapper preloads. NULL (skip) when neither exists or when the
** library does not load into this build (a sanitizer build refuses
** LD_PRELOAD): probed by running `oncebox --version` under it and checking
** the library's own effect (FAKETIME shifts the time `oncebox` logs).
** malloc'd. */
char* ts_faketime_lib(void);
/* Why a case that needs it skips, and the case's first lines (in a cmocka
** test: lib = ts_faketime_lib(), or print why and skip). */
#define TS_NO_FAKETIME                                                      \
  "skipped: no libfaketime that fakes this build's clock (faketime "        \
  "missing, a sanitizer build, or a cross build without the target's "      \
  "libfaketime)"
#define TS_FAKETIME_OR_SKIP(lib)                                            \
  do {                                                                      \
    (lib) = ts_faketime_lib();                                              \
    if ((lib) == NULL) {                                                    \
      print_message("%s\n", TS_NO_FAKETIME);                                \
      skip();                                                               \
    }                                                                       \
  } while (0)

#endif
