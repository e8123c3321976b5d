#!/usr/bin/env bash
# The sandbox's init and its channel from the supervisor (`cordon-agent init
# --control`, src/agent/init.h), driven directly on the host by a stand-in
# supervisor: whatever arrives on fd 3 (unknown frames, an over-long
# request, a probe that cannot start, the supervisor leaving), init answers
# within its bounds, keeps reaping, and exits with the command's status.
# The probe itself (which runs only inside a sandbox, from
# /run/cordon/agent) is covered by tests/security/verify-running.sh.
. "$CORDON_SRC/tests/lib/tap.sh"
. "$CORDON_SRC/tests/lib/cordon.sh"

if [ -e /run/cordon/agent ]; then
    echo "1..0 # SKIP /run/cordon/agent exists on this host: the probe would start"
    exit 0
fi

out=$(
    /usr/bin/python3 - "$CORDON_AGENT" 2>&1 <<'EOF'
import array, os, socket, subprocess, sys, time

agent = sys.argv[1]

def start(cmd):
    sup, ini = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    p = subprocess.Popen([agent, "init", "--control", "--"] + cmd,
                         preexec_fn=lambda: os.dup2(ini.fileno(), 3), close_fds=False,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ini.close()
    sup.settimeout(10)
    return p, sup

def frames(sup, until=b"X"):
    got = []
    while True:
        data, anc, flags, _ = sup.recvmsg(20000, socket.CMSG_SPACE(4))
        fds = []
        for level, typ, d in anc:
            if level == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
                a = array.array("i"); a.frombytes(d); fds += list(a)
        if not data:
            return got
        got.append((data[:1], data[1:], fds))
        if data[:1] == b"S":
            sup.send(b"W")
        for fd in fds:
            os.close(fd)
        if data[:1] == until:
            return got

# 1. Unknown frames and a stray 'W' are ignored; an over-long request is
# refused with an answer; a probe that cannot start is reported with its
# error and status; the command's status is init's.
p, sup = start(["sh", "-c", "sleep 2; exit 5"])
sup.send(b"Zgarbage")
sup.send(b"W")
sup.send(b"B" + b"x" * 16000)
for _ in range(17):
    sup.send(b"R" + b"x" * 16000)
sup.send(b"G")
f = frames(sup)
print("too-long:", f[-1][0].decode(), f[-1][1].decode())
sup.send(b"B{}")
sup.send(b"G")
f = frames(sup)
kinds = "".join(k.decode() for k, _, _ in f)
output = b"".join(d for k, d, _ in f if k == b"O").decode()
print("kinds:", kinds)
print("S carries a pidfd:", any(k == b"S" and fds for k, _, fds in f))
print("end:", f[-1][1].decode())
print("output:", output.strip())
# A second request after an answer is served as well.
sup.send(b"B{}")
sup.send(b"G")
f = frames(sup)
print("again:", f[-1][1].decode())
print("status:", p.wait(timeout=10))

# 2. The supervisor leaves: init goes on and exits with the command's status.
p, sup = start(["sh", "-c", "sleep 1; exit 7"])
sup.close()
print("status without supervisor:", p.wait(timeout=10))

# 3. A signal to init reaches the command's group, as before.
p, sup = start(["sh", "-c", "sleep 30"])
time.sleep(0.5)
p.send_signal(15)
print("status after SIGTERM:", p.wait(timeout=10))
EOF
)
like "init: an over-long probe request is refused with an answer" "$out" \
    "too-long: X error: the probe's request is too long"
like "init: a probe that cannot start: S (the host may read it), its output, X" "$out" \
    "kinds: SO+X"
like "init: the S frame carries a pidfd" "$out" "S carries a pidfd: True"
like "init: the probe's end is its exit status (126: cannot exec)" "$out" "end: exit 126"
like "init: the probe's output is returned" "$out" \
    "output: cordon-init: exec /run/cordon/agent: No such file or directory"
like "init: a second request is served" "$out" "again: exit 126"
like "init: its exit status is the command's (5), probes or not" "$out" "status: 5"
like "init: without its supervisor, it goes on (7)" "$out" "status without supervisor: 7"
like "init: a signal reaches the command (143)" "$out" "status after SIGTERM: 143"
tap_done
