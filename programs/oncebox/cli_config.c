/* SPDX-License-Identifier: Apache-2.0 */
/* Every CLI setting in one table: its key in the config file, its
** environment variable and its flag, and the one place that picks the
** effective value (flag > environment > file > default). docs/config.md
** documents the same table. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "programs/oncebox/config_parse.h"
#include "programs/oncebox/cli.h"

#define H1 3600000LL
#define BIG INT64_MAX

/* One setting. key.id is its cli_cfg_id_t. */
typedef struct setting_s {
  const char* section;
  ob_cfg_key_t key;
  const char* env;       /* NULL: none */
  const char* flag;      /* as shown: "--db", "run --batch"; NULL: none */
  const char* gflag;     /* a global option parsed by ob__cli_global_option */
  int gflag_bool;        /* the global option takes no value (sets true) */
  int64_t unit_ms;       /* a DURATION without a unit, in a flag or env */
  const char* dflt;      /* the default, as shown and parsed (NULL: unset) */
} setting_t;

static const char* const levels[] = {"error", "warn", "info", "debug", NULL};
static const char* const formats[] = {"text", "json", NULL};
/* In OB_OFFLINE_NO_LIMIT, OB_OFFLINE_REFUSE order. */
static const char* const offline_unlisted[] = {"no_limit", "refuse", NULL};

#define K(name, type, min, max, id) \
  {name, type, min, max, 0, 0, NULL, 0, NULL, id}
#define KN(name, dmin, dmax, id) \
  {name, OB_CFG_NUMBER, 0, 0, dmin, dmax, NULL, 0, NULL, id}
#define KE(name, choices, id) \
  {name, OB_CFG_ENUM, 0, 0, 0, 0, NULL, 0, choices, id}

