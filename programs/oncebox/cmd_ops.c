/* SPDX-License-Identifier: Apache-2.0 */
/* oncebox stats | check | gc */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/util/prometheus.h"
#include "core/util/utc_time.h"
#include "programs/oncebox/cli.h"
#include "platform/metrics/figures.h"

static int has_flag(int argc, char** argv, const char* flag) {
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], flag) == 0) return 1;
  return 0;
}

static int only_flags(int argc, char** argv, const char* cmd,
                      const char* allowed) {
  for (int i = 1; i < argc; i++) {
    if (allowed && strcmp(argv[i], allowed) == 0) continue;
    fprintf(stderr, "oncebox %s: unexpected argument '%s'\n", cmd, argv[i]);
    return 0;
  }
  return 1;
}

/* Write data to path atomically for a reader polling it (node_exporter's
** textfile collector): a temp file beside it (same directory, so rename
** is atomic; its name does not end in .prom, so the collector skips it),
** fsync, mode 0644, rename over path, fsync the directory. A reader sees
** the old file or the new one, never a part. On failure, prints why with
** the path, removes the temp file and returns -1. */
static int write_atomic(const char* path, const char* data, size_t len) {
  size_t n = strlen(path);
  char* tmp = malloc(n + sizeof ".tmp.XXXXXX");
  const char* what = "create a temp file for";
  int fd = -1, err = 0, created = 0;
  if (tmp == NULL) {
    fprintf(stderr, "oncebox stats: out of memory\n");
    return -1;
  }
  memcpy(tmp, path, n);
  memcpy(tmp + n, ".tmp.XXXXXX", sizeof ".tmp.XXXXXX");
  fd = mkstemp(tmp);
  if (fd < 0) {
    err = errno;
    goto fail;
  }
  created = 1;
  /* mkstemp makes it 0600; the collector may run as another user. */
  what = "write";
  if (fchmod(fd, 0644) != 0) {
    err = errno;
    goto fail;
  }
  for (size_t off = 0; off < len;) {
    ssize_t w = write(fd, data + off, len - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      err = w < 0 ? errno : EIO;
      goto fail;
    }
    off += (size_t)w;
  }
  if (fsync(fd) != 0) {
    err = errno;
    goto fail;
  }
  if (close(fd) != 0) {
    fd = -1;
    err = errno;
    goto fail;
  }
  fd = -1;
  what = "replace";
  if (rename(tmp, path) != 0) {
    err = errno;
    goto fail;
  }
  {
    /* The rename itself durable: best effort, the file is in place. */
    char* dir = strdup(path);
    char* slash = dir ? strrchr(dir, '/') : NULL;
    int dfd;
    if (dir != NULL) {
      if (slash == dir) slash[1] = '\0';
      else if (slash) *slash = '\0';
      dfd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (dfd >= 0) {
        (void)fsync(dfd);
        close(dfd);
      }
      free(dir);
    }
  }
  free(tmp);
  return 0;
fail:
  if (fd >= 0) close(fd);
  if (created) unlink(tmp);
  fprintf(stderr, "oncebox stats: cannot %s %s: %s\n", what, path,
          strerror(err));
  free(tmp);
  return -1;
}

/* A figure's name (snake_case) as a JSON key: unfenced_successes is
** unfencedSuccesses. */
static void camel_case(const char* name, char* out, size_t n) {
  size_t k = 0;
  for (int up = 0; *name != '\0' && k + 1 < n; name++) {
    if (*name == '_') {
      up = 1;
      continue;
    }
    out[k++] = up ? (char)(*name - ('a' <= *name && *name <= 'z' ? 32 : 0))
                  : *name;
    up = 0;
  }
  out[k] = '\0';
}

/* ob_stats_t.db_cap_source as a word (stats --json, "capSource"). */
static const char* cap_source(int source) {
  switch (source) {
    case OB_CAP_CONFIGURED: return "configured";
    case OB_CAP_FILESYSTEM: return "filesystem";
    default: return "none";
  }
}

