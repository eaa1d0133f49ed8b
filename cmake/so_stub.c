/* SPDX-License-Identifier: Apache-2.0 */
/* liboncebox.so is linked from the whole of liboncebox.a (see the top-level
** CMakeLists.txt); CMake wants one source of its own for the target. */
typedef int ob__so_stub_t;
