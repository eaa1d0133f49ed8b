/* SPDX-License-Identifier: Apache-2.0 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/util/utc_time.h"
#include "programs/oncebox/cli.h"

/* 1 if stderr is the journal's stream: systemd sets JOURNAL_STREAM to the
** "device:inode" of the socket it connects to stderr, and the variable is
** inherited, so it counts only while fd 2 still is that socket (sd_journal
** docs, "JOURNAL_STREAM"). Read once: it does not change during a run. */
static int stderr_is_journal(void) {
  static int cached = -1;
  const char* v;
  unsigned long long dev, ino;
  char tail;
  struct stat st;
  if (cached >= 0) return cached;
  cached = 0;
  v = getenv("JOURNAL_STREAM");
  if (v != NULL && sscanf(v, "%llu:%llu%c", &dev, &ino, &tail) == 2 &&
      fstat(2, &st) == 0 && (unsigned long long)st.st_dev == dev &&
      (unsigned long long)st.st_ino == ino)
    cached = 1;
  return cached;
}

static const char* const level_names[] = {"error", "warn", "info", "debug"};
/* syslog(3) priorities: LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG. */
static const int level_prio[] = {3, 4, 6, 7};

/* cli_t.log_format of this process, for the callbacks (they get no cli_t:
** the library's ctx is NULL, and `oncebox sqs` logs without an engine). */
static int log_format = CLI_LOG_TEXT;

void ob__cli_set_log_format(int format) {
  log_format = format == CLI_LOG_JSON ? CLI_LOG_JSON : CLI_LOG_TEXT;
}

int ob__cli_parse_log_format(const char* s) {
  if (s != NULL && strcmp(s, "text") == 0) return CLI_LOG_TEXT;
  if (s != NULL && strcmp(s, "json") == 0) return CLI_LOG_JSON;
  return -1;
}

/* One field "key":"value", skipped when value is NULL (does not apply). */
static void json_field(FILE* f, const char* key, const char* value) {
  if (value == NULL) return;
  fprintf(f, ",\"%s\":", key);
  ob__cli_json_str(f, value, strlen(value));
}

/* The line is built in memory and written with one fwrite: stderr is
** unbuffered, and a record must not be interleaved with another process's
** (or thread's) output byte by byte. */
static void write_line(const char* line, size_t n) {
  fwrite(line, 1, n, stderr);
}

static void log_json(const ob_log_record_t* r, int journal) {
  const ob_clock_t* clock = ob_system_clock();
  char when[OB__UTC_MS_LEN];
  char* line = NULL;
  size_t n = 0;
  FILE* f = open_memstream(&line, &n);
  if (f == NULL) return;  /* out of memory: a log line is not worth more */
  (void)ob__utc_format_ms(clock->now_ms(clock->ctx), when);
  /* Under journald the "<N>" prefix carries the priority (journald strips
  ** it, MESSAGE is the object alone); the object keeps its own time, the
  ** event's, for whatever parses MESSAGE later (docs/logs.md). */
  if (journal) fprintf(f, "<%d>", level_prio[r->level]);
  fprintf(f, "{\"time\":\"%s\",\"level\":\"%s\"", when, level_names[r->level]);
  json_field(f, "component", r->component);
  json_field(f, "event", r->event);
  json_field(f, "message_id", r->message_id);
  json_field(f, "type", r->type);
  json_field(f, "queue", r->queue);
  json_field(f, "consumer", r->consumer);
  json_field(f, "outcome", r->outcome);
  if (r->duration_ms >= 0)
    fprintf(f, ",\"duration_ms\":%lld", (long long)r->duration_ms);
  if (r->error != 0) json_field(f, "error", ob_err_name(r->error));
  if (r->repeated > 0) fprintf(f, ",\"repeated\":%u", r->repeated);
  json_field(f, "msg", r->msg != NULL ? r->msg : "");
  fputs("}\n", f);
  if (fclose(f) == 0) write_line(line, n);
  free(line);
}

