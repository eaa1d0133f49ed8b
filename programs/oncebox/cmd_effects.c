/* SPDX-License-Identifier: Apache-2.0 */
/* oncebox effects show | reconcile | resolve: the fence's effects (calls to
** a payment provider) as an operator sees them; and the provider options
** shared with `run`. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <uv.h>

#include "programs/oncebox/cli.h"

/* ---- provider options (run, effects reconcile) -------------------------- */

const char ob__cli_provider_help[] =
    "  --provider-url URL        the payment provider of ChargeOrder messages\n"
    "                            (or ONCEBOX_PROVIDER_URL): https://host[:port]"
    "[/path]\n"
    "  --provider-allow-http     accept a plain http:// URL (or\n"
    "                            ONCEBOX_PROVIDER_ALLOW_HTTP=1); tests and "
    "local\n"
    "                            simulators only\n"
    "  --provider-no-idempotency the provider ignores Idempotency-Key: a call\n"
    "                            whose outcome is unknown is never repeated "
    "blindly\n"
    "  --provider-no-lookup      the provider cannot look a key up (GET\n"
    "                            " OB_CHARGE_LOOKUP_PATH "KEY)\n"
    "  --provider-timeout MS     one call or lookup, connect included "
    "(30000)\n"
    "  --provider-key-retention D  how long the provider keeps idempotency\n"
    "                            keys (or ONCEBOX_PROVIDER_KEY_RETENTION): "
    "24h\n"
    "                            (Stripe), 31d (Adyen), 0 (forever); an "
    "effect\n"
    "                            older than 7/8 of it is parked, never "
    "repeated\n"
    "  --provider-reference-lookup PATH  find an order's charges whatever the\n"
    "                            key (or ONCEBOX_PROVIDER_REFERENCE_LOOKUP),\n"
    "                            with {reference} for the order id, e.g.\n"
    "                            \"/v1/charges/search?query=metadata['order_id']"
    ":'{reference}'\";\n"
    "                            used once a key may have expired\n"
    "  --provider-offline-limits SPEC  what charges may be stored while the\n"
    "                            provider is offline, per currency (or\n"
    "                            ONCEBOX_PROVIDER_OFFLINE_LIMITS), e.g.\n"
    "                            EUR:max_amount=25000:max_total=100000:"
    "max_count=50\n"
    "                            (minor units; docs/offline.md)\n"
    "  --provider-offline-unlisted no_limit|refuse  a currency without\n"
    "                            limits, offline (or\n"
    "                            ONCEBOX_PROVIDER_OFFLINE_UNLISTED): no_limit\n"
    "  ONCEBOX_PROVIDER_AUTHORIZATION  (environment only, never an option:\n"
    "                            options show in ps) the value of the\n"
    "                            Authorization header of every request, e.g.\n"
    "                            \"Bearer sk_live_...\"; never logged or "
    "stored\n";

int ob__cli_provider_option(cli_t* cli, int c, const char* arg,
                            const char* cmd) {
  switch (c) {
    case CLI_OPT_PROVIDER_URL:
      return ob__cli_cfg_flag(cli, CFG_PROVIDER_URL, arg, "", cmd) < 0 ? -1 : 1;
    case CLI_OPT_PROVIDER_ALLOW_HTTP:
      return ob__cli_cfg_flag(cli, CFG_PROVIDER_ALLOW_HTTP, "true", "", cmd) < 0
                 ? -1 : 1;
    case CLI_OPT_PROVIDER_NO_IDEMPOTENCY:
      return ob__cli_cfg_flag(cli, CFG_PROVIDER_IDEMPOTENCY, "false", "", cmd) < 0
                 ? -1 : 1;
    case CLI_OPT_PROVIDER_NO_LOOKUP:
      return ob__cli_cfg_flag(cli, CFG_PROVIDER_LOOKUP, "false", "", cmd) < 0
                 ? -1 : 1;
    case CLI_OPT_PROVIDER_TIMEOUT: {
      long long ms = ob__cli_parse_count(arg);
      if (ms < 1 || ms > 600000 ||
          ob__cli_cfg_flag(cli, CFG_PROVIDER_TIMEOUT, arg, "", cmd) < 0) {
        fprintf(stderr, "oncebox %s: --provider-timeout wants milliseconds "
                "1..600000\n", cmd);
        return -1;
      }
      return 1;
    }
    case CLI_OPT_PROVIDER_REFERENCE_LOOKUP:
      return ob__cli_cfg_flag(cli, CFG_PROVIDER_REFERENCE_LOOKUP, arg, "", cmd) < 0
                 ? -1 : 1;
    case CLI_OPT_PROVIDER_OFFLINE_LIMITS: {
      ob_offline_limit_t l[CLI_MAX_OFFLINE];
      char cur[CLI_MAX_OFFLINE][4], why[200];
      size_t n;
      if (ob__cli_offline_limits_parse(arg, l, cur, CLI_MAX_OFFLINE, &n, why,
                                       sizeof why) < 0) {
        fprintf(stderr, "oncebox %s: --provider-offline-limits: %s\n", cmd,
                why);
        return -1;
      }
      return ob__cli_cfg_flag(cli, CFG_PROVIDER_OFFLINE_LIMITS, arg, "", cmd) <
                     0
                 ? -1
                 : 1;
    }
    case CLI_OPT_PROVIDER_OFFLINE_UNLISTED:
      return ob__cli_cfg_flag(cli, CFG_PROVIDER_OFFLINE_UNLISTED, arg,
                              "--provider-offline-unlisted", cmd) < 0
                 ? -1
                 : 1;
    case CLI_OPT_PROVIDER_KEY_RETENTION: {
      long long ms = ob__cli_parse_duration_ms(arg);
      if (ms < 0 || (ms > 0 && ms < 3600000) ||
          ob__cli_cfg_flag(cli, CFG_PROVIDER_KEY_RETENTION, arg, "", cmd) < 0) {
        fprintf(stderr, "oncebox %s: --provider-key-retention wants 0 or a "
                "duration of at least 1h, such as 24h or 31d\n", cmd);
        return -1;
      }
      return 1;
    }
    default: return 0;
  }
}