/* In cli_cfg_id_t order; one section's keys together. */
static const setting_t settings[CFG_N] = {
    {"database", K("path", OB_CFG_STRING, 0, 0, CFG_DB_PATH), "ONCEBOX_DB",
     "--db", "--db", 0, 0, NULL},
    /* 0: the cap derived from the filesystem; "none": no cap at all. */
    {"database",
     {"max_bytes", OB_CFG_SIZE, 0, BIG, 0, 0, "none", OB_NO_DB_CAP, NULL,
      CFG_MAX_DB_BYTES},
     "ONCEBOX_MAX_DB_BYTES", "--max-db-bytes", "--max-db-bytes", 0, 0, "0"},
    {"database",
     {"reserve_bytes", OB_CFG_SIZE, 0, BIG, 0, 0, "auto", OB_RESERVE_AUTO,
      NULL, CFG_RESERVE_DB_BYTES},
     "ONCEBOX_RESERVE_DB_BYTES", "--reserve-db-bytes", "--reserve-db-bytes",
     0, 0, "auto"},
    {"database", K("critical_types", OB_CFG_STRING, 0, 0, CFG_CRITICAL_TYPES),
     "ONCEBOX_CRITICAL_TYPES", "--critical-types", "--critical-types", 0, 0,
     NULL},
    {"database",
     K("busy_timeout", OB_CFG_DURATION, 0, 600000, CFG_BUSY_TIMEOUT),
     "ONCEBOX_BUSY_TIMEOUT", "--busy-timeout", "--busy-timeout", 0, 1,
     "5000ms"},
    {"database",
     K("unsafe_sync_normal", OB_CFG_BOOL, 0, 0, CFG_UNSAFE_SYNC_NORMAL),
     "ONCEBOX_UNSAFE_SYNC_NORMAL", "--unsafe-sync-normal",
     "--unsafe-sync-normal", 1, 0, "false"},

    {"engine", K("batch_size", OB_CFG_INT, 1, 10000, CFG_BATCH), "ONCEBOX_BATCH",
     "run --batch", NULL, 0, 0, "1"},
    {"engine", K("retention", OB_CFG_DURATION, 1, BIG, CFG_RETENTION),
     "ONCEBOX_RETENTION", "--retention", "--retention", 0, 1000, "30d"},
    {"engine",
     K("gc_interval", OB_CFG_DURATION, 1, INT_MAX, CFG_GC_INTERVAL),
     "ONCEBOX_GC_INTERVAL", "--gc-interval", "--gc-interval", 0, 1000, "1h"},
    {"engine", K("gc_batch", OB_CFG_INT, 1, 1000000, CFG_GC_BATCH),
     "ONCEBOX_GC_BATCH", "--gc-batch", "--gc-batch", 0, 0, "1000"},
    {"engine",
     K("poll_interval", OB_CFG_DURATION, 1, INT_MAX, CFG_POLL_INTERVAL),
     "ONCEBOX_POLL_INTERVAL", "--poll-interval", "--poll-interval", 0, 1,
     "1000ms"},
    /* "poll": the poll interval (docs/decisions/0020-until-idle.md). */
    {"engine",
     {"idle_horizon", OB_CFG_DURATION, 0, BIG, 0, 0, "poll",
      OB_IDLE_HORIZON_POLL, NULL, CFG_IDLE_HORIZON},
     "ONCEBOX_IDLE_HORIZON", "run/outbox drain --idle-horizon", NULL, 0, 1,
     "poll"},
    {"engine",
     K("max_body_bytes", OB_CFG_SIZE, 1, 1024LL * 1024 * 1024,
       CFG_MAX_BODY_BYTES),
     "ONCEBOX_MAX_BODY_BYTES", "--max-body-bytes", "--max-body-bytes", 0, 0,
     "1M"},
    {"engine",
     K("wal_checkpoint_pages", OB_CFG_INT, 1, 1000000,
       CFG_WAL_CHECKPOINT_PAGES),
     "ONCEBOX_WAL_CHECKPOINT_PAGES", NULL, NULL, 0, 0, "8000"},
    {"engine", K("wal_size_limit", OB_CFG_SIZE, 0, BIG, CFG_WAL_SIZE_LIMIT),
     "ONCEBOX_WAL_SIZE_LIMIT", NULL, NULL, 0, 0, "16M"},

    {"log", KE("level", levels, CFG_LOG_LEVEL), "ONCEBOX_LOG_LEVEL",
     "--log-level", "--log-level", 0, 0, "info"},
    {"log", KE("format", formats, CFG_LOG_FORMAT), "ONCEBOX_LOG_FORMAT",
     "--log-format", "--log-format", 0, 0, "text"},

    {"retry", K("max_retries", OB_CFG_INT, 0, 1000000, CFG_RETRY_MAX),
     "ONCEBOX_RETRY_MAX_RETRIES", NULL, NULL, 0, 0, "3"},
    {"retry", K("delay", OB_CFG_DURATION, 0, BIG / 2, CFG_RETRY_DELAY),
     "ONCEBOX_RETRY_DELAY", NULL, NULL, 0, 1, "1s"},
    {"retry", KN("multiplier", 1.0, 1000.0, CFG_RETRY_MULTIPLIER),
     "ONCEBOX_RETRY_MULTIPLIER", NULL, NULL, 0, 0, "2"},
    {"retry", K("max_delay", OB_CFG_DURATION, 0, BIG / 2, CFG_RETRY_MAX_DELAY),
     "ONCEBOX_RETRY_MAX_DELAY", NULL, NULL, 0, 1, "0ms"},
    {"retry", KN("jitter", 0.0, 1.0, CFG_RETRY_JITTER), "ONCEBOX_RETRY_JITTER",
     NULL, NULL, 0, 0, "0.1"},

    {"relay", K("queue_url", OB_CFG_STRING, 0, 0, CFG_RELAY_QUEUE_URL),
     "ONCEBOX_OUTBOX_QUEUE_URL", "run/outbox drain --outbox-queue-url", NULL,
     0, 0, NULL},
    {"relay", K("source", OB_CFG_STRING, 0, 0, CFG_RELAY_SOURCE),
     "ONCEBOX_SOURCE", "run/outbox drain --source", NULL, 0, 0, NULL},
    {"relay", K("ordered", OB_CFG_BOOL, 0, 0, CFG_RELAY_ORDERED),
     "ONCEBOX_ORDERED", "run/outbox drain --ordered", NULL, 0, 0, "false"},

    {"consumer", K("queue_url", OB_CFG_STRING, 0, 0, CFG_CONSUME_QUEUE_URL),
     "ONCEBOX_CONSUME_QUEUE_URL", "run --consume-queue-url", NULL, 0, 0, NULL},
    {"consumer", K("prefetch", OB_CFG_INT, 1, 10, CFG_PREFETCH),
     "ONCEBOX_PREFETCH", "run --prefetch", NULL, 0, 0, "1"},
    {"consumer",
     K("visibility_timeout", OB_CFG_DURATION, 0, 43200000, CFG_VISIBILITY),
     "ONCEBOX_VISIBILITY_TIMEOUT", "run --visibility-timeout", NULL, 0, 1000,
     "0s"},
    {"consumer", K("failures_to_sqs", OB_CFG_BOOL, 0, 0, CFG_FAILURES_TO_SQS),
     "ONCEBOX_FAILURES_TO_SQS", "run --failures-to-sqs", NULL, 0, 0, "false"},

    {"sqs", K("allow_http", OB_CFG_BOOL, 0, 0, CFG_SQS_ALLOW_HTTP),
     "ONCEBOX_SQS_ALLOW_HTTP", "run/outbox drain --sqs-allow-http", NULL, 0, 0,
     "false"},

    {"provider", K("url", OB_CFG_STRING, 0, 0, CFG_PROVIDER_URL),
     "ONCEBOX_PROVIDER_URL", "run/effects --provider-url", NULL, 0, 0, NULL},
    {"provider", K("allow_http", OB_CFG_BOOL, 0, 0, CFG_PROVIDER_ALLOW_HTTP),
     "ONCEBOX_PROVIDER_ALLOW_HTTP", "run/effects --provider-allow-http", NULL,
     0, 0, "false"},
    {"provider",
     K("idempotency_keys", OB_CFG_BOOL, 0, 0, CFG_PROVIDER_IDEMPOTENCY),
     NULL, "run/effects --provider-no-idempotency", NULL, 0, 0, "true"},
    {"provider", K("lookup", OB_CFG_BOOL, 0, 0, CFG_PROVIDER_LOOKUP), NULL,
     "run/effects --provider-no-lookup", NULL, 0, 0, "true"},
    {"provider",
     K("timeout", OB_CFG_DURATION, 1, 600000, CFG_PROVIDER_TIMEOUT),
     "ONCEBOX_PROVIDER_TIMEOUT", "run/effects --provider-timeout", NULL, 0, 1,
     "30s"},
    {"provider",
     K("key_retention", OB_CFG_DURATION, 0, BIG, CFG_PROVIDER_KEY_RETENTION),
     "ONCEBOX_PROVIDER_KEY_RETENTION", "run/effects --provider-key-retention",
     NULL, 0, 1000, "24h"},
    {"provider",
     K("reference_lookup", OB_CFG_STRING, 0, 0, CFG_PROVIDER_REFERENCE_LOOKUP),
     "ONCEBOX_PROVIDER_REFERENCE_LOOKUP",
     "run/effects --provider-reference-lookup", NULL, 0, 0, NULL},
    /* docs/offline.md: EUR:max_amount=25000:max_total=100000,USD:... */
    {"provider",
     K("offline_limits", OB_CFG_STRING, 0, 0, CFG_PROVIDER_OFFLINE_LIMITS),
     "ONCEBOX_PROVIDER_OFFLINE_LIMITS", "run --provider-offline-limits", NULL,
     0, 0, NULL},
    {"provider",
     KE("offline_unlisted", offline_unlisted, CFG_PROVIDER_OFFLINE_UNLISTED),
     "ONCEBOX_PROVIDER_OFFLINE_UNLISTED", "run --provider-offline-unlisted",
     NULL, 0, 0, "no_limit"},

    {"metrics", K("listen", OB_CFG_STRING, 0, 0, CFG_METRICS_LISTEN),
     "ONCEBOX_METRICS_LISTEN", "run --metrics-listen", NULL, 0, 0, NULL},
    {"metrics", K("allow_remote", OB_CFG_BOOL, 0, 0, CFG_METRICS_ALLOW_REMOTE),
     "ONCEBOX_METRICS_ALLOW_REMOTE", "run --metrics-allow-remote", NULL, 0, 0,
     "false"},
    {"metrics", K("refresh", OB_CFG_DURATION, 100, BIG, CFG_METRICS_REFRESH),
     "ONCEBOX_METRICS_REFRESH", "run --metrics-refresh", NULL, 0, 1000, "5s"},
    {"metrics",
     K("health_relay_failing", OB_CFG_DURATION, 0, BIG,
       CFG_HEALTH_RELAY_FAILING),
     "ONCEBOX_HEALTH_RELAY_FAILING", "run/health --health-relay-failing", NULL,
     0, 1000, "5m"},
    {"metrics",
     K("health_effects_unknown", OB_CFG_INT, 0, 1000000000,
       CFG_HEALTH_EFFECTS_UNKNOWN),
     "ONCEBOX_HEALTH_EFFECTS_UNKNOWN", "run/health --health-effects-unknown",
     NULL, 0, 0, "0"},
    {"metrics", K("health_period", OB_CFG_DURATION, 0, BIG, CFG_HEALTH_PERIOD),
     "ONCEBOX_HEALTH_PERIOD", "run --health-period", NULL, 0, 1000, "1m"},
    {"metrics", K("health_failed", OB_CFG_INT, -1, 1000000000, CFG_HEALTH_FAILED),
     "ONCEBOX_HEALTH_FAILED", "run --health-failed", NULL, 0, 0, "5"},
    {"metrics",
     K("health_retried", OB_CFG_INT, -1, 1000000000, CFG_HEALTH_RETRIED),
     "ONCEBOX_HEALTH_RETRIED", "run --health-retried", NULL, 0, 0, "5"},
};