void ob__cli_log_record(void* ctx, const ob_log_record_t* rec) {
  ob_log_record_t r = *rec;
  const ob_clock_t* clock;
  char when[OB__UTC_MS_LEN];
  (void)ctx;
  if ((unsigned)r.level > OB_LOG_DEBUG) r.level = OB_LOG_DEBUG;
  if (r.msg == NULL) r.msg = "";
  if (log_format == CLI_LOG_JSON) {
    log_json(&r, stderr_is_journal());
    return;
  }
  if (stderr_is_journal()) {
    /* journald reads "<N>" as the priority and stamps the line itself. */
    fprintf(stderr, "<%d>%s %s\n", level_prio[r.level], level_names[r.level],
            r.msg);
    return;
  }
  clock = ob_system_clock();
  (void)ob__utc_format_ms(clock->now_ms(clock->ctx), when);
  fprintf(stderr, "%s %s %s\n", when, level_names[r.level], r.msg);
}

void ob__cli_note(ob_log_level_t level, const char* event, const char* fmt,
                  ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (log_format != CLI_LOG_JSON) {
    fprintf(stderr, "%s\n", buf);  /* the line as it always was */
  } else {
    ob_log_record_t r;
    memset(&r, 0, sizeof r);
    r.level = level;
    r.component = "cli";
    r.event = event;
    r.duration_ms = -1;
    r.msg = buf;
    ob__cli_log_record(NULL, &r);
  }
}

void ob__cli_log(void* ctx, ob_log_level_t level, const char* msg) {
  /* A line of the program itself, not of the library. */
  ob_log_record_t r;
  memset(&r, 0, sizeof r);
  r.level = level;
  r.component = "cli";
  r.event = "log";
  r.duration_ms = -1;
  r.msg = msg;
  ob__cli_log_record(ctx, &r);
}

static ob_engine_t* open_with(cli_t* cli, int batch, int no_handling,
                              int* exit_code);
static int critical_list_ok(const char* list);

ob_engine_t* ob__cli_open(cli_t* cli, int batch, int* exit_code) {
  return open_with(cli, batch, 0, exit_code);
}

ob_engine_t* ob__cli_open_publisher(cli_t* cli, int* exit_code) {
  return open_with(cli, 0, 1, exit_code);
}

/* 1 if path names nothing (not even a dangling symlink) in a directory
** that exists: where a writing command would create the database. A
** missing directory is left to ob_open, which says so and creates
** nothing. */
static int missing_in_existing_dir(const char* path) {
  struct stat st;
  char dir[4096];
  const char* slash;
  size_t n;
  if (lstat(path, &st) == 0 || errno != ENOENT) return 0;
  slash = strrchr(path, '/');
  if (slash == NULL) return 1;  /* the working directory */
  n = slash == path ? 1 : (size_t)(slash - path);
  if (n >= sizeof dir) return 0;
  memcpy(dir, path, n);
  dir[n] = '\0';
  return stat(dir, &st) == 0 && S_ISDIR(st.st_mode);
}

ob_engine_t* ob__cli_open_existing(cli_t* cli, int* exit_code) {
  if (cli->critical_types != NULL && critical_list_ok(cli->critical_types) < 0) {
    *exit_code = EXIT_USAGE;
    return NULL;
  }
  if (cli->db_path != NULL && cli->db_path[0] != '\0' &&
      missing_in_existing_dir(cli->db_path)) {
    fprintf(stderr, "oncebox: no database at %s (read-only command; run "
            "`oncebox --db %s init` or any writing command to create one)\n",
            cli->db_path, cli->db_path);
    *exit_code = EXIT_DB;
    return NULL;
  }
  return open_with(cli, 0, 0, exit_code);
}

const char ob__cli_sqs_allow_http_help[] =
    "  --sqs-allow-http      accept a plain http:// SQS endpoint from\n"
    "                        AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL or\n"
    "                        endpoint_url in ~/.aws/config (or set\n"
    "                        ONCEBOX_SQS_ALLOW_HTTP=1); a local test server\n"
    "                        only: the signed requests and the session token\n"
    "                        travel in clear. Without it http:// is refused\n"
    "                        (exit 2)\n";

