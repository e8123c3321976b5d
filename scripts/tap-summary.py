#!/usr/bin/env python3
"""Counts the TAP results of every meson test (subtests, not programs) of the
meson logs given (testlog.json files) and prints the failing ones, then the
closing line "N passed, N failed, N skipped". A test program that failed
without a single TAP line counts as one failure."""
import json
import re
import sys

passed = failed = skipped = 0
failures = []


def tests():
    """Every test of the meson logs named on the command line (a missing
    log, a run that never started, counts as a failure)."""
    for path in sys.argv[1:]:
        try:
            with open(path, encoding="utf-8", errors="replace") as log:
                for line in log:
                    yield json.loads(line)
        except OSError as e:
            yield {"name": path, "result": f"no log ({e.strerror})"}


for test in tests():
    name = test.get("name", "?")
    out = test.get("stdout") or ""
    seen = 0
    for tap in out.splitlines():
        m = re.match(r"^(not ok|ok)\b(.*)$", tap)
        if m:
            seen += 1
            if m.group(1) == "not ok" and "# TODO" not in tap:
                failed += 1
                failures.append(f"{name}: {tap}")
            elif re.search(r"#\s*SKIP", tap, re.I):
                skipped += 1
            else:
                passed += 1
        elif re.match(r"^1\.\.0\s*#\s*SKIP", tap, re.I):
            seen += 1
            skipped += 1
    if seen == 0 or (test.get("result") not in ("OK", "SKIP", "EXPECTEDFAIL") and
                     not any(f.startswith(name + ":") for f in failures)):
        failed += 1
        failures.append(f"{name}: {test.get('result')} (no TAP result for the failure)")
for f in failures:
    print("FAIL", f)
print(f"{passed} passed, {failed} failed, {skipped} skipped")
sys.exit(1 if failed else 0)
