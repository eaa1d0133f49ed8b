/* SPDX-License-Identifier: Apache-2.0 */
/* oncebox demo --fleet: terminals and a head office (issue 20; the same run
** over SQS and the real program is tests/integration/test_fleet.c).
**
** Terminals, each an engine on its own SQLite file in a temporary
** directory, take payments in rounds (every payment delivered twice, the
** last round's once more), make one payout each, and hand their outbox to
** the head office when online (ob_outbox_drain into the head office's
** queue, standing in for SQS); a third of them are offline in a round and
** keep their events. The head office is --db: a PostgreSQL connection
** string for the fleet's shape (a file works too), where several consumer
** processes book each MerchantPayoutCreated in the embedder's table
** payout_booking (UNIQUE on the payment and on the payout); one is killed
** with SIGKILL mid-run and started again. Then the evidence: one payout per
** payment on every terminal, each booked once at the head office, and the
** invariant check there. */
#define _GNU_SOURCE  /* memmem */
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "programs/oncebox/cli.h"
#include "programs/oncebox/demo.h"

#define MAX_CONSUMERS 8
#define ROUNDS 4

typedef struct fleet_s {
  const char* office;   /* the head office's database */
  char dir[256];        /* the terminals' files */
  int terminals, per_round, consumers;
  int failures;
} fleet_t;

/* The head office's own table (portable SQL: both backends run it). */
static const ob_migration_t booking_schema[] = {
    {"head-office", 1,
     "CREATE TABLE payout_booking(payment_id TEXT PRIMARY KEY,"
     " payout_id TEXT NOT NULL UNIQUE, amount_minor BIGINT NOT NULL)"}};

static void say(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  fflush(stdout);
}

