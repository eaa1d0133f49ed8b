/* SPDX-License-Identifier: Apache-2.0 */
/*
** The simulated payment provider (sim_provider.h): the other side of the
** fence (docs/fence.md), answering what platform/effects/executor.c sends
** for ChargeOrder. Its idempotency rules are the public ones the fence was
** written against:
**
** Stripe, "Idempotent requests" (docs.stripe.com/api/idempotent_requests)
** and "Low-level error handling: idempotency":
**   - the status and body of the first request with a key are saved once
**     its execution began, and a retry with the key gets them again,
**     "including 500 errors", marked `Idempotent-Replayed: true`;
**   - "you can remove keys ... after they're at least 24 hours old", and
**     "a new request" is made if a key is reused after it was pruned: here,
**     a second real charge (the danger of decision 0013);
**   - nothing is saved for a request refused before it executed (failed
**     validation, a concurrent request with the key): the key stays free;
**   - keys are up to 255 characters;
**   - a request that conflicts with one still executing under the key gets
**     409 `idempotency_key_in_use`;
**   - Search API (docs.stripe.com/search): charges found by metadata,
**     answered as {"object":"search_result","data":[...]}, whatever key
**     made them; the index may lag ("under a minute").
** draft-ietf-httpapi-idempotency-key-header, "Error Scenarios":
**   - a missing key where the resource requires one: 400;
**   - a key reused with a different payload: 422 (Stripe says 400
**     idempotency_error; the fence treats both as a conflict);
**   - a retry while the original is still being processed: 409.
**
** "Same payload" compares the parameters (order_id, amount_minor,
** currency), as Stripe does, not bytes. "Still being processed" is a window
** of true time after the first request arrived (in_flight_ms): the network
** (sim_net.c) delivers a request at once and the service acts when it
** arrives, so the window stands for the provider's own processing. During
** it a repeat gets 409 whatever its payload (the key is locked), and
** lookups and searches do not see the charge yet.
**
** Not modelled: declines and other 4xx outcomes of a charge (every valid new
** request succeeds, unless a fault says otherwise), 429 and Retry-After,
** Authorization (sim_http_req_t does not carry it), requests without a key
** being executed (Stripe's keys are optional; here a missing key is the
** IETF 400, since the executor always sends one), a provider that ignores
** keys, refunds, pagination of search results (has_more is always false),
** a base URL with a path, and keys pruned earlier than the retention says.
** Gateway 5xx of the link itself are sim_net.c's (sim_net_set_loss).
*/
#include "tests/sim/sim_provider.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#define NBUCKETS 1024
#define KEY_MAX 255
#define ORDER_MAX 255
#define MAX_SAFE_INT 9007199254740991LL  /* 2^53 - 1 */

typedef struct charge_s {
  char* id;
  char* order_id;
  char* key;           /* the idempotency key that made it */
  int64_t amount;
  char currency[4];
  int64_t created_ms;  /* true time */
  int64_t done_ms;     /* its request finished: visible to lookups */
  long next_of_order;  /* index of the order's next charge, -1 */
} charge_t;

typedef struct order_s {
  char* id;
  int count;
  long first, last;    /* charge indexes */
  struct order_s* next;
} order_t;

typedef struct keyrec_s {
  char* key;
  int live;            /* 0: pruned; kept to count reuse after pruning */
  char* order_id;      /* the payload's parameters */
  int64_t amount;
  char currency[4];
  int64_t first_ms;    /* true time of the first request */
  int64_t busy_until;  /* first_ms + in_flight_ms of that time */
  int status;          /* the saved answer */
  char* body;
  long charge;         /* index, -1: none */
  struct keyrec_s* next;
} keyrec_t;

struct sim_provider_s {
  sim_provider_config_t c;
  sim_rng_t rng;
  keyrec_t* keys[NBUCKETS];
  order_t* orders[NBUCKETS];
  charge_t** charges;
  size_t ncharges, cap;
  sim_provider_stats_t st;
};

/* The parameters of a charge request. */
typedef struct params_s {
  char order_id[ORDER_MAX + 1];
  int64_t amount;
  char currency[4];
} params_t;

static const char k_in_use[] =
    "{\"error\":{\"type\":\"idempotency_error\",\"code\":"
    "\"idempotency_key_in_use\",\"message\":\"There is currently another "
    "in-progress request using this Idempotency Key. Please try again "
    "later.\"}}";
