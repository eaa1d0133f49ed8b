/* SPDX-License-Identifier: Apache-2.0 */
/* run's metrics listener options, and `oncebox health`: one set of health
** thresholds for both, so the listener's /health and the command agree. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/health.h"
#include "programs/oncebox/cli.h"

const char ob__cli_health_help[] =
    "  --health-relay-failing DURATION  the relay failing (or, read from the\n"
    "                       database, offline with an event waiting) that long\n"
    "                       is unhealthy: 5m by default; 0 turns the rule off\n"
    "  --health-effects-unknown N  more effects in state unknown than N is\n"
    "                       unhealthy (default 0)\n";

const char ob__cli_metrics_help[] =
    "  --metrics-listen HOST:PORT  serve /metrics (Prometheus) and /health\n"
    "                       over plain HTTP ($ONCEBOX_METRICS_LISTEN); a numeric\n"
    "                       loopback address such as 127.0.0.1:9464\n"
    "  --metrics-allow-remote  allow a non-loopback address (0.0.0.0, a LAN\n"
    "                       address): anyone who reaches it reads the figures\n"
    "  --metrics-refresh DURATION  re-read the database's figures at most this\n"
    "                       often (default 5s; counters are always fresh)\n"
    "  --health-period DURATION  the period of the two count rules below\n"
    "                       (default 1m; 0 turns both off)\n"
    "  --health-failed N    more messages given up on in the period (to the\n"
    "                       failure store, or outbox events parked) than N is\n"
    "                       unhealthy (default 5; -1 turns the rule off)\n"
    "  --health-retried N   more handling attempts rescheduled in the period\n"
    "                       than N is unhealthy (default 5; -1: off)\n";

void ob__cli_metrics_init(cli_metrics_t* m) {
  memset(m, 0, sizeof m[0]);
  ob_metrics_options_init(&m->opts);
}

int ob__cli_metrics_option(cli_metrics_t* m, cli_t* cli, int c,
                           const char* arg, const char* cmd) {
  /* Each flag is its setting's flag layer (cli_config.c): over the
  ** environment and the config file, checked by the table's rules. */
  (void)m;
  switch (c) {
    case CLI_OPT_METRICS_LISTEN:
      return ob__cli_cfg_flag(cli, CFG_METRICS_LISTEN, arg, "--metrics-listen",
                              cmd) < 0 ? -1 : 1;
    case CLI_OPT_METRICS_ALLOW_REMOTE:
      return ob__cli_cfg_flag(cli, CFG_METRICS_ALLOW_REMOTE, "true",
                              "--metrics-allow-remote", cmd) < 0 ? -1 : 1;
    case CLI_OPT_METRICS_REFRESH:
      return ob__cli_cfg_flag(cli, CFG_METRICS_REFRESH, arg,
                              "--metrics-refresh", cmd) < 0 ? -1 : 1;
    case CLI_OPT_HEALTH_RELAY_FAILING:
      return ob__cli_cfg_flag(cli, CFG_HEALTH_RELAY_FAILING, arg,
                              "--health-relay-failing", cmd) < 0 ? -1 : 1;
    case CLI_OPT_HEALTH_EFFECTS_UNKNOWN:
      return ob__cli_cfg_flag(cli, CFG_HEALTH_EFFECTS_UNKNOWN, arg,
                              "--health-effects-unknown", cmd) < 0 ? -1 : 1;
    case CLI_OPT_HEALTH_PERIOD:
      return ob__cli_cfg_flag(cli, CFG_HEALTH_PERIOD, arg, "--health-period",
                              cmd) < 0 ? -1 : 1;
    case CLI_OPT_HEALTH_FAILED:
      return ob__cli_cfg_flag(cli, CFG_HEALTH_FAILED, arg, "--health-failed",
                              cmd) < 0 ? -1 : 1;
    case CLI_OPT_HEALTH_RETRIED:
      return ob__cli_cfg_flag(cli, CFG_HEALTH_RETRIED, arg, "--health-retried",
                              cmd) < 0 ? -1 : 1;
    default:
      return 0;
  }
}

/* The options from the settings (flag > environment > file > default). */
static void metrics_from_settings(cli_metrics_t* m, const cli_t* cli) {
  m->opts.allow_remote = (int)ob__cli_cfg_int(cli, CFG_METRICS_ALLOW_REMOTE);
  m->opts.stats_refresh_ms = ob__cli_cfg_int(cli, CFG_METRICS_REFRESH);
  m->opts.relay_failing_ms = ob__cli_cfg_int(cli, CFG_HEALTH_RELAY_FAILING);
  m->opts.effects_unknown_max =
      (int)ob__cli_cfg_int(cli, CFG_HEALTH_EFFECTS_UNKNOWN);
  m->opts.period_ms = ob__cli_cfg_int(cli, CFG_HEALTH_PERIOD);
  m->opts.failed_max = (int)ob__cli_cfg_int(cli, CFG_HEALTH_FAILED);
  m->opts.retried_max = (int)ob__cli_cfg_int(cli, CFG_HEALTH_RETRIED);
}

