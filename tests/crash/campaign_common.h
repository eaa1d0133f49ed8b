/* SPDX-License-Identifier: Apache-2.0 */
/* What the two crash campaigns share: ob-crash-campaign (campaign.c, the
** engine) and ob-crash-campaign-relay (campaign_relay.c, the relay against
** fauxqs). See docs/reliability.md.
**
** Each program's camp_t starts with a camp_common_t (member `cm`): the
** options both take, the violation reporter, the pipe from the current
** worker and the counters the shared steps keep. Callbacks get the
** camp_common_t* and the program casts it back to its camp_t*. Everything
** the campaign owns is freed by camp_finish (dir, db) or by the program. */
#ifndef OB_TESTS_CRASH_CAMPAIGN_COMMON_H
#define OB_TESTS_CRASH_CAMPAIGN_COMMON_H

#include <getopt.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <sqlite3.h>

#include "oncebox.h"
#include "tests/crash/plsim.h"

#define CAMP_RECORDER "test-ack-recorder" /* the second consumer: acks */
#define CAMP_MAX_ACKS 100      /* acks of one batch fit one atomic pipe write */
#define CAMP_WATCHDOG_MS 60000 /* a worker that runs longer is hung */
#define CAMP_MAX_VIOLATION_LINES 40

/* Worker exit codes both programs use (besides 0, SIGKILL and the
** PLSIM_EXIT_* codes); each program numbers its own from 16. */
#define W_OPEN_FAILED 10       /* the engine did not open: I5 */
#define W_RUN_FAILED 11        /* ob_run_once / checkpoint failed: I5 */
#define W_PIPE 12              /* harness */
#define W_UNEXPECTED 13        /* a valid message retried or failed */
#define W_DELAYED 14           /* harness: delayed rows */
#define W_OVERFLOW 15          /* harness */

enum { KIND_KILL, KIND_POWER, KIND_TORN };
extern const char* const camp_kind_names[]; /* "kill", "power", "torn" */

typedef struct camp_common_s {
  /* options (dir and db are owned: freed by camp_finish) */
  uint64_t seed;
  long cycles_wanted;
  int mode, mutant, reset_every;
  int quiet, stop_on_violation, keep, own_dir;
  char* dir;
  char* db;                  /* dir/campaign.db */

  char ctx[200];             /* the cycle being checked, for messages */
  long vlines;               /* violation lines printed */
  int64_t t0;                /* the campaign's start (camp_mono_ms) */
  int64_t harness;           /* harness failures: the campaign proves nothing */

  /* cycles by kind, and how workers ended (camp_exit_kind) */
  long cycles, k_kill, k_power, k_torn;
  long x_sigkill, x_sync, x_clean;
  /* torn restores (camp_restore) */
  int64_t r_records, r_applied, r_torn, r_lost;

  /* The records from the current worker (camp_run_worker): 'O' opened,
  ** 'S' two int64 statistics, and id records of the types in id_types,
  ** each id passed to on_id. */
  const char* id_types;
  void (*on_id)(struct camp_common_s* cm, char type, const char* id);
  char stream[1 << 16];
  size_t slen;
  int w_opened, w_stats;
  int64_t w_stat[2];         /* the 'S' record: plsim syncs, then writes or
                                commits */
} camp_common_t;

/* ---- small things -------------------------------------------------------- */

/* splitmix64's finaliser; camp_rnd steps the state s and mixes it. */
uint64_t camp_mix(uint64_t z);
uint64_t camp_rnd(uint64_t* s);
/* CLOCK_MONOTONIC in ms. */
int64_t camp_mono_ms(void);
/* A UUIDv4-shaped string from three numbers; the tail is the last 12 hex. */
void camp_make_uuid(uint64_t a, uint64_t b, uint64_t tail, char out[OB_UUID_BUFLEN]);
/* calloc / strdup / "a/b" that exit(2) when out of memory; caller frees. */
void* camp_xcalloc(size_t n, size_t sz);
char* camp_xstrdup(const char* s);
char* camp_path_join(const char* a, const char* b);
/* The index in names[0..n) of s, or -1. */
int camp_lookup(const char* s, const char* const* names, int n);

