/* SPDX-License-Identifier: Apache-2.0 */
#include "tests/integration/fence/provider_sim_util.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <sqlite3.h>

#include "tests/integration/http/http_test_util.h"

#define PS_MAX_FLAGS 16
#define PS_ACK_TIMEOUT_MS 5000
#define PS_START_TIMEOUT_MS 15000

struct ps_sim_s {
  ht_proc_t* proc;  /* NULL after ps_kill until ps_restart */
  char* script;
  char* cert;
  char* key;
  char* state;
  char* flags;      /* copy of the caller's flags, or NULL */
  int port;
  int seq;          /* last command seq sent */
  int gen;          /* starts so far; output of start n in state.out.<n-1> */
  char* history;    /* output of the previous starts, concatenated */
};

static char* xstrdup(const char* s) {
  char* d = strdup(s);
  if (d == NULL) abort();
  return d;
}

static char* xprintf2(const char* a, const char* b) {
  size_t n = strlen(a) + strlen(b) + 1;
  char* d = malloc(n);
  if (d == NULL) abort();
  snprintf(d, n, "%s%s", a, b);
  return d;
}

static int file_exists(const char* p) {
  struct stat st;
  return stat(p, &st) == 0;
}

static char* script_path(void) {
  const char* src = getenv("OB_SOURCE_DIR");
  char buf[4096];
  if (src != NULL) {
    snprintf(buf, sizeof buf, "%s/tests/integration/fence/provider_sim.mjs",
             src);
    return xstrdup(buf);
  }
  /* Outside ctest: the script next to this file (CMake compiles sources by
  ** absolute path). */
  snprintf(buf, sizeof buf, "%s", __FILE__);
  {
    char* slash = strrchr(buf, '/');
    if (slash == NULL) return xstrdup("provider_sim.mjs");
    snprintf(slash + 1, sizeof buf - (size_t)(slash + 1 - buf), "%s",
             "provider_sim.mjs");
  }
  return xstrdup(buf);
}

int ps_node_available(void) {
  FILE* v;
  int major = 0;
  if (system("node --version >/dev/null 2>&1") != 0) return 0;
  v = popen("node -p \"process.versions.node.split('.')[0]\" 2>/dev/null",
            "r");
  if (v == NULL) return 0;
  if (fscanf(v, "%d", &major) != 1) major = 0;
  pclose(v);
  return major >= 18;
}

