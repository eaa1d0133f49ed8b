/* SPDX-License-Identifier: Apache-2.0 */
/*
** The simulated world of tests/sim (docs/simulator.md): one seeded,
** single-threaded process in which the real library runs against a
** simulated clock, disk, network, SQS queue and payment provider.
**
** The world is a library: sim_world.c drives the built-in terminal (the
** payout module), but an embedder's program can link the same pieces,
** register its own handlers on the engine it opens, and run through the
** same weeks. Everything below is process-global, as the things it replaces
** (the clock, the disk, the network) are.
*/
#ifndef OB_TESTS_SIM_H
#define OB_TESTS_SIM_H

#include <stddef.h>
#include <stdint.h>

struct ob_engine_s;

/* ---- determinism: rng streams and the trace (sim_clock.c) -------------- */

typedef struct sim_rng_s {
  uint64_t s;
} sim_rng_t;

void sim_rng_init(sim_rng_t* r, uint64_t seed, uint64_t stream);
uint64_t sim_rng_next(sim_rng_t* r);
/* Uniform in [0, n); 0 when n is 0. */
uint64_t sim_rng_below(sim_rng_t* r, uint64_t n);
/* 1 with probability per_mille / 1000. */
int sim_rng_chance(sim_rng_t* r, unsigned per_mille);

