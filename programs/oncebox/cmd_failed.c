/* SPDX-License-Identifier: Apache-2.0 */
/* oncebox failed show|retry|remove: the failure store, in Symfony
** Messenger's shape (messenger:failed:show/retry/remove). */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/util/utc_time.h"
#include "programs/oncebox/cli.h"

static void failed_usage(FILE* out) {
  fprintf(out,
          "usage: oncebox --db FILE failed show [ID] [--stats] [--json] [FILTER...]\n"
          "       oncebox --db FILE failed retry ID...|--all|FILTER... [--dry-run] [--force]\n"
          "       oncebox --db FILE failed remove ID...|--all|FILTER... [--dry-run] [--force]\n"
          "\n"
          "filters (combined with AND):\n"
          "  --type T              messages of type T\n"
          "  --class C             error class C (unrecoverable, retries_exhausted,\n"
          "                        no_handler, effect_unknown)\n"
          "  --failed-after TIME   last failure at or after TIME\n"
          "  --failed-before TIME  last failure before TIME\n"
          "  --reason-contains S   the reason holds S (case matters)\n"
          "  --limit N             at most N, oldest ids first\n"
          "TIME is RFC 3339 UTC (2026-12-01T00:00:00Z) or an age ago (90s, 30m,\n"
          "2h, 3d).\n"
          "\n"
          "retry moves messages back to the queue with attempts reset; the dedup\n"
          "guard still applies, so an already handled message is acked without\n"
          "running again. --all and filters work in transactions of 500\n"
          "messages, so a large backlog never holds the write lock for long and\n"
          "an interruption leaves whole batches done; a progress bar shows on a\n"
          "terminal. --dry-run prints how many would be affected and changes\n"
          "nothing. On a terminal, retry and remove ask first unless --force;\n"
          "elsewhere --all and filters need --force.\n");
}

typedef struct show_s {
  int json;
  int detail;
  cJSON* arr;
  /* --stats: counts per type and per error class */
  cJSON* by_type;
  cJSON* by_class;
  int stats;
  int out_of_memory;
} show_t;

static void bump(cJSON* obj, const char* key) {
  cJSON* n = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (n == NULL) cJSON_AddNumberToObject(obj, key, 1);
  else cJSON_SetNumberValue(n, n->valuedouble + 1);
}

static int show_cb(void* arg, const ob_failed_t* f) {
  show_t* s = arg;
  char first[32], last[32];
  if (s->stats) {
    bump(s->by_type, f->type);
    bump(s->by_class, f->error_class);
    return 0;
  }
  ob__cli_format_time(f->first_failed_at_ms, first);
  ob__cli_format_time(f->last_failed_at_ms, last);
  if (s->json) {
    cJSON* o = cJSON_CreateObject();
    char* reason = ob__cli_json_quote(f->reason, strlen(f->reason));
    int rc = 0;
    cJSON_AddNumberToObject(o, "id", (double)f->id);
    cJSON_AddStringToObject(o, "messageId", f->message_id);
    if (f->source) cJSON_AddStringToObject(o, "source", f->source);
    cJSON_AddStringToObject(o, "queue", f->queue);
    cJSON_AddStringToObject(o, "type", f->type);
    cJSON_AddStringToObject(o, "errorClass", f->error_class);
    /* A handler's reason may quote the body: valid JSON whatever it holds. */
    if (reason == NULL || cJSON_AddRawToObject(o, "reason", reason) == NULL)
      rc = OB_ENOMEM;
    free(reason);
    cJSON_AddNumberToObject(o, "attempts", f->attempts);
    cJSON_AddStringToObject(o, "firstFailedAt", first);
    cJSON_AddStringToObject(o, "lastFailedAt", last);
    if (s->detail) {
      /* Byte for byte: a JSON string when it is UTF-8 (NUL bytes as
      ** \u0000), else null and the bytes in bodyBase64. */
      if (ob__cli_utf8_valid(f->body, f->body_len)) {
        char* q = ob__cli_json_quote(f->body, f->body_len);
        if (q == NULL || cJSON_AddRawToObject(o, "body", q) == NULL) rc = -1;
        free(q);
      } else {
        char* b = ob__cli_base64(f->body, f->body_len);
        cJSON_AddNullToObject(o, "body");
        if (b == NULL || cJSON_AddStringToObject(o, "bodyBase64", b) == NULL)
          rc = -1;
        free(b);
      }
      if (f->headers) cJSON_AddStringToObject(o, "headers", f->headers);
    }
    cJSON_AddItemToArray(s->arr, o);
    if (rc != 0) s->out_of_memory = 1;
    return rc;
  }
  /* Type, queue and class are printable ASCII by construction; the id and
  ** source of an SQS event, the reason, headers and body are not ours and
  ** may hold terminal escapes. */
  if (s->detail) {
    printf("id:            %lld\n"
           "message id:    ",
           (long long)f->id);
    ob__cli_print_safe(stdout, f->message_id, strlen(f->message_id));
    if (f->source) {
      printf("\nsource:        ");
      ob__cli_print_safe(stdout, f->source, strlen(f->source));
    }
    printf("\ntype:          %s\n"
           "queue:         %s\n"
           "error class:   %s\n"
           "reason:        ",
           f->type, f->queue, f->error_class);
    ob__cli_print_safe(stdout, f->reason, strlen(f->reason));
    printf("\nattempts:      %d\n"
           "first failure: %s\n"
           "last failure:  %s\n"
           "headers:       ",
           f->attempts, first, last);
    if (f->headers) ob__cli_print_safe(stdout, f->headers, strlen(f->headers));
    else fputs("-", stdout);
    printf("\nbody:          ");
    ob__cli_print_safe(stdout, f->body, f->body_len > 4096 ? 4096 : f->body_len);
    printf("%s\n", f->body_len > 4096 ? " ... (--json for all of it)" : "");
    return 0;
  }
  printf("%-6lld ", (long long)f->id);
  {
    /* An SQS event's id: any string, shown safe and cut to the column. */
    size_t n = strlen(f->message_id);
    ob__cli_print_safe(stdout, f->message_id, n > 36 ? 36 : n);
    printf("%*s%s ", n < 36 ? (int)(36 - n) : 0, "", n > 36 ? "~" : "");
  }
  printf("%-18s %-17s ", f->type, f->error_class);
  ob__cli_print_safe(stdout, f->reason, strlen(f->reason));
  fputc('\n', stdout);
  return 0;
}

