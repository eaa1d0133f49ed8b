/* SPDX-License-Identifier: Apache-2.0 */
/* A real engine on a real database with a fake clock: an SQLite file in a
** temporary directory, or with $OB_TEST_BACKEND=postgresql a fresh
** database on a PostgreSQL server of the test's own (support/backend.h).
** Shared by the engine tests. */
#ifndef OB_ENGINE_FIXTURE_H
#define OB_ENGINE_FIXTURE_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "oncebox.h"
#include "tests/support/backend.h"
#include "tests/support/testsupport.h"

typedef struct fixture_s {
  char* dir;
  char* db_path;
  fake_clock_t clock;
  ob_options_t opts;
  ob_engine_t* e;
} fixture_t;

/* 2026-12-01T00:00:00Z */
#define FX_T0 1796083200000LL

static inline void fx_open(fixture_t* f) {
  char err[512];
  int rc = ob_open(&f->e, &f->opts, err, sizeof err);
  if (rc != 0) fail_msg("ob_open: %s (%s)", err, ob_err_name(rc));
}

static inline fixture_t* fx_new(int batch) {
  fixture_t* f = calloc(1, sizeof *f);
  f->dir = ts_mkdtemp("engine");
  f->db_path = ts_backend_db(f->dir, "t.db");
  fake_clock_init(&f->clock, FX_T0, 42);
  ob_options_init(&f->opts);
  f->opts.db_path = f->db_path;
  f->opts.clock = &f->clock.clock;
  f->opts.batch_size = batch;
  fx_open(f);
  return f;
}

static inline void fx_free(fixture_t* f) {
  ob_close(f->e);
  free(f->db_path);
  ts_rmdir(f->dir);
  free(f);
}

static inline void fx_reopen(fixture_t* f) {
  ob_close(f->e);
  f->e = NULL;
  fx_open(f);
}

/* One integer from a query on a separate connection: the test inspects
** what is durable, not the engine's view. */
static inline long long fx_count(fixture_t* f, const char* sql) {
  return ts_backend_count(f->db_path, sql);
}

static inline int fx_enqueue(fixture_t* f, const char* type, const char* id,
                             const char* body) {
  ob_envelope_t env;
  memset(&env, 0, sizeof env);
  env.type = type;
  env.id = id;
  env.body = body;
  env.body_len = body ? strlen(body) : 0;
  return ob_enqueue(f->e, &env);
}

/* A valid PaymentCaptured body for payment number n. */
static inline const char* fx_payment(int n, char buf[256]) {
  snprintf(buf, 256,
           "{\"paymentId\":\"5c4080b1-b5d2-4e91-8de8-%012d\","
           "\"merchantId\":\"3727331a-b533-4c6e-a0f8-48532237307b\","
           "\"amountInMinorUnits\":12500,\"currency\":\"EUR\"}",
           n);
  return buf;
}

/* Event id number n. */
static inline const char* fx_event(int n, char buf[OB_UUID_BUFLEN]) {
  snprintf(buf, OB_UUID_BUFLEN, "0190b6d8-3ae7-7ca2-a653-%012d", n);
  return buf;
}

/* `oncebox enqueue --ndjson` of payments [from, from + n), written to
** DIR/chunk.ndjson, run by the program BIN with the environment words env
** before it ("" for none), its stderr in DIR/enqueue.err. Returns the exit
** code and *accepted from its summary line (-1 when it printed none). */
static inline int fx_cli_enqueue(const char* env, const char* bin,
                                 const char* dir, const char* db, int from,
                                 int n, int* accepted) {
  char chunk[1024], err[1024], line[512], id[OB_UUID_BUFLEN], body[256];
  FILE* fp;
  int code;
  snprintf(chunk, sizeof chunk, "%s/chunk.ndjson", dir);
  snprintf(err, sizeof err, "%s/enqueue.err", dir);
  fp = fopen(chunk, "w");
  assert_non_null(fp);
  for (int i = from; i < from + n; i++)
    fprintf(fp, "{\"id\":\"%s\",\"type\":\"PaymentCaptured\",\"body\":%s}\n",
            fx_event(i, id), fx_payment(i, body));
  fclose(fp);
  code = ts_sh("%s $OB_EMULATOR '%s/oncebox' --db '%s' enqueue --ndjson '%s' "
               "2>'%s'", env, bin, db, chunk, err);
  *accepted = -1;
  fp = fopen(err, "r");
  assert_non_null(fp);
  while (fgets(line, sizeof line, fp))
    if (sscanf(line, "enqueued %d message(s)", accepted) == 1) break;
  fclose(fp);
  return code;
}

/* Run batches until nothing is ready; returns the summed result. */
static inline ob_batch_result_t fx_drain(fixture_t* f) {
  ob_batch_result_t sum, r;
  memset(&sum, 0, sizeof sum);
  for (;;) {
    int rc = ob_run_once(f->e, &r);
    if (rc != 0) fail_msg("ob_run_once: %s: %s", ob_strerror(rc), ob_errmsg(f->e));
    if (r.claimed == 0) break;
    sum.claimed += r.claimed;
    sum.handled += r.handled;
    sum.duplicates += r.duplicates;
    sum.retried += r.retried;
    sum.failed += r.failed;
    sum.waiting += r.waiting;
  }
  return sum;
}

#endif
