/* SPDX-License-Identifier: Apache-2.0 */
/*
** The money defect with the real binary and a real clock shift:
** an order charged by the provider, the reply lost (the provider dies
** right after charging), oncebox stopped; then both clocks move on: the
** simulator's (`ps_advance`: with `--profile stripe` it prunes keys that
** are at least 24 h old, Stripe's published rule) and the terminal's
** (`faketime`). Before issue 14, `oncebox run` 25 hours later repeated the
** call with the pruned key and the provider charged again. Now:
**   - 25 h later: nothing is called; the effect is parked as key-expired,
**     `stats` and `effects show` say so; the order stays charged once;
**   - 20 h later (inside the window): the call is repeated with the same
**     key and confirmed with the first charge.
** Skips without node/openssl/faketime, and where faketime cannot preload
** (a sanitizer build).
*/
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/integration/engine_fixture.h"
#include "tests/integration/fence/provider_sim_util.h"
#include "tests/integration/http/http_test_util.h"

static struct {
  const char* skip;
  char* dir;
  char* pki;
  char* ca;
  char oncebox[1024];
  char* faketime; /* the libfaketime to preload (ts_faketime_lib) */
  int seq;
} g;

static long long db_int(const char* db, const char* sql) {
  long long v = -1;
  assert_int_equal(ps_db_int(db, sql, &v), 0);
  return v;
}

/* One terminal and one provider: returns the charge id the provider made,
** after `hours` of both clocks. */
static void run_case(int hours, int want_parked) {
  char dir[1024], db[1100], state[1100], url[64], env[2048], out[1100];
  ps_sim_t* sim;
  long long v;
  int rc;

  snprintf(dir, sizeof dir, "%s/case-%d", g.dir, ++g.seq);
  assert_int_equal(mkdir(dir, 0700), 0);
  snprintf(db, sizeof db, "%s/pos.db", dir);
  snprintf(state, sizeof state, "%s/provider.json", dir);
  snprintf(out, sizeof out, "%s/out", dir);
  sim = ps_start_profile(g.pki, state, 0, "stripe", 0, NULL);
  assert_non_null(sim);
  snprintf(url, sizeof url, "https://localhost:%d", ps_port(sim));
  snprintf(env, sizeof env,
           "env -u ONCEBOX_DB -u ONCEBOX_PROVIDER_AUTHORIZATION "
           "ONCEBOX_PROVIDER_URL='%s' AWS_CA_BUNDLE='%s'", url, g.ca);

  assert_int_equal(ts_sh("$OB_EMULATOR '%s' --db '%s' enqueue --type ChargeOrder --id "
                      "0190b6d8-3ae7-7ca2-a653-000000000001 --body "
                      "'{\"orderId\":\"order-1\",\"amountInMinorUnits\":1999,"
                      "\"currency\":\"EUR\"}' >/dev/null", g.oncebox, db),
                   0);
  /* Charged, then the provider dies before answering: the reply is lost,
  ** and every retry of this run finds it gone (nothing sent). */
  assert_int_equal(ps_mode(sim, "die_after_charge", 1, 0, 0), 0);
  rc = ts_sh("%s $OB_EMULATOR '%s' --db '%s' --log-level error run --until-idle >'%s' 2>&1",
          env, g.oncebox, db, out);
  assert_int_equal(rc, 5);  /* stalled: the provider is offline */
  assert_int_equal(db_int(db, "SELECT count(*) FROM effect WHERE state IN"
                              " ('pending','unknown')"), 1);

  /* The terminal is off for `hours`; the provider comes back and lives on
  ** (its charge and the key are in its state file). */
  assert_int_equal(ps_restart(sim), 0);
  assert_int_equal(ps_charges(sim, "order-1"), 1);
  v = ps_advance(sim, (long long)hours * 3600 * 1000);
  assert_true(v >= 0);
  assert_int_equal((int)v, hours >= 24 ? 1 : 0);  /* the key pruned */
  rc = ts_sh("%s LD_PRELOAD='%s' FAKETIME='+%dh' $OB_EMULATOR '%s' --db '%s' "
          "--log-level info run --until-idle >'%s' 2>&1", env, g.faketime,
          hours, g.oncebox, db, out);
  assert_true(rc == 0 || rc == 5);
  /* Never charged twice. */
  assert_int_equal(ps_charges(sim, "order-1"), 1);
  if (want_parked) {
    assert_int_equal(db_int(db, "SELECT count(*) FROM effect WHERE state ="
                                " 'unknown' AND parked_at IS NOT NULL AND"
                                " park_cause = 'key-expired'"), 1);
    assert_int_equal(db_int(db, "SELECT count(*) FROM charge"), 0);
    assert_int_equal(ts_sh("grep -q 'may have expired' '%s'", out), 0);
    assert_int_equal(ts_sh("$OB_EMULATOR '%s' --db '%s' stats >'%s' 2>&1 && grep -q "
                        "\"of which 1 past the provider's key retention\" "
                        "'%s'", g.oncebox, db, out, out), 0);
    assert_int_equal(ts_sh("$OB_EMULATOR '%s' --db '%s' effects show >'%s' 2>&1 && grep -q "
                        "'\\[key-expired\\]' '%s'", g.oncebox, db, out, out),
                     0);
  } else {
    assert_int_equal(db_int(db, "SELECT count(*) FROM effect WHERE state ="
                                " 'confirmed' AND successes = 1"), 1);
    assert_int_equal(db_int(db, "SELECT count(*) FROM charge c JOIN effect e"
                                " ON e.key = c.effect_key WHERE"
                                " c.provider_charge_id = e.reference"), 1);
  }
  assert_int_equal(ts_sh("$OB_EMULATOR '%s' --db '%s' check >/dev/null 2>&1", g.oncebox, db),
                   0);
  ps_stop(sim);
}

static void test_after_the_retention_nothing_is_repeated(void** state) {
  (void)state;
  if (g.skip) {
    print_message("%s\n", g.skip);
    skip();
  }
  run_case(25, 1);
}

static void test_inside_the_window_the_key_is_repeated(void** state) {
  (void)state;
  if (g.skip) {
    print_message("%s\n", g.skip);
    skip();
  }
  run_case(20, 0);
}

static int group_setup(void** state) {
  const char* bin = getenv("OB_BINARY_DIR");
  (void)state;
  g.dir = ts_mkdtemp("fence-retention");
  snprintf(g.oncebox, sizeof g.oncebox, "%s/oncebox", bin ? bin : ".");
  g.skip = ps_skip_reason();
  if (g.skip == NULL && (g.faketime = ts_faketime_lib()) == NULL)
    g.skip = TS_NO_FAKETIME;
  if (g.skip != NULL) return 0;
  g.pki = ts_path(g.dir, "pki");
  g.ca = ts_path(g.pki, "ca.crt");
  return ht_gen_pki(g.pki) == 0 ? 0 : -1;
}

static int group_teardown(void** state) {
  (void)state;
  free(g.ca);
  free(g.pki);
  if (g.dir != NULL && getenv("OB_KEEP") == NULL) ts_rmdir(g.dir);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_after_the_retention_nothing_is_repeated),
      cmocka_unit_test(test_inside_the_window_the_key_is_repeated),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