static const char k_mismatch[] =
    "{\"error\":{\"type\":\"idempotency_error\",\"message\":\"Keys for "
    "idempotent requests can only be used with the same parameters they "
    "were first used with.\"}}";
static const char k_unknown_error[] =
    "{\"error\":{\"type\":\"api_error\",\"message\":\"An unknown error "
    "occurred while processing this request.\"}}";
static const char k_unavailable[] =
    "{\"error\":{\"type\":\"api_error\",\"message\":\"Service "
    "unavailable\"}}";
static const char k_no_charge[] =
    "{\"error\":{\"type\":\"invalid_request_error\",\"message\":\"No such "
    "charge\"}}";

/* ---- small helpers -------------------------------------------------------- */

static uint64_t fnv(const char* s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) {
    h ^= (unsigned char)*s;
    h *= 1099511628211ull;
  }
  return h;
}

static char* dup(const char* s) {
  size_t n = strlen(s) + 1;
  char* d = malloc(n);
  if (d != NULL) memcpy(d, s, n);
  return d;
}

/* res gets status and a copy of body. -1 when out of memory. */
static int answer(sim_http_res_t* res, int status, const char* body) {
  size_t n = strlen(body);
  res->body = malloc(n + 1);
  if (res->body == NULL) return -1;
  memcpy(res->body, body, n + 1);
  res->body_len = n;
  res->status = status;
  return 0;
}

/* {"error":{"type":"invalid_request_error","message":msg}} */
static int invalid(sim_http_res_t* res, int status, const char* msg) {
  cJSON* o = cJSON_CreateObject();
  cJSON* e = cJSON_AddObjectToObject(o, "error");
  char* s;
  int rc;
  if (e == NULL ||
      cJSON_AddStringToObject(e, "type", "invalid_request_error") == NULL ||
      cJSON_AddStringToObject(e, "message", msg) == NULL ||
      (s = cJSON_PrintUnformatted(o)) == NULL) {
    cJSON_Delete(o);
    return -1;
  }
  cJSON_Delete(o);
  rc = answer(res, status, s);
  cJSON_free(s);
  return rc;
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Percent-decode s[0..n) into out (form rules: '+' is a space). 0, or -1
** when it does not fit or decodes a NUL. */
static int pct_decode(const char* s, size_t n, char* out, size_t cap) {
  size_t o = 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (c == '%' && i + 2 < n && hexval(s[i + 1]) >= 0 &&
        hexval(s[i + 2]) >= 0) {
      c = (char)(hexval(s[i + 1]) * 16 + hexval(s[i + 2]));
      i += 2;
    } else if (c == '+') {
      c = ' ';
    }
    if (c == '\0' || o + 1 >= cap) return -1;
    out[o++] = c;
  }
  out[o] = '\0';
  return 0;
}

/* The decoded value of query parameter name, or -1 when absent. */
static int query_param(const char* query, const char* name, char* out,
                       size_t cap) {
  size_t nl = strlen(name);
  const char* p = query;
  while (p != NULL && *p) {
    const char* amp = strchr(p, '&');
    size_t len = amp ? (size_t)(amp - p) : strlen(p);
    if (len > nl && strncmp(p, name, nl) == 0 && p[nl] == '=')
      return pct_decode(p + nl + 1, len - nl - 1, out, cap);
    p = amp ? amp + 1 : NULL;
  }
  return -1;
}

/* Stripe's search query for one metadata value: metadata['order_id']:'X'
** (either quote; a backslash escapes the next character). 0 and X in out,
** -1 for any other query. */
static int search_order(const char* q, char* out, size_t cap) {
  static const char head[] = "metadata[";
  static const char field[] = "order_id";
  size_t o = 0;
  char quote;
  while (*q == ' ') q++;
  if (strncmp(q, head, sizeof head - 1) != 0) return -1;
  q += sizeof head - 1;
  quote = *q;
  if (quote != '\'' && quote != '"') return -1;
  q++;
  if (strncmp(q, field, sizeof field - 1) != 0) return -1;
  q += sizeof field - 1;
  if (q[0] != quote || q[1] != ']' || q[2] != ':') return -1;
  q += 3;
  quote = *q;
  if (quote != '\'' && quote != '"') return -1;
  for (q++; *q && *q != quote; q++) {
    if (*q == '\\' && q[1] != '\0') q++;
    if (o + 1 >= cap) return -1;
    out[o++] = *q;
  }
  if (*q != quote) return -1;
  for (q++; *q == ' '; q++) {
  }
  out[o] = '\0';
  return *q == '\0' && o > 0 ? 0 : -1;
}