enum { L_FLAG, L_ENV, L_FILE, NLAYERS };

typedef struct value_s {
  int set;
  int line;         /* L_FILE */
  int64_t i;
  double d;
  const char* s;    /* L_FILE: owned (strdup); else argv or environ */
} value_t;

/* A [retry.QUEUE] section: the keys it set, over the default policy. */
typedef struct queue_policy_s {
  char queue[OB_CFG_MAX_SUB + 1];
  value_t v[5];     /* CFG_RETRY_MAX .. CFG_RETRY_JITTER */
} queue_policy_t;

struct cli_cfg_s {
  value_t layer[CFG_N][NLAYERS];
  value_t dflt[CFG_N];
  char* file;               /* the file read; NULL: none */
  queue_policy_t* queues;
  size_t nqueues;
  const char* env_name;     /* for messages: the variable being read */
};

#define NSECTIONS 10

/* The parser's schema, from the table. */
typedef struct schema_s {
  ob_cfg_key_t keys[CFG_N];
  ob_cfg_section_t sections[NSECTIONS];
  ob_cfg_schema_t schema;
} schema_t;

static void build_schema(schema_t* s) {
  size_t ns = 0;
  for (int i = 0; i < CFG_N; i++) {
    s->keys[i] = settings[i].key;
    if (ns == 0 || strcmp(s->sections[ns - 1].name, settings[i].section) != 0) {
      s->sections[ns].name = settings[i].section;
      s->sections[ns].subs = strcmp(settings[i].section, "retry") == 0;
      s->sections[ns].keys = &s->keys[i];
      s->sections[ns].nkeys = 0;
      ns++;
    }
    s->sections[ns - 1].nkeys++;
  }
  s->schema.sections = s->sections;
  s->schema.nsections = ns;
  s->schema.secret_hint =
      "put ONCEBOX_PROVIDER_AUTHORIZATION in the service's environment "
      "(EnvironmentFile=, mode 0600) and AWS keys in AWS_* variables or "
      "~/.aws/credentials (docs/config.md, \"Secrets\")";
}