int ps_alive(const ps_sim_t* s) {
  siginfo_t si;
  if (s == NULL || s->proc == NULL || s->proc->pid <= 0) return 0;
  memset(&si, 0, sizeof si);
  /* WNOWAIT: look without reaping; ht_stop reaps (and untracks) it. */
  if (waitid(P_PID, (id_t)s->proc->pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0)
    return 0;
  return si.si_pid == 0;
}

/* Output of the running (or last) start. */
static char* current_output(const ps_sim_t* s) {
  return s->proc != NULL ? ht_output(s->proc) : xstrdup("");
}

char* ps_output(const ps_sim_t* s) {
  char* cur;
  char* all;
  if (s == NULL) return xstrdup("");
  cur = current_output(s);
  all = xprintf2(s->history ? s->history : "", cur);
  free(cur);
  return all;
}

static int count_prefix(const char* text, const char* prefix) {
  size_t plen = strlen(prefix);
  int n = 0;
  for (const char* line = text; line != NULL && *line != '\0';) {
    const char* nl = strchr(line, '\n');
    if (strncmp(line, prefix, plen) == 0) n++;
    line = nl ? nl + 1 : NULL;
  }
  return n;
}

static void dump_output(const ps_sim_t* s, const char* why) {
  char* out = ps_output(s);
  fprintf(stderr, "provider_sim: %s; its output:\n%s\n", why, out);
  free(out);
}

/* Split flags in place into argv words: blanks separate, and '...' is one
** literal word part (as in sh, no escapes), so a value with a space can be
** passed: "--require-auth 'Bearer sk_test_1'". Returns the number of words,
** or -1 (an unterminated quote, more than max words). */
static int split_flags(char* flags, const char** words, int max) {
  int n = 0;
  char* r = flags;
  while (*r != '\0') {
    char* w;
    while (*r == ' ' || *r == '\t') r++;
    if (*r == '\0') break;
    if (n >= max) return -1;
    w = r;           /* the word is compacted in place from here */
    words[n++] = w;
    {
      char* out = w;
      while (*r != '\0' && *r != ' ' && *r != '\t') {
        if (*r == '\'') {
          char* end = strchr(r + 1, '\'');
          if (end == NULL) return -1;
          memmove(out, r + 1, (size_t)(end - r - 1));
          out += end - r - 1;
          r = end + 1;
        } else {
          *out++ = *r++;
        }
      }
      if (*r != '\0') r++;  /* past the blank that ended the word */
      *out = '\0';
    }
  }
  return n;
}

static int spawn(ps_sim_t* s) {
  char port[16];
  char suffix[32];
  char* out;
  char* flags = s->flags ? xstrdup(s->flags) : NULL;
  const char* argv[10 + PS_MAX_FLAGS + 1];
  int argc = 0;

  snprintf(port, sizeof port, "%d", s->port);
  argv[argc++] = "node";
  argv[argc++] = s->script;
  argv[argc++] = "--cert";
  argv[argc++] = s->cert;
  argv[argc++] = "--key";
  argv[argc++] = s->key;
  argv[argc++] = "--state";
  argv[argc++] = s->state;
  argv[argc++] = "--port";
  argv[argc++] = port;
  if (flags != NULL) {
    int n = split_flags(flags, argv + argc, PS_MAX_FLAGS);
    if (n < 0) {
      fprintf(stderr, "provider_sim: too many flags, or an unterminated "
              "quote\n");
      free(flags);
      return -1;
    }
    argc += n;
  }
  argv[argc] = NULL;

  snprintf(suffix, sizeof suffix, ".out.%d", s->gen);
  out = xprintf2(s->state, suffix);
  /* A file left by an earlier ps_start on the same state path would be read
  ** before the child truncates it (an old PORT line). */
  if (unlink(out) != 0 && errno != ENOENT)
    fprintf(stderr, "provider_sim: unlink %s: %s\n", out, strerror(errno));
  s->gen++;
  s->proc = ht_spawn(argv, out);
  free(out);
  free(flags);
  if (s->proc == NULL) {
    fprintf(stderr, "provider_sim: spawn failed: %s\n", strerror(errno));
    return -1;
  }
  {
    int p = ht_wait_number(s->proc, "PORT ", PS_START_TIMEOUT_MS);
    if (p <= 0 || (s->port != 0 && p != s->port)) {
      dump_output(s, "did not start");
      return -1;
    }
    s->port = p;
  }
  return 0;
}

ps_sim_t* ps_start(const char* pki_dir, const char* state_path, int port,
                   const char* flags) {
  ps_sim_t* s;
  if (pki_dir == NULL || state_path == NULL || port < 0 || port > 65535)
    return NULL;
  s = calloc(1, sizeof *s);
  if (s == NULL) return NULL;
  s->script = script_path();
  s->cert = xprintf2(pki_dir, "/good.crt");
  s->key = xprintf2(pki_dir, "/good.key");
  s->state = xstrdup(state_path);
  s->flags = flags ? xstrdup(flags) : NULL;
  s->port = port;
  if (!file_exists(s->script)) {
    fprintf(stderr, "provider_sim: %s not found\n", s->script);
    ps_stop(s);
    return NULL;
  }
  if (spawn(s) != 0) {
    ps_stop(s);
    return NULL;
  }
  return s;
}

ps_sim_t* ps_start_profile(const char* pki_dir, const char* state_path,
                           int port, const char* profile,
                           long long key_retention_ms, const char* flags) {
  char head[128] = "";
  char* all;
  ps_sim_t* s;
  size_t n;
  if (profile != NULL &&
      (profile[0] == '\0' || strspn(profile, "abcdefghijklmnopqrstuvwxyz") !=
                                 strlen(profile) || strlen(profile) > 32)) {
    fprintf(stderr, "provider_sim: bad profile name\n");
    return NULL;
  }
  if (profile != NULL)
    snprintf(head, sizeof head, "--profile %s", profile);
  if (key_retention_ms > 0) {
    size_t used = strlen(head);
    snprintf(head + used, sizeof head - used, "%s--key-retention-ms %lld",
             used ? " " : "", key_retention_ms);
  }
  n = strlen(head) + (flags ? strlen(flags) : 0) + 2;
  all = malloc(n);
  if (all == NULL) abort();
  snprintf(all, n, "%s%s%s", head, head[0] && flags ? " " : "",
           flags ? flags : "");
  s = ps_start(pki_dir, state_path, port, all[0] ? all : NULL);
  free(all);
  return s;
}

int ps_port(const ps_sim_t* s) { return s ? s->port : -1; }

/* Keep the output of the start being stopped, then stop (reap) it. */
static void retire(ps_sim_t* s) {
  char* cur;
  char* all;
  if (s->proc == NULL) return;
  cur = ht_output(s->proc);
  all = xprintf2(s->history ? s->history : "", cur);
  free(cur);
  free(s->history);
  s->history = all;
  ht_stop(s->proc);
  s->proc = NULL;
}

void ps_kill(ps_sim_t* s) {
  if (s == NULL || s->proc == NULL) return;
  if (s->proc->pid > 0) kill(s->proc->pid, SIGKILL);
  retire(s);  /* ht_stop reaps it: SIGTERM to a zombie is harmless */
}

int ps_restart(ps_sim_t* s) {
  if (s == NULL) return -1;
  ps_kill(s);
  return spawn(s);
}

void ps_stop(ps_sim_t* s) {
  if (s == NULL) return;
  if (s->proc != NULL) ht_stop(s->proc);
  free(s->script);
  free(s->cert);
  free(s->key);
  free(s->state);
  free(s->flags);
  free(s->history);
  free(s);
}

/* write() all of buf to the simulator's stdin. SIGPIPE (a simulator that
** died) is ignored for the duration, so it can't kill the test. */
static int write_all(int fd, const char* buf, size_t n) {
  struct sigaction ign, old;
  int rc = 0;
  memset(&ign, 0, sizeof ign);
  ign.sa_handler = SIG_IGN;
  sigemptyset(&ign.sa_mask);
  sigaction(SIGPIPE, &ign, &old);
  while (n > 0) {
    ssize_t w = write(fd, buf, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      rc = -1;
      break;
    }
    buf += w;
    n -= (size_t)w;
  }
  sigaction(SIGPIPE, &old, NULL);
  return rc;
}

/* The JSON after "ACK <seq> " in out (malloc'd), or NULL. */
static char* find_ack(const char* out, int seq) {
  char prefix[32];
  size_t plen;
  int len = snprintf(prefix, sizeof prefix, "ACK %d ", seq);
  plen = (size_t)len;
  for (const char* line = out; line != NULL && *line != '\0';) {
    const char* nl = strchr(line, '\n');
    if (nl == NULL) break;  /* a line still being written */
    if (strncmp(line, prefix, plen) == 0) {
      size_t n = (size_t)(nl - line) - plen;
      char* json = malloc(n + 1);
      if (json == NULL) abort();
      memcpy(json, line + plen, n);
      json[n] = '\0';
      return json;
    }
    line = nl + 1;
  }
  return NULL;
}

char* ps_command(ps_sim_t* s, const char* cmd_json) {
  const char* body;
  char* line;
  size_t n;
  int seq;
  uint64_t end;

  if (s == NULL || cmd_json == NULL || !ps_alive(s)) return NULL;
  body = strchr(cmd_json, '{');
  if (body == NULL) return NULL;
  body++;
  while (*body == ' ') body++;
  seq = ++s->seq;
  n = strlen(body) + 64;
  line = malloc(n);
  if (line == NULL) abort();
  /* {"seq":N, + the rest; {"seq":N} when the command was {} */
  snprintf(line, n, "{\"seq\":%d%s%s\n", seq, *body == '}' ? "" : ",", body);
  if (strchr(line, '\n') != line + strlen(line) - 1) {  /* one line only */
    free(line);
    return NULL;
  }
  if (write_all(s->proc->stdin_fd, line, strlen(line)) != 0) {
    free(line);
    dump_output(s, "command not delivered");
    return NULL;
  }
  free(line);
  end = ht_now_ms() + PS_ACK_TIMEOUT_MS;
  for (;;) {
    int alive = ps_alive(s);
    char* out = ht_output(s->proc);
    char* ack = find_ack(out, seq);
    free(out);
    if (ack != NULL) return ack;
    if (!alive || ht_now_ms() > end) {
      char why[64];
      snprintf(why, sizeof why, "no ACK %d (%s)", seq,
               alive ? "timeout" : "exited");
      dump_output(s, why);
      return NULL;
    }
    usleep(5 * 1000);
  }
}

static int ack_ok(char* ack) {
  cJSON* j;
  int ok;
  if (ack == NULL) return -1;
  j = cJSON_Parse(ack);
  ok = j != NULL && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "ok"));
  if (!ok) fprintf(stderr, "provider_sim: command refused: %s\n", ack);
  cJSON_Delete(j);
  free(ack);
  return ok ? 0 : -1;
}

