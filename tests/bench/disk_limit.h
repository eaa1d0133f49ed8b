/* SPDX-License-Identifier: Apache-2.0 */
/* The disk's own limit, measured in the same run as the figures it bounds
** (issue 19, item 3): what a program that did nothing but make bytes
** durable could reach on this filesystem. */
#ifndef OB_BENCH_DISK_LIMIT_H
#define OB_BENCH_DISK_LIMIT_H

typedef struct bc_disk_limit_s {
  /* 4 KiB pwrite + fdatasync, in a loop: the most durable commits per
  ** second (one commit costs at least one such flush). */
  double fsyncs_per_s;
  /* 1 MiB pwrite + fdatasync, in a loop: the most bytes per second made
  ** durable in chunks the size of a group commit's WAL frames. */
  double bytes_per_s;
} bc_disk_limit_t;

/* Measures both in a scratch file under dir (removed after), for about
** `seconds` each, over space written once beforehand so that neither loop
** pays for growing the file. 0, or -1 with errno set (and a message on
** stderr). */
int bc_disk_limit(const char* dir, double seconds, bc_disk_limit_t* out);

#endif
