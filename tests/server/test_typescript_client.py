"""The TypeScript client (clients/typescript/) against a live `hazmat serve`: packed as a user
gets it (`make ts-client`: `npm ci` from the lock file, pinned by hash, its build, `npm pack`),
its own tests, run with Node from Debian (`npm test` builds it, checks that its generated types
are what docs/openapi.json generates now, and runs test/client.test.ts), then its README's
example as written, in a project of its own that installs the packed tarball by its path,
type-checked against the package's own types and run. Its output is printed into the suite's
log."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from server_helpers import LiveServer

pytestmark = pytest.mark.docker

ROOT = Path(__file__).parents[2]
CLIENT = ROOT / "clients" / "typescript"


def npm(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["npm", *args], cwd=CLIENT, capture_output=True, text=True, timeout=600, env=env
    )


def test_the_typescript_client_passes_its_tests_against_the_service(
    live_server: LiveServer, capsys: pytest.CaptureFixture[str]
) -> None:
    if shutil.which("npm") is None:
        pytest.fail("npm is not installed (scripts/ensure-engine.sh installs Debian's)")
    packed = subprocess.run(
        ["make", "ts-client"], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert packed.returncode == 0, packed.stdout + packed.stderr
    env = {**os.environ, "HAZMAT_URL": live_server.url}
    env["HAZMAT_API_KEY"] = live_server.keys["untrusted"]
    tested = npm("test", env=env)
    with capsys.disabled():  # the client's own report, in the suite's log
        print("\n" + tested.stdout[-4000:])
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "# fail 0" in tested.stdout and "# pass 4" in tested.stdout


def test_the_readme_example_runs_as_written_from_the_packed_tarball(
    live_server: LiveServer, tmp_path: Path
) -> None:
    version = json.loads((CLIENT / "package.json").read_text())["version"]
    tarball = ROOT / "build" / f"hazmat-client-{version}.tgz"
    if not tarball.exists():  # the test above packs it; alone, this one does
        made = subprocess.run(["make", "ts-client"], cwd=ROOT, capture_output=True, text=True)
        assert made.returncode == 0, made.stdout + made.stderr
    project = tmp_path / "project"
    project.mkdir()
    (project / "package.json").write_text('{"name": "example", "private": true, "type": "module"}')
    installed = subprocess.run(
        ["npm", "install", "--offline", "--no-audit", "--no-fund", str(tarball)],
        cwd=project, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stdout + installed.stderr
    [example] = re.findall(r"```ts\n(.*?)```", (CLIENT / "README.md").read_text(), re.S)
    (project / "example.ts").write_text(example)
    options = {
        "target": "ES2022", "module": "NodeNext", "moduleResolution": "NodeNext",
        "strict": True, "skipLibCheck": True, "types": ["node"],
        "typeRoots": [str(CLIENT / "node_modules" / "@types")],
    }  # fmt: skip
    config = {"compilerOptions": options, "files": ["example.ts"]}
    (project / "tsconfig.json").write_text(json.dumps(config))
    tsc = CLIENT / "node_modules" / ".bin" / "tsc"
    checked = subprocess.run([str(tsc), "-p", "."], cwd=project, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr  # the package's own types
    env = {**os.environ, "HAZMAT_URL": live_server.url}
    env["HAZMAT_API_KEY"] = live_server.keys["untrusted"]
    ran = subprocess.run(
        ["node", "example.js"], cwd=project, capture_output=True, text=True, timeout=300, env=env
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    said = [line for line in ran.stdout.splitlines() if line]
    assert said == ["ok 42", "0", "1", "2", "42", "400 UnknownLanguage"], ran.stdout