void ob__cli_sync_from_config(const cli_t* cli, cli_sync_t* s) {
  s->outbox_queue_url = ob__cli_cfg_str(cli, CFG_RELAY_QUEUE_URL);
  s->source = ob__cli_cfg_str(cli, CFG_RELAY_SOURCE);
  s->ordered = (int)ob__cli_cfg_int(cli, CFG_RELAY_ORDERED);
  /* From the environment, the library reads ONCEBOX_SQS_ALLOW_HTTP itself
  ** (and names it in its warning); the CLI passes only a flag or the file. */
  s->sqs_allow_http = ob__cli_cfg_from_env(cli, CFG_SQS_ALLOW_HTTP)
                          ? 0
                          : (int)ob__cli_cfg_int(cli, CFG_SQS_ALLOW_HTTP);
}

int ob__cli_enable_relay(ob_engine_t* e, cli_sync_t* s) {
  ob_relay_options_t o;
  char err[CLI_ERRLEN];
  int rc;
  if (s->outbox_queue_url == NULL || s->outbox_queue_url[0] == '\0') return 0;
  ob_relay_options_init(&o);
  o.queue_url = s->outbox_queue_url;
  o.source = s->source && s->source[0] ? s->source : NULL;
  o.ordered = s->ordered;
  o.allow_http = s->sqs_allow_http;
  rc = ob_relay_enable(e, &o, err, sizeof err);
  if (rc < 0) {
    fprintf(stderr, "oncebox: cannot publish the outbox: %s (%s)\n",
            err[0] ? err : ob_strerror(rc), ob_err_name(rc));
    return rc == OB_EINVAL ? EXIT_USAGE : EXIT_FAIL;
  }
  return 0;
}

int ob__cli_enable_consumer(ob_engine_t* e, const char* url, int prefetch,
                            int visibility_s, int until_idle, int sqs_allow_http,
                            int failures_to_sqs) {
  ob_consumer_options_t o;
  char err[CLI_ERRLEN];
  int rc;
  if (url == NULL || url[0] == '\0') return 0;
  ob_consumer_options_init(&o);
  o.queue_url = url;
  if (prefetch > 0) o.prefetch = prefetch;
  o.visibility_timeout_s = visibility_s;
  o.allow_http = sqs_allow_http;
  o.failures_to_sqs = failures_to_sqs;
  /* --until-idle ends on an empty receive: a short poll says so sooner. */
  if (until_idle) o.wait_seconds = 2;
  rc = ob_consumer_enable(e, &o, err, sizeof err);
  if (rc < 0) {
    /* Not the URL itself: a refused one may carry a password. */
    fprintf(stderr, "oncebox: cannot consume the SQS queue: %s (%s)\n",
            err[0] ? err : ob_strerror(rc), ob_err_name(rc));
    return rc == OB_EINVAL ? EXIT_USAGE : EXIT_FAIL;
  }
  return 0;
}

/* 0 if every name of the comma-separated list is 1..128 bytes, else -1
** after printing why: a usage error reported before the database is
** opened (or found missing). */
static int critical_list_ok(const char* list) {
  const char* p = list;
  while (*p != '\0') {
    size_t n = strcspn(p, ",");
    if (n == 0 || n > 128) {
      fprintf(stderr, "oncebox: --critical-types: empty or over 128-byte "
              "type name in '%.200s'\n", list);
      return -1;
    }
    p += n;
    if (*p == ',') p++;
  }
  return 0;
}

/* A comma-separated list of message types, each marked critical. */
static int mark_critical(ob_engine_t* e, const char* list) {
  const char* p = list;
  while (*p != '\0') {
    char name[129];
    size_t n = strcspn(p, ",");
    int rc;
    if (n == 0 || n >= sizeof name) {
      fprintf(stderr, "oncebox: --critical-types: empty or over 128-byte "
              "type name in '%.200s'\n", list);
      return -1;
    }
    memcpy(name, p, n);
    name[n] = '\0';
    if ((rc = ob_mark_critical(e, name)) < 0) {
      fprintf(stderr, "oncebox: --critical-types: '%s': %s\n", name,
              ob_strerror(rc));
      return -1;
    }
    p += n;
    if (*p == ',') p++;
  }
  return 0;
}

