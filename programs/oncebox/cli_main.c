/* SPDX-License-Identifier: Apache-2.0 */
/* ob_cli_main (oncebox_cli.h): the command-line program, for the shipped
** `oncebox` (main.c) and an embedder's own main. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "oncebox_cli.h"
#include "programs/oncebox/cli.h"

typedef struct command_s {
  const char* name;
  cli_cmd_fn fn;
  const char* summary;
} command_t;

static const command_t commands[] = {
    {"init", ob__cmd_init, "create or migrate the database"},
    {"enqueue", ob__cmd_enqueue, "add messages to the local queue (one, or NDJSON)"},
    {"run", ob__cmd_run, "handle queued messages (until stopped or idle)"},
    {"failed", ob__cmd_failed, "show, retry or remove failed messages"},
    {"outbox", ob__cmd_outbox, "show, retry parked, drain to SQS"},
    {"stats", ob__cmd_stats, "queue, failure store, ledger and outbox counters"},
    {"check", ob__cmd_check, "integrity check and invariants"},
    {"health", ob__cmd_health, "healthy or not, and why (exit 0 or 1)"},
    {"vacuum", ob__cmd_vacuum, "rewrite with the page size of new databases"},
    {"gc", ob__cmd_gc, "delete expired dedup records and published events"},
    {"demo", ob__cmd_demo, "a day at a terminal: duplicates, a crash, bad input"},
    {"effects", ob__cmd_effects, "show, reconcile or resolve provider calls"},
    {"sqs", ob__cmd_sqs, "talk to Amazon SQS: send, receive, attributes"},
    {"config", ob__cmd_config, "show the settings in force, check a config file"},
};

static void usage(FILE* out) {
  fprintf(out,
          "usage: oncebox [--config FILE] [--db FILE] [--log-level LEVEL]\n"
          "               [--log-format FMT] COMMAND [ARGS]\n"
          "\n"
          "Effectively-once message handling on one SQLite database.\n"
          "\n"
          "Commands:\n");
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
  fprintf(out,
          "\n"
          "Global options:\n"
          "  --config FILE        the config file (default: $ONCEBOX_CONFIG,\n"
          "                       else " OB_CLI_DEFAULT_CONFIG " if it\n"
          "                       exists); flags > environment > file;\n"
          "                       `oncebox config show`, docs/config.md\n"
          "  --db FILE            database file (default: $ONCEBOX_DB)\n"
          "  --log-level LEVEL    error, warn, info (default) or debug\n"
          "  --log-format FMT     text (default) or json: one object a line\n"
          "                       on stderr ($ONCEBOX_LOG_FORMAT;\n"
          "                       docs/logs.md)\n"
          "  --unsafe-sync-normal synchronous=NORMAL: faster, but a power\n"
          "                       loss may roll back acknowledged messages\n"
          "  --max-db-bytes SIZE  size cap of the database (K, M, G: KiB,\n"
          "                       MiB, GiB; default $ONCEBOX_MAX_DB_BYTES,\n"
          "                       else 3/5 of the filesystem; none: no\n"
          "                       cap). Every process on one file\n"
          "                       should use the same value\n"
          "  --reserve-db-bytes SIZE  the last bytes below the cap that new\n"
          "                       messages may not use (default an eighth\n"
          "                       of the cap; $ONCEBOX_RESERVE_DB_BYTES)\n"
          "  --critical-types T1,T2  message types that may still enter the\n"
          "                       first half of the reserve, besides the\n"
          "                       built-in PaymentCaptured and ChargeOrder\n"
          "                       ($ONCEBOX_CRITICAL_TYPES)\n"
          "  --busy-timeout MS, --retention D, --gc-interval D, --gc-batch N,\n"
          "  --poll-interval MS, --max-body-bytes SIZE  engine settings\n"
          "                       (D: seconds, or with ms, s, m, h, d)\n"
          "  --version            print the version\n"
          "  -h, --help           this help; COMMAND --help for a command\n"
          "\n"
          "Exit codes: 0 ok; 1 failed or violations found; 2 usage error;\n"
          "3 some input rejected (the rest committed); 4 database unusable\n"
          "(or missing, for a command that only reads);\n"
          "5 run --until-idle stopped with work left that waits for a peer;\n"
          "6 enqueue refused for space (the cap's reserve or a full disk);\n"
          "7 run refused a charge over an offline limit (docs/offline.md).\n");
}

/* A closed standard descriptor would be handed out by the next open(): the
** database on fd 1 would receive our printf output. Fill each closed one
** with /dev/null (open takes the lowest free number) and remember which:
** `enqueue --ndjson -` must not read a closed stdin as an empty file. */
static unsigned reopen_closed_std_fds(void) {
  unsigned closed = 0;
  for (int fd = 0; fd <= 2; fd++) {
    if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF) continue;
    closed |= 1u << fd;
    if (open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY) != fd) _exit(EXIT_FAIL);
  }
  return closed;
}

