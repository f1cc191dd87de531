"""What a judge needs beyond expected output, on the real engine: subtasks with points and a
testlib checker (C++, testlib.h from the gcc image) through `Sandbox.map` under runc and
gVisor, interactive problems (a submission and an interactor joined) likewise, and the judging
example set, a testlib interactor in C++ and a Polygon package (`hazmat polygon`) through
`hazmat batch`. (The logic alone:
tests/grade/test_subtasks.py; through the service: tests/server/test_batches_http.py; through
a cluster: tests/cluster/test_worker.py.)"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from hazmat import Sandbox
from hazmat.backends.container.engine import Engine
from hazmat.backends.docker.driver import DockerBackend
from hazmat.grade.schema import RESULT_SCHEMA
from hazmat.testing import as_asked

pytestmark = pytest.mark.docker

GRADING = Path(__file__).parents[2] / "examples" / "grading"
EXAMPLES = GRADING / "judging.jsonl"
POLYGON = GRADING / "polygon" / "triangle"
HAZMAT = [sys.executable, "-m", "hazmat"]
RESULT = Draft202012Validator(RESULT_SCHEMA)

# right: the answer; one off: half the test (quitp); anything else wrong
CHECKER = r"""#include "testlib.h"
int main(int argc, char* argv[]) {
    registerTestlibCmd(argc, argv);
    long long want = ans.readLong(), got = ouf.readLong();
    if (got == want) quitf(_ok, "%lld", got);
    if (got == want - 1 || got == want + 1) quitp(0.5, "one off: %lld", got);
    quitf(_wa, "expected %lld, found %lld", want, got);
}
"""
# twice its input, but for 3 (one off) and 4 (wrong)
DOUBLER = "n = int(input())\nprint(2 * n + {3: 1, 4: 5}.get(n, 0))\n"


# what its compiler was told: -DONLINE_JUDGE, and the C standard
JUDGED_C = r"""#include <stdio.h>
int main(void) {
#ifdef ONLINE_JUDGE
    puts("judge");
#else
    puts("local");
#endif
    printf("%ld\n", __STDC_VERSION__);
    return 0;
}
"""

# the guessing game's interactor in C++, with testlib.h (registerInteraction)
INTERACTOR = (GRADING / "guess-interactor.cpp").read_text()


def guessing(task_id: str, code: str, *secrets: int, interactor: str = "") -> dict[str, object]:
    """A task of the guessing game, judged by the example set's Python interactor (or
    `interactor`, in C++)."""
    lines = EXAMPLES.read_text().splitlines()
    example = json.loads(next(line for line in lines if '"guess-python-right"' in line))
    judge = {"code": interactor} if interactor else example["interactor"]
    return {
        "id": task_id,
        "language": "python",
        "code": code,
        "timeout": 2,
        "interactor": judge,
        "tests": [{"stdin": f"{n}\n"} for n in secrets],
    }


BISECT = (
    "lo, hi = 1, 10**9\nwhile True:\n    mid = (lo + hi) // 2\n    print('?', mid, flush=True)\n"
    "    said = input()\n    if said == '=':\n        print('!', mid, flush=True)\n        break\n"
    "    lo, hi = (lo, mid - 1) if said == '<' else (mid + 1, hi)\n"
)


def cases(*numbers: int, group: str | None = None) -> list[dict[str, object]]:
    where = {} if group is None else {"group": group}
    return [{"stdin": f"{n}\n", "expected_stdout": f"{2 * n}\n", **where} for n in numbers]


@pytest.mark.matrix
def test_subtasks_and_a_testlib_checker_through_sandbox_map(engine: Engine, runtime: str) -> None:
    grouped = {
        "id": "grouped",
        "language": "python",
        "code": DOUBLER,
        "timeout": 5,
        "groups": [
            {"name": "easy", "points": 30},
            {"name": "hard", "points": 40, "after": ["easy"]},
            {"name": "harder", "points": 10, "after": ["hard"]},
            {"name": "partial", "points": 20, "scoring": "each"},
        ],
        "tests": cases(1, 2, group="easy")
        + cases(4, 5, group="hard")
        + cases(6, group="harder")
        + cases(7, 4, group="partial"),
    }
    checker = {"name": "testlib", "code": CHECKER}
    judged = {
        "id": "judged",
        "language": "python",
        "code": DOUBLER,
        "timeout": 5,
        "comparator": checker,
        "tests": cases(1, 3, 4),
    }
    right = {**judged, "id": "right", "code": "print(2 * int(input()))"}
    # the same source, with and without flags: two builds, never one shared by the cache
    plain = {"id": "plain", "language": "c", "code": JUDGED_C, "timeout": 5,
             "tests": [{"stdin": "", "expected_stdout": "local\n201710\n"}]}  # fmt: skip
    flagged = {**plain, "id": "flagged", "build_flags": {"c": ["-DONLINE_JUDGE", "-std=c11"]},
               "tests": [{"stdin": "", "expected_stdout": "judge\n201112\n"}]}  # fmt: skip
    interactive = [
        guessing("bisect", BISECT, 1, 999_999_999),
        guessing("blurt", "print('! 5')\n", 7),  # a wrong answer at once
        guessing("flood", "while True:\n    print('? 1' * 1000)\n", 7),
    ]
    with Sandbox(as_asked(), backend=DockerBackend(engine)) as sandbox:
        # one at a time: the second task's program is the first's build (the same source),
        # the third's checker the second's
        found = sandbox.map(
            [grouped, judged, right, plain, flagged], jobs=1, trust="unknown", runtime=runtime
        )
        results = {r.id: r.to_dict() for r in found}
        hits = sandbox.builds.hits
        found = sandbox.map(interactive, jobs=2, trust="unknown", runtime=runtime)
        results.update({r.id: r.to_dict() for r in found})
    for line in results.values():
        assert not list(RESULT.iter_errors(line)), line
    line = results["grouped"]
    assert [t["verdict"] for t in line["tests"]] == [
        "accepted",
        "accepted",
        "wrong_answer",
        "skipped",  # the rest of a failed all-or-nothing group
        "skipped",  # a group after one that failed
        "accepted",
        "wrong_answer",
    ]
    assert [(g["name"], g["points"]) for g in line["groups"]] == [
        ("easy", 30),
        ("hard", 0),
        ("harder", 0),
        ("partial", 10),
    ]
    assert (line["points"], line["score"], line["verdict"]) == (40, 0.4, "wrong_answer")
    line = results["judged"]
    assert [(t["verdict"], t["score"]) for t in line["tests"]] == [
        ("accepted", 1),
        ("partially_correct", 0.5),
        ("wrong_answer", 0),
    ]
    assert line["tests"][1]["message"] == "partly right (0.5 of the test): points 0.5 one off: 7"
    assert line["tests"][2]["message"] == "wrong answer expected 8, found 13"
    assert line["score"] == 0.5
    assert results["right"]["verdict"] == "accepted"
    assert hits == 2  # not the flagged build: its flags are part of what a build is kept by
    assert results["plain"]["verdict"] == "accepted" and "build_flags" not in results["plain"]
    assert results["flagged"]["verdict"] == "accepted", results["flagged"]
    assert results["flagged"]["build_flags"] == ["-DONLINE_JUDGE", "-std=c11"]
    # an interactive problem: the two programs joined, each in its own sandbox
    assert [t["verdict"] for t in results["bisect"]["tests"]] == ["accepted", "accepted"]
    blurt = results["blurt"]["tests"][0]
    assert (blurt["verdict"], blurt["message"]) == (
        "wrong_answer",
        "wrong answer 5 is not the number",
    )
    assert blurt["transcript"] == [{"from": "program", "text": "! 5\n"}]
    assert results["flood"]["verdict"] == "output_limit"
    for line in results.values():
        assert not list(RESULT.iter_errors(line)), line


def test_the_judging_examples_and_a_polygon_package_are_graded_right(tmp_path: Path) -> None:
    """Several right answers judged by a testlib checker, and subtasks scored by points, in
    several languages, and the Polygon package's solutions (made tasks by `hazmat polygon`),
    in one `hazmat batch`; each id names the verdict it deserves, and the points are these."""
    made = subprocess.run(
        [*HAZMAT, "polygon", str(POLYGON), *sorted(map(str, (POLYGON / "solutions").iterdir()))],
        capture_output=True,
        text=True,
    )
    assert made.returncode == 0, made.stderr
    tasks, out = tmp_path / "tasks.jsonl", tmp_path / "results.jsonl"
    testlib = guessing("guess-testlib-right", BISECT, 123_456_789, interactor=INTERACTOR)
    tasks.write_text(EXAMPLES.read_text() + made.stdout + json.dumps(testlib) + "\n")
    args = [str(tasks), "-o", str(out), "--trust", "unknown", "--runtime", "runc"]
    done = subprocess.run([*HAZMAT, "batch", *args], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    graded = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert len(graded) == len(tasks.read_text().splitlines())
    expected = {
        "triangle-right.py": ("accepted", 100),
        "triangle-overflow.c": ("wrong_answer", 20),
        "triangle-loop.py": ("time_limit", 20),
    }
    for task_id, line in graded.items():
        assert not list(RESULT.iter_errors(line)), line
        if task_id in expected:
            assert (line["verdict"], line["points"]) == expected[task_id], line
            continue
        verdict = "accepted" if task_id.endswith("-right") else task_id.rsplit("-", 1)[1]
        assert line["verdict"] == verdict, line
        if task_id.startswith("triangle-"):
            assert line["points"] == (100 if verdict == "accepted" else 20), line
