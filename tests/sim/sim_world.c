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

#include "oncebox_charge.h"
#include "oncebox_payout.h"
#include "tests/sim/sim.h"
#include "tests/sim/sim_provider.h"

#define MIN_MS 60000ll
#define HOUR_MS 3600000ll
#define DAY_MS 86400000ll
#define HEAL_MS HOUR_MS
#define POLL_MS (5 * MIN_MS)  /* the engine's poll interval: its idle horizon */
/* The relay's queue (FIFO on a quarter of the seeds) and the inbound one
** the head office fills. */
#define OUT_QUEUE "terminal-events"
#define IN_QUEUE "head-office-payments"
#define IN_QUEUE_VISIBILITY_S 30
/* 2026-12-01T08:00:00Z: the terminal's first day. */
#define START_WALL_MS 1796112000000ll
#define RTC_RESET_MS 946684800000ll  /* 2000-01-01T00:00:00Z */
#define MAX_RETRY 64

enum { EV_PAY, EV_CHARGE, EV_CLOCK, EV_NET, EV_DISK, EV_KILL, EV_RESTART, EV_SYNC,
       EV_OPERATOR, EV_INBOUND, EV_TOTALS, EV_LATENCY, EV_HEAL, EV_END, EV_N };

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
  /* ChargeOrder: the orders the shop sent, the provider, what the world
  ** made possible. */
  sim_provider_t* psp;
  struct order_s {
    char id[37];
    char msg[37];
    char body[160];
    int acked;
  }* orders;
  size_t norders, orders_cap;
  int psp_twice_seen;     /* the safety violation is recorded once */
  int expiry_possible;    /* a key may have outlived the provider's memory */
  int err_after_ever;     /* the provider saved a 5xx for a key */
  int64_t partition_since, last_operator;
  /* The SQS consumer's side: the head office's queue; the relay's queue
  ** (FIFO on some seeds, with till totals: several events per group). */
  sim_office_t* office;
  char out_queue[64];
  int64_t totals_seq;
  /* The latency invariant; epoch counts what excuses a late payment. */
  sim_latency_t* latency;
  uint64_t epoch;
  int64_t until;        /* the loop runs until this time (run_loop_until) */
  /* A fiscal till on its own small partition (drawn from its own stream,
  ** so the other worlds are unchanged): it journals every receipt. */
  sim_rng_t jrng;
  int journal;
} world_t;

static int64_t now(void) { return sim_mono_ms(); }

/* What excuses a slow payment: kills and restarts, disk fills and error
** bursts (w->epoch), and every write the disk refused. */
static uint64_t health_epoch(const world_t* w) {
  sim_disk_stats_t d;
  sim_vfs_stats(&d);
  return w->epoch + (uint64_t)d.full + (uint64_t)d.eio;
}

static int64_t between(world_t* w, int64_t lo, int64_t hi) {
  return lo + (int64_t)sim_rng_below(&w->rng, (uint64_t)(hi - lo + 1));
}

static void uuid_of(sim_rng_t* r, char out[37]) {
  uint64_t a = sim_rng_next(r), b = sim_rng_next(r);
  snprintf(out, 37, "%08llx-%04llx-4%03llx-%04llx-%012llx",
           (unsigned long long)(a >> 32), (unsigned long long)((a >> 16) & 0xffff),
           (unsigned long long)(a & 0xfff),
           (unsigned long long)(0x8000 | ((b >> 48) & 0x3fff)),
           (unsigned long long)(b & 0xffffffffffffull));
}

static void uuid4(world_t* w, char out[37]) { uuid_of(&w->rng, out); }

static void on_log(void* ctx, ob_log_level_t level, const char* msg) {
  world_t* w = ctx;
  if (w->cfg.verbose && level >= OB_LOG_WARN) printf("log %s\n", msg);
}

