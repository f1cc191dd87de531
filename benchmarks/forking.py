"""What a fork costs: a Python session in the data image holding 50 MB of files and a 100 MB
DataFrame, forked into n = 1, 4 and 16 sessions under runc and runsc on the default tier;
medians of the time until all n are open with the files and variables, beside a pause of the
same session (its archive) and the opening of one new, empty session.

    .venv/bin/python benchmarks/forking.py --runs 3 --write
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time
from datetime import UTC, datetime

from docs_section import write_section

import hazmat
from hazmat.policy import Policy, SessionSettings, TrustLevel

STATE = (
    "import os, numpy as np, pandas as pd\n"
    "os.makedirs('files', exist_ok=True)\n"
    "for i in range(5):\n"
    "    open(f'files/part{i}.bin', 'wb').write(os.urandom(10 * 1024 * 1024))\n"
    "rows = 100 * 1024 * 1024 // 16  # two float64 columns: 100 MiB\n"
    "frame = pd.DataFrame({'x': np.arange(rows, dtype=float), 'y': np.random.rand(rows)})\n"
)
CHECK = "print(len(frame), sum(os.path.getsize(f'files/{n}') for n in os.listdir('files')))"
COUNTS = (1, 4, 16)


def _policy() -> Policy:
    """The built-in policy, its `unknown` and `untrusted` levels given room for the state
    (memory for the frame and its pickle, a /tmp the archive fits in) and 17 sessions."""
    policy = Policy()
    levels = dict(policy.levels)
    for level in (TrustLevel.UNKNOWN, TrustLevel.UNTRUSTED):
        settings = levels[level]
        limits = settings.limits.replace(memory_mb=1024, tmpfs_mb=512, timeout_s=60)
        levels[level] = dataclasses.replace(settings, limits=limits)
    sessions = SessionSettings(max_open=max(COUNTS) + 1)
    return dataclasses.replace(policy, levels=levels, sessions=sessions)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args()
    rows = []
    with hazmat.Sandbox(_policy()) as sandbox:
        tier = f"the {sandbox.backend.tier} tier (the default)"
        for runtime, trust in (("runc", "unknown"), ("runsc", "untrusted")):
            source = sandbox.session("python", trust=trust, runtime=runtime, image="python-data")
            assert source.run(STATE).exit_code == 0
            expected = source.run(CHECK).stdout
            timings: dict[int, list[float]] = {n: [] for n in COUNTS}
            archive = 0
            for _ in range(args.runs):
                for n in COUNTS:
                    began = time.perf_counter()
                    forks = source.fork(n)
                    timings[n].append(time.perf_counter() - began)
                    archive = (forks[0].forked or {})["archive_bytes"]
                    if forks[-1].run(CHECK).stdout != expected:
                        raise SystemExit(f"a fork's state differs: {forks[-1].forked}")
                    for fork in forks:
                        fork.close()
            opens = []
            for _ in range(args.runs):
                began = time.perf_counter()
                sandbox.session("python", trust=trust, runtime=runtime, image="python-data").close()
                opens.append(time.perf_counter() - began)
            began = time.perf_counter()
            source.pause()
            paused = time.perf_counter() - began
            rows.append(
                f"| {runtime} | {archive / 1e6:.0f} | "
                + " | ".join(f"{statistics.median(timings[n]):.1f}" for n in COUNTS)
                + f" | {paused:.1f} | {statistics.median(opens):.1f} |"
            )
    text = "\n".join(
        [
            f"`benchmarks/forking.py --runs {args.runs}`, {datetime.now(UTC):%Y-%m-%d}, "
            f"{tier}: a Python session in the data image holding 50 MB of files (five "
            "10 MB random files) and a 100 MiB DataFrame, forked into n sessions from a Python "
            "caller, timed until all n are open with the files and the variables loaded "
            "(seconds, medians); one fork's state checked after each. The level's limits were "
            "raised for the state (1 GiB memory, a 512 MiB /tmp for the archive).",
            "",
            "| runtime | archive MB | n = 1 s | n = 4 s | n = 16 s | a pause s | "
            "a new empty session s |",
            "|---|---:|---:|---:|---:|---:|---:|",
            *rows,
            "",
            "A fork is one save of the source (a tar of its working directory and a pickle of "
            "its variables, inside its sandbox), then per fork a session's open, the archive "
            "sent and unpacked, and the variables unpickled; at most four forks are opened "
            "side by side (sessions/forking.py), so after the one save n = 16 is about four "
            "rounds of n = 4 on this 2-core machine.",
        ]
    )
    print(text)
    if args.write:
        write_section("forking", "Fork a session", text)


if __name__ == "__main__":
    main()
