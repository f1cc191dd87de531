"""A run's `session` label is its caller's own word (`hazmat run FILE` fills it with the script's
path; anyone may give another's session id): the audit log's code diff takes it only with the
caller, in memory and when read back from the log by a later process. (Over HTTP, MCP and the
cluster: tests/server/test_tenant_labels.py, tests/cluster/test_labels_on_a_worker.py.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hazmat import Sandbox
from hazmat.audit.log import AuditLog
from hazmat.policy import Policy
from hazmat.testing import RecordingBackend
from server_helpers import audit_records

ALICE, BOB = "tenant:alice key:000000000001", "tenant:bob key:000000000002"
LABEL = "/workspace/main.py"


def started(log: Path) -> list[dict[str, Any]]:
    return [r["data"] for r in audit_records(log) if r["kind"] == "run.started"]


def run(log: Path, *calls: tuple[str, str | None]) -> None:
    """Each (code, caller) run under LABEL, by one sandbox (one process's memory)."""
    with Sandbox(Policy(), backend=RecordingBackend(), audit=AuditLog(log)) as sandbox:
        for code, caller in calls:
            sandbox.run(code, caller=caller, session=LABEL)
        sandbox.audit.close()


def test_one_label_from_two_callers_is_two_diffs_in_one_process(tmp_path: Path) -> None:
    run(
        tmp_path,
        ("print('alice 1')\n", ALICE),
        ("print('bob 1')\n", BOB),
        ("print('alice 2')\n", ALICE),
        ("print('host')\n", None),
    )
    alice1, bob1, alice2, host = started(tmp_path)
    assert alice1["diff"] is None and bob1["diff"] is None and host["diff"] is None
    assert "-print('alice 1')\n+print('alice 2')" in alice2["diff"]
    assert "bob" not in alice2["diff"]


def test_one_label_read_back_from_the_log_is_the_callers_own(tmp_path: Path) -> None:
    """A later process (a new sandbox on the same log) finds the last code of the label by
    reading the log: only a record of the same caller counts."""
    run(tmp_path, ("print('alice 1')\n", ALICE))
    run(tmp_path, ("print('bob 1')\n", BOB))  # the newest record of the label is alice's
    run(tmp_path, ("print('alice 2')\n", ALICE))  # the newest of the label is bob's
    _, bob1, alice2 = started(tmp_path)
    assert bob1["diff"] is None
    assert "-print('alice 1')\n+print('alice 2')" in alice2["diff"]
    assert "bob" not in alice2["diff"]