void ob__cli_provider_from_config(const cli_t* cli, cli_provider_t* p) {
  const char* v = getenv("ONCEBOX_PROVIDER_AUTHORIZATION");
  memset(p, 0, sizeof *p);
  p->url = ob__cli_cfg_str(cli, CFG_PROVIDER_URL);
  p->allow_http = (int)ob__cli_cfg_int(cli, CFG_PROVIDER_ALLOW_HTTP);
  p->no_idempotency = !ob__cli_cfg_int(cli, CFG_PROVIDER_IDEMPOTENCY);
  p->no_lookup = !ob__cli_cfg_int(cli, CFG_PROVIDER_LOOKUP);
  p->timeout_ms = ob__cli_cfg_int(cli, CFG_PROVIDER_TIMEOUT);
  p->key_retention_ms = ob__cli_cfg_int(cli, CFG_PROVIDER_KEY_RETENTION);
  p->key_retention_set = 1;
  p->reference_lookup = ob__cli_cfg_str(cli, CFG_PROVIDER_REFERENCE_LOOKUP);
  /* Checked when the settings were loaded (cli_config.c): it parses. */
  if (ob__cli_offline_limits_parse(
          ob__cli_cfg_str(cli, CFG_PROVIDER_OFFLINE_LIMITS), p->offline,
          p->offline_currency, CLI_MAX_OFFLINE, &p->noffline, NULL, 0) < 0)
    p->noffline = 0;
  p->offline_unlisted = ob__cli_cfg_int(cli, CFG_PROVIDER_OFFLINE_UNLISTED)
                            ? OB_OFFLINE_REFUSE
                            : OB_OFFLINE_NO_LIMIT;
  /* The one secret: the environment only, never a flag or the file. Empty:
  ** none, as an unset variable. */
  p->authorization = v != NULL && v[0] != '\0' ? v : NULL;
}

int ob__cli_provider_configured(cli_provider_t* p) {
  return p->url != NULL && p->url[0] != '\0';
}

int ob__cli_enable_provider(ob_engine_t* e, cli_provider_t* p, const char* cmd) {
  ob_provider_options_t o;
  char err[CLI_ERRLEN];
  int rc;

  if (!ob__cli_provider_configured(p)) return 0;
  if (strncasecmp(p->url, "http://", 7) == 0 && !p->allow_http) {
    fprintf(stderr, "oncebox %s: the provider URL is plain http://: refused; "
            "use https://, or pass --provider-allow-http (or set "
            "ONCEBOX_PROVIDER_ALLOW_HTTP=1) for a test or local simulator\n",
            cmd);
    return EXIT_USAGE;
  }
  ob_provider_options_init(&o);
  o.name = OB_CHARGE_PROVIDER;
  o.base_url = p->url;
  o.allow_http = p->allow_http;
  o.authorization = p->authorization;  /* copied (and wiped) by the engine */
  o.idempotency_keys = !p->no_idempotency;
  o.lookup_path = p->no_lookup ? NULL : OB_CHARGE_LOOKUP_PATH;
  if (p->timeout_ms > 0) o.timeout_ms = p->timeout_ms;
  if (p->key_retention_set > 0) o.key_retention_ms = p->key_retention_ms;
  o.reference_lookup_path = p->reference_lookup;
  o.offline_limits = p->offline;
  o.noffline_limits = p->noffline;
  o.offline_unlisted = p->offline_unlisted;
  /* A lookup and a call are made under one lease: it must outlast both. */
  if (o.lease_ms <= 2 * o.timeout_ms) o.lease_ms = 2 * o.timeout_ms + 30000;
  rc = ob_provider_enable(e, &o, err, sizeof err);
  if (rc < 0) {
    /* err never quotes the authorization value. */
    fprintf(stderr, "oncebox %s: cannot use the payment provider: %s (%s)%s\n",
            cmd, err[0] ? err : ob_strerror(rc), ob_err_name(rc),
            p->authorization != NULL && strstr(err, "authorization") != NULL
                ? "; check ONCEBOX_PROVIDER_AUTHORIZATION"
                : "");
    return rc == OB_EINVAL ? EXIT_USAGE : EXIT_FAIL;
  }
  return 0;
}

