/* SPDX-License-Identifier: Apache-2.0 */
/*
** The head office (sim.h): producers elsewhere send PaymentCaptured
** CloudEvents to the terminal's inbound SQS queue, which the real SQS
** consumer (ob_consumer_enable) receives, hands to the payout module and
** deletes. Some are sent twice (a producer's retry: the same CloudEvent in
** a second SQS message). Each one sent is acknowledged to the oracle: it
** must be paid once, from its own event.
**
** No loss: when SQS really deletes one of these messages (not a stale
** receipt handle), its payment must already be committed in the database.
** That is read at that instant from outside the engine, through a second,
** read-only SQLite connection on the simulated disk, as another process
** would read the file.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <sqlite3.h>

#include "oncebox_payout.h"
#include "tests/sim/sim.h"

struct sim_office_s {
  sim_sqs_t* sqs;
  sim_oracle_t* oracle;
  char queue[96];
  char db[320];
  sim_rng_t rng;
  int64_t sent, twice, deleted, unread;
};

static void uuid(sim_rng_t* r, char out[37]) {
  uint64_t a = sim_rng_next(r), b = sim_rng_next(r);
  snprintf(out, 37, "%08llx-%04llx-4%03llx-%04llx-%012llx",
           (unsigned long long)(a >> 32),
           (unsigned long long)((a >> 16) & 0xffff),
           (unsigned long long)(a & 0xfff),
           (unsigned long long)(0x8000 | ((b >> 48) & 0x3fff)),
           (unsigned long long)(b & 0xffffffffffffull));
}

/* 1: the payout of payment pay, made by event id, is committed; 0: not;
** -1: unreadable. */
static int committed(const char* db, const char* pay, const char* id) {
  sqlite3* c = NULL;
  sqlite3_stmt* st = NULL;
  int rc, found = -1;
  rc = sqlite3_open_v2(db, &c, SQLITE_OPEN_READONLY, NULL);
  if (rc == SQLITE_OK)
    rc = sqlite3_prepare_v2(c,
                            "SELECT 1 FROM merchant_payout WHERE "
                            "source_payment_id = ?1 AND source_event_id = ?2",
                            -1, &st, NULL);
  if (rc == SQLITE_OK) {
    sqlite3_bind_text(st, 1, pay, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, id, -1, SQLITE_STATIC);
    rc = sqlite3_step(st);
    found = rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -1;
  }
  sqlite3_finalize(st);
  sqlite3_close(c);
  return found;
}

static void on_delete(void* arg, const char* queue, const char* body) {
  sim_office_t* o = arg;
  cJSON* ev;
  const cJSON *id, *pay;
  int k;
  if (strcmp(queue, o->queue) != 0) return;
  o->deleted++;
  ev = cJSON_Parse(body);
  id = cJSON_GetObjectItemCaseSensitive(ev, "id");
  pay = cJSON_GetObjectItemCaseSensitive(
      cJSON_GetObjectItemCaseSensitive(ev, "data"), "paymentId");
  k = cJSON_IsString(id) && cJSON_IsString(pay)
          ? committed(o->db, pay->valuestring, id->valuestring)
          : -1;
  if (k == 0)
    sim_oracle_violation(o->oracle, "deleted-from-sqs-before-commit",
                         "event %s was deleted from %s while its payment "
                         "was not committed in the database",
                         id->valuestring, queue);
  else if (k < 0)
    o->unread++;
  cJSON_Delete(ev);
}

sim_office_t* sim_office_new(uint64_t seed, sim_sqs_t* sqs,
                             sim_oracle_t* oracle, const char* queue,
                             const char* db) {
  sim_office_t* o = calloc(1, sizeof *o);
  if (o == NULL) return NULL;
  o->sqs = sqs;
  o->oracle = oracle;
  snprintf(o->queue, sizeof o->queue, "%s", queue);
  snprintf(o->db, sizeof o->db, "%s", db);
  sim_rng_init(&o->rng, seed, 13);
  sim_sqs_on_delete(sqs, on_delete, o);
  return o;
}

void sim_office_free(sim_office_t* o) { free(o); }

void sim_office_send(sim_office_t* o) {
  char id[37], pay[37], mer[37], body[640];
  int n = 1 + sim_rng_chance(&o->rng, 30);
  uuid(&o->rng, id);
  uuid(&o->rng, pay);
  uuid(&o->rng, mer);
  snprintf(body, sizeof body,
           "{\"specversion\":\"1.0\",\"id\":\"%s\","
           "\"source\":\"urn:head-office:web-shop\",\"type\":\"%s\","
           "\"datacontenttype\":\"application/json\",\"data\":"
           "{\"paymentId\":\"%s\",\"merchantId\":\"%s\","
           "\"amountInMinorUnits\":%llu,\"currency\":\"EUR\"}}",
           id, OB_PAYOUT_MESSAGE_TYPE, pay, mer,
           (unsigned long long)(100 + sim_rng_below(&o->rng, 99900)));
  for (int i = 0; i < n; i++)
    if (sim_sqs_put(o->sqs, o->queue, body, NULL, NULL) != 0) abort();
  sim_oracle_acked(o->oracle, pay, id);
  o->sent++;
  o->twice += n - 1;
  sim_trace("office sends %s payment %s x%d", id, pay, n);
}

void sim_office_stats(const sim_office_t* o, int64_t* sent, int64_t* twice,
                      int64_t* deleted) {
  *sent = o->sent;
  *twice = o->twice;
  *deleted = o->deleted;
}
