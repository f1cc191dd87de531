"""What a display costs: a session call that draws a matplotlib figure and shows it as a PNG,
against the same call that makes the figure and closes it unshown, under runc and runsc; a
DataFrame shown as a display against printed; and a plain `print(1)` single run with displays
on (the default) and off (`max_displays: 0`). Medians, the methods alternating call by call.

    .venv/bin/python benchmarks/displays.py --runs 20 --write
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

from docs_section import write_section

import hazmat
from hazmat.policy import Policy

WARMUP = 2
SETUP = (
    "import matplotlib.pyplot as plt, pandas as pd\n"
    "frame = pd.DataFrame({'x': range(20), 'y': [i * i for i in range(20)]})\n"
)
FIGURE = "fig = plt.figure(figsize=(6.4, 4.8), dpi=100)\nplt.plot(frame['x'], frame['y'])\n"
CALLS = {
    "figure made and closed, not shown": (FIGURE + "plt.close(fig)\n", 0),
    "figure shown (1 PNG)": (FIGURE, 1),
    "DataFrame printed": ("print(frame.describe())\n", 0),
    "DataFrame shown (HTML + text)": ("frame.describe()\n", 1),
}


def _without_displays() -> Policy:
    levels = {
        level: dataclasses.replace(s, limits=s.limits.replace(max_displays=0))
        for level, s in Policy().levels.items()
    }
    return Policy(levels=MappingProxyType(levels))


def measure(methods: Mapping[str, Callable[..., Any]], runs: int, keep: bool = False) -> Any:
    times: dict[str, list[float]] = {name: [] for name in methods}
    for round_ in range(WARMUP + runs):
        # the order flips every round: a run right after another sandbox's (whose pool then
        # refills, on the same two cores) would otherwise always pay for it
        order = list(methods.items())
        for name, call in order if round_ % 2 else reversed(order):
            began = time.perf_counter()
            result = call()
            elapsed = (time.perf_counter() - began) * 1000
            if result.outcome is not hazmat.Outcome.OK:
                raise SystemExit(f"{name}: {result.outcome} {result.error} {result.stderr}")
            if round_ >= WARMUP:
                times[name].append(elapsed)
    return times if keep else {name: statistics.median(t) for name, t in times.items()}


def session_costs(sandbox: hazmat.Sandbox, runs: int) -> dict[str, float]:
    methods: dict[str, Callable[[], hazmat.ExecutionResult]] = {}
    sessions = []
    for runtime, trust in (("runc", "unknown"), ("runsc", "untrusted")):
        session = sandbox.session("python", trust=trust, runtime=runtime, image="python-data")
        sessions.append(session)
        session.run(SETUP)
        for name, (code, shown) in CALLS.items():

            def call(s: hazmat.Session = session, c: str = code, n: int = shown) -> object:
                result = s.run(c)
                if len(result.displays) != n:
                    raise SystemExit(f"{c!r}: {len(result.displays)} displays, expected {n}")
                return result

            methods[f"{name} ({runtime})"] = call  # type: ignore[assignment]
    try:
        return measure(methods, runs)
    finally:
        for session in sessions:
            session.close()


def run_costs(runs: int) -> dict[str, float]:
    """`print(1)` with displays on and off: two passes, the sandboxes made in either order
    (the one made first was measured slower, either way), their samples together."""
    samples: dict[str, list[float]] = {}
    for first_on in (True, False):
        made: dict[str, Callable[[], hazmat.Sandbox]] = {
            "on": hazmat.Sandbox,
            "off": lambda: hazmat.Sandbox(_without_displays()),
        }
        order = ("on", "off") if first_on else ("off", "on")
        sandboxes = {state: made[state]() for state in order}
        try:
            methods = {
                f"`print(1)`, displays {state} ({runtime})": (
                    lambda sb=sb, r=runtime: sb.run("print(1)", trust="unknown", runtime=r)
                )
                for state, sb in sandboxes.items()
                for runtime in ("runc", "runsc")
            }
            for name, times in measure(methods, runs, keep=True).items():
                samples.setdefault(name, []).extend(times)
        finally:
            for sb in sandboxes.values():
                sb.close()
    return {name: statistics.median(times) for name, times in sorted(samples.items())}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args()
    with hazmat.Sandbox() as sandbox:
        calls = session_costs(sandbox, args.runs)
    runs = run_costs(args.runs * 3)  # small and noisy beside pool refills: more rounds
    rows = [f"| {name} | {ms:.1f} |" for name, ms in {**calls, **runs}.items()]
    per_png = {
        rt: calls[f"figure shown (1 PNG) ({rt})"]
        - calls[f"figure made and closed, not shown ({rt})"]
        for rt in ("runc", "runsc")
    }
    text = "\n".join(
        [
            f"`benchmarks/displays.py --runs {args.runs}`, {datetime.now(UTC):%Y-%m-%d}: from a "
            "Python caller, end to end, the methods alternating call by call, in an order "
            "that flips every round ("
            f"{WARMUP} warm-up rounds not counted). Session calls in the data image; the figure "
            "is 640x480 at 100 dpi (about 20 KB of PNG).",
            "",
            "| call | median ms |",
            "|---|---:|",
            *rows,
            "",
            f"One PNG display costs **{per_png['runc']:.0f} ms** under runc and "
            f"**{per_png['runsc']:.0f} ms** under runsc (drawing it with Agg, encoding, "
            "collecting and checking it; the difference of the first two rows). Nearly all of "
            "it is Agg drawing the figure at the level's half CPU; PNG compression is not (its "
            "level changes nothing measurable). A run that shows nothing pays nothing: the "
            "`print(1)` rows with displays on and off differ within this setup's noise.",
        ]
    )
    print(text)
    if args.write:
        write_section("displays", "Displays: the cost of a chart", text)


if __name__ == "__main__":
    main()