const char* ob__cli_cfg_name(int id, char* out, size_t n) {
  snprintf(out, n, "%s.%s", settings[id].section, settings[id].key.name);
  return out;
}

int ob__cli_cfg_init(cli_t* cli) {
  cli->cfg = calloc(1, sizeof *cli->cfg);
  if (cli->cfg == NULL) return -1;
  for (int i = 0; i < CFG_N; i++) {
    const setting_t* st = &settings[i];
    ob_cfg_value_t v;
    char why[256];
    if (st->dflt == NULL) continue;
    if (ob__cfg_parse_value(&st->key, st->dflt, strlen(st->dflt), 0, &v, why,
                            sizeof why) != 0)
      abort();  /* the table is wrong: a test catches it */
    cli->cfg->dflt[i].set = 1;
    cli->cfg->dflt[i].i = v.i;
    cli->cfg->dflt[i].d = v.d;
    cli->cfg->dflt[i].s = st->dflt;
  }
  return 0;
}

void ob__cli_cfg_free(cli_t* cli) {
  if (cli->cfg == NULL) return;
  for (int i = 0; i < CFG_N; i++) free((char*)cli->cfg->layer[i][L_FILE].s);
  free(cli->cfg->file);
  free(cli->cfg->queues);
  free(cli->cfg);
  cli->cfg = NULL;
}

/* Parse text as setting id's value from a flag or the environment. */
static int set_text(value_t* out, int id, const char* text, char* why,
                    size_t whylen) {
  const setting_t* st = &settings[id];
  ob_cfg_value_t v;
  if (st->key.type == OB_CFG_BOOL && strcmp(text, "1") == 0) {
    v.i = 1;
  } else if (ob__cfg_parse_value(&st->key, text, strlen(text), st->unit_ms, &v,
                                 why, whylen) != 0) {
    return -1;
  }
  out->set = 1;
  out->i = v.i;
  out->d = v.d;
  out->s = text;
  return 0;
}

int ob__cli_cfg_flag(cli_t* cli, int id, const char* value, const char* flag,
                     const char* cmd) {
  char why[256];
  if (set_text(&cli->cfg->layer[id][L_FLAG], id, value, why, sizeof why) < 0) {
    fprintf(stderr, "oncebox%s%s: %s %s\n", cmd ? " " : "", cmd ? cmd : "",
            flag, why);
    return -1;
  }
  return 0;
}

int ob__cli_global_option(cli_t* cli, int argc, char** argv, int* i) {
  const char* a = argv[*i];
  for (int id = 0; id < CFG_N; id++) {
    const char* g = settings[id].gflag;
    size_t n;
    const char* v;
    if (g == NULL) continue;
    n = strlen(g);
    if (strncmp(a, g, n) != 0 || (a[n] != '\0' && a[n] != '=')) continue;
    if (settings[id].gflag_bool) {
      if (a[n] == '=') {
        fprintf(stderr, "oncebox: option '%s' takes no value\n", g);
        return -1;
      }
      v = "true";
    } else if (a[n] == '=') {
      v = a + n + 1;
    } else if (*i + 1 < argc) {
      v = argv[++*i];
    } else {
      fprintf(stderr, "oncebox: option '%s' needs a value\n", g);
      return -1;
    }
    return ob__cli_cfg_flag(cli, id, v, g, NULL) < 0 ? -1 : 1;
  }
  return 0;
}

/* ---- the environment ---------------------------------------------------- */

