/* SPDX-License-Identifier: Apache-2.0 */
/* The oncebox command-line program: shared pieces. */
#ifndef OB_CLI_H
#define OB_CLI_H

#include <stdio.h>

#include "oncebox.h"
#include "oncebox_charge.h"
#include "oncebox_payout.h"

/* Exit codes (documented in README.md and `oncebox --help`). */
#define EXIT_OK 0
#define EXIT_FAIL 1       /* the operation failed, or check found violations */
#define EXIT_USAGE 2      /* bad command line */
#define EXIT_PARTIAL 3    /* some input rejected, the rest committed */
#define EXIT_DB 4         /* the database cannot be opened or used */
#define EXIT_STALLED 5    /* run --until-idle stopped with work left that
                          ** waits for a peer (SQS, a provider) */
#define EXIT_FULL 6       /* enqueue refused for space (the size cap's
                          ** reserve, or a full disk): nothing of the
                          ** refused input was committed; retry later */
#define EXIT_OFFLINE 7    /* run: a charge was refused because the payment
                          ** provider is offline and it would pass an
                          ** offline limit (docs/offline.md): nothing of it
                          ** was recorded; its message waits for a retry */

/* cli_t.log_format */
#define CLI_LOG_TEXT 0
#define CLI_LOG_JSON 1

/* The errbuf the commands hand to ob_open and the enable calls. */
#define CLI_ERRLEN 512

typedef struct cli_s {
  const char* db_path;       /* --db or $ONCEBOX_DB */
  ob_log_level_t log_level;  /* --log-level */
  int sync_normal;           /* --unsafe-sync-normal */
  int json;                  /* --json (per command) */
  int stdin_closed;          /* fd 0 was closed at start (now /dev/null) */
  long long max_db_bytes;    /* --max-db-bytes or $ONCEBOX_MAX_DB_BYTES;
                             ** 0: from the filesystem; OB_NO_DB_CAP: none */
  long long reserve_db_bytes;  /* --reserve-db-bytes or
                               ** $ONCEBOX_RESERVE_DB_BYTES; -1: auto */
  const char* critical_types;  /* --critical-types or
                               ** $ONCEBOX_CRITICAL_TYPES: a comma list */
  int log_format;            /* --log-format: CLI_LOG_TEXT (0) or CLI_LOG_JSON */
  const char* metrics_listen;  /* run --metrics-listen HOST:PORT; NULL: off */
  const char* config_path;   /* --config, else the default path if present */
  struct cli_cfg_s* cfg;     /* every setting and its source (cli_config.c) */
  /* ob_cli_main's: run on every engine ob__cli_open* opens; NULL: none */
  int (*register_fn)(ob_engine_t* e, void* arg);
  void* register_arg;
} cli_t;

typedef int (*cli_cmd_fn)(cli_t* cli, int argc, char** argv);

/* Open the engine on cli->db_path with cli->register_fn run on it;
** prints the reason and returns NULL on failure (*exit_code set). */
ob_engine_t* ob__cli_open(cli_t* cli, int batch, int* exit_code);
/* The program's log line on stderr, in the format ob__cli_set_log_format
** chose (docs/logs.md): text "TIME LEVEL MSG", or one JSON object; under
** journald (JOURNAL_STREAM names stderr) with a "<N>" syslog priority
** first, and text without its time. ob__cli_log_record is the engine's
** ob_options_t.log_record; ob__cli_log logs a line of the program itself
** (component "cli", event "log"). ctx is unused. */
void ob__cli_log(void* ctx, ob_log_level_t level, const char* msg);
void ob__cli_log_record(void* ctx, const ob_log_record_t* rec);
/* A line of a long-running command about its own run (`run` stopped, a
** drain timed out): printed as it is in text, without time and level (as
** it always was), a record of component "cli" and that event in JSON, so
** that every line on stderr is an object. */
void ob__cli_note(ob_log_level_t level, const char* event, const char* fmt,
                  ...) __attribute__((format(printf, 3, 4)));
