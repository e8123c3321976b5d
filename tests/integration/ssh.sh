#!/usr/bin/env bash
# Integration: git over ssh through cordon's proxy (docs/ssh.md). A real
# sshd (Debian's openssh-server) on the host's loopback serves a bare
# repository; inside, git's default GIT_SSH_COMMAND tunnels through the
# proxy with cordon-agent's `connect`. git clone and git push work for the
# allowed host:port, another host and another port are refused with the
# proxy's reason (on stderr and as the tool result's last line), deny mode
# refuses at once, and the user's ~/.ssh never enters unless mounted. As
# root, a second sshd on port 22 in a test network namespace stands in for
# github.com: the @github preset's ssh name, git@host:path syntax.
. "$CORDON_SRC/tests/lib/tap.sh"
. "$CORDON_SRC/tests/lib/cordon.sh"
. "$CORDON_SRC/tests/lib/fixtures.sh"

SSHD=/usr/sbin/sshd
for t in "$SSHD" ssh ssh-keygen git; do
    command -v "$t" >/dev/null ||
        { echo "1..0 # SKIP $t is not installed (scripts/bootstrap.sh --test)"; exit 0; }
done
proxy_test_env ssh
me=$(id -un)
P=$((20000 + (RANDOM % 20000)))
srv=$TEST_TMP/srv
keys=$TEST_TMP/keys # what the test mounts explicitly as ~/.ssh inside
mkdir -p "$srv" "$keys"
chmod 700 "$keys"

# The server side: a host key, the client's throwaway key authorised, a
# bare repository with one commit.
ssh-keygen -q -t ed25519 -N '' -f "$srv/host_key" -C cordon-test-host
ssh-keygen -q -t ed25519 -N '' -f "$keys/id_ed25519" -C cordon-test-client
cp "$keys/id_ed25519.pub" "$srv/authorized_keys"
echo "[git.test]:$P $(cut -d' ' -f1,2 "$srv/host_key.pub")" >"$keys/known_hosts"
git init -q --bare --initial-branch=main "$srv/repo.git"
git -c init.defaultBranch=main init -q "$TEST_TMP/seed"
echo "hello over ssh" >"$TEST_TMP/seed/README"
git -C "$TEST_TMP/seed" add README
git -C "$TEST_TMP/seed" -c user.name=t -c user.email=t@test commit -qm seed
git -C "$TEST_TMP/seed" push -q "$srv/repo.git" main
cat >"$srv/sshd_config" <<EOF
ListenAddress 127.0.0.1
Port $P
HostKey $srv/host_key
AuthorizedKeysFile $srv/authorized_keys
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PermitRootLogin prohibit-password
PidFile $srv/sshd.pid
LogLevel VERBOSE
Subsystem sftp internal-sftp
EOF
is_root && mkdir -p /run/sshd # privilege separation's directory, as root
"$SSHD" -D -e -f "$srv/sshd_config" 2>"$srv/sshd.log" &
cleanup_pids+=($!)
wait_port 127.0.0.1 "$P"
echo "127.0.0.1 git.test other.test" >"$hosts"

# The sandbox's ssh reads ~/.ssh from its passwd entry's home.
pw_home=$(getent passwd "$(id -u)" | cut -d: -f6)
mount_keys() {
    printf '[[mounts]]\nhost_path = "%s"\nguest_path = "%s/.ssh"\n' "$keys" "$pw_home" \
        >"$XDG_CONFIG_HOME/cordon/config.toml"
}
no_mounts() { : >"$XDG_CONFIG_HOME/cordon/config.toml"; }
# --memory 0: the sanitizer build's cordon-agent reserves more address space
# than RLIMIT_AS allows (a release build needs no such option).
AL=(--memory 0 --network allowlist --net-hosts-file "$hosts" --net-audit-log "$audit"
    --allow-host "git.test:$P" --allow-host "127.0.0.1:$P")
url="ssh://$me@git.test:$P$srv/repo.git"
connections() { grep -c "Connection from" "$srv/sshd.log"; }

