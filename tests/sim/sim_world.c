/* SPDX-License-Identifier: Apache-2.0 */
/*
** The world's weeks (sim.h, docs/simulator.md): a terminal that captures
** payments (the payout module, through the public API, as an embedder
** registers it), runs as a service on a loop or as a sync script (ob_run
** until idle, then sleep), and relays its outbox to the simulated SQS
** through the real relay, SQS client and HTTP client. Faults come from the
** seed: wall clock jumps, partitions, lossy and slow links, 5xx, a disk
** that fills (an 8 MiB filesystem on some seeds), I/O errors, kills with or
** without power loss. The last hour is healed: no faults, space freed, no
** jumps; by the end everything acknowledged must be done.
**
** The driver: the next world event is a timer on the world's loop; the
** loop runs (simulated time skips to each libuv timer, sim_clock.c) until
** that timer stops it, then the event is applied from outside any
** callback, the invariants are checked, and so on.
*/
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include "oncebox_payout.h"
#include "tests/sim/sim.h"

#define MIN_MS 60000ll
#define HOUR_MS 3600000ll
#define DAY_MS 86400000ll
#define HEAL_MS HOUR_MS
#define POLL_MS (5 * MIN_MS)  /* the engine's poll interval: its idle horizon */
#define QUEUE_URL "https://sqs.eu-west-1.amazonaws.com/000000000000/terminal-events"
#define SQS_HOST "sqs.eu-west-1.amazonaws.com"
/* 2026-12-01T08:00:00Z: the terminal's first day. */
#define START_WALL_MS 1796112000000ll
#define RTC_RESET_MS 946684800000ll  /* 2000-01-01T00:00:00Z */
#define MAX_RETRY 64

enum { EV_PAY, EV_CLOCK, EV_NET, EV_DISK, EV_KILL, EV_RESTART, EV_SYNC,
       EV_OPERATOR, EV_HEAL, EV_END, EV_N };

typedef struct world_s {
  sim_config_t cfg;
  sim_report_t* rep;
  sim_rng_t rng;
  uv_loop_t loop;
  uv_timer_t stop;
  ob_engine_t* e;
  sim_sqs_t* sqs;
  sim_oracle_t* oracle;
  char dir[256];
  char db[300];
  int64_t max_db_bytes;
  int64_t t0, end;
  int64_t next[EV_N];
  int healed;
  int run_stopped;   /* 1: idle too long, 2: spinning */
  int run_waits;
  int up;
  char retry_pay[MAX_RETRY][37];
  char retry_msg[MAX_RETRY][37];
  char retry_body[MAX_RETRY][256];
  int64_t retry_delay[MAX_RETRY];
  int nretry;
} world_t;

static int64_t now(void) { return sim_mono_ms(); }

static int64_t between(world_t* w, int64_t lo, int64_t hi) {
  return lo + (int64_t)sim_rng_below(&w->rng, (uint64_t)(hi - lo + 1));
}

static void uuid4(world_t* w, char out[37]) {
  uint64_t a = sim_rng_next(&w->rng), b = sim_rng_next(&w->rng);
  snprintf(out, 37, "%08llx-%04llx-4%03llx-%04llx-%012llx",
           (unsigned long long)(a >> 32), (unsigned long long)((a >> 16) & 0xffff),
           (unsigned long long)(a & 0xfff),
           (unsigned long long)(0x8000 | ((b >> 48) & 0x3fff)),
           (unsigned long long)(b & 0xffffffffffffull));
}

static void on_log(void* ctx, ob_log_level_t level, const char* msg) {
  world_t* w = ctx;
  if (w->cfg.verbose && level >= OB_LOG_WARN) printf("log %s\n", msg);
}

/* ---- the terminal ----------------------------------------------------------- */