int ps_mode(ps_sim_t* s, const char* mode, int count, int delay_ms,
            int charge_first) {
  char cmd[512];
  if (mode == NULL || strpbrk(mode, "\"\\\n") != NULL) return -1;
  snprintf(cmd, sizeof cmd,
           "{\"cmd\":\"mode\",\"mode\":\"%s\",\"count\":%d,\"delay_ms\":%d,"
           "\"charge_first\":%s}",
           mode, count, delay_ms, charge_first ? "true" : "false");
  return ack_ok(ps_command(s, cmd));
}

static int get_long(const cJSON* j, const char* name, long* out) {
  const cJSON* v = cJSON_GetObjectItemCaseSensitive(j, name);
  if (!cJSON_IsNumber(v)) return -1;
  *out = (long)v->valuedouble;
  return 0;
}

int ps_stats(ps_sim_t* s, ps_stats_t* out) {
  char* ack = ps_command(s, "{\"cmd\":\"stats\"}");
  cJSON* j;
  int rc = -1;
  if (ack == NULL || out == NULL) {
    free(ack);
    return -1;
  }
  j = cJSON_Parse(ack);
  if (j != NULL &&
      get_long(j, "charges_total", &out->charges_total) == 0 &&
      get_long(j, "orders_charged", &out->orders_charged) == 0 &&
      get_long(j, "max_charges_per_order", &out->max_charges_per_order) == 0 &&
      get_long(j, "requests", &out->requests) == 0 &&
      get_long(j, "posts", &out->posts) == 0 &&
      get_long(j, "replays", &out->replays) == 0 &&
      get_long(j, "lookups", &out->lookups) == 0 &&
      get_long(j, "held", &out->held) == 0 &&
      get_long(j, "unauthorized", &out->unauthorized) == 0 &&
      get_long(j, "keys", &out->keys) == 0 &&
      get_long(j, "pruned", &out->pruned) == 0)
    rc = 0;
  if (rc != 0) fprintf(stderr, "provider_sim: bad stats ACK: %s\n", ack);
  cJSON_Delete(j);
  free(ack);
  return rc;
}

