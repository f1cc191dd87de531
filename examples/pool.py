"""The warm pool: one Sandbox, many runs, each in a container nobody used before.

.venv/bin/python examples/pool.py
"""

import sys
import time

import hazmat

PROGRAMS = {
    "python": "import sys\nprint(sum(range(10**5)), sys.argv[0])",
    "javascript": "console.log([1, 2, 3].map((x) => x * x).join(' '))",
}

with hazmat.Sandbox() as sandbox:  # untrusted by default: gVisor (runsc)
    for language in PROGRAMS:
        try:  # start and check containers ahead of time
            sandbox.warm(language, wait=120)
        except hazmat.InfraError as exc:  # a slow machine: a run that finds none starts its own
            print(f"{language}: {exc}; the runs do not wait for it")
    seen = set()
    for _ in range(6):
        for language, code in PROGRAMS.items():
            started = time.perf_counter()
            result = sandbox.run(code, language)
            took = (time.perf_counter() - started) * 1000
            seen.add(result.container_id)
            print(
                f"{language:<10} {result.outcome.value:<3} {result.stdout.strip():<22} "
                f"{took:6.1f} ms  pooled={result.pooled}  "
                f"peak={(result.peak_memory_bytes or 0) / 2**20:.1f} MiB  "
                f"cpu={result.cpu_time_ms or 0:.1f} ms  {result.runtime.value}"
            )
            time.sleep(0.3)  # a real caller's pace; the pool refills in the background
    stats = sandbox.metrics()
    print(
        f"\n{stats.runs} runs in {len(seen)} different containers; pool hits {stats.pool_hits}, "
        f"misses {stats.pool_misses}; latency p50 {stats.latency_p50_ms:.1f} ms, "
        f"p95 {stats.latency_p95_ms:.1f} ms"
    )
    if len(seen) != stats.runs or stats.ok != stats.runs:
        sys.exit(f"pool example: {stats.ok} of {stats.runs} runs ok, in {len(seen)} containers")