static void expect(fleet_t* f, const char* what, long long want,
                   long long got) {
  say("   %-58s %8lld  %s\n", what, got, want == got ? "ok" : "MISMATCH");
  if (want != got) f->failures++;
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static ob_engine_t* open_db(const char* db, int office) {
  ob_options_t o;
  ob_engine_t* e = NULL;
  char err[512], shown[256];
  ob_options_init(&o);
  o.db_path = db;
  o.batch_size = 16;
  o.log_level = OB_LOG_ERROR;
  o.log_record = ob__cli_log_record;
  if (office) {
    o.migrations = booking_schema;
    o.nmigrations = 1;
  }
  if (ob_open(&e, &o, err, sizeof err) < 0) {
    ob_db_display_name(db, shown, sizeof shown);
    fprintf(stderr, "demo: cannot open %s: %s\n", shown, err);
    return NULL;
  }
  return e;
}

/* ---- the head office's consumers ------------------------------------------ */

/* Text of a JSON string member of body (no escapes in these payloads). */
static int member(const char* body, size_t n, const char* key, char* out,
                  size_t outsz) {
  char pat[64];
  const char* p;
  const char* q;
  snprintf(pat, sizeof pat, "\"%s\":", key);
  p = memmem(body, n, pat, strlen(pat));
  if (p == NULL) return -1;
  p += strlen(pat);
  if (*p == '"') {
    q = memchr(p + 1, '"', (size_t)(body + n - p - 1));
    if (q == NULL || (size_t)(q - p - 1) >= outsz) return -1;
    memcpy(out, p + 1, (size_t)(q - p - 1));
    out[q - p - 1] = '\0';
    return 0;
  }
  q = p;
  while (q < body + n && *q >= '0' && *q <= '9') q++;
  if (q == p || (size_t)(q - p) >= outsz) return -1;
  memcpy(out, p, (size_t)(q - p));
  out[q - p] = '\0';
  return 0;
}

static int book(ob_tx_t* tx, const ob_message_t* m, void* arg) {
  char pay[64], payout[64], amount[24];
  int rc;
  (void)arg;
  if (member(m->body, m->body_len, "paymentId", pay, sizeof pay) != 0 ||
      member(m->body, m->body_len, "payoutId", payout, sizeof payout) != 0 ||
      member(m->body, m->body_len, "amountInMinorUnits", amount,
             sizeof amount) != 0)
    return OB_EINVAL;
  {
    ob_value_t v[3] = {OB_VTEXT(pay), OB_VTEXT(payout),
                       OB_VINT(strtoll(amount, NULL, 10))};
    rc = ob_tx_exec(tx,
                    "INSERT INTO payout_booking(payment_id, payout_id,"
                    " amount_minor) VALUES (?, ?, ?)",
                    v, 3, NULL, NULL);
  }
  return rc < 0 ? rc : OB_DONE;
}

static volatile sig_atomic_t g_stop;
static void on_term(int sig) {
  (void)sig;
  g_stop = 1;
}

/* A consumer is a process of its own; the parent holds no database
** connection across fork(). */
static pid_t start_consumer(const fleet_t* f) {
  pid_t pid;
  fflush(NULL);
  pid = fork();
  if (pid == 0) {
    ob_engine_t* e;
    signal(SIGTERM, on_term);
    e = open_db(f->office, 1);
    if (e == NULL) _exit(EXIT_DB);
    if (ob_register(e, OB_PAYOUT_EVENT_TYPE, "book-payout-v1", book, NULL) < 0)
      _exit(EXIT_FAIL);
    while (!g_stop) {
      ob_batch_result_t r;
      int rc = ob_run_once(e, &r);
      if (rc < 0 && rc != OB_EBUSY) {
        fprintf(stderr, "demo: consumer: %s\n", ob_errmsg(e));
        _exit(EXIT_FAIL);
      }
      if (rc == 0 && r.claimed == 0) sleep_ms(20);
    }
    ob_close(e);
    _exit(EXIT_OK);
  }
  return pid;
}

static void stop_consumers(const pid_t* cons, int n) {
  for (int i = 0; i < n; i++) {
    int status;
    kill(cons[i], SIGTERM);
    waitpid(cons[i], &status, 0);
  }
}

/* ---- the terminals ---------------------------------------------------------- */

static void payment_ids(int t, int k, char id[OB_UUID_BUFLEN],
                        char pay[OB_UUID_BUFLEN]) {
  /* t < 1000 and k < 40000 (the options' bounds): 12 hex-safe digits. */
  unsigned tt = (unsigned)t % 1000000u, kk = (unsigned)k % 1000000u;
  snprintf(id, OB_UUID_BUFLEN, "0190b6d8-3ae7-7ca2-a653-%06u%06u", tt, kk);
  snprintf(pay, OB_UUID_BUFLEN, "5c4080b1-b5d2-4e91-8de8-%06u%06u", tt, kk);
}

/* One round at terminal t: its payments (twice, the last round's again),
** handled; handed to office (the head office's engine) when online. The
** events handed over, or < 0. */
static long long terminal_round(fleet_t* f, int t, int round, int online,
                                ob_engine_t* office) {
  char path[320];
  ob_engine_t* e;
  ob_batch_result_t r;
  size_t published = 0;
  long long sent = 0;
  int rc = 0;
  snprintf(path, sizeof path, "%s/till-%03d.db", f->dir, t);
  e = open_db(path, 0);
  if (e == NULL || ob_register_payout(e) < 0) return -1;
  for (int copy = 0; copy < 2 && rc == 0; copy++)
    for (int k = (round > 0 && copy == 0 ? round - 1 : round) * f->per_round;
         k < (round + 1) * f->per_round && rc == 0; k++) {
      char id[OB_UUID_BUFLEN], pay[OB_UUID_BUFLEN], body[256];
      ob_envelope_t env;
      payment_ids(t, k, id, pay);
      snprintf(body, sizeof body,
               "{\"paymentId\":\"%s\",\"merchantId\":"
               "\"3727331a-b533-4c6e-a0f8-48532237307b\","
               "\"amountInMinorUnits\":%d,\"currency\":\"EUR\"}",
               pay, 100 + t * 10 + k);
      memset(&env, 0, sizeof env);
      env.type = OB_PAYOUT_MESSAGE_TYPE;
      env.id = id;
      env.body = body;
      env.body_len = strlen(body);
      rc = ob_enqueue(e, &env);
    }
  while (rc == 0 && (rc = ob_run_once(e, &r)) == 0 && r.claimed > 0) {
  }
  if (rc == 0 && online) {
    while ((rc = ob_outbox_drain(e, ob_sink_enqueue, office, 100,
                                 &published)) == 0 &&
           published > 0)
      sent += (long long)published;
  }
  if (rc < 0) fprintf(stderr, "demo: terminal %d: %s\n", t, ob_errmsg(e));
  ob_close(e);
  return rc < 0 ? -1 : sent;
}

/* One integer from the embedder's own tables (ob_read). */
typedef struct count_s {
  const char* sql;
  long long v;
} count_t;

static int count_row(void* arg, const ob_value_t* cols, size_t n) {
  count_t* c = arg;
  if (n > 0 && cols[0].type == OB_TYPE_INT) c->v = cols[0].i;
  else if (n > 0 && cols[0].type == OB_TYPE_TEXT && cols[0].p != NULL)
    c->v = strtoll(cols[0].p, NULL, 10);
  return 0;
}

static int count_fn(ob_tx_t* tx, void* arg) {
  count_t* c = arg;
  return ob_tx_exec(tx, c->sql, NULL, 0, count_row, c) < 0 ? -1 : 0;
}

static long long count_of(ob_engine_t* e, const char* sql) {
  count_t c = {sql, -1};
  return ob_read(e, count_fn, &c) == 0 ? c.v : -1;
}

/* The terminals' files (and a temporary head office's), then the folder. */
static void remove_db(const char* path) {
  static const char* const suffix[] = {"", "-wal", "-shm"};
  char p[400];
  for (int i = 0; i < 3; i++) {
    snprintf(p, sizeof p, "%s%s", path, suffix[i]);
    (void)unlink(p);
  }
}

static void remove_files(const fleet_t* f, const char* tmpfile) {
  for (int t = 0; t < f->terminals; t++) {
    char path[320];
    snprintf(path, sizeof path, "%s/till-%03d.db", f->dir, t);
    remove_db(path);
  }
  if (tmpfile[0]) remove_db(tmpfile);
  if (rmdir(f->dir) != 0) fprintf(stderr, "demo: could not remove %s\n", f->dir);
}

static void fleet_usage(FILE* out) {
  fprintf(out,
          "usage: oncebox --db HEADOFFICE demo --fleet [--terminals N]\n"
          "                [--payments N] [--consumers K] [--keep]\n\n"
          "Terminals and a head office: N terminals (default 20), each on its\n"
          "own SQLite file, take --payments payments a round (default 4) for\n"
          "4 rounds, every one delivered twice, and hand their events to the\n"
          "head office when online (a third are offline each round). The\n"
          "head office is --db, a fresh database: a PostgreSQL connection\n"
          "string (postgresql://... or key=value) for the fleet's shape, or\n"
          "a file. K consumer processes (default 3) book each payout there;\n"
          "one is killed with SIGKILL mid-run and started again. Exit 0 only\n"
          "if every payment is paid once and booked once.\n");
}

int ob__cli_demo_fleet(cli_t* cli, int argc, char** argv) {
  static const struct option opts[] = {
      {"fleet", no_argument, NULL, 'f'},
      {"db", required_argument, NULL, 'd'},
      {"terminals", required_argument, NULL, 't'},
      {"payments", required_argument, NULL, 'p'},
      {"consumers", required_argument, NULL, 'c'},
      {"keep", no_argument, NULL, 'k'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  fleet_t f;
  pid_t cons[MAX_CONSUMERS];
  ob_engine_t* office;
  long long v, total, booked = 0, sent = 0;
  int c, keep = 0, status;
  char tmpfile[320] = "";

  memset(&f, 0, sizeof f);
  f.terminals = 20;
  f.per_round = 4;
  f.consumers = 3;
  f.office = cli->db_path;
  optind = 1;
  while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (c) {
      case 'f': break;
      case 'd': f.office = optarg; break;
      case 't':
      case 'p':
      case 'c':
        v = ob__cli_parse_count(optarg);
        if (v < 1 || v > (c == 'c' ? MAX_CONSUMERS : c == 't' ? 1000 : 10000)) {
          fprintf(stderr, "oncebox demo --fleet: --%s is out of range\n",
                  c == 't' ? "terminals" : c == 'p' ? "payments" : "consumers");
          return EXIT_USAGE;
        }
        *(c == 't' ? &f.terminals : c == 'p' ? &f.per_round : &f.consumers) =
            (int)v;
        break;
      case 'k': keep = 1; break;
      case 'h': fleet_usage(stdout); return EXIT_OK;
      default: fleet_usage(stderr); return EXIT_USAGE;
    }
  }
  {
    const char* base = getenv("TMPDIR");
    snprintf(f.dir, sizeof f.dir, "%s/oncebox-fleet-XXXXXX",
             base && *base ? base : "/tmp");
    if (mkdtemp(f.dir) == NULL) {
      perror("mkdtemp");
      return EXIT_FAIL;
    }
  }
  if (f.office == NULL) {
    snprintf(tmpfile, sizeof tmpfile, "%s/head-office.db", f.dir);
    f.office = tmpfile;
  }
  total = (long long)f.terminals * ROUNDS * f.per_round;

  say("oncebox demo --fleet: %d terminals, %d consumers at the head office\n",
      f.terminals, f.consumers);
  {
    char shown[256];
    ob_db_display_name(f.office, shown, sizeof shown);
    say("head office: %s%s\nterminals:   %s/till-*.db\n\n", shown,
        tmpfile[0] ? " (a file: give --db postgresql://... for PostgreSQL)"
                   : "",
        f.dir);
  }
  office = open_db(f.office, 1);
  if (office == NULL) return EXIT_DB;
  if (count_of(office, "SELECT count(*) FROM payout_booking") != 0) {
    fprintf(stderr, "oncebox demo --fleet: the head office's database has "
                    "bookings already; the demo wants a fresh one\n");
    ob_close(office);
    return EXIT_USAGE;
  }
  ob_close(office);

  for (int i = 0; i < f.consumers; i++) cons[i] = start_consumer(&f);
  for (int round = 0; round < ROUNDS; round++) {
    int offline = 0;
    /* The terminals' way in, for the round (closed before any fork). */
    office = open_db(f.office, 1);
    if (office == NULL) {
      stop_consumers(cons, f.consumers);
      return EXIT_DB;
    }
    for (int t = 0; t < f.terminals; t++) {
      int online = round == ROUNDS - 1 || (t + round) % 3 != 0;
      long long n = terminal_round(&f, t, round, online, office);
      if (n < 0) {
        f.failures++;
        break;
      }
      sent += n;
      offline += !online;
    }
    ob_close(office);
    say("round %d: %d payments at each terminal (each delivered twice), "
        "%d terminal(s) offline; %lld events handed over so far\n",
        round + 1, f.per_round, offline, sent);
    if (round == 1 && f.consumers > 1) {
      kill(cons[1], SIGKILL);
      waitpid(cons[1], &status, 0);
      say("         consumer 2 killed with SIGKILL%s, started again\n",
          WIFSIGNALED(status) ? "" : " (it had ended already)");
      cons[1] = start_consumer(&f);
    }
  }
  office = open_db(f.office, 1);
  if (office == NULL) {
    stop_consumers(cons, f.consumers);
    return EXIT_DB;
  }
  for (int w = 0; w < 600 && booked < total; w++) {
    booked = count_of(office, "SELECT count(*) FROM payout_booking");
    if (booked < total) sleep_ms(100);
  }
  stop_consumers(cons, f.consumers);

  say("\nThe evidence\n");
  {
    long long payouts = 0, unpublished = 0;
    for (int t = 0; t < f.terminals; t++) {
      char path[320];
      ob_engine_t* e;
      ob_stats_t st;
      snprintf(path, sizeof path, "%s/till-%03d.db", f.dir, t);
      e = open_db(path, 0);
      if (e == NULL || ob_stats(e, &st) < 0) {
        f.failures++;
        ob_close(e);
        continue;
      }
      {
        ob_payout_stats_t ps;
        if (ob_register_payout(e) < 0 || ob_payout_stats(e, &ps) < 0)
          f.failures++;
        else
          payouts += ps.payouts;
      }
      unpublished += st.outbox_unpublished;
      if (ob_check(e, NULL, NULL) != 0) f.failures++;
      ob_close(e);
    }
    expect(&f, "payouts made at the terminals (one per payment)", total,
           payouts);
    expect(&f, "events handed to the head office", total, sent);
    expect(&f, "events still held at a terminal", 0, unpublished);
  }
  expect(&f, "payments booked at the head office", total, booked);
  expect(&f, "payments booked twice", 0,
         count_of(office, "SELECT count(*) - count(DISTINCT payment_id)"
                          " FROM payout_booking"));
  {
    ob_stats_t st;
    expect(&f, "messages in the head office's failure store", 0,
           ob_stats(office, &st) < 0 ? -1 : st.failed);
  }
  expect(&f, "invariant violations at the head office (oncebox check)", 0,
         ob_check(office, NULL, NULL));
  ob_close(office);
  if (!keep) {
    remove_files(&f, tmpfile);
  } else {
    say("\nkept: %s\n", f.dir);
  }
  say("\n%s\n", f.failures == 0 ? "every expectation holds"
                                : "SOME EXPECTATIONS FAILED");
  return f.failures == 0 ? EXIT_OK : EXIT_FAIL;
}