mount_keys
cordon_run "$ws" "${AL[@]}" -- bash -c "echo \"\$GIT_SSH_COMMAND\"; cd /tmp && git clone -q '$url' r 2>&1 && cat r/README &&
    cd r && echo more >>README && git -c user.name=a -c user.email=a@test commit -qam 'from the sandbox' &&
    git push -q origin HEAD:main 2>&1 && echo pushed"
is "git's ssh command inside is ssh with cordon-agent's tunnel" "$(head -1 <<<"$out")" \
    "ssh -o ProxyCommand='/run/cordon/agent connect %h %p'"
like "git clone over ssh through the proxy (allowed host:port)" "$out" "hello over ssh"
like "git push over ssh through the proxy" "$out" "pushed"
is "... the commit is in the host's repository" "$(git -C "$srv/repo.git" log -1 --format=%s main)" \
    "from the sandbox"
like "the audit log has the allowed tunnel" "$(grep "git.test" "$audit" | tail -1)" \
    "\"host\":\"git.test\",\"port\":$P,.*\"decision\":\"allow\""

# Plain ssh, scp, sftp and rsync typed inside: the view's /etc/ssh/ssh_config
# (cordon's own, not the host's) sends them through the same tunnel. The
# host key is checked against the mounted known_hosts.
echo "from the host" >"$srv/file.txt"
cordon_run "$ws" "${AL[@]}" -- bash -c "grep -v '^#' /etc/ssh/ssh_config
    ssh -p $P $me@git.test 'echo ssh-ran-on-\$(hostname)' </dev/null 2>&1
    cd /tmp && scp -q -P $P $me@git.test:$srv/file.txt got.txt 2>&1 && cat got.txt
    echo 'up by scp' >up.txt && scp -q -P $P up.txt $me@git.test:$srv/up-scp.txt 2>&1 && echo scp-up-rc=\$?
    echo 'get $srv/file.txt sftp.txt' | sftp -q -b - -P $P $me@git.test >/dev/null 2>&1; cat sftp.txt
    if command -v rsync >/dev/null; then rsync -e 'ssh -p $P' up.txt $me@git.test:$srv/up-rsync.txt 2>&1 && echo rsync-up; else echo rsync-up; fi"
is "the view's /etc/ssh/ssh_config: every host through cordon-agent's tunnel" \
    "$(head -2 <<<"$out")" "$(printf 'Host *\n    ProxyCommand /run/cordon/agent connect %%h %%p')"
like "plain ssh HOST COMMAND inside reaches the server through the proxy" "$out" \
    "ssh-ran-on-$(hostname)"
like "scp from the server" "$out" "from the host"
is "scp to the server" "$(cat "$srv/up-scp.txt" 2>&1)" "up by scp"
like "sftp" "$out" "from the host.*from the host"
if command -v rsync >/dev/null; then
    is "rsync over ssh" "$(cat "$srv/up-rsync.txt" 2>&1)" "up by scp"
else
    skip "rsync over ssh" "rsync is not installed (scripts/bootstrap.sh --test)"
fi
like "the audit log has plain ssh's tunnels" "$(grep -c "\"host\":\"git.test\",\"port\":$P,.*allow" "$audit")" \
    "^([4-9]|[1-9][0-9])$"

before=$(connections)
cordon_run "$ws" "${AL[@]}" -- bash -c "ssh -p $P $me@other.test true </dev/null 2>&1; echo ssh=\$?
    ssh -p $((P + 1)) $me@git.test true </dev/null 2>&1; echo ssh=\$?
    scp -q -P $P $me@other.test:$srv/file.txt /tmp/x 2>&1; echo scp=\$?"
like "plain ssh to another host: refused with the proxy's reason" "$out" \
    "cordon's proxy refused other.test:$P: HTTP/1.1 403 Forbidden: cordon: network: denied: no allow_hosts rule matches other.test:$P"
like "... ssh fails (255)" "$out" "ssh=255"
like "plain ssh to another port: refused, naming the rule" "$out" \
    "denied: rule 'git.test:$P' allows port $P only, not $((P + 1))"
like "scp to another host: refused too" "$out" "scp=[1-9]"
is "... the server saw none of them" "$(connections)" "$before"