/* CLI_LOG_TEXT or CLI_LOG_JSON for the rest of the process (another value:
** text). This function can't fail. */
void ob__cli_set_log_format(int format);
/* "text" -> CLI_LOG_TEXT, "json" -> CLI_LOG_JSON, else (NULL too) -1. */
int ob__cli_parse_log_format(const char* s);
/* Like ob__cli_open, for publishing only (no local handling). */
ob_engine_t* ob__cli_open_publisher(cli_t* cli, int* exit_code);
/* Like ob__cli_open, for a command that only reads: a database file that does
** not exist is not created (no -wal or -shm either); that prints "no
** database at PATH" and returns NULL with *exit_code EXIT_DB. */
ob_engine_t* ob__cli_open_existing(cli_t* cli, int* exit_code);

/* Sync settings shared by `run` and `outbox drain`, from the settings in
** force (ob__cli_sync_from_config). */
typedef struct cli_sync_s {
  const char* outbox_queue_url;
  const char* source;
  int ordered;
  int sqs_allow_http;  /* --sqs-allow-http (ONCEBOX_SQS_ALLOW_HTTP=1 is read
                       ** by the library itself) */
} cli_sync_t;

/* --sqs-allow-http: accept a plain http:// SQS endpoint (run, outbox drain;
** `oncebox sqs` parses it itself). A getopt_long value above the provider
** options'. */
#define CLI_OPT_SQS_ALLOW_HTTP 0x120
#define CLI_SQS_LONG_OPTIONS \
  {"sqs-allow-http", no_argument, NULL, CLI_OPT_SQS_ALLOW_HTTP}

/* Fill s from relay.*, sqs.allow_http (flag > environment > file >
** default). Can't fail. */
void ob__cli_sync_from_config(const cli_t* cli, cli_sync_t* s);

/* Help text of --sqs-allow-http (each line indented by two spaces). */
extern const char ob__cli_sqs_allow_http_help[];

/* Enable the relay when an outbox queue is configured. Returns 0 (also when
** none is: the outbox then accumulates), or an exit code after printing
** why (EXIT_USAGE for a configuration fault, e.g. an http:// endpoint
** without --sqs-allow-http or ONCEBOX_SQS_ALLOW_HTTP=1). */
int ob__cli_enable_relay(ob_engine_t* e, cli_sync_t* s);

/* Consume an SQS queue of CloudEvents when url is not NULL or empty (the
** caller passes consumer.queue_url in force). prefetch 0: the default; visibility_s 0: the
** queue's own VisibilityTimeout, else 1..43200; sqs_allow_http: the
** sqs.allow_http setting. Returns 0 or an exit code after printing why. */
int ob__cli_enable_consumer(ob_engine_t* e, const char* url, int prefetch,
                            int visibility_s, int until_idle, int sqs_allow_http,
                            int failures_to_sqs);

/* What the SQS consumer left, for the "not done:" line: "" when nothing (or
** no consumer), else "; the SQS queue ..." naming the messages in flight,
** delayed and visible, counts that could not be read, or a queue that could
** not be reached. */
void ob__cli_consumer_left(ob_engine_t* e, char* out, size_t n);

/* The payment provider of the built-in ChargeOrder module, shared by `run`
** and `effects reconcile`, filled by ob__cli_provider_from_config. The
** Authorization value comes from ONCEBOX_PROVIDER_AUTHORIZATION only (an
** option would show in `ps`, a config file is readable by more people). */
#define CLI_MAX_OFFLINE 32
typedef struct cli_provider_s {
  const char* url;        /* --provider-url */
  const char* authorization;  /* $ONCEBOX_PROVIDER_AUTHORIZATION; a secret */
  int allow_http;         /* --provider-allow-http */
  int no_idempotency;     /* --provider-no-idempotency */
  int no_lookup;          /* --provider-no-lookup */
  long long timeout_ms;   /* --provider-timeout; 0: the default */
  long long key_retention_ms;  /* --provider-key-retention */
  const char* reference_lookup;  /* --provider-reference-lookup PATH */
  int key_retention_set;  /* 1: key_retention_ms holds the setting */
  /* --provider-offline-limits, parsed (docs/offline.md) */
  ob_offline_limit_t offline[CLI_MAX_OFFLINE];
  char offline_currency[CLI_MAX_OFFLINE][4];
  size_t noffline;
  int offline_unlisted;   /* --provider-offline-unlisted */
} cli_provider_t;

