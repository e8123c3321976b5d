#!/usr/bin/env bash
# Review mode on the docker backend (docs/review.md "Backends"): the daemon
# mounts the overlay (an anonymous volume of the local driver), its upper
# layer the session's review/upper on the host. Root only: a private dockerd
# (tests/lib/docker-backend.sh).
. "$CORDON_SRC/tests/lib/tap.sh"
. "$CORDON_SRC/tests/lib/cordon.sh"
. "$CORDON_SRC/tests/lib/docker-backend.sh"

RB=("${D[@]}")
RL=docker
RN=dk
. "$CORDON_SRC/tests/integration/review-core.sh"
# An unprivileged user who may drive the daemon (the socket is its own, as a
# docker group member's would be): the layer is that user's to read, apply
# and remove.
if id cordon-test >/dev/null 2>&1; then
    chown cordon-test "$hd/sock"
    uws=$(mktemp -d /tmp/cordon-dkr.XXXXXX)
    urun=$(mktemp -d /tmp/cordon-dkrr.XXXXXX)
    cleanup_dirs+=("$uws" "$urun")
    mkdir -p "$uws/gone" "$urun/home" "$urun/run"
    echo one >"$uws/a.txt"
    echo g >"$uws/gone/x"
    chown -R cordon-test "$uws" "$urun"
    chmod 700 "$urun/run"
    uc() { (cd "$uws" && runuser -u cordon-test -- env -u XDG_CONFIG_HOME -u XDG_STATE_HOME PWD="$uws" \
        HOME="$urun/home" XDG_RUNTIME_DIR="$urun/run" CORDON_TEST_AGENT="$CORDON_TEST_AGENT" \
        "$ucordon" "$@" 2>&1 </dev/null); }
    out=$(uc run "${D[@]}" --review --name dku -- bash -c 'echo two >> a.txt; rm -r gone; echo n > new; id -u')
    like "docker, unprivileged: the agent runs as the user" "$out" "^$(id -u cordon-test)"
    is "docker, unprivileged: the files the container made in the layer are the user's" \
        "$(stat -c %U "$urun/run/cordon/dku/review/upper/new" "$urun/run/cordon/dku/review/upper/a.txt" | sort -u)" cordon-test
    ch=$(uc changes dku)
    is "docker, unprivileged: changes reads the daemon's layer" "$ch" $'M  a.txt\nD  gone/\nA  new'
    out=$(uc apply dku)
    is "docker, unprivileged: apply as the user: $out" "$?" 0
    is "docker, unprivileged: the applied files are the user's" \
        "$(cat "$uws/a.txt" "$uws/new"; stat -c %U "$uws/new"; test -e "$uws/gone" || echo gone-removed)" \
        $'one\ntwo\nn\ncordon-test\ngone-removed'
    out=$(uc rm dku)
    rc=$?
    is "docker, unprivileged: cordon rm exits 0: $out" "$rc" 0
    diag "docker, unprivileged: left after cordon rm: $(find "$urun/run/cordon" -path '*dku*' 2>&1 | tr '\n' ' ')"
    ok "docker, unprivileged: cordon rm leaves no file of the layer but the daemon's work directory" \
        test -z "$(find "$urun/run/cordon" -path '*/review/work/work' -prune -o -path '*/review/work' -prune -o -type f -path '*dku*' -print 2>/dev/null)"
    chown root "$hd/sock"
else
    skip "docker, unprivileged: review mode" "no cordon-test user"
fi
# The watchdog: SIGKILL of the supervisor removes the container and its
# overlay volume; the layer, and what the agent wrote, stay for review.
wws=$(new_ws dkwd)
echo host >"$wws/a.txt"
(cd "$wws" && PWD="$wws" exec "$CORDON" run "${D[@]}" --review --name dkw -- \
    bash -c 'echo agent > a.txt; echo written > ready; sleep 120' </dev/null >/dev/null 2>&1) &
sup=$!
disown $sup
for _ in $(seq 1 100); do
    [ -e "$XDG_RUNTIME_DIR/cordon/dkw/review/upper/ready" ] && break
    sleep 0.2
done
is "docker watchdog: the container runs over its overlay volume" "$(ncontainers) $(docker volume ls -q | wc -l)" "1 1"
kill -9 "$sup"
gone=no
for _ in $(seq 1 50); do
    [ "$(ncontainers)" -eq 0 ] && [ "$(docker volume ls -q | wc -l)" -eq 0 ] && { gone=yes; break; }
    sleep 0.2
done
is "docker watchdog: SIGKILL of cordon removes the container and its volume within 10 s" "$gone" yes
is "docker watchdog: the agent's changes wait in the layer" "$("$CORDON" changes dkw 2>&1)" $'M  a.txt\nA  ready'
is "docker watchdog: the host's file is untouched" "$(cat "$wws/a.txt")" host
"$CORDON" rm dkw >/dev/null 2>&1
is "docker: no volume is left once the sessions ended" "$(docker volume ls -q | wc -l)" 0

tap_done