int ob__cmd_stats(cli_t* cli, int argc, char** argv) {
  ob_engine_t* e;
  ob__figures_t r;
  ob_stats_t s;
  int code, rc, json = 0, prom = 0;
  const char* prom_file = NULL;
  char age[32];

  if (ob__cli_wants_help(argc, argv)) {
    printf("usage: oncebox --db FILE stats [--json | --prometheus |\n"
           "                                --prometheus-file PATH]\n\n"
           "Queue ready/delayed/in hand, failed messages, dedup records,\n"
           "payouts, outbox unpublished count and oldest unpublished age,\n"
           "the relay: parked rows, last publish, online / offline / not\n"
           "publishing and why in words (a refused credential, a server that\n"
           "is not the SQS JSON API, what the network said),\n"
           "charges, effects by state, fence claims against the provider's\n"
           "2xx answers (repeated: 2xx beyond the first for one key). A success\n"
           "recorded without a confirmed fence is reported in an ALERT line.\n"
           "All figures come from one read transaction.\n\n"
           "  --json                  one JSON object\n"
           "  --prometheus            Prometheus text format 0.0.4 on stdout\n"
           "                          (metrics: docs/operations.md)\n"
           "  --prometheus-file PATH  the same into PATH, replaced atomically\n"
           "                          (mode 0644), for node_exporter's\n"
           "                          textfile collector; nothing on stdout\n");
    return EXIT_OK;
  }
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--json") == 0) {
      json = 1;
    } else if (strcmp(argv[i], "--prometheus") == 0) {
      prom = 1;
    } else if (strcmp(argv[i], "--prometheus-file") == 0 ||
               strncmp(argv[i], "--prometheus-file=", 18) == 0) {
      const char* v = argv[i][17] == '=' ? argv[i] + 18
                      : i + 1 < argc     ? argv[++i]
                                         : NULL;
      if (v == NULL || *v == '\0') {
        fprintf(stderr, "oncebox stats: --prometheus-file needs a PATH\n");
        return EXIT_USAGE;
      }
      prom_file = v;
      prom = 1;
    } else {
      fprintf(stderr, "oncebox stats: unexpected argument '%s'\n", argv[i]);
      return EXIT_USAGE;
    }
  }
  if (json && prom) {
    fprintf(stderr, "oncebox stats: --json and --prometheus exclude each "
                    "other\n");
    return EXIT_USAGE;
  }
  e = ob__cli_open_existing(cli, &code);
  if (e == NULL) return code;
  /* One snapshot: the modules' figures agree with the engine's. */
  rc = ob__figures_read(e, &r);
  if (rc < 0) {
    fprintf(stderr, "oncebox stats: %s\n", ob_errmsg(e));
    ob_close(e);
    return EXIT_FAIL;
  }
  s = r.s;
  if (prom) {
    ob__prom_input_t in = {&s, r.mod, r.nmod, ob_version(), 0, NULL};
    const ob_clock_t* clk = ob_system_clock();
    size_t len = 0;
    char* text;
    in.now_ms = clk->now_ms(clk->ctx);
    text = ob__prom_render(&in, &len);
    if (text == NULL) {
      fprintf(stderr, "oncebox stats: out of memory\n");
      ob_close(e);
      return EXIT_FAIL;
    }
    if (prom_file != NULL) {
      rc = write_atomic(prom_file, text, len);
    } else {
      rc = fwrite(text, 1, len, stdout) == len ? 0 : -1;
      if (rc < 0) fprintf(stderr, "oncebox stats: cannot write stdout\n");
    }
    free(text);
    if (rc < 0) {
      ob_close(e);
      return EXIT_FAIL;
    }
  } else if (json) {
    cJSON* o = cJSON_CreateObject();
    cJSON* q;
    char when[OB__UTC_MS_LEN];
    const ob_clock_t* clk = ob_system_clock();
    /* What read it, which file, when: a line stands alone in a log. */
    (void)ob__utc_format_ms(clk->now_ms(clk->ctx), when);
    cJSON_AddStringToObject(o, "version", ob_version());
    char shown[512];
    ob_db_display_name(cli->db_path, shown, sizeof shown);
    cJSON_AddStringToObject(o, "database", shown);
    cJSON_AddStringToObject(o, "time", when);
    q = cJSON_AddObjectToObject(o, "queue");
    cJSON_AddNumberToObject(q, "ready", (double)s.queue_ready);
    cJSON_AddNumberToObject(q, "delayed", (double)s.queue_delayed);
    cJSON_AddNumberToObject(q, "inHand", (double)s.queue_in_hand);
    cJSON_AddNumberToObject(o, "failed", (double)s.failed);
    cJSON_AddNumberToObject(o, "processed", (double)s.processed);
    cJSON* ob = cJSON_AddObjectToObject(o, "outbox");
    cJSON_AddNumberToObject(ob, "unpublished", (double)s.outbox_unpublished);
    cJSON_AddNumberToObject(ob, "published", (double)s.outbox_published);
    cJSON_AddNumberToObject(ob, "oldestUnpublishedAgeMs",
                            (double)s.outbox_oldest_unpublished_age_ms);
    cJSON_AddNumberToObject(ob, "parked", (double)s.outbox_parked);
    cJSON_AddNumberToObject(ob, "due", (double)s.outbox_due);
    if (s.last_publish_at_ms > 0)
      cJSON_AddNumberToObject(ob, "lastPublishAtMs", (double)s.last_publish_at_ms);
    else
      cJSON_AddNullToObject(ob, "lastPublishAtMs");
    if (s.relay_online < 0) cJSON_AddNullToObject(ob, "online");
    else cJSON_AddBoolToObject(ob, "online", s.relay_online == 1);
    if (s.relay_error[0]) cJSON_AddStringToObject(ob, "error", s.relay_error);
    else cJSON_AddNullToObject(ob, "error");
    if (s.db_postgresql) {
      cJSON* pg = cJSON_AddObjectToObject(o, "postgresql");
      cJSON_AddNumberToObject(pg, "oldestTransactionAgeMs",
                              (double)s.db_oldest_xact_age_ms);
      cJSON_AddNumberToObject(pg, "deadTuples", (double)s.db_dead_tuples);
    }
    cJSON* ef = cJSON_AddObjectToObject(o, "effects");
    cJSON_AddNumberToObject(ef, "pending", (double)s.effects_pending);
    cJSON_AddNumberToObject(ef, "unknown", (double)s.effects_unknown);
    cJSON_AddNumberToObject(ef, "parked", (double)s.effects_parked);
    cJSON_AddNumberToObject(ef, "keyExpired", (double)s.effects_key_expired);
    cJSON_AddNumberToObject(ef, "conflict", (double)s.effects_conflict);
    cJSON_AddNumberToObject(ef, "replayedError",
                            (double)s.effects_replayed_error);
    cJSON_AddNumberToObject(ef, "confirmed", (double)s.effects_confirmed);
    cJSON_AddNumberToObject(ef, "failed", (double)s.effects_failed);
    cJSON* fe = cJSON_AddObjectToObject(o, "fence");
    cJSON_AddNumberToObject(fe, "claims", (double)s.fence_claims);
    cJSON_AddNumberToObject(fe, "provider2xx", (double)s.provider_2xx);
    cJSON_AddNumberToObject(fe, "repeatedSuccesses",
                            (double)s.provider_replays);
    cJSON* sp = cJSON_AddObjectToObject(o, "space");
    cJSON_AddNumberToObject(sp, "usedBytes", (double)s.db_bytes);
    cJSON_AddNumberToObject(sp, "maxBytes", (double)s.db_max_bytes);
    cJSON_AddStringToObject(sp, "capSource", cap_source(s.db_cap_source));
    cJSON_AddNumberToObject(sp, "reserveBytes", (double)s.db_reserve_bytes);
    cJSON_AddNumberToObject(sp, "level", s.space_level);
    cJSON_AddStringToObject(sp, "enqueues", ob__cli_space_words(s.space_level));
    cJSON_AddBoolToObject(sp, "refusing", s.space_level > 0);
    /* The modules' figures, each under its name in camelCase. */
    for (size_t i = 0; i < r.nmod; i++) {
      char key[96];
      camel_case(r.mod[i].name, key, sizeof key);
      cJSON_AddNumberToObject(o, key, (double)r.mod[i].value);
    }
    ob__cli_json_line(o);
  } else {
    char last[40] = "never";
    if (s.last_publish_at_ms > 0) {
      ob__cli_format_time(s.last_publish_at_ms, last);
    }
    ob__cli_format_age(s.outbox_oldest_unpublished_age_ms, age, sizeof age);
    printf("queue:     %lld ready, %lld delayed, %lld in hand\n"
           "failed:    %lld\n"
           "processed: %lld dedup records\n",
           (long long)s.queue_ready, (long long)s.queue_delayed,
           (long long)s.queue_in_hand, (long long)s.failed,
           (long long)s.processed);
    for (size_t i = 0; i < r.nmod; i++) {
      char label[96];
      snprintf(label, sizeof label, "%s:", r.mod[i].name);
      printf("%-10s %lld\n", label, (long long)r.mod[i].value);
    }
    /* The relay's state: a server answered but the relay cannot publish
    ** (a configuration fault) is not "online". */
    printf("outbox:    %lld unpublished (oldest %s), %lld published\n"
           "relay:     %lld parked, last publish %s, %s%s%s\n",
           (long long)s.outbox_unpublished,
           s.outbox_unpublished ? age : "-", (long long)s.outbox_published,
           (long long)s.outbox_parked, last,
           s.relay_online < 0                 ? "never run"
           : s.relay_online && s.relay_error[0] ? "not publishing"
           : s.relay_online                     ? "online"
                                                : "offline",
           s.relay_online >= 0 && s.relay_error[0] ? ": " : "",
           s.relay_online >= 0 ? s.relay_error : "");
    printf("effects:   %lld pending, %lld unknown (%lld parked), "
           "%lld confirmed, %lld failed\n"
           "fence:     %lld claims, %lld provider 2xx (%lld repeated for one "
           "key)\n",
           (long long)s.effects_pending,
           (long long)s.effects_unknown, (long long)s.effects_parked,
           (long long)s.effects_confirmed, (long long)s.effects_failed,
           (long long)s.fence_claims, (long long)s.provider_2xx,
           (long long)s.provider_replays);
    if (s.effects_parked > 0)
      printf("           %lld parked effect(s) wait for a person: oncebox "
             "effects show --state parked\n", (long long)s.effects_parked);
    if (s.effects_key_expired + s.effects_conflict + s.effects_replayed_error >
        0)
      printf("           of which %lld past the provider's key retention, "
             "%lld in conflict at the provider, %lld with a replayed "
             "error\n", (long long)s.effects_key_expired,
             (long long)s.effects_conflict,
             (long long)s.effects_replayed_error);
    {
      char used[32], cap[32], res[32];
      ob__cli_format_bytes(s.db_bytes, used, sizeof used);
      ob__cli_format_bytes(s.db_max_bytes, cap, sizeof cap);
      ob__cli_format_bytes(s.db_reserve_bytes, res, sizeof res);
      if (s.db_max_bytes > 0)
        printf("space:     %s of a %s cap in use (reserve %s): %s\n"
               "           the cap is %s\n", used, cap, res,
               ob__cli_space_words(s.space_level),
               s.db_cap_source == OB_CAP_FILESYSTEM
                   ? "3/5 of the filesystem's size (--max-db-bytes sets "
                     "one, none for no cap)"
                   : "configured (--max-db-bytes)");
      else
        printf("space:     %s in use, no cap (--max-db-bytes)\n", used);
    }
  }
  /* On stdout with the report; beside --json, on stderr. */
  for (size_t i = 0; i < r.nmod; i++)
    if (r.mod[i].alarm && r.mod[i].value > 0)
      fprintf(json || prom ? stderr : stdout, "ALERT: %s is %lld: %s\n",
              r.mod[i].name, (long long)r.mod[i].value, r.mod[i].help);
  ob_close(e);
  return EXIT_OK;
}