static int open_terminal(world_t* w) {
  ob_options_t o;
  ob_relay_options_t r;
  char err[512];
  int rc;
  ob_options_init(&o);
  o.db_path = w->db;
  o.max_db_bytes = w->max_db_bytes;
  o.poll_interval_ms = (int)POLL_MS;  /* one process writes: little to poll */
  o.log = on_log;
  o.log_ctx = w;
  o.log_level = OB_LOG_WARN;
  rc = ob_open(&w->e, &o, err, sizeof err);
  if (rc < 0) {
    sim_trace("open failed %s: %s", ob_err_name(rc), err);
    w->e = NULL;
    return rc;
  }
  if ((rc = ob_register_payout(w->e)) < 0) goto fail;
  ob_relay_options_init(&r);
  r.queue_url = QUEUE_URL;
  r.source = "urn:oncebox:sim-terminal";
  rc = ob_relay_enable(w->e, &r, err, sizeof err);
  if (rc < 0) {
    fprintf(stderr, "ob-sim: relay: %s\n", err);
    goto fail;
  }
  if (w->rep->mode == 0 && (rc = ob_attach(w->e, &w->loop)) < 0) goto fail;
  w->up = 1;
  sim_trace("terminal up");
  return 0;
fail:
  sim_trace("terminal setup failed %s", ob_err_name(rc));
  ob_close(w->e);
  w->e = NULL;
  return rc;
}

static void close_terminal(world_t* w) {
  ob_close(w->e);
  w->e = NULL;
  w->up = 0;
}

/* ---- work ---------------------------------------------------------------------- */

static int enqueue(world_t* w, const char* pay, const char* msg,
                   const char* body, int64_t delay) {
  ob_envelope_t env;
  int rc;
  if (!w->up) return OB_ESTATE;
  memset(&env, 0, sizeof env);
  env.id = msg;
  env.type = OB_PAYOUT_MESSAGE_TYPE;
  env.body = body;
  env.body_len = strlen(body);
  env.delay_ms = delay;
  rc = ob_enqueue(w->e, &env);
  sim_trace("enqueue %s %s delay %lld: %s", pay, msg, (long long)delay,
            ob_err_name(rc));
  if (rc == 0) {
    sim_oracle_acked(w->oracle, pay, msg);
    w->rep->acked++;
  } else {
    w->rep->refused_enqueues++;
  }
  return rc;
}

/* A payment at the till. Refused ones (disk full, the service down) are
** kept by the till and offered again with the next payment. */
static void ev_pay(world_t* w) {
  char pay[37], msg[37], mer[37], body[256];
  int64_t delay = 0;
  int n = w->nretry, refused = 0;
  /* The till closes 45 minutes before the end: a sync script runs at least
  ** every 30 minutes, so what it took is due before the final checks. */
  if (now() > w->end - 45 * MIN_MS) {
    w->next[EV_PAY] = INT64_MAX;
    return;
  }
  w->nretry = 0;
  /* The till offers what it kept, oldest first, and stops at the first
  ** refusal (it would be refused again at once). */
  for (int i = 0; i < n; i++) {
    if ((refused || enqueue(w, w->retry_pay[i], w->retry_msg[i],
                            w->retry_body[i], w->retry_delay[i]) != 0) &&
        w->nretry < MAX_RETRY) {
      int k = w->nretry++;
      refused = 1;
      memmove(w->retry_pay[k], w->retry_pay[i], 37);
      memmove(w->retry_msg[k], w->retry_msg[i], 37);
      memmove(w->retry_body[k], w->retry_body[i], 256);
      w->retry_delay[k] = w->retry_delay[i];
    }
  }
  uuid4(w, pay);
  uuid4(w, msg);
  uuid4(w, mer);
  snprintf(body, sizeof body,
           "{\"paymentId\":\"%s\",\"merchantId\":\"%s\","
           "\"amountInMinorUnits\":%llu,\"currency\":\"EUR\"}",
           pay, mer, (unsigned long long)between(w, 100, 99999));
  /* A few payments are scheduled for later (a deferred capture). */
  if (now() < w->end - 4 * HOUR_MS && sim_rng_chance(&w->rng, 30))
    delay = between(w, 10 * MIN_MS, 2 * HOUR_MS);
  w->rep->payments++;
  if ((refused || enqueue(w, pay, msg, body, delay) != 0) &&
      w->nretry < MAX_RETRY) {
    int k = w->nretry++;
    memcpy(w->retry_pay[k], pay, 37);
    memcpy(w->retry_msg[k], msg, 37);
    memcpy(w->retry_body[k], body, 256);
    w->retry_delay[k] = delay;
  } else if (w->up && sim_rng_chance(&w->rng, 10)) {
    /* The till sends the same message again (a retry after a timeout):
    ** a duplicate the dedup guard must absorb. */
    enqueue(w, pay, msg, body, delay);
  }
  w->next[EV_PAY] = now() + between(w, 10000, 8 * MIN_MS);
}

