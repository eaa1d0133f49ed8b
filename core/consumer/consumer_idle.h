/* SPDX-License-Identifier: Apache-2.0 */
/*
** oncebox internal: when an until-idle run may call the SQS consumer done.
**
** A receive that comes back empty does not mean the queue is empty. Messages
** another consumer received and never deleted (a worker that was killed)
** stay invisible until their visibility ends, then come back; messages sent
** with a delay appear later. So after each empty receive of an until-idle
** run the consumer asks the queue for its counts (GetQueueAttributes:
** ApproximateNumberOfMessages, ...NotVisible, ...Delayed) and this rule
** decides:
**
**   DONE     the queue reports nothing visible, in flight or delayed, and
**            no retry of this consumer's own is still hidden;
**   WAIT     something is left that may still come back: keep receiving;
**   STALLED  something is still left after an empty receive that began
**            once the bound had passed.
**
** The bound: the visibility timeout in force plus OB__CONSUMER_IDLE_MARGIN_MS,
** counted from the start of the first empty receive after which the queue
** reported something left (restarted whenever a receive brings a message);
** or the end of this consumer's own latest retry delay plus the margin, when
** that is later. A message a dead consumer held (received or extended before
** that receive began) is visible again within the bound, so it is received
** and handled before the run ends. One still hidden after it is held by a
** live consumer that keeps extending it (or was received with a longer
** visibility, or is delayed longer): the run ends stalled instead of waiting
** for it.
**
** This consumer's own retries are known exactly (it set their visibility):
** while one is hidden the run waits whatever the counts say (SQS's counts
** are approximate and may lag), as it waits for a delayed local queue row.
** Counts that could not be read (GetQueueAttributes refused) count as
** something left: the run waits out the bound, then is stalled.
**
** Times are monotonic milliseconds passed in by the caller; nothing here
** reads a clock.
*/
#ifndef OB_CORE_CONSUMER_IDLE_H
#define OB_CORE_CONSUMER_IDLE_H

#include <stdint.h>

/* Added to the visibility timeout: SQS counts visibility in whole seconds
** and our start of a receive is a little after SQS's. */
#define OB__CONSUMER_IDLE_MARGIN_MS 1000

typedef enum {
  OB__CONSUMER_IDLE_DONE = 0,
  OB__CONSUMER_IDLE_WAIT,
  OB__CONSUMER_IDLE_STALLED
} ob__consumer_idle_verdict_t;

/* The queue's counts after one empty receive. */
typedef struct ob__consumer_counts_s {
  int known;            /* 0: GetQueueAttributes refused or unparsable */
  int64_t visible;      /* ApproximateNumberOfMessages */
  int64_t not_visible;  /* ApproximateNumberOfMessagesNotVisible */
  int64_t delayed;      /* ApproximateNumberOfMessagesDelayed */
} ob__consumer_counts_t;

/* The wait in progress. */
typedef struct ob__consumer_idle_s {
  int64_t since_ms;      /* start of the first empty receive that found
                         ** something left; -1: none since the last
                         ** progress */
  int64_t own_until_ms;  /* this consumer's retries are hidden until; -1:
                         ** none */
} ob__consumer_idle_t;

/* No wait in progress, no own retry. This function can't fail. */
void ob__consumer_idle_init(ob__consumer_idle_t* w);

/* A receive brought messages: the bound starts again at the next empty
** receive that finds something left. This function can't fail. */
void ob__consumer_idle_progress(ob__consumer_idle_t* w);

/* This consumer made one of its messages invisible until until_ms (a retry
** delay): the run waits for it. Keeps the latest. This function can't
** fail. */
void ob__consumer_idle_own_hidden(ob__consumer_idle_t* w, int64_t until_ms);

/*
** The verdict after an empty receive that began at receive_started_ms and
** the counts c read after it, with vt_s the visibility timeout in force
** (>= 0). Starts the bound when this is the first such receive to find
** something left, clears it when nothing is left. c NULL counts as unknown.
** This function can't fail.
*/
ob__consumer_idle_verdict_t ob__consumer_idle_decide(
    ob__consumer_idle_t* w, const ob__consumer_counts_t* c,
    int64_t receive_started_ms, int vt_s);

/* When the wait in progress ends (an empty receive beginning at or after
** it makes the run stalled); -1 when no wait is in progress. This function
** can't fail. */
int64_t ob__consumer_idle_deadline_ms(const ob__consumer_idle_t* w, int vt_s);

/* Messages the counts report left: visible + not visible + delayed (0 when
** unknown). This function can't fail. */
int64_t ob__consumer_counts_left(const ob__consumer_counts_t* c);

#endif
