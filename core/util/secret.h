/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OB_CORE_SECRET_H
#define OB_CORE_SECRET_H

/* Free a NUL-terminated string that holds (or may hold) a credential, after
** zeroing it in a way the compiler may not elide: freed memory must not keep
** a copy for a core file or the next allocation. NULL-safe. */
void ob__free_secret(char* s);

#endif
