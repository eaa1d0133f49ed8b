/* SPDX-License-Identifier: Apache-2.0 */
/* oncebox outbox show | retry-parked | drain */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "core/engine/engine_host.h"
#include "core/relay/relay_tx.h"
#include "programs/oncebox/cli.h"
#include "platform/loop/worker.h"
#include "platform/relay/relay.h"

static void outbox_usage(FILE* out) {
  fprintf(out,
          "usage: oncebox --db FILE outbox show [--unpublished|--parked] "
          "[--limit N] [--json]\n"
          "       oncebox --db FILE outbox retry-parked\n"
          "       oncebox --db FILE outbox drain [--until-empty] [--timeout S]\n"
          "                [--idle-horizon MS] [--outbox-queue-url URL]\n"
          "                [--source URI] [--ordered] [--sqs-allow-http]\n"
          "\n"
          "drain publishes the outbox to SQS (ONCEBOX_OUTBOX_QUEUE_URL, AWS_*\n"
          "variables) without handling the local queue. It exits 0 once no\n"
          "row is due within the idle horizon (--idle-horizon MS, or with a\n"
          "unit: 30s, 5m; default the poll interval): rows whose retry is\n"
          "due later are left for a later drain, named on a \"scheduled:\"\n"
          "line with the earliest due time. --until-empty waits for those\n"
          "too: it exits once no unpublished row is left except parked ones.\n"
          "Exit 1 on --timeout. Parked rows gave up after SQS refused them;\n"
          "retry-parked makes them publishable again.\n"
          "The money events (MerchantPayoutCreated, OrderCharged) go first;\n"
          "with --ordered, never ahead of an earlier event of their aggregate.\n"
          "\n%s", ob__cli_sqs_allow_http_help);
}

typedef struct show_s {
  int json;
  cJSON* arr;
} show_t;

static int show_row(void* arg, const ob_outbox_row_t* r) {
  show_t* s = arg;
  char created[32], published[32];
  ob__cli_format_time(r->created_at_ms, created);
  ob__cli_format_time(r->published_at_ms, published);
  if (s->json) {
    cJSON* o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", r->id);
    cJSON_AddStringToObject(o, "causationId", r->causation_id);
    cJSON_AddStringToObject(o, "eventType", r->event_type);
    cJSON_AddStringToObject(o, "aggregateId", r->aggregate_id);
    cJSON_AddStringToObject(o, "createdAt", created);
    if (r->published_at_ms) cJSON_AddStringToObject(o, "publishedAt", published);
    else cJSON_AddNullToObject(o, "publishedAt");
    cJSON_AddNumberToObject(o, "attemptCount", r->attempt_count);
    cJSON_AddBoolToObject(o, "parked", r->parked_at_ms != 0);
    if (r->last_error) cJSON_AddStringToObject(o, "lastError", r->last_error);
    cJSON* payload = cJSON_ParseWithLength(r->payload, r->payload_len);
    if (payload) cJSON_AddItemToObject(o, "payload", payload);
    cJSON_AddItemToArray(s->arr, o);
    return 0;
  }
  printf("%-36s %-24s %-20s %-8s %3d %s\n", r->id, r->event_type, created,
         r->parked_at_ms ? "parked" : r->published_at_ms ? "sent" : "pending",
         r->attempt_count, r->last_error ? r->last_error : "");
  return 0;
}

static int outbox_show(ob_engine_t* e, int filter, long long limit, int json) {
  show_t s = {json, cJSON_CreateArray()};
  int n;
  if (!json)
    printf("%-36s %-24s %-20s %-8s %3s %s\n", "ID", "TYPE", "CREATED", "STATE",
           "TRY", "LAST ERROR");
  n = ob_outbox_list(e, filter, (size_t)limit, show_row, &s);
  if (n < 0) {
    fprintf(stderr, "oncebox outbox show: %s\n", ob_errmsg(e));
    cJSON_Delete(s.arr);
    return EXIT_FAIL;
  }
  if (json) {
    ob__cli_json_lines(s.arr);
  } else {
    printf("%d row(s)\n", n);
    cJSON_Delete(s.arr);
  }
  return EXIT_OK;
}

/* ---- drain -------------------------------------------------------------- */

typedef struct drain_s {
  ob_engine_t* e;
  uv_timer_t tick;
  int until_empty;
  int ordered;
  uint64_t deadline;   /* uv_now() ms; 0: none */
  int result;          /* EXIT_* */
  int64_t total;       /* publishable at the start, for the progress bar */
  int64_t last_done;   /* published + parked by the relay at the last tick */
  int detached;
} drain_t;

static void detached(ob_engine_t* e, void* arg) {
  (void)e;
  ((drain_t*)arg)->detached = 1;
}

