/* SPDX-License-Identifier: Apache-2.0 */
/*
** Fuzz target: the AWS shared-file parser (platform/aws/aws_config.c), the
** configuration oncebox reads at start-up.
**
** Input: the credentials file, then (after the first NUL byte, if any) the
** config file. Both are written to files under $TMPDIR (or /dev/shm) and
** found through AWS_SHARED_CREDENTIALS_FILE / AWS_CONFIG_FILE of a private
** environment; AWS_PROFILE is "default" or, when the input starts with
** '@', "prod".
**
** Properties, beyond "no crash, no read past the data, no sanitizer
** report":
**   - failure => a negative code, a non-empty message and *cfg zeroed;
**   - success => access key id, secret and region are non-empty;
**   - no error message contains a value from the files: when the marker
**     CANARY (in the dictionary and the seeds) stands only in values, it is
**     never in the message.
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "oncebox.h"
#include "platform/aws/aws_config.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

static char g_cred[256], g_conf[256];

static const char* env(void* ctx, const char* name) {
  const char* profile = ctx;
  if (strcmp(name, "AWS_SHARED_CREDENTIALS_FILE") == 0) return g_cred;
  if (strcmp(name, "AWS_CONFIG_FILE") == 0) return g_conf;
  if (strcmp(name, "AWS_PROFILE") == 0) return profile;
  return NULL;
}

static void fail(const char* what, const char* msg) {
  fprintf(stderr, "fuzz_aws_config: property violated: %s: '%s'\n", what, msg);
  abort();
}

static int write_file(const char* path, const uint8_t* p, size_t n) {
  FILE* f = fopen(path, "wb");
  if (f == NULL) return -1;
  if (n > 0 && fwrite(p, 1, n, f) != n) {
    fclose(f);
    return -1;
  }
  return fclose(f);
}

/* Where the marker "CANARY" stands in one file: in a value (after the
** first '=' of a line) and/or anywhere else (a key, a section, a comment).
** Bit 1: in a value, bit 2: elsewhere. */
static int canary_places(const uint8_t* p, size_t n) {
  static const char m[] = "CANARY";
  int where = 0;
  size_t i = 0;
  while (i < n) {
    size_t end = i, eq;
    while (end < n && p[end] != '\n') end++;
    for (eq = i; eq < end && p[eq] != '='; eq++) {}
    for (size_t k = i; k + sizeof m - 1 <= end; k++)
      if (memcmp(p + k, m, sizeof m - 1) == 0) where |= k > eq ? 1 : 2;
    i = end + 1;
  }
  return where;
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const uint8_t* nul = memchr(data, '\0', size);
  size_t n1 = nul ? (size_t)(nul - data) : size;
  const uint8_t* conf = nul ? nul + 1 : data + size;
  size_t n2 = nul ? size - n1 - 1 : 0;
  ob__aws_config_t cfg, zero;
  char err[512];
  int rc;

  if (g_cred[0] == '\0') {
    const char* dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(g_cred, sizeof g_cred, "%s/ob-fuzz-aws-%d-credentials", dir,
             (int)getpid());
    snprintf(g_conf, sizeof g_conf, "%s/ob-fuzz-aws-%d-config", dir,
             (int)getpid());
  }
  if (write_file(g_cred, data, n1) != 0 || write_file(g_conf, conf, n2) != 0)
    return 0;
  memset(&zero, 0, sizeof zero);
  err[0] = '\0';
  rc = ob__aws_config_load(&cfg, env,
                          (void*)(size > 0 && data[0] == '@' ? "prod"
                                                              : "default"),
                          NULL, err, sizeof err);
  if (rc < 0) {
    int where = canary_places(data, n1) | canary_places(conf, n2);
    if (err[0] == '\0') fail("failure without a message", err);
    if (memcmp(&cfg, &zero, sizeof cfg) != 0) fail("cfg not zeroed", err);
    /* A marker that stands only in values must never reach the message;
    ** one that is also a key or a section name may be named. */
    if (where == 1 && strstr(err, "CANARY") != NULL)
      fail("a value in the error message", err);
  } else {
    if (rc != 0) fail("positive return", err);
    if (!cfg.access_key_id || !cfg.access_key_id[0] ||
        !cfg.secret_access_key || !cfg.secret_access_key[0] || !cfg.region ||
        !cfg.region[0])
      fail("success without credentials or region", "");
    ob__aws_config_free(&cfg);
  }
  unlink(g_cred);
  unlink(g_conf);
  return 0;
}
