#!/usr/bin/env bash
# Configuration as `cordon run` applies it: what starts, what is blocked and
# what is printed, for each layer. Every location is a temporary directory
# (XDG_CONFIG_HOME, CORDON_ETC_DIR in this debug build), so this runs
# unprivileged too.
. "$CORDON_SRC/tests/lib/tap.sh"
. "$CORDON_SRC/tests/lib/cordon.sh"
mkdir -p "$TEST_TMP/xdg/cordon" "$TEST_TMP/etc" "$TEST_TMP/home"
export XDG_CONFIG_HOME=$TEST_TMP/xdg CORDON_ETC_DIR=$TEST_TMP/etc HOME=$TEST_TMP/home
export XDG_RUNTIME_DIR=$TEST_TMP/runtime
mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"
user=$XDG_CONFIG_HOME/cordon/config.toml
ws=$(new_ws ws)
ws=$(cd "$ws" && pwd -P)
shared=$(new_ws shared)
echo "shared-data" > "$shared/data.txt"

# defaults
sh_in "$ws" 'ulimit -u; ulimit -n'
is "default limits reach the sandbox (pids, open files)" "$out" "1024
1024"

# user layer
printf '[limits]\npids = 77\nopen_files = 333\n' > "$user"
sh_in "$ws" 'ulimit -u; ulimit -n'
is "user config.toml limits apply" "$out" "77
333"

# environment and flags
out=$(cd "$ws" && CORDON_LIMITS__PIDS=55 "$CORDON" run -- bash -c 'ulimit -u' 2>&1)
is "CORDON_* environment beats the user file" "$out" "55"
out=$(cd "$ws" && CORDON_LIMITS__PIDS=55 "$CORDON" run --pids 44 -- bash -c 'ulimit -u' 2>&1)
is "a flag (session layer) beats the environment" "$out" "44"

# host-owned default locks a key
printf '[limits]\npids = 66\n' > "$TEST_TMP/etc/default.toml"
chmod 644 "$TEST_TMP/etc/default.toml"
out=$(cd "$ws" && "$CORDON" run --pids 44 -- bash -c 'ulimit -u' 2>&1)
is "a host-owned value wins over a flag" "$(tail -1 <<<"$out")" "66"
like "... with a warning naming both places (the flag the user typed)" "$out" "limits.pids set in --pids is ignored: locked by $TEST_TMP/etc/default.toml:2"

# invalid or unsafe host policy fails closed
printf '[limits\n' > "$TEST_TMP/etc/default.toml"
cordon_run "$ws" -- touch ran
is "an invalid host policy stops cordon (125)" "$rc" 125
like "... naming the file, line and column" "$out" "$TEST_TMP/etc/default.toml:1:[0-9]+"
ok "... and nothing ran" test ! -e "$ws/ran"
printf '[limits]\npids = 66\n' > "$TEST_TMP/etc/default.toml"
chmod 666 "$TEST_TMP/etc/default.toml"
cordon_run "$ws" -- touch ran
is "a host policy writable by others stops cordon (125)" "$rc" 125
like "... saying why" "$out" "default.toml.*writable"
ok "... and nothing ran" test ! -e "$ws/ran"
rm -f "$TEST_TMP/etc/default.toml"

# the workspace file: ignored until trusted, then applied; forbidden settings refused
printf 'protected_paths = ["secrets"]\n[limits]\npids = 99\n' > "$ws/.cordon.toml"
mkdir -p "$ws/secrets"
out=$(cd "$ws" && "$CORDON" run -- bash -c 'ulimit -u' 2>&1)
is "an untrusted workspace file is ignored" "$(tail -1 <<<"$out")" "77"
like "... with a warning" "$out" "not trusted"
(cd "$ws" && "$CORDON" trust --yes >/dev/null 2>&1)
out=$(cd "$ws" && "$CORDON" run -- bash -c 'ulimit -u; touch secrets/x 2>&1; echo w > normal.txt && echo ok' 2>&1)
like "a trusted workspace file applies" "$out" "^99"
like "its protected_paths are read-only inside" "$out" "secrets/x.*Read-only file system"
like "the rest of the workspace stays writable" "$out" "ok$"
echo '# changed by someone' >> "$ws/.cordon.toml"
out=$(cd "$ws" && "$CORDON" run -- bash -c 'ulimit -u' 2>&1)
is "a workspace file changed after trusting is not honoured" "$(tail -1 <<<"$out")" "77"
like "... with a warning that it changed" "$out" "changed since the workspace was trusted"
printf 'fallback_mode = "host"\n' > "$ws/.cordon.toml"
(cd "$ws" && "$CORDON" trust --yes >/dev/null 2>&1)
cordon_run "$ws" -- touch ran
is "a workspace file asking for host fallback stops cordon" "$rc" 125
like "... naming file and line" "$out" "$ws/.cordon.toml:1"
ok "... and nothing ran" test ! -e "$ws/ran"
printf '[[mounts]]\nhost_path = "%s"\nreadonly = false\n' "$HOME" > "$ws/.cordon.toml"
(cd "$ws" && "$CORDON" trust --yes >/dev/null 2>&1)
cordon_run "$ws" -- true
is "a workspace file adding a writable mount of \$HOME stops cordon (case 40)" "$rc" 125
rm -f "$ws/.cordon.toml"

# mounts and environment from the user layer
printf '[[mounts]]\nhost_path = "%s"\nguest_path = "/mnt/shared"\n[env]\nmode = "allowlist"\nallow = ["MY_TOKEN"]\n' "$shared" > "$user"
out=$(cd "$ws" && MY_TOKEN=t0k OTHER=no "$CORDON" run -- bash -c 'cat /mnt/shared/data.txt; echo x > /mnt/shared/w 2>&1; echo "${MY_TOKEN:-unset} ${OTHER:-unset}"' 2>&1)
like "a configured mount is visible" "$out" "shared-data"
like "... read-only by default" "$out" "/mnt/shared/w: Read-only file system"
like "env allowlist forwards only the named variable" "$out" "t0k unset"
printf '[[mounts]]\nhost_path = "%s"\nguest_path = "/mnt/shared"\nreadonly = false\n' "$shared" > "$user"
out=$(cd "$ws" && "$CORDON" run -- bash -c 'echo written > /mnt/shared/w && cat /mnt/shared/w' 2>&1)
is "a mount with readonly = false is writable (the mount and Landlock agree)" "$out" "written"
is "... and the write lands on the host" "$(cat "$shared/w" 2>&1)" "written"
rm -f "$shared/w"
printf '[[mounts]]\nhost_path = "/var/run/docker.sock"\n' > "$user"
cordon_run "$ws" -- true
is "a Docker socket mount is refused (125)" "$rc" 125
like "... naming the reason" "$out" "ocker"
printf '[env]\nmode = "allowlist"\nallow = ["DOCKER_HOST"]\n' > "$user"
cordon_run "$ws" -- true
is "forwarding DOCKER_HOST by configuration is refused" "$rc" 125
rm -f "$user"
tap_done