# The user inside may bypass the file: it bypasses nothing else. Without
# the proxy there is no route and no DNS.
cordon_run "$ws" "${AL[@]}" -- bash -c "ssh -o ProxyCommand=none -o ConnectTimeout=5 -p $P $me@git.test true </dev/null 2>&1; echo ssh=\$?
    ssh -o ProxyCommand=none -o ConnectTimeout=5 -p $P $me@127.0.0.1 true </dev/null 2>&1; echo ssh=\$?"
like "-o ProxyCommand=none: no name resolution inside" "$out" "Could not resolve hostname git.test"
like "... and the sandbox's own loopback is not the host's" "$out" "port $P: Connection refused"
is "... the server saw no connection" "$(connections)" "$before"

# Host keys are checked: without the mounted known_hosts ssh refuses the
# server (no prompt without a terminal), and a wrong key is refused.
no_mounts
cordon_run "$ws" "${AL[@]}" -- bash -c "ssh -p $P $me@git.test true </dev/null 2>&1; echo ssh=\$?"
like "no known_hosts inside: the host key is not accepted" "$out" "Host key verification failed"
like "... ssh fails" "$out" "ssh=255"
cp -a "$keys" "$TEST_TMP/badkeys"
ssh-keygen -q -t ed25519 -N '' -f "$TEST_TMP/other_host_key"
echo "[git.test]:$P $(cut -d' ' -f1,2 "$TEST_TMP/other_host_key.pub")" >"$TEST_TMP/badkeys/known_hosts"
printf '[[mounts]]\nhost_path = "%s"\nguest_path = "%s/.ssh"\n' "$TEST_TMP/badkeys" "$pw_home" \
    >"$XDG_CONFIG_HOME/cordon/config.toml"
cordon_run "$ws" "${AL[@]}" -- bash -c "ssh -p $P $me@git.test 'echo in' </dev/null 2>&1; echo ssh=\$?"
like "a host key that is not the known one is refused" "$out" "REMOTE HOST IDENTIFICATION HAS CHANGED"
like "... ssh fails" "$out" "ssh=255"
is "... nothing ran on the server" "$(grep -cx in <<<"$out")" "0"
mount_keys

before=$(connections)
cordon_run "$ws" "${AL[@]}" -- bash -c "cd /tmp && git clone -q 'ssh://$me@other.test:$P$srv/repo.git' r 2>&1; echo git=\$?"
like "another host: git clone fails" "$out" "git=128"
like "... ssh shows the proxy's reason" "$out" \
    "cordon-agent connect: cordon's proxy refused other.test:$P: HTTP/1.1 403 Forbidden: cordon: network: denied: no allow_hosts rule matches other.test:$P"
like "... cordon's stderr says it too" "$out" \
    "cordon: warning: network: http-connect other.test:$P refused: denied: no allow_hosts rule matches other.test:$P"
is "... the server saw no connection" "$(connections)" "$before"

Q=$((P + 1))
cordon_run "$ws" "${AL[@]}" -- bash -c "cd /tmp && git clone -q 'ssh://$me@git.test:$Q$srv/repo.git' r 2>&1; echo git=\$?"
like "another port: git clone fails" "$out" "git=128"
like "... naming the rule that allows another port" "$out" \
    "denied: rule 'git.test:$P' allows port $P only, not $Q"

cordon_run "$ws" --memory 0 --net-hosts-file "$hosts" -- bash -c "cd /tmp && git clone -q '$url' r 2>&1; echo git=\$?
    ssh -p $P $me@git.test true </dev/null 2>&1; echo ssh=\$?"
like "deny mode: git clone over ssh fails" "$out" "git=128"
like "deny mode: plain ssh is refused at once with the mode" "$out" \
    "refused git.test:$P: HTTP/1.1 403 Forbidden: cordon: network: denied: network.mode is \"deny\".*ssh=255"
like "... at once, with the mode and how to allow the host" "$out" \
    "cordon's proxy refused git.test:$P: HTTP/1.1 403 Forbidden: cordon: network: denied: network.mode is \"deny\""
is "... the server saw no connection" "$(connections)" "$before"

