#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# terminal_links.sh ONCEBOX LIBONCEBOX [PLUGIN]: the terminal's program and
# library, as built, load no head-office code (issue 41): the libraries
# the dynamic loader maps for them (ldd: NEEDED followed through every
# dependency) include none of libpq, OpenSSL's libssl, GnuTLS, Kerberos,
# LDAP or SASL, named by library since Debian's package names differ
# between releases. The PostgreSQL plugin's own list is printed beside it.
# The packages get the same check against the full allowed set
# (linked_libs.sh); this one guards the build tree on every ctest run.
# Exit 77 (skipped) without ldd or for a cross build's binaries.
set -u
forbidden='^(libpq|libssl|libgnutls|libkrb5|libgssapi_krb5|libldap|libldap_r|liblber|libsasl2)[-.0-9]*\.so'
command -v ldd >/dev/null || { echo "SKIP: no ldd"; exit 77; }
fail=0
for bin in "$1" "$2"; do
  libs=$(ldd "$bin" 2>/dev/null) || { echo "SKIP: ldd cannot read $bin (a cross build?)"; exit 77; }
  names=$(printf '%s\n' "$libs" | awk '{print $1}' | sed 's,.*/,,' | sort -u)
  echo "$(basename "$bin"): $(printf '%s' "$names" | tr '\n' ' ')"
  bad=$(printf '%s\n' "$names" | grep -E "$forbidden" || true)
  if [ -n "$bad" ]; then
    echo "FAIL $(basename "$bin") loads head-office libraries: $(printf '%s' "$bad" | tr '\n' ' ')"
    fail=1
  fi
done
if [ -n "${3:-}" ] && [ -f "$3" ]; then
  echo "the PostgreSQL plugin (not the terminal's): $(ldd "$3" | awk '{print $1}' | sed 's,.*/,,' | sort -u | tr '\n' ' ')"
fi
[ "$fail" = 0 ] && echo "OK: no head-office library in the terminal's program or library"
exit "$fail"
