#!/usr/bin/env bash
# Integration: the network allowlist on the docker backend
# (docs/docker-backend.md "Network"), as a user sees it. The container keeps
# --network none; the host's proxy listens on a unix socket bound into it,
# and the agent's forwarder relays 127.0.0.1:3128 to it. Local servers on
# the host's loopback, names from a hosts file the test writes (never DNS).
# The image has no curl: busybox wget, and bash /dev/tcp with hand-written
# CONNECT and SOCKS5. Root only (a private dockerd, tests/lib/docker-backend.sh).
. "$CORDON_SRC/tests/lib/tap.sh"
. "$CORDON_SRC/tests/lib/cordon.sh"
. "$CORDON_SRC/tests/lib/docker-backend.sh"

PY=/usr/bin/python3
here="$CORDON_SRC/tests/integration"
export HOME="$TEST_TMP/home"
export XDG_CONFIG_HOME="$TEST_TMP/xdg"
export XDG_RUNTIME_DIR="$TEST_TMP/run"
mkdir -p "$HOME" "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"
ws=$(new_ws dnet)
audit="$TEST_TMP/audit.jsonl"
hosts="$TEST_TMP/hosts"

port_base=$((20000 + (RANDOM % 20000)))
HTTP=$port_base
ECHO=$((port_base + 1))
OTHER=$((port_base + 2)) # nothing listens here

$PY "$here/net-servers.py" 127.0.0.1 "$HTTP" "$ECHO" hello-from-loopback >/dev/null 2>&1 &
cleanup_pids+=($!)
wait_port 127.0.0.1 "$HTTP" && wait_port 127.0.0.1 "$ECHO" || diag "loopback servers did not start"

cat >"$hosts" <<EOF2
127.0.0.1 web.test www.example.test example.test evil-example.test rebind.test
EOF2
RULES=(--allow-host "*.example.test:$HTTP" --allow-host web.test --allow-host rebind.test
    --allow-host "127.0.0.1:$HTTP" --allow-host "127.0.0.1:$ECHO")
dnet_run() { # dnet_run SCRIPT: allowlist mode on docker with the loopback test rules
    cordon_run "$ws" "${D[@]}" --network allowlist --net-hosts-file "$hosts" \
        --net-audit-log "$audit" "${RULES[@]}" -- bash -c "$1"
}