static void print_violation(void* arg, const char* v) {
  cJSON* list = arg;
  if (list != NULL) cJSON_AddItemToArray(list, cJSON_CreateString(v));
  else printf("VIOLATION: %s\n", v);
}

static void print_json(cJSON* o) {
  ob__cli_json_line(o);
}

int ob__cmd_check(cli_t* cli, int argc, char** argv) {
  ob_engine_t* e;
  int code, n;
  if (ob__cli_wants_help(argc, argv)) {
    printf("usage: oncebox --db FILE check [--json]\n\n"
           "PRAGMA integrity_check plus the invariants: one payout per\n"
           "payment, one MerchantPayoutCreated outbox row per payout with a\n"
           "matching causation id, a dedup record for every payout.\n"
           "Exit 0 when all hold, 1 with a report otherwise.\n");
    return EXIT_OK;
  }
  if (!only_flags(argc, argv, "check", "--json")) return EXIT_USAGE;
  e = ob__cli_open_existing(cli, &code);
  if (e == NULL) return code;
  if (has_flag(argc, argv, "--json")) {
    cJSON* o = cJSON_CreateObject();
    cJSON* list = cJSON_AddArrayToObject(o, "violations");
    n = ob_check(e, print_violation, list);
    if (n < 0) {
      cJSON_Delete(o);
      fprintf(stderr, "oncebox check: could not run: %s\n", ob_errmsg(e));
      ob_close(e);
      return EXIT_FAIL;
    }
    cJSON_AddBoolToObject(o, "ok", n == 0);
    print_json(o);
    ob_close(e);
    return n == 0 ? EXIT_OK : EXIT_FAIL;
  }
  n = ob_check(e, print_violation, NULL);
  if (n < 0) {
    fprintf(stderr, "oncebox check: could not run: %s\n", ob_errmsg(e));
    code = EXIT_FAIL;
  } else if (n > 0) {
    printf("%d violation(s)\n", n);
    code = EXIT_FAIL;
  } else {
    printf("ok: integrity_check ok, all invariants hold\n");
    code = EXIT_OK;
  }
  ob_close(e);
  return code;
}

int ob__cmd_gc(cli_t* cli, int argc, char** argv) {
  ob_engine_t* e;
  int code, rc;
  int64_t n = 0;
  if (ob__cli_wants_help(argc, argv)) {
    printf("usage: oncebox --db FILE gc [--json]\n\n"
           "Delete dedup records and published outbox rows older than the\n"
           "retention window (30 days), in bounded batches. Unpublished\n"
           "outbox rows are never deleted.\n");
    return EXIT_OK;
  }
  if (!only_flags(argc, argv, "gc", "--json")) return EXIT_USAGE;
  e = ob__cli_open(cli, 0, &code);
  if (e == NULL) return code;
  rc = ob_gc(e, &n);
  if (rc < 0) {
    fprintf(stderr, "oncebox gc: %s\n", ob_errmsg(e));
    code = EXIT_FAIL;
  } else if (has_flag(argc, argv, "--json")) {
    cJSON* o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "deleted", (double)n);
    print_json(o);
  } else {
    printf("deleted %lld row(s)\n", (long long)n);
  }
  ob_close(e);
  return code;
}
