#!/usr/bin/env python3
"""Prints the slowest tests of a nextest JUnit report, then the run's closing line.

Usage: slowest-tests.py JUNIT_XML [COUNT]

`make test` calls it after `cargo nextest run --profile ci`, so anyone sees where the
minutes go (issue 31). The last line is the plain closing line CI reads:
`tests: N passed, N failed, N skipped`.
"""

import sys
import xml.etree.ElementTree as ET


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    path = sys.argv[1]
    try:
        count = int(sys.argv[2]) if len(sys.argv) > 2 else 15
    except ValueError:
        count = -1
    if count < 1:
        print(f"slowest-tests: COUNT must be a whole number of at least 1, not {sys.argv[2]!r}",
              file=sys.stderr)
        return 2
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as error:
        print(f"slowest-tests: cannot read the JUnit report {path}: {error}", file=sys.stderr)
        return 1
    cases = []
    passed = failed = skipped = flaky = 0
    for case in root.iter("testcase"):
        suite = case.get("classname", "")
        name = case.get("name", "")
        seconds = float(case.get("time", "0") or 0)
        if case.find("skipped") is not None:
            skipped += 1
            continue
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
        else:
            passed += 1
            if case.find("flakyFailure") is not None or case.find("flakyError") is not None:
                flaky += 1
        cases.append((seconds, suite, name))
    cases.sort(reverse=True)
    total = sum(seconds for seconds, _, _ in cases)
    print(f"\nThe {min(count, len(cases))} slowest of {len(cases)} tests "
          f"({total / 60:.1f} test-minutes in all):")
    for seconds, suite, name in cases[:count]:
        binary = suite.split("::")[-1] if suite else ""
        print(f"  {seconds:8.1f} s  {binary} {name}")
    if flaky:
        print(f"  ({flaky} passed only when retried: see FLAKY in the run's output)")
    # nextest's JUnit report leaves ignored tests out, so `skipped` counts only those it
    # names; nextest's own summary line above gives the whole count.
    print(f"tests: {passed} passed, {failed} failed, {skipped} skipped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
