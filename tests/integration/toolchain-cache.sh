#!/usr/bin/env bash
# Integration: toolchain caches (docs/toolchains.md). With toolchain_caches,
# npm inside the sandbox gets cordon's own persistent cache: a second `npm
# install` in another workspace takes the tarball from it (the local
# registry, reached through the network allowlist, sees no second tarball
# request). The user's real ~/.npm is never mounted: what the sandbox writes
# into its cache lands in $XDG_CACHE_HOME/cordon/toolchain/npm, and the
# user's own cache stays untouched. Off (the default), the home is empty.
. "$CORDON_SRC/tests/lib/tap.sh"
. "$CORDON_SRC/tests/lib/cordon.sh"

for t in node npm; do
    command -v $t >/dev/null || { echo "1..0 # SKIP $t is not installed"; exit 0; }
done
# The registry must not be on loopback or one of the host's addresses
# without an address rule (DNS-rebinding protection): it listens on a
# non-loopback address of this machine, allowed by name and address.
addr=$(hostname -I 2>/dev/null | awk '{print $1}')
[ -n "$addr" ] || { echo "1..0 # SKIP no non-loopback address for the registry"; exit 0; }

home=$TEST_TMP/home
mkdir -p "$home/.npm"
echo "the user's own cache" >"$home/.npm/user-marker"
pkg=$TEST_TMP/pkg
mkdir -p "$pkg/package"
printf '{"name":"tiny-dep","version":"1.0.0","main":"index.js"}\n' >"$pkg/package/package.json"
echo 'module.exports = "tiny";' >"$pkg/package/index.js"
tar -C "$pkg" -czf "$pkg/tiny-dep-1.0.0.tgz" package
log=$TEST_TMP/registry.log
REGISTRY_ADDR=$addr REGISTRY_LOG=$log node "$CORDON_SRC/tests/lib/npm-registry.mjs" "$pkg/tiny-dep-1.0.0.tgz" >"$TEST_TMP/port" &
cleanup_pids+=($!)
for _ in $(seq 50); do [ -s "$TEST_TMP/port" ] && break; sleep 0.1; done
port=$(cat "$TEST_TMP/port")
echo "$addr registry.test" >"$TEST_TMP/hosts"

npm_install() { # npm_install WS [OPTIONS]: npm install in WS through the allowlist
    local d=$1; shift
    printf '{"name":"ws","version":"1.0.0","dependencies":{"tiny-dep":"1.0.0"}}\n' >"$d/package.json"
    : >"$log"
    local t0=$(date +%s%N)
    out=$(cd "$d" && PWD="$d" HOME="$home" XDG_CACHE_HOME="$home/.cache" "$CORDON" run "$@" \
        --network allowlist --net-hosts-file "$TEST_TMP/hosts" \
        --allow-host "registry.test:$port" --allow-host "$addr:$port" -- bash -c \
        "npm install --registry http://registry.test:$port/ --no-audit --no-fund --no-update-notifier 2>&1 | tail -3
         node -e 'console.log(require(\"tiny-dep\"))'; ls -A ~/.npm; echo planted > ~/.npm/planted-by-sandbox" 2>&1 </dev/null)
    rc=$?
    ms=$((($(date +%s%N) - t0) / 1000000))
}
cache_base=$home/.cache/cordon/toolchain
# One set of caches per workspace (its canonical path's SHA-256, 16 hex).
cache_of() { printf '%s/%s' "$cache_base" "$(printf '%s' "$(realpath "$1")" | sha256sum | cut -c1-16)"; }

ws1=$(new_ws one)
cache=$(cache_of "$ws1")
npm_install "$ws1" --set toolchain_caches=true
is "first install exits 0" "$rc" 0
like "first install: the package works" "$out" $'\ntiny\n'
like "first install: npm fetched the tarball" "$(cat "$log")" "GET /tiny-dep/-/tiny-dep-1.0.0.tgz"
unlike "the sandbox does not see the user's ~/.npm" "$out" "user-marker"
first_ms=$ms
[ -d "$cache/npm/_cacache" ] && pass "npm's cache is in cordon's cache directory" || fail "npm's cache is in cordon's cache directory"
is "cordon's cache directory is the user's alone (0700)" "$(stat -c %a "$cache/npm")" 700

: >"$log"
rm -rf "$ws1/node_modules" "$ws1/package-lock.json"
npm_install "$ws1" --set toolchain_caches=true
is "second install (the same workspace) exits 0" "$rc" 0
like "second install: the package works" "$out" $'\ntiny\n'
unlike "second install: the tarball came from cordon's cache, not the registry" "$(cat "$log")" "\.tgz"
diag "npm install: first ${first_ms} ms, second ${ms} ms (with cordon's start)"

# Another workspace does not share it: what one workspace's sandbox put in
# its caches is never what another's build takes (docs/toolchains.md).
: >"$log"
ws2=$(new_ws two)
npm_install "$ws2" --set toolchain_caches=true
is "another workspace's install exits 0" "$rc" 0
like "another workspace fetches the tarball itself" "$(cat "$log")" "GET /tiny-dep/-/tiny-dep-1.0.0.tgz"
ok "another workspace has caches of its own" test -d "$(cache_of "$ws2")/npm/_cacache"
unlike "... and its sandbox does not see what the first one's planted" "$out" "planted-by-sandbox"

is "what the sandbox wrote into its cache is in cordon's cache" "$(cat "$cache/npm/planted-by-sandbox")" planted
is "the user's own ~/.npm holds only what it held" "$(ls -A "$home/.npm")" user-marker

out=$(cd "$ws1" && PWD="$ws1" HOME="$home" XDG_CACHE_HOME="$home/.cache" "$CORDON" run --set toolchain_caches=true \
    -- bash -c 'for d in .npm .cache/pip .cargo/registry .cargo/git go/pkg/mod .cache/go-build .m2/repository .gradle/caches; do
        [ -d ~/$d ] && touch ~/$d/w 2>/dev/null && echo "$d ok"; done' 2>&1)
is "every kind is mounted writable at its tool's path" "$out" \
    $'.npm ok\n.cache/pip ok\n.cargo/registry ok\n.cargo/git ok\ngo/pkg/mod ok\n.cache/go-build ok\n.m2/repository ok\n.gradle/caches ok'
[ -e "$cache/maven/w" ] && [ -e "$cache/go-build/w" ] && pass "each kind has its own directory" || fail "each kind has its own directory"

# A mount the user configured at the same path wins.
own=$TEST_TMP/own-npm
mkdir -p "$own"
out=$(cd "$ws1" && PWD="$ws1" HOME="$home" XDG_CACHE_HOME="$home/.cache" "$CORDON" run --set toolchain_caches=true \
    --set "mounts=[{host_path=\"$own\", guest_path=\"$home/.npm\", readonly=false}]" -- bash -c 'touch ~/.npm/mine; ls -A ~/.npm' 2>&1)
is "a configured mount at the same path wins over cordon's cache" "$out" "mine"

# Off (the default): nothing in the home, and npm fetches again.
ws3=$(new_ws three)
npm_install "$ws3"
like "default: npm fetches the tarball again" "$(cat "$log")" "GET /tiny-dep/-/tiny-dep-1.0.0.tgz"
out=$(cd "$ws3" && PWD="$ws3" HOME="$home" "$CORDON" run -- bash -c 'ls -A ~ | wc -l' 2>&1)
is "default: the home is empty" "$out" 0
out=$(cd "$ws3" && PWD="$ws3" HOME="$home" "$CORDON" config --explain 2>&1)
like "cordon config --explain shows toolchain_caches" "$out" "toolchain_caches"
tap_done
