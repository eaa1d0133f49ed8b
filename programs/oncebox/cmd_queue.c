/* SPDX-License-Identifier: Apache-2.0 */
/* oncebox init | enqueue | run */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/util/ndjson_envelope.h"
#include "programs/oncebox/cli.h"
#include "platform/loop/sd_watch.h"

int ob__cmd_init(cli_t* cli, int argc, char** argv) {
  int code;
  ob_engine_t* e;
  if (ob__cli_wants_help(argc, argv)) {
    printf("usage: oncebox --db FILE init\n\n"
           "Create the database (mode 0600, WAL, schema) or migrate an "
           "older one.\n");
    return EXIT_OK;
  }
  if (argc > 1) {
    fprintf(stderr, "oncebox init: unexpected argument '%s'\n", argv[1]);
    return EXIT_USAGE;
  }
  e = ob__cli_open(cli, 0, &code);
  if (e == NULL) return code;
  {
    char shown[512];
    ob_db_display_name(cli->db_path, shown, sizeof shown);
    printf("initialized %s\n", shown);
  }
  ob_close(e);
  return EXIT_OK;
}

/* ---- enqueue ------------------------------------------------------------ */

static void enqueue_usage(FILE* out) {
  fprintf(out,
          "usage: oncebox --db FILE enqueue --type T --id UUID --body JSON\n"
          "                [--queue Q] [--headers JSON] [--delay MS]\n"
          "       oncebox --db FILE enqueue --ndjson FILE|-\n"
          "\n"
          "Add messages to the local durable queue. The id is the producer's\n"
          "stable id (a UUID); the same id enqueued twice is handled once.\n"
          "NDJSON: one {\"id\",\"type\",\"body\"[,\"queue\",\"headers\"]} "
          "object a line;\n"
          "a bad line is reported with its number and rejected alone, every\n"
          "good line is committed. Exit 3 if any line was rejected; exit 6\n"
          "if any was refused for space (the size cap's reserve, or a full\n"
          "disk: see --max-db-bytes), which is worth retrying later.\n");
}

#define NDJSON_CHUNK 1000
#define NDJSON_MAX_LINE (2 * 1024 * 1024)

typedef struct pending_line_s {
  long long lineno;
  ob__ndjson_envelope_t env;
} pending_line_t;

static int flush_chunk(ob_engine_t* e, pending_line_t* lines, size_t n,
                       long long* committed, long long* rejected,
                       long long* refused) {
  char space_reason[512] = "";
  ob_envelope_t envs[NDJSON_CHUNK];
  int results[NDJSON_CHUNK];
  int rc;
  memset(envs, 0, sizeof envs);
  for (size_t i = 0; i < n; i++) {
    envs[i].id = lines[i].env.id;
    envs[i].type = lines[i].env.type;
    envs[i].queue = lines[i].env.queue;
    envs[i].headers = lines[i].env.headers;
    envs[i].body = lines[i].env.body;
    envs[i].body_len = lines[i].env.body_len;
  }
  rc = ob_enqueue_many(e, envs, n, results);
  snprintf(space_reason, sizeof space_reason, "%s", ob_errmsg(e));
  if (rc < 0) {
    fprintf(stderr, "oncebox enqueue: lines %lld-%lld not committed: %s\n",
            lines[0].lineno, lines[n - 1].lineno, ob_errmsg(e));
    return rc;
  }
  for (size_t i = 0; i < n; i++) {
    if (results[i] == OB_ENOSPC) {
      /* A full database refuses every line after the first: ten are
      ** enough to see which, the summary counts them all. */
      if (*refused < 10)
        fprintf(stderr, "line %lld: refused for space, not enqueued\n",
                lines[i].lineno);
      else if (*refused == 10)
        fprintf(stderr, "(further lines refused for space are counted, "
                "not listed)\n");
      if (*refused == 0) fprintf(stderr, "  (%s)\n", space_reason);
      (*refused)++;
    } else if (results[i] < 0) {
      /* ob_enqueue_many gives a code per line; ask again for the reason. */
      int code = ob_envelope_check(e, &envs[i]);
      fprintf(stderr, "line %lld: rejected: %s\n", lines[i].lineno,
              code < 0 ? ob_errmsg(e) : ob_strerror(results[i]));
      (*rejected)++;
    }
  }
  *committed += rc;
  return 0;
}

static void flush_free(pending_line_t* chunk, size_t n) {
  for (size_t i = 0; i < n; i++) ob__ndjson_envelope_free(&chunk[i].env);
}

