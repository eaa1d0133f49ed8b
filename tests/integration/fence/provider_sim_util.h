/* SPDX-License-Identifier: Apache-2.0 */
/* The payment provider simulator (provider_sim.mjs) from C: start it on
** 127.0.0.1 with the test PKI, drive its fault modes over its stdin, read
** its counters, kill it like a crashing provider and start it again on the
** same port with the same state file. See README.md next to this file.
**
** Built on ht_spawn (tests/integration/http/http_test_util.h): the process
** gets SIGKILL if the test dies, and every simulator still running at exit
** is killed and reaped. */
#ifndef OB_TEST_PROVIDER_SIM_UTIL_H
#define OB_TEST_PROVIDER_SIM_UTIL_H

typedef struct ps_sim_s ps_sim_t;
typedef struct ps_stats_s {
  long charges_total, orders_charged, max_charges_per_order, requests, posts,
      replays, lookups, held;
  long unauthorized;  /* requests refused 401 (--require-auth) */
  long keys;          /* keys holding a saved answer, not past retention */
  long pruned;        /* keys pruned by this process (PRUNED lines) */
} ps_stats_t;

/* 1 if `node` (>= 18) runs; callers skip their tests otherwise. */
int ps_node_available(void);

/* NULL if a test that runs oncebox against the simulator can run here:
** node (>= 18), openssl and faketime (ht_gen_pki needs both), and localhost
** resolving to 127.0.0.1 only. Else why not, as a "skipped: ..." line. */
const char* ps_skip_reason(void);

/* The first column of the first row of sql, read from the database file
** db_path through a read-only connection of its own (5 s busy timeout):
** 0 and *out (-1 when there is no row), or -1 with the reason on stderr
** when the file can't be opened or sql can't be prepared. */
int ps_db_int(const char* db_path, const char* sql, long long* out);
/* Start node provider_sim.mjs with pki_dir/good.crt, good.key (from
** ht_gen_pki), state file state_path; flags is NULL or extra arguments
** separated by spaces ("--no-idempotency", "--no-idempotency --no-lookup");
** '...' quotes a value with spaces, as in sh ("--require-auth 'Bearer x'").
** port 0: the kernel chooses. Waits (up to 15 s) for its PORT line. NULL on
** failure, with the simulator's output on stderr.
** The script is $OB_SOURCE_DIR/tests/integration/fence/provider_sim.mjs
** (ctest sets OB_SOURCE_DIR), else the one next to this source file.
** The simulator's output goes to state_path.out.<n>, n = 0, 1, ... one file
** per start. */
ps_sim_t* ps_start(const char* pki_dir, const char* state_path, int port,
                   const char* flags);
int ps_port(const ps_sim_t* s);
/* ps_start with a profile and a key retention:
** profile NULL or "default" (the simulator's own rules, keys kept forever),
** "stripe" (Stripe API v1's published rules) or "ietf"
** (draft-ietf-httpapi-idempotency-key-header); key_retention_ms > 0 passes
** --key-retention-ms, <= 0 keeps the profile's (default: never; stripe,
** ietf: 24 h). flags as ps_start, added after ("--clock-offset-ms 5000").
** ps_restart keeps all of them. See README.md, "Profiles". */
ps_sim_t* ps_start_profile(const char* pki_dir, const char* state_path,
                           int port, const char* profile,
                           long long key_retention_ms, const char* flags);
/* Sends a control command and waits (up to 5 s) for its ACK line. 0 on
** success, -1 on failure (bad mode, simulator gone, no ACK). mode: normal,
** slow, drop_after_charge, error_5xx, error_5xx_after_charge, rate_limited,
** die_after_charge, die_before_charge, lookup_error_5xx, error_500_saved;
** it applies to the next `count` matching requests. charge_first: for slow,
** charge on arrival and answer after delay_ms; for error_500_saved, make
** the charge (or decline) before answering and saving the 500 (without it
** nothing is charged). */
int ps_mode(ps_sim_t* s, const char* mode, int count, int delay_ms,
            int charge_first);
int ps_stats(ps_sim_t* s, ps_stats_t* out);
/* Real charges of the order, -1 on failure. */
int ps_charges(ps_sim_t* s, const char* order_id);
/* Move the simulator's clock (not the machine's) forward by ms >= 0: keys
** that become at least the retention old are pruned now (PRUNED lines). The
** offset is in the state file before this returns, so it survives ps_kill
** and ps_restart. Returns the number of keys pruned, or -1. */
int ps_advance(ps_sim_t* s, long long ms);
/* The simulator's clock: now_ms (ms since the epoch, Date.now() + offset)
** and offset_ms; either may be NULL. 0 or -1. */
int ps_clock(ps_sim_t* s, long long* now_ms, long long* offset_ms);
/* The HTTP status of the answer saved under key (200, 402, 500), 0 when the
** key holds nothing (never used, refused, pruned, or --no-idempotency), -1
** on failure. Looking prunes a key past its retention, as a request would. */
int ps_key_status(ps_sim_t* s, const char* key);
/* Wait until the output holds at least n lines starting with prefix
** ("HELD ", "CHARGED ", "DROPPED ", "DYING"), up to timeout_ms (0: look
** once); returns the count seen (or -1 on timeout, or when the simulator
** exited first). Lines of every start since ps_start count, so a count
** survives ps_kill/ps_restart. */
int ps_wait_lines(ps_sim_t* s, const char* prefix, int n, int timeout_ms);
/* SIGKILL the simulator (a provider that dies) and reap it; nothing if it
** is already gone. ps_restart starts it again on the same port with the same
** state file and flags (killing it first if it still runs); 0 or -1. */
void ps_kill(ps_sim_t* s);
int ps_restart(ps_sim_t* s);
/* Stop and free (NULL fine). The state and output files stay. */
void ps_stop(ps_sim_t* s);

/* ---- extras ------------------------------------------------------------- */
/* Send any command: cmd_json is a JSON object without "seq" (the wrapper
** adds it), e.g. {"cmd":"stats"}. Returns the ACK's JSON (malloc'd), or
** NULL on failure (no ACK within 5 s, simulator gone). */
char* ps_command(ps_sim_t* s, const char* cmd_json);
/* 1 while the simulator process runs. */
int ps_alive(const ps_sim_t* s);
/* Output of every start so far (malloc'd, NUL-terminated). */
char* ps_output(const ps_sim_t* s);

#endif