static void on_stop_cb(uv_timer_t* t) { uv_stop(t->loop); }

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
  {
    /* The payment provider, as an embedder enables it: over HTTPS on the
    ** attached loop (service) or inside ob_run (script). */
    ob_provider_options_t po;
    ob_provider_options_init(&po);
    po.name = OB_CHARGE_PROVIDER;
    po.base_url = SIM_PROVIDER_BASE_URL;
    po.idempotency_keys = 1;
    po.lookup_path = NULL;  /* Stripe has no lookup by idempotency key */
    po.reference_lookup_path = SIM_PROVIDER_SEARCH_PATH;
    rc = ob_provider_enable(w->e, &po, err, sizeof err);
    if (rc < 0) {
      fprintf(stderr, "ob-sim: provider: %s\n", err);
      goto fail;
    }
    if ((rc = ob_register_charge_order(w->e)) < 0) goto fail;
  }
  {
    char url[160];
    ob_consumer_options_t co;
    ob_relay_options_init(&r);
    snprintf(url, sizeof url, SIM_SQS_URL_PREFIX "%s", w->out_queue);
    r.queue_url = url;
    r.source = "urn:oncebox:sim-terminal";
    /* On a FIFO queue the relay keeps each aggregate's order. */
    r.ordered = w->rep->fifo;
    rc = ob_relay_enable(w->e, &r, err, sizeof err);
    if (rc < 0) {
      fprintf(stderr, "ob-sim: relay: %s\n", err);
      goto fail;
    }
    /* The head office's payments, as `oncebox consume` takes them. */
    ob_consumer_options_init(&co);
    co.queue_url = SIM_SQS_URL_PREFIX IN_QUEUE;
    co.prefetch = w->rep->prefetch;
    rc = ob_consumer_enable(w->e, &co, err, sizeof err);
    if (rc < 0) {
      fprintf(stderr, "ob-sim: consumer: %s\n", err);
      goto fail;
    }
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
    if (w->rep->mode == 0 && delay == 0)
      sim_latency_accepted(w->latency, pay, health_epoch(w));
  } else {
    w->rep->refused_enqueues++;
  }
  return rc;
}

/* The e-journal of a fiscal till: each receipt as printed (20 to 200
** lines, 1 to 11 KiB) written with the payment and exported to the head
** office as an event. Large and transient: published, then given back;
** offline it is what fills the database first, while the disk itself is
** healthy. A refused one stays in the till's own journal. */
#define RECEIPT_MAX 12288
typedef struct {
  char body[RECEIPT_MAX];
  size_t n;
  const char* pay;
} receipt_t;

static int receipt_fn(ob_tx_t* tx, void* arg) {
  receipt_t* r = arg;
  return ob_tx_emit(tx, "ReceiptJournaled", r->pay, r->body, r->n, NULL) < 0;
}