static int load_env(cli_t* cli) {
  char why[256];
  for (int id = 0; id < CFG_N; id++) {
    const setting_t* st = &settings[id];
    const char* v = st->env ? getenv(st->env) : NULL;
    value_t* out = &cli->cfg->layer[id][L_ENV];
    /* Empty: unset, as the variables always were. */
    if (v == NULL || v[0] == '\0') continue;
    if (st->key.type == OB_CFG_BOOL) {
      /* Only 1 opts in, as the library reads ONCEBOX_SQS_ALLOW_HTTP. */
      out->set = 1;
      out->i = strcmp(v, "1") == 0;
      out->s = v;
      continue;
    }
    if (set_text(out, id, v, why, sizeof why) < 0) {
      fprintf(stderr, "oncebox: %s %s\n", st->env, why);
      return -1;
    }
  }
  return 0;
}

/* ---- the file ----------------------------------------------------------- */

static int file_value(void* ctx, const ob_cfg_value_t* v, char* why,
                      size_t whylen) {
  cli_cfg_t* cfg = ctx;
  int id = v->key->id;
  value_t* out;
  /* [retry.QUEUE]: only the retry keys (no strings) reach here. */
  if (v->sub[0] != '\0') {
    queue_policy_t* q = NULL;
    for (size_t i = 0; i < cfg->nqueues; i++)
      if (strcmp(cfg->queues[i].queue, v->sub) == 0) q = &cfg->queues[i];
    if (q == NULL) {
      queue_policy_t* grown =
          realloc(cfg->queues, (cfg->nqueues + 1) * sizeof *grown);
      if (grown == NULL) {
        snprintf(why, whylen, "out of memory");
        return -1;
      }
      cfg->queues = grown;
      q = &cfg->queues[cfg->nqueues++];
      memset(q, 0, sizeof *q);
      snprintf(q->queue, sizeof q->queue, "%s", v->sub);
    }
    out = &q->v[id - CFG_RETRY_MAX];
  } else {
    out = &cfg->layer[id][L_FILE];
  }
  out->set = 1;
  out->line = v->line;
  out->i = v->i;
  out->d = v->d;
  if (v->key->type == OB_CFG_STRING) {
    out->s = strdup(v->s);
    if (out->s == NULL) {
      snprintf(why, whylen, "out of memory");
      return -1;
    }
  }
  return 0;
}

int ob__cli_cfg_read_file(const char* path, int explicit_path, char** text,
                          size_t* len) {
  struct stat st;
  int fd;
  ssize_t got;
  size_t n = 0;
  char* buf;
  *text = NULL;
  *len = 0;
  fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    if (errno == ENOENT && !explicit_path) return 1;
    fprintf(stderr, "oncebox: cannot read the config file %s: %s\n", path,
            strerror(errno));
    return -1;
  }
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    fprintf(stderr, "oncebox: the config file %s is not a regular file\n",
            path);
    close(fd);
    return -1;
  }
  /* Whoever may write the file decides what the service does (which
  ** database, which provider URL): only root or the user itself. */
  if (st.st_mode & S_IWOTH) {
    fprintf(stderr, "oncebox: refusing the config file %s: it is "
            "world-writable (mode %04o); run chmod o-w %s\n", path,
            (unsigned)(st.st_mode & 07777), path);
    close(fd);
    return -1;
  }
  if (st.st_uid != 0 && st.st_uid != geteuid()) {
    fprintf(stderr, "oncebox: refusing the config file %s: it is owned by "
            "uid %u, neither root nor this user (uid %u)\n", path,
            (unsigned)st.st_uid, (unsigned)geteuid());
    close(fd);
    return -1;
  }
  if (st.st_size > OB_CFG_MAX_BYTES) {
    fprintf(stderr, "oncebox: %s: larger than %d bytes\n", path,
            OB_CFG_MAX_BYTES);
    close(fd);
    return -1;
  }
  buf = malloc((size_t)st.st_size + 1);
  if (buf == NULL) {
    close(fd);
    fprintf(stderr, "oncebox: %s: out of memory\n", path);
    return -1;
  }
  while (n <= (size_t)st.st_size &&
         (got = read(fd, buf + n, (size_t)st.st_size + 1 - n)) != 0) {
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      fprintf(stderr, "oncebox: cannot read the config file %s: %s\n", path,
              strerror(errno));
      free(buf);
      close(fd);
      return -1;
    }
    n += (size_t)got;
  }
  close(fd);
  *text = buf;
  *len = n;  /* a file that grew while read fails the size check below */
  return 0;
}

int ob__cli_cfg_parse_file(cli_t* cli, const char* path, const char* text,
                           size_t len) {
  schema_t s;
  char err[1024];
  build_schema(&s);
  if (ob__cfg_parse(path, text, len, &s.schema, file_value, cli->cfg, err,
                    sizeof err) != 0) {
    fprintf(stderr, "oncebox: %s\n", err);
    return -1;
  }
  return 0;
}

