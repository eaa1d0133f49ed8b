/* SPDX-License-Identifier: Apache-2.0 */
/*
** oncebox internal: systemd notification on the engine's loop (a
** component, core/engine/engine_host.h). When the loop starts handling:
** READY=1 and STATUS=status; while it runs, WATCHDOG=1 every half of
** $WATCHDOG_USEC from a loop timer, so a wedged loop stops pinging and
** systemd kills it (WatchdogSec=); when the engine stops: STOPPING=1.
*/
#ifndef OB_PLATFORM_LOOP_SD_WATCH_H
#define OB_PLATFORM_LOOP_SD_WATCH_H

#include "oncebox.h"

/* Register the component when $NOTIFY_SOCKET is set (before ob_run or
** ob_attach). Returns 0 (also when not under systemd, doing nothing),
** OB_ENOMEM, or the engine's registration error. status is copied. */
int ob__sd_enable(ob_engine_t* e, const char* status);

#endif
