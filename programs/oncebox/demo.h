/* SPDX-License-Identifier: Apache-2.0 */
/* The demo's parts (programs/oncebox/demo*.c). */
#ifndef OB_PLATFORM_CLI_DEMO_H
#define OB_PLATFORM_CLI_DEMO_H

#include <stdint.h>

/* Print one expectation line and count a mismatch. */
typedef void (*demo_expect_fn)(void* ctx, const char* what, long long want,
                               long long got);

/* Part two: `orders` ChargeOrder messages behind the fence on db_path, with
** an in-process provider. *failed_rows receives the deliveries of declined
** orders (each is a failure-store row), *handled the orders charged (each
** has a dedup record). Returns 0 or a negative code. */
int ob__cli_demo_fence(const char* db_path, uint64_t seed, int orders,
                       demo_expect_fn expect, void* ctx, int* failed_rows,
                       int* handled);

/* oncebox demo --fleet (demo_fleet.c): terminals on SQLite files and a
** head office (the --db, PostgreSQL or a file) with several consumer
** processes, one SIGKILLed. An exit code (EXIT_OK only if every expectation
** holds). */
struct cli_s;
int ob__cli_demo_fleet(struct cli_s* cli, int argc, char** argv);

#endif