/* A core dump of a process that holds credentials is a copy of them on
** disk, and a process of the same user could read them through ptrace or
** /proc/PID/mem. Not dumpable, unless an operator debugging a crash asks
** for cores with ONCEBOX_ALLOW_CORE_DUMPS=1. */
static void refuse_core_dumps(void) {
  const char* allow = getenv("ONCEBOX_ALLOW_CORE_DUMPS");
  if (allow != NULL && strcmp(allow, "1") == 0) return;
  (void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

/* `config check FILE` validates FILE alone: an installed file with a fault
** must not stop a package from checking its replacement. */
static int checks_a_named_file(int argc, char** argv, int i) {
  return i + 2 < argc && strcmp(argv[i], "config") == 0 &&
         strcmp(argv[i + 1], "check") == 0;
}

static int dispatch(cli_t* cli, int argc, char** argv, int i) {
  for (size_t c = 0; c < sizeof commands / sizeof commands[0]; c++)
    if (strcmp(argv[i], commands[c].name) == 0)
      return commands[c].fn(cli, argc - i, argv + i);
  fprintf(stderr, "oncebox: unknown command '%s'\n", argv[i]);
  usage(stderr);
  return EXIT_USAGE;
}

int ob_cli_main(int argc, char** argv,
                int (*register_fn)(ob_engine_t* e, void* arg), void* arg) {
  cli_t cli;
  int i = 1, rc;

  refuse_core_dumps();

  memset(&cli, 0, sizeof cli);
  cli.register_fn = register_fn;
  cli.register_arg = arg;
  cli.stdin_closed = (reopen_closed_std_fds() & 1u) != 0;
  if (ob__cli_cfg_init(&cli) < 0) {
    fprintf(stderr, "oncebox: out of memory\n");
    return EXIT_FAIL;
  }
  while (i < argc && argv[i][0] == '-') {
    const char* a = argv[i];
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      usage(stdout);
      ob__cli_cfg_free(&cli);
      return EXIT_OK;
    } else if (strcmp(a, "--version") == 0) {
      printf("oncebox %s\n", ob_version());
      ob__cli_cfg_free(&cli);
      return EXIT_OK;
    } else if (strcmp(a, "--config") == 0 && i + 1 < argc) {
      cli.config_path = argv[++i];
    } else if (strncmp(a, "--config=", 9) == 0) {
      cli.config_path = a + 9;
    } else if (strcmp(a, "--config") == 0) {
      fprintf(stderr, "oncebox: option '%s' needs a value\n", a);
      ob__cli_cfg_free(&cli);
      return EXIT_USAGE;
    } else if ((rc = ob__cli_global_option(&cli, argc, argv, &i)) != 0) {
      if (rc < 0) {
        ob__cli_cfg_free(&cli);
        return EXIT_USAGE;
      }
    } else {
      fprintf(stderr, "oncebox: unknown option '%s'\n", a);
      usage(stderr);
      ob__cli_cfg_free(&cli);
      return EXIT_USAGE;
    }
    i++;
  }
  if (i >= argc) {
    usage(stderr);
    ob__cli_cfg_free(&cli);
    return EXIT_USAGE;
  }
  /* Before any command: a bad file is a usage error and nothing is done. */
  if (ob__cli_cfg_load(&cli, !checks_a_named_file(argc, argv, i)) < 0) {
    ob__cli_cfg_free(&cli);
    return EXIT_USAGE;
  }
  /* Before any command logs: the format is settled (flag, environment,
  ** file, default) only now. */
  ob__cli_set_log_format(cli.log_format);
  rc = dispatch(&cli, argc, argv, i);
  ob__cli_cfg_free(&cli);
  return rc;
}
