/* SPDX-License-Identifier: Apache-2.0 */
/* UUID parsing, formatting and UUIDv7 generation (RFC 9562). Pure: time and
** randomness come from an ob_clock_t. */
#ifndef OB_CORE_UUID_H
#define OB_CORE_UUID_H

#include <stdint.h>
#include "oncebox.h"

#define OB_UUID_STRLEN 36

/* Parse the canonical 8-4-4-4-12 form (hex digits of either case, nothing
** before or after). Returns 0 and fills out, or -1. */
int ob__uuid_parse(const char* s, uint8_t out[16]);

/* Canonical lower-case text of in, NUL-terminated. This function can't fail. */
void ob__uuid_format(const uint8_t in[16], char out[OB_UUID_BUFLEN]);

/* Lower-case canonical copy of a valid UUID text; -1 if s is not one. */
int ob__uuid_normalize(const char* s, char out[OB_UUID_BUFLEN]);

/* State that keeps UUIDv7s from one generator strictly increasing, even
** within one millisecond or when the clock steps back. Zero-initialise. */
typedef struct ob__uuid7_gen_s {
  int64_t last_ms;
  uint64_t last_seq;   /* 42-bit counter: rand_a and the top 30 bits of
                       ** rand_b (RFC 9562 6.2 method 1), see uuid.c */
  uint8_t last[16];    /* the last id made, as bytes */
} ob__uuid7_gen_t;

/* Next UUIDv7 (version 7, variant 10) from clock c, strictly greater
** (bytewise) than every earlier one of this generator. This function can't
** fail. */
void ob__uuid7_next(ob__uuid7_gen_t* g, const ob_clock_t* c, char out[OB_UUID_BUFLEN]);
/* The same with the timestamp given (the engine clock: decision 0019), c
** for the random bits only. */
void ob__uuid7_next_at(ob__uuid7_gen_t* g, const ob_clock_t* c, int64_t now,
                       char out[OB_UUID_BUFLEN]);

#endif
