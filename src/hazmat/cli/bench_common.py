"""What `hazmat bench`'s latency (cli/bench.py) and throughput (cli/bench_throughput.py)
share: the program timed, the report both fill in, and one checked run through hazmat."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING

from hazmat.languages import LANGUAGES
from hazmat.models import Outcome

if TYPE_CHECKING:
    from hazmat.backends.base import Spec
    from hazmat.backends.docker.driver import Started
    from hazmat.backends.pool.warm import PoolBackend
    from hazmat.sandbox import Sandbox

__all__ = ["PRINT_ONE", "Report", "hazmat_call", "median", "p95", "wait_full"]

# A program printing 1 in each language (the language table's own hello), in its order
PRINT_ONE: Mapping[str, str] = MappingProxyType(
    {name: lang.hello for name, lang in LANGUAGES.items()}
)


@dataclass
class Report:
    """What one bench run measured (milliseconds unless the name says otherwise)."""

    runs: int
    latency: list[tuple[str, str, str, list[float]]] = field(default_factory=list)
    throughput: dict[str, float] = field(default_factory=dict)
    throughput_ratios: list[float] = field(default_factory=list)  # hazmat / raw, per round
    idle_memory: list[tuple[str, str, float, float]] = field(default_factory=list)


def median(values: list[float]) -> float:
    return statistics.median(values)


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1] if len(values) >= 2 else values[0]


def hazmat_call(
    sandbox: Sandbox, language: str, runtime: str, pooled: bool | None
) -> Callable[[], None]:
    """One `print(1)` through `sandbox`, checked (and with `pooled`, whether the pool served
    it); a failure ends the bench."""

    def call() -> None:
        result = sandbox.run(PRINT_ONE[language], language, runtime=runtime)
        if result.outcome is not Outcome.OK or result.stdout.strip() != "1":
            raise SystemExit(f"{language}/{runtime} failed: {result.outcome} {result.stderr}")
        if pooled is not None and result.pooled is not pooled:
            raise SystemExit(f"{language}/{runtime}: expected pooled={pooled}, got {result.pooled}")

    return call


def wait_full(pool: PoolBackend[Started], spec: Spec) -> None:
    """Until the pool holds its full size of containers for `spec`."""
    if not pool.wait_ready(spec, pool.settings.size):
        raise SystemExit(f"the pool did not fill: {pool.stats.last_error}")