/* Which file: --config, else $ONCEBOX_CONFIG, else the default when it
** exists. Returns 0 (also for none), -1 after printing why. */
static int load_file(cli_t* cli) {
  const char* path = cli->config_path;
  int explicit_path = 1, rc;
  char* text;
  size_t len;
  if (path == NULL) path = getenv("ONCEBOX_CONFIG");
  if (path == NULL || path[0] == '\0') {
    path = OB_CLI_DEFAULT_CONFIG;
    explicit_path = 0;
  }
  rc = ob__cli_cfg_read_file(path, explicit_path, &text, &len);
  if (rc == 1) {
    cli->config_path = NULL;
    return 0;
  }
  if (rc < 0) return -1;
  cli->cfg->file = strdup(path);
  rc = cli->cfg->file == NULL ? -1 : ob__cli_cfg_parse_file(cli, path, text, len);
  free(text);
  cli->config_path = cli->cfg->file;
  return rc;
}

/* ---- the effective values ------------------------------------------------ */

/* The value in force and its layer (NLAYERS: the default); NULL if none. */
static const value_t* effective(const cli_t* cli, int id, int* layer) {
  for (int l = 0; l < NLAYERS; l++)
    if (cli->cfg->layer[id][l].set) {
      if (layer) *layer = l;
      return &cli->cfg->layer[id][l];
    }
  if (layer) *layer = NLAYERS;
  return cli->cfg->dflt[id].set ? &cli->cfg->dflt[id] : NULL;
}

int ob__cli_cfg_from_env(const cli_t* cli, int id) {
  int l;
  (void)effective(cli, id, &l);
  return l == L_ENV;
}

int ob__cli_cfg_given(const cli_t* cli, int id) {
  int l;
  (void)effective(cli, id, &l);
  return l < NLAYERS;
}

int64_t ob__cli_cfg_int(const cli_t* cli, int id) {
  const value_t* v = effective(cli, id, NULL);
  return v ? v->i : 0;
}

double ob__cli_cfg_num(const cli_t* cli, int id) {
  const value_t* v = effective(cli, id, NULL);
  return v ? v->d : 0.0;
}

const char* ob__cli_cfg_str(const cli_t* cli, int id) {
  const value_t* v = effective(cli, id, NULL);
  return v && v->s && v->s[0] ? v->s : NULL;
}

/* Checks that span settings or that the parser's ranges can't say. */
static int cross_checks(cli_t* cli) {
  int64_t cap = ob__cli_cfg_int(cli, CFG_MAX_DB_BYTES);
  int64_t reserve = ob__cli_cfg_int(cli, CFG_RESERVE_DB_BYTES);
  int64_t kr = ob__cli_cfg_int(cli, CFG_PROVIDER_KEY_RETENTION);
  int64_t vis = ob__cli_cfg_int(cli, CFG_VISIBILITY);
  char a[64], b[64];
  if (cap > 0 && reserve > cap / 2) {
    fprintf(stderr, "oncebox: the reserve (%lld bytes, %s) must be at most "
            "half of the size cap (%lld bytes, %s)\n", (long long)reserve,
            ob__cli_cfg_source(cli, CFG_RESERVE_DB_BYTES, a, sizeof a),
            (long long)cap,
            ob__cli_cfg_source(cli, CFG_MAX_DB_BYTES, b, sizeof b));
    return -1;
  }
  if (kr > 0 && kr < H1) {
    fprintf(stderr, "oncebox: provider.key_retention (%s) wants 0 or a "
            "duration of at least 1h, such as 24h or 31d\n",
            ob__cli_cfg_source(cli, CFG_PROVIDER_KEY_RETENTION, a, sizeof a));
    return -1;
  }
  {
    ob_offline_limit_t l[CLI_MAX_OFFLINE];
    char cur[CLI_MAX_OFFLINE][4], why[200];
    size_t n;
    if (ob__cli_offline_limits_parse(
            ob__cli_cfg_str(cli, CFG_PROVIDER_OFFLINE_LIMITS), l, cur,
            CLI_MAX_OFFLINE, &n, why, sizeof why) < 0) {
      fprintf(stderr, "oncebox: provider.offline_limits (%s): %s\n",
              ob__cli_cfg_source(cli, CFG_PROVIDER_OFFLINE_LIMITS, a,
                                 sizeof a), why);
      return -1;
    }
  }
  if (vis % 1000 != 0) {
    fprintf(stderr, "oncebox: consumer.visibility_timeout (%s) wants whole "
            "seconds\n", ob__cli_cfg_source(cli, CFG_VISIBILITY, a, sizeof a));
    return -1;
  }
  return 0;
}