int ps_charges(ps_sim_t* s, const char* order_id) {
  cJSON* cmd;
  cJSON* j;
  char* text;
  char* ack;
  long n = -1;
  if (order_id == NULL) return -1;
  cmd = cJSON_CreateObject();
  if (cmd == NULL) abort();
  cJSON_AddStringToObject(cmd, "cmd", "charges");
  cJSON_AddStringToObject(cmd, "order_id", order_id);  /* escapes for us */
  text = cJSON_PrintUnformatted(cmd);
  cJSON_Delete(cmd);
  if (text == NULL) abort();
  ack = ps_command(s, text);
  free(text);
  if (ack == NULL) return -1;
  j = cJSON_Parse(ack);
  if (j == NULL || get_long(j, "count", &n) != 0) {
    fprintf(stderr, "provider_sim: bad charges ACK: %s\n", ack);
    n = -1;
  }
  cJSON_Delete(j);
  free(ack);
  return (int)n;
}

static int get_ll(const cJSON* j, const char* name, long long* out) {
  const cJSON* v = cJSON_GetObjectItemCaseSensitive(j, name);
  if (!cJSON_IsNumber(v)) return -1;
  *out = (long long)v->valuedouble;  /* safe integers: exact in a double */
  return 0;
}

int ps_advance(ps_sim_t* s, long long ms) {
  char cmd[96];
  char* ack;
  cJSON* j;
  long long pruned = -1;
  if (ms < 0) return -1;
  snprintf(cmd, sizeof cmd, "{\"cmd\":\"advance\",\"ms\":%lld}", ms);
  ack = ps_command(s, cmd);
  if (ack == NULL) return -1;
  j = cJSON_Parse(ack);
  if (j == NULL || !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "ok")) ||
      get_ll(j, "pruned", &pruned) != 0) {
    fprintf(stderr, "provider_sim: advance refused: %s\n", ack);
    pruned = -1;
  }
  cJSON_Delete(j);
  free(ack);
  return (int)pruned;
}

