#!/usr/bin/env bash
# Integration: the user's git identity inside the sandbox, and PATH holding
# only what exists there (issue 16, docs/toolchains.md). `git commit` inside
# works with the host user's name and email (a repository's own setting
# wins), format.signOff comes along, and nothing else of ~/.gitconfig does:
# no alias (a `!` alias runs commands), no credential helper, no included
# file's other keys, and the repository's includes are not followed on the
# host. On ns, and on vm when QEMU and the guest kernel are there.
. "$CORDON_SRC/tests/lib/tap.sh"
. "$CORDON_SRC/tests/lib/cordon.sh"

command -v git >/dev/null || { echo "1..0 # SKIP git is not installed"; exit 0; }
home=$TEST_TMP/home
mkdir -p "$home"
cat >"$home/.gitconfig" <<CFG
[user]
	name = Ada Host
[include]
	path = $home/.gitconfig-identity
[format]
	signOff = true
[alias]
	planted = !touch $TEST_TMP/alias-ran
[credential]
	helper = store --file $home/.git-credentials
CFG
cat >"$home/.gitconfig-identity" <<CFG
[user]
	email = ada@example.org
[url "https://token@example.org/"]
	insteadOf = https://example.org/
CFG
echo "https://user:secret@example.org" >"$home/.git-credentials"

ws=$(new_ws repo)
git -C "$ws" init -q
echo hi >"$ws/f"
secret=$TEST_TMP/secret.gitconfig
printf '[user]\n\tname = LEAKED FROM AN INCLUDE\n' >"$secret"
git -C "$ws" config include.path "$secret"

run_as_user() { # run_as_user DIR [OPTIONS --] CMD...: cordon run with HOME=$home
    local d=$1; shift
    out=$(cd "$d" && PWD="$d" HOME="$home" XDG_CONFIG_HOME="$home/.config" "$CORDON" run "$@" 2>&1 </dev/null)
    rc=$?
}
script='git config user.name; git config user.email; git config format.signoff
    echo "alias=[$(git config --get alias.planted)] helper=[$(git config --get credential.helper)]"
    echo "insteadof=[$(git config --get-regexp "^url\." )]"
    git add f && git commit -qsm "from the sandbox" && git log -1 --format="author=%an <%ae>%n%(trailers:key=Signed-off-by)"
    git planted 2>&1 | head -1'
check_identity() { # check_identity BACKEND-LABEL
    is "$1: git commit inside exits 0" "$rc" 0
    like "$1: user.name is the host user's, not the repository include's" "$out" $'^Ada Host\n'
    like "$1: user.email comes from the user's included file" "$out" $'\nada@example.org\n'
    like "$1: format.signOff comes along" "$out" $'\ntrue\n'
    like "$1: no alias, no credential helper" "$out" 'alias=\[\] helper=\[\]'
    like "$1: nothing else of the included file (no url.insteadOf with a token)" "$out" 'insteadof=\[\]'
    like "$1: the commit carries the identity" "$out" 'author=Ada Host <ada@example.org>'
    like "$1: -s signs off with it" "$out" 'Signed-off-by: Ada Host <ada@example.org>'
    unlike "$1: the include's value never shows" "$out" 'LEAKED'
    [ ! -e "$TEST_TMP/alias-ran" ] && pass "$1: the host's ! alias did not run" || fail "$1: the host's ! alias did not run"
}

run_as_user "$ws" -- bash -c "$script"
check_identity ns

# The repository's own identity wins, as it does for git.
git -C "$ws" config user.email local@example.org
run_as_user "$ws" -- bash -c 'git config user.email; git commit -q --allow-empty -m second && git log -1 --format="%ae"'
is "ns: the repository's user.email wins over the user's" "$out" $'local@example.org\nlocal@example.org'
git -C "$ws" config --unset user.email

# The user's includeIf "gitdir:" matches the workspace as git does there.
work=$(new_ws work)
git -C "$work" init -q
printf '[includeIf "gitdir:%s/"]\n\tpath = %s/.gitconfig-work\n' "$work" "$home" >>"$home/.gitconfig"
printf '[user]\n\temail = ada@work.example\n' >"$home/.gitconfig-work"
run_as_user "$work" -- git config user.email
is "ns: the user's includeIf gitdir: for this workspace applies" "$out" "ada@work.example"
run_as_user "$ws" -- git config user.email
is "ns: ... and not for another workspace" "$out" "ada@example.org"

# An identity the user forwards on purpose is left alone.
out=$(cd "$ws" && PWD="$ws" HOME="$home" GIT_AUTHOR_NAME="Forwarded Name" "$CORDON" run --env-mode allowlist \
    --set 'env.allow=["GIT_AUTHOR_NAME"]' -- bash -c 'echo "count=${GIT_CONFIG_COUNT:-none} author=$GIT_AUTHOR_NAME"' 2>&1)
is "ns: a forwarded GIT_AUTHOR_NAME is the user's choice: nothing added" "$out" "count=none author=Forwarded Name"