# Bash helpers inside the container: CONNECT and SOCKS5 by hand (printf's
# \xHH writes the bytes), then a GET through the tunnel.
CLIENTS='
connect_get() { # HOST PORT
    exec 3<>/dev/tcp/127.0.0.1/3128 || return
    printf "CONNECT %s:%s HTTP/1.1\r\nHost: %s:%s\r\n\r\nGET / HTTP/1.0\r\nHost: %s\r\n\r\n" "$1" "$2" "$1" "$2" "$1" >&3
    timeout 10 cat <&3; exec 3<&-
}
socks_get() { # HOST PORT
    exec 3<>/dev/tcp/127.0.0.1/3128 || return
    local hi lo n
    hi=$(printf %02x $(($2 >> 8))); lo=$(printf %02x $(($2 & 255))); n=$(printf %02x ${#1})
    printf "\x05\x01\x00\x05\x01\x00\x03\x$n%s\x$hi\x$lo" "$1" >&3
    printf "GET / HTTP/1.0\r\nHost: %s\r\n\r\n" "$1" >&3
    timeout 10 cat <&3 >/tmp/socks.out; exec 3<&-
    echo "socks-reply=$(od -An -tx1 -N4 /tmp/socks.out | tr -d " ")"
    tr -d "\000" </tmp/socks.out
}
http_get() { # URL-PATH HOST: a plain proxied GET, the whole answer (head and body)
    exec 3<>/dev/tcp/127.0.0.1/3128 || return
    printf "GET %s HTTP/1.0\r\nHost: %s\r\n\r\n" "$1" "$2" >&3
    timeout 10 cat <&3; exec 3<&-
}
'

# ------------------------------------------------------------ the happy path
t0=$(date +%s%N)
dnet_run "$CLIENTS
    echo \"net=\$(ls /sys/class/net | tr '\n' ' ')\"
    echo \"proxy=\$HTTP_PROXY \$HTTPS_PROXY \$ALL_PROXY \$NO_PROXY \$http_proxy \$https_proxy \$all_proxy \$no_proxy\"
    wget -q -O - http://www.example.test:$HTTP/; echo wget=\$?
    connect_get web.test $HTTP
    socks_get web.test $HTTP
    exec 4<>/dev/tcp/127.0.0.1/3128; printf 'CONNECT web.test:$ECHO HTTP/1.1\r\n\r\necho-through-the-tunnel\n' >&4
    timeout 3 cat <&4; echo"
diag "allowlist run on docker: $((($(date +%s%N) - t0) / 1000000)) ms (noisy: 2 shared cores)"
is "allowlist: the run exits 0" "$rc" 0
like "allowlist: the container keeps only lo" "$out" $'net=lo \n'
like "allowlist: proxy variables point at the in-container forwarder" "$out" \
    "proxy=http://127.0.0.1:3128 http://127.0.0.1:3128 socks5h://127.0.0.1:3128 localhost,127.0.0.1 http://127.0.0.1:3128 http://127.0.0.1:3128 socks5h://127.0.0.1:3128 localhost,127.0.0.1"
like "allowlist: busybox wget through HTTP_PROXY reaches the listed subdomain" "$out" $'hello-from-loopback\nwget=0'
is "allowlist: the listed host by HTTP, CONNECT and SOCKS5" "$(grep -c hello-from-loopback <<<"$out")" 3
like "allowlist: SOCKS5 greeting and success reply" "$out" "socks-reply=05000500"
like "allowlist: CONNECT to a raw TCP echo server" "$out" "HTTP/1.1 200 Connection established.*echo-through-the-tunnel"
is "allowlist: no container left" "$(ncontainers)" 0

# ------------------------------------------------------------ refusals
dnet_run "$CLIENTS
    http_get http://example.test:$HTTP/ example.test; echo; echo ---
    http_get http://evil-example.test:$HTTP/ evil-example.test; echo; echo ---
    connect_get www.example.test $ECHO; echo; echo ---
    http_get http://127.0.0.1:$OTHER/ 127.0.0.1; echo; echo ---
    http_get http://rebind.test:$OTHER/ rebind.test; echo; echo ---
    socks_get evil-example.test $HTTP
    wget -q -O - http://evil-example.test:$HTTP/ 2>&1; echo wget=\$?"
is "refusals: five 403 answers" "$(grep -c '^HTTP/1.1 403' <<<"$out")" 5
like "refusals: bare domain names the rule (case 36)" "$out" "no allow_hosts rule matches example.test:$HTTP"
like "refusals: look-alike domain (case 36)" "$out" "no allow_hosts rule matches evil-example.test:$HTTP"
like "refusals: unlisted port names the rule and the port (case 36)" "$out" "allows port $HTTP only, not $ECHO"
like "refusals: IP literal says why (case 36)" "$out" "address literal needs an address or CIDR rule"
like "refusals: a listed name resolving to loopback (rebinding)" "$out" "127.0.0.1 is a loopback address"
like "refusals: SOCKS5 refusal is reply 0x02" "$out" "socks-reply=05000502"
like "refusals: busybox wget sees the 403" "$out" "403 Forbidden"
unlike "refusals: nothing reached the server" "$out" "hello-from-loopback"
aud=$(cat "$audit" 2>/dev/null)
like "audit: the allowed request is logged" "$aud" '"host":"www.example.test".*"decision":"allow"'
like "audit: a refusal is logged with its reason" "$aud" \
    '"host":"evil-example.test".*"decision":"deny".*no allow_hosts rule matches'
like "audit: the session is named" "$aud" '"session":"'

# ------------------------------------------------------------ no way around the proxy (case 37)
dnet_run "env -u HTTP_PROXY -u http_proxy wget -q -O - http://www.example.test:$HTTP/ 2>&1; echo wget=\$?
    nslookup www.example.test 2>&1 | tail -2; echo
    (exec 3<>/dev/tcp/198.51.100.2/80) 2>&1; echo route=\$?
    (exec 3<>/dev/tcp/127.0.0.1/$HTTP) 2>/dev/null; echo devtcp=\$?
    ls -l /run/cordon/proxy.sock; echo x > /run/cordon/proxy.sock 2>&1; rm /run/cordon/proxy.sock 2>&1"
like "unset: no DNS (wget)" "$out" "bad address 'www.example.test"
like "unset: no DNS (nslookup)" "$out" "nslookup: can't connect to remote host .*: Network is unreachable"
like "unset: no route out" "$out" "Network is unreachable"
like "unset: the host's loopback server is not reachable directly" "$out" "devtcp=1"
unlike "unset: nothing reached the server" "$out" "hello-from-loopback"
like "the proxy socket inside is a socket" "$out" "srw-------"
like "the proxy socket cannot be removed (read-only bind)" "$out" "rm: can't remove '/run/cordon/proxy.sock': (Read-only file system|Device or resource busy)"

# ------------------------------------------------------------ the tools
tout=$(cd "$ws" && PWD="$ws" "$CORDON" tool "${D[@]}" --network allowlist --net-hosts-file "$hosts" \
    "${RULES[@]}" bash "{\"command\":\"wget -q -O - http://web.test:$HTTP/; wget -q -O - http://evil-example.test:$HTTP/ 2>&1\"}" 2>&1)
like "tool bash: the forwarder is up for the first call" "$tout" "hello-from-loopback"
like "tool bash: an unlisted host is refused" "$tout" "403 Forbidden"

# ------------------------------------------------------------ cordon verify's network rows
vpub=$((port_base + 4))
vout=$(cd "$ws" && PWD="$ws" "$CORDON" verify "${D[@]}" --set network.mode=allowlist \
    --set 'network.allow_hosts=["web.test"]' --set "network.publish_ports=[\"127.0.0.1:$vpub:8000\"]" 2>&1 </dev/null)
like "verify on docker: network-egress passes in allowlist mode" "$vout" "PASS  network-egress   network.mode = allowlist"
like "verify on docker: the proxy refused the unlisted CONNECTs" "$vout" "proxy CONNECT [0-9.:]+ \(not allowlisted\) -> HTTP/1.1 403"
like "verify on docker: published-ports passes (loopback only)" "$vout" "PASS  published-ports  127.0.0.1:$vpub -> 8000: host listeners: tcp:$vpub on loopback"
like "verify on docker: the forwarder counts as the sandbox's process" "$vout" "PASS  processes"
like "verify on docker: everything passes" "$vout" "result: PASS"

# ------------------------------------------------------------ nothing left behind
sleep 0.5
is "teardown: no container left" "$(ncontainers)" 0
is "teardown: no forwarder left" "$(pgrep -x cordon-forward | wc -l)" 0
is "teardown: no proxy socket left" "$(find "$XDG_RUNTIME_DIR" -name proxy.sock 2>/dev/null | wc -l)" 0
left=$(ps -eo pid,args | grep -F "$hosts" | grep -v grep)
is "teardown: no proxy process left" "$left" ""

# ------------------------------------------------------------ published ports
# A listener inside (busybox httpd on the container's 127.0.0.1:8000) is
# reachable on the host at 127.0.0.1:PUB, and nowhere else.
PUB=$((port_base + 3))
host_addr=$(ip -4 -o route get 1.1.1.1 2>/dev/null | sed -n 's/.* src \([0-9.]*\).*/\1/p')
pub_run() { # pub_run SCRIPT: runs in the background until $ws/done; ready: $ws/ready
    rm -f "$ws/ready" "$ws/done"
    (cd "$ws" && PWD="$ws" "$CORDON" run "${D[@]}" --net-audit-log "$audit" \
        --publish "127.0.0.1:$PUB:8000" -- bash -c "
        mkdir -p /tmp/www && echo published-from-the-container > /tmp/www/index.html
        httpd -f -p 127.0.0.1:8000 -h /tmp/www & sleep 0.3
        $1
        touch $ws/ready; for i in \$(seq 300); do [ -e $ws/done ] && break; sleep 0.1; done" \
        >"$TEST_TMP/pub.out" 2>&1 </dev/null) &
    pub_pid=$!
    cleanup_pids+=("$pub_pid")
    for _ in $(seq 300); do [ -e "$ws/ready" ] && break; sleep 0.1; done
}
pub_run "ls -l /run/cordon/pub/"
got=$(curl -sS -m 10 "http://127.0.0.1:$PUB/" 2>&1)
listen=$(ss -Hltn "sport = :$PUB" 2>/dev/null | awk '{print $4}')
[ -n "$host_addr" ] && other=$(curl -sS -m 5 "http://$host_addr:$PUB/" 2>&1; echo "rc=$?")
touch "$ws/done"
wait "$pub_pid"
is "publish: the container's listener answers on the host at 127.0.0.1:$PUB" "$got" "published-from-the-container"
is "publish: bound to 127.0.0.1 only" "$listen" "127.0.0.1:$PUB"
if [ -n "$host_addr" ]; then
    like "publish: not reachable at the host's other address ($host_addr)" "$other" "rc=7"
else
    skip "publish: the host's other address" "no default route here"
fi
like "publish: the forwarder's socket inside is the user's alone" "$(cat "$TEST_TMP/pub.out")" "srw------- .* 0.sock"
is "publish: the port is closed after the session" "$(ss -Hltn "sport = :$PUB" | wc -l)" 0

# The sandbox can write the directory of the forwarder's sockets: a symlink
# planted there (to a socket of the host's) gets the host nothing.
$PY -c '
import socket, sys
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(4)
while True:
    c, _ = s.accept(); c.sendall(b"HTTP/1.0 200 OK\r\n\r\nhost-secret\n"); c.close()' "$TEST_TMP/host.sock" &
cleanup_pids+=($!)
for _ in $(seq 50); do [ -S "$TEST_TMP/host.sock" ] && break; sleep 0.1; done
pub_run "rm -f /run/cordon/pub/0.sock && ln -s $TEST_TMP/host.sock /run/cordon/pub/0.sock && echo planted"
got=$(curl -sS -m 10 "http://127.0.0.1:$PUB/" 2>&1; echo "rc=$?")
touch "$ws/done"
wait "$pub_pid"
like "publish: the symlink was planted inside" "$(cat "$TEST_TMP/pub.out")" "planted"
unlike "publish: a planted symlink does not lead to the host's socket" "$got" "host-secret"
like "publish: the connection is closed instead" "$got" "rc=(52|56)"
like "publish: the audit log says why" "$(cat "$audit")" '"decision":"deny","reason":"nothing listens in the sandbox'

# ------------------------------------------------------------ host services
# network.host_services: the host's loopback service ($HTTP) is reached in
# the container at the same address and port (the agent's forwarder there,
# then the host's proxy); another port of the host's loopback ($ECHO, which
# listens) stays closed. The proxy's sockets are bound read-only: nothing
# can be planted among them. In deny mode (the default) and in allowlist mode.
HS_GET='hs_get() { # PORT: GET / on the container'"'"'s 127.0.0.1:PORT by hand (no curl here)
    exec 3<>/dev/tcp/127.0.0.1/$1 || return; printf "GET / HTTP/1.0\r\n\r\n" >&3; timeout 10 cat <&3; exec 3<&-
}'
cordon_run "$ws" "${D[@]}" --net-audit-log "$audit" --set "network.host_services=[\"127.0.0.1:$HTTP\"]" \
    -- bash -c "$HS_GET
    hs_get $HTTP; echo hs=\$?
    (exec 3<>/dev/tcp/127.0.0.1/$ECHO) 2>&1; echo other=\$?
    ls -l /run/cordon/hs/
    ln -s /run/cordon/hs/$HTTP.sock /run/cordon/hs/$ECHO.sock 2>&1; echo plant=\$?
    hs_get $HTTP | tail -1"
is "host service: the run exits 0" "$rc" 0
like "host service: the container's 127.0.0.1:$HTTP reaches the host's service" "$out" $'hello-from-loopback\nhs=0'
like "host service: another port of the host's loopback stays closed" "$out" "Connection refused"$'\n'"other=1"
like "host service: the proxy's socket inside is the user's alone" "$out" "srw------- .* $HTTP.sock"
like "host service: nothing can be planted beside it" "$out" "Read-only file system"$'\n'"plant=1"
is "host service: and the service still answers after the attempt" "$(grep -c hello-from-loopback <<<"$out")" 2
like "host service: the connection is in the audit log" "$(cat "$audit")" \
    "\"port\":$HTTP,.*\"decision\":\"allow\",\"reason\":\"host service 127.0.0.1:$HTTP\""
cordon_run "$ws" "${D[@]}" --network allowlist --net-hosts-file "$hosts" --net-audit-log "$audit" \
    "${RULES[@]}" --set "network.host_services=[\"127.0.0.1:$HTTP\"]" -- bash -c "$CLIENTS$HS_GET
    hs_get $HTTP; echo hs=\$?
    (exec 3<>/dev/tcp/127.0.0.1/$ECHO) 2>&1; echo other=\$?
    connect_get web.test $HTTP | tail -1; echo"
like "host service, allowlist: the service at 127.0.0.1:$HTTP" "$out" $'hello-from-loopback\nhs=0'
like "host service, allowlist: another loopback port stays closed" "$out" "other=1"
like "host service, allowlist: the proxy at 127.0.0.1:3128 still works beside it" "$out" $'other=1\nhello-from-loopback'

# ------------------------------------------------------------ an unprivileged user
# The proxy's and the forwarder's sockets are 0600: the container runs as
# the user's uid, which must be able to connect both ways.
if id cordon-test >/dev/null 2>&1; then
    chown cordon-test "$hd/sock"
    uws=$(mktemp -d /tmp/cordon-dn.XXXXXX)
    uhome=$(mktemp -d /tmp/cordon-dnh.XXXXXX)
    cleanup_dirs+=("$uws" "$uhome")
    cp "$hosts" "$uhome/hosts"
    chown -R cordon-test "$uws" "$uhome"
    rm -f "$uws/ready" "$uws/done"
    (cd "$uws" && runuser -u cordon-test -- env -u XDG_CONFIG_HOME -u XDG_RUNTIME_DIR PWD="$uws" \
        HOME="$uhome" CORDON_TEST_AGENT="$CORDON_TEST_AGENT" "$ucordon" run "${D[@]}" \
        --network allowlist --net-hosts-file "$uhome/hosts" --net-audit-log "$uhome/audit.jsonl" \
        "${RULES[@]}" --publish "127.0.0.1:$PUB:8000" --set "network.host_services=[\"127.0.0.1:$HTTP\"]" -- bash -c "
        id -u; wget -q -O - http://web.test:$HTTP/
        $HS_GET
        echo \"host-service=\$(hs_get $HTTP | tail -1 | tr a-z A-Z)\"
        mkdir -p www && echo published-as-the-user > www/index.html
        httpd -f -p 127.0.0.1:8000 -h www & sleep 0.3
        touch $uws/ready; for i in \$(seq 300); do [ -e $uws/done ] && break; sleep 0.1; done" \
        >"$TEST_TMP/user.out" 2>&1 </dev/null) &
    upid=$!
    cleanup_pids+=("$upid")
    for _ in $(seq 300); do [ -e "$uws/ready" ] && break; sleep 0.1; done
    got=$(curl -sS -m 10 "http://127.0.0.1:$PUB/" 2>&1)
    touch "$uws/done"
    wait "$upid"
    rc=$?
    chown root "$hd/sock"
    out=$(cat "$TEST_TMP/user.out")
    is "unprivileged: the run exits 0" "$rc" 0
    like "unprivileged: the user's uid inside" "$out" "^$(id -u cordon-test)"
    like "unprivileged: the allowlist works" "$out" "hello-from-loopback"
    is "unprivileged: the published port works" "$got" "published-as-the-user"
    like "unprivileged: the host service works" "$out" "host-service=HELLO-FROM-LOOPBACK"
    like "unprivileged: the audit log is the user's" "$(stat -c %U "$uhome/audit.jsonl" 2>/dev/null)" cordon-test
else
    skip "unprivileged: allowlist and published port" "no cordon-test user"
fi

# ------------------------------------------------------------ bind address rules
# 0.0.0.0 only from the user's or a host-owned layer, never the workspace file.
bws=$(new_ws dnetbind)
printf '[network]\npublish_ports = ["0.0.0.0:%s:8000"]\n' "$PUB" >"$bws/.cordon.toml"
(cd "$bws" && PWD="$bws" "$CORDON" trust --yes >/dev/null 2>&1)
cordon_run "$bws" "${D[@]}" -- true
is "publish: 0.0.0.0 from the workspace file is refused (125)" "$rc" 125
like "publish: ... with the reason" "$out" "publishing port $PUB on 0.0.0.0 is refused in the workspace file"
rm -f "$bws/.cordon.toml"
rm -f "$bws/ready" "$bws/done"
(cd "$bws" && PWD="$bws" "$CORDON" run "${D[@]}" --publish "0.0.0.0:$PUB:8000" -- bash -c "
    touch $bws/ready; for i in \$(seq 100); do [ -e $bws/done ] && break; sleep 0.1; done" \
    >/dev/null 2>&1 </dev/null) &
bpid=$!
cleanup_pids+=("$bpid")
for _ in $(seq 300); do [ -e "$bws/ready" ] && break; sleep 0.1; done
is "publish: 0.0.0.0 from the user's command line binds all addresses" \
    "$(ss -Hltn "sport = :$PUB" 2>/dev/null | awk '{print $4}')" "0.0.0.0:$PUB"
touch "$bws/done"
wait "$bpid"

# ------------------------------------------------------------ what stays refused
cordon_run "$ws" "${D[@]}" --network open -- true
is "open: refused on docker (125)" "$rc" 125
like "open: the reason" "$out" 'network.mode = "open" is not supported on the docker backend'

# ------------------------------------------------------------ ssh's tunnel
# docs/ssh.md: the image has no ssh or git, so the ProxyCommand itself,
# cordon-agent connect, relays 1 MiB to the echo server and back (the
# server answers the rest after the half-close), and a refused host gets
# the proxy's reason.
dnet_run 'echo "$GIT_SSH_COMMAND"; grep -v "^#" /etc/ssh/ssh_config; head -c 1048576 /dev/urandom >/tmp/x
    /run/cordon/agent connect web.test '"$ECHO"' </tmp/x | cmp - /tmp/x && echo same
    /run/cordon/agent connect other.test 22 </dev/null; echo rc=$?'
like "ssh: GIT_SSH_COMMAND runs cordon-agent connect" "$out" \
    "ssh -o ProxyCommand='/run/cordon/agent connect %h %p'"
like "ssh: the image's /etc/ssh/ssh_config is cordon's: plain ssh takes the tunnel too" "$out" \
    "$(printf 'Host \\*\n    ProxyCommand /run/cordon/agent connect %%h %%p')"
like "ssh: cordon-agent connect relays 1 MiB both ways through the proxy" "$out" "same"
like "ssh: a refused host gets the proxy's reason" "$out" \
    "cordon's proxy refused other.test:22: HTTP/1.1 403 Forbidden: cordon: network: denied: no allow_hosts rule matches other.test:22"

# ------------------------------------------------------------ [[secrets]]
# The shared sentinel run (tests/lib/secrets.sh) with busybox wget: the
# image has no python, so environ, cmdline and files are swept, not memory.
. "$CORDON_SRC/tests/lib/secrets.sh"
secrets_setup
cordon_run "$ws" "${D[@]}" --network allowlist "${secret_rules[@]}" -- bash -c "$(secrets_script wget)"
secrets_assert docker

# ------------------------------------------------------------ HTTPS: TLS interception
# The session bundle (the host's plus the session CA) is bound read-only
# over the image's /etc/ssl/certs/ca-certificates.crt. Real clients: the
# host's /usr mounted read-only at /opt/host-usr (busybox has no curl,
# Python, Node or git; cordon refuses a mount over /usr itself), where the
# image's /usr, /lib and /lib64 lead.
timg="$TEST_TMP/timg"
mkdir -p "$timg/bin" "$timg/etc" "$timg/opt/host-usr"
cp /bin/busybox "$timg/bin/" && cp /bin/bash-static "$timg/bin/bash"
for c in $(/bin/busybox --list); do [ -e "$timg/bin/$c" ] || ln -s busybox "$timg/bin/$c"; done
ln -s opt/host-usr "$timg/usr" && ln -s usr/lib "$timg/lib" && ln -s usr/lib64 "$timg/lib64"
printf 'root:x:0:0:root:/root:/bin/sh\ncordon-test:x:%s:%s::/tmp:/bin/sh\n' \
    "$(id -u cordon-test 2>/dev/null || echo 1000)" "$(id -g cordon-test 2>/dev/null || echo 1000)" >"$timg/etc/passwd"
tar -C "$timg" -cf "$TEST_TMP/timg.tar" . && docker import "$TEST_TMP/timg.tar" cordon-docker-tls >/dev/null
DT=(--backend docker --set "docker.host=$host_sock" --set docker.image=cordon-docker-tls)
secrets_tls_setup
# The image with /usr mounted only: busybox's image keeps its own.
xdg_plain=$XDG_CONFIG_HOME
export XDG_CONFIG_HOME="$TEST_TMP/xdg-tls"
mkdir -p "$XDG_CONFIG_HOME/cordon"
cp "$xdg_plain/cordon/config.toml" "$XDG_CONFIG_HOME/cordon/config.toml"
printf '\n[[mounts]]\nhost_path = "/usr"\nguest_path = "/opt/host-usr"\n' >>"$XDG_CONFIG_HOME/cordon/config.toml"
cordon_run "$ws" "${DT[@]}" --network allowlist --net-audit-log "$audit" "${tls_rules[@]}" -- \
    bash -c "$(secrets_tls_script)"
secrets_tls_assert docker
like "docker https: the audit log records the interception" "$(cat "$audit")" \
    '"host":"api.test".*"decision":"allow".*TLS intercepted'
is "docker https: no container left" "$(ncontainers)" 0

# ------------------------------------------------------------ deny mode answers at once
t0=$(date +%s%N)
cordon_run "$ws" "${DT[@]}" -- bash -c "curl -sS -m 20 http://web.test:$HTTP/; echo curl=\$?"
diag "docker deny-mode refusal, start included: $((($(date +%s%N) - t0) / 1000000)) ms"
like "docker deny: curl through the variables gets 403 with the reason and the way out" "$out" \
    'cordon: network: denied: network.mode is "deny" \(this sandbox has no network\); a host is allowed with network.mode = "allowlist" and network.allow_hosts = \["web.test"\] \(cordon --network allowlist --allow-host web.test\)'
like "docker deny: ... at once (curl exits 0, no retry on a missing route)" "$out" "curl=0"
like "docker deny: cordon's stderr says it too" "$out" "web.test:$HTTP refused: denied: network.mode is \"deny\""
unlike "docker deny: nothing connected" "$out" "hello-from"
XDG_CONFIG_HOME=$xdg_plain cordon_run "$ws" "${D[@]}" -- bash -c "wget -q -O - http://web.test:$HTTP/ 2>&1; echo wget=\$?"
like "docker deny: busybox wget sees the 403 too" "$out" "403 Forbidden"

# ------------------------------------------------------------ the tool result's line
tout=$(cd "$ws" && PWD="$ws" "$CORDON" tool "${DT[@]}" --net-hosts-file "$hosts" bash \
    "{\"command\":\"curl -sS -m 20 http://web.test:$HTTP/ -o /dev/null; echo curl=\$?\"}" 2>/dev/null </dev/null)
last=$($PY -c 'import json,sys; r=json.loads(sys.argv[1]); print("".join(c.get("text","") for c in r["content"]).rstrip().splitlines()[-1])' "$tout" 2>&1)
is "docker tool, deny: the result ends with cordon's line: destination, rule, configuration" "$last" \
    "[cordon] network: web.test:$HTTP refused: network.mode is \"deny\" (this sandbox has no network). To allow it: network.mode = \"allowlist\" and network.allow_hosts = [\"web.test\"] (cordon --network allowlist --allow-host web.test)"

# ------------------------------------------------------------ the allow dialog (MCP elicitation)
if command -v node >/dev/null && [ -d "$CORDON_SRC/tests/pi/node_modules/@modelcontextprotocol/sdk" ]; then
    e2e=$(CORDON_E2E_ARGS="[\"--backend\",\"docker\",\"--set\",\"docker.host=$host_sock\",\"--set\",\"docker.image=cordon-docker-tls\"]" \
        node "$CORDON_SRC/tests/e2e/mcp-network.mjs" 2>&1)
    like "docker mcp: the user allowed a refused destination for the session (official SDK client)" \
        "$e2e" "ok [0-9]+ - the next call reaches the allowed destination, with no cordon line"
    unlike "docker mcp: every step of the dialog passed" "$e2e" "not ok"
else
    skip "docker mcp: the allow dialog" "node or @modelcontextprotocol/sdk is missing (scripts/bootstrap.sh --test)"
fi

# ------------------------------------------------------------ HTTPS as an unprivileged user
if id cordon-test >/dev/null 2>&1; then
    uhome=$(mktemp -d /tmp/cordon-dnt.XXXXXX)
    uws=$(mktemp -d /tmp/cordon-dnt-ws.XXXXXX)
    cleanup_dirs+=("$uhome" "$uws")
    mkdir -p "$uhome/.config/cordon"
    cp "$tls_ca" "$uhome/ca.pem"
    cat >"$uhome/.config/cordon/config.toml" <<EOF2
[network]
ca_file = "$uhome/ca.pem"

[[secrets]]
name = "API_TOKEN"
from = "env:HOST_API_TOKEN"
hosts = ["api.test"]
header = "Authorization"

[[mounts]]
host_path = "/usr"
guest_path = "/opt/host-usr"
EOF2
    cp "$secret_hosts" "$uhome/hosts"
    chown -R cordon-test "$uhome" "$uws"
    chown cordon-test "$hd/sock"
    out=$(cd "$uws" && runuser -u cordon-test -- env -u XDG_CONFIG_HOME -u XDG_RUNTIME_DIR PWD="$uws" \
        HOME="$uhome" HOST_API_TOKEN="$env_value" CORDON_TEST_AGENT="$CORDON_TEST_AGENT" "$ucordon" run \
        "${DT[@]}" --network allowlist --net-hosts-file "$uhome/hosts" --allow-host api.test \
        --allow-host "127.0.0.1:$tls_port" -- bash -c \
        'id -u; curl -sS -m 20 -H "Authorization: Bearer $API_TOKEN" https://api.test:'"$tls_port"'/user 2>&1' 2>&1 </dev/null)
    chown root "$hd/sock"
    like "unprivileged https: the user's uid inside" "$out" "^$(id -u cordon-test)"
    like "unprivileged https: the bound host gets the real value through the interception" "$out" "auth=ok ENV"
else
    skip "unprivileged: HTTPS" "no cordon-test user"
fi

tap_done