int ps_clock(ps_sim_t* s, long long* now_ms, long long* offset_ms) {
  char* ack = ps_command(s, "{\"cmd\":\"clock\"}");
  cJSON* j;
  long long now = -1, off = -1;
  int rc = -1;
  if (ack == NULL) return -1;
  j = cJSON_Parse(ack);
  if (j != NULL && get_ll(j, "now_ms", &now) == 0 &&
      get_ll(j, "offset_ms", &off) == 0)
    rc = 0;
  else
    fprintf(stderr, "provider_sim: bad clock ACK: %s\n", ack);
  if (rc == 0 && now_ms != NULL) *now_ms = now;
  if (rc == 0 && offset_ms != NULL) *offset_ms = off;
  cJSON_Delete(j);
  free(ack);
  return rc;
}

int ps_key_status(ps_sim_t* s, const char* key) {
  cJSON* cmd;
  cJSON* j;
  char* text;
  char* ack;
  long n = -1;
  if (key == NULL) return -1;
  cmd = cJSON_CreateObject();
  if (cmd == NULL) abort();
  cJSON_AddStringToObject(cmd, "cmd", "key");
  cJSON_AddStringToObject(cmd, "key", key);
  text = cJSON_PrintUnformatted(cmd);
  cJSON_Delete(cmd);
  if (text == NULL) abort();
  ack = ps_command(s, text);
  free(text);
  if (ack == NULL) return -1;
  j = cJSON_Parse(ack);
  if (j != NULL && cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(j, "found")))
    n = 0;
  else if (j == NULL ||
           !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "found")) ||
           get_long(j, "status", &n) != 0) {
    fprintf(stderr, "provider_sim: bad key ACK: %s\n", ack);
    n = -1;
  }
  cJSON_Delete(j);
  free(ack);
  return (int)n;
}

int ps_wait_lines(ps_sim_t* s, const char* prefix, int n, int timeout_ms) {
  uint64_t end;
  if (s == NULL || prefix == NULL) return -1;
  end = ht_now_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);
  for (;;) {
    int alive = ps_alive(s);  /* before reading: no line can follow death */
    char* out = ps_output(s);
    int c = count_prefix(out, prefix);
    free(out);
    if (c >= n) return c;
    if (!alive || ht_now_ms() >= end) return -1;
    usleep(5 * 1000);
  }
}

static int tool_missing(const char* tool) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", tool);
  return system(cmd) != 0;
}

const char* ps_skip_reason(void) {
  if (!ps_node_available())
    return "skipped: node not found (install Node.js >= 18)";
  if (tool_missing("openssl") || tool_missing("faketime"))
    return "skipped: openssl or faketime not found (gen_pki.sh needs both)";
  if (!ht_localhost_is_127())
    return "skipped: localhost does not resolve to 127.0.0.1 only";
  return NULL;
}

int ps_db_int(const char* db_path, const char* sql, long long* out) {
  sqlite3* db = NULL;
  sqlite3_stmt* st;
  *out = -1;
  if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
    fprintf(stderr, "open %s: %s\n", db_path,
            db ? sqlite3_errmsg(db) : "out of memory");
    sqlite3_close(db);
    return -1;
  }
  sqlite3_busy_timeout(db, 5000);
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
    fprintf(stderr, "prepare %s: %s\n", sql, sqlite3_errmsg(db));
    sqlite3_close(db);
    return -1;
  }
  if (sqlite3_step(st) == SQLITE_ROW) *out = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
  return 0;
}