static int failed_show(ob_engine_t* e, int json, int stats,
                       const ob_failed_filter_t* fl, int64_t id) {
  show_t s;
  int n;
  memset(&s, 0, sizeof s);
  s.json = json;
  s.detail = id > 0;
  s.stats = stats;
  s.arr = cJSON_CreateArray();
  s.by_type = cJSON_CreateObject();
  s.by_class = cJSON_CreateObject();
  if (!json && !stats && id <= 0)
    printf("%-6s %-36s %-18s %-17s %s\n", "ID", "MESSAGE ID", "TYPE", "CLASS",
           "REASON");
  n = id > 0 ? ob_failed_list(e, id, NULL, show_cb, &s)
             : ob_failed_list_filter(e, fl, show_cb, &s);
  if (n >= 0 && s.out_of_memory) {
    fprintf(stderr, "oncebox failed show: out of memory\n");
    n = OB_ENOMEM;
  } else if (n < 0) {
    fprintf(stderr, "oncebox failed show: %s\n", ob_errmsg(e));
  } else if (n == 0 && id > 0) {
    fprintf(stderr, "oncebox failed show: no failed message with id %lld\n",
            (long long)id);
    n = -1;
  } else if (stats) {
    if (json) {
      cJSON* o = cJSON_CreateObject();
      cJSON_AddNumberToObject(o, "total", n);
      cJSON_AddItemToObject(o, "byType", s.by_type);
      cJSON_AddItemToObject(o, "byErrorClass", s.by_class);
      s.by_type = s.by_class = NULL;
      ob__cli_json_line(o);
    } else {
      cJSON* it;
      printf("%d failed message(s)\n", n);
      cJSON_ArrayForEach(it, s.by_type) printf("  type %-24s %d\n", it->string, (int)it->valuedouble);
      cJSON_ArrayForEach(it, s.by_class) printf("  class %-23s %d\n", it->string, (int)it->valuedouble);
    }
  } else if (json) {
    ob__cli_json_lines(s.arr);  /* one line, or one per message */
    s.arr = NULL;
  } else if (id <= 0) {
    printf("%d failed message(s)\n", n);
  }
  cJSON_Delete(s.arr);
  cJSON_Delete(s.by_type);
  cJSON_Delete(s.by_class);
  return n < 0 ? EXIT_FAIL : EXIT_OK;
}

/* An RFC 3339 UTC time, or an age ago ("2h") measured on the system
** clock; int64 throughout (no time_t). A bare number is neither. */
static int parse_when(const char* s, int64_t* ms) {
  size_t n = strlen(s);
  long long age;
  const ob_clock_t* clk;
  if (ob__utc_parse_ms(s, ms) == 0) return *ms > 0 ? 0 : -1;
  if (n == 0 || s[n - 1] < 'a' || s[n - 1] > 'z') return -1;
  age = ob__cli_parse_duration_ms(s);
  if (age < 0) return -1;
  clk = ob_system_clock();
  *ms = clk->now_ms(clk->ctx) - age;
  return *ms > 0 ? 0 : -1;
}

