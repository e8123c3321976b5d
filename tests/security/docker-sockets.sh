#!/usr/bin/env bash
# Security case 63 on the docker backend (docs/sockets.md): the container
# shares the host's kernel and sees the workspace through a bind mount, so
# the socket guard answers its connect/sendto/sendmsg as on ns. A host
# listener's socket in the workspace (at start, bound later, in a
# sub-directory, stream or datagram) is refused; the container's own
# sockets and the allowlist proxy work; sockets.allow lets its socket
# through. Root only, against a private dockerd (tests/lib/docker-backend.sh).
. "$CORDON_SRC/tests/lib/tap.sh"
. "$CORDON_SRC/tests/lib/cordon.sh"
. "$CORDON_SRC/tests/lib/docker-backend.sh"
. "$CORDON_SRC/tests/lib/fixtures.sh"

try_bin="$TEST_TMP/sock-try"
if ! cc -static -D_GNU_SOURCE -O2 -o "$try_bin" "$CORDON_SRC/tests/security/sock-try.c" 2>"$TEST_TMP/cc.log"; then
    fail "case 63: a static sock-try builds" "$(cat "$TEST_TMP/cc.log")"
    tap_done
fi
ws=$(new_ws ws)
sentinels=$(new_ws sentinels)
cp "$try_bin" "$ws/try"

host_listen "$ws/host.sock" stream
mkdir -p "$ws/sub"
host_listen "$ws/sub/deep.sock" stream
host_listen "$ws/dgram.sock" dgram
late_out="$TEST_TMP/late.out"
(cd "$ws" && "$CORDON" run "${D[@]}" -- bash -c '
    for t in "host.sock stream" "sub/deep.sock stream" "dgram.sock sendto" "dgram.sock sendmsg" "dgram.sock dgram-connect"; do
        set -- $t; echo "$1 $2: $(./try try $1 $2)"; done
    ./try own /tmp; ./try own .
    for i in $(seq 600); do [ -S later.sock ] && break; sleep 0.1; done
    echo "later: $(./try try later.sock stream)"' >"$late_out" 2>&1 </dev/null) &
run_pid=$!
for _ in $(seq 600); do [ "$(grep -c "own datagram" "$late_out" 2>/dev/null)" -ge 2 ] && break; sleep 0.1; done
host_listen "$ws/later.sock" stream
wait "$run_pid"
out=$(cat "$late_out")
like "case 63: docker: host stream socket in the workspace: EACCES" "$out" "host.sock stream: EACCES"
like "case 63: docker: host socket in a sub-directory: EACCES" "$out" "sub/deep.sock stream: EACCES"
like "case 63: docker: host datagram socket, sendto: EACCES" "$out" "dgram.sock sendto: EACCES"
like "case 63: docker: host datagram socket, sendmsg: EACCES" "$out" "dgram.sock sendmsg: EACCES"
like "case 63: docker: host datagram socket, connect: EACCES" "$out" "dgram.sock dgram-connect: EACCES"
like "case 63: docker: a host socket bound after the start: EACCES" "$out" "later: EACCES"
like "case 63: docker: cordon says why it refused" "$out" "connection to the unix socket $ws/host.sock refused \(EACCES\)"
own_lines=$(grep -c "own stream: ok" <<<"$out")
is "case 63: docker: the container's own stream sockets work (/tmp, workspace)" "$own_lines" 2
is "case 63: docker: the container's own datagram sockets work" "$(grep -c "own datagram: ok" <<<"$out")" 2
ok "case 63: docker: no host listener was reached" eval '! reached host.sock && ! reached deep.sock && ! reached dgram.sock && ! reached later.sock'

mkdir -p "$ws/run"
host_listen "$ws/run/app.sock" stream
cordon_run "$ws" "${D[@]}" --set 'sockets.allow=["run/app.sock"]' -- ./try try run/app.sock stream
like "case 63: docker: sockets.allow: the named host socket connects" "$out" "OK"
for _ in $(seq 40); do reached app.sock && break; sleep 0.05; done
ok "case 63: docker: sockets.allow: the host listener was reached" reached app.sock

# rtnetlink through the guard: the kernel checks the sender, and the guard
# keeps no capability but CAP_SYS_PTRACE (as root it would hold them all).
cordon_run "$ws" "${D[@]}" -- sh -c 'ip link set lo down 2>&1; echo "down=$?"; ip link show lo'
like "case 63: docker: rtnetlink through the guard: link down refused" "$out" "(Operation not permitted|Permission denied).*down=[1-9]"
like "case 63: docker: the container's loopback is still up" "$out" "<LOOPBACK,UP"

# The allowlist proxy is a host socket the forwarder reaches by design.
cordon_run "$ws" "${D[@]}" --network allowlist --allow-host example.invalid -- \
    bash -c 'exec 3<>/dev/tcp/127.0.0.1/3128 && echo proxy-reached'
like "case 63: docker: the allowlist proxy's socket still connects" "$out" "proxy-reached"

tap_done