static void finish(drain_t* d, int result) {
  d->result = result;
  uv_timer_stop(&d->tick);
  uv_close((uv_handle_t*)&d->tick, NULL);
  ob_detach(d->e, detached, d);
}

/* 1 while a row is left that this drain waits for: any unpublished one
** with --until-empty, else one due now (a batch in flight included) or
** within the idle horizon (docs/decisions/0020-until-idle.md); 0 when
** none; < 0 on error. */
static int drain_pending(drain_t* d) {
  int64_t at;
  int rc = ob__relay_has_pending(d->e, !d->until_empty);
  if (rc != 0 || d->until_empty) return rc;
  rc = ob__relay_due_at(d->e, d->ordered, &at);
  if (rc == OB_ENOTFOUND) return 0;
  if (rc < 0) return rc;
  return at - ob__engine_now(d->e) <= ob__idle_horizon_ms(d->e);
}

/* Every 100 ms. Progress comes from the relay's counters in memory: a
** query over the outbox per tick (ob_stats, ~20 counts) took the loop from
** the relay and drained a 100,000-row backlog at tens of events/s. The
** database is asked only when the relay holds nothing and published
** nothing since the last tick, with one or two index probes: is any row
** left that is due within the horizon? */
static void drain_tick(uv_timer_t* t) {
  drain_t* d = t->data;
  ob__relay_progress_t p;
  int64_t done, unpublished, parked;
  int pending;

  if (ob__relay_progress(d->e, &p) < 0) return;
  done = p.published + p.parked;  /* parked rows are done with, too */
  if (done > d->total) d->total = done;  /* rows added since the start */
  ob__cli_progress("drain", done, d->total);
  if (!p.busy && done == d->last_done) {
    pending = drain_pending(d);
    if (pending == 0) {
      finish(d, EXIT_OK);
      return;
    }
  }
  d->last_done = done;
  if (d->deadline && uv_now(t->loop) >= d->deadline) {
    ob__cli_progress_end();
    if (ob__relay_backlog_count(d->e, &unpublished, &parked) < 0) {
      unpublished = d->total - done;
      parked = 0;
    }
    ob__cli_note(OB_LOG_WARN, "drain_timed_out", "oncebox outbox drain: "
                 "timed out with %lld row(s) unpublished%s",
                 (long long)(unpublished - parked),
                 p.online ? "" : " (SQS unreachable)");
    finish(d, EXIT_FAIL);
  }
}

/* After a drain that ended with rows whose retry is due later: how many
** and when the first is due, as `run --until-idle` says it. */
static void drain_scheduled(drain_t* d, int64_t left) {
  int64_t at;
  char when[40];
  if (left <= 0 || ob__relay_due_at(d->e, d->ordered, &at) != 0) return;
  ob__cli_format_time(at, when);
  ob__cli_note(OB_LOG_INFO, "drain_scheduled",
               "scheduled: %lld outbox event(s) left for a later drain; the "
               "earliest due at %s", (long long)left, when);
}

static int outbox_drain(cli_t* cli, cli_sync_t* sync, int until_empty,
                        long long timeout_s) {
  uv_loop_t loop;
  drain_t d;
  ob__relay_progress_t p;
  int64_t unpublished, parked;
  int code, rc;

  memset(&d, 0, sizeof d);
  d.e = ob__cli_open_publisher(cli, &code);
  if (d.e == NULL) return code;
  if (ob__cli_enable_relay(d.e, sync) != 0 || sync->outbox_queue_url == NULL ||
          sync->outbox_queue_url[0] == '\0') {
    if (sync->outbox_queue_url == NULL || sync->outbox_queue_url[0] == '\0')
      fprintf(stderr, "oncebox outbox drain: no outbox queue: pass "
                      "--outbox-queue-url or set ONCEBOX_OUTBOX_QUEUE_URL\n");
    ob_close(d.e);
    return EXIT_USAGE;
  }
  /* The total, counted once, over the unpublished rows only. */
  if (ob__relay_backlog_count(d.e, &unpublished, &parked) == 0)
    d.total = unpublished - parked;
  d.until_empty = until_empty;
  d.ordered = sync->ordered;
  uv_loop_init(&loop);
  rc = ob_attach(d.e, &loop);
  if (rc < 0) {
    fprintf(stderr, "oncebox outbox drain: %s\n", ob_errmsg(d.e));
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    ob_close(d.e);
    return EXIT_FAIL;
  }
  d.deadline = timeout_s > 0 ? uv_now(&loop) + (uint64_t)timeout_s * 1000 : 0;
  uv_timer_init(&loop, &d.tick);
  d.tick.data = &d;
  uv_timer_start(&d.tick, drain_tick, 50, 100);
  uv_run(&loop, UV_RUN_DEFAULT);
  ob__cli_progress_end();
  uv_loop_close(&loop);
  if (d.result == EXIT_OK && ob__relay_progress(d.e, &p) == 0 &&
      ob__relay_backlog_count(d.e, &unpublished, &parked) == 0) {
    fprintf(stderr, "outbox drained: %lld published by this drain, %lld "
            "unpublished (%lld parked)\n", (long long)p.published,
            (long long)unpublished, (long long)parked);
    if (p.tls_version[0] != '\0')
      fprintf(stderr, "SQS over %s, %s\n", p.tls_version, p.tls_suite);
    drain_scheduled(&d, unpublished - parked);
  }
  ob_close(d.e);
  return d.result;
}

