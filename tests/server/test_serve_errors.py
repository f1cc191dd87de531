"""`hazmat serve` and `hazmat keys` refuse what they cannot do with one clear line and an exit
status, never a traceback, and leave no socket behind."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from hazmat.testing import Invoked, invoke


def hazmat(*args: str, **env: str) -> Invoked:
    return invoke(args, env=env)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--max-running", "0"], "--max-running"),
        (["--grace", "0"], "--grace"),
        (["--host", "203.0.113.7", "--port", "1"], "cannot listen on 203.0.113.7:1"),
    ],
)
def test_bad_arguments(tmp_path: Path, args: list[str], says: str) -> None:
    done = hazmat("serve", "--keys", str(tmp_path / "k.json"), *args)
    assert done.exit_code == 2, done.stderr
    assert says in done.stderr and "Traceback" not in done.stderr


def test_a_path_that_is_not_a_socket(tmp_path: Path) -> None:
    path = tmp_path / "file"
    path.write_text("mine")
    done = hazmat("serve", "--socket", str(path))
    assert done.exit_code == 2 and "not a socket" in done.stderr
    assert path.read_text() == "mine"


def test_a_socket_someone_listens_on_is_not_taken(tmp_path: Path) -> None:
    path = tmp_path / "s.sock"
    with socket.socket(socket.AF_UNIX) as other:
        other.bind(str(path))
        other.listen(1)
        done = hazmat("serve", "--socket", str(path))
    assert done.exit_code == 2 and "already listening" in done.stderr


def test_a_stopped_engine_is_a_clear_error_and_leaves_no_socket(tmp_path: Path) -> None:
    """On the Docker backend. (The OCI tier, `auto`'s choice where it can run, needs the
    engine only to export an image's root file system, so it serves without one.)"""
    path = tmp_path / "s.sock"
    policy = tmp_path / "docker.yaml"
    policy.write_text("backend: docker\n")
    done = hazmat(
        "serve",
        "--socket",
        str(path),
        "--keys",
        str(tmp_path / "k.json"),
        "--policy",
        str(policy),
        DOCKER_HOST=f"unix://{tmp_path}/no-engine.sock",
    )
    assert done.exit_code == 125, done.stderr
    assert "hazmat: error:" in done.stderr and "Traceback" not in done.stderr
    assert not path.exists()


def test_keys_commands_errors(tmp_path: Path) -> None:
    store = str(tmp_path / "k.json")
    done = hazmat("keys", "create", "--tenant", "a b", "--trust", "trusted", "--keys", store)
    assert done.exit_code == 2 and "tenant name" in done.stderr
    done = hazmat(
        "keys",
        "create",
        "--tenant",
        "a",
        "--trust",
        "trusted",
        "--keys",
        store,
        "--concurrent",
        "0",
    )
    assert done.exit_code == 2 and "concurrent" in done.stderr
    done = hazmat("keys", "revoke", "0123456789ab", "--keys", store)
    assert done.exit_code == 2 and "no key with id" in done.stderr
    Path(store).write_text("{not json")
    done = hazmat("keys", "list", "--keys", store)
    assert done.exit_code == 78 and "damaged" in done.stderr


def test_keys_create_list_revoke(tmp_path: Path) -> None:
    import json

    store = str(tmp_path / "k.json")
    done = hazmat(
        "keys",
        "create",
        "--tenant",
        "acme",
        "--trust",
        "unknown",
        "--keys",
        store,
        "--per-minute",
        "7",
        "--json",
    )
    created = json.loads(done.stdout)
    assert created["key"].startswith(f"hzm_{created['id']}_") and "digest" not in created
    listed = json.loads(hazmat("keys", "list", "--keys", store, "--json").stdout)
    assert [(k["tenant"], k["quotas"]["per_minute"], k["revoked"]) for k in listed] == [
        ("acme", 7, None)
    ]
    assert created["key"] not in hazmat("keys", "list", "--keys", store).stdout
    done = hazmat("keys", "revoke", created["id"], "--keys", store)
    assert done.exit_code == 0 and "revoked" in done.stdout
    assert json.loads(hazmat("keys", "list", "--keys", store, "--json").stdout)[0]["revoked"]