static void journal_receipt(world_t* w, const char* pay) {
  static receipt_t r;
  int lines = 20 + (int)sim_rng_below(&w->jrng, 181), rc;
  r.pay = pay;
  r.n = (size_t)snprintf(r.body, sizeof r.body,
                         "{\"paymentId\":\"%s\",\"lines\":[", pay);
  for (int i = 0; i < lines && r.n < sizeof r.body - 96; i++)
    r.n += (size_t)snprintf(
        r.body + r.n, sizeof r.body - r.n,
        "%s{\"sku\":\"%08llu\",\"qty\":%llu,\"price\":%llu}", i ? "," : "",
        (unsigned long long)sim_rng_below(&w->jrng, 100000000),
        1 + (unsigned long long)sim_rng_below(&w->jrng, 9),
        (unsigned long long)sim_rng_below(&w->jrng, 99999));
  r.n += (size_t)snprintf(r.body + r.n, sizeof r.body - r.n, "]}");
  rc = ob_write(w->e, receipt_fn, &r);
  if (rc == 0) w->rep->receipts++;
  sim_trace("receipt %s %zu bytes: %s", pay, r.n, ob_err_name(rc));
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
  ** refusal (it would be refused again at once). A deferred capture kept
  ** until late is offered due no later than 2 hours before the end, as a
  ** new one would be (seed 16 under ASan offered one due after the end). */
  for (int i = 0; i < n; i++) {
    int64_t last_due = w->end - 2 * HOUR_MS;
    if (w->retry_delay[i] > 0 && now() + w->retry_delay[i] > last_due)
      w->retry_delay[i] = last_due > now() ? last_due - now() : 0;
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
  if (w->journal && w->up) journal_receipt(w, pay);
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

/* An order to charge (ChargeOrder): a new one, sometimes sent twice with
** the same message id (a retry after a timeout), sometimes a second
** message id for an order already sent (a redelivery by another path). A
** refused enqueue is dropped: the shop was told no. */
static int enqueue_charge(world_t* w, struct order_s* o, const char* msg) {
  ob_envelope_t env;
  int rc;
  if (!w->up) return OB_ESTATE;
  memset(&env, 0, sizeof env);
  env.id = msg;
  env.type = OB_CHARGE_MESSAGE_TYPE;
  env.body = o->body;
  env.body_len = strlen(o->body);
  rc = ob_enqueue(w->e, &env);
  sim_trace("charge enqueue %s %s: %s", o->id, msg, ob_err_name(rc));
  if (rc == 0) {
    if (!o->acked) w->rep->charge_acked++;
    o->acked = 1;
  }
  return rc;
}

static void ev_charge(world_t* w) {
  struct order_s* o;
  char msg[37];
  if (now() > w->end - 45 * MIN_MS) {
    w->next[EV_CHARGE] = INT64_MAX;
    return;
  }
  /* --charge-gap N: a quieter order stream (3 to N minutes), which found
  ** the executor's spin of a due probe with nothing to take. */
  w->next[EV_CHARGE] = now() + (w->cfg.charge_gap_max_min > 0
                                    ? between(w, 3 * MIN_MS,
                                              w->cfg.charge_gap_max_min * MIN_MS)
                                    : between(w, 2 * MIN_MS, 24 * MIN_MS));
  if (w->norders > 0 && sim_rng_chance(&w->rng, 40)) {
    size_t back = (size_t)sim_rng_below(&w->rng, w->norders < 40 ? w->norders : 40);
    o = &w->orders[w->norders - 1 - back];
    uuid4(w, msg);
    w->rep->charge_second_msgs++;
    enqueue_charge(w, o, msg);
    return;
  }
  if (w->norders == w->orders_cap) {
    size_t cap = w->orders_cap ? w->orders_cap * 2 : 256;
    struct order_s* n = realloc(w->orders, cap * sizeof *n);
    if (n == NULL) abort();
    w->orders = n;
    w->orders_cap = cap;
  }
  o = &w->orders[w->norders++];
  memset(o, 0, sizeof *o);
  uuid4(w, o->id);
  uuid4(w, o->msg);
  snprintf(o->body, sizeof o->body,
           "{\"orderId\":\"%s\",\"amountInMinorUnits\":%llu,"
           "\"currency\":\"EUR\"}",
           o->id, (unsigned long long)between(w, 100, 99999));
  w->rep->charge_orders++;
  if (enqueue_charge(w, o, o->msg) == 0 && sim_rng_chance(&w->rng, 20)) {
    w->rep->charge_dup_msgs++;
    enqueue_charge(w, o, o->msg);
  }
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
  /* A wall clock a day ahead ages every idempotency key by as much. */
  if (d > 20 * HOUR_MS) w->expiry_possible = 1;
  w->rep->clock_jumps[k]++;
  sim_trace("clock %d jump %lld ms -> wall %lld", k, (long long)d,
            (long long)sim_wall_ms());
  w->next[EV_CLOCK] = now() + between(w, 2 * HOUR_MS, 2 * DAY_MS);
}

static void ev_net(world_t* w) {
  int k = (int)sim_rng_below(&w->rng, 4);
  unsigned pb = 0, pa = 0;
  int64_t inflight = 2000;
  sim_net_set_partition(0);
  sim_net_set_latency(5, 80);
  sim_net_set_loss(0, 0);
  if (k == 0) {
    sim_net_set_partition(1);
    w->rep->partitions++;
    if (w->partition_since < 0) w->partition_since = now();
  } else if (k == 1) {
    /* bad weather: slow, lossy, failing; the provider too: errors before
    ** and after acting, slow charges (a longer in-flight window) */
    sim_net_set_latency(between(w, 50, 2000), between(w, 2000, 45000));
    sim_net_set_loss((unsigned)between(w, 0, 300), (unsigned)between(w, 0, 300));
    pb = (unsigned)between(w, 0, 150);
    pa = (unsigned)between(w, 0, 20);
    inflight = between(w, 2000, 90000);
    w->rep->weather++;
  } else if (k == 2 && sim_rng_chance(&w->rng, 300)) {
    /* the provider alone has a bad hour */
    pb = (unsigned)between(w, 0, 50);
    pa = (unsigned)between(w, 0, 5);
  }
  if (k != 0 && w->partition_since >= 0) {
    if (now() - w->partition_since > 20 * HOUR_MS) w->expiry_possible = 1;
    w->partition_since = -1;
  }
  sim_provider_set_faults(w->psp, pb, pa);
  sim_provider_set_in_flight(w->psp, inflight);
  /* SQS's own at-least-once: rarer in good weather. */
  sim_sqs_set_faults(w->sqs, k == 1 ? 20 : 5, k == 1 ? 20 : 5);
  if (pa > 0) w->err_after_ever = 1;
  if (pb > 0 || pa > 0 || inflight > 2000) w->rep->psp_weather++;
  sim_trace("net k %d psp %u %u %lld", k, pb, pa, (long long)inflight);
  w->next[EV_NET] = now() + between(w, MIN_MS, 12 * HOUR_MS);
  /* The fiscal till's line is sometimes down for a day or more (a cut
  ** cable, a weekend before the ISP comes). */
  if (k == 0 && w->journal && sim_rng_chance(&w->jrng, 250))
    w->next[EV_NET] = now() + 12 * HOUR_MS +
                      (int64_t)sim_rng_below(&w->jrng, (uint64_t)(36 * HOUR_MS));
}

static void ev_disk(world_t* w) {
  int k = (int)sim_rng_below(&w->rng, 3);
  int64_t fs = w->rep->fs_bytes;
  sim_vfs_set_eio(0);
  if (k == 2 || (k == 0 && !w->journal)) w->epoch++;
  if (k == 0 && w->journal) {
    /* the fiscal till's partition is the database's alone */
  } else if (k == 0) {
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
  w->epoch++;
  sim_vfs_kill();
  sim_net_set_dead(1);
  close_terminal(w);
  sim_net_set_dead(0);
  sim_vfs_revive(power);
  w->rep->kills++;
  if (power) w->rep->power_losses++;
  w->next[EV_RESTART] = now() + between(w, 1000, 20 * MIN_MS);
}

static void ev_restart(world_t* w) {
  w->next[EV_RESTART] = INT64_MAX;
  if (w->up) return;
  w->rep->restarts++;
  w->epoch++;
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

/* Effects parked for a person, by cause. */
typedef struct {
  world_t* w;
  const char* keys[64];
  char buf[64][48];
  size_t n, parked;
} parked_t;

static int parked_effect(void* arg, const ob_effect_t* ef) {
  parked_t* p = arg;
  if (ef->park_cause == NULL) return 0;
  p->parked++;
  /* a conflict (the provider holds two results) is a person's alone */
  if (strcmp(ef->park_cause, "conflict") == 0 || p->n == 64) return 0;
  snprintf(p->buf[p->n], sizeof p->buf[0], "%s", ef->key);
  p->keys[p->n] = p->buf[p->n];
  p->n++;
  return 0;
}

/* The operator looks at the failure store: removes what can never succeed,
** retries the rest; and at the effects parked for a person: reconciles
** all but conflicts (the engine then asks the provider again, by key or,
** once the key may be gone, by the order's reference). */
static void ev_operator(world_t* w) {
  parked_t p;
  int64_t since = now() - w->last_operator;
  w->next[EV_OPERATOR] = now() + between(w, 12 * HOUR_MS, 2 * DAY_MS);
  if (!w->up) return;
  w->last_operator = now();
  int n = ob_failed_count(w->e, NULL);
  if (n > 0) {
    int r = ob_failed_retry_filter(w->e, NULL, 0, NULL, NULL);
    sim_trace("operator: %d failed, retried %d", n, r);
    w->rep->operator_actions++;
  }
  memset(&p, 0, sizeof p);
  p.w = w;
  ob_effect_list(w->e, 0, NULL, parked_effect, &p);
  /* parked for more than 20 hours: its key may be forgotten by now */
  if (p.parked > 0 && since > 20 * HOUR_MS) w->expiry_possible = 1;
  if (p.n > 0) {
    int r = ob_effects_reconcile(w->e, p.keys, p.n);
    sim_trace("operator: %zu effects parked, reconciled %d", p.parked, r);
    w->rep->charge_reconciles++;
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
  sim_provider_set_faults(w->psp, 0, 0);
  sim_provider_set_in_flight(w->psp, 2000);
  sim_sqs_set_faults(w->sqs, 0, 0);
  if (w->partition_since >= 0 && now() - w->partition_since > 20 * HOUR_MS)
    w->expiry_possible = 1;
  w->partition_since = -1;
  /* the operator looks once more, early in the healed hour */
  w->next[EV_OPERATOR] = now() + 5 * MIN_MS;
  if (!w->up) w->next[EV_RESTART] = now();
  {
    char files[256];
    sim_vfs_describe(files, sizeof files);
    sim_trace("heal: db files %lld bytes (%s), free %lld",
              (long long)sim_vfs_used(), files, (long long)sim_vfs_free());
  }
}

/* The head office sends a payment to the inbound queue every 2 to 20
** minutes, until 45 minutes before the end (as the till). */
static void ev_inbound(world_t* w) {
  if (now() > w->end - 45 * MIN_MS) {
    w->next[EV_INBOUND] = INT64_MAX;
    return;
  }
  sim_office_send(w->office);
  w->next[EV_INBOUND] = now() + between(w, 2 * MIN_MS, 20 * MIN_MS);
}

/* The till's running totals (FIFO seeds): an event per till with a
** sequence number, several per group, which the relay (ordered) must
** publish in order. Each attempt takes a number, so a commit that failed
** with an I/O error yet was durable never repeats one. */
static int totals_fn(ob_tx_t* tx, void* arg) {
  world_t* w = arg;
  char till[16], body[96];
  snprintf(till, sizeof till, "till-%lld", (long long)(w->totals_seq % 3));
  snprintf(body, sizeof body, "{\"till\":\"%s\",\"seq\":%lld}", till,
           (long long)w->totals_seq);
  return ob_tx_emit(tx, "TillTotals", till, body, strlen(body), NULL) < 0;
}

static void ev_totals(world_t* w) {
  int rc;
  w->next[EV_TOTALS] = now() + between(w, 2 * MIN_MS, 40 * MIN_MS);
  if (now() > w->end - 45 * MIN_MS) w->next[EV_TOTALS] = INT64_MAX;
  if (!w->up) return;
  w->totals_seq++;
  rc = ob_write(w->e, totals_fn, w);
  if (rc == 0) w->rep->totals_written++;
  sim_trace("totals %lld: %s", (long long)w->totals_seq, ob_err_name(rc));
}

/* A kill soon after SQS handed the consumer messages: between the receive,
** the commit and the delete. */
static void on_received(void* arg, size_t n) {
  world_t* w = arg;
  int64_t at;
  (void)n;
  if (w->healed || !w->up || !sim_rng_chance(&w->rng, 10)) return;
  at = now() + between(w, 0, 400);
  if (at < w->next[EV_KILL]) {
    w->next[EV_KILL] = at;
    if (at < w->until) {
      w->until = at;
      uv_timer_start(&w->stop, on_stop_cb, (uint64_t)(at - now()), 0);
    }
  }
}

/* ---- the charge invariants ---------------------------------------------------- */

/* Safety, after every step: one charge at the provider per order. */
static void check_provider(world_t* w) {
  char why[512];
  if (w->psp_twice_seen) return;
  if (sim_provider_check(w->psp, why, sizeof why) > 0) {
    w->psp_twice_seen = 1;
    sim_oracle_violation(w->oracle, "provider-charged-an-order-twice", "%s",
                         why);
  }
}

typedef struct {
  char order[40];
  char charge[64];
  char cause[24];   /* the charge effect's park cause, or "" */
  int state;        /* the charge effect's state, 0: none */
} crow_t;

typedef struct {
  crow_t* r;
  size_t n, cap;
} crows_t;

static crow_t* crow_at(crows_t* c, const char* order, int add) {
  for (size_t i = 0; i < c->n; i++)
    if (strcmp(c->r[i].order, order) == 0) return &c->r[i];
  if (!add) return NULL;
  if (c->n == c->cap) {
    size_t cap = c->cap ? c->cap * 2 : 256;
    crow_t* n = realloc(c->r, cap * sizeof *n);
    if (n == NULL) abort();
    c->r = n;
    c->cap = cap;
  }
  memset(&c->r[c->n], 0, sizeof c->r[0]);
  snprintf(c->r[c->n].order, sizeof c->r[0].order, "%s", order);
  return &c->r[c->n++];
}

static int charge_row(void* arg, const ob_value_t* c, size_t n) {
  char order[64];
  crow_t* r;
  (void)n;
  snprintf(order, sizeof order, "%.*s", (int)c[0].n, (const char*)c[0].p);
  r = crow_at(arg, order, 1);
  snprintf(r->charge, sizeof r->charge, "%.*s", (int)c[1].n,
           (const char*)c[1].p);
  return 0;
}

static int charges_fn(ob_tx_t* tx, void* arg) {
  return ob_tx_exec(tx, "SELECT order_id, provider_charge_id FROM charge",
                    NULL, 0, charge_row, arg) < 0;
}

static int charge_effect(void* arg, const ob_effect_t* ef) {
  crow_t* r;
  if (strncmp(ef->key, "charge:", 7) != 0) return 0;
  r = crow_at(arg, ef->key + 7, 1);
  r->state = (int)ef->state;
  snprintf(r->cause, sizeof r->cause, "%s", ef->park_cause ? ef->park_cause : "");
  return 0;
}

/* At the end, after the world healed: every acknowledged order is charged
** once at the provider, and its charge row carries that charge's id. An
** effect parked for a person is counted, not a violation, when the world
** made it possible: key-expired and conflict only after a key could have
** outlived the provider's 24 hours (a wall clock a day ahead, a day
** offline, a day parked), replayed-error only after the provider saved a
** 5xx for a key. */
static void check_charges_final(world_t* w) {
  crows_t c = {NULL, 0, 0};
  sim_oracle_t* o = w->oracle;
  if (ob_read(w->e, charges_fn, &c) != 0)
    sim_oracle_violation(o, "final-read-failed", "charge: %s", ob_errmsg(w->e));
  ob_effect_list(w->e, 0, NULL, charge_effect, &c);
  for (size_t i = 0; i < w->norders; i++) {
    const struct order_s* od = &w->orders[i];
    const crow_t* r = crow_at(&c, od->id, 0);
    const char* first = sim_provider_first_charge(w->psp, od->id);
    int n = sim_provider_charges_of(w->psp, od->id);
    if (!od->acked) {
      if (n > 0)
        sim_oracle_violation(o, "charged-without-acknowledgement",
                             "order %s: refused, yet %d charges", od->id, n);
      continue;
    }
    if (r != NULL && r->cause[0] != '\0' && r->charge[0] == '\0') {
      int k = strcmp(r->cause, "key-expired") == 0     ? 0
              : strcmp(r->cause, "conflict") == 0      ? 1
              : strcmp(r->cause, "replayed-error") == 0 ? 2
                                                       : 3;
      int allowed = k < 2 ? w->expiry_possible : k == 2 ? w->err_after_ever : 0;
      w->rep->charges_parked[k]++;
      if (!allowed)
        sim_oracle_violation(o, "charge-parked-without-cause",
                             "order %s: effect parked (%s) though the world "
                             "never made that possible; %d charges",
                             od->id, r->cause, n);
      continue;
    }
    if (r == NULL || r->charge[0] == '\0') {
      sim_oracle_violation(o, "liveness-acked-order-not-charged",
                           "order %s (message %s): no charge row after the "
                           "world healed; effect state %d; %d charges at the "
                           "provider", od->id, od->msg, r ? r->state : 0, n);
      continue;
    }
    if (n != 1 || first == NULL || strcmp(first, r->charge) != 0) {
      sim_oracle_violation(o, "charge-row-not-the-providers",
                           "order %s: row %s, provider %s (%d charges)",
                           od->id, r->charge, first ? first : "(none)", n);
      continue;
    }
    w->rep->charges_done++;
  }
  free(c.r);
}

/* ---- the driver ------------------------------------------------------------------ */


static void schedule_first(world_t* w) {
  int64_t t = now();
  w->next[EV_PAY] = t + between(w, 1000, 5 * MIN_MS);
  w->next[EV_CHARGE] = t + between(w, 1000, 10 * MIN_MS);
  w->next[EV_CLOCK] = t + between(w, HOUR_MS, 2 * DAY_MS);
  w->next[EV_NET] = t + between(w, MIN_MS, 12 * HOUR_MS);
  w->next[EV_DISK] = t + between(w, HOUR_MS, 2 * DAY_MS);
  w->next[EV_KILL] = t + between(w, 2 * HOUR_MS, 3 * DAY_MS);
  w->next[EV_RESTART] = INT64_MAX;
  w->next[EV_SYNC] = w->rep->mode == 1 ? t + MIN_MS : INT64_MAX;
  w->next[EV_OPERATOR] = t + between(w, 12 * HOUR_MS, 2 * DAY_MS);
  w->next[EV_INBOUND] = t + between(w, MIN_MS, 15 * MIN_MS);
  w->next[EV_TOTALS] = w->rep->fifo ? t + between(w, MIN_MS, 30 * MIN_MS)
                                    : INT64_MAX;
  w->next[EV_LATENCY] = INT64_MAX;
  w->next[EV_HEAL] = w->end - HEAL_MS;
  w->next[EV_END] = w->end;
}

/* Run the loop until at, or sooner when a callback brings an event
** forward (on_received). */
static void run_loop_until(world_t* w, int64_t at) {
  int64_t t = now();
  w->until = at;
  if (at <= t) return;
  uv_timer_start(&w->stop, on_stop_cb, (uint64_t)(at - t), 0);
  while (now() < w->until) {
    uv_run(&w->loop, UV_RUN_DEFAULT);
    if (now() < w->until && !uv_is_active((uv_handle_t*)&w->stop))
      uv_timer_start(&w->stop, on_stop_cb, (uint64_t)(w->until - now()), 0);
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
  /* A quarter of the worlds are a fiscal till on a small flash partition
  ** of its own, journaling each receipt. */
  sim_rng_init(&w->jrng, c->seed, 17);
  w->journal = c->journal >= 0 ? c->journal : sim_rng_chance(&w->jrng, 250);
  if (w->journal && c->fs_bytes <= 0) rep->fs_bytes = 8ll << 20;
  rep->journal = w->journal;
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
  rep->fifo = sim_rng_chance(&w->rng, 250);
  rep->prefetch = 1 + (int)sim_rng_below(&w->rng, 10);
  snprintf(w->out_queue, sizeof w->out_queue, "%s%s", OUT_QUEUE,
           rep->fifo ? ".fifo" : "");
  w->sqs = sim_sqs_new(c->seed);
  w->oracle = sim_oracle_new();
  w->latency = sim_latency_new(w->oracle);
  if (w->sqs == NULL || w->oracle == NULL || w->latency == NULL ||
      sim_sqs_create(w->sqs, w->out_queue, 0, 30) < 0 ||
      sim_sqs_create(w->sqs, IN_QUEUE, 0, IN_QUEUE_VISIBILITY_S) < 0 ||
      (w->office = sim_office_new(c->seed, w->sqs, w->oracle, IN_QUEUE,
                                  w->db)) == NULL)
    abort();
  sim_sqs_on_receive(w->sqs, on_received, w);
  sim_net_route(SIM_SQS_HOST, sim_sqs_service, w->sqs);
  w->psp = sim_provider_new(c->seed, NULL);
  if (w->psp == NULL) abort();
  sim_net_route(SIM_PROVIDER_HOST, sim_provider_service, w->psp);
  w->partition_since = -1;
  uv_loop_init(&w->loop);
  uv_timer_init(&w->loop, &w->stop);
  sim_trace("world seed %llu mode %d fs %lld cap %lld fifo %d prefetch %d",
            (unsigned long long)c->seed, rep->mode, (long long)rep->fs_bytes,
            (long long)w->max_db_bytes, rep->fifo, rep->prefetch);
  w->t0 = now();
  w->end = w->t0 + (int64_t)c->days * DAY_MS;
  w->last_operator = w->t0;
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
      case EV_CHARGE: ev_charge(w); break;
      case EV_CLOCK: ev_clock(w); break;
      case EV_NET: ev_net(w); break;
      case EV_DISK: ev_disk(w); break;
      case EV_KILL: ev_kill(w); break;
      case EV_RESTART: ev_restart(w); break;
      case EV_SYNC: ev_sync(w); break;
      case EV_OPERATOR: ev_operator(w); break;
      case EV_INBOUND: ev_inbound(w); break;
      case EV_TOTALS: ev_totals(w); break;
      case EV_HEAL: ev_heal(w); break;
      default: break;
    }
    sim_latency_check(w->latency, w->up ? w->e : NULL, health_epoch(w));
    w->next[EV_LATENCY] = sim_latency_next(w->latency);
    /* A latency check changed nothing: the step checks are for events. */
    if (k == EV_LATENCY) continue;
    sim_oracle_scan_sqs(w->oracle, w->sqs);
    if (w->up) sim_oracle_check_step(w->oracle, w->e);
    check_provider(w);
  }
  sim_oracle_scan_sqs(w->oracle, w->sqs);
  {
    sim_disk_stats_t d;
    sim_vfs_stats(&d);
    sim_trace("end: db files %lld bytes, free %lld, writes refused (full) %lld",
              (long long)sim_vfs_used(), (long long)sim_vfs_free(),
              (long long)d.full);
  }
  check_provider(w);
  rep->inbound_left = sim_sqs_left(w->sqs, IN_QUEUE);
  if (rep->inbound_left > 0)
    sim_oracle_violation(w->oracle, "liveness-inbound-queue-not-drained",
                         "%lld messages left in %s after the world healed",
                         (long long)rep->inbound_left, IN_QUEUE);
  if (w->up) {
    sim_oracle_check_final(w->oracle, w->e);
    check_charges_final(w);
  } else
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
  rep->sqs_messages = (int64_t)sim_sqs_sent(w->sqs, 0, NULL, NULL);
  sim_sqs_stats(w->sqs, &rep->sqs);
  sim_office_stats(w->office, &rep->inbound_sent, &rep->inbound_twice,
                   &rep->inbound_deleted);
  sim_latency_stats(w->latency, &rep->latency_checked, &rep->latency_excused,
                    &rep->latency_late);
  {
    sim_provider_stats_t ps;
    sim_provider_stats(w->psp, &ps);
    rep->psp_requests = ps.requests;
    rep->psp_calls = ps.calls;
    rep->psp_charges = ps.charges;
    rep->psp_replays = ps.replays;
    rep->psp_replayed_5xx = ps.replayed_5xx;
    rep->psp_409 = ps.in_flight_409;
    rep->psp_422 = ps.conflicts_422;
    rep->psp_400 = ps.invalid_400;
    rep->psp_err_before = ps.errors_before;
    rep->psp_err_after = ps.errors_after;
    rep->psp_pruned = ps.pruned;
    rep->psp_reused_after_prune = ps.reused_after_prune;
    rep->psp_lookups = ps.lookups;
    rep->psp_searches = ps.searches;
    rep->psp_twice = ps.orders_charged_twice;
  }
  rep->hash = sim_trace_hash();
  rep->trace_events = sim_trace_count();
  result = rep->violations;
  sim_net_uninstall();
  sim_office_free(w->office);
  sim_latency_free(w->latency);
  sim_oracle_free(w->oracle);
  sim_sqs_free(w->sqs);
  sim_provider_free(w->psp);
  free(w->orders);
  sim_vfs_reset();
  unlink(w->db);
  rmdir(w->dir);
  free(w);
  return result;
}
