/* SPDX-License-Identifier: Apache-2.0 */
/* The engine as its loop drivers see it (core/engine/engine_host.h): small
** accessors, so that struct ob_engine_s stays core's. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/engine/engine_int.h"

const ob_clock_t* ob__engine_clock(const ob_engine_t* e) {
  return e->opts.clock;
}

int64_t ob__engine_now(const ob_engine_t* e) {
  return ob__now(e);
}

void ob__engine_new_id(ob_engine_t* e, char out[OB_UUID_BUFLEN]) {
  ob__uuid7_next_at(&e->idgen, e->opts.clock, ob__now(e), out);
}

const char* ob__engine_db_path(const ob_engine_t* e) {
  return e->db_path;
}

int ob__engine_stopping(const ob_engine_t* e) {
  return e->stopping != 0;
}

int ob__engine_in_tx(const ob_engine_t* e) {
  return e->db.in_tx;
}

int ob__engine_seterr(ob_engine_t* e, int code, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ob__db_vseterr(&e->db, code, fmt, ap);
  va_end(ap);
  return code;
}

const ob_options_t* ob__engine_opts(const ob_engine_t* e) {
  return &e->opts;
}

int ob__engine_has_component(const ob_engine_t* e, const char* name) {
  for (size_t i = 0; i < e->ncomponents; i++)
    if (strcmp(e->components[i].name, name) == 0) return 1;
  return 0;
}

size_t ob__engine_ncomponents(const ob_engine_t* e) {
  return e->ncomponents;
}

const ob__component_t* ob__engine_component(const ob_engine_t* e, size_t i) {
  return &e->components[i];
}

void ob__engine_kick_components(ob_engine_t* e, const void* except) {
  for (size_t i = 0; i < e->ncomponents; i++)
    if (e->components[i].kick && e->components[i].self != except)
      e->components[i].kick(e->components[i].self);
}

void ob__engine_set_hooks(ob_engine_t* e, const ob__engine_hooks_t* h) {
  if (h == NULL) {
    memset(&e->hooks, 0, sizeof e->hooks);
    return;
  }
  e->stopping = 0;
  e->hooks = *h;
}

void* ob__engine_runner(const ob_engine_t* e) {
  return e->hooks.runner;
}

void ob__engine_set_run_result(ob_engine_t* e, int rc) {
  e->run_result = rc;
}

int ob__engine_run_result(const ob_engine_t* e) {
  return e->run_result;
}

int ob__engine_data_version(ob_engine_t* e, int64_t* v) {
  return ob__db_data_version(&e->db, v);
}

int ob__engine_next_due_unwaited(ob_engine_t* e, int64_t* at_ms) {
  return ob__queue_next_due_unwaited(&e->db, at_ms);
}

int ob__engine_proxy_noted(ob_engine_t* e) {
  int was = e->proxy_noted;
  e->proxy_noted = 1;
  return was;
}