/* One figure of an offline limit: digits (a duration for max_age). */
static int offline_figure(const char* key, const char* val, int64_t* out) {
  long long v = strcmp(key, "max_age") == 0 ? ob__cli_parse_duration_ms(val)
                                            : ob__cli_parse_count(val);
  if (v < 0) return -1;
  *out = v;
  return 0;
}

int ob__cli_offline_limits_parse(const char* spec, ob_offline_limit_t* out,
                                 char (*cur)[4], size_t max, size_t* n,
                                 char* why, size_t whylen) {
  char buf[2048];
  char *item, *save_item = NULL;
  char dummy[1];
  if (why == NULL || whylen == 0) why = dummy, whylen = sizeof dummy;
  why[0] = '\0';
  *n = 0;
  if (spec == NULL || spec[0] == '\0' || strcmp(spec, "none") == 0) return 0;
  if (strlen(spec) >= sizeof buf) {
    snprintf(why, whylen, "longer than %zu bytes", sizeof buf - 1);
    return -1;
  }
  snprintf(buf, sizeof buf, "%s", spec);
  for (item = strtok_r(buf, ",", &save_item); item != NULL;
       item = strtok_r(NULL, ",", &save_item)) {
    char *field, *save_field = NULL;
    ob_offline_limit_t* l;
    int figures = 0;
    if (*n == max) {
      snprintf(why, whylen, "more than %zu currencies", max);
      return -1;
    }
    l = &out[*n];
    memset(l, 0, sizeof *l);
    field = strtok_r(item, ":", &save_field);
    if (field == NULL || strlen(field) != 3 ||
        strspn(field, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != 3) {
      snprintf(why, whylen, "'%.40s' is not a currency of three upper-case "
               "letters (items look like EUR:max_amount=25000)",
               field ? field : "");
      return -1;
    }
    for (size_t i = 0; i < *n; i++)
      if (strcmp(cur[i], field) == 0) {
        snprintf(why, whylen, "%s is given twice", field);
        return -1;
      }
    memcpy(cur[*n], field, 4);
    l->currency = cur[*n];
    while ((field = strtok_r(NULL, ":", &save_field)) != NULL) {
      char* eq = strchr(field, '=');
      int64_t* slot;
      if (eq == NULL) {
        snprintf(why, whylen, "%s: '%.40s' is not key=value", l->currency,
                 field);
        return -1;
      }
      *eq = '\0';
      slot = strcmp(field, "max_amount") == 0  ? &l->max_amount
             : strcmp(field, "max_total") == 0 ? &l->max_total
             : strcmp(field, "max_count") == 0 ? &l->max_count
             : strcmp(field, "max_age") == 0   ? &l->max_age_ms
                                               : NULL;
      if (slot == NULL) {
        snprintf(why, whylen, "%s: unknown key '%.40s' (max_amount, "
                 "max_total, max_count, max_age)", l->currency, field);
        return -1;
      }
      if (offline_figure(field, eq + 1, slot) < 0) {
        snprintf(why, whylen, "%s: %s wants %s, not '%.40s'", l->currency,
                 field, strcmp(field, "max_age") == 0
                            ? "a duration such as 24h"
                            : "a whole number (amounts in minor units)",
                 eq + 1);
        return -1;
      }
      figures++;
    }
    if (figures == 0) {
      snprintf(why, whylen, "%s: no limit given (max_amount, max_total, "
               "max_count, max_age)", l->currency);
      return -1;
    }
    (*n)++;
  }
  return 0;
}

/* ---- output helpers ----------------------------------------------------- */

static void effects_usage(FILE* out) {
  fprintf(out,
          "usage: oncebox --db FILE effects show "
          "[--state pending|unknown|confirmed|failed|parked]\n"
          "                [--json] [KEY]\n"
          "       oncebox --db FILE effects reconcile [KEY...] [--timeout S]\n"
          "                [--provider-url URL] [provider options]\n"
          "       oncebox --db FILE effects resolve KEY "
          "(--confirmed REFERENCE | --failed REASON)\n"
          "\n"
          "An effect is one fenced call to a provider (a charge), keyed like\n"
          "charge:<orderId>: pending (claimed), unknown (a call was made and\n"
          "its outcome is not known), confirmed (with the provider's\n"
          "reference) or failed (with its reason). parked: unknown, and the\n"
          "provider can neither repeat the call safely nor look the key up:\n"
          "a person decides.\n"
          "\n"
          "show lists effects (--json: one JSON object a line).\n"
          "reconcile asks the provider now about pending and unknown effects\n"
          "(the given keys, else all of them), with their retry budget reset\n"
          "and unparked, and waits up to --timeout seconds (60) for an\n"
          "outcome. Exit 0 if every one is confirmed or failed, 1 otherwise.\n"
          "resolve records a person's verdict, after checking with the\n"
          "provider, on an effect it cannot settle; the messages waiting on\n"
          "it go back to the queue.\n"
          "\n"
          "Provider options (reconcile):\n"
          "%s",
          ob__cli_provider_help);
}

/* The state as an operator reads it: an unknown effect waiting for a
** person is "parked". */
static const char* state_word(const ob_effect_t* ef) {
  if (ef->state == OB_EFFECT_UNKNOWN && ef->parked_at_ms != 0) return "parked";
  return ob_effect_state_name(ef->state);
}

static int effect_open(const ob_effect_t* ef) {
  return ef->state == OB_EFFECT_PENDING || ef->state == OB_EFFECT_UNKNOWN;
}

static void json_cstr(FILE* f, const char* s) {
  ob__cli_json_str(f, s, s ? strlen(s) : 0);
}

static void json_ms(FILE* f, int64_t ms) {
  if (ms == 0) fputs("null", f);
  else fprintf(f, "%lld", (long long)ms);
}

static void print_effect_json(const ob_effect_t* ef) {
  FILE* f = stdout;
  fputs("{\"key\":", f);
  json_cstr(f, ef->key);
  fputs(",\"idempotencyKey\":", f);
  json_cstr(f, ef->idempotency_key);
  fputs(",\"provider\":", f);
  json_cstr(f, ef->provider);
  fputs(",\"method\":", f);
  json_cstr(f, ef->method);
  fputs(",\"path\":", f);
  json_cstr(f, ef->path);
  fputs(",\"request\":", f);
  ob__cli_json_str(f, ef->request, ef->request_len);
  fputs(",\"state\":", f);
  json_cstr(f, ob_effect_state_name(ef->state));
  fprintf(f, ",\"parked\":%s", ef->parked_at_ms != 0 ? "true" : "false");
  fputs(",\"parkCause\":", f);
  json_cstr(f, ef->park_cause);
  fputs(",\"reference\":", f);
  json_cstr(f, ef->reference);
  fputs(",\"response\":", f);
  ob__cli_json_str(f, ef->response, ef->response_len);
  fputs(",\"httpStatus\":", f);
  if (ef->http_status != 0) fprintf(f, "%d", ef->http_status);
  else fputs("null", f);
  fputs(",\"reason\":", f);
  json_cstr(f, ef->reason);
  fputs(",\"messageId\":", f);
  json_cstr(f, ef->message_id);
  fputs(",\"consumer\":", f);
  json_cstr(f, ef->consumer);
  fprintf(f, ",\"calls\":%d,\"lookups\":%d,\"successes\":%d,\"attempts\":%d",
          ef->calls, ef->lookups, ef->successes, ef->attempts);
  fputs(",\"nextAttemptAtMs\":", f);
  json_ms(f, ef->next_attempt_at_ms);
  fputs(",\"parkedAtMs\":", f);
  json_ms(f, ef->parked_at_ms);
  fputs(",\"createdAtMs\":", f);
  json_ms(f, ef->created_at_ms);
  fputs(",\"updatedAtMs\":", f);
  json_ms(f, ef->updated_at_ms);
  /* What the offline limits count (docs/offline.md); null: none. */
  fputs(",\"amountMinor\":", f);
  if (ef->currency != NULL) fprintf(f, "%lld", (long long)ef->amount);
  else fputs("null", f);
  fputs(",\"currency\":", f);
  json_cstr(f, ef->currency);
  fputs("}\n", f);
}

/* Text for a terminal: control characters become '?'. */
static void print_clean(const char* s, size_t max) {
  size_t i = 0;
  for (; s != NULL && s[i] && i < max; i++) {
    unsigned char c = (unsigned char)s[i];
    putchar(c < 0x20 || c == 0x7f ? '?' : c);
  }
  if (s != NULL && s[i]) fputs("...", stdout);
}

/* ---- show --------------------------------------------------------------- */

typedef struct show_s {
  int json;
  int parked_only;
  int shown;
} show_t;

static void show_header(void) {
  printf("%-32s %-9s %5s %7s %3s %5s %-36s %-20s %s\n", "KEY", "STATE",
         "CALLS", "LOOKUPS", "2XX", "TRIES", "MESSAGE ID", "UPDATED",
         "REFERENCE/REASON");
}

static int show_cb(void* arg, const ob_effect_t* ef) {
  show_t* s = arg;
  char updated[32];
  if (s->parked_only && ef->parked_at_ms == 0) return 0;
  if (s->shown++ == 0 && !s->json) show_header();
  if (s->json) {
    print_effect_json(ef);
    return 0;
  }
  ob__cli_format_time(ef->updated_at_ms, updated);
  printf("%-32s %-9s %5d %7d %3d %5d %-36s %-20s ", ef->key, state_word(ef),
         ef->calls, ef->lookups, ef->successes, ef->attempts,
         ef->message_id ? ef->message_id : "-", updated);
  if (ef->state == OB_EFFECT_CONFIRMED) {
    print_clean(ef->reference ? ef->reference : "-", 200);
  } else {
    if (ef->park_cause != NULL) printf("[%s] ", ef->park_cause);
    print_clean(ef->reason ? ef->reason : "-", 200);
  }
  putchar('\n');
  return 0;
}

static int parse_state(const char* s, int* state, int* parked_only) {
  static const struct {
    const char* name;
    int state;
  } names[] = {{"pending", OB_EFFECT_PENDING},
               {"unknown", OB_EFFECT_UNKNOWN},
               {"confirmed", OB_EFFECT_CONFIRMED},
               {"failed", OB_EFFECT_FAILED},
               {"parked", OB_EFFECT_UNKNOWN}};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(s, names[i].name) == 0) {
      *state = names[i].state;
      *parked_only = strcmp(s, "parked") == 0;
      return 0;
    }
  return -1;
}

