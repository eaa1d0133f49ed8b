/* SPDX-License-Identifier: Apache-2.0 */
/*
** ob-sim: the deterministic simulator (docs/simulator.md).
**   ob-sim --seed S [--days D] [--mode service|script] [--fs-mib N]
**          [--cap 0|1] [--journal 0|1] [-v|-vv]
**                                      one world; exit 1 on a violation
**   ob-sim --seeds A-B [--days D]       each seed in turn
**   ob-sim --campaign N [--from S]      N seeds from S (or from the time)
**   ob-sim --determinism S [--days D]   the same seed twice: same hash?
** A failing seed prints the one command that replays it.
*/
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/sim/sim.h"

static const char* prog = "ob-sim";

static void usage(void) {
  fprintf(stderr,
          "usage: %s --seed S [--days D] [--mode service|script] [--fs-mib N]"
          " [--cap 0|1] [--charge-gap MAXMIN] [--journal 0|1] [-v|-vv]\n"
          "       %s --seeds A-B | --campaign N [--from S] | --determinism S"
          "\n", prog, prog);
  exit(2);
}

static void replay_line(const sim_config_t* c) {
  printf("replay: %s --seed %llu --days %d", prog, (unsigned long long)c->seed,
         c->days);
  if (c->mode >= 0) printf(" --mode %s", c->mode ? "script" : "service");
  if (c->fs_bytes > 0) printf(" --fs-mib %lld", (long long)(c->fs_bytes >> 20));
  if (c->cap >= 0) printf(" --cap %d", c->cap);
  if (c->charge_gap_max_min > 0)
    printf(" --charge-gap %d", c->charge_gap_max_min);
  if (c->journal >= 0) printf(" --journal %d", c->journal);
  printf("\n");
}

