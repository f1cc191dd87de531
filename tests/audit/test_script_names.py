"""A run's `script` name is its caller's own word (`hazmat run FILE` fills it with the script's
path; anyone may give any name): the audit log's code diff takes it only with the caller, in
memory and when read back from the log by a later process; a session's calls are diffed by the
session's id, which a script's name never reaches; records written before the rename (one
`session` label for both) are still read. (Over HTTP, MCP and the cluster:
tests/server/test_tenant_labels.py, tests/cluster/test_labels_on_a_worker.py.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hazmat import Sandbox
from hazmat._exceptions import InputError
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
            sandbox.run(code, caller=caller, script=LABEL)
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


def test_a_sessions_calls_are_diffed_by_its_id_which_no_script_name_reaches(
    tmp_path: Path,
) -> None:
    with Sandbox(Policy(), backend=RecordingBackend(), audit=AuditLog(tmp_path)) as sandbox:
        with sandbox.session("python") as session:
            session.run("x = 1\n")
            sandbox.run("print('named like the session')\n", script=session.id)
            session.run("print(x)\n")
        sandbox.audit.close()
    first, named, second = started(tmp_path)
    assert first["session"] == session.id and first["script"] is None and "origin" not in first
    assert named["script"] == session.id and named["session"] is None and named["diff"] is None
    assert "-x = 1\n+print(x)" in second["diff"] and "named like" not in second["diff"]


def test_the_former_name_session_still_names_a_script_with_a_warning(tmp_path: Path) -> None:
    with Sandbox(Policy(), backend=RecordingBackend(), audit=AuditLog(tmp_path)) as sandbox:
        with pytest.warns(DeprecationWarning, match="'session' is renamed 'script'") as seen:
            sandbox.run("print(1)\n", session=LABEL)  # type: ignore[call-arg]
        with pytest.raises(InputError, match="given twice"):
            sandbox.run("print(2)\n", session=LABEL, script=LABEL)  # type: ignore[call-arg]
        sandbox.run("print(3)\n", script=LABEL)
        sandbox.audit.close()
    assert seen[0].filename == __file__  # the warning points at the caller's line
    old, new = started(tmp_path)
    assert old["script"] == LABEL and "-print(1)\n+print(3)" in new["diff"]


def test_a_record_from_before_the_rename_is_read_back(tmp_path: Path) -> None:
    """A log written before `session` became `script`: its runs' one label is read as a
    script's name and as a session's id alike."""
    log = AuditLog(tmp_path)
    log.append(
        "run.started",
        {"caller": None, "session": LABEL, "code": "print('old')\n", "code_truncated": False},
    )
    log.close()
    run(tmp_path, ("print('new')\n", None))
    assert "-print('old')\n+print('new')" in started(tmp_path)[-1]["diff"]
