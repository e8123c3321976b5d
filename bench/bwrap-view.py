#!/usr/bin/env python3
"""bubblewrap arguments that build the view a cordon sandbox has.

bench/cold-start.sh compares `cordon run -- /bin/true` with bubblewrap
"given the same view" (issue 20). Rather than a hand-written list that drifts
from cordon's, the view is read from a sandbox: its /proc/self/mountinfo and
its top-level symbolic links. Each mount becomes the bubblewrap operation
that makes it:

  tmpfs                    --tmpfs (and --remount-ro at the end when ro)
  /dev's tmpfs             --dev (tmpfs, the six devices, devpts, shm dir);
                           the devices and devpts cordon binds into it are
                           what --dev makes, so they are not repeated
  a new proc               --proc (bubblewrap binds /proc/irq and /proc/bus
                           read-only itself, as cordon does)
  a bind (anything else)   --ro-bind / --bind / --dev-bind from the host path
                           found through the host's own mountinfo (same
                           device, root below the host mount's root)
  a new sysfs              left out, with its masks, and said on stderr:
                           bubblewrap can only bind the host's /sys, which
                           brings every mount below it (cgroups, debugfs);
                           leaving it out gives bubblewrap the lighter view

Usage: bwrap-view.py MOUNTINFO LINKS > ARGS (NUL-separated)
  MOUNTINFO  the sandbox's /proc/self/mountinfo
  LINKS      lines "PATH TARGET", the sandbox's top-level symbolic links
"""
import sys

# What bubblewrap's --proc binds read-only by itself: /irq and /bus (and
# /sysrq-trigger, which cordon leaves to its permissions). It would cover
# /sys too, but only where the sandbox could write to it, which a user
# namespace cannot: cordon's read-only /proc/sys is an operation of its own.
BWRAP_PROC_RO = {"/irq", "/bus", "/sysrq-trigger"}


def unescape(field):
    """mountinfo escapes space, tab, newline and backslash as \\ooo."""
    out, i = bytearray(), 0
    raw = field.encode()
    while i < len(raw):
        if raw[i] == 0x5C and raw[i + 1:i + 4].isdigit() and len(raw[i + 1:i + 4]) == 3:
            out.append(int(raw[i + 1:i + 4], 8))
            i += 4
        else:
            out.append(raw[i])
            i += 1
    return out.decode(errors="surrogateescape")


def parse(path):
    mounts = []
    with open(path) as f:
        for line in f:
            fields = line.split()
            sep = fields.index("-")
            mounts.append({
                "dev": fields[2],
                "root": unescape(fields[3]),
                "mp": unescape(fields[4]),
                "ro": "ro" in fields[5].split(","),
                "fstype": fields[sep + 1],
            })
    return mounts


def under(path, top):
    return path == top or path.startswith(top.rstrip("/") + "/")


def host_path(m, host):
    """The host path a sandbox bind mount shows: a host mount of the same
    device whose root holds the bind's root, longest root first."""
    best = None
    for h in host:
        if h["dev"] == m["dev"] and under(m["root"], h["root"]):
            if best is None or len(h["root"]) > len(best["root"]):
                best = h
    if best is None:
        return None
    rest = m["root"][len(best["root"].rstrip("/")):]
    return (best["mp"].rstrip("/") + rest) or "/"


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: bwrap-view.py MOUNTINFO LINKS")
    view = parse(sys.argv[1])
    host = parse("/proc/self/mountinfo")
    args, last, left_out = [], [], []
    with open(sys.argv[2]) as f:
        for line in f:
            if line.strip():
                link, target = line.rstrip("\n").split(" ", 1)
                args += ["--symlink", target, link]
    dev_top = next((m["mp"] for m in view if m["mp"] == "/dev" and m["fstype"] == "tmpfs"), None)
    sys_tops = [m["mp"] for m in view if m["fstype"] == "sysfs"]
    for m in view:
        mp, fstype = m["mp"], m["fstype"]
        if any(under(mp, s) for s in sys_tops):
            left_out.append(mp)
            continue
        if mp == "/":
            if m["ro"]:
                last += ["--remount-ro", "/"]
            continue
        if dev_top and under(mp, dev_top) and mp != dev_top and fstype in ("devtmpfs", "devpts"):
            continue  # made by --dev
        if mp == dev_top:
            args += ["--dev", mp]
        elif fstype == "tmpfs":
            args += ["--tmpfs", mp]
        elif fstype == "proc" and m["root"] == "/":
            args += ["--proc", mp]
            continue
        elif fstype == "proc":
            if m["root"] in BWRAP_PROC_RO:
                continue
            args += ["--ro-bind", "/proc" + m["root"], mp]
            continue
        else:
            src = host_path(m, host)
            if src is None:
                sys.exit(f"bwrap-view: no host path for the mount at {mp}")
            kind = "--dev-bind" if fstype == "devtmpfs" and not m["ro"] else (
                "--ro-bind" if m["ro"] else "--bind")
            args += [kind, src, mp]
            continue
        if m["ro"]:
            last += ["--remount-ro", mp]
    if left_out:
        print("bwrap-view: left out for bubblewrap: " + " ".join(left_out), file=sys.stderr)
    # Read-only last, deepest first, so nothing is remounted read-only
    # before what is mounted below it.
    pairs = sorted(zip(last[1::2], last[0::2]), key=lambda p: -len(p[0].rstrip("/").split("/")))
    for mp, op in pairs:
        args += [op, mp]
    sys.stdout.write("".join(a + "\0" for a in args))


if __name__ == "__main__":
    main()
