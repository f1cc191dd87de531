"""`hazmat polygon`: a Polygon problem package and submissions as batch tasks, one JSON Lines
line per submission (grade/polygon.py), for `hazmat batch`. Nothing runs."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

__all__ = ["add"]


def add(sub: Any) -> None:
    polygon = sub.add_parser(
        "polygon",
        help="make batch tasks of a Polygon problem package and submissions",
        description=(
            "Write one task line (docs/batch.md) per SUBMISSION: the package's tests, groups "
            "and points, limits and testlib checker, for `hazmat batch`. PACKAGE is the "
            "folder holding problem.xml, or Polygon's .zip of it, with its tests generated "
            "(the full package). Nothing runs."
        ),
    )
    polygon.add_argument(
        "package",
        type=Path,
        metavar="PACKAGE",
        help="the package: the folder holding problem.xml, or Polygon's .zip of it",
    )
    polygon.add_argument(
        "submissions",
        type=Path,
        nargs="+",
        metavar="SUBMISSION",
        help="a submission's source file; each makes one task, its id the problem's short "
        "name and the file's name",
    )
    polygon.add_argument(
        "--language", help="the submissions' language (default: from each file's extension)"
    )
    polygon.add_argument("-o", "--output", type=Path, help="write the tasks here (default: stdout)")
    polygon.set_defaults(handler=_polygon)


def _polygon(args: argparse.Namespace) -> int:
    from hazmat._exceptions import InputError
    from hazmat.grade.polygon import read_problem, task_for

    problem = read_problem(args.package)
    lines = [
        json.dumps(task_for(problem, path, args.language), ensure_ascii=False) + "\n"
        for path in args.submissions
    ]
    if args.output is None:
        sys.stdout.writelines(lines)
    else:
        try:
            args.output.write_text("".join(lines), encoding="utf-8")
        except OSError as exc:
            raise InputError(f"cannot write {args.output}: {exc.strerror or exc}") from None
    groups = f", {len(problem.groups)} groups" if problem.groups else ""
    checker = "a testlib checker" if problem.comparator else "no checker (whitespace)"
    if problem.interactor is not None:
        checker = f"an interactor and {checker}"
    print(
        f"hazmat: {len(lines)} tasks of {problem.name}: {len(problem.tests)} tests{groups}, "
        f"{checker}",
        file=sys.stderr,
    )
    return 0