/* Record one world event or exchange in the trace hash (FNV-1a 64 of the
** formatted line, prefixed by the simulated monotonic time). Printed when
** sim_trace_verbose is set. */
void sim_trace(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
uint64_t sim_trace_hash(void);
uint64_t sim_trace_count(void);
extern int sim_trace_verbose;

/* ---- time (sim_clock.c) ------------------------------------------------
** The process's clocks are simulated: clock_gettime, gettimeofday, time
** and getrandom are defined by the sim executable (exported, so libuv.so
** resolves to them too), and epoll_wait/epoll_pwait never block: when
** nothing is ready they advance simulated time by the timeout instead. So
** every libuv loop in the process, the engine's own ob_run loop included,
** is a discrete-event simulation. */

/* Start: monotonic at a fixed boot time, wall at wall_ms, getrandom seeded. */
void sim_clock_init(uint64_t seed, int64_t wall_ms);
int64_t sim_mono_ms(void);
int64_t sim_wall_ms(void);
/* The true time of the world (servers' clocks): never jumps. */
int64_t sim_true_ms(void);
/* Advance simulated time (never back). */
void sim_clock_advance_ms(int64_t ms);
/* Step the wall clock by delta_ms (negative: back), monotonic unchanged. */
void sim_clock_jump_ms(int64_t delta_ms);
/* Something happened (a request, an answer, a write to the disk). */
void sim_activity(void);
/* The longest time without activity since the last call (that call counts
** as activity), and start again. */
int64_t sim_activity_gap_reset(void);
/* Time since the last activity. */
int64_t sim_activity_idle_ms(void);
/* fn(arg) after every skip of simulated time in a loop (NULL: none): a
** watchdog in simulated time, e.g. to ob_stop a run that waits too long. */
void sim_clock_watch(void (*fn)(void*), void* arg);
/* Waits for which nothing could ever wake the loop (epoll with no timeout
** and nothing ready); each advanced time by an hour. */
int64_t sim_clock_stuck_waits(void);

/* ---- the disk (sim_vfs.c) ----------------------------------------------
** An in-memory SQLite VFS (registered as the default) with a filesystem
** of a given size, I/O errors, process kills and power loss. Only bytes
** synced survive a power loss; a kill keeps what was written. statvfs and
** fstatvfs report the simulated filesystem for paths under sim_vfs_dir. */

typedef struct sim_disk_stats_s {
  int64_t full;        /* writes refused with SQLITE_FULL */
  int64_t eio;         /* injected I/O errors */
  int64_t syncs;
  int64_t kills;
  int64_t power_losses;
} sim_disk_stats_t;

int sim_vfs_install(const char* dir, uint64_t seed);
void sim_vfs_set_size(int64_t fs_bytes);
/* Bytes used by others on the same filesystem (logs, updates). */
void sim_vfs_set_external(int64_t bytes);
int64_t sim_vfs_used(void);      /* by the database files */
int64_t sim_vfs_free(void);
/* Inject an I/O error on writes and syncs with this probability. */
void sim_vfs_set_eio(unsigned per_mille);
/* The process dies: from now on nothing reaches the disk. */
void sim_vfs_kill(void);
/* After the dead engine was closed: the disk again, shared memory gone,
** and with power_loss only what was synced. */
void sim_vfs_revive(int power_loss);
void sim_vfs_stats(sim_disk_stats_t* s);
/* "name=size ..." of every file, for the trace. */
void sim_vfs_describe(char* out, size_t n);
/* Free everything (end of a run). */
void sim_vfs_reset(void);

/* ---- the network (sim_net.c) -------------------------------------------
** The transport seam of platform/http: every request of the process goes
** to the simulated service of its host, completed later by a libuv timer
** on the caller's loop. */

typedef struct sim_net_stats_s {
  int64_t requests;
  int64_t refused;     /* partition: connect failed, nothing sent */
  int64_t lost;        /* the server acted, the answer was lost */
  int64_t slow;        /* answered after the client's deadline */
  int64_t errors_5xx;  /* 500/503 answered without acting */
} sim_net_stats_t;

/* A service answers one request: it fills *status and appends the body to
** out (a malloc'd buffer the net layer frees). */
typedef struct sim_http_req_s {
  const char* method;
  const char* url;
  const char* target;   /* X-Amz-Target or "" */
  const char* idem_key; /* Idempotency-Key or "" */
  const char* amz_date; /* X-Amz-Date or "" */
  const char* body;
  size_t body_len;
  int64_t held_ms;      /* how long the server has held it (long poll) */
} sim_http_req_t;
typedef struct sim_http_res_s {
  int status;
  char* body;          /* malloc'd; the net layer frees it */
  size_t body_len;
  char header[256];    /* one extra "Name: value" line, or "" */
  int64_t hold_ms;     /* > 0 with no answer: the server holds the request
                       ** (a long poll) and is asked again after hold_ms,
                       ** or sooner on sim_net_kick, with held_ms set */
} sim_http_res_t;
/* 0, or -1 when the service cannot answer (out of memory: a 500). */
typedef int (*sim_service_fn)(void* ctx, const sim_http_req_t* req,
                              sim_http_res_t* res);

void sim_net_install(void);
void sim_net_uninstall(void);
/* Requests to this host go to fn. */
void sim_net_route(const char* host, sim_service_fn fn, void* ctx);
void sim_net_seed(uint64_t seed);
/* Link conditions, changed by the world at any time. */
void sim_net_set_partition(int on);
void sim_net_set_latency(int64_t min_ms, int64_t max_ms);
void sim_net_set_loss(unsigned lost_per_mille, unsigned err_per_mille);
void sim_net_stats(sim_net_stats_t* s);
/* Something changed at a server (a message sent): held requests ask again
** at once. */
void sim_net_kick(void);
/* The process is dead (a kill, until its engine is closed): nothing it
** sends leaves, nothing reaches it. */
void sim_net_set_dead(int dead);

/* ---- SQS (sim_sqs.c, sim_sqs_receive.c) -----------------------------------
** The SQS service of one region, parsing the real JSON protocol, with
** queues of both kinds (a name ending in .fifo is FIFO). The producer's
** side: SendMessage[Batch] with AWS's MD5s, FIFO groups and the 5-minute
** deduplication window. The consumer's side: ReceiveMessage with long
** polls, visibility timeouts, receipt handles, DeleteMessage[Batch],
** ChangeMessageVisibility[Batch], and a standard queue's at-least-once
** delivery (duplicates, reordering, a message back after its delete).
** GetQueueUrl, GetQueueAttributes (the counts), the 15-minute X-Amz-Date
** window against true time. The rules each piece models are named where
** it is written. */

#define SIM_SQS_HOST "sqs.eu-west-1.amazonaws.com"
#define SIM_SQS_URL_PREFIX "https://" SIM_SQS_HOST "/000000000000/"

typedef struct sim_sqs_s sim_sqs_t;
sim_sqs_t* sim_sqs_new(uint64_t seed);
void sim_sqs_free(sim_sqs_t* q);
int sim_sqs_service(void* ctx, const sim_http_req_t* req,
                    sim_http_res_t* res);
/* Create a queue (its URL is SIM_SQS_URL_PREFIX name). content_dedup: a
** FIFO queue's ContentBasedDeduplication; visibility_s its
** VisibilityTimeout. Returns 0, or -1. */
int sim_sqs_create(sim_sqs_t* q, const char* name, int content_dedup,
                   int visibility_s);
/* A producer elsewhere sends to a queue (not through the terminal's
** network). group/dedup: FIFO fields (NULL on a standard queue). Returns
** 0, 1 when deduplicated, -1 on a refusal. */
int sim_sqs_put(sim_sqs_t* q, const char* name, const char* body,
                const char* group, const char* dedup);
/* Every message the terminal sent and SQS accepted (SendMessage[Batch];
** not those a FIFO queue deduplicated), in order from the from-th: fn per
** message with the queue's name and the MessageGroupId ("" if none).
** Returns the count of all. */
size_t sim_sqs_sent(const sim_sqs_t* q, size_t from,
                    void (*fn)(void* arg, const char* queue, const char* group,
                               const char* body),
                    void* arg);
int64_t sim_sqs_send_calls(const sim_sqs_t* q);
/* Messages of the queue not deleted (visible, in flight or delayed). */
int64_t sim_sqs_left(const sim_sqs_t* q, const char* name);
/* SQS's own faults of a standard queue, per mille: a message delivered
** twice (a second copy), a delete that misses a copy (the message comes
** back once its visibility ends). 0 and 0 in a healed world. */
void sim_sqs_set_faults(sim_sqs_t* q, unsigned dup_per_mille,
                        unsigned ghost_per_mille);
/* Called when a message is really deleted (not a stale handle), with its
** body; and when messages are received (n of them). */
void sim_sqs_on_delete(sim_sqs_t* q,
                       void (*fn)(void* arg, const char* queue,
                                  const char* body),
                       void* arg);
void sim_sqs_on_receive(sim_sqs_t* q, void (*fn)(void* arg, size_t n),
                        void* arg);

typedef struct sim_sqs_stats_s {
  int64_t receives, received, empty_receives, long_polls_woken, deletes,
      stale_deletes, visibility_changes, visibility_refused, duplicates,
      ghosts, fifo_deduplicated;
} sim_sqs_stats_t;
void sim_sqs_stats(const sim_sqs_t* q, sim_sqs_stats_t* s);

/* ---- invariants (sim_invariants.c) --------------------------------------
** The oracle: what the world knows independently of the database (every
** payment whose ob_enqueue returned 0, every message SQS accepted), and the
** checks against the engine. A violation is recorded with its kind. */

typedef struct sim_oracle_s sim_oracle_t;
sim_oracle_t* sim_oracle_new(void);
void sim_oracle_free(sim_oracle_t* o);
/* An enqueue of payment_id under message id msg_id returned 0. */
void sim_oracle_acked(sim_oracle_t* o, const char* payment_id,
                      const char* msg_id);
/* Read what SQS accepted since the last call; records a violation when a
** payment's payout event is published under two event ids. */
void sim_oracle_scan_sqs(sim_oracle_t* o, const sim_sqs_t* q);
/* Safety on the open engine (cheap; after every step). */
void sim_oracle_check_step(sim_oracle_t* o, struct ob_engine_s* e);
/* Everything acknowledged is done (after the world healed). */
void sim_oracle_check_final(sim_oracle_t* o, struct ob_engine_s* e);
void sim_oracle_violation(sim_oracle_t* o, const char* kind, const char* fmt,
                          ...) __attribute__((format(printf, 3, 4)));
int sim_oracle_violations(const sim_oracle_t* o);
/* Print each violation kind and its first detail. */
void sim_oracle_print(const sim_oracle_t* o);
size_t sim_oracle_npayments(const sim_oracle_t* o);

/* ---- the head office (sim_office.c) -------------------------------------
** Producers elsewhere fill the terminal's inbound queue with PaymentCaptured
** CloudEvents (some twice); each is acknowledged to the oracle. No loss:
** when SQS deletes one, its payment is committed in the database at db. */

typedef struct sim_office_s sim_office_t;
sim_office_t* sim_office_new(uint64_t seed, sim_sqs_t* sqs,
                             sim_oracle_t* oracle, const char* queue,
                             const char* db);
void sim_office_free(sim_office_t* o);
void sim_office_send(sim_office_t* o);
void sim_office_stats(const sim_office_t* o, int64_t* sent, int64_t* twice,
                      int64_t* deleted);

/* ---- latency (sim_latency.c) ---------------------------------------------
** An accepted payment is handled within SIM_LATENCY_MS while the engine is
** up and its disk healthy. epoch: the world's count of what excuses a
** delay (kills, disk faults); a check whose epoch changed is excused. */

#define SIM_LATENCY_MS 5000
typedef struct sim_latency_s sim_latency_t;
sim_latency_t* sim_latency_new(sim_oracle_t* oracle);
void sim_latency_free(sim_latency_t* l);
void sim_latency_accepted(sim_latency_t* l, const char* payment_id,
                          uint64_t epoch);
/* When the next check falls due (INT64_MAX: none). */
int64_t sim_latency_next(const sim_latency_t* l);
/* Check what fell due; e NULL when the terminal is down. */
void sim_latency_check(sim_latency_t* l, struct ob_engine_s* e,
                       uint64_t epoch);
void sim_latency_stats(const sim_latency_t* l, int64_t* checked,
                       int64_t* excused, int64_t* late);

/* ---- the world (sim_world.c) --------------------------------------------- */

typedef struct sim_config_s {
  uint64_t seed;
  int days;
  int mode;            /* -1: from the seed; 0 service (attached loop);
                       ** 1 script (ob_run until idle, then sleep) */
  int64_t fs_bytes;    /* 0: from the seed (8 MiB on a quarter of seeds) */
  int cap;             /* -1: from the seed; 0: no max_db_bytes; 1: a cap */
  int verbose;
  int charge_gap_max_min;  /* 0: orders every 2 to 24 minutes; N: 3 to N */
  int journal;         /* -1: from the seed; 1: a fiscal till (8 MiB of its
                       ** own, each receipt journaled); 0: not */
} sim_config_t;

typedef struct sim_report_s {
  uint64_t hash;
  uint64_t trace_events;
  int violations;
  int mode;
  int64_t fs_bytes;
  int64_t max_db_bytes;
  int days;
  int64_t payments, acked, refused_enqueues;
  int journal;             /* a fiscal till: receipts journaled */
  int64_t receipts;        /* receipts accepted */
  int64_t clock_jumps[5];  /* rtc reset, day back, ntp step, forward, fix */
  int64_t partitions, weather, disk_fills, eio_bursts, kills, power_losses,
      restarts, sync_runs, operator_actions;
  int64_t spin_stops;      /* busy until-idle runs stopped for cost */
  sim_net_stats_t net;
  sim_disk_stats_t disk;
  int64_t sqs_messages;
  /* ChargeOrder through the fence to the simulated provider. */
  int64_t charge_orders, charge_acked, charge_dup_msgs, charge_second_msgs;
  int64_t charges_done;      /* acknowledged orders with their charge row */
  int64_t charges_parked[4]; /* key-expired, conflict, replayed-error,
                             ** attempts: parked for a person at the end */
  int64_t charge_reconciles; /* operator's ob_effects_reconcile rounds */
  int64_t psp_weather;       /* provider fault periods */
  /* The inbound queue (the SQS consumer) and the relay's FIFO queue. */
  int fifo;                  /* the relay publishes to a FIFO queue */
  int prefetch;              /* the consumer's */
  int64_t inbound_sent, inbound_twice, inbound_deleted, inbound_left;
  sim_sqs_stats_t sqs;
  int64_t totals_written;    /* TillTotals events (FIFO seeds) */
  int64_t latency_checked, latency_excused, latency_late;
  int64_t psp_requests, psp_calls, psp_charges, psp_replays, psp_replayed_5xx,
      psp_409, psp_422, psp_400, psp_err_before, psp_err_after, psp_pruned,
      psp_reused_after_prune, psp_lookups, psp_searches, psp_twice;
} sim_report_t;

int sim_run(const sim_config_t* c, sim_report_t* out);

#endif