int ob__cmd_outbox(cli_t* cli, int argc, char** argv) {
  static const struct option opts[] = {
      {"unpublished", no_argument, NULL, 'u'},
      {"parked", no_argument, NULL, 'p'},
      {"limit", required_argument, NULL, 'l'},
      {"json", no_argument, NULL, 'j'},
      {"until-empty", no_argument, NULL, 'e'},
      {"idle-horizon", required_argument, NULL, 'H'},
      {"timeout", required_argument, NULL, 't'},
      {"outbox-queue-url", required_argument, NULL, 'q'},
      {"source", required_argument, NULL, 's'},
      {"ordered", no_argument, NULL, 'o'},
      {"help", no_argument, NULL, 'h'},
      CLI_SQS_LONG_OPTIONS,
      {NULL, 0, NULL, 0}};
  const char* sub;
  int c, code, json = 0, filter = OB_OUTBOX_ALL, until_empty = 0;
  long long limit = 100, timeout_s = 0;
  cli_sync_t sync;
  ob_engine_t* e;

  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
    outbox_usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? EXIT_USAGE : EXIT_OK;
  }
  sub = argv[1];
  memset(&sync, 0, sizeof sync);
  optind = 1;
  argc--;
  argv++;
  while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (c) {
      case 'u': filter = OB_OUTBOX_UNPUBLISHED; break;
      case 'p': filter = OB_OUTBOX_PARKED; break;
      case 'l':
        limit = ob__cli_parse_count(optarg);
        if (limit < 1) {
          fprintf(stderr, "oncebox outbox: --limit wants a count >= 1\n");
          return EXIT_USAGE;
        }
        break;
      case 'j': json = 1; break;
      case 'e': until_empty = 1; break;
      case 'H':
        if (ob__cli_cfg_flag(cli, CFG_IDLE_HORIZON, optarg, "--idle-horizon",
                             "outbox drain") < 0)
          return EXIT_USAGE;
        break;
      case 't':
        timeout_s = ob__cli_parse_count(optarg);
        if (timeout_s < 1) {
          fprintf(stderr, "oncebox outbox drain: --timeout wants seconds >= 1\n");
          return EXIT_USAGE;
        }
        break;
      /* The settings' flags (cli_config.c): flag > env > file > default. */
      case 'q':
        (void)ob__cli_cfg_flag(cli, CFG_RELAY_QUEUE_URL, optarg, "", NULL);
        break;
      case 's': (void)ob__cli_cfg_flag(cli, CFG_RELAY_SOURCE, optarg, "", NULL); break;
      case 'o': (void)ob__cli_cfg_flag(cli, CFG_RELAY_ORDERED, "true", "", NULL); break;
      case CLI_OPT_SQS_ALLOW_HTTP:
        (void)ob__cli_cfg_flag(cli, CFG_SQS_ALLOW_HTTP, "true", "", NULL);
        break;
      case 'h': outbox_usage(stdout); return EXIT_OK;
      default: outbox_usage(stderr); return EXIT_USAGE;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "oncebox outbox: unexpected argument '%s'\n", argv[optind]);
    return EXIT_USAGE;
  }
  ob__cli_sync_from_config(cli, &sync);
  if (strcmp(sub, "drain") == 0) return outbox_drain(cli, &sync, until_empty, timeout_s);
  if (strcmp(sub, "show") != 0 && strcmp(sub, "retry-parked") != 0) {
    fprintf(stderr, "oncebox outbox: unknown subcommand '%s'\n", sub);
    outbox_usage(stderr);
    return EXIT_USAGE;
  }
  e = strcmp(sub, "show") == 0 ? ob__cli_open_existing(cli, &code)
                                : ob__cli_open(cli, 0, &code);
  if (e == NULL) return code;
  if (strcmp(sub, "show") == 0) {
    code = outbox_show(e, filter, limit, json);
  } else {
    int n = ob_outbox_retry_parked(e);
    if (n < 0) {
      fprintf(stderr, "oncebox outbox retry-parked: %s\n", ob_errmsg(e));
      code = EXIT_FAIL;
    } else {
      printf("%d parked row(s) publishable again\n", n);
    }
  }
  ob_close(e);
  return code;
}