/* ---- faults --------------------------------------------------------------------- */

static void ev_clock(world_t* w) {
  int64_t wall = sim_wall_ms(), d = 0;
  int k = (int)sim_rng_below(&w->rng, 5);
  switch (k) {
    case 0: d = RTC_RESET_MS + between(w, 0, HOUR_MS) - wall; break;
    case 1: d = -DAY_MS; break;
    case 2: d = between(w, -120000, 120000); break;
    case 3: d = between(w, HOUR_MS, 3 * DAY_MS); break;
    default: d = sim_true_ms() - wall; break;  /* NTP puts it right */
  }
  sim_clock_jump_ms(d);
  w->rep->clock_jumps[k]++;
  sim_trace("clock %d jump %lld ms -> wall %lld", k, (long long)d,
            (long long)sim_wall_ms());
  w->next[EV_CLOCK] = now() + between(w, 2 * HOUR_MS, 2 * DAY_MS);
}

static void ev_net(world_t* w) {
  int k = (int)sim_rng_below(&w->rng, 4);
  sim_net_set_partition(0);
  sim_net_set_latency(5, 80);
  sim_net_set_loss(0, 0);
  if (k == 0) {
    sim_net_set_partition(1);
    w->rep->partitions++;
  } else if (k == 1) {
    /* bad weather: slow, lossy, failing */
    sim_net_set_latency(between(w, 50, 2000), between(w, 2000, 45000));
    sim_net_set_loss((unsigned)between(w, 0, 300), (unsigned)between(w, 0, 300));
    w->rep->weather++;
  }
  sim_trace("net k %d", k);
  w->next[EV_NET] = now() + between(w, MIN_MS, 12 * HOUR_MS);
}

static void ev_disk(world_t* w) {
  int k = (int)sim_rng_below(&w->rng, 3);
  int64_t fs = w->rep->fs_bytes;
  sim_vfs_set_eio(0);
  if (k == 0) {
    /* someone else fills the filesystem (logs, a download) */
    int64_t used = sim_vfs_used();
    int64_t ext = fs - used - between(w, 0, fs / 16);
    sim_vfs_set_external(ext > 0 ? ext : 0);
    w->rep->disk_fills++;
  } else if (k == 1) {
    sim_vfs_set_external(0);
  } else {
    sim_vfs_set_eio((unsigned)between(w, 5, 100));
    w->rep->eio_bursts++;
  }
  sim_trace("disk k %d used %lld free %lld", k, (long long)sim_vfs_used(),
            (long long)sim_vfs_free());
  /* an I/O error burst is short: the next disk event ends it */
  w->next[EV_DISK] = now() + (k == 2 ? between(w, MIN_MS, 30 * MIN_MS)
                                     : between(w, 10 * MIN_MS, DAY_MS));
}

static void ev_kill(world_t* w) {
  int power = (int)sim_rng_below(&w->rng, 2);
  w->next[EV_KILL] = now() + between(w, 6 * HOUR_MS, 3 * DAY_MS);
  if (!w->up) return;
  sim_trace("kill power %d", power);
  sim_vfs_kill();
  close_terminal(w);
  sim_vfs_revive(power);
  w->rep->kills++;
  if (power) w->rep->power_losses++;
  w->next[EV_RESTART] = now() + between(w, 1000, 20 * MIN_MS);
}