static int confirm(const char* what) {
  char answer[16];
  fprintf(stderr, "%s? [y/N] ", what);
  if (fgets(answer, sizeof answer, stdin) == NULL) return 0;
  return answer[0] == 'y' || answer[0] == 'Y';
}

/* The classes the engine writes (engine.c, consumer_tx.c): a typo in
** --class is an error, not an empty selection. */
static int known_class(const char* c) {
  return strcmp(c, "unrecoverable") == 0 ||
         strcmp(c, "retries_exhausted") == 0 ||
         strcmp(c, "no_handler") == 0 || strcmp(c, "effect_unknown") == 0;
}

static int is_everything(const ob_failed_filter_t* fl) {
  return fl->type == NULL && fl->error_class == NULL &&
         fl->reason_contains == NULL && fl->failed_after_ms == 0 &&
         fl->failed_before_ms == 0 && fl->limit == 0;
}

static int progress_cb(void* arg, int done, int total) {
  ob__cli_progress((const char*)arg, done, total);
  return 0;
}

static int failed_apply(ob_engine_t* e, int retry, int all, int force,
                        int dry_run, const ob_failed_filter_t* fl, char** ids,
                        int nids) {
  const char* verb = retry ? "retry" : "remove";
  int code = EXIT_OK;
  if (dry_run) {
    /* Nothing asked, nothing changed: the count the real run would start
    ** from (rows arriving meanwhile are not swept in then either). */
    int n = 0;
    if (all) {
      n = ob_failed_count(e, fl);
    } else {
      for (int i = 0; i < nids && n >= 0; i++) {
        long long id = ob__cli_parse_count(ids[i]);
        int k;
        if (id <= 0) {
          fprintf(stderr, "oncebox failed %s: '%s' is not an id\n", verb,
                  ids[i]);
          return EXIT_USAGE;
        }
        k = ob_failed_list(e, id, NULL, NULL, NULL);
        n = k < 0 ? k : n + k;
      }
    }
    if (n < 0) {
      fprintf(stderr, "oncebox failed %s: %s\n", verb, ob_errmsg(e));
      return EXIT_FAIL;
    }
    printf("would %s %d message(s) (dry run: nothing changed)\n", verb, n);
    return EXIT_OK;
  }
  if (!force) {
    if (isatty(STDIN_FILENO)) {
      char q[128];
      if (all && is_everything(fl))
        snprintf(q, sizeof q, "%s ALL failed messages", verb);
      else if (all)
        snprintf(q, sizeof q, "%s the %d failed message(s) the filters select",
                 verb, ob_failed_count(e, fl));
      else snprintf(q, sizeof q, "%s %d failed message(s)", verb, nids);
      if (!confirm(q)) {
        fprintf(stderr, "nothing done\n");
        return EXIT_FAIL;
      }
    } else if (all) {
      fprintf(stderr, "oncebox failed %s %s: add --force when not on a "
                      "terminal\n", verb,
              is_everything(fl) ? "--all" : "with filters");
      return EXIT_USAGE;
    }
  }
  if (all) {
    int n = retry ? ob_failed_retry_filter(e, fl, 0, progress_cb, "retry")
                  : ob_failed_remove_filter(e, fl, 0, progress_cb, "remove");
    ob__cli_progress_end();
    if (n < 0) {
      fprintf(stderr, "oncebox failed %s: %s\n", verb, ob_errmsg(e));
      return EXIT_FAIL;
    }
    printf("%s: %d message(s)\n", retry ? "requeued" : "removed", n);
    return EXIT_OK;
  }
  for (int i = 0; i < nids; i++) {
    long long id = ob__cli_parse_count(ids[i]);
    int n;
    if (id <= 0) {
      fprintf(stderr, "oncebox failed %s: '%s' is not an id\n", verb, ids[i]);
      code = EXIT_USAGE;
      continue;
    }
    n = retry ? ob_failed_retry(e, id) : ob_failed_remove(e, id);
    if (n < 0) {
      fprintf(stderr, "oncebox failed %s %lld: %s\n", verb, id, ob_errmsg(e));
      code = EXIT_FAIL;
    } else {
      printf("%s %lld\n", retry ? "requeued" : "removed", id);
    }
  }
  return code;
}