void ob__cli_consumer_left(ob_engine_t* e, char* out, size_t n) {
  ob_consumer_status_t st;
  out[0] = '\0';
  if (ob_consumer_status(e, &st) != 0) return;  /* no consumer */
  if (st.online == 0)
    snprintf(out, n, "; the SQS queue could not be read");
  else if (st.stalled && st.counts == 1)
    snprintf(out, n,
             "; the SQS queue still reports %lld message(s) in flight, "
             "%lld delayed and %lld visible after %lld s (visibility "
             "timeout %d s): someone else holds them",
             (long long)st.not_visible, (long long)st.delayed,
             (long long)st.visible, (long long)(st.waited_ms / 1000),
             st.visibility_timeout_s);
  else if (st.stalled)
    snprintf(out, n,
             "; the SQS queue's message counts could not be read (%s), so "
             "messages others hold can't be ruled out",
             st.counts_error);
}

static ob_engine_t* open_with(cli_t* cli, int batch, int no_handling,
                              int* exit_code) {
  ob_options_t o;
  ob_engine_t* e = NULL;
  char err[CLI_ERRLEN];
  int rc;

  if (cli->db_path == NULL || cli->db_path[0] == '\0') {
    fprintf(stderr, "oncebox: no database: pass --db FILE or set ONCEBOX_DB\n");
    *exit_code = EXIT_USAGE;
    return NULL;
  }
  if (cli->critical_types != NULL && critical_list_ok(cli->critical_types) < 0) {
    *exit_code = EXIT_USAGE;
    return NULL;
  }
  ob_options_init(&o);
  o.db_path = cli->db_path;
  o.log_record = ob__cli_log_record;
  o.log_level = cli->log_level;
  ob__cli_cfg_options(cli, &o);
  if (batch > 0) o.batch_size = batch;
  o.no_handling = no_handling;
  if (cli->sync_normal) o.synchronous = OB_SYNC_NORMAL;
  o.max_db_bytes = cli->max_db_bytes;
  o.reserve_db_bytes = cli->reserve_db_bytes;
  rc = ob_open(&e, &o, err, sizeof err);
  if (rc < 0) {
    char shown[512];
    ob_db_display_name(cli->db_path, shown, sizeof shown);
    fprintf(stderr, "oncebox: cannot open %s: %s (%s)\n", shown, err,
            ob_err_name(rc));
    *exit_code = EXIT_DB;  /* the arguments were checked: the file is at fault */
    return NULL;
  }
  rc = cli->register_fn ? cli->register_fn(e, cli->register_arg) : 0;
  if (rc < 0) {
    fprintf(stderr, "oncebox: %s\n", ob_strerror(rc));
    ob_close(e);
    *exit_code = EXIT_FAIL;
    return NULL;
  }
  if (ob__cli_cfg_apply_retry(cli, e) < 0) {
    ob_close(e);
    *exit_code = EXIT_USAGE;
    return NULL;
  }
  if (cli->critical_types != NULL &&
      mark_critical(e, cli->critical_types) < 0) {
    ob_close(e);
    *exit_code = EXIT_USAGE;
    return NULL;
  }
  *exit_code = EXIT_OK;
  return e;
}

int ob__cli_wants_help(int argc, char** argv) {
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--") == 0) return 0;
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) return 1;
  }
  return 0;
}

long long ob__cli_parse_count(const char* s) {
  char* end;
  long long v;
  if (s == NULL || *s == '\0') return -1;
  errno = 0;
  v = strtoll(s, &end, 10);
  if (errno != 0 || *end != '\0' || v < 0) return -1;
  return v;
}

/* A unit suffix and what it multiplies by. */
typedef struct unit_s {
  const char* names;  /* the letters that name it, e.g. "kK" */
  long long mult;
} unit_t;

/* Digits, then one of units (or none: dflt) and then `tail`, the rest of
** the text after the unit, which must be empty. -1 on anything else. */
static long long parse_with_unit(const char* s, const unit_t* units,
                                 size_t nunits, long long dflt,
                                 const char** tail) {
  char* end;
  long long v, mult = dflt;
  if (s == NULL || *s < '0' || *s > '9') return -1;
  errno = 0;
  v = strtoll(s, &end, 10);
  if (errno != 0 || v < 0) return -1;
  for (size_t i = 0; *end != '\0' && i < nunits; i++)
    if (strchr(units[i].names, *end) != NULL) {
      mult = units[i].mult;
      end++;
      break;
    }
  *tail = end;
  if (v > INT64_MAX / mult) return -1;
  return v * mult;
}