static void ev_restart(world_t* w) {
  w->next[EV_RESTART] = INT64_MAX;
  if (w->up) return;
  w->rep->restarts++;
  if (open_terminal(w) < 0) w->next[EV_RESTART] = now() + MIN_MS;
}

/* The sync script: "run until idle, then sleep". */
/* In simulated time, during an until-idle run: a run that sits doing
** nothing (no request, no answer, no write) for longer than the engine's
** poll interval (5 minutes here, the default idle horizon) and a minute
** waits for work that is not due. It is stopped there, so the world goes
** on. Waking often is allowed (work due within the horizon is waited
** for), but SPIN_WAITS sleeps in one run cost real time here and stop it. */
#define IDLE_RUN_MS (POLL_MS + MIN_MS)
#define SPIN_WAITS 200000

static void sync_watch(void* arg) {
  world_t* w = arg;
  if (w->run_stopped) return;
  if (sim_activity_idle_ms() > IDLE_RUN_MS) w->run_stopped = 1;
  else if (++w->run_waits > SPIN_WAITS) w->run_stopped = 2;
  if (w->run_stopped) ob_stop(w->e);
}

static void ev_sync(world_t* w) {
  int64_t t = now(), gap;
  int rc;
  w->next[EV_SYNC] = INT64_MAX;
  if (w->up) {
    sim_activity_gap_reset();
    w->run_stopped = 0;
    w->run_waits = 0;
    sim_clock_watch(sync_watch, w);
    rc = ob_run(w->e, OB_RUN_UNTIL_IDLE, 0);
    sim_clock_watch(NULL, NULL);
    gap = sim_activity_gap_reset();
    w->rep->sync_runs++;
    sim_trace("sync run %s in %lld ms, longest idle %lld ms%s",
              rc == 1 ? "stalled" : ob_err_name(rc), (long long)(now() - t),
              (long long)gap, w->run_stopped ? ", stopped by the world" : "");
    /* Busy all along (a slow link, say) but waking at 50 Hz: not wrong,
    ** only costly here; counted in the report. */
    if (w->run_stopped == 2) w->rep->spin_stops++;
    else if (w->run_stopped || gap > IDLE_RUN_MS)
      sim_oracle_violation(w->oracle, "until-idle-run-waits",
                           "ob_run(OB_RUN_UNTIL_IDLE) sat idle for %lld "
                           "simulated minutes instead of returning%s",
                           (long long)(gap / MIN_MS),
                           w->run_stopped ? " (ob_stop ended it)" : "");
  }
  w->next[EV_SYNC] = now() + between(w, 5 * MIN_MS, 30 * MIN_MS);
}

/* The operator looks at the failure store: removes what can never succeed,
** retries the rest. */
static void ev_operator(world_t* w) {
  w->next[EV_OPERATOR] = now() + between(w, 12 * HOUR_MS, 2 * DAY_MS);
  if (!w->up) return;
  int n = ob_failed_count(w->e, NULL);
  if (n > 0) {
    int r = ob_failed_retry_filter(w->e, NULL, 0, NULL, NULL);
    sim_trace("operator: %d failed, retried %d", n, r);
    w->rep->operator_actions++;
  }
}

static void ev_heal(world_t* w) {
  w->healed = 1;
  sim_net_set_partition(0);
  sim_net_set_latency(5, 80);
  sim_net_set_loss(0, 0);
  sim_vfs_set_external(0);
  sim_vfs_set_eio(0);
  w->next[EV_HEAL] = INT64_MAX;
  w->next[EV_CLOCK] = w->next[EV_NET] = w->next[EV_DISK] = INT64_MAX;
  w->next[EV_KILL] = INT64_MAX;
  if (!w->up) w->next[EV_RESTART] = now();
  {
    char files[256];
    sim_vfs_describe(files, sizeof files);
    sim_trace("heal: db files %lld bytes (%s), free %lld",
              (long long)sim_vfs_used(), files, (long long)sim_vfs_free());
  }
}

/* ---- the driver ------------------------------------------------------------------ */

static void on_stop(uv_timer_t* t) { uv_stop(t->loop); }

