/* SPDX-License-Identifier: Apache-2.0 */
/* What a built-in module adds to the engine besides its handler: its
** invariant checks, which ob_check runs after the generic ones. Not API. */
#ifndef OB_CORE_ENGINE_MODULES_H
#define OB_CORE_ENGINE_MODULES_H

#include "oncebox.h"

/* Report each violation through cb (may be NULL) as one line of text.
** Runs inside ob_check's read transaction. Returns the number of
** violations or a negative code if the check could not run. */
typedef int (*ob__check_fn)(ob_engine_t* e,
                            void (*cb)(void* arg, const char* violation),
                            void* arg);

#define OB__MAX_CHECKS 8

/* Register check fn under name (a static string, not copied). 0;
** OB_EEXIST if one of that name is registered (nothing changes); OB_ENOMEM
** when the table is full or cannot be allocated. */
int ob__engine_add_check(ob_engine_t* e, const char* name, ob__check_fn fn);

/* Run every registered check in registration order. Returns the total
** number of violations, or the first negative code (later checks do not
** run). */
int ob__engine_run_checks(ob_engine_t* e,
                          void (*cb)(void* arg, const char* violation),
                          void* arg);

/* Free what ob__engine_add_check allocated (ob_close). */
void ob__engine_modules_free(ob_engine_t* e);

#endif
