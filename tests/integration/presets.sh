#!/usr/bin/env bash
# Integration: allow_hosts presets (docs/network.md "Presets"). Every name
# of every preset passes the proxy's name check and its neighbours do not
# (names from a hosts file, no network needed); the real clients that can
# reach their registry from here run through the proxy with only their
# preset: npm (@npm) and apt (@debian). Others (pip, cargo, go, git against
# github.com) cannot reach their servers from the build machine: only the
# expansion is tested for them.
. "$CORDON_SRC/tests/lib/tap.sh"
. "$CORDON_SRC/tests/lib/cordon.sh"

ws=$(new_ws presets)
hosts="$TEST_TMP/hosts"
export HOME=$TEST_TMP/home
mkdir -p "$HOME"

# name -> hosts, as documented; a neighbour that must stay refused.
declare -A expect=(
    [@npm]="registry.npmjs.org"
    [@pypi]="pypi.org files.pythonhosted.org"
    [@crates]="index.crates.io static.crates.io crates.io"
    [@go]="proxy.golang.org sum.golang.org"
    [@debian]="deb.debian.org security.debian.org"
    [@github]="github.com api.github.com codeload.github.com objects.githubusercontent.com raw.githubusercontent.com release-assets.githubusercontent.com ssh.github.com"
)
declare -A neighbour=([@npm]=registry.yarnpkg.com [@pypi]=test.pypi.org [@crates]=doc.crates.io
    [@go]=golang.org [@debian]=ftp.debian.org [@github]=gist.github.com)
for p in "${!expect[@]}"; do echo "127.0.0.1 ${expect[$p]} ${neighbour[$p]}"; done >"$hosts"

connect() { # HOST PORT: the proxy's answer to a CONNECT, first line and body
    printf 'c() { exec 3<>/dev/tcp/127.0.0.1/3128; printf "CONNECT %%s:%%s HTTP/1.1\\r\\n\\r\\n" "$1" "$2" >&3; timeout 5 cat <&3 | tr -d "\\r" | grep -v -e "^Content" -e "^Connection" -e "^$"; }\n'
}
for p in "${!expect[@]}"; do
    script="$(connect)"
    for h in ${expect[$p]}; do script+="; echo \"== $h\"; c $h 443"; done
    # git over ssh (docs/ssh.md): @github's github.com on port 22 as well.
    [ "$p" = @github ] && script+="; echo \"== ssh\"; c github.com 22"
    script+="; echo \"== neighbour\"; c ${neighbour[$p]} 443; echo \"== port\"; c ${expect[$p]%% *} 8022"
    cordon_run "$ws" --network allowlist --net-hosts-file "$hosts" --allow-host "$p" -- bash -c "$script"
    names=$(wc -w <<<"${expect[$p]}")
    [ "$p" = @github ] && names=$((names + 1)) # github.com:22
    like "$p: every name passes the name check (then the test's 127.0.0.1 is refused as protected)" \
        "$(grep -c '^cordon: network: denied: 127.0.0.1 is a loopback' <<<"$out")" "^$names\$"
    like "$p: ${neighbour[$p]} stays refused" "$(sed -n '/== neighbour/,/== port/p' <<<"$out")" \
        "no allow_hosts rule matches ${neighbour[$p]}:443"
    like "$p: another port stays refused" "$(sed -n '/== port/,$p' <<<"$out")" \
        "no allow_hosts rule matches ${expect[$p]%% *}:8022"
done

cordon_run "$ws" --network allowlist --allow-host @nope -- true
is "an unknown preset is refused (exit 125)" "$rc" 125
like "... naming the known ones" "$out" '"@nope" is not a preset \(known: @npm, @pypi, @crates, @go, @debian, @github\)'

# ---------------------------------------------- real clients, real registries
if curl -sS -o /dev/null -m 8 https://registry.npmjs.org/left-pad 2>/dev/null; then
    cordon_run "$ws" --network allowlist --allow-host @npm -- bash -c \
        'cd /tmp && npm view left-pad version --no-update-notifier 2>&1 | tail -1'
    like "@npm: npm view left-pad through the proxy" "$out" '^1\.[0-9]+\.[0-9]+$'
    cordon_run "$ws" --network allowlist --allow-host @pypi -- bash -c \
        'cd /tmp && npm view left-pad version --no-update-notifier --fetch-retries=0 2>&1 | tail -3'
    unlike "@npm's registry is not in @pypi" "$out" '^1\.[0-9]+\.[0-9]+$'
else
    skip "@npm: npm view through the proxy" "registry.npmjs.org unreachable from this machine"
    skip "@npm's registry is not in @pypi" "registry.npmjs.org unreachable from this machine"
fi
if curl -sS -o /dev/null -m 8 http://deb.debian.org/debian/dists/bookworm/Release 2>/dev/null &&
    [ -e /etc/apt/sources.list.d/debian.sources ] || [ -e /etc/apt/sources.list ]; then
    cordon_run "$ws" --set etc.extra=apt --network allowlist --allow-host @debian -- bash -c '
        mkdir -p /tmp/apt/lists/partial /tmp/apt/cache/archives/partial
        apt-get -o Dir::State::Lists=/tmp/apt/lists -o Dir::Cache=/tmp/apt/cache -o Debug::NoLocking=1 \
            -o APT::Sandbox::User=$(id -un) update 2>&1 | tail -2; echo "apt=${PIPESTATUS[0]}"'
    like "@debian: apt-get update through the proxy" "$out" "apt=0"
    unlike "@debian: no failed fetch" "$out" "^(E|W): Failed"
else
    skip "@debian: apt-get update through the proxy" "deb.debian.org unreachable from this machine"
    skip "@debian: no failed fetch" "deb.debian.org unreachable from this machine"
fi

tap_done