static int enqueue_ndjson(ob_engine_t* e, const char* path, int stdin_closed) {
  FILE* f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
  const char* name = f == stdin ? "standard input" : path;
  pending_line_t chunk[NDJSON_CHUNK];
  size_t nchunk = 0, cap = 0;
  char* line = NULL;
  ssize_t len;
  long long lineno = 0, committed = 0, rejected = 0, total_bytes = 0, done = 0;
  long long refused = 0;
  int rc = 0, read_errno = 0;
  struct stat st;

  if (f == NULL) {
    perror(path);
    return EXIT_USAGE;
  }
  if (f == stdin && stdin_closed) {
    fprintf(stderr, "oncebox enqueue: --ndjson -: standard input is closed\n");
    return EXIT_FAIL;
  }
  if (f != stdin && fstat(fileno(f), &st) == 0) total_bytes = st.st_size;
  memset(chunk, 0, sizeof chunk);
  while ((len = getline(&line, &cap, f)) >= 0) {
    const char* text = line;
    const char* why;
    int prc;
    lineno++;
    done += len;
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
      line[--len] = '\0';
    /* A byte-order mark is tolerated where editors put it: first. */
    if (lineno == 1 && len >= 3 && memcmp(line, "\xEF\xBB\xBF", 3) == 0) {
      text += 3;
      len -= 3;
    }
    if (len == 0) continue;  /* blank lines are allowed */
    if (len > NDJSON_MAX_LINE) {
      fprintf(stderr, "line %lld: rejected: longer than %d bytes\n", lineno,
              NDJSON_MAX_LINE);
      rejected++;
      continue;
    }
    chunk[nchunk].lineno = lineno;
    prc = ob__ndjson_envelope_parse(text, (size_t)len, &chunk[nchunk].env, &why);
    if (prc == OB_ENOMEM) {
      fprintf(stderr, "oncebox enqueue: line %lld: out of memory\n", lineno);
      rc = OB_ENOMEM;
      break;
    }
    if (prc != 0) {
      fprintf(stderr, "line %lld: rejected: %s\n", lineno, why);
      rejected++;
      continue;
    }
    if (++nchunk == NDJSON_CHUNK) {
      rc = flush_chunk(e, chunk, nchunk, &committed, &rejected, &refused);
      flush_free(chunk, nchunk);
      nchunk = 0;
      if (rc < 0) break;
      ob__cli_progress("enqueue", done, total_bytes);
    }
  }
  /* getline gives -1 at the end and on an error alike: an unreadable file
  ** (a directory, EIO, a closed stdin) must not look like a short one. */
  if (rc == 0 && ferror(f)) {
    read_errno = errno ? errno : EIO;
    rc = -1;
  }
  if (rc == 0 && nchunk > 0)
    rc = flush_chunk(e, chunk, nchunk, &committed, &rejected, &refused);
  flush_free(chunk, nchunk);
  ob__cli_progress_end();
  free(line);
  if (f != stdin) fclose(f);
  if (read_errno != 0)
    fprintf(stderr,
            "oncebox enqueue: cannot read %s after line %lld: %s; nothing "
            "after that line was enqueued\n",
            name, lineno, strerror(read_errno));
  if (refused > 0)
    fprintf(stderr, "enqueued %lld message(s), rejected %lld line(s), "
            "refused %lld for space (enqueue them again later)\n",
            committed, rejected, refused);
  else
    fprintf(stderr, "enqueued %lld message(s), rejected %lld line(s)\n",
            committed, rejected);
  if (rc == OB_ENOSPC || (rc == 0 && refused > 0)) return EXIT_FULL;
  if (rc < 0) return EXIT_FAIL;
  return rejected > 0 ? EXIT_PARTIAL : EXIT_OK;
}

