/* SPDX-License-Identifier: Apache-2.0 */
/* platform: loading a dialect's plugin (storage/dialect.h). */
#ifndef OB_PLATFORM_POSIX_PLUGIN_H
#define OB_PLATFORM_POSIX_PLUGIN_H

#include <stddef.h>

#include "oncebox.h"

/*
** Load the plugin NAME.so from the plugin folder ($ONCEBOX_DIALECT_DIR,
** read with secure_getenv, or the folder the library was built for) and
** return its entry point in *entry. The plugin stays loaded for the life
** of the process. A file that is missing, not a regular file, or writable
** by group or others, one that fails to load, or one without the entry
** point, is refused: OB_ENOTSUP, OB_EPERM (writable by others) or OB_EIO,
** with why (n bytes; may be NULL) naming the file and the cause.
*/
int ob__plugin_entry(const char* name, ob_dialect_entry_fn* entry,
                     char* why, size_t n);

#endif
