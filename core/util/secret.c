/* SPDX-License-Identifier: Apache-2.0 */
#include "core/util/secret.h"

#include <stdlib.h>
#include <string.h>

#include <mbedtls/platform_util.h>

void ob__free_secret(char* s) {
  if (s == NULL) return;
  mbedtls_platform_zeroize(s, strlen(s));
  free(s);
}
