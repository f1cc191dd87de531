"""Whole-process `hazmat run -c 'print(1)'` through a running `hazmat serve`, against plain
`docker run` and the in-process CLI (`--local`), alternating in one run; medians.

A server is started per transport (unix socket, TCP on loopback) with its own key store and
audit log; each is warmed with a few runs first (the warm pool fills after the first miss).

    .venv/bin/python benchmarks/service.py --runs 30 --write
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from docs_section import write_section
from serving import serve

from hazmat.languages import get_language

WARMUP = 3


def start(tmp: Path, transport: str, trust: str) -> tuple[subprocess.Popen[str], dict[str, str]]:
    where = ["--socket", str(tmp / "s.sock")] if transport == "unix" else ["--port", "0"]
    server, url, key = serve(tmp, trust, where=where)
    return server, {"HAZMAT_URL": url, "HAZMAT_API_KEY": key}


def timed(cmd: list[str], env: dict[str, str]) -> float:
    began = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **env})
    elapsed = (time.perf_counter() - began) * 1000
    if done.returncode != 0 or done.stdout != "1\n":
        raise SystemExit(f"{cmd}: {done.returncode} {done.stdout!r} {done.stderr}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args()
    hazmat = [str(Path(sys.executable).parent / "hazmat"), "run", "-c", "print(1)"]
    image = get_language("python").image
    methods: dict[str, tuple[list[str], dict[str, str]]] = {
        "docker run --rm --network none (runc)": (
            ["docker", "run", "--rm", "--network", "none", image, "python3", "-c", "print(1)"],
            {},
        ),
        "hazmat run --local, trust unknown (runc)": (
            [*hazmat, "--local", "--trust", "unknown"],
            {"HAZMAT_URL": ""},
        ),
    }
    servers = []
    with tempfile.TemporaryDirectory() as tmp:
        for transport, trust, runtime in (
            ("unix", "unknown", "runc"),
            ("tcp", "unknown", "runc"),
            ("unix", "untrusted", "runsc"),
        ):
            folder = Path(tmp) / f"{transport}-{trust}"
            folder.mkdir()
            server, env = start(folder, transport, trust)
            servers.append(server)
            name = f"hazmat run through the server, {transport} socket, trust {trust} ({runtime})"
            methods[name] = (hazmat, env)
        try:
            times: dict[str, list[float]] = {name: [] for name in methods}
            names = list(methods)
            for round_ in range(WARMUP + args.runs):
                # each round starts with the next method: a server refilling its pool after
                # its run slows whichever method follows it, so that one changes each round
                shift = round_ % len(names)
                for name in names[shift:] + names[:shift]:
                    cmd, env = methods[name]
                    elapsed = timed(cmd, env)
                    if round_ >= WARMUP:
                        times[name].append(elapsed)
        finally:
            for server in servers:
                server.terminate()
                server.communicate(timeout=120)
    base = statistics.median(times["docker run --rm --network none (runc)"])
    rows = [
        f"| {name} | {statistics.median(t):.0f} | {statistics.median(t) / base:.2f} |"
        for name, t in times.items()
    ]
    text = "\n".join(
        [
            f"`benchmarks/service.py --runs {args.runs}`, {datetime.now(UTC):%Y-%m-%d}: whole "
            "process, `print(1)` in Python, the methods alternating round by round, each round "
            f"starting with the next one ({WARMUP} warm-up rounds not counted):",
            "",
            "| how | median ms | × docker run |",
            "|---|---:|---:|",
            *rows,
        ]
    )
    print(text)
    if args.write:
        write_section("service", "The service: a whole `hazmat run` through `hazmat serve`", text)


if __name__ == "__main__":
    main()