static void schedule_first(world_t* w) {
  int64_t t = now();
  w->next[EV_PAY] = t + between(w, 1000, 5 * MIN_MS);
  w->next[EV_CLOCK] = t + between(w, HOUR_MS, 2 * DAY_MS);
  w->next[EV_NET] = t + between(w, MIN_MS, 12 * HOUR_MS);
  w->next[EV_DISK] = t + between(w, HOUR_MS, 2 * DAY_MS);
  w->next[EV_KILL] = t + between(w, 2 * HOUR_MS, 3 * DAY_MS);
  w->next[EV_RESTART] = INT64_MAX;
  w->next[EV_SYNC] = w->rep->mode == 1 ? t + MIN_MS : INT64_MAX;
  w->next[EV_OPERATOR] = t + between(w, 12 * HOUR_MS, 2 * DAY_MS);
  w->next[EV_HEAL] = w->end - HEAL_MS;
  w->next[EV_END] = w->end;
}

static void run_loop_until(world_t* w, int64_t at) {
  int64_t t = now();
  if (at <= t) return;
  uv_timer_start(&w->stop, on_stop, (uint64_t)(at - t), 0);
  while (now() < at) {
    uv_run(&w->loop, UV_RUN_DEFAULT);
    if (now() < at && !uv_is_active((uv_handle_t*)&w->stop))
      uv_timer_start(&w->stop, on_stop, (uint64_t)(at - now()), 0);
  }
  uv_timer_stop(&w->stop);
}

/* Threads would make the run depend on the scheduler (libuv's pool serves
** uv_getaddrinfo and uv_fs_*): the world must stay on one thread. */
static int threads(void) {
  DIR* d = opendir("/proc/self/task");
  struct dirent* de;
  int n = 0;
  if (d == NULL) return 1;
  while ((de = readdir(d)) != NULL)
    if (de->d_name[0] != '.') n++;
  closedir(d);
  return n;
}

static void setup_env(world_t* w) {
  char path[320];
  static const char* const unset[] = {
      "AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_ENDPOINT_URL",
      "AWS_ENDPOINT_URL_SQS", "AWS_SESSION_TOKEN", "AWS_CA_BUNDLE",
      "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "HTTP_PROXY",
      "http_proxy", "ONCEBOX_SQS_ALLOW_HTTP", "AWS_ROLE_ARN",
      "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
      "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"};
  for (size_t i = 0; i < sizeof unset / sizeof unset[0]; i++) unsetenv(unset[i]);
  setenv("AWS_ACCESS_KEY_ID", "AKIASIMULATEDTERMINAL", 1);
  setenv("AWS_SECRET_ACCESS_KEY", "simulated/secret/key/of/the/terminal", 1);
  setenv("AWS_REGION", "eu-west-1", 1);
  setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
  snprintf(path, sizeof path, "%s/aws-config", w->dir);
  setenv("AWS_CONFIG_FILE", path, 1);
  snprintf(path, sizeof path, "%s/aws-credentials", w->dir);
  setenv("AWS_SHARED_CREDENTIALS_FILE", path, 1);
}

