"""Piston's API with httpx (Piston has no client library of its own that its users share)
against a live `hazmat serve` on the real engine, under runc (a `trusted` key) and gVisor (an
`untrusted` key). The mapping's details and refusals: test_piston_logic.py."""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from hazmat.languages import LANGUAGES
from server_helpers import RUNTIME_KEYS, LiveServer

pytestmark = pytest.mark.docker

@pytest.fixture
def piston(live_server: LiveServer, runtime: str) -> Iterator[httpx.Client]:
    """A client at the base URL a Piston client is given, the key in Authorization."""
    headers = {"Authorization": live_server.keys[RUNTIME_KEYS[runtime]]}
    with httpx.Client(base_url=f"{live_server.url}/piston", headers=headers, timeout=120) as c:
        yield c


def execute(client: httpx.Client, language: str, code: str, **more: Any) -> dict[str, Any]:
    body = {"language": language, "version": "*", "files": [{"content": code}], **more}
    answer = client.post("/api/v2/execute", json=body)
    assert answer.status_code == 200, answer.text
    data: dict[str, Any] = answer.json()
    return data


def test_every_language_is_listed_with_its_version_and_runs(piston: httpx.Client) -> None:
    listed = {r["language"]: r for r in piston.get("/api/v2/runtimes").json()}
    assert set(listed) == {lang.names["piston"][0] for lang in LANGUAGES.values()}
    for name, runtime in sorted(listed.items()):
        assert re.fullmatch(r"\d+(\.\d+)+", runtime["version"]), runtime
        lang = next(lang for lang in LANGUAGES.values() if lang.names["piston"][0] == name)
        assert lang.self_test is not None
        body = {
            "language": runtime["aliases"][0] if runtime["aliases"] else name,
            "version": runtime["version"],  # as Piston's clients send it back
            "files": [{"name": "whatever", "content": lang.self_test.greet}],
            "stdin": "piston",
        }
        data = piston.post("/api/v2/execute", json=body).json()
        assert data["run"]["stdout"] == "hello piston\n", (name, data)
        assert data["language"] == name and data["version"] == runtime["version"]
        assert ("compile" in data) == bool(lang.build), name


@pytest.mark.matrix
def test_each_verdict(piston: httpx.Client) -> None:
    failed = execute(piston, "c++", "int main( {\n")
    assert failed["compile"]["status"] == "RE" and failed["compile"]["code"] != 0
    assert failed["run"] == failed["compile"]
    slow = execute(piston, "python", "while True:\n    pass\n", run_cpu_time=1000)
    assert (slow["run"]["status"], slow["run"]["signal"], slow["run"]["code"]) == (
        "TO",
        "SIGKILL",
        None,
    )
    assert slow["run"]["cpu_time"] >= 1000
    big = execute(piston, "python", "a = []\nwhile True:\n    a.append(bytearray(10**7))\n")
    assert big["run"]["status"] == "SG" and "memory" in big["run"]["message"]
    crashed = execute(piston, "python", "import sys\nprint('x')\nsys.exit(3)\n")
    assert (crashed["run"]["code"], crashed["run"]["status"]) == (3, "RE")
    assert crashed["run"]["output"] == "x\n"
    wrong = execute(piston, "javascript", "console.log(6 * 9)")
    assert wrong["run"]["stdout"] == "54\n" and wrong["run"]["code"] == 0


def test_files_and_args_in(live_server: LiveServer) -> None:
    headers = {"Authorization": f"Bearer {live_server.keys['trusted']}"}
    program = "import sys\nprint(open('data.bin', 'rb').read().hex(), sys.argv[1:])\n"
    body = {
        "language": "py",
        "version": "3.x",
        "files": [
            {"content": program},
            {"name": "data.bin", "content": base64.b64encode(b"\x01\x02").decode(),
             "encoding": "base64"},
        ],
        "args": ["a", "b"],
    }
    with httpx.Client(base_url=f"{live_server.url}/piston", headers=headers) as client:
        data = client.post("/api/v2/execute", json=body).json()
    assert data["run"]["stdout"] == "0102 ['a', 'b']\n", data


def test_a_batch_of_20(live_server: LiveServer) -> None:
    headers = {"Authorization": live_server.keys["trusted"]}
    with httpx.Client(base_url=f"{live_server.url}/piston", headers=headers, timeout=120) as c:

        def one(n: int) -> str:
            return str(execute(c, "python", f"print({n} + {n})")["run"]["stdout"])

        with ThreadPoolExecutor(20) as pool:
            assert list(pool.map(one, range(20))) == [f"{2 * n}\n" for n in range(20)]
