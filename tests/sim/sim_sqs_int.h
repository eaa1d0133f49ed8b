/* SPDX-License-Identifier: Apache-2.0 */
/*
** The simulated SQS's state, shared by its two files: sim_sqs.c (the
** service, queues, the producer's side) and sim_sqs_receive.c (the
** consumer's side). Times are the world's true time (the servers' clock).
*/
#ifndef OB_TESTS_SIM_SQS_INT_H
#define OB_TESTS_SIM_SQS_INT_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "tests/sim/sim.h"

#define SQS_MAX_VISIBILITY_S 43200  /* 12 h */
#define SQS_FIFO_DEDUP_MS (5 * 60000)

typedef struct sqs_msg_s {
  uint64_t uid;             /* this copy's: receipt handles name it */
  char id[48];              /* MessageId (copies share it) */
  char* body;
  char* attrs;              /* MessageAttributes as sent (JSON), or NULL */
  char md5_body[33], md5_attrs[33];
  char group[129], dedup[129];
  char seq[24];             /* FIFO SequenceNumber, "" on a standard queue */
  int64_t sent_ms;
  int64_t visible_at;       /* hidden until (delay, visibility) */
  int64_t first_receive_ms; /* 0: never received */
  int64_t receive_ms;       /* the latest receive */
  int receive_count;
  int in_flight;            /* received and hidden by that receive */
  char receipt[96];         /* the latest receive's handle, "" none */
} sqs_msg_t;

typedef struct sqs_dedup_s {
  char id[129];
  char msg_id[48];
  char seq[24];
  int64_t at;
} sqs_dedup_t;

typedef struct sqs_queue_s {
  char name[96];
  int fifo, content_dedup, visibility_s;
  sqs_msg_t** m;            /* not deleted, in send order */
  size_t n, cap;
  sqs_dedup_t* dd;          /* FIFO: ids sent in the last 5 minutes */
  size_t ndd, ddcap;
} sqs_queue_t;

typedef struct sent_s {
  char* body;
  char queue[96];
  char group[129];
} sent_t;

struct sim_sqs_s {
  sqs_queue_t q[4];
  size_t nq;
  sent_t* sent;             /* every message the terminal sent, in order */
  size_t nsent, sentcap;
  int64_t send_calls;
  uint64_t next_uid, next_seq;
  unsigned dup_pm, ghost_pm;
  void (*on_delete)(void*, const char*, const char*);
  void* on_delete_arg;
  void (*on_receive)(void*, size_t);
  void* on_receive_arg;
  sim_sqs_stats_t st;
  sim_rng_t rng;
};

/* sim_sqs.c */
sqs_queue_t* sim_sqs__queue_of(sim_sqs_t* q, const cJSON* req);
int sim_sqs__answer(sim_http_res_t* res, int status, cJSON* doc);
int sim_sqs__error(sim_http_res_t* res, int status, const char* code,
                   const char* msg);
/* A batch request's Entries, checked as SQS does for every *Batch action
** (1 to 10 entries, each with an Id, the Ids distinct); else NULL, the
** error answered in res and *rc sim_sqs__error's result. */
const cJSON* sim_sqs__batch_entries(const cJSON* req, sim_http_res_t* res,
                                    int* rc);
/* Append a copy (its own uid and visibility) of m, or a new message. */
sqs_msg_t* sim_sqs__append(sim_sqs_t* s, sqs_queue_t* q, const sqs_msg_t* m);
void sim_sqs__msg_free(sqs_msg_t* m);

/* sim_sqs_receive.c: the operations of the consumer's side, by name; 1
** when op is not one of them. */
int sim_sqs__consumer_op(sim_sqs_t* s, const char* op, const cJSON* req,
                         int64_t held_ms, sim_http_res_t* res);
/* GetQueueAttributes. */
int sim_sqs__attributes(sim_sqs_t* s, const cJSON* req, sim_http_res_t* res);

#endif