static void print_report(const sim_config_t* c, const sim_report_t* r) {
  char receipts[48] = "";
  if (r->journal)
    snprintf(receipts, sizeof receipts, " receipts %lld", (long long)r->receipts);
  printf("seed %llu: %d days, %s, fs %lld MiB, cap %lld MiB | payments %lld "
         "acked %lld refused %lld%s | orders %lld acked %lld charged %lld "
         "parked %lld | sqs %lld msgs%s, inbound %lld | hash %016llx (%llu "
         "events) | %s\n",
         (unsigned long long)c->seed, r->days, r->mode ? "script" : "service",
         (long long)(r->fs_bytes >> 20), (long long)(r->max_db_bytes >> 20),
         (long long)r->payments, (long long)r->acked,
         (long long)r->refused_enqueues, receipts,
         (long long)r->charge_orders,
         (long long)r->charge_acked, (long long)r->charges_done,
         (long long)(r->charges_parked[0] + r->charges_parked[1] +
                     r->charges_parked[2] + r->charges_parked[3]),
         (long long)r->sqs_messages, r->fifo ? " (FIFO)" : "",
         (long long)r->inbound_sent, (unsigned long long)r->hash, (unsigned long long)r->trace_events,
         r->violations ? "VIOLATIONS" : "ok");
  if (c->verbose || r->violations) {
    printf("  faults: clock rtc-reset %lld day-back %lld ntp-step %lld "
           "forward %lld ntp-fix %lld; partitions %lld, bad weather %lld "
           "(requests %lld refused %lld answers lost %lld 5xx %lld past "
           "deadline %lld); disk fills %lld full-writes %lld eio bursts %lld "
           "eio %lld; kills %lld power losses %lld restarts %lld; sync runs "
           "%lld (busy ones stopped %lld) operator %lld\n",
           (long long)r->clock_jumps[0], (long long)r->clock_jumps[1],
           (long long)r->clock_jumps[2], (long long)r->clock_jumps[3],
           (long long)r->clock_jumps[4], (long long)r->partitions,
           (long long)r->weather, (long long)r->net.requests,
           (long long)r->net.refused, (long long)r->net.lost,
           (long long)r->net.errors_5xx, (long long)r->net.slow,
           (long long)r->disk_fills, (long long)r->disk.full,
           (long long)r->eio_bursts, (long long)r->disk.eio,
           (long long)r->kills, (long long)r->power_losses,
           (long long)r->restarts, (long long)r->sync_runs,
           (long long)r->spin_stops, (long long)r->operator_actions);
    printf("  charges: orders %lld (same message twice %lld, a second "
           "message %lld) acked %lld charged once %lld; parked for a person: "
           "key-expired %lld conflict %lld replayed-error %lld attempts %lld; "
           "reconcile rounds %lld; provider weather %lld: requests %lld "
           "charge calls %lld charges %lld replays %lld (5xx %lld) 409 %lld "
           "422 %lld 400 %lld 5xx before %lld after %lld keys pruned %lld "
           "reused after prune %lld lookups %lld searches %lld orders "
           "charged twice %lld\n",
           (long long)r->charge_orders, (long long)r->charge_dup_msgs,
           (long long)r->charge_second_msgs, (long long)r->charge_acked,
           (long long)r->charges_done, (long long)r->charges_parked[0],
           (long long)r->charges_parked[1], (long long)r->charges_parked[2],
           (long long)r->charges_parked[3], (long long)r->charge_reconciles,
           (long long)r->psp_weather, (long long)r->psp_requests,
           (long long)r->psp_calls, (long long)r->psp_charges,
           (long long)r->psp_replays, (long long)r->psp_replayed_5xx,
           (long long)r->psp_409, (long long)r->psp_422, (long long)r->psp_400,
           (long long)r->psp_err_before, (long long)r->psp_err_after,
           (long long)r->psp_pruned, (long long)r->psp_reused_after_prune,
           (long long)r->psp_lookups, (long long)r->psp_searches,
           (long long)r->psp_twice);
    printf("  sqs consumer: prefetch %d; inbound sent %lld (twice %lld) "
           "deleted %lld left %lld; receives %lld (empty %lld, long polls "
           "woken %lld) messages %lld, deletes %lld (stale handles %lld), "
           "visibility changes %lld (refused %lld), SQS duplicates %lld, back "
           "after delete %lld, FIFO deduplicated %lld; till totals %lld; "
           "latency checks %lld (excused %lld, late %lld)\n",
           r->prefetch, (long long)r->inbound_sent,
           (long long)r->inbound_twice, (long long)r->inbound_deleted,
           (long long)r->inbound_left, (long long)r->sqs.receives,
           (long long)r->sqs.empty_receives,
           (long long)r->sqs.long_polls_woken, (long long)r->sqs.received,
           (long long)r->sqs.deletes, (long long)r->sqs.stale_deletes,
           (long long)r->sqs.visibility_changes,
           (long long)r->sqs.visibility_refused, (long long)r->sqs.duplicates,
           (long long)r->sqs.ghosts, (long long)r->sqs.fifo_deduplicated,
           (long long)r->totals_written, (long long)r->latency_checked,
           (long long)r->latency_excused, (long long)r->latency_late);
    printf("  invariants: one charge at the provider per order; every "
           "acknowledged order charged once, its charge row the provider's; "
           "one payout per payment; one published payout event "
           "per payment; every outbox row in SQS with its id; every "
           "acknowledged payment (the till's and the head office's) paid "
           "and published within %d min of healing; queue and outbox "
           "drained; nothing deleted from SQS before its payment committed; "
           "the inbound queue drained; each FIFO group in order; an "
           "accepted payment handled within %d s (service, engine up, disk "
           "healthy); ob_check clean; until-idle runs return; no loop "
           "blocked forever\n", 60, SIM_LATENCY_MS / 1000);
  }
}

