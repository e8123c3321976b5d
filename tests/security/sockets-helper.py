#!/usr/bin/env python3
"""Both sides of tests/security/sockets.sh.

  listen PATH SENTINEL stream|dgram   (host) a listener that creates SENTINEL
                                      as soon as anything reaches it; prints
                                      "ready" once bound
  try PATH stream|dgram-connect|sendto|sendmsg   (sandbox) one attempt;
                                      prints OK or the errno's name
  own DIR                             (sandbox) the sandbox's own servers and
                                      clients; prints one line per check
"""
import array
import errno
import os
import socket
import sys
import threading


def name(e):
    return errno.errorcode.get(e.errno, str(e.errno))


def listen(path, sentinel, kind):
    t = socket.SOCK_STREAM if kind == "stream" else socket.SOCK_DGRAM
    s = socket.socket(socket.AF_UNIX, t)
    s.bind(path)
    if t == socket.SOCK_STREAM:
        s.listen(8)
    print("ready", flush=True)
    while True:
        if t == socket.SOCK_STREAM:
            c, _ = s.accept()
            open(sentinel, "w").write("connected\n")
            c.settimeout(2)
            try:
                c.recv(16)
            except OSError:
                pass
            c.close()
        else:
            s.recvfrom(4096)
            open(sentinel, "w").write("received\n")


def attempt(path, kind):
    try:
        if kind == "stream":
            c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            c.connect(path)
            c.send(b"hello")
        elif kind == "dgram-connect":
            c = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            c.connect(path)
            c.send(b"hello")
        elif kind == "sendto":
            c = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            c.sendto(b"hello", path)
        elif kind == "procfd":
            fd = os.open(path, os.O_PATH)
            c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            c.connect(f"/proc/self/fd/{fd}")
            c.send(b"hello")
        elif kind == "sendmsg":
            c = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            c.sendmsg([b"hel", b"lo"], [], 0, path)
        print("OK")
    except OSError as e:
        print(name(e))


def check(label, fn):
    try:
        got = fn()
        print(f"{label}: {'ok' if got else 'WRONG'}")
    except OSError as e:
        print(f"{label}: {name(e)}")