static int effects_show(ob_engine_t* e, int state, int parked_only,
                        const char* key, int json) {
  show_t s;
  int n;
  memset(&s, 0, sizeof s);
  s.json = json;
  s.parked_only = parked_only;
  n = ob_effect_list(e, state, key, show_cb, &s);
  if (n < 0) {
    fprintf(stderr, "oncebox effects show: %s\n", ob_errmsg(e));
    return EXIT_FAIL;
  }
  if (key != NULL && n == 0) {
    fprintf(stderr, "oncebox effects show: no effect with key '%s'\n", key);
    return EXIT_FAIL;
  }
  if (!json) {
    if (s.shown == 0) show_header();
    printf("%d effect(s)\n", s.shown);
  }
  return EXIT_OK;
}

/* ---- one effect's state ------------------------------------------------- */

typedef struct snap_s {
  int found;
  int state;
  int parked;
  char word[16];
  char text[256];  /* reference or reason */
} snap_t;

static int snap_cb(void* arg, const ob_effect_t* ef) {
  snap_t* s = arg;
  const char* t = ef->state == OB_EFFECT_CONFIRMED ? ef->reference : ef->reason;
  s->found = 1;
  s->state = ef->state;
  s->parked = ef->parked_at_ms != 0;
  snprintf(s->word, sizeof s->word, "%s", state_word(ef));
  snprintf(s->text, sizeof s->text, "%s", t ? t : "");
  for (char* p = s->text; *p; p++)
    if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = '?';
  return 1;
}