/* Each world runs in a child process: the library keeps some process-wide
** state (id generators, log limits), so a seed must start from a fresh
** process to replay alone exactly as it ran in a campaign. A child that
** crashes or runs past the real-time watchdog fails the seed too. */
static int run_child(const sim_config_t* c, sim_report_t* r) {
  int fd[2], st = 0;
  pid_t pid;
  size_t got = 0;
  memset(r, 0, sizeof *r);
  fflush(stdout);
  if (pipe(fd) != 0 || (pid = fork()) < 0) {
    perror("ob-sim: fork");
    exit(2);
  }
  if (pid == 0) {
    close(fd[0]);
    /* A hang's real-time bound, loose enough for a sanitizer build on a
    ** loaded 2-core machine (a 7-day world there: 40 to 90 s). */
    alarm((unsigned)(c->days * 45 + 60));
    sim_run(c, r);
    print_report(c, r);
    fflush(stdout);
    if (write(fd[1], r, sizeof *r) != (ssize_t)sizeof *r) _exit(3);
    exit(0);  /* not _exit: LeakSanitizer checks at exit */
  }
  close(fd[1]);
  while (got < sizeof *r) {
    ssize_t n = read(fd[0], (char*)r + got, sizeof *r - got);
    if (n <= 0) break;
    got += (size_t)n;
  }
  close(fd[0]);
  waitpid(pid, &st, 0);
  if (got != sizeof *r || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    printf("seed %llu: the world died (%s %d): VIOLATION crash-or-hang\n",
           (unsigned long long)c->seed,
           WIFSIGNALED(st) ? "signal" : "exit",
           WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
    r->violations = 1;
  }
  return r->violations;
}

static int one(const sim_config_t* c, sim_report_t* r) {
  int v = run_child(c, r);
  if (v != 0) replay_line(c);
  fflush(stdout);
  return v != 0;
}

int main(int argc, char** argv) {
  sim_config_t c = {0, 7, -1, 0, -1, 0, 0, -1};
  sim_report_t r;
  unsigned long long from = 0, to = 0, det = 0;
  long campaign = 0;
  int have_seed = 0, failed = 0;
  prog = argv[0];
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "-v") == 0) c.verbose = 1;
    else if (strcmp(a, "-vv") == 0) c.verbose = 2;
    else if (v == NULL) usage();
    else if (strcmp(a, "--seed") == 0) c.seed = strtoull(v, NULL, 10), have_seed = 1, i++;
    else if (strcmp(a, "--days") == 0) c.days = atoi(v), i++;
    else if (strcmp(a, "--mode") == 0) c.mode = strcmp(v, "script") == 0, i++;
    else if (strcmp(a, "--fs-mib") == 0) c.fs_bytes = atoll(v) << 20, i++;
    else if (strcmp(a, "--cap") == 0) c.cap = atoi(v), i++;
    else if (strcmp(a, "--charge-gap") == 0) c.charge_gap_max_min = atoi(v), i++;
    else if (strcmp(a, "--journal") == 0) c.journal = atoi(v), i++;
    else if (strcmp(a, "--seeds") == 0) {
      if (sscanf(v, "%llu-%llu", &from, &to) != 2) usage();
      i++;
    } else if (strcmp(a, "--campaign") == 0) campaign = atol(v), i++;
    else if (strcmp(a, "--from") == 0) from = strtoull(v, NULL, 10), i++;
    else if (strcmp(a, "--determinism") == 0) det = strtoull(v, NULL, 10), i++;
    else usage();
  }
  if (c.days < 1) usage();
  if (det) {
    sim_report_t r2;
    c.seed = det;
    run_child(&c, &r);
    run_child(&c, &r2);
    printf("determinism seed %llu: %016llx (%llu events) and %016llx (%llu "
           "events): %s\n", det, (unsigned long long)r.hash,
           (unsigned long long)r.trace_events, (unsigned long long)r2.hash,
           (unsigned long long)r2.trace_events,
           r.hash == r2.hash ? "same" : "DIFFERENT");
    return r.hash == r2.hash ? 0 : 1;
  }
  if (campaign > 0 || to > 0) {
    int nfail = 0;
    if (campaign > 0) to = from + (unsigned long long)campaign - 1;
    for (unsigned long long s = from; s <= to; s++) {
      c.seed = s;
      nfail += one(&c, &r);
    }
    printf("%d of %llu seeds failed\n", nfail, to - from + 1);
    return nfail != 0;
  }
  if (!have_seed) usage();
  failed = one(&c, &r);
  return failed;
}