/* "https://host[:port]/path?query": path (up to '?') into path, the query
** (or "") returned. */
static const char* split_url(const char* url, char* path, size_t cap) {
  const char* p = strstr(url, "://");
  const char* q;
  size_t n;
  p = p ? strchr(p + 3, '/') : strchr(url, '/');
  if (p == NULL) p = "/";
  q = strchr(p, '?');
  n = q ? (size_t)(q - p) : strlen(p);
  if (n >= cap) n = cap - 1;
  memcpy(path, p, n);
  path[n] = '\0';
  return q ? q + 1 : "";
}

/* ---- state ---------------------------------------------------------------- */

void sim_provider_config_init(sim_provider_config_t* c) {
  memset(c, 0, sizeof *c);
  c->retention_ms = 24LL * 3600 * 1000;
  c->in_flight_ms = 2000;
  c->search_lag_ms = 0;
}

sim_provider_t* sim_provider_new(uint64_t seed, const sim_provider_config_t* c) {
  sim_provider_t* p = calloc(1, sizeof *p);
  if (p == NULL) return NULL;
  if (c != NULL) p->c = *c;
  else sim_provider_config_init(&p->c);
  if (p->c.in_flight_ms < 0) p->c.in_flight_ms = 0;
  if (p->c.search_lag_ms < 0) p->c.search_lag_ms = 0;
  if (p->c.retention_ms < 0) p->c.retention_ms = 0;
  sim_rng_init(&p->rng, seed, 13);
  return p;
}

void sim_provider_free(sim_provider_t* p) {
  if (p == NULL) return;
  for (size_t b = 0; b < NBUCKETS; b++) {
    for (keyrec_t *k = p->keys[b], *nx; k != NULL; k = nx) {
      nx = k->next;
      free(k->key);
      free(k->order_id);
      free(k->body);
      free(k);
    }
    for (order_t *o = p->orders[b], *nx; o != NULL; o = nx) {
      nx = o->next;
      free(o->id);
      free(o);
    }
  }
  for (size_t i = 0; i < p->ncharges; i++) {
    free(p->charges[i]->id);
    free(p->charges[i]->order_id);
    free(p->charges[i]->key);
    free(p->charges[i]);
  }
  free(p->charges);
  free(p);
}

void sim_provider_set_faults(sim_provider_t* p, unsigned before,
                             unsigned after) {
  p->c.err_before_per_mille = before;
  p->c.err_after_per_mille = after;
}

void sim_provider_set_in_flight(sim_provider_t* p, int64_t ms) {
  p->c.in_flight_ms = ms < 0 ? 0 : ms;
}

static order_t* find_order(const sim_provider_t* p, const char* id) {
  for (order_t* o = p->orders[fnv(id) % NBUCKETS]; o != NULL; o = o->next)
    if (strcmp(o->id, id) == 0) return o;
  return NULL;
}

static keyrec_t* find_key(const sim_provider_t* p, const char* key) {
  for (keyrec_t* k = p->keys[fnv(key) % NBUCKETS]; k != NULL; k = k->next)
    if (strcmp(k->key, key) == 0) return k;
  return NULL;
}

/* The key's record if it is still remembered; a key at least the retention
** old is pruned now (Stripe prunes on its own schedule; seen from outside,
** pruning at the next use is the same). 0 retention: kept forever. */
static keyrec_t* live_key(sim_provider_t* p, const char* key, int64_t now) {
  keyrec_t* k = find_key(p, key);
  if (k == NULL || !k->live) return NULL;
  if (p->c.retention_ms > 0 && now - k->first_ms >= p->c.retention_ms) {
    k->live = 0;
    p->st.pruned++;
    sim_trace("provider key %.8s pruned (first used %" PRId64 " ms ago)",
              key, now - k->first_ms);
    return NULL;
  }
  return k;
}