/* 0 (s->found says whether it exists) or a negative code. */
static int snapshot(ob_engine_t* e, const char* key, snap_t* s) {
  int n;
  memset(s, 0, sizeof s[0]);
  n = ob_effect_list(e, 0, key, snap_cb, s);
  return n < 0 ? n : 0;
}

/* ---- reconcile ---------------------------------------------------------- */

typedef struct keys_s {
  char** v;
  size_t n;
  size_t cap;
} keys_t;

static int keys_add(keys_t* k, const char* key) {
  if (k->n == k->cap) {
    size_t cap = k->cap ? k->cap * 2 : 16;
    char** v = realloc(k->v, cap * sizeof *v);
    if (v == NULL) return -1;
    k->v = v;
    k->cap = cap;
  }
  k->v[k->n] = strdup(key);
  if (k->v[k->n] == NULL) return -1;
  k->n++;
  return 0;
}

static void keys_free(keys_t* k) {
  for (size_t i = 0; i < k->n; i++) free(k->v[i]);
  free(k->v);
  memset(k, 0, sizeof *k);
}

static int collect_open(void* arg, const ob_effect_t* ef) {
  keys_t* k = arg;
  if (effect_open(ef) && keys_add(k, ef->key) < 0) return 1;
  return 0;
}

typedef struct rec_s {
  ob_engine_t* e;
  uv_timer_t tick;
  const keys_t* keys;
  uint64_t deadline;   /* uv_now() ms */
  int timed_out;
  int detached;
} rec_t;