# Outside a repository and without any git configuration, nothing is added.
plain=$(new_ws plain)
out=$(cd "$plain" && PWD="$plain" HOME="$TEST_TMP/empty-home" "$CORDON" run -- bash -c 'echo "count=${GIT_CONFIG_COUNT:-none}"' 2>&1)
is "ns: no git configuration: no variables" "$out" "count=none"

# git's answer is cached by the files' content (a start spawns no git
# then); an edit of ~/.gitconfig shows at the next start, and a file that
# includes another is never answered from the cache.
chome=$TEST_TMP/cache-home
mkdir -p "$chome"
printf '[user]\n\tname = First Name\n' >"$chome/.gitconfig"
cws=$(new_ws cache)
cachecount() { (cd "$cws" && PWD="$cws" HOME="$chome" XDG_CONFIG_HOME="$chome/.config" \
    strace -f -qq -e trace=execve -e signal=none "$CORDON" run -- /bin/true 2>"$TEST_TMP/trace" </dev/null)
    grep -c 'execve("[^"]*/git", \["git", "config"' "$TEST_TMP/trace" || true; }
if command -v strace >/dev/null; then
    cachecount >/dev/null
    n=$(cachecount | tail -1)
    is "ns: the second start with the same ~/.gitconfig runs no host git" "$n" "0"
    out=$(cd "$cws" && PWD="$cws" HOME="$chome" "$CORDON" run -- git config user.name 2>&1 </dev/null)
    is "ns: the cached identity is the file's" "$out" "First Name"
    # Same size, other content: the key is the content, not the size or time.
    printf '[user]\n\tname = Other Name\n' >"$chome/.gitconfig"
    touch -r "$cws" "$chome/.gitconfig"
    out=$(cd "$cws" && PWD="$cws" HOME="$chome" "$CORDON" run -- git config user.name 2>&1 </dev/null)
    is "ns: an edited ~/.gitconfig shows at the next start" "$out" "Other Name"
    printf '[include]\n\tpath = %s/.gitconfig-inc\n' "$chome" >>"$chome/.gitconfig"
    printf '[user]\n\tname = Included One\n' >"$chome/.gitconfig-inc"
    cachecount >/dev/null
    printf '[user]\n\tname = Included Two\n' >"$chome/.gitconfig-inc"
    out=$(cd "$cws" && PWD="$cws" HOME="$chome" "$CORDON" run -- git config user.name 2>&1 </dev/null)
    is "ns: with an include, the included file's edit shows (never cached)" "$out" "Included Two"
    n=$(cachecount | tail -1)
    is "ns: with an include, host git runs at every start" "$n" "1"
else
    skip "git identity cache" "strace is not installed"
fi

# --- PATH: only what exists inside
tool=$TEST_TMP/toolchain/bin
mkdir -p "$tool"
printf '#!/bin/sh\necho toolchain-ran\n' >"$tool/mytool"
chmod 755 "$tool/mytool"
hostpath="/nonexistent-cordon/bin:$HOME/.cordon-no-such/shims:/usr/bin:/bin:$tool"
out=$(cd "$ws" && PWD="$ws" PATH="$hostpath" "$CORDON" run -- bash -c 'echo "$PATH"; command -v mytool || echo no-mytool' 2>&1)
is "ns: PATH inside drops the entries that do not exist there" "$out" $'/usr/bin:/bin\nno-mytool'
out=$(cd "$ws" && PWD="$ws" PATH="$hostpath" "$CORDON" run --set "mounts=[{host_path=\"$TEST_TMP/toolchain\"}]" \
    -- bash -c 'echo "$PATH"; mytool' 2>&1)
is "ns: a toolchain mounted read-only keeps its PATH entry and runs" "$out" "/usr/bin:/bin:$tool"$'\ntoolchain-ran'
out=$(cd "$ws" && PWD="$ws" PATH="$hostpath" "$CORDON" tool bash '{"command":"echo \"$PATH\""}' 2>&1)
like "ns: the MCP tools' bash has the same PATH" "$out" '"text":"/usr/bin:/bin\\n"'

# --- vm: the same identity through the environment (no file mounts there)
if command -v qemu-system-x86_64 >/dev/null && { [ -e /var/cache/cordon/vm/current/vmlinuz ] || [ -n "${CORDON_VM_DIR:-}" ]; }; then
    vws=$(new_ws vmrepo)
    git -C "$vws" init -q
    echo hi >"$vws/f"
    git -C "$vws" config include.path "$secret"
    out=$(cd "$vws" && PWD="$vws" HOME="$home" PATH="$hostpath" "$CORDON" run --backend vm -- bash -c "$script; echo \"path=\$PATH\"" 2>&1 </dev/null)
    rc=$?
    check_identity vm
    like "vm: PATH inside drops the entries that do not exist there" "$out" $'\npath=/usr/bin:/bin$'
else
    skip "vm: identity and PATH" "qemu or the guest kernel is not installed"
fi
tap_done
