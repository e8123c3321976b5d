# A certificate authority of the test's own (openssl), for the TLS servers
# that stand for real ones (tests/integration/tls.sh, pip.sh and the
# [[secrets]] suites through tests/lib/secrets.sh). Sourced; host context.

# ossl ARGS...: openssl, quietly.
ossl() { openssl "$@" >/dev/null 2>&1; }

# make_test_pki DIR CA-NAME SERVER-NAME DNS-NAMES: in DIR (made), a CA
# (ca.pem, ca.key; common name CA-NAME) and a server certificate from it
# (srv.pem, srv.key; common name SERVER-NAME) for DNS-NAMES, a comma list
# such as "DNS:a.test,DNS:b.test". EC P-256, valid two days.
make_test_pki() {
    mkdir -p "$1"
    ossl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=$2" \
        -keyout "$1/ca.key" -out "$1/ca.pem" -addext "basicConstraints=critical,CA:TRUE" \
        -addext "keyUsage=critical,keyCertSign"
    ossl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$3" \
        -keyout "$1/srv.key" -out "$1/srv.csr"
    printf 'subjectAltName=%s\n' "$4" >"$1/ext"
    ossl x509 -req -in "$1/srv.csr" -CA "$1/ca.pem" -CAkey "$1/ca.key" -CAcreateserial -days 2 \
        -extfile "$1/ext" -out "$1/srv.pem"
}
