#!/usr/bin/env python3
"""Reads `go test -json` on stdin and prints what plain `go test` would.

scripts/test.sh runs go test with -json and pipes it through this: it
prints, as they come, each package's own lines (build errors, "ok pkg
1.2s", "FAIL pkg") and every failed test's output with its logs, and
drops the output of tests that passed or skipped (all of it with -v, as
go test -v does). At the end it writes to the file named by --summary
the 15 slowest top-level tests and each package's elapsed time. A test's
time is from its start (or its resumption, for a parallel one) to its end,
its parallel subtests included, which its own Elapsed leaves out.

Usage: go test -json ... | gotest-output.py [-v] --summary FILE
"""
import argparse
import json
import sys
from datetime import datetime

SLOWEST = 15
# test2json's framing lines: plain go test prints none of them.
FRAMING = ("=== RUN", "=== PAUSE", "=== CONT", "=== NAME")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-v", action="store_true", help="print every test's output, as go test -v")
    ap.add_argument("--summary", required=True, help="where to write the slowest tests and packages")
    args = ap.parse_args()

    # (package, top-level test) -> its output lines, as (test, line), not
    # printed yet, and the subtests that passed or skipped (not printed).
    held = {}
    began = {}  # (package, top-level test) -> when it started or resumed
    tests = []  # (elapsed, package, test, action) of top-level tests
    packages = []  # (elapsed, package, action)

    def emit(text):
        sys.stdout.write(text)
        sys.stdout.flush()

    def flush(key, failed):
        # A top-level test's output, its subtests' in the order it came,
        # less the framing and the subtests that passed.
        lines, passed = held.pop(key, ([], set()))
        if failed:
            emit("".join(out for test, out in lines if test not in passed and not out.startswith(FRAMING)))

    for line in sys.stdin:
        try:
            ev = json.loads(line)
        except ValueError:
            ev = None
        if not isinstance(ev, dict):
            emit(line)  # not an event: pass it on as it is
            continue
        action = ev.get("Action", "")
        pkg = ev.get("Package") or ev.get("ImportPath", "")
        test = ev.get("Test")
        out = ev.get("Output")
        finished = action in ("pass", "fail", "skip")
        if test is None:
            # The package's own lines. Before its FAIL: the output of its
            # tests that never finished (a panic, a timeout) or came after
            # their end (a race found late). A passing package shows only
            # its "ok" line, as in plain go test.
            if out is not None and out.startswith("FAIL"):
                for key in [k for k in held if k[0] == pkg]:
                    flush(key, True)
            if out is not None and (args.v or out != "PASS\n"):
                emit(out)
            if finished:
                packages.append((ev.get("Elapsed", 0.0), pkg, action))
                for key in [k for k in held if k[0] == pkg]:
                    flush(key, action == "fail")
            continue
        top = test.split("/")[0]
        if test == top and action in ("run", "cont") and "Time" in ev:
            began[(pkg, top)] = datetime.fromisoformat(ev["Time"])
        if out is not None:
            if args.v:
                emit(out)
            else:
                held.setdefault((pkg, top), ([], set()))[0].append((test, out))
        if not finished:
            continue
        if test != top:
            if action != "fail":
                held.setdefault((pkg, top), ([], set()))[1].add(test)
            continue
        flush((pkg, top), action == "fail")
        elapsed = ev.get("Elapsed", 0.0)
        if (pkg, top) in began and "Time" in ev:
            elapsed = max(elapsed, (datetime.fromisoformat(ev["Time"]) - began.pop((pkg, top))).total_seconds())
        tests.append((elapsed, pkg, test, action))

    for key in list(held):  # the stream ended mid-test: show what it said
        flush(key, True)

    with open(args.summary, "w") as f:
        if tests:
            f.write("== the %d slowest tests\n" % min(SLOWEST, len(tests)))
            for elapsed, pkg, test, action in sorted(tests, key=lambda t: -t[0])[:SLOWEST]:
                mark = "" if action == "pass" else "  (%s)" % action.upper()
                f.write("%9.2fs  %s  %s%s\n" % (elapsed, test, pkg, mark))
        if packages:
            f.write("== packages by elapsed time\n")
            for elapsed, pkg, action in sorted(packages, key=lambda p: -p[0]):
                mark = "" if action == "pass" else "  (%s)" % action.upper()
                f.write("%9.2fs  %s%s\n" % (elapsed, pkg, mark))


if __name__ == "__main__":
    main()
