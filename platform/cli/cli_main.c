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
#include "platform/cli/cli.h"

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
};

static void usage(FILE* out) {
  fprintf(out,
          "usage: oncebox [--db FILE] [--log-level LEVEL] [--log-format FMT]\n"
          "               COMMAND [ARGS]\n"
          "\n"
          "Effectively-once message handling on one SQLite database.\n"
          "\n"
          "Commands:\n");
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
  fprintf(out,
          "\n"
          "Global options:\n"
          "  --db FILE            database file (default: $ONCEBOX_DB)\n"
          "  --log-level LEVEL    error, warn, info (default) or debug\n"
          "  --log-format FMT     text (default) or json: one object a line\n"
          "                       on stderr ($ONCEBOX_LOG_FORMAT;\n"
          "                       docs/logs.md)\n"
          "  --unsafe-sync-normal synchronous=NORMAL: faster, but a power\n"
          "                       loss may roll back acknowledged messages\n"
          "  --max-db-bytes SIZE  size cap of the database (K, M, G: KiB,\n"
          "                       MiB, GiB; default $ONCEBOX_MAX_DB_BYTES,\n"
          "                       else none). Every process on one file\n"
          "                       should use the same value\n"
          "  --reserve-db-bytes SIZE  the last bytes below the cap that new\n"
          "                       messages may not use (default an eighth\n"
          "                       of the cap; $ONCEBOX_RESERVE_DB_BYTES)\n"
          "  --critical-types T1,T2  message types that may still enter the\n"
          "                       first half of the reserve, besides the\n"
          "                       built-in PaymentCaptured and ChargeOrder\n"
          "                       ($ONCEBOX_CRITICAL_TYPES)\n"
          "  --version            print the version\n"
          "  -h, --help           this help; COMMAND --help for a command\n"
          "\n"
          "Exit codes: 0 ok; 1 failed or violations found; 2 usage error;\n"
          "3 some input rejected (the rest committed); 4 database unusable\n"
          "(or missing, for a command that only reads);\n"
          "5 run --until-idle stopped with work left that waits for a peer;\n"
          "6 enqueue refused for space (the cap's reserve or a full disk).\n");
}