/* The charge as a Stripe-like object, or NULL. The amount is raw text:
** exact up to 2^53 - 1, where a double would print in exponent form. */
static cJSON* charge_obj(const charge_t* ch) {
  cJSON* o = cJSON_CreateObject();
  cJSON* md;
  char amount[24];
  snprintf(amount, sizeof amount, "%" PRId64, ch->amount);
  if (o != NULL && cJSON_AddStringToObject(o, "id", ch->id) != NULL &&
      cJSON_AddStringToObject(o, "object", "charge") != NULL &&
      cJSON_AddRawToObject(o, "amount_minor", amount) != NULL &&
      cJSON_AddStringToObject(o, "currency", ch->currency) != NULL &&
      cJSON_AddStringToObject(o, "order_id", ch->order_id) != NULL &&
      (md = cJSON_AddObjectToObject(o, "metadata")) != NULL &&
      cJSON_AddStringToObject(md, "order_id", ch->order_id) != NULL &&
      cJSON_AddStringToObject(o, "status", "succeeded") != NULL &&
      cJSON_AddNumberToObject(o, "created",
                              (double)(ch->created_ms / 1000)) != NULL)
    return o;
  cJSON_Delete(o);
  return NULL;
}

/* The charge as JSON text (free with cJSON_free), or NULL. */
static char* charge_json(const charge_t* ch) {
  cJSON* o = charge_obj(ch);
  char* s = o ? cJSON_PrintUnformatted(o) : NULL;
  cJSON_Delete(o);
  return s;
}

/* Make a charge for params under key. Returns its index, or -1 (out of
** memory: nothing changed). */
static long add_charge(sim_provider_t* p, const params_t* pr, const char* key,
                       int64_t now) {
  charge_t* ch;
  order_t* o = find_order(p, pr->order_id);
  order_t* fresh = NULL;
  char id[40];
  long idx = (long)p->ncharges;

  if (p->ncharges == p->cap) {
    size_t cap = p->cap ? p->cap * 2 : 64;
    charge_t** a = realloc(p->charges, cap * sizeof *a);
    if (a == NULL) return -1;
    p->charges = a;
    p->cap = cap;
  }
  /* A Stripe-looking id: the sequence keeps it unique, the tail random. */
  snprintf(id, sizeof id, "ch_%06ld%08" PRIx64, idx + 1,
           sim_rng_next(&p->rng) & 0xffffffffu);
  ch = calloc(1, sizeof *ch);
  if (ch == NULL) return -1;
  ch->id = dup(id);
  ch->order_id = dup(pr->order_id);
  ch->key = dup(key);
  if (o == NULL) {
    fresh = calloc(1, sizeof *fresh);
    if (fresh != NULL) fresh->id = dup(pr->order_id);
  }
  if (ch->id == NULL || ch->order_id == NULL || ch->key == NULL ||
      (o == NULL && (fresh == NULL || fresh->id == NULL))) {
    free(ch->id);
    free(ch->order_id);
    free(ch->key);
    free(ch);
    if (fresh != NULL) free(fresh->id);
    free(fresh);
    return -1;
  }
  ch->amount = pr->amount;
  memcpy(ch->currency, pr->currency, 4);
  ch->created_ms = now;
  ch->done_ms = now + p->c.in_flight_ms;
  ch->next_of_order = -1;
  p->charges[p->ncharges++] = ch;
  if (fresh != NULL) {
    size_t b = fnv(fresh->id) % NBUCKETS;
    fresh->first = fresh->last = -1;
    fresh->next = p->orders[b];
    p->orders[b] = fresh;
    o = fresh;
    p->st.orders++;
  }
  if (o->last >= 0) p->charges[o->last]->next_of_order = idx;
  else o->first = idx;
  o->last = idx;
  if (++o->count == 2) p->st.orders_charged_twice++;
  p->st.charges++;
  return idx;
}

/* ---- POST /v1/charges ------------------------------------------------------ */

