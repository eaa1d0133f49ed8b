/* SPDX-License-Identifier: Apache-2.0 */
/*
** Fuzz target: the RFC 3986 URI-reference check (core/util/uri_ref.c) that
** CloudEvents sources go through.
**
** Input: the text.
**
** Properties, beyond "no crash, no read past n, no sanitizer report":
**   - 0 with reason "", or -1 with a non-empty reason naming a byte offset
**     inside the text;
**   - the verdict is the same with no reason buffer and with a tiny one;
**   - the verdict agrees with an independent oracle: RFC 3986's ABNF for
**     URI-reference (Appendix A) written out as one POSIX extended regular
**     expression, matched by the C library (texts holding a NUL byte, which
**     regexec cannot see, are refused by both by construction).
*/
#include <regex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/uri_ref.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

/* RFC 3986 Appendix A, rule by rule. */
#define PCT "%[0-9A-Fa-f]{2}"
#define PCHAR "([A-Za-z0-9._~!$&'()*+,;=:@-]|" PCT ")"
#define SEG PCHAR "*"
#define SEGNZ PCHAR "+"
#define SEGNZNC "([A-Za-z0-9._~!$&'()*+,;=@-]|" PCT ")+"
#define QF "([A-Za-z0-9._~!$&'()*+,;=:@/?-]|" PCT ")*"
#define USERINFO "([A-Za-z0-9._~!$&'()*+,;=:-]|" PCT ")*"
#define REGNAME "([A-Za-z0-9._~!$&'()*+,;=-]|" PCT ")*"
#define DEC "(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9][0-9]|[0-9])"
#define IPV4 DEC "\\." DEC "\\." DEC "\\." DEC
#define H16 "[0-9A-Fa-f]{1,4}"
#define LS32 "(" H16 ":" H16 "|" IPV4 ")"
#define IPV6                                          \
  "((" H16 ":){6}" LS32                               \
  "|::(" H16 ":){5}" LS32                             \
  "|(" H16 ")?::(" H16 ":){4}" LS32                   \
  "|((" H16 ":){0,1}" H16 ")?::(" H16 ":){3}" LS32    \
  "|((" H16 ":){0,2}" H16 ")?::(" H16 ":){2}" LS32    \
  "|((" H16 ":){0,3}" H16 ")?::" H16 ":" LS32         \
  "|((" H16 ":){0,4}" H16 ")?::" LS32                 \
  "|((" H16 ":){0,5}" H16 ")?::" H16                  \
  "|((" H16 ":){0,6}" H16 ")?::)"
#define IPVFUTURE "[vV][0-9A-Fa-f]+\\.[A-Za-z0-9._~!$&'()*+,;=:-]+"
#define HOST "(\\[(" IPV6 "|" IPVFUTURE ")\\]|" REGNAME ")"
#define AUTHORITY "(" USERINFO "@)?" HOST "(:[0-9]*)?"
#define PATH_ABEMPTY "(/" SEG ")*"
#define PATH_ABSOLUTE "/(" SEGNZ "(/" SEG ")*)?"
#define TAIL "(\\?" QF ")?(#" QF ")?"
#define URI                                                          \
  "[A-Za-z][A-Za-z0-9+.-]*:(//" AUTHORITY PATH_ABEMPTY "|" PATH_ABSOLUTE \
  "|" SEGNZ "(/" SEG ")*)?" TAIL
#define RELATIVE_REF                                                \
  "(//" AUTHORITY PATH_ABEMPTY "|" PATH_ABSOLUTE "|" SEGNZNC "(/" SEG \
  ")*)?" TAIL

static void fail(const char* what, const uint8_t* s, size_t n) {
  fprintf(stderr, "fuzz_uri_ref: property violated: %s: '%.*s'\n", what,
          (int)(n > 300 ? 300 : n), (const char*)s);
  abort();
}

static int oracle(const char* z) {
  static regex_t re;
  static int ready;
  if (!ready) {
    if (regcomp(&re, "^(" URI "|" RELATIVE_REF ")$", REG_EXTENDED | REG_NOSUB) !=
        0) {
      fprintf(stderr, "fuzz_uri_ref: the oracle does not compile\n");
      abort();
    }
    ready = 1;
  }
  return regexec(&re, z, 0, NULL, 0) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  char* s = malloc(size + 1);
  char reason[512], tiny[8];
  const char* at;
  int rc;
  if (s == NULL) return 0;
  if (size) memcpy(s, data, size);
  rc = ob__uri_reference_check(s, size, reason, sizeof reason);
  if (rc != 0 && rc != -1) fail("return value", data, size);
  if (rc == 0 && reason[0] != '\0') fail("accepted with a reason", data, size);
  if (rc == -1) {
    if (reason[0] == '\0') fail("refused without a reason", data, size);
    at = strstr(reason, "byte ");
    if (at == NULL || strtoul(at + 5, NULL, 10) >= size)
      fail("reason names no byte inside the text", data, size);
  }
  if (ob__uri_reference_check(s, size, NULL, 0) != rc ||
      ob__uri_reference_check(s, size, tiny, sizeof tiny) != rc)
    fail("verdict depends on the reason buffer", data, size);
  s[size] = '\0';
  if (memchr(s, '\0', size) == NULL) {
    if (oracle(s) != (rc == 0)) {
      fprintf(stderr, "fuzz_uri_ref: ours %s (%s), RFC 3986 regex %s\n",
              rc == 0 ? "valid" : "invalid", rc == 0 ? "" : reason,
              rc == 0 ? "invalid" : "valid");
      fail("disagrees with the RFC 3986 grammar", data, size);
    }
  } else if (rc == 0) {
    fail("accepted a NUL byte", data, size);
  }
  free(s);
  return 0;
}