int ob__cmd_enqueue(cli_t* cli, int argc, char** argv) {
  static const struct option opts[] = {
      {"type", required_argument, NULL, 't'},
      {"id", required_argument, NULL, 'i'},
      {"body", required_argument, NULL, 'b'},
      {"queue", required_argument, NULL, 'q'},
      {"headers", required_argument, NULL, 'H'},
      {"delay", required_argument, NULL, 'd'},
      {"ndjson", required_argument, NULL, 'n'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  ob_envelope_t env;
  const char* ndjson = NULL;
  long long delay = 0;
  int c, code, rc;
  ob_engine_t* e;

  memset(&env, 0, sizeof env);
  optind = 1;
  while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (c) {
      case 't': env.type = optarg; break;
      case 'i': env.id = optarg; break;
      case 'b': env.body = optarg; env.body_len = strlen(optarg); break;
      case 'q': env.queue = optarg; break;
      case 'H': env.headers = optarg; break;
      case 'd':
        delay = ob__cli_parse_count(optarg);
        if (delay < 0) {
          fprintf(stderr, "oncebox enqueue: --delay wants milliseconds >= 0\n");
          return EXIT_USAGE;
        }
        break;
      case 'n': ndjson = optarg; break;
      case 'h': enqueue_usage(stdout); return EXIT_OK;
      default: enqueue_usage(stderr); return EXIT_USAGE;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "oncebox enqueue: unexpected argument '%s'\n", argv[optind]);
    return EXIT_USAGE;
  }
  if (ndjson == NULL && (env.type == NULL || env.id == NULL || env.body == NULL)) {
    fprintf(stderr, "oncebox enqueue: --type, --id and --body are required "
                    "(or --ndjson FILE)\n");
    return EXIT_USAGE;
  }
  env.delay_ms = delay;
  e = ob__cli_open(cli, 0, &code);
  if (e == NULL) return code;
  if (ndjson != NULL) {
    code = enqueue_ndjson(e, ndjson, cli->stdin_closed);
  } else {
    rc = ob_enqueue(e, &env);
    if (rc < 0) {
      fprintf(stderr, "oncebox enqueue: %s: %s\n", ob_strerror(rc), ob_errmsg(e));
      code = rc == OB_EINVAL || rc == OB_ETOOBIG ? EXIT_USAGE
             : rc == OB_ENOSPC                  ? EXIT_FULL
                                                : EXIT_FAIL;
    } else {
      printf("enqueued %s %s\n", env.type, env.id);
    }
  }
  ob_close(e);
  return code;
}

/* ---- run ---------------------------------------------------------------- */

/* After an until-idle run: what it left for later, if anything, with the
** earliest due time (docs/decisions/0020-until-idle.md). */
static void run_scheduled(ob_engine_t* e) {
  ob_scheduled_t s;
  char when[40];
  int rc = ob_scheduled(e, &s);
  if (rc < 0) {
    ob__cli_note(OB_LOG_WARN, "run_scheduled", "scheduled: unknown: %s: %s",
                 ob_strerror(rc), ob_errmsg(e));
    return;
  }
  if (s.messages + s.outbox + s.effects == 0) return;
  ob__cli_format_time(s.earliest_ms, when);
  ob__cli_note(OB_LOG_INFO, "run_scheduled",
               "scheduled: %lld message(s), %lld outbox event(s), %lld "
               "effect(s) left for a later run; the earliest due at %s",
               (long long)s.messages, (long long)s.outbox,
               (long long)s.effects, when);
}

int ob__cmd_run(cli_t* cli, int argc, char** argv) {
  static const struct option opts[] = {
      {"until-idle", no_argument, NULL, 'u'},
      {"idle-horizon", required_argument, NULL, 'H'},
      {"batch", required_argument, NULL, 'b'},
      {"outbox-queue-url", required_argument, NULL, 'q'},
      {"source", required_argument, NULL, 's'},
      {"ordered", no_argument, NULL, 'o'},
      {"consume-queue-url", required_argument, NULL, 'c'},
      {"prefetch", required_argument, NULL, 'p'},
      {"visibility-timeout", required_argument, NULL, 'v'},
      {"failures-to-sqs", no_argument, NULL, 'F'},
      {"help", no_argument, NULL, 'h'},
      CLI_PROVIDER_LONG_OPTIONS,
      CLI_SQS_LONG_OPTIONS,
      CLI_METRICS_LONG_OPTIONS,
      {NULL, 0, NULL, 0}};
  int c, p, code, rc, rc2, until_idle = 0;
  long long n;
  cli_metrics_t metrics;
  ob_counters_t cnt;
  int64_t handled[OB_OUTCOME_COUNT], handled_total;
  char sqs_left[512];
  ob_engine_t* e;
  ob_stats_t after;
  ob_payout_stats_t pay_before, pay_after;
  ob_charge_stats_t charge_before, charge_after;
  cli_sync_t sync;
  cli_provider_t prov;

  memset(&sync, 0, sizeof sync);
  memset(&prov, 0, sizeof prov);
  ob__cli_metrics_init(&metrics);
  optind = 1;
  /* Each option is recorded as the flag of its setting (cli_config.c), so
  ** flag > environment > file > default holds for it as for every other. */
  while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    if ((p = ob__cli_provider_option(cli, c, optarg, "run")) != 0 ||
        (p = ob__cli_metrics_option(&metrics, cli, c, optarg, "run")) != 0) {
      if (p < 0) return EXIT_USAGE;
      continue;
    }
    switch (c) {
      case 'u': until_idle = 1; break;
      case 'H':
        if (ob__cli_cfg_flag(cli, CFG_IDLE_HORIZON, optarg, "--idle-horizon",
                             "run") < 0)
          return EXIT_USAGE;
        break;
      case 'q':
        (void)ob__cli_cfg_flag(cli, CFG_RELAY_QUEUE_URL, optarg, "", NULL);
        break;
      case 's': (void)ob__cli_cfg_flag(cli, CFG_RELAY_SOURCE, optarg, "", NULL); break;
      case 'o': (void)ob__cli_cfg_flag(cli, CFG_RELAY_ORDERED, "true", "", NULL); break;
      case 'c':
        (void)ob__cli_cfg_flag(cli, CFG_CONSUME_QUEUE_URL, optarg, "", NULL);
        break;
      case 'F':
        (void)ob__cli_cfg_flag(cli, CFG_FAILURES_TO_SQS, "true", "", NULL);
        break;
      case CLI_OPT_SQS_ALLOW_HTTP:
        (void)ob__cli_cfg_flag(cli, CFG_SQS_ALLOW_HTTP, "true", "", NULL);
        break;
      /* The numbers keep their messages (tests/hostile check them); the
      ** setting then takes the same text. */
      case 'p':
        n = ob__cli_parse_count(optarg);
        if (n < 1 || n > 10 ||
            ob__cli_cfg_flag(cli, CFG_PREFETCH, optarg, "--prefetch", "run") < 0) {
          fprintf(stderr, "oncebox run: --prefetch wants 1..10\n");
          return EXIT_USAGE;
        }
        break;
      case 'v':
        n = ob__cli_parse_count(optarg);
        if (n < 0 || n > 43200 ||
            ob__cli_cfg_flag(cli, CFG_VISIBILITY, optarg,
                             "--visibility-timeout", "run") < 0) {
          fprintf(stderr, "oncebox run: --visibility-timeout wants 0..43200 "
                          "seconds (0: the queue's own)\n");
          return EXIT_USAGE;
        }
        break;
      case 'b':
        n = ob__cli_parse_count(optarg);
        if (n < 1 || n > 10000 ||
            ob__cli_cfg_flag(cli, CFG_BATCH, optarg, "--batch", "run") < 0) {
          fprintf(stderr, "oncebox run: --batch wants 1..10000\n");
          return EXIT_USAGE;
        }
        break;
      case 'h':
        printf("usage: oncebox --db FILE run [--until-idle [--idle-horizon MS]]\n"
               "              [--batch N]\n"
               "              [--outbox-queue-url URL] [--source URI] "
               "[--ordered]\n"
               "              [--consume-queue-url URL] [--prefetch N]\n"
               "              [--visibility-timeout SECONDS] [--failures-to-sqs]\n"
               "              [--sqs-allow-http]\n"
               "              [--provider-url URL] [--provider-allow-http]\n"
               "              [--provider-no-idempotency] "
               "[--provider-no-lookup]\n"
               "              [--provider-timeout MS]\n"
               "              [--metrics-listen HOST:PORT] ...\n\n"
               "The options of the relay, the consumer, the provider and\n"
               "--metrics-listen are also settings of the config file\n"
               "(docs/config.md; `oncebox config show`).\n"
               "Handle queued messages. --batch N handles up to N messages in\n"
               "one transaction (group commit, a savepoint each).\n"
               "--outbox-queue-url (or ONCEBOX_OUTBOX_QUEUE_URL) publishes the\n"
               "outbox to that SQS queue as CloudEvents whenever SQS can be\n"
               "reached (AWS_* variables and ~/.aws for credentials, region,\n"
               "endpoint); without it the outbox accumulates. --source (or\n"
               "ONCEBOX_SOURCE) is the CloudEvents source of this terminal;\n"
               "--ordered publishes each aggregate's events in order.\n"
               "--consume-queue-url (or ONCEBOX_CONSUME_QUEUE_URL) also handles\n"
               "CloudEvents from that SQS queue, deleting each only after its\n"
               "transaction committed; --prefetch N receives up to N at once.\n"
               "--visibility-timeout SECONDS (1..43200) hides each received\n"
               "message from other consumers that long, and each keepalive\n"
               "extends it by that much; 0 (the default) uses the queue's own\n"
               "VisibilityTimeout, read when the run starts (30 s, with a\n"
               "warning, if it can't be read).\n"
               "--failures-to-sqs (or ONCEBOX_FAILURES_TO_SQS=1) leaves a\n"
               "consumed message that fails for good (not a CloudEvent,\n"
               "unrecoverable, retries exhausted, no handler) in SQS, undeleted,\n"
               "so the queue's redrive policy moves it to its dead-letter queue\n"
               "after maxReceiveCount receives; without it such a message goes\n"
               "to the local failure store and is deleted from SQS.\n"
               "An http:// SQS endpoint (AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL,\n"
               "endpoint_url) is refused unless --sqs-allow-http (or\n"
               "ONCEBOX_SQS_ALLOW_HTTP=1) is given: a local test server only.\n"
               "--provider-url (or ONCEBOX_PROVIDER_URL) makes the charges of\n"
               "ChargeOrder messages at that payment provider, each once,\n"
               "with an Idempotency-Key; without it they cannot be charged.\n"
               "ONCEBOX_PROVIDER_AUTHORIZATION (environment only) is sent as\n"
               "the Authorization header of every request to it.\n"
               "--until-idle exits once nothing is due within the idle\n"
               "horizon (--idle-horizon MS, or with a unit: 30s, 5m; default\n"
               "the poll interval): no queued message, outbox row or effect\n"
               "due by then, and the consumed SQS queue reports no message\n"
               "visible, in flight or delayed (it waits up to the visibility\n"
               "timeout, plus 1 s, for messages a killed worker held to come\n"
               "back, and for its own retries). Work due later (a delayed\n"
               "message, a retry's backoff) is left for a later run and\n"
               "named on a \"scheduled:\" line with the earliest due time.\n"
               "Exit 0 when nothing due is left, exit 5 (and a line saying\n"
               "what is left) when work is left that waits for SQS or a\n"
               "provider that can't be reached, or SQS messages someone\n"
               "else still holds.\n"
               "SIGTERM/SIGINT: finish the message in hand, exit 0; a second\n"
               "signal a second or more later exits at once.\n"
               "Under systemd (Type=notify, NOTIFY_SOCKET set) it sends READY=1\n"
               "once the loop handles, WATCHDOG=1 every half of WATCHDOG_USEC\n"
               "and STOPPING=1 on the way out.\n"
               "\nSQS options:\n%s"
               "\nProvider options:\n%s"
               "\nMetrics and health (docs/operations.md):\n%s%s",
               ob__cli_sqs_allow_http_help, ob__cli_provider_help,
               ob__cli_metrics_help, ob__cli_health_help);
        return EXIT_OK;
      default: return EXIT_USAGE;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "oncebox run: unexpected argument '%s'\n", argv[optind]);
    return EXIT_USAGE;
  }
  if (ob__cli_cfg_resolve(cli) < 0) return EXIT_USAGE;
  ob__cli_sync_from_config(cli, &sync);
  ob__cli_provider_from_config(cli, &prov);
  e = ob__cli_open(cli, (int)ob__cli_cfg_int(cli, CFG_BATCH), &code);
  if (e == NULL) return code;
  if ((code = ob__cli_enable_provider(e, &prov, "run")) != 0 ||
          (code = ob__cli_enable_relay(e, &sync)) != 0 ||
          (code = ob__cli_enable_consumer(
               e, ob__cli_cfg_str(cli, CFG_CONSUME_QUEUE_URL),
               (int)ob__cli_cfg_int(cli, CFG_PREFETCH),
               (int)(ob__cli_cfg_int(cli, CFG_VISIBILITY) / 1000), until_idle,
               sync.sqs_allow_http,
               (int)ob__cli_cfg_int(cli, CFG_FAILURES_TO_SQS))) != 0 ||
          (code = ob__cli_enable_metrics(e, cli, &metrics)) != 0) {
    ob_close(e);
    return code;
  }
  /* Under systemd (Type=notify): READY=1 once the loop handles, WATCHDOG=1
  ** while it turns, STOPPING=1 on the way out. Registered last, so every
  ** other component has started when READY=1 goes out. A send that fails
  ** later is only logged; failing to register (no room for a component)
  ** ends the run now: systemd would otherwise wait for a READY=1 that never
  ** comes and time the start out without a reason. */
  if ((rc = ob__sd_enable(e, until_idle ? "handling until idle"
                                        : "handling messages")) < 0) {
    ob__cli_note(OB_LOG_ERROR, "run_failed", "oncebox run: cannot set up "
                 "systemd notification: %s", ob_strerror(rc));
    ob_close(e);
    return EXIT_FAIL;
  }
  ob_payout_stats(e, &pay_before);   /* zeroed if it fails */
  ob_charge_stats(e, &charge_before);
  rc = ob_run(e, until_idle ? OB_RUN_UNTIL_IDLE : OB_RUN_FOREVER, 1);
  if (rc < 0) {
    ob__cli_note(OB_LOG_ERROR, "run_failed", "oncebox run: stopped: %s: %s",
                 ob_strerror(rc), ob_errmsg(e));
    ob_close(e);
    return EXIT_FAIL;
  }
  (void)ob_counters(e, &cnt);
  for (int k = 0; k < OB_OUTCOME_COUNT; k++)
    handled[k] = cnt.handled[OB_INPUT_QUEUE][k] + cnt.handled[OB_INPUT_SQS][k];
  handled_total = handled[OB_OUTCOME_DONE] + handled[OB_OUTCOME_RETRIED] +
                  handled[OB_OUTCOME_FAILED] + handled[OB_OUTCOME_WAITING];
  /* A module that was not registered has no table: nothing of it. */
  if ((rc2 = ob_stats(e, &after)) < 0 ||
      ((rc2 = ob_payout_stats(e, &pay_after)) < 0 && rc2 != OB_ENOTFOUND) ||
      ((rc2 = ob_charge_stats(e, &charge_after)) < 0 &&
       rc2 != OB_ENOTFOUND)) {
    /* The stop line always goes out: the counters are in memory, only the
    ** tables' figures are missing, and the reason says why. */
    ob__cli_note(OB_LOG_WARN, "run_stopped",
                 "stopped: %lld handled, %lld duplicates; the tables could "
                 "not be read for the rest: %s: %s",
                 (long long)handled_total,
                 (long long)handled[OB_OUTCOME_DUPLICATE], ob_strerror(rc2),
                 ob_errmsg(e));
  } else {
    /* The words of docs/operations.md, "One vocabulary": handled, then
    ** duplicates, as oncebox_handled_total and oncebox_duplicates_total. */
    ob__cli_note(OB_LOG_INFO, "run_stopped",
            "stopped: %lld handled (%lld done, %lld retried, %lld failed, "
            "%lld waiting), %lld duplicates; %lld payouts, %lld charges, "
            "%lld in the failure store, %lld still queued, %lld effect(s) "
            "open",
            (long long)handled_total,
            (long long)handled[OB_OUTCOME_DONE],
            (long long)handled[OB_OUTCOME_RETRIED],
            (long long)handled[OB_OUTCOME_FAILED],
            (long long)handled[OB_OUTCOME_WAITING],
            (long long)handled[OB_OUTCOME_DUPLICATE],
            (long long)(pay_after.payouts - pay_before.payouts),
            (long long)(charge_after.charges - charge_before.charges),
            (long long)after.failed,
            (long long)(after.queue_ready + after.queue_delayed),
            (long long)(after.effects_pending + after.effects_unknown));
    if (rc == OB_RUN_STALLED) {
      ob__cli_consumer_left(e, sqs_left, sizeof sqs_left);
      ob__cli_note(OB_LOG_WARN, "run_stalled",
              "not done: work is left that waits for a peer: %lld "
              "unpublished outbox event(s), %lld message(s) queued, %lld "
              "effect(s) open%s",
              (long long)(after.outbox_unpublished - after.outbox_parked),
              (long long)(after.queue_ready + after.queue_delayed),
              (long long)(after.effects_pending + after.effects_unknown),
              sqs_left);
    }
  }
  if (cnt.offline_refused > 0)
    ob__cli_note(OB_LOG_WARN, "run_offline_refused",
                 "refused: %lld charge claim(s) while the payment provider "
                 "is offline, over its offline limits (docs/offline.md); "
                 "nothing of them is recorded, their messages are retried "
                 "by their queue's retry policy",
                 (long long)cnt.offline_refused);
  if (until_idle) run_scheduled(e);
  ob_close(e);
  /* A refusal is what the point of sale must hear first: take another
  ** means of payment. */
  if (cnt.offline_refused > 0) return EXIT_OFFLINE;
  return rc == OB_RUN_STALLED ? EXIT_STALLED : EXIT_OK;
}