int ob__cli_enable_metrics(ob_engine_t* e, cli_t* cli, cli_metrics_t* m) {
  char err[CLI_ERRLEN];
  /* Read now: run's own flag may have set it after the globals. */
  const char* listen = ob__cli_cfg_str(cli, CFG_METRICS_LISTEN);
  int rc;
  if (listen == NULL) return 0;
  metrics_from_settings(m, cli);
  m->opts.listen = listen;
  rc = ob_metrics_enable(e, &m->opts, err, sizeof err);
  if (rc < 0) {
    fprintf(stderr, "oncebox run: %s\n", err);
    return rc == OB_EINVAL ? EXIT_USAGE : EXIT_FAIL;
  }
  return 0;
}

/* ---- oncebox health -------------------------------------------------------- */

typedef struct health_read_s {
  ob_engine_t* e;
  ob_stats_t s;
} health_read_t;

static int read_figures(ob_tx_t* tx, void* arg) {
  health_read_t* r = arg;
  (void)tx;
  return ob_stats(r->e, &r->s) < 0 ? 1 : 0;
}

/* Takes the write lock and commits nothing: a database that cannot be
** locked for writing (read-only, busy past the timeout) fails it. */
static int nothing(ob_tx_t* tx, void* arg) {
  (void)tx;
  (void)arg;
  return 0;
}

int ob__cmd_health(cli_t* cli, int argc, char** argv) {
  static const struct option opts[] = {
      {"json", no_argument, NULL, 'j'},
      {"help", no_argument, NULL, 'h'},
      CLI_HEALTH_LONG_OPTIONS,
      {NULL, 0, NULL, 0}};
  cli_metrics_t m;
  health_read_t r;
  ob__health_input_t in;
  ob__health_t h;
  const ob_clock_t* clk = ob_system_clock();
  ob_engine_t* e;
  int c, p, code, rc, json = 0;
  char* body;

  ob__cli_metrics_init(&m);
  optind = 1;
  while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    if ((p = ob__cli_metrics_option(&m, cli, c, optarg, "health")) != 0) {
      if (p < 0) return EXIT_USAGE;
      continue;
    }
    switch (c) {
      case 'j': json = 1; break;
      case 'h':
        printf("usage: oncebox --db FILE health [--json]\n"
               "              [--health-relay-failing DURATION]\n"
               "              [--health-effects-unknown N]\n\n"
               "The health verdict of the database, by the rules of a running\n"
               "`oncebox run --metrics-listen`'s /health (docs/operations.md,\n"
               "\"Health\"): db_not_writable (the write lock cannot be taken),\n"
               "disk_reserve (the size cap's reserve refuses new messages),\n"
               "relay_failing (the relay's last record says offline or an\n"
               "error while an event has waited longer than the threshold),\n"
               "effects_unknown (charges whose outcome no one knows yet).\n"
               "Prints \"ok\" or \"unhealthy: REASON ...\" (--json: the /health\n"
               "body). Exit 0 healthy, 1 unhealthy, 4 no database.\n\n"
               "Options:\n%s", ob__cli_health_help);
        return EXIT_OK;
      default: return EXIT_USAGE;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "oncebox health: unexpected argument '%s'\n", argv[optind]);
    return EXIT_USAGE;
  }
  metrics_from_settings(&m, cli);
  e = ob__cli_open_existing(cli, &code);
  if (e == NULL) return code;
  memset(&r, 0, sizeof r);
  r.e = e;
  if ((rc = ob_read(e, read_figures, &r)) != 0) {
    fprintf(stderr, "oncebox health: cannot read the database: %s\n",
            ob_errmsg(e));
    ob_close(e);
    return EXIT_DB;
  }
  memset(&in, 0, sizeof in);
  in.stats = &r.s;
  in.write_probe = 1;
  if ((rc = ob_write(e, nothing, NULL)) != 0) {
    in.write_probe = 0;
    in.write_probe_error = rc < 0 ? rc : OB_EDB;
  }
  in.now_ms = clk->now_ms(clk->ctx);
  in.relay_failing_ms = m.opts.relay_failing_ms;
  in.write_error_ms = m.opts.write_error_ms;
  in.effects_unknown_max = m.opts.effects_unknown_max;
  ob__health_eval(&in, &h);
  if (json) {
    if ((body = ob__health_json(&in, &h)) == NULL) {
      fprintf(stderr, "oncebox health: out of memory\n");
      ob_close(e);
      return EXIT_FAIL;
    }
    fputs(body, stdout);
    free(body);
  } else if (h.reasons == 0) {
    printf("ok\n");
  } else {
    printf("unhealthy:");
    for (unsigned bit = 1; bit <= OB__HEALTH_LAST; bit <<= 1)
      if (h.reasons & bit) printf(" %s", ob__health_reason_name(bit));
    printf("\n");
  }
  ob_close(e);
  return h.reasons ? EXIT_FAIL : EXIT_OK;
}