/* Parse an offline limits setting: CUR:key=value[:key=value...] items
** separated by ',' (keys max_amount, max_total, max_count in minor units
** or a count, max_age a duration; "none" or "": no limits) into out[0..n),
** the currencies copied into cur. 0, or -1 with why. */
int ob__cli_offline_limits_parse(const char* spec, ob_offline_limit_t* out,
                                 char (*cur)[4], size_t max, size_t* n,
                                 char* why, size_t whylen);

/* getopt_long entries of the provider options; their values are
** CLI_OPT_PROVIDER_* (above any short option). */
#define CLI_OPT_PROVIDER_URL 0x100
#define CLI_OPT_PROVIDER_ALLOW_HTTP 0x101
#define CLI_OPT_PROVIDER_NO_IDEMPOTENCY 0x102
#define CLI_OPT_PROVIDER_NO_LOOKUP 0x103
#define CLI_OPT_PROVIDER_TIMEOUT 0x104
#define CLI_OPT_PROVIDER_KEY_RETENTION 0x105
#define CLI_OPT_PROVIDER_REFERENCE_LOOKUP 0x106
#define CLI_OPT_PROVIDER_OFFLINE_LIMITS 0x107
#define CLI_OPT_PROVIDER_OFFLINE_UNLISTED 0x108
#define CLI_PROVIDER_LONG_OPTIONS                                           \
  {"provider-url", required_argument, NULL, CLI_OPT_PROVIDER_URL},          \
  {"provider-allow-http", no_argument, NULL, CLI_OPT_PROVIDER_ALLOW_HTTP},  \
  {"provider-no-idempotency", no_argument, NULL,                            \
   CLI_OPT_PROVIDER_NO_IDEMPOTENCY},                                        \
  {"provider-no-lookup", no_argument, NULL, CLI_OPT_PROVIDER_NO_LOOKUP},    \
  {"provider-timeout", required_argument, NULL, CLI_OPT_PROVIDER_TIMEOUT},  \
  {"provider-key-retention", required_argument, NULL,                       \
   CLI_OPT_PROVIDER_KEY_RETENTION},                                         \
  {"provider-reference-lookup", required_argument, NULL,                    \
   CLI_OPT_PROVIDER_REFERENCE_LOOKUP},                                      \
  {"provider-offline-limits", required_argument, NULL,                      \
   CLI_OPT_PROVIDER_OFFLINE_LIMITS},                                        \
  {"provider-offline-unlisted", required_argument, NULL,                    \
   CLI_OPT_PROVIDER_OFFLINE_UNLISTED}

/* Help text of those options (each line indented by two spaces). */
extern const char ob__cli_provider_help[];

/* Record getopt_long's result c as the flag of its provider.* setting.
** Returns 1 if it was a provider option, 0 if not, -1 for a bad value
** (printed, prefixed "oncebox <cmd>: "). */
int ob__cli_provider_option(cli_t* cli, int c, const char* arg,
                            const char* cmd);
/* Fill p from the provider.* settings in force (flag > environment > file
** > default) and the secret from $ONCEBOX_PROVIDER_AUTHORIZATION only.
** Can't fail. */
void ob__cli_provider_from_config(const cli_t* cli, cli_provider_t* p);
/* 1 if a provider URL is configured (option or environment). */
int ob__cli_provider_configured(cli_provider_t* p);
/* Enable the provider "payments" over HTTPS when a URL is configured.
** Returns 0 (also when none is), or an exit code after printing why (an
** http:// URL without --provider-allow-http is a usage error). */
int ob__cli_enable_provider(ob_engine_t* e, cli_provider_t* p, const char* cmd);

/* ---- cli_metrics.c: run's listener options and `oncebox health` ---------- */

/* getopt_long values of the metrics and health options. */
#define CLI_OPT_METRICS_LISTEN 0x130
#define CLI_OPT_METRICS_ALLOW_REMOTE 0x131
#define CLI_OPT_METRICS_REFRESH 0x132
#define CLI_OPT_HEALTH_RELAY_FAILING 0x133
#define CLI_OPT_HEALTH_EFFECTS_UNKNOWN 0x134
#define CLI_OPT_HEALTH_PERIOD 0x135
#define CLI_OPT_HEALTH_FAILED 0x136
#define CLI_OPT_HEALTH_RETRIED 0x137
#define CLI_HEALTH_LONG_OPTIONS                                              \
  {"health-relay-failing", required_argument, NULL,                          \
   CLI_OPT_HEALTH_RELAY_FAILING},                                            \
  {"health-effects-unknown", required_argument, NULL,                        \
   CLI_OPT_HEALTH_EFFECTS_UNKNOWN}
