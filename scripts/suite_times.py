"""Where the suite's time goes: a pytest junit XML's test time added up by test file.

    python scripts/suite_times.py build/artifacts/suite.xml [--top 15]

CI prints it after the suite phase (.ci/run), so that each run shows which files to make
faster before its budget is passed, not only the slowest single tests."""

from __future__ import annotations

import argparse
import collections
import xml.etree.ElementTree as ET


def by_file(path: str) -> list[tuple[str, float, int]]:
    """(file, seconds, tests) for each test file, the slowest first. A test's time is its
    setup, call and teardown (pytest's junit default)."""
    seconds: collections.Counter[str] = collections.Counter()
    counts: collections.Counter[str] = collections.Counter()
    for case in ET.parse(path).getroot().iter("testcase"):
        name = case.get("classname", "").split(".")
        # "tests.execution.test_abuse" or "tests.execution.test_abuse.TestClass"
        cut = next((i for i, part in enumerate(name) if part.startswith("test_")), len(name) - 1)
        where = "/".join(name[: cut + 1]) + ".py"
        seconds[where] += float(case.get("time") or 0)
        counts[where] += 1
    return sorted(
        ((f, s, counts[f]) for f, s in seconds.items()), key=lambda row: row[1], reverse=True
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("xml")
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    rows = by_file(args.xml)
    total = sum(s for _, s, _ in rows)
    shown = min(args.top, len(rows))
    print(f"suite time by file (the slowest {shown} of {len(rows)}; {total:.0f} s in all)")
    for where, spent, tests in rows[: args.top]:
        print(f"{spent:8.1f} s {spent / total:6.1%} {tests:5d} tests  {where}")


if __name__ == "__main__":
    main()
