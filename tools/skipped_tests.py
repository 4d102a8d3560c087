#!/usr/bin/env python3
"""Lists every skipped test of the trees tools/test ran, with its reason.

A skip passes silently otherwise: ctest counts a whole program that skipped
(SKIP_RETURN_CODE, SKIP_REGULAR_EXPRESSION) among the passed ones in its
log (LastTest.log says "Test Passed."), and the tests skipped inside a
program that passed (GTEST_SKIP, unittest's skipTest) only show in its
output. The JUnit file that `ctest --output-junit junit.xml` writes holds
both: each test's status and its whole output (with
--test-output-size-passed large enough). What is read:

    ctest's <skipped message="...">       the program skipped; reason: its last output line
    [  SKIPPED ] Suite.Name: reason (at)  tests/common/skip_report.cpp, in every GoogleTest program
    name (...) ... skipped 'reason'       Python unittest at verbosity 2

    tools/skipped_tests.py build/junit.xml build-asan/junit.xml ...
    tools/skipped_tests.py --self-test    show that each kind of skip is found

Prints one line per skipped test, `tree: ctest test: test: reason`; a file
that is not there (a stage that did not run) is named and passed over.
Always exits 0 unless the self-test fails: a skip is reported, not failed.
"""
import argparse
import pathlib
import re
import sys
import tempfile
import xml.etree.ElementTree as ET

# Colour codes, as a terminal gets them and as ctest writes them in XML.
ANSI = re.compile(r"(?:\x1b|\[NON-XML-CHAR-0x1B\])\[[0-9;]*m")
GTEST_SKIP = re.compile(r"^\[  SKIPPED \] (\S+\.\S+): (.*)$")
PY_START = re.compile(r"^(test\w*) \(([^)]*)\) \.\.\.")
PY_SKIP = re.compile(r"(?:^| \.\.\. )skipped '(.*)'$")


def skips_in_output(output):
    """(test, reason) for each test skipped inside a program's output."""
    found = []
    python_test = None
    for line in ANSI.sub("", output).splitlines():
        line = line.rstrip()
        gtest = GTEST_SKIP.match(line)
        if gtest:
            # The reason without the SCOPED_TRACE lines GoogleTest appends.
            reason = re.sub(r" Google Test trace: .*?(?= \(\S+:\d+\)$)", "", gtest.group(2))
            found.append((gtest.group(1), reason))
            continue
        start = PY_START.match(line)
        if start:
            # (__main__.Class.test) from Python 3.11, (__main__.Class) before.
            owner = [p for p in start.group(2).split(".") if p not in ("__main__", start.group(1))]
            python_test = ".".join(owner[-1:] + [start.group(1)])
        skip = PY_SKIP.search(line)
        if skip and (start or python_test):
            found.append((python_test, skip.group(1)))
            python_test = None
    # Each rank of an MPI program prints its own line (naming its rank):
    # the first is enough.
    return list({test: (test, reason) for test, reason in reversed(found)}.values())[::-1]


def skips_in_junit(path):
    """(ctest test, test, reason) for each skip in one tree's JUnit file."""
    found = []
    for case in ET.parse(path).getroot().iter("testcase"):
        name = case.get("name")
        output = case.findtext("system-out") or ""
        skipped = case.find("skipped")
        if skipped is not None:
            lines = [l for l in ANSI.sub("", output).splitlines() if l.strip()]
            reason = lines[-1].strip() if lines else "(no output)"
            found.append((name, "(the whole program)", f"{reason} [{skipped.get('message')}]"))
            continue
        found.extend((name, test, reason) for test, reason in skips_in_output(output))
    return found


def report(paths):
    lines = []
    for path in map(pathlib.Path, paths):
        if not path.exists():
            print(f"== skipped tests: {path} is not there (its tests did not run)")
            continue
        tree = path.parent.name
        lines += [f"{tree}: {ctest}: {test}: {reason}" for ctest, test, reason in skips_in_junit(path)]
    print(f"== skipped tests: {len(lines)}")
    for line in lines:
        print(f"  {line}")
    return lines


def self_test():
    """A JUnit file with one skip of each kind, and passes that look alike."""
    junit = """<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="x" tests="4">
  <testcase name="device_tests" status="notrun">
    <skipped message="SKIP_RETURN_CODE=77"/>
    <system-out>no CUDA device on this machine; skipped
</system-out>
  </testcase>
  <testcase name="ops_tests" status="run"><system-out>Running main()
[NON-XML-CHAR-0x1B][0;32m[  SKIPPED ] [NON-XML-CHAR-0x1B][mBackendOps.Cuda: no CUDA device Google Test trace: ../tests/kernels/a.cpp:160: seed 1 (../tests/kernels/a.cpp:164)
[  SKIPPED ] BackendOps.Cuda: no CUDA device on rank 1 (../tests/kernels/a.cpp:164)
[  PASSED  ] 3 tests.
[  SKIPPED ] 1 test.
</system-out></testcase>
  <testcase name="gateway_streams" status="run"><system-out>test_a (__main__.Streams.test_a) ... ok
test_chat_page (__main__.ChatPage) ... skipped 'chromium is not installed'
test_b (__main__.Streams.test_b) ... server said: something skipped 'here'
ok
test_c (__main__.Streams.test_c) ... a server's log line
skipped 'too slow under ASan'
OK (skipped=2)
</system-out></testcase>
  <testcase name="passes" status="run"><system-out>[  PASSED  ] 9 tests.
</system-out></testcase>
</testsuite>
"""
    want = [
        ("device_tests", "(the whole program)",
         "no CUDA device on this machine; skipped [SKIP_RETURN_CODE=77]"),
        ("ops_tests", "BackendOps.Cuda", "no CUDA device (../tests/kernels/a.cpp:164)"),
        ("gateway_streams", "ChatPage.test_chat_page", "chromium is not installed"),
        ("gateway_streams", "Streams.test_c", "too slow under ASan"),
    ]
    with tempfile.TemporaryDirectory() as scratch:
        path = pathlib.Path(scratch) / "junit.xml"
        path.write_text(junit)
        got = skips_in_junit(path)
    if got != want:
        print(f"self-test: found {got}\n  wanted {want}", file=sys.stderr)
        return 1
    print(f"skipped_tests self-test: {len(want)} skips found, none among the passes")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("junit", nargs="*", help="JUnit files of ctest runs")
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    report(args.junit)
    return 0


if __name__ == "__main__":
    sys.exit(main())
