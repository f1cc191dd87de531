"""What the console keeps in memory: the recent runs within their count and bytes, the oldest
forgotten first, each tenant's seen only by it; the charts' counts per minute and tenant for
the last hour (a clock of the test's own)."""

from __future__ import annotations

import pytest

from hazmat.models import ExecutionRequest, ExecutionResult, Outcome, Runtime
from hazmat.policy import Policy, TrustLevel
from hazmat.server.console.recent import RecentRuns, tenant_of
from hazmat.server.console.timeline import Timeline
from hazmat.service.tenant_keys import Key

LIMITS = Policy().settings(TrustLevel.UNTRUSTED).limits


def request(tenant: str, code: str = "print(1)") -> ExecutionRequest:
    caller = f"tenant:{tenant} key:000000000000"
    return ExecutionRequest(code, "python", TrustLevel.UNTRUSTED, caller=caller)


def result(outcome: Outcome = Outcome.OK, pooled: bool | None = True) -> ExecutionResult:
    return ExecutionResult(
        outcome, 0, "", "", False, 5.0, LIMITS, Runtime.RUNC, "img", "python",
        TrustLevel.UNTRUSTED, pooled=pooled,
    )  # fmt: skip


def key(tenant: str) -> Key:
    return Key("000000000000", tenant, TrustLevel.UNTRUSTED, "0" * 64, "now")


def test_the_oldest_runs_go_past_the_count_or_the_bytes() -> None:
    recent = RecentRuns(capacity=3, budget_bytes=10_000)
    seen = [recent.add(request("acme"), result(), 1.0, 0) for _ in range(4)]
    assert [s.id for s in recent.visible(key("acme"), False)] == [s.id for s in seen[:0:-1]]
    big = recent.add(request("acme", "x" * 9_000), result(), 1.0, 0)  # 9 KB + 1 KB of its own
    assert [s.id for s in recent.visible(key("acme"), False)] == [big.id]
    huge = recent.add(request("acme", "x" * 50_000), result(), 1.0, 0)  # the newest stays
    assert [s.id for s in recent.visible(key("acme"), False)] == [huge.id]


def test_a_tenant_sees_its_own_runs_and_an_operator_all() -> None:
    recent = RecentRuns()
    mine, theirs = (
        recent.add(request("acme"), result(), 1, 0),
        recent.add(request("b"), result(), 1, 0),
    )
    assert recent.get(theirs.id, key("acme"), False) is None
    assert recent.get(mine.id, key("acme"), False) is mine
    assert recent.get(theirs.id, key("acme"), True) is theirs
    assert tenant_of(None) == tenant_of("someone") == "-"


def test_the_charts_count_each_minute_of_the_last_hour_per_tenant() -> None:
    now = [3600.0 * 100]
    timeline = Timeline(minutes=60, clock=lambda: now[0])
    for latency in (10, 20, 30, 40):
        timeline.add("acme", result(), latency)
    timeline.add("acme", result(Outcome.TIMEOUT, pooled=False), 1000)
    timeline.add("other", result(), 5)
    now[0] += 60
    timeline.add("acme", result(), 7)
    mine = timeline.series({"acme"})
    assert len(mine["minutes"]) == 60 and mine["minutes"][-1] == now[0]
    assert mine["outcomes"]["ok"][-2:] == [4, 1] and mine["outcomes"]["timeout"][-2:] == [1, 0]
    assert (mine["p50_ms"][-2], mine["p95_ms"][-2]) == (30, 1000)  # nearest rank of 5
    assert (mine["pooled"][-2], mine["cold"][-2]) == (4, 1)
    assert mine["p50_ms"][0] is None  # a minute with no run is a gap, not a zero
    assert timeline.series(None)["outcomes"]["ok"][-2] == 5  # everyone's
    now[0] += 3600
    timeline.add("acme", result(), 1)
    assert sum(timeline.series(None)["outcomes"]["ok"]) == 1  # an hour on: only the newest


@pytest.mark.parametrize("caller", ["tenant:acme key:1", "tenant:acme"])
def test_the_tenant_is_read_from_the_keys_caller(caller: str) -> None:
    assert tenant_of(caller) == "acme"
