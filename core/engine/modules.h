/* SPDX-License-Identifier: Apache-2.0 */
/* The hooks modules add to an engine (ob_add_check, ob_add_stats in
** oncebox.h): what ob_check and ob_module_figures run. Not API. */
#ifndef OB_CORE_ENGINE_MODULES_H
#define OB_CORE_ENGINE_MODULES_H

#include "oncebox.h"

/* Run every added check in the order added, inside the read transaction
** the caller (ob_check) holds. Returns the total number of violations, or
** the first negative code (later checks do not run). */
int ob__engine_run_checks(ob_engine_t* e, ob_violation_cb cb, void* arg);

/* The event types marked with ob_mark_priority_event: *types receives
** them (valid until ob_close), the count is returned. */
size_t ob__engine_priority_events(const ob_engine_t* e,
                                  const char* const** types);

/* Free what the hooks allocated (ob_close). */
void ob__engine_modules_free(ob_engine_t* e);

#endif
