#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Test PKI for the HTTP client's TLS tests, generated at test time.
# Usage: gen_pki.sh OUTDIR [extra]
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
# With "extra" (the TLS parameter and name tests: http_tls, http_tls_matrix),
# also, all signed by ca and valid now:
#   rsa            RSA 2048 key, SAN sqs.test, localhost (RSA suites)
#   ip             SAN IP:127.0.0.1, IP:::1
#   ip-as-dns      SAN DNS:127.0.0.1, DNS:::1 (IP strings as DNS names)
#   ip-wildcard    SAN DNS:*.0.0.1
#   cn-only        no SAN, CN sqs.test
#   cn-only-ip     no SAN, CN 127.0.0.1
#   wildcard       SAN DNS:*.sqs.test
#   wildcard-tld   SAN DNS:*.test (too broad: never matches)
#   eku-client     SAN sqs.test, extendedKeyUsage clientAuth only
#   big            SAN sqs.test + 900 padding names: a ~22 KB certificate
#   sha1           SAN sqs.test, signed with SHA-1
#   rsa1024        RSA 1024 key, SAN sqs.test
#   self-signed    SAN sqs.test, signed by its own key (no CA at all)
#   dh1024.pem     1024-bit DH parameters, RFC 2409 group 2 (a weak DHE server)
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

[ "${2:-}" = extra ] || exit 0

# name "key-algorithm options" md "extension lines" [subject CN]
leafx() {
  openssl genpkey $2 -out "$1.key" 2>/dev/null
  openssl req -new -key "$1.key" -subj "/CN=${5:-$1 leaf}" -out "$1.csr"
  printf '%b' "$4" >"$1.ext"
  openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial \
    -days 30 -"$3" -extfile "$1.ext" -out "$1.crt" 2>/dev/null
}
ec="-algorithm EC -pkeyopt ec_paramgen_curve:P-256"
srv='basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n'
leafx rsa "-algorithm RSA -pkeyopt rsa_keygen_bits:2048" sha256 \
  "subjectAltName=DNS:sqs.test,DNS:localhost\n$srv"
leafx ip "$ec" sha256 "subjectAltName=IP:127.0.0.1,IP:::1\n$srv"
leafx ip-as-dns "$ec" sha256 "subjectAltName=DNS:127.0.0.1,DNS:::1\n$srv"
leafx ip-wildcard "$ec" sha256 "subjectAltName=DNS:*.0.0.1\n$srv"
leafx cn-only "$ec" sha256 "$srv" sqs.test
leafx cn-only-ip "$ec" sha256 "$srv" 127.0.0.1
leafx wildcard "$ec" sha256 "subjectAltName=DNS:*.sqs.test\n$srv"
leafx wildcard-tld "$ec" sha256 "subjectAltName=DNS:*.test\n$srv"
leafx eku-client "$ec" sha256 \
  'subjectAltName=DNS:sqs.test\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n'
pad=$(i=0; while [ $i -lt 900 ]; do printf ',DNS:n%04d.padding.sqs.test' $i; i=$((i + 1)); done)
leafx big "$ec" sha256 "subjectAltName=DNS:sqs.test$pad\n$srv"
leafx sha1 "$ec" sha1 "subjectAltName=DNS:sqs.test\n$srv"
leafx rsa1024 "-algorithm RSA -pkeyopt rsa_keygen_bits:1024" sha256 \
  "subjectAltName=DNS:sqs.test\n$srv"
newkey self-signed.key
openssl req -x509 -new -key self-signed.key -sha256 -days 30 \
  -subj "/CN=sqs.test" -addext "subjectAltName=DNS:sqs.test" \
  -addext "extendedKeyUsage=serverAuth" -out self-signed.crt
# The 1024-bit MODP group of RFC 2409 (section 6.2), written as PKCS#3:
# generating a safe prime takes seconds, and openssl s_server ignores the
# X9.42 parameters "dhparam -dsaparam" makes (it then uses 2048 bits).
cat >dh1024.cnf <<'END'
asn1=SEQUENCE:dh
[dh]
p=INTEGER:0xFFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74020BBEA63B139B22514A08798E3404DDEF9519B3CD3A431B302B0A6DF25F14374FE1356D6D51C245E485B576625E7EC6F44C42E9A637ED6B0BFF5CB6F406B7EDEE386BFB5A899FA5AE9F24117C4B1FE649286651ECE65381FFFFFFFFFFFFFFFF
g=INTEGER:2
END
openssl asn1parse -genconf dh1024.cnf -out dh1024.der -noout
openssl dhparam -inform DER -in dh1024.der -out dh1024.pem 2>/dev/null
