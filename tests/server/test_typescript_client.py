"""The TypeScript client (clients/typescript/) against a live `hazmat serve`: its own tests, run
with Node from Debian (`npm ci` from the lock file, pinned by hash; `npm test` builds it,
checks that its generated types are what docs/openapi.json generates now, and runs
test/client.test.ts). Its output is printed into the suite's log."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from server_helpers import LiveServer

pytestmark = pytest.mark.docker

CLIENT = Path(__file__).parents[2] / "clients" / "typescript"


def npm(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["npm", *args], cwd=CLIENT, capture_output=True, text=True, timeout=600, env=env
    )


def test_the_typescript_client_passes_its_tests_against_the_service(
    live_server: LiveServer, capsys: pytest.CaptureFixture[str]
) -> None:
    if shutil.which("npm") is None:
        pytest.fail("npm is not installed (scripts/ensure-engine.sh installs Debian's)")
    installed = npm("ci", "--no-audit", "--no-fund")
    assert installed.returncode == 0, installed.stdout + installed.stderr
    env = {**os.environ, "HAZMAT_URL": live_server.url}
    env["HAZMAT_API_KEY"] = live_server.keys["untrusted"]
    tested = npm("test", env=env)
    with capsys.disabled():  # the client's own report, in the suite's log
        print("\n" + tested.stdout[-4000:])
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "# fail 0" in tested.stdout and "# pass 4" in tested.stdout