/* Report a violation on stderr, prefixed with cm->ctx; the first
** CAMP_MAX_VIOLATION_LINES only (the counters are the caller's). */
void camp_vio(camp_common_t* cm, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A clock with the real time (the relay's leases and backoffs are real) and
** a seeded random source (UUIDv7 ids, claim tokens). Owned by the caller;
** it must outlive the engine that uses &clock. */
typedef struct camp_clock_s {
  ob_clock_t clock;
  uint64_t s;
} camp_clock_t;
void camp_clock_init(camp_clock_t* sc, uint64_t seed);

/* ---- events: PaymentCaptured messages derived from (epoch seed, index) --- */

/* Event i's message id (ending with i in hex, so a row maps back) and its
** payment id. */
void camp_event_ids(uint64_t eseed, size_t i, char id[OB_UUID_BUFLEN], char pay[OB_UUID_BUFLEN]);
/* The index an event id ends with, or -1 if s is no event id; the caller
** checks it against its own table. */
long camp_event_tail(const char* s);
/* Event i's JSON body (pay: its payment id). */
void camp_event_body(uint64_t eseed, size_t i, const char* pay, char* out,
                     size_t n);

/* ---- the worker (in the forked child: failures _exit) -------------------- */

/* One record to the supervisor: type, 16-bit length, payload (at most
** CAMP_MAX_ACKS ids). Under PIPE_BUF: one write, never torn by a SIGKILL. */
void camp_write_rec(int fd, char type, const void* payload, size_t len);
/* The 'S' record: plsim's syncs and one more number. */
void camp_send_stats(int fd, int64_t second);

/* The ack recorder: a second consumer that notes the ids of a batch;
** camp_recorder_flush sends them ('A') once ob_run_once returned 0. early
** (the ack-before-commit mutant) sends each id from inside the handler. */
typedef struct camp_recorder_s {
  char ids[CAMP_MAX_ACKS][36];
  int n, max;                /* max: the batch size bound (<= CAMP_MAX_ACKS) */
  int fd;
  int early;
} camp_recorder_t;
/* Register the payout module and the recorder on e; _exit(W_OPEN_FAILED)
** if either fails. */
void camp_register(ob_engine_t* e, camp_recorder_t* rec);
void camp_recorder_flush(camp_recorder_t* rec);

/* A second connection that checkpoints (the worker's own), and one
** checkpoint by it in the mode of the n-th (PASSIVE, PASSIVE, FULL,
** RESTART, TRUNCATE, ...); camp_checkpoint takes a SQLITE_CHECKPOINT_*
** mode. ctx names the worker's cycle in messages. */
sqlite3* camp_open_checkpointer(const char* db, const char* ctx);
int camp_checkpoint_mode(int n);
void camp_checkpoint(sqlite3* ck, int mode, const char* ctx);

/* ---- the supervisor ------------------------------------------------------ */

/* Begin random cycle ++cm->cycles: *cr becomes its random source (from the
** seed and the cycle number alone, so a cycle's parameters do not depend on
** what earlier cycles did); returns its kind (KIND_*: the mode's, or one at
** random for mode mixed = 3), counted. */
int camp_cycle_begin(camp_common_t* cm, uint64_t* cr);

/* Fork a worker: child(cm, cfg, fd) on the plsim shim configured by pc (NULL:
** the stock VFS) writes records to fd and _exits. SIGKILL it kill_ms after
** the fork (kill_ms < 0: let it run to its end, with a watchdog); its
** records are taken as they come. Returns its wait status; *hung if the
** watchdog fired. */
int camp_run_worker(camp_common_t* cm,
                    void (*child)(camp_common_t* cm, const void* cfg, int fd),
                    const void* cfg, const plsim_config_t* pc, int kill_ms,
                    int* hung);

/* How a worker ended: -1 harness failure (counted), 0 a crash or a clean
** exit, 1 the cycle failed (code() counted it). code() judges the exit
** codes other than 0 and PLSIM_EXIT_SYNC_CRASH: 0 or 1 as above, or
** CAMP_EXIT_UNKNOWN for a harness failure. */
#define CAMP_EXIT_UNKNOWN (-2)
int camp_exit_kind(camp_common_t* cm, int status, int hung,
                   int (*code)(camp_common_t* cm, int exit_code));

/* The power-loss step after a worker died: plsim_restore (torn with
** torn_seed, else strict), statistics added. 0, or -1 (harness, counted). */
int camp_restore(camp_common_t* cm, int torn, uint64_t torn_seed);

/* Delete the database and its -wal, -shm and -journal; plsim forgets it. */
void camp_remove_db(camp_common_t* cm);
/* Copy the database files to dir/failed-CYCLE (the first three times; never
** for a mutant, which is meant to fail) and keep the directory. */
void camp_keep_failed_db(camp_common_t* cm);

/* ---- the checker (stock VFS, read-only) ---------------------------------- */

/* Open the database as the crash (and restore) left it and check
** PRAGMA integrity_check. Read-write, so that a hot rollback journal (a
** crash while the database was being created, before WAL) is rolled back
** as any opener would; but `pragmas` (query_only=1, ...) and no checkpoint
** on close: a hot WAL stays for the next worker to recover. Returns the
** connection (the caller closes it), or NULL after reporting why. */
sqlite3* camp_check_open(camp_common_t* cm, const char* pragmas);
/* Run sql; call row(cm, st) per row. A failed prepare or step is a failure
** (reported): -1. */
int camp_scan(sqlite3* db, const char* sql,
              void (*row)(camp_common_t* cm, sqlite3_stmt* st),
              camp_common_t* cm);
/* The single number sql returns into *out (-1 if no row); 0 or -1 as
** camp_scan. */
int camp_count(sqlite3* db, const char* sql, camp_common_t* cm, int64_t* out);

/* ---- main ---------------------------------------------------------------- */

/* The command line: the options both take (--seed --cycles --mode --mutant
** --reset-every --dir --keep --quiet --stop-on-violation --help) and the
** program's own `extra` (NULL-terminated; each handled by option(), which
** returns 0, or -1 for a bad value). */
typedef struct camp_cli_s {
  const char* const* mode_names;
  int nmodes;
  const char* const* mutant_names;
  int nmutants;
  const struct option* extra;
  int (*option)(camp_common_t* cm, int opt, const char* arg);
  void (*bad_mutant)(const char* name); /* optional: a hint */
  void (*usage)(FILE* f);
} camp_cli_t;
/* Parse argv into cm (defaults set before). Returns -1 to go on, or the
** exit status: 0 after --help, 2 after a usage message (no --seed, negative
** cycles, reset-every < 1, extra arguments, ...). *have_cycles: --cycles
** was given. */
int camp_parse_args(camp_common_t* cm, const camp_cli_t* cli, int argc,
                    char** argv, int* have_cycles);

/* A mutant library is linked into a binary of its own, PROGRAM-NAME, built
** from the same source (in_mutant_binary there). In the normal binary,
** --mutant NAME (index `mutant`) execs that binary (standing next to this
** one) with argv, exit(2) if it cannot; in the mutant binary any other
** --mutant is refused: 2. Returns -1 to go on. */
int camp_mutant_binary(const camp_common_t* cm, char** argv, int mutant,
                       const char* name, const char* program,
                       int in_mutant_binary);

/* cm->dir: --dir (created if missing) or a new $TMPDIR/PREFIX-XXXXXX
** (removed at the end unless --keep); cm->db in it. 0, or 2 (reported). */
int camp_make_dir(camp_common_t* cm, const char* prefix);

/* The RESULT line and the exit status (0 no violation, 1 violations, 2 the
** harness failed); removes or reports the directory; frees dir and db. */
int camp_finish(camp_common_t* cm, int64_t violations);

#endif