#define CLI_METRICS_LONG_OPTIONS                                             \
  {"metrics-listen", required_argument, NULL, CLI_OPT_METRICS_LISTEN},       \
  {"metrics-allow-remote", no_argument, NULL, CLI_OPT_METRICS_ALLOW_REMOTE}, \
  {"metrics-refresh", required_argument, NULL, CLI_OPT_METRICS_REFRESH},     \
  {"health-period", required_argument, NULL, CLI_OPT_HEALTH_PERIOD},         \
  {"health-failed", required_argument, NULL, CLI_OPT_HEALTH_FAILED},         \
  {"health-retried", required_argument, NULL, CLI_OPT_HEALTH_RETRIED},       \
  CLI_HEALTH_LONG_OPTIONS

typedef struct cli_metrics_s {
  ob_metrics_options_t opts;  /* listen comes from cli->metrics_listen */
} cli_metrics_t;

/* Help text of the options (each line indented by two spaces). */
extern const char ob__cli_metrics_help[];
extern const char ob__cli_health_help[];

/* Defaults (ob_metrics_options_init). This function can't fail. */
void ob__cli_metrics_init(cli_metrics_t* m);
/* Apply getopt_long's result c: 1 if it was one of these options, 0 if
** not, -1 for a bad value (printed, prefixed "oncebox <cmd>: "). */
int ob__cli_metrics_option(cli_metrics_t* m, cli_t* cli, int c,
                           const char* arg, const char* cmd);
/* Enable the listener when cli->metrics_listen (else
** $ONCEBOX_METRICS_LISTEN) is set. Returns 0 (also when none is), or an
** exit code after printing why (EXIT_USAGE for a bad or non-loopback
** address without --metrics-allow-remote). */
int ob__cli_enable_metrics(ob_engine_t* e, cli_t* cli, cli_metrics_t* m);

/* 1 if argv contains -h/--help (before "--"). */
int ob__cli_wants_help(int argc, char** argv);
/* Parse a non-negative integer option value; -1 on error. */
long long ob__cli_parse_count(const char* s);
/* Parse a size: digits with an optional K, M or G (powers of 1024; KiB,
** MiB, GiB and a trailing B are accepted too); -1 on error or overflow. */
long long ob__cli_parse_size(const char* s);
/* Parse a duration: digits with ms, s, m, h or d (none: seconds); ms, or
** -1 on error or overflow. */
long long ob__cli_parse_duration_ms(const char* s);
/* "512 KiB", "7.5 MiB" ("0" for 0). */
void ob__cli_format_bytes(long long b, char* out, size_t n);
/* What new messages meet at ob_stats_t.space_level. */
const char* ob__cli_space_words(int level);
/* ms as "2040-01-01T00:00:00Z" (int64 arithmetic: right past 2038 on a
** 32-bit terminal), or "-" for 0 or less (never set). out: 21 bytes. */
void ob__cli_format_time(int64_t ms, char* out);
/* Human age: "3.2s", "5m12s", "2h03m", "4d02h". */
void ob__cli_format_age(int64_t ms, char* out, size_t n);
/* The one JSON style of every --json (docs/operations.md, "JSON output"):
** a result is one compact object on one line; a listing is one such line
** per item (NDJSON), so a 50k-row backlog streams into jq or a log
** shipper. ob__cli_json_line prints o so and frees it (NULL: nothing);
** ob__cli_json_lines prints each item of the array arr so and frees arr. */
struct cJSON;
void ob__cli_json_line(struct cJSON* o);
void ob__cli_json_lines(struct cJSON* arr);
/* A one-line progress bar on stderr when it is a terminal. */
void ob__cli_progress(const char* label, long long done, long long total);
void ob__cli_progress_end(void);

