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

#include "platform/cli/cli.h"

static void failed_usage(FILE* out) {
  fprintf(out,
          "usage: oncebox --db FILE failed show [ID] [--stats] [--type T] [--json]\n"
          "       oncebox --db FILE failed retry ID...|--all [--force]\n"
          "       oncebox --db FILE failed remove ID...|--all [--force]\n"
          "\n"
          "retry moves messages back to the queue in one transaction with\n"
          "attempts reset; the dedup guard still applies, so an already\n"
          "handled message is acked without running again. On a terminal,\n"
          "retry and remove ask first unless --force; elsewhere --all needs\n"
          "--force.\n");
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

static int failed_show(ob_engine_t* e, int json, int stats, const char* type,
                       int64_t id) {
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
  n = ob_failed_list(e, id, type, show_cb, &s);
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
      char* t = cJSON_Print(o);
      printf("%s\n", t);
      free(t);
      cJSON_Delete(o);
    } else {
      cJSON* it;
      printf("%d failed message(s)\n", n);
      cJSON_ArrayForEach(it, s.by_type) printf("  type %-24s %d\n", it->string, (int)it->valuedouble);
      cJSON_ArrayForEach(it, s.by_class) printf("  class %-23s %d\n", it->string, (int)it->valuedouble);
    }
  } else if (json) {
    char* t = cJSON_Print(id > 0 ? cJSON_GetArrayItem(s.arr, 0) : s.arr);
    printf("%s\n", t);
    free(t);
  } else if (id <= 0) {
    printf("%d failed message(s)\n", n);
  }
  cJSON_Delete(s.arr);
  cJSON_Delete(s.by_type);
  cJSON_Delete(s.by_class);
  return n < 0 ? EXIT_FAIL : EXIT_OK;
}

static int confirm(const char* what) {
  char answer[16];
  fprintf(stderr, "%s? [y/N] ", what);
  if (fgets(answer, sizeof answer, stdin) == NULL) return 0;
  return answer[0] == 'y' || answer[0] == 'Y';
}

static int failed_apply(ob_engine_t* e, int retry, int all, int force,
                        char** ids, int nids) {
  const char* verb = retry ? "retry" : "remove";
  int code = EXIT_OK;
  if (!force) {
    if (isatty(STDIN_FILENO)) {
      char q[128];
      if (all) snprintf(q, sizeof q, "%s ALL failed messages", verb);
      else snprintf(q, sizeof q, "%s %d failed message(s)", verb, nids);
      if (!confirm(q)) {
        fprintf(stderr, "nothing done\n");
        return EXIT_FAIL;
      }
    } else if (all) {
      fprintf(stderr, "oncebox failed %s --all: add --force when not on a "
                      "terminal\n", verb);
      return EXIT_USAGE;
    }
  }
  if (all) {
    int n = retry ? ob_failed_retry(e, 0) : ob_failed_remove(e, 0);
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
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  const char* sub;
  const char* type = NULL;
  int c, code, json = 0, stats = 0, all = 0, force = 0;
  ob_engine_t* e;

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
      case 't': type = optarg; break;
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
    }
    e = ob__cli_open_existing(cli, &code);
    if (e == NULL) return code;
    code = failed_show(e, json, stats, type, id);
  } else {
    if (all == (optind < argc)) {
      fprintf(stderr, "oncebox failed %s: give IDs or --all\n", sub);
      return EXIT_USAGE;
    }
    e = ob__cli_open(cli, 0, &code);
    if (e == NULL) return code;
    code = failed_apply(e, strcmp(sub, "retry") == 0, all, force,
                        argv + optind, argc - optind);
  }
  ob_close(e);
  return code;
}