int ob__cli_cfg_resolve(cli_t* cli) {
  if (cross_checks(cli) < 0) return -1;
  cli->db_path = ob__cli_cfg_str(cli, CFG_DB_PATH);
  cli->log_level = (ob_log_level_t)ob__cli_cfg_int(cli, CFG_LOG_LEVEL);
  cli->log_format = ob__cli_cfg_int(cli, CFG_LOG_FORMAT) == 1 ? CLI_LOG_JSON
                                                              : CLI_LOG_TEXT;
  cli->sync_normal = (int)ob__cli_cfg_int(cli, CFG_UNSAFE_SYNC_NORMAL);
  cli->max_db_bytes = ob__cli_cfg_int(cli, CFG_MAX_DB_BYTES);
  cli->reserve_db_bytes = ob__cli_cfg_int(cli, CFG_RESERVE_DB_BYTES);
  cli->critical_types = ob__cli_cfg_str(cli, CFG_CRITICAL_TYPES);
  cli->metrics_listen = ob__cli_cfg_str(cli, CFG_METRICS_LISTEN);
  return 0;
}

int ob__cli_cfg_load(cli_t* cli, int read_file) {
  if (load_env(cli) < 0) return -1;
  if (read_file && load_file(cli) < 0) return -1;
  return ob__cli_cfg_resolve(cli);
}

const char* ob__cli_cfg_source(const cli_t* cli, int id, char* out, size_t n) {
  int l;
  const value_t* v = effective(cli, id, &l);
  switch (l) {
    case L_FLAG: snprintf(out, n, "flag %s", settings[id].gflag ? settings[id].gflag : settings[id].flag); break;
    case L_ENV: snprintf(out, n, "env %s", settings[id].env); break;
    case L_FILE: snprintf(out, n, "file %s:%d", cli->cfg->file, v->line); break;
    default: snprintf(out, n, "default"); break;
  }
  return out;
}

/* The default policy as configured. */
static void default_policy(const cli_t* cli, ob_retry_policy_t* p) {
  p->max_retries = (int)ob__cli_cfg_int(cli, CFG_RETRY_MAX);
  p->delay_ms = ob__cli_cfg_int(cli, CFG_RETRY_DELAY);
  p->multiplier = ob__cli_cfg_num(cli, CFG_RETRY_MULTIPLIER);
  p->max_delay_ms = ob__cli_cfg_int(cli, CFG_RETRY_MAX_DELAY);
  p->jitter = ob__cli_cfg_num(cli, CFG_RETRY_JITTER);
}

void ob__cli_cfg_options(const cli_t* cli, ob_options_t* o) {
  o->busy_timeout_ms = (int)ob__cli_cfg_int(cli, CFG_BUSY_TIMEOUT);
  o->batch_size = (int)ob__cli_cfg_int(cli, CFG_BATCH);
  o->retention_ms = ob__cli_cfg_int(cli, CFG_RETENTION);
  o->gc_interval_ms = (int)ob__cli_cfg_int(cli, CFG_GC_INTERVAL);
  o->gc_batch = (int)ob__cli_cfg_int(cli, CFG_GC_BATCH);
  o->poll_interval_ms = (int)ob__cli_cfg_int(cli, CFG_POLL_INTERVAL);
  o->idle_horizon_ms = ob__cli_cfg_int(cli, CFG_IDLE_HORIZON);
  o->max_body_bytes = (size_t)ob__cli_cfg_int(cli, CFG_MAX_BODY_BYTES);
  o->wal_checkpoint_pages = (int)ob__cli_cfg_int(cli, CFG_WAL_CHECKPOINT_PAGES);
  o->wal_size_limit_bytes = ob__cli_cfg_int(cli, CFG_WAL_SIZE_LIMIT);
  default_policy(cli, &o->retry);
}

/* A queue's policy: the default, with the keys its section set. */
static void queue_policy(const cli_t* cli, const queue_policy_t* q,
                         ob_retry_policy_t* p) {
  default_policy(cli, p);
  if (q->v[0].set) p->max_retries = (int)q->v[0].i;
  if (q->v[1].set) p->delay_ms = q->v[1].i;
  if (q->v[2].set) p->multiplier = q->v[2].d;
  if (q->v[3].set) p->max_delay_ms = q->v[3].i;
  if (q->v[4].set) p->jitter = q->v[4].d;
}

int ob__cli_cfg_apply_retry(const cli_t* cli, ob_engine_t* e) {
  for (size_t i = 0; i < cli->cfg->nqueues; i++) {
    ob_retry_policy_t p;
    int rc;
    queue_policy(cli, &cli->cfg->queues[i], &p);
    if ((rc = ob_set_retry_policy(e, cli->cfg->queues[i].queue, &p)) < 0) {
      fprintf(stderr, "oncebox: [retry.%s]: %s\n", cli->cfg->queues[i].queue,
              ob_strerror(rc));
      return -1;
    }
  }
  return 0;
}

/* ---- config show ------------------------------------------------------- */