# The tunnel itself: 8 MiB to an echo server and back, the rest answered
# after the half-close (stdin's end).
E=$((P + 2))
$PY "$CORDON_SRC/tests/integration/net-servers.py" 127.0.0.1 $((P + 3)) "$E" x >/dev/null 2>&1 &
cleanup_pids+=($!)
wait_port 127.0.0.1 "$E"
cordon_run "$ws" "${AL[@]}" --allow-host "git.test:$E" --allow-host "127.0.0.1:$E" -- bash -c "head -c 8388608 /dev/urandom >/tmp/x
    /run/cordon/agent connect git.test $E </tmp/x | cmp - /tmp/x && echo same"
like "cordon-agent connect relays 8 MiB both ways" "$out" "same"
cordon_run "$ws" "${AL[@]}" -- bash -c "/run/cordon/agent connect 'git.test\r\nX-Injected: 1' $P; echo rc=\$?;
    /run/cordon/agent connect git.test 70000; echo rc=\$?; /run/cordon/agent connect \"\$(printf 'a%.0s' {1..300})\" $P; echo rc=\$?"
is "a host or port that could inject into the request head is refused before sending (125)" \
    "$(grep -c '^rc=125$' <<<"$out")" 3
like "... saying so" "$out" "not a host name or address and a port 1-65535; nothing was sent"

# The tool result's last line names the refusal, as for any other client.
out=$(cd "$ws" && PWD="$ws" "$CORDON" tool "${AL[@]}" bash \
    "{\"command\":\"cd /tmp && git clone -q ssh://$me@other.test:$P$srv/repo.git r; echo git=\$?\"}" 2>/dev/null </dev/null)
last=$($PY -c 'import json,sys; r=json.loads(sys.argv[1]); print("".join(c.get("text","") for c in r["content"]).rstrip("\n").split("\n")[-1])' "$out")
is "cordon tool: the result ends with cordon's line for the refused ssh" "$last" \
    "[cordon] network: other.test:$P refused: denied: no allow_hosts rule matches other.test:$P. To allow it: network.allow_hosts = [\"other.test\"] (cordon --allow-host other.test)"

# The attacker's hope: the user's own keys. ~/.ssh of the host user (here
# the test's HOME, and the passwd home) holds a key the server accepts; not
# mounted, it is not there inside and the server refuses.
mkdir -p "$HOME/.ssh"
cp "$keys/id_ed25519" "$keys/known_hosts" "$HOME/.ssh/"
no_mounts
cordon_run "$ws" "${AL[@]}" -- bash -c "ls -A \"\$HOME/.ssh\" '$pw_home/.ssh' 2>&1; cat '$pw_home/.ssh/id_ed25519' \"\$HOME/.ssh/id_ed25519\" 2>&1;
    cd /tmp && GIT_SSH_COMMAND=\"\$GIT_SSH_COMMAND -o StrictHostKeyChecking=no\" git clone -q '$url' r 2>&1; echo git=\$?"
unlike "without a mount, the user's private key is not inside" "$out" "BEGIN OPENSSH PRIVATE KEY"
like "... and the server refuses the clone (no key)" "$out" "Permission denied \(publickey\)"
like "... git fails" "$out" "git=128"

# A host's GIT_SSH_COMMAND (passed through) never replaces cordon's.
mount_keys
GIT_SSH_COMMAND="ssh -o ProxyCommand=none" cordon_run "$ws" "${AL[@]}" --env-mode passthrough -- bash -c 'echo "$GIT_SSH_COMMAND"'
out=$(grep -v '^cordon: warning: env.mode' <<<"$out")
is "the host's GIT_SSH_COMMAND does not reach inside" "$out" \
    "ssh -o ProxyCommand='/run/cordon/agent connect %h %p'"