/* Parse the ChargeOrder request body (exactly these three fields). NULL,
** or why it is refused. */
static const char* parse_params(const char* body, size_t len, params_t* out) {
  cJSON *j, *it;
  char* text;
  const char* why = NULL;
  int seen = 0;

  if (memchr(body, '\0', len) != NULL) return "Invalid JSON in request body";
  text = malloc(len + 1);
  if (text == NULL) return "out of memory";
  memcpy(text, body, len);
  text[len] = '\0';
  j = cJSON_ParseWithOpts(text, NULL, 1);
  free(text);
  if (j == NULL) return "Invalid JSON in request body";
  if (!cJSON_IsObject(j)) {
    cJSON_Delete(j);
    return "Request body must be a JSON object";
  }
  memset(out, 0, sizeof *out);
  cJSON_ArrayForEach(it, j) {
    if (strcmp(it->string, "order_id") == 0 && !(seen & 1)) {
      size_t n = cJSON_IsString(it) ? strlen(it->valuestring) : 0;
      if (n == 0 || n > ORDER_MAX) {
        why = "order_id must be a string of 1 to 255 characters";
        break;
      }
      memcpy(out->order_id, it->valuestring, n + 1);
      seen |= 1;
    } else if (strcmp(it->string, "amount_minor") == 0 && !(seen & 2)) {
      double v = cJSON_IsNumber(it) ? it->valuedouble : 0;
      if (!(v >= 1 && v <= (double)MAX_SAFE_INT) || v != (double)(int64_t)v) {
        why = "amount_minor must be a positive integer";
        break;
      }
      out->amount = (int64_t)v;
      seen |= 2;
    } else if (strcmp(it->string, "currency") == 0 && !(seen & 4)) {
      const char* c = cJSON_IsString(it) ? it->valuestring : "";
      if (strlen(c) != 3 || c[0] < 'A' || c[0] > 'Z' || c[1] < 'A' ||
          c[1] > 'Z' || c[2] < 'A' || c[2] > 'Z') {
        why = "currency must be 3 upper-case letters";
        break;
      }
      memcpy(out->currency, c, 4);
      seen |= 4;
    } else {
      why = "Received unknown or repeated parameter";
      break;
    }
  }
  cJSON_Delete(j);
  if (why == NULL && seen != 7) why = "Missing required param";
  return why;
}

static int same_params(const keyrec_t* k, const params_t* pr) {
  return strcmp(k->order_id, pr->order_id) == 0 && k->amount == pr->amount &&
         strcmp(k->currency, pr->currency) == 0;
}

static int key_ok(const char* key) {
  size_t n = strlen(key);
  if (n == 0 || n > KEY_MAX) return 0;
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)key[i] < 0x20 || (unsigned char)key[i] > 0x7e)
      return 0;
  return 1;
}

/* A new request under key (never seen, or pruned): execute it, save its
** answer under the key, answer it. */
static int execute(sim_provider_t* p, const char* key, const params_t* pr,
                   int64_t now, sim_http_res_t* res) {
  keyrec_t* k = find_key(p, key);
  /* A record that held an answer once: the key was pruned. */
  int reused = k != NULL && k->order_id != NULL;
  int fault;
  long idx;
  char *body, *json, *order = dup(pr->order_id);

  if (order == NULL) return -1;
  if (k == NULL) {
    k = calloc(1, sizeof *k);
    if (k == NULL || (k->key = dup(key)) == NULL) {
      free(k);
      free(order);
      return -1;
    }
    k->next = p->keys[fnv(key) % NBUCKETS];
    p->keys[fnv(key) % NBUCKETS] = k;
  }
  idx = add_charge(p, pr, key, now);
  if (idx < 0) {
    free(order);
    return -1;  /* the record stays a tombstone (or a never-live entry) */
  }
  /* Act, then fail: the charge stands, and the 500 is what the key keeps
  ** (Stripe: retries return the saved response, "including 500 errors"). */
  fault = p->c.err_after_per_mille > 0 &&
          sim_rng_chance(&p->rng, p->c.err_after_per_mille);
  if (fault) {
    body = dup(k_unknown_error);
  } else {
    json = charge_json(p->charges[idx]);
    body = json ? dup(json) : NULL;
    cJSON_free(json);
  }
  if (body == NULL || answer(res, fault ? 500 : 200, body) < 0) {
    /* The charge is made and nothing is saved: as a provider that died
    ** before saving. Rare enough (out of memory) to accept. */
    free(body);
    free(order);
    return -1;
  }
  free(k->order_id);
  free(k->body);
  k->live = 1;
  k->order_id = order;
  k->amount = pr->amount;
  memcpy(k->currency, pr->currency, 4);
  k->first_ms = now;
  k->busy_until = now + p->c.in_flight_ms;
  k->status = fault ? 500 : 200;
  k->body = body;
  k->charge = idx;
  if (reused) p->st.reused_after_prune++;
  if (fault) p->st.errors_after++;
  sim_trace("provider charge key %.8s order %s: new %s%s%s", key,
            pr->order_id, p->charges[idx]->id,
            reused ? " (the key was pruned: a new request)" : "",
            fault ? ", then 500 (saved)" : "");
  return 0;
}