static void rec_detached(ob_engine_t* e, void* arg) {
  (void)e;
  ((rec_t*)arg)->detached = 1;
}

static void rec_finish(rec_t* r) {
  uv_timer_stop(&r->tick);
  uv_close((uv_handle_t*)&r->tick, NULL);
  ob_detach(r->e, rec_detached, r);
}

/* Still being worked on: pending, or unknown and not parked. */
static int still_open(const snap_t* s) {
  return s->found && (s->state == OB_EFFECT_PENDING ||
                      (s->state == OB_EFFECT_UNKNOWN && !s->parked));
}

static void rec_tick(uv_timer_t* t) {
  rec_t* r = t->data;
  int busy = 0;
  for (size_t i = 0; i < r->keys->n; i++) {
    snap_t s;
    if (snapshot(r->e, r->keys->v[i], &s) < 0) {
      /* Busy database: look again on the next tick, until the deadline. */
      busy = 1;
      break;
    }
    if (still_open(&s)) {
      busy = 1;
      break;
    }
  }
  if (!busy) {
    rec_finish(r);
    return;
  }
  if (uv_now(t->loop) >= r->deadline) {
    r->timed_out = 1;
    rec_finish(r);
  }
}

/* Run the engine (its provider's executor) on a loop of our own until no
** key is still open or timeout_s passed. 0, or a negative code if the
** engine could not be attached. */
static int watch(ob_engine_t* e, const keys_t* keys, long long timeout_s,
                 int* timed_out) {
  uv_loop_t loop;
  rec_t r;
  int rc;

  memset(&r, 0, sizeof r);
  r.e = e;
  r.keys = keys;
  if (uv_loop_init(&loop) != 0) return OB_ENOMEM;
  rc = ob_attach(e, &loop);
  if (rc < 0) {
    uv_run(&loop, UV_RUN_DEFAULT);  /* finish closing what attach opened */
    uv_loop_close(&loop);
    return rc;
  }
  r.deadline = uv_now(&loop) + (uint64_t)timeout_s * 1000;
  uv_timer_init(&loop, &r.tick);
  r.tick.data = &r;
  uv_timer_start(&r.tick, rec_tick, 50, 100);
  uv_run(&loop, UV_RUN_DEFAULT);
  uv_loop_close(&loop);
  *timed_out = r.timed_out;
  return 0;
}