# ---------------------------------------------- the vm backend
# The guest's proxy is the same host proxy behind the guest's 127.0.0.1:3128
# (virtio-serial), and /run/cordon/agent is the guest's /init: the same
# GIT_SSH_COMMAND works there.
if command -v qemu-system-x86_64 >/dev/null &&
    { [ -e /var/cache/cordon/vm/current/vmlinuz ] || [ -n "${CORDON_VM_DIR:-}" ]; }; then
    export XDG_RUNTIME_DIR="$TEST_TMP/runtime"
    mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"
    mount_keys
    echo "127.0.0.1 git.test other.test" >"$hosts"
    cordon_run "$ws" --backend vm "${AL[@]}" -- bash -c "cd /tmp && git clone -q '$url' r 2>&1 && cat r/README &&
        cd r && echo vm >>README && git -c user.name=a -c user.email=a@test commit -qam 'from the vm' &&
        git push -q origin HEAD:main 2>&1 && echo pushed;
        git clone -q 'ssh://$me@other.test:$P$srv/repo.git' o 2>&1; echo other=\$?
        ssh -p $P $me@git.test 'echo vm-ssh-ran' </dev/null 2>&1
        scp -q -P $P $me@git.test:$srv/file.txt vm.txt 2>&1 && cat vm.txt
        ssh -p $P $me@other.test true </dev/null 2>&1; echo vm-ssh=\$?"
    like "vm: git clone and push over ssh through the proxy" "$out" "hello over ssh.*pushed"
    is "vm: ... the commit is in the host's repository" "$(git -C "$srv/repo.git" log -1 --format=%s main)" \
        "from the vm"
    like "vm: another host is refused with the proxy's reason" "$out" \
        "cordon's proxy refused other.test:$P: HTTP/1.1 403 Forbidden: cordon: network: denied: no allow_hosts rule matches other.test:$P"
    like "vm: plain ssh and scp through the proxy (the guest's /etc/ssh/ssh_config)" "$out" \
        "vm-ssh-ran.*from the host"
    like "vm: plain ssh to another host is refused" "$out" \
        "cordon's proxy refused other.test:$P: HTTP/1.1 403 Forbidden.*vm-ssh=255"
else
    skip "vm: git over ssh through the proxy" "no qemu-system-x86_64 or guest kernel"
fi

# ---------------------------------------------- port 22, @github, in netns
if ! is_root || [ -n "${CORDON_TEST_UNPRIVILEGED:-}" ]; then
    skip "@github: git@github.com:... on port 22 in a test network namespace" "needs root (ip netns add)"
    tap_done
    exit 0
fi
cl=cordon-sshc-$$ sv=cordon-sshs-$$
if ! netns_pair "$cl" "$sv" veth-c veth-s; then
    skip "@github: git@github.com:... on port 22 in a test network namespace" "could not create them"
    tap_done
    exit 0
fi
sed -e 's/^ListenAddress .*/ListenAddress 198.51.100.2/' -e 's/^Port .*/Port 22/' \
    -e "s|^PidFile .*|PidFile $srv/sshd22.pid|" "$srv/sshd_config" >"$srv/sshd22_config"
ip netns exec "$sv" "$SSHD" -D -e -f "$srv/sshd22_config" 2>"$srv/sshd22.log" &
cleanup_pids+=($!)
wait_port 198.51.100.2 22 "$cl"
echo "198.51.100.2 github.com gist.github.com" >"$hosts"
echo "github.com $(cut -d' ' -f1,2 "$srv/host_key.pub")" >>"$keys/known_hosts"
gh_run() {
    out=$(set -o pipefail; cd "$ws" && PWD="$ws" ip netns exec "$cl" "$CORDON" run --memory 0 \
        --network allowlist --net-hosts-file "$hosts" --allow-host "$1" -- bash -c "$2" 2>&1 </dev/null |
        { grep -v '^cordon: warning: running as root without a pids cgroup' || true; })
}
gh_run @github "cd /tmp && git clone -q root@github.com:$srv/repo.git r 2>&1 && cat r/README"
like "@github: git clone root@github.com:PATH (port 22) through the proxy" "$out" "hello over ssh"
gh_run @github "cd /tmp && git clone -q root@gist.github.com:$srv/repo.git r 2>&1; echo git=\$?"
like "@github: gist.github.com:22 stays refused" "$out" "no allow_hosts rule matches gist.github.com:22"
gh_run @npm "cd /tmp && git clone -q root@github.com:$srv/repo.git r 2>&1; echo git=\$?"
like "@npm: github.com:22 is refused" "$out" "no allow_hosts rule matches github.com:22"

tap_done