int ob__cmd_failed(cli_t* cli, int argc, char** argv) {
  static const struct option opts[] = {
      {"json", no_argument, NULL, 'j'},
      {"stats", no_argument, NULL, 's'},
      {"type", required_argument, NULL, 't'},
      {"all", no_argument, NULL, 'a'},
      {"force", no_argument, NULL, 'f'},
      {"class", required_argument, NULL, 'c'},
      {"failed-after", required_argument, NULL, 'A'},
      {"failed-before", required_argument, NULL, 'B'},
      {"reason-contains", required_argument, NULL, 'r'},
      {"limit", required_argument, NULL, 'l'},
      {"dry-run", no_argument, NULL, 'n'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  const char* sub;
  int c, code, json = 0, stats = 0, all = 0, force = 0, dry_run = 0;
  int filtered = 0;
  long long v;
  ob_failed_filter_t fl;
  ob_engine_t* e;

  memset(&fl, 0, sizeof fl);

  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
    failed_usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? EXIT_USAGE : EXIT_OK;
  }
  sub = argv[1];
  if (strcmp(sub, "show") != 0 && strcmp(sub, "retry") != 0 &&
      strcmp(sub, "remove") != 0) {
    fprintf(stderr, "oncebox failed: unknown subcommand '%s'\n", sub);
    failed_usage(stderr);
    return EXIT_USAGE;
  }
  optind = 1;
  argc--;
  argv++;
  while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (c) {
      case 'j': json = 1; break;
      case 's': stats = 1; break;
      case 't':
      case 'c':
      case 'r':
        /* An empty value would select everything: never what was meant. */
        if (optarg[0] == '\0' ||
            (c == 'c' && !known_class(optarg))) {
          fprintf(stderr,
                  "oncebox failed %s: --%s '%s': want %s\n", sub,
                  c == 't' ? "type" : c == 'c' ? "class" : "reason-contains",
                  optarg,
                  c == 'c' ? "unrecoverable, retries_exhausted, no_handler "
                             "or effect_unknown"
                           : "a non-empty value");
          return EXIT_USAGE;
        }
        if (c == 't') fl.type = optarg;
        else if (c == 'c') fl.error_class = optarg;
        else fl.reason_contains = optarg;
        filtered = 1;
        break;
      case 'A':
      case 'B':
        if (parse_when(optarg, c == 'A' ? &fl.failed_after_ms
                                        : &fl.failed_before_ms) != 0) {
          fprintf(stderr,
                  "oncebox failed %s: --failed-%s '%s': want an RFC 3339 "
                  "UTC time (2026-12-01T00:00:00Z) or an age (2h, 3d)\n",
                  sub, c == 'A' ? "after" : "before", optarg);
          return EXIT_USAGE;
        }
        filtered = 1;
        break;
      case 'l':
        v = ob__cli_parse_count(optarg);
        if (v <= 0 || v > INT32_MAX) {
          fprintf(stderr,
                  "oncebox failed %s: --limit '%s': want a whole number "
                  "from 1\n", sub, optarg);
          return EXIT_USAGE;
        }
        fl.limit = (int)v;
        filtered = 1;
        break;
      case 'n': dry_run = 1; break;
      case 'a': all = 1; break;
      case 'f': force = 1; break;
      case 'h': failed_usage(stdout); return EXIT_OK;
      default: failed_usage(stderr); return EXIT_USAGE;
    }
  }
  if (strcmp(sub, "show") == 0) {
    long long id = 0;
    if (optind < argc) {
      id = ob__cli_parse_count(argv[optind]);
      if (id <= 0 || optind + 1 < argc) {
        fprintf(stderr, "oncebox failed show: want at most one numeric ID\n");
        return EXIT_USAGE;
      }
      if (filtered) {
        fprintf(stderr, "oncebox failed show: an ID or filters, not both\n");
        return EXIT_USAGE;
      }
    }
    if (dry_run) {
      fprintf(stderr, "oncebox failed show: --dry-run is for retry and "
                      "remove\n");
      return EXIT_USAGE;
    }
    e = ob__cli_open_existing(cli, &code);
    if (e == NULL) return code;
    code = failed_show(e, json, stats, &fl, id);
  } else {
    if ((all || filtered) == (optind < argc)) {
      fprintf(stderr, "oncebox failed %s: give IDs, or --all or filters\n",
              sub);
      return EXIT_USAGE;
    }
    e = ob__cli_open(cli, 0, &code);
    if (e == NULL) return code;
    /* Filters select in bulk: the same rules as --all. */
    code = failed_apply(e, strcmp(sub, "retry") == 0, all || filtered, force,
                        dry_run, &fl, argv + optind, argc - optind);
  }
  ob_close(e);
  return code;
}
