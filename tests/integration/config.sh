#!/usr/bin/env bash
# Drives the real `cordon config`, `cordon trust` and `cordon untrust` with
# each kind of configuration and asserts what a user sees: the printed
# configuration, the explanation of each value, warnings, errors naming
# file:line, and exit statuses. Every location is a temporary directory
# (XDG_CONFIG_HOME, CORDON_ETC_DIR), so this runs unprivileged too.
. "$CORDON_SRC/tests/lib/tap.sh"
tmp=$(mktemp -d /tmp/cordon-config-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/ws" "$tmp/xdg/cordon" "$tmp/etc" "$tmp/home"
ws=$(cd "$tmp/ws" && pwd -P)
export XDG_CONFIG_HOME=$tmp/xdg CORDON_ETC_DIR=$tmp/etc HOME=$tmp/home
user=$XDG_CONFIG_HOME/cordon/config.toml
cd "$ws" || exit 1

run() { # run ARGS... -> $out, $err, $status
    out=$("$CORDON" "$@" 2>"$tmp/stderr")
    status=$?
    err=$(cat "$tmp/stderr")
}
json_get() { python3 -c 'import json,sys; d=json.load(sys.stdin)
for k in sys.argv[1].split("/"): d=d[k]
print(json.dumps(d))' "$1"; }

run config
is "config with nothing configured exits 0" "$status" 0
like "prints the default backend" "$out" $'(^|\n)backend = "ns"\n'
like "prints tables" "$out" $'\n\\[limits\\]\ncpus = 0\nmemory_mib = 4096\npids = 1024\n'
is "no warnings" "$err" ""

printf '# mine\nbackend = "vm"\n[limits]\npids = 50\n' > "$user"
run config --explain
like "user value shown" "$out" 'backend = "vm"  # user '"$user"':2'
like "defaults are labelled" "$out" 'teardown = "remove"  # default'
run config --json
is "--json value" "$(json_get backend <<<"$out")" '"vm"'
is "--json nested tables" "$(json_get limits/pids <<<"$out")" 50
run config --explain --json
is "--explain --json layer" "$(json_get limits.pids/layer <<<"$out")" '"user"'
is "--explain --json line" "$(json_get limits.pids/line <<<"$out")" 4
is "--explain --json locked" "$(json_get limits.pids/locked <<<"$out")" false

CORDON_LIMITS__PIDS=100 CORDON_ROUTE_TOOLS=read,bash run config --explain
like "environment beats user" "$out" 'pids = 100  # environment CORDON_LIMITS__PIDS'
like "lists from the environment are comma-separated" "$out" 'route_tools = \["read", "bash"\]'
CORDON_LIMITS__PIDS=100 run config --explain --set limits.pids=200 --backend docker
like "--set beats the environment" "$out" 'pids = 200  # session --set'
like "named flag --backend (its origin is the flag the user typed)" "$out" 'backend = "docker"  # session --backend'

printf '[limits]\npids = 7\n' > "$tmp/etc/default.toml"
chmod 644 "$tmp/etc/default.toml"
CORDON_LIMITS__PIDS=100 run config --explain
is "host default: exit 0" "$status" 0
like "host default wins and locks" "$out" "pids = 7  # host-default $tmp/etc/default.toml:2 \\(locked\\)"
like "lower value ignored with a warning naming both places" "$err" \
    "warning: limits.pids set in $user:4 is ignored: locked by $tmp/etc/default.toml:2"
like "environment value ignored too" "$err" "limits.pids set in CORDON_LIMITS__PIDS is ignored"

chmod 666 "$tmp/etc/default.toml"
run config
is "group/other-writable host file fails closed" "$status" 1
like "and says why" "$err" "default.toml: writable by group or others"
chmod 644 "$tmp/etc/default.toml"
printf '[limits]\npids = \n' > "$tmp/etc/default.toml"
run config
is "invalid host file fails closed" "$status" 1
like "naming file:line:column" "$err" "$tmp/etc/default.toml:2:8: expected a value"
rm "$tmp/etc/default.toml"

printf 'backend = "vm"\n[limits]\npid = 3\n' > "$user"
run config
is "unknown key: exit 1" "$status" 1
like "unknown key: did you mean" "$err" "$user:3:1: unknown key 'limits.pid' \\(did you mean 'limits.pids'\\?\\)"
printf 'network = "open"\n' > "$user"
run config
like "section given a value" "$err" "'network' must be a table"
rm "$user"

run config --where
is "--where exits 0" "$status" 0
like "--where names the project override (not yet existing)" "$out" \
    "project override: $XDG_CONFIG_HOME/cordon/policy/projects/ws-[0-9a-f]{16}\\.toml"
project=$(sed -n 's/^project override: //p' <<<"$out")
ok "the project override does not exist yet" test ! -e "$project"
run config --where --json
is "--where --json" "$(json_get project_policy <<<"$out")" "\"$project\""

# the workspace file and trust
printf '[limits]\npids = 10\n' > .cordon.toml
run config
like "untrusted workspace file ignored" "$out" 'pids = 1024'
like "with a warning" "$err" "ignoring $ws/.cordon.toml: this workspace is not trusted"
run trust --yes
is "cordon trust exits 0" "$status" 0
is "cordon trust says so" "$out" "trusted $ws"
run config --explain
like "trusted workspace file applies" "$out" "pids = 10  # workspace $ws/.cordon.toml:2"
run trust --list
like "trust --list shows the workspace and hash" "$out" "^$ws	[0-9a-f]{64}	"
ok "trust record is outside the workspace" test -f "$XDG_CONFIG_HOME/cordon/trust.json"
printf '[limits]\npids = 11\n' > .cordon.toml
run config
like "changed after trusting: ignored" "$out" 'pids = 1024'
like "changed after trusting: warned" "$err" "changed since the workspace was trusted"
run trust --yes "$ws"
run config
like "trust DIR again: applies" "$out" 'pids = 11'

printf '\nfallback_mode = "host"\n' > .cordon.toml
run trust --yes
run config
is "workspace fallback_mode = host: exit 1" "$status" 1
like "refused with file:line and reason" "$err" "$ws/.cordon.toml:2: fallback_mode = \"host\" is refused"
printf '[[mounts]]\nhost_path = "%s"\nreadonly = false\n' "$HOME" > .cordon.toml
run trust --yes
run config
like "workspace writable mount of HOME refused" "$err" "writable mount of $HOME is refused"
printf '[network]\npublish_ports = ["0.0.0.0:8080:80"]\n' > .cordon.toml
run trust --yes
run config
like "workspace 0.0.0.0 publish refused" "$err" "publishing port 8080 on 0.0.0.0 is refused"
printf '[env]\nallow = ["DOCKER_HOST"]\n' > .cordon.toml
run trust --yes
run config
like "protected environment name refused" "$err" '"DOCKER_HOST" is protected'

run untrust
is "untrust" "$out" "untrusted $ws"
run config
is "untrusted again: the bad file is ignored" "$status" 0
run untrust
is "untrust twice" "$out" "was not trusted: $ws"

# host-owned project override
rm .cordon.toml
mkdir -p "$(dirname "$project")"
printf 'backend = "vm"\n' > "$project"
chmod 644 "$project"
run config --explain --backend docker
like "project override wins and locks" "$out" "backend = \"vm\"  # host-project $project:1 \\(locked\\)"
like "session value ignored (named by the flag the user typed)" "$err" "backend set in --backend is ignored: locked by $project:1"
rm "$project"

# policy placement and mounts
printf '[[mounts]]\nhost_path = "%s/cordon/policy/projects"\nguest_path = "/p"\nreadonly = false\n' \
    "$XDG_CONFIG_HOME" > "$user"
run config
is "writable mount over the policy directory: exit 1" "$status" 1
like "says why" "$err" "may not overlap the policy location"
printf '[[mounts]]\nhost_path = "/var/run/docker.sock"\nguest_path = "/d"\n' > "$user"
run config
like "Docker socket mount refused" "$err" "container daemon socket path|Docker socket"
rm "$user"
XDG_CONFIG_HOME=$ws/.config run config
is "policy inside the workspace: exit 1" "$status" 1
like "says so" "$err" "is inside the workspace"

# cordon config check
printf 'backend = "ns"\n[limits]\ncpus = 1.5\n' > "$tmp/good.toml"
run config check "$tmp/good.toml"
is "check a valid file" "$status" 0
like "check says valid" "$out" "valid"
printf 'backend = 1\n' > "$tmp/bad.toml"
run config check "$tmp/bad.toml"
is "check an invalid file: exit 1" "$status" 1
like "check names file:line:col" "$err" "$tmp/bad.toml:1:11: backend: expected a string, found integer"
printf 'fallback_mode = "host"\n' > .cordon.toml
run config check .cordon.toml
is "check .cordon.toml applies the workspace rules" "$status" 1
run config check --as user .cordon.toml
is "the same file is fine as user settings" "$status" 0
rm .cordon.toml
printf '[[mounts]]\nhost_path = "/opt"\n[network]\npublish_ports = [8080, "[::1]:7000:70"]\n' > "$user"
"$CORDON" config > "$tmp/effective.toml" 2>/dev/null
run config check "$tmp/effective.toml"
is "the printed configuration is itself a valid configuration file" "$status" 0
like "and keeps its values" "$(cat "$tmp/effective.toml")" 'publish_ports = \["127.0.0.1:8080:8080", "\[::1\]:7000:70"\]'
rm "$user"
run config --bogus
is "unknown option: usage error" "$status" 2
# Errors name what the user typed (issue 16): the flag, not --set and the
# key; a URL given as a host says so; a --set position is a column of the
# argument as typed.
run run --network foo -- true
like "--network foo is reported as --network" "$err" 'error: configuration: --network: network.mode: expected one of "deny", "allowlist", "open", found "foo"'
unlike "--network foo: no --set in the message" "$err" '[-][-]set'
run run --allow-host http://example.com/ -- true
like "--allow-host with a URL: a host, not a URL" "$err" '--allow-host: network.allow_hosts: "http://example.com/" is a URL: an allowlist entry is a host, not a URL'
run run --set 'network.allow_hosts=["ok.example", "http://x"]' -- true
like "--set: the column points at the bad value in the argument as typed" "$err" '--set:1:36: network.allow_hosts: "http://x" is a URL'
run run --pids many -- true
like "--pids: named by the flag" "$err" '--pids: limits.pids: expected an integer, found "many"'
tap_done