static int effects_reconcile(cli_t* cli, cli_provider_t* prov, char** argv,
                             int nkeys, long long timeout_s) {
  const char* cmd = "effects reconcile";
  keys_t keys;
  ob_engine_t* e;
  ob_stats_t st;
  int code, n, settled = 0, left = 0, timed_out = 0;

  memset(&keys, 0, sizeof keys);
  if (!ob__cli_provider_configured(prov)) {
    fprintf(stderr, "oncebox effects reconcile: no provider to ask: pass "
            "--provider-url URL or set ONCEBOX_PROVIDER_URL\n");
    return EXIT_USAGE;
  }
  /* Only the effects: the local queue is not handled here (settled
  ** effects re-run their waiting messages in their own transaction). */
  e = ob__cli_open_publisher(cli, &code);
  if (e == NULL) return code;
  if ((code = ob__cli_enable_provider(e, prov, cmd)) != 0) {
    ob_close(e);
    return code;
  }

  /* Which effects: the given keys (each must exist), else every open one. */
  code = EXIT_OK;
  for (int i = 0; i < nkeys; i++) {
    snap_t s;
    if (snapshot(e, argv[i], &s) < 0) {
      fprintf(stderr, "oncebox %s: %s\n", cmd, ob_errmsg(e));
      code = EXIT_FAIL;
      break;
    }
    if (!s.found) {
      fprintf(stderr, "oncebox %s: no effect with key '%s'\n", cmd, argv[i]);
      code = EXIT_FAIL;
      continue;
    }
    if (keys_add(&keys, argv[i]) < 0) {
      fprintf(stderr, "oncebox %s: out of memory\n", cmd);
      code = EXIT_FAIL;
      break;
    }
  }
  if (code == EXIT_OK && nkeys == 0) {
    n = ob_effect_list(e, 0, NULL, collect_open, &keys);
    if (n < 0) {
      fprintf(stderr, "oncebox %s: %s\n", cmd, ob_errmsg(e));
      code = EXIT_FAIL;
    }
  }
  if (code != EXIT_OK) {
    keys_free(&keys);
    ob_close(e);
    return code;
  }
  if (keys.n == 0) {
    printf("nothing to reconcile: no pending or unknown effect\n");
    keys_free(&keys);
    ob_close(e);
    return EXIT_OK;
  }
  n = ob_effects_reconcile(e, nkeys > 0 ? (const char* const*)keys.v : NULL,
                           nkeys > 0 ? keys.n : 0);
  if (n < 0) {
    fprintf(stderr, "oncebox %s: %s: %s\n", cmd, ob_strerror(n), ob_errmsg(e));
    keys_free(&keys);
    ob_close(e);
    return EXIT_FAIL;
  }
  if (n > 0) {
    fprintf(stderr, "asking the provider about %d effect(s)\n", n);
    if (watch(e, &keys, timeout_s, &timed_out) < 0) {
      fprintf(stderr, "oncebox %s: %s\n", cmd, ob_errmsg(e));
      keys_free(&keys);
      ob_close(e);
      return EXIT_FAIL;
    }
  }

  /* Each key's final state. */
  for (size_t i = 0; i < keys.n; i++) {
    snap_t s;
    if (snapshot(e, keys.v[i], &s) < 0 || !s.found) {
      printf("%s: cannot read: %s\n", keys.v[i], ob_errmsg(e));
      left++;
      continue;
    }
    printf("%s: %s%s%s\n", keys.v[i], s.word, s.text[0] ? ": " : "", s.text);
    if (s.state == OB_EFFECT_CONFIRMED || s.state == OB_EFFECT_FAILED)
      settled++;
    else
      left++;
  }
  if (timed_out)
    fprintf(stderr, "oncebox %s: timed out after %llds with %d effect(s) "
            "still open (is the provider reachable? see the log above)\n",
            cmd, timeout_s, left);
  if (left > 0)
    fprintf(stderr, "%d effect(s) have no outcome. Check each with the "
            "provider, then record it: oncebox effects resolve KEY "
            "--confirmed REFERENCE (it happened) or --failed REASON (it did "
            "not)\n", left);
  if (settled > 0 && ob_stats(e, &st) == 0 && st.queue_ready > 0)
    fprintf(stderr, "%lld message(s) ready in the queue: `oncebox run` "
            "handles them\n", (long long)st.queue_ready);
  keys_free(&keys);
  ob_close(e);
  return left > 0 ? EXIT_FAIL : EXIT_OK;
}

/* ---- resolve ------------------------------------------------------------ */

static int effects_resolve(cli_t* cli, const char* key, const char* confirmed,
                           const char* failed) {
  const char* cmd = "effects resolve";
  ob_engine_t* e;
  snap_t s;
  int code, rc;

  e = ob__cli_open(cli, 0, &code);
  if (e == NULL) return code;
  /* The verdict re-runs the messages waiting on the effect here, and their
  ** handler asks for the effect by provider: register the provider's
  ** capabilities (no transport: nothing is sent from this command). */
  {
    ob_provider_options_t o;
    ob_provider_options_init(&o);
    o.name = OB_CHARGE_PROVIDER;
    rc = ob_provider_register(e, &o);
    if (rc < 0) {
      fprintf(stderr, "oncebox %s: %s: %s\n", cmd, ob_strerror(rc),
              ob_errmsg(e));
      ob_close(e);
      return EXIT_FAIL;
    }
  }
  if (snapshot(e, key, &s) == 0 && still_open(&s))
    fprintf(stderr, "note: %s is %s and not parked: the engine may still be "
            "asking the provider about it\n", key, s.word);
  rc = ob_effect_resolve(e, key,
                         confirmed ? OB_EFFECT_CONFIRMED : OB_EFFECT_FAILED,
                         confirmed ? confirmed : failed);
  switch (rc) {
    case 0:
      printf("%s: %s%s%s; the messages waiting on it run again\n", key,
             confirmed ? "confirmed" : "failed",
             confirmed ? ", reference " : ": ", confirmed ? confirmed : failed);
      code = EXIT_OK;
      break;
    case OB_ENOTFOUND:
      fprintf(stderr, "oncebox %s: no effect with key '%s'\n", cmd, key);
      code = EXIT_FAIL;
      break;
    case OB_ESTATE:
      if (snapshot(e, key, &s) == 0 && s.found)
        fprintf(stderr, "oncebox %s: %s is already %s%s%s; an outcome is "
                "final and cannot be changed\n", cmd, key, s.word,
                s.text[0] ? ": " : "", s.text);
      else
        fprintf(stderr, "oncebox %s: %s already has an outcome; it cannot "
                "be changed\n", cmd, key);
      code = EXIT_FAIL;
      break;
    case OB_EINVAL:
      fprintf(stderr, "oncebox %s: %s\n", cmd,
              ob_errmsg(e)[0] ? ob_errmsg(e) : ob_strerror(rc));
      code = EXIT_USAGE;
      break;
    default:
      fprintf(stderr, "oncebox %s: %s: %s\n", cmd, ob_strerror(rc),
              ob_errmsg(e));
      code = EXIT_FAIL;
      break;
  }
  ob_close(e);
  return code;
}

