/* SPDX-License-Identifier: Apache-2.0 */
/* The smallest embedder of liboncebox: open a database in a temporary
** directory, register a handler, enqueue one message, ob_run_once, check the
** handler ran. Built by tests/packaging/test_packaging.sh against an
** installed oncebox (pkg-config, find_package) and from source
** (add_subdirectory, FetchContent). Uses only the public header. */
#include <oncebox.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int handled;

static int on_hello(ob_tx_t* tx, const ob_message_t* msg, void* arg) {
  (void)tx;
  (void)arg;
  if (msg->body_len == 5 && memcmp(msg->body, "hello", 5) == 0) handled++;
  return OB_DONE;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s DIR (an existing, writable directory)\n",
            argv[0]);
    return 2;
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/consumer.db", argv[1]);

  ob_options_t o;
  ob_options_init(&o);
  o.db_path = path;
  ob_engine_t* e = NULL;
  char err[256];
  int rc = ob_open(&e, &o, err, sizeof err);
  if (rc != 0) {
    fprintf(stderr, "ob_open: %s: %s\n", ob_err_name(rc), err);
    return 1;
  }
  rc = ob_register(e, "Hello", "consumer", on_hello, NULL);
  if (rc != 0) {
    fprintf(stderr, "ob_register: %s\n", ob_strerror(rc));
    return 1;
  }
  ob_envelope_t env;
  memset(&env, 0, sizeof env);
  env.id = "6f1c1a52-8f3e-4d3a-9a7b-2b8d6f0c9e11";
  env.type = "Hello";
  env.body = "hello";
  env.body_len = 5;
  rc = ob_enqueue(e, &env);
  if (rc != 0) {
    fprintf(stderr, "ob_enqueue: %s: %s\n", ob_strerror(rc), ob_errmsg(e));
    return 1;
  }
  ob_batch_result_t res;
  rc = ob_run_once(e, &res);
  if (rc < 0) {
    fprintf(stderr, "ob_run_once: %s: %s\n", ob_strerror(rc), ob_errmsg(e));
    return 1;
  }
  ob_close(e);
  if (handled != 1 || res.handled != 1) {
    fprintf(stderr, "handled %d (result.handled %d), want 1\n", handled,
            res.handled);
    return 1;
  }
  printf("consumer: oncebox %s handled 1 message\n", ob_version());
  return 0;
}
