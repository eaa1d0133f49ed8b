/* SPDX-License-Identifier: Apache-2.0 */
/*
** oncebox's command-line program as a library entry point: an embedder's
** own `main` gets every command of `oncebox` (init, enqueue, run, failed,
** outbox, stats, check, gc, demo, effects, sqs) with its own handlers
** registered on each engine the commands open.
**
**   static int reg(ob_engine_t* e, void* arg) {
**     (void)arg;
**     return ob_register(e, "OrderPlaced", "orders-v1", on_order, NULL);
**   }
**   int main(int argc, char** argv) {
**     return ob_cli_main(argc, argv, reg, NULL);
**   }
**
** The shipped `oncebox` is that main with a register_fn that registers the
** modules of modules/ registered; an embedder that wants them too
** registers them in its own register_fn (their headers say how).
*/
#ifndef ONCEBOX_CLI_H
#define ONCEBOX_CLI_H

#include "oncebox.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Run the oncebox command line on argc/argv (argv[0] the program, then
** the global options, a command and its arguments, as `oncebox --help`
** describes) and return the process exit code (0 ok, 1 failed, 2 usage,
** 3 partial, 4 database unusable or missing, 5 stalled, 6 full; see
** --help). Prints to stdout and stderr, reads ONCEBOX_* variables, may
** replace closed descriptors 0-2 with /dev/null and marks the process not
** dumpable (unless ONCEBOX_ALLOW_CORE_DUMPS=1), as `oncebox` does: call it
** once, from main.
**
** register_fn (NULL: none) runs on every engine a command opens on the
** --db database, right after ob_open and before any handling, with arg;
** it registers handlers and modules (ob_register, a module's register
** function).
** A negative return is reported ("oncebox: " and ob_strerror) and the
** command exits 1 without touching the database further. `demo` runs on
** scratch databases of its own and does not call it. */
OB_EXTERN int ob_cli_main(int argc, char** argv,
                          int (*register_fn)(ob_engine_t* e, void* arg),
                          void* arg);

#ifdef __cplusplus
}
#endif

#endif
