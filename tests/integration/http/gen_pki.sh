#!/bin/sh
# Test PKI for the HTTP client's TLS tests, generated at test time.
# Usage: gen_pki.sh OUTDIR
#
#   ca.crt            trusted test CA (the client's CA bundle in tests)
#   good.{crt,key}    SAN sqs.test, localhost; valid now
#
# The CA and good.crt were issued 2 days ago (under faketime), as a real
# service's were long before: a client whose clock was set back a day (the
# clock tests) still accepts them.
#   wrong.{crt,key}   SAN wrong.test (hostname mismatch)
#   expired.{crt,key} SAN sqs.test; issued under faketime 400 days ago, 30 days
#   future.{crt,key}  SAN sqs.test; issued under faketime 400 days ahead
#   untrusted.{crt,key} SAN sqs.test, signed by another CA not in ca.crt
#
# Needs: openssl, faketime (Debian packages openssl, faketime).
set -eu
out=$1
mkdir -p "$out"
cd "$out"

newkey() {
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" \
    2>/dev/null
}

newca() { # name cn [faketime-offset]
  newkey "$1.key"
  if [ -n "${3:-}" ]; then ft="faketime -f $3"; else ft=""; fi
  $ft openssl req -x509 -new -key "$1.key" -sha256 -days 3650 -subj "/CN=$2" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" -out "$1.crt"
}

leaf() { # name san days ca [faketime-offset]
  newkey "$1.key"
  openssl req -new -key "$1.key" -subj "/CN=$1 leaf" -out "$1.csr"
  printf 'subjectAltName=%s\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n' \
    "$2" >"$1.ext"
  if [ -n "${5:-}" ]; then ft="faketime -f $5"; else ft=""; fi
  $ft openssl x509 -req -in "$1.csr" -CA "$4.crt" -CAkey "$4.key" \
    -CAcreateserial -days "$3" -sha256 -extfile "$1.ext" -out "$1.crt" \
    2>/dev/null
}

newca ca "oncebox test CA" -2d
newca other-ca "some other CA"
leaf good "DNS:sqs.test,DNS:localhost" 365 ca -2d
leaf wrong "DNS:wrong.test" 365 ca
leaf expired "DNS:sqs.test,DNS:localhost" 30 ca -400d
leaf future "DNS:sqs.test,DNS:localhost" 365 ca +400d
leaf untrusted "DNS:sqs.test,DNS:localhost" 365 other-ca
: >empty.pem
echo "not a certificate" >garbage.pem