def own(d):
    # stream, by relative and by absolute path, from a sub-directory too
    os.makedirs(os.path.join(d, "sub"), exist_ok=True)
    path = os.path.join(d, "sub", "own.sock")
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(path)
    srv.listen(4)

    def stream(p):
        c = socket.socket(socket.AF_UNIX)
        c.connect(p)
        a, _ = srv.accept()
        c.sendall(b"ping")
        return a.recv(4) == b"ping"

    check("own stream, absolute path", lambda: stream(path))
    os.chdir(d)
    check("own stream, relative path", lambda: stream("sub/own.sock"))
    os.chdir(os.path.join(d, "sub"))
    check("own stream, ../ path", lambda: stream("../sub/own.sock"))
    os.symlink(path, os.path.join(d, "own-link.sock"))
    check("own stream, through a symlink", lambda: stream(os.path.join(d, "own-link.sock")))
    pfd = os.open(path, os.O_PATH)
    check("own stream, through /proc/self/fd/N", lambda: stream(f"/proc/self/fd/{pfd}"))

    # datagram: sendto, connect+send, sendmsg with an address
    dpath = "/tmp/own-dgram.sock"
    dsrv = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    dsrv.bind(dpath)
    cl = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    check("own datagram, sendto", lambda: cl.sendto(b"d1", dpath) == 2 and dsrv.recv(9) == b"d1")
    check("own datagram, sendmsg with an address",
          lambda: cl.sendmsg([b"d", b"2"], [], 0, dpath) == 2 and dsrv.recv(9) == b"d2")
    c2 = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    c2.connect(dpath)
    check("own datagram, connect and send", lambda: c2.send(b"d3") == 2 and dsrv.recv(9) == b"d3")

    # a descriptor passed over a unix socket (SCM_RIGHTS through sendmsg)
    a, b = socket.socketpair()
    r, w = os.pipe()
    os.write(w, b"passed")

    def pass_fd():
        a.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [r]))])
        msg, anc, _, _ = b.recvmsg(1, socket.CMSG_LEN(4))
        fd = array.array("i", anc[0][2])[0]
        return msg == b"x" and os.read(fd, 6) == b"passed"

    check("own socketpair, SCM_RIGHTS", pass_fd)

    # the guard performs the call but lends none of its privileges:
    # forged credentials are refused as they are to the caller itself
    fa, fb = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    fb.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
    import struct

    def forged():
        try:
            fa.sendmsg([b"c"], [(socket.SOL_SOCKET, socket.SCM_CREDENTIALS, struct.pack("iII", 1, os.getuid(), os.getgid()))])
            return False
        except PermissionError:
            return True

    check("forged SCM_CREDENTIALS of pid 1 refused", forged)

    # abstract names are the network namespace's own
    ab = socket.socket(socket.AF_UNIX)
    ab.bind("\0cordon-test-abstract")
    ab.listen(1)
    check("own abstract socket", lambda: socket.socket(socket.AF_UNIX).connect("\0cordon-test-abstract") is None)

    # TCP on loopback, blocking and non-blocking connects (performed by the guard)
    t = socket.socket(socket.AF_INET)
    t.bind(("127.0.0.1", 0))
    t.listen(4)
    port = t.getsockname()[1]

    def tcp():
        c = socket.create_connection(("127.0.0.1", port), timeout=5)
        s, _ = t.accept()
        c.sendall(b"tcp")
        return s.recv(3) == b"tcp"

    check("loopback TCP", tcp)

    def tcp_nonblocking():
        c = socket.socket(socket.AF_INET)
        c.setblocking(False)
        r = c.connect_ex(("127.0.0.1", port))
        return r in (0, errno.EINPROGRESS)

    check("loopback TCP, non-blocking connect", tcp_nonblocking)

    # under a signal timer faster than the guard answers, every sendmsg
    # goes through exactly once (an interrupted call restarted after the
    # guard had performed it would duplicate its data, or never finish)
    def under_timer():
        import signal
        a, b = socket.socketpair()
        n = 3000
        got = bytearray()

        def read_all():
            while len(got) < n * 8:
                d = b.recv(65536)
                if not d:
                    break
                got.extend(d)

        r = threading.Thread(target=read_all)
        r.start()

        def give_up():
            print("sendmsg under a fast signal timer, each message once: TIMEOUT", flush=True)
            os._exit(3)

        watchdog = threading.Timer(30, give_up)
        watchdog.daemon = True
        watchdog.start()
        signal.signal(signal.SIGALRM, lambda *x: None)
        signal.setitimer(signal.ITIMER_REAL, 0.00005, 0.00005)
        try:
            for i in range(n):
                a.sendmsg([i.to_bytes(8, "little")])
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        r.join(10)
        watchdog.cancel()
        vals = [int.from_bytes(got[i:i + 8], "little") for i in range(0, len(got), 8)]
        return vals == list(range(n))

    check("sendmsg under a fast signal timer, each message once", under_timer)

    # a blocking connect that waits (backlog full) does not stall others
    full = socket.socket(socket.AF_UNIX)
    full.bind("/tmp/full.sock")
    full.listen(0)
    held = []
    for _ in range(3):
        c = socket.socket(socket.AF_UNIX)
        c.setblocking(False)
        try:
            c.connect("/tmp/full.sock")
        except OSError:
            pass
        held.append(c)
    waiter = socket.socket(socket.AF_UNIX)
    done = threading.Event()

    def wait_connect():
        try:
            waiter.connect("/tmp/full.sock")
        except OSError:
            pass
        done.set()

    threading.Thread(target=wait_connect, daemon=True).start()
    check("a waiting connect does not block the others", lambda: stream(path))
    full.accept()
    check("the waiting connect completes once accepted", lambda: done.wait(5))


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "listen":
        listen(sys.argv[2], sys.argv[3], sys.argv[4])
    elif cmd == "try":
        attempt(sys.argv[2], sys.argv[3])
    elif cmd == "own":
        own(sys.argv[2])
