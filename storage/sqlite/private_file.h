/* SPDX-License-Identifier: Apache-2.0 */
/* The database file's creation, before SQLite opens it: storage's own
** syscalls (open, fstat, fchmod), like SQLite's own file I/O. */
#ifndef OB_STORAGE_PRIVATE_FILE_H
#define OB_STORAGE_PRIVATE_FILE_H

#include <stddef.h>

/*
** Make sure `path` exists as a regular file that only its owner can read or
** write. A missing file is created with mode 0600 (whatever the umask), so
** that SQLite's -wal and -shm files, which copy the database's mode, are
** 0600 too. An existing empty file owned by this user is made 0600 (it
** becomes the database now); one with data keeps its mode. Not a regular
** file: OB_EPERM. Symlinks are not followed
** on creation. Returns 0, or a negative OB_E* code with a reason in err.
*/
int ob__fs_prepare_private_file(const char* path, char* err, size_t errlen);

#endif
