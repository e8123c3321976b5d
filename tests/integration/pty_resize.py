"""Drives `cordon shell` on a real pty: checks the initial size, then resizes
the terminal (TIOCSWINSZ + SIGWINCH to cordon, as a terminal emulator does)
and checks that the shell inside sees the new size. Prints what it saw."""
import fcntl
import os
import pty
import select
import signal
import struct
import sys
import termios
import time

cordon, ws = sys.argv[1], sys.argv[2]


def set_size(fd, rows, cols):
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


pid, fd = pty.fork()
if pid == 0:
    os.chdir(ws)
    os.execv(cordon, [cordon, "shell"])
set_size(fd, 30, 90)
os.kill(pid, signal.SIGWINCH)
out = b""


def read_until(marker, timeout=10):
    global out
    deadline = time.time() + timeout
    while marker not in out and time.time() < deadline:
        r, _, _ = select.select([fd], [], [], 0.2)
        if r:
            try:
                out += os.read(fd, 4096)
            except OSError:
                break


time.sleep(0.5)
os.write(fd, b"echo size1 $(stty size)\n")
read_until(b"size1 30 90")
set_size(fd, 41, 123)
os.kill(pid, signal.SIGWINCH)
time.sleep(0.3)
os.write(fd, b"echo size2 $(stty size)\n")
read_until(b"size2 41 123")
os.write(fd, b"exit 4\n")
_, status = os.waitpid(pid, 0)
text = out.decode(errors="replace")
print("initial" if "size1 30 90" in text else "no-initial")
print("resized" if "size2 41 123" in text else "no-resize")
print("exit", os.waitstatus_to_exitcode(status))