/* The value as text, in the file's syntax. */
static void show_value(const cli_t* cli, int id, const value_t* v, char* out,
                       size_t n) {
  const ob_cfg_key_t* k = &settings[id].key;
  (void)cli;
  if (v == NULL) {
    snprintf(out, n, "(not set)");
    return;
  }
  switch (k->type) {
    case OB_CFG_STRING:
      /* A connection string may hold a password: shown without it. */
      if (id == CFG_DB_PATH && v->s != NULL) ob_db_display_name(v->s, out, n);
      else snprintf(out, n, "%s", v->s ? v->s : "");
      break;
    case OB_CFG_BOOL: snprintf(out, n, "%s", v->i ? "true" : "false"); break;
    case OB_CFG_ENUM: snprintf(out, n, "%s", k->choices[v->i]); break;
    case OB_CFG_NUMBER: snprintf(out, n, "%g", v->d); break;
    case OB_CFG_DURATION: {
      /* The largest unit that says it exactly: 30d, not 2592000000ms. */
      static const struct { int64_t ms; const char* unit; } units[] = {
          {86400000, "d"}, {3600000, "h"}, {60000, "m"}, {1000, "s"}};
      const char* unit = "ms";
      int64_t x = v->i;
      for (size_t u = 0; u < 4 && x != 0; u++)
        if (x % units[u].ms == 0) {
          x /= units[u].ms;
          unit = units[u].unit;
          break;
        }
      if (v->i == 0) unit = "s";
      snprintf(out, n, "%lld%s", (long long)x, unit);
      break;
    }
    default:
      if (k->word != NULL && v->i == k->word_value)
        snprintf(out, n, "%s", k->word);
      else
        snprintf(out, n, "%lld", (long long)v->i);
  }
}

void ob__cli_cfg_show(const cli_t* cli, FILE* f, int json) {
  char name[96], val[4200], src[4200];
  int first = 1;
  const char* auth = getenv("ONCEBOX_PROVIDER_AUTHORIZATION");
  if (json) fprintf(f, "{\"file\":");
  if (json && cli->cfg->file) ob__cli_json_str(f, cli->cfg->file, strlen(cli->cfg->file));
  else if (json) fputs("null", f);
  if (json) fputs(",\"settings\":[", f);
  if (!json)
    fprintf(f, "# config file: %s\n", cli->cfg->file ? cli->cfg->file
                                                   : "(none)");
  for (int id = 0; id < CFG_N; id++) {
    const value_t* v = effective(cli, id, NULL);
    ob__cli_cfg_name(id, name, sizeof name);
    show_value(cli, id, v, val, sizeof val);
    ob__cli_cfg_source(cli, id, src, sizeof src);
    if (json) {
      fprintf(f, "%s{\"key\":\"%s\",\"value\":", first ? "" : ",", name);
      if (v == NULL) fputs("null", f);
      else ob__cli_json_str(f, val, strlen(val));
      fputs(",\"source\":", f);
      ob__cli_json_str(f, src, strlen(src));
      fputc('}', f);
    } else {
      fprintf(f, "%-30s = ", name);
      ob__cli_print_safe(f, val, strlen(val));
      fprintf(f, "  (%s)\n", src);
    }
    first = 0;
  }
  for (size_t q = 0; q < cli->cfg->nqueues; q++) {
    const queue_policy_t* qp = &cli->cfg->queues[q];
    for (int k = 0; k < 5; k++) {
      int id = CFG_RETRY_MAX + k;
      const value_t* v = qp->v[k].set ? &qp->v[k] : effective(cli, id, NULL);
      snprintf(name, sizeof name, "retry.%s.%s", qp->queue,
               settings[id].key.name);
      show_value(cli, id, v, val, sizeof val);
      if (qp->v[k].set)
        snprintf(src, sizeof src, "file %s:%d", cli->cfg->file, qp->v[k].line);
      else
        snprintf(src, sizeof src, "as retry.%s", settings[id].key.name);
      if (json) {
        fprintf(f, ",{\"key\":");
        ob__cli_json_str(f, name, strlen(name));
        fputs(",\"value\":", f);
        ob__cli_json_str(f, val, strlen(val));
        fputs(",\"source\":", f);
        ob__cli_json_str(f, src, strlen(src));
        fputc('}', f);
      } else {
        fprintf(f, "%-30s = %s  (%s)\n", name, val, src);
      }
    }
  }
  /* Secrets: whether they are set and where from, never their value. */
  snprintf(val, sizeof val, "%s", auth && auth[0] ? "(set, from environment)"
                                                  : "(not set)");
  if (json) {
    fprintf(f, ",{\"key\":\"provider.authorization\",\"value\":\"%s\","
            "\"source\":\"%s\"}]}\n", auth && auth[0] ? "(set)" : "(not set)",
            auth && auth[0] ? "env ONCEBOX_PROVIDER_AUTHORIZATION" : "default");
  } else {
    fprintf(f, "%-30s = %s  (secret: environment only, "
            "ONCEBOX_PROVIDER_AUTHORIZATION)\n", "provider.authorization", val);
  }
}
