/* SPDX-License-Identifier: Apache-2.0 */
/* A full disk at the head office (issue 20): oncebox's tables on a
** PostgreSQL tablespace on a small tmpfs, and payments handled until it is
** full. What a real server does then (its WAL is on the main disk, so it
** goes on running): the INSERT that needs a new page fails with SQLSTATE
** 53100, "could not extend file ...: No space left on device", and the
** transaction is rolled back. oncebox must say so (OB_ENOSPC, the server's
** sentence), lose nothing it acknowledged, and carry on once space is
** back, with exactly one payout per payment.
**
** Root only: the tmpfs is mounted in a mount namespace of this process
** (made before the test's server starts, so the server sees it; nothing
** stays mounted on the host, even after a SIGKILL). Skips (77) otherwise,
** and without PostgreSQL support or server programs. */
#define _GNU_SOURCE  /* unshare */
#include <errno.h>
#include <pwd.h>
#include <sched.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/integration/engine_fixture.h"
#include "oncebox_payout.h"

#define TMPFS_SIZE "4m"
#define FILLER_BYTES (256 * 1024)
#define MAX_PAYMENTS 20000

static char g_mnt[64];

/* The tmpfs for the tablespace, owned by the server's user. NULL and why
** when this machine does not allow it. */
static const char* mount_tablespace(char* why, size_t n) {
  const char* user = getenv("OB_PG_USER");
  struct passwd* pw;
  char opts[96];
  if (geteuid() != 0) {
    snprintf(why, n, "not root (mount needs CAP_SYS_ADMIN)");
    return NULL;
  }
  pw = getpwnam(user != NULL && *user != '\0' ? user : "postgres");
  if (pw == NULL) {
    snprintf(why, n, "no `postgres` user (or $OB_PG_USER) to own it");
    return NULL;
  }
  if (unshare(CLONE_NEWNS) != 0) {
    snprintf(why, n, "unshare(CLONE_NEWNS): %s", strerror(errno));
    return NULL;
  }
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
    snprintf(why, n, "mount --make-rprivate /: %s", strerror(errno));
    return NULL;
  }
  snprintf(g_mnt, sizeof g_mnt, "/tmp/oncebox-ts-XXXXXX");
  if (mkdtemp(g_mnt) == NULL || chmod(g_mnt, 0755) != 0) {
    snprintf(why, n, "mkdtemp: %s", strerror(errno));
    return NULL;
  }
  snprintf(opts, sizeof opts, "size=" TMPFS_SIZE ",mode=0700,uid=%d,gid=%d",
           (int)pw->pw_uid, (int)pw->pw_gid);
  if (mount("tmpfs", g_mnt, "tmpfs", MS_NOSUID | MS_NODEV, opts) != 0) {
    snprintf(why, n, "mount -t tmpfs: %s", strerror(errno));
    return NULL;
  }
  return g_mnt;
}

static void first_col(void* arg, int ncols, const char* const* col) {
  (void)ncols;
  snprintf(arg, 64, "%s", col[0] ? col[0] : "");
}

static void write_filler(const char* path) {
  static char zeros[FILLER_BYTES];
  FILE* f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(zeros, 1, sizeof zeros, f), sizeof zeros);
  assert_int_equal(fclose(f), 0);
}

static int enqueue_payment(fixture_t* f, int i) {
  char id[OB_UUID_BUFLEN], body[256];
  ob_envelope_t env;
  memset(&env, 0, sizeof env);
  env.type = OB_PAYOUT_MESSAGE_TYPE;
  env.id = fx_event(i, id);
  env.body = fx_payment(i, body);
  env.body_len = strlen(body);
  return ob_enqueue(f->e, &env);
}

static void test_full_tablespace(void** state) {
  fixture_t* f = calloc(1, sizeof *f);
  char dbname[64], sql[256], filler[128];
  ob_batch_result_t r;
  int acked = 0, rc = 0, failed_at = -1;
  (void)state;

  f->dir = ts_mkdtemp("pg-full");
  f->db_path = ts_backend_db(f->dir, "full");
  ts_backend_rows(f->db_path, "SELECT current_database()", first_col, dbname);
  snprintf(sql, sizeof sql, "CREATE TABLESPACE oncebox_small LOCATION '%s'",
           g_mnt);
  ts_backend_exec(f->db_path, sql);
  /* Every table and index the schema makes (partitions too) goes there. */
  snprintf(sql, sizeof sql,
           "ALTER DATABASE \"%s\" SET default_tablespace = oncebox_small",
           dbname);
  ts_backend_exec(f->db_path, sql);
  snprintf(filler, sizeof filler, "%s/filler", g_mnt);
  write_filler(filler);

  fake_clock_init(&f->clock, FX_T0, 42);
  ob_options_init(&f->opts);
  f->opts.db_path = f->db_path;
  f->opts.clock = &f->clock.clock;
  f->opts.batch_size = 16;
  fx_open(f);
  assert_int_equal(ob_register_payout(f->e), 0);
  assert_true(fx_count(f, "SELECT count(*) FROM pg_tables WHERE tablespace ="
                          " 'oncebox_small'") >= 5);

  /* Payments, each handled as it comes, until the tablespace is full. */
  for (int i = 1; i <= MAX_PAYMENTS; i++) {
    rc = enqueue_payment(f, i);
    if (rc == 0) {
      acked = i;
      rc = ob_run_once(f->e, &r);
    }
    if (rc != 0) {
      failed_at = i;
      break;
    }
  }
  print_message("full after %d payments: %s: %s\n", acked, ob_err_name(rc),
                ob_errmsg(f->e));
  assert_true(failed_at > 0);
  assert_int_equal(rc, OB_ENOSPC);
  assert_non_null(strstr(ob_errmsg(f->e), "No space left on device"));
  /* Nothing acknowledged is lost: each acked payment is queued or paid,
  ** and what is paid has all three rows. */
  assert_int_equal(fx_count(f, "SELECT count(*) FROM queue") +
                       fx_count(f, "SELECT count(*) FROM merchant_payout"),
                   acked);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM processed_message"),
                   fx_count(f, "SELECT count(*) FROM merchant_payout"));
  assert_int_equal(fx_count(f, "SELECT count(*) FROM outbox_event"),
                   fx_count(f, "SELECT count(*) FROM merchant_payout"));
  assert_int_equal(fx_count(f, "SELECT count(*) FROM failed_message"), 0);

  /* Space back: the same engine carries on, the refused payment again. */
  assert_int_equal(unlink(filler), 0);
  for (int i = acked + 1; i <= failed_at + 20; i++)
    assert_int_equal(enqueue_payment(f, i), 0);
  fx_drain(f);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM queue"), 0);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM merchant_payout"),
                   failed_at + 20);
  assert_int_equal(fx_count(f, "SELECT count(DISTINCT source_payment_id)"
                               " FROM merchant_payout"),
                   failed_at + 20);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM outbox_event"),
                   failed_at + 20);
  assert_int_equal(ob_check(f->e, NULL, NULL), 0);
  ob_close(f->e);
  free(f->db_path);
  ts_rmdir(f->dir);
  free(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_full_tablespace),
  };
  char why[256];
  setenv("OB_TEST_BACKEND", "postgresql", 1);
  (void)ts_backend_is_pg();  /* exits 77 without PostgreSQL support */
  /* Before the server starts (the first ts_backend_db): it must see it. */
  if (mount_tablespace(why, sizeof why) == NULL) {
    printf("skipped: a tablespace on a small tmpfs: %s\n", why);
    return 77;
  }
  return cmocka_run_group_tests(tests, NULL, NULL);
}
