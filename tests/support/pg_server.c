/* SPDX-License-Identifier: Apache-2.0 */
#include "tests/support/pg_server.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The database superuser initdb creates (-U), whoever runs the server. */
#define PGS_SUPERUSER "postgres"
/* sizeof(struct sockaddr_un.sun_path) on Linux, with its NUL. */
#define PGS_SUN_PATH 108

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static int is_exec(const char* dir, const char* name) {
  char p[600];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  return access(p, X_OK) == 0;
}

static int has_server_binaries(const char* dir) {
  return is_exec(dir, "initdb") && is_exec(dir, "pg_ctl") &&
         is_exec(dir, "postgres");
}

/* $OB_PG_BINDIR, else `pg_config --bindir`, else Debian's directory of
** PostgreSQL 15. 0 when one of them holds initdb, pg_ctl and postgres. */
static int find_bindir(pg_server_t* s) {
  const char* env = getenv("OB_PG_BINDIR");
  FILE* p;
  char line[512];
  if (env != NULL && *env != '\0') {
    snprintf(s->bindir, sizeof s->bindir, "%s", env);
    return has_server_binaries(s->bindir) ? 0 : -1;
  }
  p = popen("pg_config --bindir 2>/dev/null", "r");
  if (p != NULL) {
    if (fgets(line, sizeof line, p) != NULL) {
      line[strcspn(line, "\r\n")] = '\0';
      snprintf(s->bindir, sizeof s->bindir, "%s", line);
    }
    pclose(p);
    if (s->bindir[0] != '\0' && has_server_binaries(s->bindir)) return 0;
  }
  snprintf(s->bindir, sizeof s->bindir, "/usr/lib/postgresql/15/bin");
  return has_server_binaries(s->bindir) ? 0 : -1;
}

/* In a forked child: become the server's user when we are root. */
static int drop_privileges(const pg_server_t* s) {
  gid_t g;
  if (s->as_uid < 0) return 0;
  g = (gid_t)s->as_gid;
  if (setgroups(1, &g) != 0 || setgid(g) != 0 || setuid((uid_t)s->as_uid) != 0)
    return -1;
  /* Never back. */
  if (setuid(0) == 0) return -1;
  return 0;
}