/* ---- cli_text.c: stored bytes shown safely -------------------------------- */

/* 1 if s[0..n) is well-formed UTF-8 (RFC 3629), else 0. */
int ob__cli_utf8_valid(const char* s, size_t n);

/* Write s[0..n) as a JSON string (NULL: null). Control characters are
** escaped and invalid UTF-8 becomes U+FFFD, so the output is valid JSON;
** lossy only for invalid UTF-8. */
void ob__cli_json_str(FILE* f, const char* s, size_t n);

/* ob__cli_json_str into a malloc'd string; NULL when out of memory. */
char* ob__cli_json_quote(const char* s, size_t n);

/* Base64 (RFC 4648) of s[0..n), malloc'd; NULL when out of memory. For
** bytes that must round-trip and are not valid UTF-8. */
char* ob__cli_base64(const char* s, size_t n);

/* Write s[0..n) for a terminal: printable ASCII and well-formed UTF-8 as
** they are, newline and tab as \n and \t, every other byte (ESC, C1
** controls, invalid UTF-8) as \xNN, so stored bytes can't drive it. */
void ob__cli_print_safe(FILE* f, const char* s, size_t n);

/* ---- cli_config.c: settings from flags, environment and config file ---- */

/* The config file read when neither --config nor $ONCEBOX_CONFIG names
** one; its absence is not an error. */
#define OB_CLI_DEFAULT_CONFIG "/etc/oncebox/oncebox.conf"

/* Every setting (docs/config.md), in the table order of cli_config.c. */
typedef enum {
  CFG_DB_PATH, CFG_MAX_DB_BYTES, CFG_RESERVE_DB_BYTES, CFG_CRITICAL_TYPES,
  CFG_BUSY_TIMEOUT, CFG_UNSAFE_SYNC_NORMAL,
  CFG_BATCH, CFG_RETENTION, CFG_GC_INTERVAL, CFG_GC_BATCH, CFG_POLL_INTERVAL,
  CFG_IDLE_HORIZON,
  CFG_MAX_BODY_BYTES, CFG_WAL_CHECKPOINT_PAGES, CFG_WAL_SIZE_LIMIT,
  CFG_LOG_LEVEL, CFG_LOG_FORMAT,
  CFG_RETRY_MAX, CFG_RETRY_DELAY, CFG_RETRY_MULTIPLIER, CFG_RETRY_MAX_DELAY,
  CFG_RETRY_JITTER,
  CFG_RELAY_QUEUE_URL, CFG_RELAY_SOURCE, CFG_RELAY_ORDERED,
  CFG_CONSUME_QUEUE_URL, CFG_PREFETCH, CFG_VISIBILITY, CFG_FAILURES_TO_SQS,
  CFG_SQS_ALLOW_HTTP,
  CFG_PROVIDER_URL, CFG_PROVIDER_ALLOW_HTTP, CFG_PROVIDER_IDEMPOTENCY,
  CFG_PROVIDER_LOOKUP, CFG_PROVIDER_TIMEOUT, CFG_PROVIDER_KEY_RETENTION,
  CFG_PROVIDER_REFERENCE_LOOKUP, CFG_PROVIDER_OFFLINE_LIMITS,
  CFG_PROVIDER_OFFLINE_UNLISTED,
  CFG_METRICS_LISTEN, CFG_METRICS_ALLOW_REMOTE, CFG_METRICS_REFRESH,
  CFG_HEALTH_RELAY_FAILING, CFG_HEALTH_EFFECTS_UNKNOWN,
  CFG_HEALTH_PERIOD, CFG_HEALTH_FAILED, CFG_HEALTH_RETRIED,
  CFG_N
} cli_cfg_id_t;

typedef struct cli_cfg_s cli_cfg_t;

/* Allocate cli->cfg with every default. -1 when out of memory. */
int ob__cli_cfg_init(cli_t* cli);
/* Free cli->cfg (NULL: nothing). This function can't fail. */
void ob__cli_cfg_free(cli_t* cli);
/* Record a flag's value of setting id (parsed as the file's bare values,
** a unit-less duration in the flag's own unit). 0, or -1 after printing
** "oncebox CMD: FLAG expects ..." (cmd NULL: a global option). */
int ob__cli_cfg_flag(cli_t* cli, int id, const char* value, const char* flag,
                     const char* cmd);
