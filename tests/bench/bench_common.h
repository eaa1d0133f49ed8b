/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers shared by the benchmarks (bench_engine.c, bench_sweep.c,
** bench_latency.c, bench_peers.c, bench_footprint.c): a counting VFS shim, the raw SQLite
** limit of the payout handler's statements, /proc readers, statistics.
** Benchmarks only; never linked into oncebox. */
#ifndef OB_BENCH_COMMON_H
#define OB_BENCH_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ---- a VFS shim over "unix", registered as the default VFS --------------- */

typedef struct bc_io_counts_s {
  int64_t wal_syncs;     /* xSync on a -wal file (one fdatasync each) */
  int64_t db_syncs;      /* xSync on the database file (checkpoints) */
  int64_t other_syncs;   /* anything else (journals, ...) */
  int64_t written;       /* bytes through xWrite, every file */
  int64_t wal_written;   /* of which to a -wal file */
} bc_io_counts_t;

extern bc_io_counts_t bc_io;

/* Every xSync counted in bc_io, whatever the file. */
int64_t bc_io_syncs(void);

/* Called right after every successful xSync of a -wal file (may be NULL):
** the moment a commit is durable. */
extern void (*bc_on_wal_sync)(void);

/* Register the shim as the default VFS (exits on failure). */
void bc_shim_register(void);

/* ---- clocks --------------------------------------------------------------- */

double bc_mono_s(void);
/* CPU seconds this process has used, user and system (getrusage). */
double bc_cpu_s(void);
int64_t bc_wall_ms(void);

/* ---- /proc ---------------------------------------------------------------- */

typedef struct bc_proc_io_s {
  int64_t wchar;         /* bytes passed to write(2) and friends */
  int64_t write_bytes;   /* bytes this process caused to be sent to storage */
} bc_proc_io_t;

/* /proc/PID/io (pid 0: self). 0 or -1. */
int bc_proc_io(pid_t pid, bc_proc_io_t* out);

typedef struct bc_proc_cpu_s {
  double cpu_s;          /* utime + stime of every thread, seconds */
  int64_t vol_cs;        /* voluntary context switches, every thread */
  int64_t invol_cs;      /* involuntary ones */
  int threads;
} bc_proc_cpu_t;

/* Sum of /proc/PID/task/ * /{stat,status}. 0 or -1. */
int bc_proc_cpu(pid_t pid, bc_proc_cpu_t* out);

/* A "VmRSS:" style field of /proc/PID/status in KiB, -1 if absent. */
long bc_proc_status_kib(pid_t pid, const char* field);

/* ---- statistics ------------------------------------------------------------- */

double bc_median(double* v, int n);            /* sorts v */
double bc_percentile(double* v, int n, double p);  /* v sorted; p in 0..100 */

/* ---- the raw SQLite limit --------------------------------------------------- */

typedef struct bc_raw_result_s {
  int ok;
  int64_t n, commits;
  double enqueue_s, handle_s;
  double handle_cpu_s;                  /* user + system while handling */
  int64_t enqueue_syncs, handle_syncs;  /* every xSync through the shim */
  int64_t handle_bytes;                 /* bc_io.written while handling */
} bc_raw_result_t;

/* The engine's handling statements written by hand with prepared
** statements, on a database whose schema ob_open created: enqueue n seeded
** PaymentCaptured messages (1000 per transaction, not timed), then BEGIN
** IMMEDIATE; SELECT up to `batch` ready rows; per row the dedup claim, the
** payout, the outbox row, the DELETE; COMMIT; until the queue is empty.
** synchronous: 2 FULL, 1 NORMAL. Counters in bc_io are reset before the
** enqueue and again right before handling starts; the enqueue is timed on
** its own (enqueue_s). The syncs and bytes need bc_shim_register(). */
void bc_run_raw(const char* path, int64_t n, int batch, int synchronous,
                uint64_t seed, bc_raw_result_t* res);

/* Enqueue n seeded PaymentCaptured messages into e through
** ob_enqueue_many, BC_ENQUEUE_CHUNK per transaction (the same messages as
** bc_run_raw and bc_write_ndjson for the same seed). 0, or a negative
** OB_E* code: OB_ENOMEM, the enqueue's own (reason in ob_errmsg), or
** OB_EINVAL if an envelope was refused. */
#define BC_ENQUEUE_CHUNK 1000
struct ob_engine_s;
int bc_enqueue_payments(struct ob_engine_s* e, int64_t n, uint64_t seed);

/* Write n seeded PaymentCaptured messages as NDJSON, one
** {"id","type","body"} object a line, body as a JSON string (the format of
** `oncebox enqueue --ndjson` and of the peers). 0 or -1. */
int bc_write_ndjson(const char* path, int64_t n, uint64_t seed);

/* rm DB, DB-wal, DB-shm. */
void bc_remove_db(const char* path);

/* Copy a file byte for byte (a pristine database to a run's copy). 0 or
** -1. */
int bc_copy_file(const char* from, const char* to);

/* Point this process and the oncebox processes it starts at a local SQS
** server on 127.0.0.1:port over TLS (ca: its CA bundle) with these test
** credentials, and clear every AWS and oncebox variable that could point
** elsewhere. */
void bc_point_aws_at(int port, const char* ca, const char* akid,
                     const char* secret, const char* region);

/* ---- a variant in its own process ------------------------------------------ */

struct rusage;

/* Runs this program again (/proc/self/exe, a fresh image: the peak RSS is
** the variant's alone) as {name, "--child", args..., FD}, args ending with
** NULL and FD the write end of a pipe on which the child writes exactly
** len bytes of result into out. Waits for it; its rusage goes to *ru (may
** be NULL) and its wait status to *status. 0 if it sent len bytes and
** exited 0, -1 otherwise (a message on stderr names `what`). */
int bc_run_child(const char* name, const char* const* args, void* out,
                 size_t len, struct rusage* ru, int* status, const char* what);

/* 1 if path is on tmpfs (fsync costs nothing there). */
int bc_is_tmpfs(const char* path);

#endif