/* ---- the command -------------------------------------------------------- */

int ob__cmd_effects(cli_t* cli, int argc, char** argv) {
  static const struct option opts[] = {
      {"state", required_argument, NULL, 's'},
      {"json", no_argument, NULL, 'j'},
      {"timeout", required_argument, NULL, 't'},
      {"confirmed", required_argument, NULL, 'c'},
      {"failed", required_argument, NULL, 'f'},
      {"help", no_argument, NULL, 'h'},
      CLI_PROVIDER_LONG_OPTIONS,
      {NULL, 0, NULL, 0}};
  const char* sub;
  const char* confirmed = NULL;
  const char* failed = NULL;
  int c, code, json = 0, state = 0, parked_only = 0, have_state = 0;
  int have_provider = 0, have_timeout = 0;
  long long timeout_s = 60;
  cli_provider_t prov;
  ob_engine_t* e;

  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
    effects_usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? EXIT_USAGE : EXIT_OK;
  }
  sub = argv[1];
  if (strcmp(sub, "show") != 0 && strcmp(sub, "reconcile") != 0 &&
      strcmp(sub, "resolve") != 0) {
    fprintf(stderr, "oncebox effects: unknown subcommand '%s'\n", sub);
    effects_usage(stderr);
    return EXIT_USAGE;
  }
  memset(&prov, 0, sizeof prov);
  optind = 1;
  argc--;
  argv++;
  while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    int p = ob__cli_provider_option(cli, c, optarg, "effects");
    if (p < 0) return EXIT_USAGE;
    if (p > 0) {
      have_provider = 1;
      continue;
    }
    switch (c) {
      case 's':
        if (parse_state(optarg, &state, &parked_only) != 0) {
          fprintf(stderr, "oncebox effects show: --state wants pending, "
                  "unknown, confirmed, failed or parked\n");
          return EXIT_USAGE;
        }
        have_state = 1;
        break;
      case 'j': json = 1; break;
      case 't':
        timeout_s = ob__cli_parse_count(optarg);
        if (timeout_s < 1) {
          fprintf(stderr, "oncebox effects reconcile: --timeout wants "
                  "seconds >= 1\n");
          return EXIT_USAGE;
        }
        have_timeout = 1;
        break;
      case 'c': confirmed = optarg; break;
      case 'f': failed = optarg; break;
      case 'h': effects_usage(stdout); return EXIT_OK;
      default: effects_usage(stderr); return EXIT_USAGE;
    }
  }

  if (strcmp(sub, "show") == 0) {
    if (have_timeout || have_provider || confirmed || failed) {
      fprintf(stderr, "oncebox effects show: takes only --state, --json and "
              "a KEY\n");
      return EXIT_USAGE;
    }
    if (argc - optind > 1) {
      fprintf(stderr, "oncebox effects show: want at most one KEY\n");
      return EXIT_USAGE;
    }
    e = ob__cli_open_existing(cli, &code);
    if (e == NULL) return code;
    code = effects_show(e, have_state ? state : 0, parked_only,
                        optind < argc ? argv[optind] : NULL, json);
    ob_close(e);
    return code;
  }
  if (strcmp(sub, "reconcile") == 0) {
    if (have_state || json || confirmed || failed) {
      fprintf(stderr, "oncebox effects reconcile: takes KEYs, --timeout and "
              "provider options\n");
      return EXIT_USAGE;
    }
    ob__cli_provider_from_config(cli, &prov);
    return effects_reconcile(cli, &prov, argv + optind, argc - optind,
                             timeout_s);
  }
  /* resolve */
  if (have_state || json || have_timeout || have_provider) {
    fprintf(stderr, "oncebox effects resolve: takes a KEY and --confirmed "
            "REFERENCE or --failed REASON\n");
    return EXIT_USAGE;
  }
  if (argc - optind != 1) {
    fprintf(stderr, "oncebox effects resolve: want exactly one KEY\n");
    return EXIT_USAGE;
  }
  if ((confirmed == NULL) == (failed == NULL)) {
    fprintf(stderr, "oncebox effects resolve: give --confirmed REFERENCE "
            "(the provider made it) or --failed REASON (it did not)\n");
    return EXIT_USAGE;
  }
  if ((confirmed && confirmed[0] == '\0') || (failed && failed[0] == '\0')) {
    fprintf(stderr, "oncebox effects resolve: the reference or reason must "
            "not be empty\n");
    return EXIT_USAGE;
  }
  return effects_resolve(cli, argv[optind], confirmed, failed);
}