/* Runs bindir/argv[0] with argv (as the server's user), its output appended
** to dir/harness.log. The exit status (0 is success), or -1. */
static int run_pg(const pg_server_t* s, char* const argv[]) {
  char path[600], log[600];
  pid_t pid;
  int st;
  snprintf(path, sizeof path, "%s/%s", s->bindir, argv[0]);
  snprintf(log, sizeof log, "%s/harness.log", s->dir);
  pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    int fd;
    if (drop_privileges(s) != 0) _exit(126);
    if (chdir(s->dir) != 0) _exit(126);
    fd = open("/dev/null", O_RDONLY);
    if (fd < 0 || dup2(fd, 0) < 0) _exit(126);
    fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0) _exit(126);
    /* The postmaster inherits pg_ctl's descriptors: none of the test's
    ** (above all not the watchdog's pipe, whose EOF means "stop"). */
    closefrom(3);
    setenv("LC_ALL", "C", 1);
    /* argv[0] as the full path: PostgreSQL 17's initdb finds postgres
    ** beside its own argv[0], searching $PATH when it has no slash. */
    {
      size_t n = 0;
      while (argv[n] != NULL) n++;
      char** av = calloc(n + 1, sizeof *av);
      if (av == NULL) _exit(126);
      av[0] = path;
      for (size_t i = 1; i < n; i++) av[i] = argv[i];
      execv(path, av);
    }
    _exit(127);
  }
  while (waitpid(pid, &st, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void print_tail(const char* dir, const char* name) {
  char p[600], buf[4096];
  FILE* f;
  size_t n;
  long sz;
  snprintf(p, sizeof p, "%s/%s", dir, name);
  f = fopen(p, "r");
  if (f == NULL) return;
  fseek(f, 0, SEEK_END);
  sz = ftell(f);
  if (sz > (long)sizeof buf - 1) fseek(f, sz - (long)(sizeof buf - 1), SEEK_SET);
  else fseek(f, 0, SEEK_SET);
  n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  fprintf(stderr, "---- %s (end) ----\n%s---- end of %s ----\n", p, buf, name);
}

pid_t pg_server_pid(const pg_server_t* s) {
  char p[600];
  long pid = 0;
  FILE* f;
  snprintf(p, sizeof p, "%s/postmaster.pid", s->data);
  f = fopen(p, "r");
  if (f == NULL) return 0;
  if (fscanf(f, "%ld", &pid) != 1) pid = 0;
  fclose(f);
  return (pid_t)pid;
}

int pg_pid_alive(pid_t pid) {
  char p[64], buf[512];
  FILE* f;
  char* rp;
  if (pid <= 0) return 0;
  if (kill(pid, 0) != 0 && errno == ESRCH) return 0;
  snprintf(p, sizeof p, "/proc/%ld/stat", (long)pid);
  f = fopen(p, "r");
  if (f == NULL) return 0;
  if (fgets(buf, sizeof buf, f) == NULL) buf[0] = '\0';
  fclose(f);
  rp = strrchr(buf, ')');
  return !(rp != NULL && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X'));
}

int pg_process_with_arg(const char* needle) {
  DIR* d = opendir("/proc");
  struct dirent* e;
  int found = 0;
  pid_t self = getpid();
  if (d == NULL) return 0;
  while (!found && (e = readdir(d)) != NULL) {
    char p[300], buf[8192];
    char* end;
    long pid = strtol(e->d_name, &end, 10);
    FILE* f;
    size_t n;
    if (*end != '\0' || pid <= 0 || pid == (long)self) continue;
    snprintf(p, sizeof p, "/proc/%ld/cmdline", pid);
    f = fopen(p, "r");
    if (f == NULL) continue;
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    for (size_t i = 0; i < n; i++)
      if (buf[i] == '\0') buf[i] = ' ';
    buf[n] = '\0';
    if (strstr(buf, needle) != NULL) found = 1;
  }
  closedir(d);
  return found;
}

static int rm_one(const char* p, const struct stat* st, int flag,
                  struct FTW* ftw) {
  (void)st; (void)flag; (void)ftw;
  return remove(p);
}

/* pg_ctl -w returns once postmaster.pid is gone, which the postmaster
** removes just before it exits: on a loaded machine it is still there a
** moment later (seen with PostgreSQL 17 in CI). 1 when pid ended within
** 10 s. */
static int pid_gone_soon(pid_t pid) {
  for (int i = 0; i < 200 && pg_pid_alive(pid); i++) sleep_ms(50);
  return !pg_pid_alive(pid);
}

/* pg_ctl stop in `mode` (fast, immediate); then, if the postmaster is still
** there, SIGKILL. 0 when it is gone. */
static int stop_server(const pg_server_t* s, const char* mode) {
  pid_t pid = pg_server_pid(s);
  char* fast[] = {"pg_ctl", "-D", (char*)s->data, "-m", (char*)mode, "-w",
                  "-t", "30", "-s", "stop", NULL};
  char* imm[] = {"pg_ctl", "-D", (char*)s->data, "-m", "immediate", "-w",
                 "-t", "30", "-s", "stop", NULL};
  if (pid == 0) return 0;
  if (run_pg(s, fast) == 0 && pid_gone_soon(pid)) return 0;
  if (pg_pid_alive(pid) && run_pg(s, imm) == 0 && pid_gone_soon(pid)) return 0;
  if (pg_pid_alive(pid)) {
    kill(pid, SIGKILL);
    for (int i = 0; i < 100 && pg_pid_alive(pid); i++) sleep_ms(50);
  }
  return pg_pid_alive(pid) ? -1 : 0;
}

/* The watchdog: its own session (a signal to the test's process group,
** SIGKILL of the test by ctest, does not reach it), deaf to the terminal's
** signals. A byte or EOF on fd: stop the server, remove the directory. */
static void watchdog_main(const pg_server_t* s, int fd) {
  char c;
  int rc;
  setsid();
  signal(SIGINT, SIG_IGN);
  signal(SIGTERM, SIG_IGN);
  signal(SIGHUP, SIG_IGN);
  signal(SIGQUIT, SIG_IGN);
  signal(SIGPIPE, SIG_IGN);
  if (dup2(fd, 3) < 0) _exit(1);
  closefrom(4);
  while (read(3, &c, 1) < 0 && errno == EINTR) {
  }
  rc = stop_server(s, "fast");
  if (rc != 0)
    fprintf(stderr, "pg_server: the server in %s did not stop\n", s->dir);
  else if (getenv("OB_KEEP_TMP") == NULL)
    nftw(s->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
  _exit(rc == 0 ? 0 : 1);
}

/* 1 if the server's user can list and write dir (every parent traversable). */
static int usable_by_server_user(const pg_server_t* s) {
  pid_t pid;
  int st;
  if (s->as_uid < 0) return 1;
  pid = fork();
  if (pid < 0) return 0;
  if (pid == 0) {
    if (drop_privileges(s) != 0) _exit(1);
    _exit(access(s->dir, R_OK | W_OK | X_OK) == 0 ? 0 : 1);
  }
  while (waitpid(pid, &st, 0) < 0) {
    if (errno != EINTR) return 0;
  }
  return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* A fresh directory under $TMPDIR, else /tmp: short enough for the socket's
** path, and (as root) chowned to the server's user, who must reach it. */
static int make_dir(pg_server_t* s) {
  const char* tmp = getenv("TMPDIR");
  const char* bases[2] = {tmp != NULL && *tmp != '\0' ? tmp : "/tmp", "/tmp"};
  for (int i = 0; i < 2; i++) {
    char buf[sizeof s->dir];
    if (i == 1 && strcmp(bases[0], "/tmp") == 0) break;
    snprintf(buf, sizeof buf, "%s/oncebox-pg-XXXXXX", bases[i]);
    /* dir/.s.PGSQL.NNNNN must fit a sockaddr_un. */
    if (strlen(buf) + strlen("/.s.PGSQL.65535") >= PGS_SUN_PATH) {
      fprintf(stderr, "pg_server: %s is too long a path for a Unix socket\n",
              bases[i]);
      continue;
    }
    if (mkdtemp(buf) == NULL) {
      fprintf(stderr, "pg_server: mkdtemp under %s: %s\n", bases[i],
              strerror(errno));
      continue;
    }
    snprintf(s->dir, sizeof s->dir, "%s", buf);
    if (s->as_uid >= 0 &&
        chown(s->dir, (uid_t)s->as_uid, (gid_t)s->as_gid) != 0) {
      fprintf(stderr, "pg_server: chown %s: %s\n", s->dir, strerror(errno));
      rmdir(s->dir);
      continue;
    }
    if (!usable_by_server_user(s)) {
      fprintf(stderr,
              "pg_server: user %d cannot reach %s (a parent directory is not "
              "traversable); trying /tmp\n", s->as_uid, s->dir);
      rmdir(s->dir);
      continue;
    }
    return 0;
  }
  s->dir[0] = '\0';
  return -1;
}

/* A value for postgresql.conf: single quotes, ' and \ escaped. */
static void conf_quote(const char* v, char* out, size_t outsz) {
  size_t o = 0;
  if (outsz < 3) return;
  out[o++] = '\'';
  for (; *v != '\0' && o + 4 < outsz; v++) {
    if (*v == '\'' || *v == '\\') out[o++] = *v;
    out[o++] = *v;
  }
  out[o++] = '\'';
  out[o] = '\0';
}

/* A value for a libpq key/value string: single quotes, ' and \ escaped
** with a backslash. */
static void conninfo_quote(const char* v, char* out, size_t outsz) {
  size_t o = 0;
  if (outsz < 3) return;
  out[o++] = '\'';
  for (; *v != '\0' && o + 4 < outsz; v++) {
    if (*v == '\'' || *v == '\\') out[o++] = '\\';
    out[o++] = *v;
  }
  out[o++] = '\'';
  out[o] = '\0';
}

void pg_server_conninfo(const pg_server_t* s, const char* name, char* out,
                        size_t outsz) {
  char host[1100], db[300], user[150];
  conninfo_quote(s->dir, host, sizeof host);
  conninfo_quote(name, db, sizeof db);
  conninfo_quote(s->user, user, sizeof user);
  snprintf(out, outsz, "host=%s port=%d dbname=%s user=%s", host, s->port, db,
           user);
}

/* The settings the tests and benchmarks run with, after initdb's. */
static int write_conf(const pg_server_t* s) {
  char p[600], q[1100];
  FILE* f;
  snprintf(p, sizeof p, "%s/postgresql.conf", s->data);
  f = fopen(p, "a");
  if (f == NULL) return -1;
  conf_quote(s->dir, q, sizeof q);
  fprintf(f,
          "\n# tests/support/pg_server.c: a test's own server\n"
          "listen_addresses = ''\n"
          "unix_socket_directories = %s\n"
          "port = %d\n"
          "max_connections = 40\n"
          "shared_buffers = 16MB\n"
          "fsync = on\n"
          "synchronous_commit = on\n"
          "full_page_writes = on\n"
          "lc_messages = 'C'\n"
          "log_min_messages = warning\n",
          q, s->port);
  return fclose(f) == 0 ? 0 : -1;
}

static int start_server(pg_server_t* s) {
  char log[600], sock[700];
  char* argv[] = {"pg_ctl", "-D", s->data, "-l", log, "-w", "-t", "60",
                  "-s", "start", NULL};
  snprintf(log, sizeof log, "%s/server.log", s->dir);
  if (run_pg(s, argv) != 0) return -1;
  snprintf(sock, sizeof sock, "%s/.s.PGSQL.%d", s->dir, s->port);
  if (access(sock, F_OK) != 0) {
    fprintf(stderr, "pg_server: no socket %s after the start\n", sock);
    return -1;
  }
  return 0;
}

static void die(pg_server_t* s, const char* what) {
  fprintf(stderr, "pg_server: %s failed (directory %s)\n", what, s->dir);
  print_tail(s->dir, "harness.log");
  print_tail(s->dir, "server.log");
  /* The watchdog sees the EOF, stops whatever runs, removes the files. */
  abort();
}

const char* pg_server_start(pg_server_t* s) {
  int fds[2];
  char* initdb[] = {"initdb", "-D", s->data, "-U", PGS_SUPERUSER,
                    "-E", "UTF8", "--locale=C", "--auth-local=trust",
                    "--auth-host=reject", "--no-sync", NULL};
  memset(s, 0, sizeof *s);
  s->as_uid = -1;
  s->as_gid = -1;
  s->watchdog_fd = -1;
  if (find_bindir(s) != 0) {
    const char* env = getenv("OB_PG_BINDIR");
    if (env != NULL && *env != '\0')
      return "skipped: PostgreSQL server programs (initdb, pg_ctl, postgres) "
             "not found in $OB_PG_BINDIR";
    return "skipped: PostgreSQL server programs (initdb, pg_ctl, postgres) "
           "not found in `pg_config --bindir` or /usr/lib/postgresql/15/bin "
           "(apt-get install postgresql: 15 on Debian 12, 17 on Debian 13; "
           "or set OB_PG_BINDIR)";
  }
  if (geteuid() == 0) {
    const char* name = getenv("OB_PG_USER");
    struct passwd* pw = getpwnam(name != NULL && *name != '\0' ? name
                                                               : "postgres");
    if (pw == NULL || pw->pw_uid == 0)
      return "skipped: running as root, and no unprivileged `postgres` user "
             "(or $OB_PG_USER) to run PostgreSQL as (initdb and postgres "
             "refuse root)";
    s->as_uid = (int)pw->pw_uid;
    s->as_gid = (int)pw->pw_gid;
  }
  snprintf(s->user, sizeof s->user, "%s", PGS_SUPERUSER);
  /* The port only names the socket file in a directory of our own; the
  ** pid spreads the SysV key the postmaster derives from it. */
  s->port = 20000 + (int)(getpid() % 40000);
  if (make_dir(s) != 0) {
    fprintf(stderr, "pg_server: no usable temporary directory\n");
    abort();
  }
  snprintf(s->data, sizeof s->data, "%s/data", s->dir);
  pg_server_conninfo(s, "postgres", s->conninfo, sizeof s->conninfo);

  if (pipe(fds) != 0 || fcntl(fds[0], F_SETFD, FD_CLOEXEC) != 0 ||
      fcntl(fds[1], F_SETFD, FD_CLOEXEC) != 0)
    die(s, "pipe");
  s->watchdog = fork();
  if (s->watchdog < 0) die(s, "fork");
  if (s->watchdog == 0) {
    close(fds[1]);
    watchdog_main(s, fds[0]);
  }
  close(fds[0]);
  s->watchdog_fd = fds[1];

  if (run_pg(s, initdb) != 0) die(s, "initdb");
  if (write_conf(s) != 0) die(s, "writing postgresql.conf");
  if (start_server(s) != 0) die(s, "pg_ctl start");
  return NULL;
}

int pg_server_stop(pg_server_t* s) {
  pid_t pid;
  int st = 0, rc = 0;
  if (s->watchdog <= 0) return 0;
  pid = pg_server_pid(s);
  if (write(s->watchdog_fd, "s", 1) != 1) {
    /* EOF does it too. */
  }
  close(s->watchdog_fd);
  s->watchdog_fd = -1;
  while (waitpid(s->watchdog, &st, 0) < 0) {
    if (errno != EINTR) break;
  }
  s->watchdog = 0;
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) rc = -1;
  if (pg_pid_alive(pid)) {
    fprintf(stderr, "pg_server: postmaster %ld still runs\n", (long)pid);
    rc = -1;
  }
  if (pg_process_with_arg(s->dir)) {
    fprintf(stderr, "pg_server: a process still names %s\n", s->dir);
    rc = -1;
  }
  return rc;
}

int pg_server_crash_restart(pg_server_t* s) {
  char* imm[] = {"pg_ctl", "-D", s->data, "-m", "immediate", "-w",
                 "-t", "30", "-s", "stop", NULL};
  pid_t pid = pg_server_pid(s);
  if (run_pg(s, imm) != 0 || !pid_gone_soon(pid)) {
    fprintf(stderr, "pg_server: pg_ctl -m immediate stop failed\n");
    print_tail(s->dir, "harness.log");
    return -1;
  }
  if (start_server(s) != 0) {
    fprintf(stderr, "pg_server: restart after the crash failed\n");
    print_tail(s->dir, "harness.log");
    print_tail(s->dir, "server.log");
    return -1;
  }
  return 0;
}

void pg_conninfo_safe(const char* conninfo, char* out, size_t outsz) {
  char* err = NULL;
  PQconninfoOption* opts = PQconninfoParse(conninfo, &err);
  size_t o = 0;
  if (outsz == 0) return;
  out[0] = '\0';
  if (opts == NULL) {
    PQfreemem(err);
    snprintf(out, outsz, "(unparsable connection string)");
    return;
  }
  for (PQconninfoOption* p = opts; p->keyword != NULL; p++) {
    char q[600];
    int n;
    if (p->val == NULL) continue;
    if (strcmp(p->keyword, "password") == 0) snprintf(q, sizeof q, "***");
    else conninfo_quote(p->val, q, sizeof q);
    n = snprintf(out + o, outsz - o, "%s%s=%s", o > 0 ? " " : "", p->keyword,
                 q);
    if (n < 0 || (size_t)n >= outsz - o) break;
    o += (size_t)n;
  }
  PQconninfoFree(opts);
}

PGconn* pg_connect_or_die(const char* conninfo) {
  PGconn* c = PQconnectdb(conninfo);
  if (c == NULL || PQstatus(c) != CONNECTION_OK) {
    char safe[1500];
    pg_conninfo_safe(conninfo, safe, sizeof safe);
    fprintf(stderr, "pg_server: cannot connect to %s: %s\n", safe,
            c != NULL ? PQerrorMessage(c) : "out of memory");
    abort();
  }
  return c;
}

int pg_server_create_db(pg_server_t* s, const char* name, char* out,
                        size_t outsz) {
  PGconn* c = pg_connect_or_die(s->conninfo);
  char* ident = PQescapeIdentifier(c, name, strlen(name));
  char sql[400];
  PGresult* r;
  int rc = 0;
  if (ident == NULL) {
    PQfinish(c);
    return -1;
  }
  snprintf(sql, sizeof sql, "CREATE DATABASE %s", ident);
  PQfreemem(ident);
  r = PQexec(c, sql);
  if (PQresultStatus(r) != PGRES_COMMAND_OK) {
    fprintf(stderr, "pg_server: CREATE DATABASE: %s", PQerrorMessage(c));
    rc = -1;
  }
  PQclear(r);
  PQfinish(c);
  if (rc == 0) pg_server_conninfo(s, name, out, outsz);
  return rc;
}
