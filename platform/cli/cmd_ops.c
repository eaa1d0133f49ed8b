/* SPDX-License-Identifier: Apache-2.0 */
/* oncebox stats | check | gc */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "platform/cli/cli.h"

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

/* A module's statistics: 1 when read, 0 when the database has no table of
** that module (nothing to print), -1 after an error (reported). */
static int module_stats(ob_engine_t* e, int rc) {
  if (rc == OB_ENOTFOUND) return 0;
  if (rc < 0) {
    fprintf(stderr, "oncebox stats: %s\n", ob_errmsg(e));
    return -1;
  }
  return 1;
}

int ob__cmd_stats(cli_t* cli, int argc, char** argv) {
  ob_engine_t* e;
  ob_stats_t s;
  ob_payout_stats_t ps;
  ob_charge_stats_t cs;
  int code, rc, json, has_pay, has_charge;
  char age[32];

  if (ob__cli_wants_help(argc, argv)) {
    printf("usage: oncebox --db FILE stats [--json]\n\n"
           "Queue ready/delayed/in hand, failed messages, dedup records,\n"
           "payouts, outbox unpublished count and oldest unpublished age,\n"
           "the relay: parked rows, last publish, online / offline / not\n"
           "publishing and why in words (a refused credential, a server that\n"
           "is not the SQS JSON API, what the network said),\n"
           "charges, effects by state, fence claims against the provider's\n"
           "2xx answers (replays: a repeated call answered again). A success\n"
           "recorded without a confirmed fence is reported in an ALERT line.\n");
    return EXIT_OK;
  }
  if (!only_flags(argc, argv, "stats", "--json")) return EXIT_USAGE;
  json = has_flag(argc, argv, "--json");
  e = ob__cli_open_existing(cli, &code);
  if (e == NULL) return code;
  rc = ob_stats(e, &s);
  if (rc < 0) {
    fprintf(stderr, "oncebox stats: %s\n", ob_errmsg(e));
    ob_close(e);
    return EXIT_FAIL;
  }
  /* The built-in modules' figures, printed where they always were, when
  ** the database has their tables. */
  if ((has_pay = module_stats(e, ob_payout_stats(e, &ps))) < 0 ||
      (has_charge = module_stats(e, ob_charge_stats(e, &cs))) < 0) {
    ob_close(e);
    return EXIT_FAIL;
  }
  if (json) {
    cJSON* o = cJSON_CreateObject();
    cJSON* q = cJSON_AddObjectToObject(o, "queue");
    cJSON_AddNumberToObject(q, "ready", (double)s.queue_ready);
    cJSON_AddNumberToObject(q, "delayed", (double)s.queue_delayed);
    cJSON_AddNumberToObject(q, "inHand", (double)s.queue_in_hand);
    cJSON_AddNumberToObject(o, "failed", (double)s.failed);
    cJSON_AddNumberToObject(o, "processed", (double)s.processed);
    if (has_pay) cJSON_AddNumberToObject(o, "payouts", (double)ps.payouts);
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
    if (has_charge)
      cJSON_AddNumberToObject(o, "charges", (double)cs.charges);
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
    cJSON_AddNumberToObject(fe, "providerReplays", (double)s.provider_replays);
    if (has_charge)
      cJSON_AddNumberToObject(fe, "unfencedSuccesses",
                              (double)cs.unfenced_successes);
    cJSON* sp = cJSON_AddObjectToObject(o, "space");
    cJSON_AddNumberToObject(sp, "usedBytes", (double)s.db_bytes);
    cJSON_AddNumberToObject(sp, "maxBytes", (double)s.db_max_bytes);
    cJSON_AddNumberToObject(sp, "reserveBytes", (double)s.db_reserve_bytes);
    cJSON_AddNumberToObject(sp, "level", s.space_level);
    cJSON_AddStringToObject(sp, "enqueues", ob__cli_space_words(s.space_level));
    cJSON_AddBoolToObject(sp, "refusing", s.space_level > 0);
    char* t = cJSON_Print(o);
    printf("%s\n", t);
    free(t);
    cJSON_Delete(o);
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
    if (has_pay) printf("payouts:   %lld\n", (long long)ps.payouts);
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
    if (has_charge) printf("charges:   %lld\n", (long long)cs.charges);
    printf("effects:   %lld pending, %lld unknown (%lld parked), "
           "%lld confirmed, %lld failed\n"
           "fence:     %lld claims, %lld provider 2xx (%lld replays)\n",
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
        printf("space:     %s of a %s cap in use (reserve %s): %s\n", used,
               cap, res, ob__cli_space_words(s.space_level));
      else
        printf("space:     %s in use, no cap (--max-db-bytes)\n", used);
    }
  }
  /* On stdout with the report; beside --json, on stderr. */
  if (has_charge && cs.unfenced_successes > 0)
    fprintf(json ? stderr : stdout,
            "ALERT: %lld provider success(es) recorded "
            "WITHOUT a confirmed fence (a charge with no confirmed effect "
            "carrying its reference, or one reference confirmed for two "
            "keys); this must be 0: a customer may have been charged twice "
            "or a charge is unaccounted for. Run `oncebox check` and "
            "reconcile with the provider.\n",
            (long long)cs.unfenced_successes);
  ob_close(e);
  return EXIT_OK;
}

static void print_violation(void* arg, const char* v) {
  cJSON* list = arg;
  if (list != NULL) cJSON_AddItemToArray(list, cJSON_CreateString(v));
  else printf("VIOLATION: %s\n", v);
}

static void print_json(cJSON* o) {
  char* t = cJSON_Print(o);
  if (t) printf("%s\n", t);
  free(t);
  cJSON_Delete(o);
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
