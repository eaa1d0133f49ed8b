/* SPDX-License-Identifier: Apache-2.0 */
/*
** oncebox internal: systemd's service notification protocol (sd_notify(3)),
** spoken directly so the terminal build needs no libsystemd: one datagram of
** newline-separated VAR=VALUE assignments on an AF_UNIX SOCK_DGRAM socket to
** $NOTIFY_SOCKET (a path, or "@name" for the abstract namespace).
**
** Nothing here is fatal: a daemon that cannot notify keeps running (systemd
** then times the start out, which is its call to make).
*/
#ifndef OB_PLATFORM_POSIX_SD_NOTIFY_H
#define OB_PLATFORM_POSIX_SD_NOTIFY_H

#include <stdint.h>

/* Send state (e.g. "READY=1\nSTATUS=handling") to $NOTIFY_SOCKET. Returns 1
** when sent, 0 when NOTIFY_SOCKET is unset or empty (not under systemd),
** OB_EINVAL for an address it cannot use (too long, not a path or "@"),
** OB_EIO when the socket or the send failed. */
int ob__sd_notify(const char* state);

/* The watchdog interval systemd expects pings within: 1 and *usec set when
** WATCHDOG_USEC is a positive number and WATCHDOG_PID is unset or this
** process's pid; else 0. */
int ob__sd_watchdog_usec(uint64_t* usec);

#endif