/* If argv[*i] is a global option of a setting ("--db F", "--db=F", a
** no-value one such as --unsafe-sync-normal), record it (advancing *i past
** a separate value) and return 1; 0 if it is not one; -1 after printing
** why for a bad or missing value. */
int ob__cli_global_option(cli_t* cli, int argc, char** argv, int* i);
/* After the global flags: read the environment, then (read_file) the
** config file (--config, $ONCEBOX_CONFIG, or OB_CLI_DEFAULT_CONFIG when it
** exists), check the settings together and set cli's fields (db_path,
** log_level, log_format, sync_normal, the space settings, metrics_listen).
** 0, or -1 after printing why (a usage error: nothing was done). */
int ob__cli_cfg_load(cli_t* cli, int read_file);
/* The cross-setting checks and cli's fields again, after a command's own
** flags were recorded. 0 or -1 after printing why. */
int ob__cli_cfg_resolve(cli_t* cli);
/* Read path for ob__cfg_parse: refused (-1, printed) unless a regular file
** owned by root or this user and not world-writable, of at most
** OB_CFG_MAX_BYTES. 1 if it does not exist and !explicit_path (nothing
** printed). *text is malloc'd (free it). */
int ob__cli_cfg_read_file(const char* path, int explicit_path, char** text,
                          size_t* len);
/* Parse a file's text into cli->cfg's file layer. 0, or -1 after printing
** "oncebox: PATH:LINE: what". */
int ob__cli_cfg_parse_file(cli_t* cli, const char* path, const char* text,
                           size_t len);
/* The effective value: flag > environment > file > default. A string is
** NULL when unset or empty; DURATION values are ms; ENUM an index. */
int64_t ob__cli_cfg_int(const cli_t* cli, int id);
double ob__cli_cfg_num(const cli_t* cli, int id);
const char* ob__cli_cfg_str(const cli_t* cli, int id);
/* 1 if the value in force of id comes from the environment, else 0. */
int ob__cli_cfg_from_env(const cli_t* cli, int id);
/* 1 if a flag, the environment or the file set id, 0 for the default. */
int ob__cli_cfg_given(const cli_t* cli, int id);
/* "flag --db", "env ONCEBOX_DB", "file PATH:LINE" or "default" into out. */
const char* ob__cli_cfg_source(const cli_t* cli, int id, char* out, size_t n);
/* "section.key" of id into out. */
const char* ob__cli_cfg_name(int id, char* out, size_t n);
/* Fill o's settings of the table (busy timeout, batch size, retention, gc,
** poll interval, body limit, default retry policy). Can't fail. */
void ob__cli_cfg_options(const cli_t* cli, ob_options_t* o);
/* ob_set_retry_policy on e for each [retry.QUEUE]. 0 or -1 (printed). */
int ob__cli_cfg_apply_retry(const cli_t* cli, ob_engine_t* e);
/* Every effective setting with its source, secrets only as set / not set;
** json: one object {"file":..., "settings":[{key,value,source}...]}. */
void ob__cli_cfg_show(const cli_t* cli, FILE* f, int json);

int ob__cmd_config(cli_t* cli, int argc, char** argv);
int ob__cmd_init(cli_t* cli, int argc, char** argv);
int ob__cmd_enqueue(cli_t* cli, int argc, char** argv);
int ob__cmd_run(cli_t* cli, int argc, char** argv);
int ob__cmd_failed(cli_t* cli, int argc, char** argv);
int ob__cmd_stats(cli_t* cli, int argc, char** argv);
int ob__cmd_check(cli_t* cli, int argc, char** argv);
int ob__cmd_gc(cli_t* cli, int argc, char** argv);
int ob__cmd_demo(cli_t* cli, int argc, char** argv);
int ob__cmd_outbox(cli_t* cli, int argc, char** argv);
int ob__cmd_sqs(cli_t* cli, int argc, char** argv);
int ob__cmd_effects(cli_t* cli, int argc, char** argv);
int ob__cmd_health(cli_t* cli, int argc, char** argv);
int ob__cmd_vacuum(cli_t* cli, int argc, char** argv);

#endif