static int post_charge(sim_provider_t* p, const sim_http_req_t* req,
                       int64_t now, sim_http_res_t* res) {
  const char* key = req->idem_key ? req->idem_key : "";
  params_t pr;
  const char* why;
  keyrec_t* k;

  p->st.calls++;
  if (key[0] == '\0') {
    p->st.invalid_400++;
    sim_trace("provider charge without a key: 400");
    return invalid(res, 400, "Idempotency-Key header is required");
  }
  if (!key_ok(key)) {
    p->st.invalid_400++;
    sim_trace("provider charge with a bad key: 400");
    return invalid(res, 400, "Idempotency-Key must be 1 to 255 printable "
                   "characters");
  }
  why = parse_params(req->body ? req->body : "", req->body_len, &pr);
  if (why != NULL) {
    p->st.invalid_400++;
    sim_trace("provider charge key %.8s: 400 %s", key, why);
    return invalid(res, 400, why);
  }
  k = live_key(p, key, now);
  if (k == NULL) return execute(p, key, &pr, now, res);
  if (now < k->busy_until) {
    /* The first request holds the key: nothing saved for this one. */
    p->st.in_flight_409++;
    sim_trace("provider charge key %.8s order %s: 409 in flight", key,
              pr.order_id);
    return answer(res, 409, k_in_use);
  }
  if (!same_params(k, &pr)) {
    p->st.conflicts_422++;
    sim_trace("provider charge key %.8s order %s: 422 (first used for %s)",
              key, pr.order_id, k->order_id);
    return answer(res, 422, k_mismatch);
  }
  if (answer(res, k->status, k->body) < 0) return -1;
  snprintf(res->header, sizeof res->header, "Idempotent-Replayed: true");
  p->st.replays++;
  if (k->status >= 500) p->st.replayed_5xx++;
  sim_trace("provider charge key %.8s order %s: replay %d", key, pr.order_id,
            k->status);
  return 0;
}

/* ---- lookups ------------------------------------------------------------------ */

/* GET /v1/charges?idempotency_key=K: the charge K's saved request made, once
** that request is done; 404 for anything else (a pruned key included: "never
** seen", which is why the fence stops using keys near the retention). */
static int lookup_key(sim_provider_t* p, const char* query, int64_t now,
                      sim_http_res_t* res) {
  char key[KEY_MAX + 1];
  keyrec_t* k;
  char* s;
  int rc;

  p->st.lookups++;
  if (query_param(query, "idempotency_key", key, sizeof key) != 0 ||
      key[0] == '\0') {
    p->st.invalid_400++;
    return invalid(res, 400, "idempotency_key query parameter is required");
  }
  k = live_key(p, key, now);
  if (k == NULL || k->charge < 0 || now < k->busy_until) {
    p->st.not_found++;
    sim_trace("provider lookup key %.8s: 404", key);
    return answer(res, 404, k_no_charge);
  }
  s = charge_json(p->charges[k->charge]);
  if (s == NULL) return -1;
  rc = answer(res, 200, s);
  cJSON_free(s);
  sim_trace("provider lookup key %.8s: 200 %s", key,
            p->charges[k->charge]->id);
  return rc;
}

/* GET /v1/charges/search?query=metadata['order_id']:'O': every charge of O
** done at least search_lag_ms ago, whatever key made it (charges are never
** pruned). */
static int search(sim_provider_t* p, const char* query, int64_t now,
                  sim_http_res_t* res) {
  char q[2 * ORDER_MAX + 64], order[ORDER_MAX + 1];
  const order_t* o;
  cJSON *r, *data;
  char* s;
  int n = 0, rc;

  p->st.searches++;
  if (query_param(query, "query", q, sizeof q) != 0 ||
      search_order(q, order, sizeof order) != 0) {
    p->st.invalid_400++;
    sim_trace("provider search: 400");
    return invalid(res, 400, "Invalid search query: expected "
                   "metadata['order_id']:'value'");
  }
  r = cJSON_CreateObject();
  if (r == NULL || cJSON_AddStringToObject(r, "object", "search_result") ==
                       NULL ||
      cJSON_AddStringToObject(r, "url", "/v1/charges/search") == NULL ||
      cJSON_AddFalseToObject(r, "has_more") == NULL ||
      (data = cJSON_AddArrayToObject(r, "data")) == NULL) {
    cJSON_Delete(r);
    return -1;
  }
  o = find_order(p, order);
  for (long i = o ? o->first : -1; i >= 0; i = p->charges[i]->next_of_order) {
    const charge_t* ch = p->charges[i];
    cJSON* item;
    if (now < ch->done_ms + p->c.search_lag_ms) continue;
    item = charge_obj(ch);
    if (item == NULL || !cJSON_AddItemToArray(data, item)) {
      cJSON_Delete(item);
      cJSON_Delete(r);
      return -1;
    }
    n++;
  }
  s = cJSON_PrintUnformatted(r);
  cJSON_Delete(r);
  if (s == NULL) return -1;
  rc = answer(res, 200, s);
  cJSON_free(s);
  sim_trace("provider search order %s: %d of %d charges", order, n,
            o ? o->count : 0);
  return rc;
}

