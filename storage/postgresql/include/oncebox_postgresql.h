/* SPDX-License-Identifier: Apache-2.0 */
/*
** oncebox's PostgreSQL dialect for a program linked statically
** (liboncebox-postgresql.a with liboncebox.a; link with -lpq). A program
** that uses liboncebox.so needs none of this: ob_open loads the plugin
** (package oncebox-postgresql) when db_path names a PostgreSQL database.
** docs/decisions/0025-dialect-plugin.md, docs/postgresql.md.
*/
#ifndef ONCEBOX_POSTGRESQL_H
#define ONCEBOX_POSTGRESQL_H

#include <stddef.h>

#include "oncebox.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
** Register the PostgreSQL dialect of this archive with the library, so
** that ob_open accepts a PostgreSQL connection string without loading a
** plugin. Call it once, before ob_open; calling it again is harmless, and
** it is thread-safe. Returns 0, or OB_ENOTSUP when the archive and the
** library are not of the same version (errbuf, may be NULL, says which).
*/
int ob_postgresql_register(char* errbuf, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
