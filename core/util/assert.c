/* SPDX-License-Identifier: Apache-2.0 */
#include "core/util/assert.h"

#include <stdio.h>
#include <stdlib.h>

/* Defined in every build: a translation unit built with asserts on may be
** linked into a library built without. */
_Noreturn void ob__assert_fail(const char* file, int line, const char* expr);

_Noreturn void ob__assert_fail(const char* file, int line, const char* expr) {
  fprintf(stderr, "%s:%d: assertion failed: %s\n", file, line, expr);
  fflush(stderr);
  abort();
}