long long ob__cli_parse_size(const char* s) {
  static const unit_t units[] = {{"kK", 1024LL},
                                 {"mM", 1024LL * 1024},
                                 {"gG", 1024LL * 1024 * 1024}};
  const char* end;
  long long v = parse_with_unit(s, units, 3, 1, &end);
  if (v < 0) return -1;
  /* 64M, 64MiB, 64MB, 64b: the same. */
  if (end > s && strchr("kKmMgG", end[-1]) != NULL && *end == 'i') end++;
  if (*end == 'B' || *end == 'b') end++;
  return *end == '\0' ? v : -1;
}

long long ob__cli_parse_duration_ms(const char* s) {
  static const unit_t units[] = {{"s", 1000LL},
                                 {"m", 60LL * 1000},
                                 {"h", 3600LL * 1000},
                                 {"d", 24LL * 3600 * 1000}};
  const char* end;
  long long v;
  size_t n = s ? strlen(s) : 0;
  /* "250ms": milliseconds as they are. */
  if (n > 2 && strcmp(s + n - 2, "ms") == 0) {
    char* e2;
    if (s[0] < '0' || s[0] > '9') return -1;
    errno = 0;
    v = strtoll(s, &e2, 10);
    return errno == 0 && e2 == s + n - 2 ? v : -1;
  }
  v = parse_with_unit(s, units, 4, 1000, &end);
  return v >= 0 && *end == '\0' ? v : -1;
}

void ob__cli_format_bytes(long long b, char* out, size_t n) {
  if (b >= 1024LL * 1024)
    snprintf(out, n, "%.1f MiB", (double)b / (1024.0 * 1024.0));
  else if (b >= 1024)
    snprintf(out, n, "%lld KiB", b / 1024);
  else
    snprintf(out, n, "%lld B", b);
}

const char* ob__cli_space_words(int level) {
  switch (level) {
    case 0: return "new messages accepted";
    case 1: return "only critical types accepted (in the reserve)";
    case 2: return "new messages refused";
    default: return "new messages refused, handling paused";
  }
}

void ob__cli_format_time(int64_t ms, char* out) {
  if (ms <= 0) {
    memcpy(out, "-", 2);
    return;
  }
  (void)ob__utc_format_s(ms, out);
}

void ob__cli_format_age(int64_t ms, char* out, size_t n) {
  int64_t s = ms / 1000;
  if (ms < 60000)
    snprintf(out, n, "%.1fs", (double)ms / 1000.0);
  else if (s < 3600)
    snprintf(out, n, "%lldm%02llds", (long long)(s / 60), (long long)(s % 60));
  else if (s < 86400)
    snprintf(out, n, "%lldh%02lldm", (long long)(s / 3600),
             (long long)(s % 3600 / 60));
  else
    snprintf(out, n, "%lldd%02lldh", (long long)(s / 86400),
             (long long)(s % 86400 / 3600));
}

static int progress_shown;

void ob__cli_progress(const char* label, long long done, long long total) {
  char bar[31];
  int fill;
  if (!isatty(STDERR_FILENO) || total <= 0) return;
  fill = (int)(done * 30 / total);
  if (fill > 30) fill = 30;
  memset(bar, '#', (size_t)fill);
  memset(bar + fill, '.', (size_t)(30 - fill));
  bar[30] = '\0';
  fprintf(stderr, "\r%-10s [%s] %lld/%lld", label, bar, done, total);
  fflush(stderr);
  progress_shown = 1;
}

void ob__cli_progress_end(void) {
  if (progress_shown) fputc('\n', stderr);
  progress_shown = 0;
}

void ob__cli_json_line(cJSON* o) {
  char* t;
  if (o == NULL) return;
  t = cJSON_PrintUnformatted(o);
  if (t != NULL) printf("%s\n", t);
  free(t);
  cJSON_Delete(o);
}

void ob__cli_json_lines(cJSON* arr) {
  cJSON* it;
  if (arr == NULL) return;
  cJSON_ArrayForEach(it, arr) {
    char* t = cJSON_PrintUnformatted(it);
    if (t != NULL) printf("%s\n", t);
    free(t);
  }
  cJSON_Delete(arr);
}
