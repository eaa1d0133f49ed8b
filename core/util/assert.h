/* SPDX-License-Identifier: Apache-2.0 */
/* OB__ASSERT(expr): an invariant the code relies on, never a check of input
** (bad input returns an error code). Compiled in when NDEBUG is not defined
** (Debug builds) or when OB_ASSERTS is (the top CMakeLists.txt defines it
** for OB_SANITIZE builds); compiled out otherwise, where expr is not
** evaluated, so it must have no side effects. A failure prints
** "file:line: assertion failed: expr" to stderr and aborts. */
#ifndef OB_CORE_ASSERT_H
#define OB_CORE_ASSERT_H

#if !defined(NDEBUG) || defined(OB_ASSERTS)
#define OB__ASSERTS_ON 1

_Noreturn void ob__assert_fail(const char* file, int line, const char* expr);

#define OB__ASSERT(expr) \
  ((expr) ? (void)0 : ob__assert_fail(__FILE__, __LINE__, #expr))

#else
#define OB__ASSERTS_ON 0
/* sizeof keeps expr type-checked without evaluating it. */
#define OB__ASSERT(expr) ((void)sizeof(!(expr)))
#endif

#endif