static int parse_level(const char* s, ob_log_level_t* out) {
  static const char* names[] = {"error", "warn", "info", "debug"};
  for (int i = 0; i < 4; i++)
    if (strcmp(s, names[i]) == 0) {
      *out = (ob_log_level_t)i;
      return 0;
    }
  return -1;
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

/* --NAME SIZE or --NAME=SIZE: 1 if a is that option (value parsed into
** *out, -2 after printing why when bad), else 0. */
static int size_option(const char* a, const char* next, const char* name,
                       long long* out, int* i) {
  size_t n = strlen(name);
  const char* v;
  if (strcmp(a, name) == 0) {
    v = next;
    if (v != NULL) (*i)++;
  } else if (strncmp(a, name, n) == 0 && a[n] == '=') {
    v = a + n + 1;
  } else {
    return 0;
  }
  *out = v ? ob__cli_parse_size(v) : -1;
  if (*out < 0) {
    fprintf(stderr, "oncebox: %s needs a size such as 64M or 1048576%s%s\n",
            name, v ? ", not " : "", v ? v : "");
    *out = -2;
  }
  return 1;
}

/* The space settings from the environment: a terminal's service and its
** scripts share one environment file, so every process on the database
** holds to the same cap. */
static int space_from_env(cli_t* cli) {
  const char* v;
  cli->reserve_db_bytes = -1;
  if ((v = getenv("ONCEBOX_MAX_DB_BYTES")) != NULL && v[0] != '\0' &&
      (cli->max_db_bytes = ob__cli_parse_size(v)) < 0) {
    fprintf(stderr, "oncebox: ONCEBOX_MAX_DB_BYTES needs a size such as "
            "64M, not %s\n", v);
    return -1;
  }
  if ((v = getenv("ONCEBOX_RESERVE_DB_BYTES")) != NULL && v[0] != '\0' &&
      (cli->reserve_db_bytes = ob__cli_parse_size(v)) < 0) {
    fprintf(stderr, "oncebox: ONCEBOX_RESERVE_DB_BYTES needs a size such "
            "as 1M, not %s\n", v);
    return -1;
  }
  cli->critical_types = getenv("ONCEBOX_CRITICAL_TYPES");
  if (cli->critical_types != NULL && cli->critical_types[0] == '\0')
    cli->critical_types = NULL;
  return 0;
}

int ob_cli_main(int argc, char** argv,
                int (*register_fn)(ob_engine_t* e, void* arg), void* arg) {
  cli_t cli;
  int i = 1;

  refuse_core_dumps();

  memset(&cli, 0, sizeof cli);
  cli.register_fn = register_fn;
  cli.register_arg = arg;
  cli.stdin_closed = (reopen_closed_std_fds() & 1u) != 0;
  cli.db_path = getenv("ONCEBOX_DB");
  cli.log_level = OB_LOG_INFO;
  if (space_from_env(&cli) < 0) return EXIT_USAGE;
  {
    const char* v = getenv("ONCEBOX_LOG_FORMAT");
    if (v != NULL && v[0] != '\0' &&
        (cli.log_format = ob__cli_parse_log_format(v)) < 0) {
      fprintf(stderr, "oncebox: ONCEBOX_LOG_FORMAT is '%s': text or json\n",
              v);
      return EXIT_USAGE;
    }
  }
  while (i < argc && argv[i][0] == '-') {
    const char* a = argv[i];
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      usage(stdout);
      return EXIT_OK;
    } else if (strcmp(a, "--version") == 0) {
      printf("oncebox %s\n", ob_version());
      return EXIT_OK;
    } else if (strcmp(a, "--db") == 0 && i + 1 < argc) {
      cli.db_path = argv[++i];
    } else if (strncmp(a, "--db=", 5) == 0) {
      cli.db_path = a + 5;
    } else if (strcmp(a, "--log-level") == 0 && i + 1 < argc) {
      if (parse_level(argv[++i], &cli.log_level) != 0) {
        fprintf(stderr, "oncebox: unknown log level '%s'\n", argv[i]);
        return EXIT_USAGE;
      }
    } else if ((strcmp(a, "--log-format") == 0 && i + 1 < argc) ||
               strncmp(a, "--log-format=", 13) == 0) {
      const char* v = a[12] == '=' ? a + 13 : argv[++i];
      if ((cli.log_format = ob__cli_parse_log_format(v)) < 0) {
        fprintf(stderr, "oncebox: unknown log format '%s' (text or json)\n", v);
        return EXIT_USAGE;
      }
    } else if (strcmp(a, "--db") == 0 || strcmp(a, "--log-level") == 0 ||
               strcmp(a, "--log-format") == 0) {
      fprintf(stderr, "oncebox: option '%s' needs a value\n", a);
      return EXIT_USAGE;
    } else if (strcmp(a, "--unsafe-sync-normal") == 0) {
      cli.sync_normal = 1;
    } else if (size_option(a, i + 1 < argc ? argv[i + 1] : NULL,
                           "--max-db-bytes", &cli.max_db_bytes, &i) ||
               size_option(a, i + 1 < argc ? argv[i + 1] : NULL,
                           "--reserve-db-bytes", &cli.reserve_db_bytes,
                           &i)) {
      if (cli.max_db_bytes < 0 || cli.reserve_db_bytes < -1) return EXIT_USAGE;
    } else if (strcmp(a, "--critical-types") == 0 && i + 1 < argc) {
      cli.critical_types = argv[++i];
    } else if (strncmp(a, "--critical-types=", 17) == 0) {
      cli.critical_types = a + 17;
    } else {
      fprintf(stderr, "oncebox: unknown option '%s'\n", a);
      usage(stderr);
      return EXIT_USAGE;
    }
    i++;
  }
  /* Before any command logs. The config file's log_format (another
  ** change) sets cli.log_format too; whoever sets it last must call this. */
  ob__cli_set_log_format(cli.log_format);
  if (cli.max_db_bytes > 0 && cli.reserve_db_bytes > cli.max_db_bytes / 2) {
    fprintf(stderr, "oncebox: the reserve (%lld bytes) must be at most half "
            "of the size cap (%lld bytes)\n", cli.reserve_db_bytes,
            cli.max_db_bytes);
    return EXIT_USAGE;
  }
  if (i >= argc) {
    usage(stderr);
    return EXIT_USAGE;
  }
  for (size_t c = 0; c < sizeof commands / sizeof commands[0]; c++)
    if (strcmp(argv[i], commands[c].name) == 0)
      return commands[c].fn(&cli, argc - i, argv + i);
  fprintf(stderr, "oncebox: unknown command '%s'\n", argv[i]);
  usage(stderr);
  return EXIT_USAGE;
}