int sim_run(const sim_config_t* c, sim_report_t* rep) {
  world_t* w = calloc(1, sizeof *w);
  int result;
  if (w == NULL) return -1;
  memset(rep, 0, sizeof *rep);
  w->cfg = *c;
  w->rep = rep;
  sim_rng_init(&w->rng, c->seed, 1);
  sim_clock_init(c->seed, START_WALL_MS);
  sim_trace_verbose = c->verbose > 1;
  rep->days = c->days;
  rep->mode = c->mode >= 0 ? c->mode : (int)sim_rng_below(&w->rng, 2);
  rep->fs_bytes = c->fs_bytes > 0 ? c->fs_bytes
                  : sim_rng_chance(&w->rng, 250) ? 8ll << 20
                                                 : 1ll << 30;
  {
    int cap = c->cap >= 0 ? c->cap : (int)sim_rng_below(&w->rng, 2);
    w->max_db_bytes = cap ? rep->fs_bytes / 2 : 0;
    rep->max_db_bytes = w->max_db_bytes;
  }
  snprintf(w->dir, sizeof w->dir, "/tmp/ob-sim-XXXXXX");
  if (mkdtemp(w->dir) == NULL) {
    free(w);
    return -1;
  }
  snprintf(w->db, sizeof w->db, "%s/terminal.db", w->dir);
  setup_env(w);
  sim_vfs_install(w->dir, c->seed);
  sim_vfs_set_size(rep->fs_bytes);
  sim_net_seed(c->seed);
  sim_net_install();
  w->sqs = sim_sqs_new(c->seed);
  w->oracle = sim_oracle_new();
  sim_net_route(SQS_HOST, sim_sqs_service, w->sqs);
  uv_loop_init(&w->loop);
  uv_timer_init(&w->loop, &w->stop);
  sim_trace("world seed %llu mode %d fs %lld cap %lld",
            (unsigned long long)c->seed, rep->mode, (long long)rep->fs_bytes,
            (long long)w->max_db_bytes);
  w->t0 = now();
  w->end = w->t0 + (int64_t)c->days * DAY_MS;
  schedule_first(w);
  if (open_terminal(w) < 0) w->next[EV_RESTART] = now() + MIN_MS;
  for (;;) {
    int k = 0;
    for (int i = 1; i < EV_N; i++)
      if (w->next[i] < w->next[k]) k = i;
    run_loop_until(w, w->next[k]);
    if (k == EV_END) break;
    switch (k) {
      case EV_PAY: ev_pay(w); break;
      case EV_CLOCK: ev_clock(w); break;
      case EV_NET: ev_net(w); break;
      case EV_DISK: ev_disk(w); break;
      case EV_KILL: ev_kill(w); break;
      case EV_RESTART: ev_restart(w); break;
      case EV_SYNC: ev_sync(w); break;
      case EV_OPERATOR: ev_operator(w); break;
      case EV_HEAL: ev_heal(w); break;
      default: break;
    }
    sim_oracle_scan_sqs(w->oracle, w->sqs);
    if (w->up) sim_oracle_check_step(w->oracle, w->e);
  }
  sim_oracle_scan_sqs(w->oracle, w->sqs);
  {
    sim_disk_stats_t d;
    sim_vfs_stats(&d);
    sim_trace("end: db files %lld bytes, free %lld, writes refused (full) %lld",
              (long long)sim_vfs_used(), (long long)sim_vfs_free(),
              (long long)d.full);
  }
  if (w->up) sim_oracle_check_final(w->oracle, w->e);
  else
    sim_oracle_violation(w->oracle, "liveness-terminal-down",
                         "the terminal could not be started after the world "
                         "healed");
  if (threads() != 1)
    sim_oracle_violation(w->oracle, "not-single-threaded",
                         "%d threads: something used libuv's thread pool",
                         threads());
  if (sim_clock_stuck_waits() > 0)
    sim_oracle_violation(w->oracle, "loop-blocked-forever",
                         "%lld waits with no timer and nothing to wake them",
                         (long long)sim_clock_stuck_waits());
  if (w->up) close_terminal(w);
  uv_close((uv_handle_t*)&w->stop, NULL);
  uv_run(&w->loop, UV_RUN_DEFAULT);
  uv_loop_close(&w->loop);
  rep->violations = sim_oracle_violations(w->oracle);
  if (rep->violations > 0) sim_oracle_print(w->oracle);
  sim_net_stats(&rep->net);
  sim_vfs_stats(&rep->disk);
  rep->sqs_messages = (int64_t)sim_sqs_sent(w->sqs, NULL, NULL);
  rep->hash = sim_trace_hash();
  rep->trace_events = sim_trace_count();
  result = rep->violations;
  sim_net_uninstall();
  sim_oracle_free(w->oracle);
  sim_sqs_free(w->sqs);
  sim_vfs_reset();
  unlink(w->db);
  rmdir(w->dir);
  free(w);
  return result;
}
