"""What a pause and a resume cost: a Python session with a little state, and one with a 10 MB
file and a 100,000-row DataFrame, under runc and runsc; medians of pause and of resume (to the
session open again, files and variables back), and the archive's size.

    .venv/bin/python benchmarks/pausing.py --runs 5 --write
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import tempfile
import time
from datetime import UTC, datetime

from docs_section import write_section

import hazmat
from hazmat.policy import Policy, SessionSettings

STATES = {
    "small (a few variables, one file)": "n = 41\nnames = ['a']\nopen('f.txt', 'w').write('x')",
    "10 MB file + 100,000-row DataFrame": (
        "import os, pandas as pd, numpy as np\n"
        "open('big.bin', 'wb').write(os.urandom(10 * 1024 * 1024))\n"
        "frame = pd.DataFrame({'x': np.arange(100_000), 'y': np.random.rand(100_000)})"
    ),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as store:
        policy = dataclasses.replace(Policy(), sessions=SessionSettings(store=store))
        with hazmat.Sandbox(policy) as sandbox:
            for runtime, trust in (("runc", "unknown"), ("runsc", "untrusted")):
                for name, code in STATES.items():
                    pauses, resumes, size = [], [], 0
                    session = sandbox.session("python", trust=trust, image="python-data")
                    session.run(code)
                    for _ in range(args.runs):
                        began = time.perf_counter()
                        paused = session.pause()
                        pauses.append((time.perf_counter() - began) * 1000)
                        size = paused.archive_bytes
                        began = time.perf_counter()
                        session = sandbox.resume_session(paused.id)
                        resumes.append((time.perf_counter() - began) * 1000)
                        if session.resumed is None or session.resumed["lost"]:
                            raise SystemExit(f"{name}: {session.resumed}")
                    session.close()
                    opens = []
                    for _ in range(args.runs):  # for comparison: a new, empty session
                        began = time.perf_counter()
                        sandbox.session("python", trust=trust, image="python-data").close()
                        opens.append((time.perf_counter() - began) * 1000)
                    rows.append(
                        f"| {name} | {runtime} | {size / 1e6:.2f} | "
                        f"{statistics.median(pauses):.0f} | {statistics.median(resumes):.0f} | "
                        f"{statistics.median(opens):.0f} |"
                    )
    text = "\n".join(
        [
            f"`benchmarks/pausing.py --runs {args.runs}`, {datetime.now(UTC):%Y-%m-%d}: a Python "
            "session in the data image paused and resumed in turn, from a Python caller; a "
            "resume starts a new container (the data image's interpreter imports pandas "
            "first) and is timed until the session is open with its files and variables.",
            "",
            "| state | runtime | archive MB | pause ms | resume ms | open + close a new one ms |",
            "|---|---|---:|---:|---:|---:|",
            *rows,
            "",
            "A resume is a session's open (a container started and checked, its interpreter "
            "importing pandas: the last column) plus the archive unpacked and the variables "
            "loaded; the last two columns differ by that, within this machine's noise. A pause "
            "is a tar of the working directory and a pickle of the variables, inside the "
            "sandbox, at half a CPU.",
        ]
    )
    print(text)
    if args.write:
        write_section("pausing", "Pause and resume", text)


if __name__ == "__main__":
    main()