/* ---- the service ----------------------------------------------------------------- */

int sim_provider_service(void* ctx, const sim_http_req_t* req,
                         sim_http_res_t* res) {
  sim_provider_t* p = ctx;
  char path[256];
  const char* query = split_url(req->url ? req->url : "", path, sizeof path);
  const char* method = req->method ? req->method : "";
  int64_t now = sim_true_ms();

  p->st.requests++;
  res->header[0] = '\0';
  /* Refused before the idempotency layer (a gateway, an overloaded
  ** front end): nothing done, nothing saved, the key stays free. */
  if (p->c.err_before_per_mille > 0 &&
      sim_rng_chance(&p->rng, p->c.err_before_per_mille)) {
    int status = sim_rng_chance(&p->rng, 500) ? 503 : 500;
    p->st.errors_before++;
    sim_trace("provider %s %s: %d without acting", method, path, status);
    return answer(res, status,
                  status == 503 ? k_unavailable : k_unknown_error);
  }
  if (strcmp(method, "POST") == 0 && strcmp(path, "/v1/charges") == 0)
    return post_charge(p, req, now, res);
  if (strcmp(method, "GET") == 0 && strcmp(path, "/v1/charges") == 0)
    return lookup_key(p, query, now, res);
  if (strcmp(method, "GET") == 0 && strcmp(path, "/v1/charges/search") == 0)
    return search(p, query, now, res);
  p->st.not_found++;
  sim_trace("provider %s %s: 404", method, path);
  return invalid(res, 404, "Unrecognized request URL");
}

/* ---- what the world reads ---------------------------------------------------------- */

int sim_provider_check(const sim_provider_t* p, char* why, size_t n) {
  const order_t* first = NULL;
  if (why != NULL && n > 0) why[0] = '\0';
  if (p->st.orders_charged_twice == 0) return 0;
  /* The first offender: the order of the earliest charge among them. */
  for (size_t i = 0; i < p->ncharges && first == NULL; i++) {
    const order_t* o = find_order(p, p->charges[i]->order_id);
    if (o != NULL && o->count > 1) first = o;
  }
  if (first != NULL && why != NULL && n > 0) {
    size_t len = 0;
    int k = snprintf(why, n, "order %s charged %d times:", first->id,
                     first->count);
    for (long i = first->first; k >= 0 && i >= 0;
         i = p->charges[i]->next_of_order) {
      const charge_t* ch = p->charges[i];
      len += (size_t)k;
      if (len >= n) break;
      k = snprintf(why + len, n - len, " %s (key %.8s at %" PRId64 " ms)",
                   ch->id, ch->key, ch->created_ms);
    }
  }
  return (int)p->st.orders_charged_twice;
}

void sim_provider_stats(const sim_provider_t* p, sim_provider_stats_t* s) {
  *s = p->st;
}

int sim_provider_charges_of(const sim_provider_t* p, const char* order_id) {
  const order_t* o = find_order(p, order_id);
  return o ? o->count : 0;
}

const char* sim_provider_first_charge(const sim_provider_t* p,
                                      const char* order_id) {
  const order_t* o = find_order(p, order_id);
  return o && o->first >= 0 ? p->charges[o->first]->id : NULL;
}

size_t sim_provider_each_charge(const sim_provider_t* p,
                                void (*fn)(void*, const char*, const char*,
                                           int64_t, const char*),
                                void* arg) {
  for (size_t i = 0; fn != NULL && i < p->ncharges; i++) {
    const charge_t* ch = p->charges[i];
    fn(arg, ch->id, ch->order_id, ch->amount, ch->currency);
  }
  return p->ncharges;
}
