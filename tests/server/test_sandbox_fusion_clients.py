"""SandboxFusion's protocol with its own clients against a live `hazmat serve` on the real
engine: the `sandbox-fusion` client from PyPI and verl's request (verl_shaped.py), under runc
(a `trusted` key) and gVisor (an `untrusted` key). The mapping's details, refusals and
overload are test_sandbox_fusion_logic.py's."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
import sandbox_fusion
from sandbox_fusion import RunCodeRequest, RunCodeResponse
from verl_shaped import reward

from hazmat.server.protocols import languages_of
from hazmat.service.tenant_keys import KeyStore, Quotas
from server_helpers import RUNTIME_KEYS, LiveServer

pytestmark = pytest.mark.docker

def endpoint(server: LiveServer, key: str) -> str:
    return f"{server.url}/sandbox-fusion/{server.keys[key]}"


def run_code(server: LiveServer, key: str, **fields: object) -> RunCodeResponse:
    request = RunCodeRequest(**fields)
    return sandbox_fusion.run_code(request, endpoint=endpoint(server, key), max_attempts=1)


@pytest.mark.matrix
def test_every_language_it_names_through_its_client(live_server: LiveServer, runtime: str) -> None:
    for name, language in sorted(languages_of("sandbox_fusion").items()):
        assert language.self_test is not None
        key, code = RUNTIME_KEYS[runtime], language.self_test.greet
        got = run_code(live_server, key, code=code, language=name, stdin="sf")
        assert got.status == "Success", (name, got)
        assert got.run_result is not None and got.run_result.stdout == "hello sf\n", name
        assert (got.compile_result is not None) == bool(language.build), name


@pytest.fixture
def verl(live_server: LiveServer) -> Iterator[httpx.Client]:
    with httpx.Client() as client:
        yield client


@pytest.mark.matrix
def test_verls_scores_for_each_verdict(
    live_server: LiveServer, runtime: str, verl: httpx.Client
) -> None:
    url = f"{endpoint(live_server, RUNTIME_KEYS[runtime])}/run_code"
    cases = [
        ("print(int(input()) * 2)\n", "21\n", "42", "python", True),
        ("print(int(input()) * 3)\n", "21\n", "42", "python", False),
        ("int main( {\n", "", "", "cpp", -4),
        ("while True:\n    pass\n", "", "", "python", -3),
        ("a = []\nwhile True:\n    a.append(bytearray(10**7))\n", "", "", "python", -2),
        ("raise SystemExit(3)\n", "", "", "python", -2),
    ]
    for code, stdin, expected, language, wanted in cases:
        got, data, busy = reward(verl, url, code, stdin, expected, timeout=2, language=language)
        assert got == wanted and busy == 0, (code, data)
        assert data is not None
        if wanted == -2 and "bytearray" in code:
            assert "memory" in data["message"], data  # hazmat's sentence on what stopped it
        if code.startswith("raise"):
            assert data["run_result"]["return_code"] == 3


def test_files_in_and_out(live_server: LiveServer) -> None:
    code = "open('out.txt', 'w').write(open('in.txt').read() * 2)\n"
    got = run_code(
        live_server,
        "trusted",
        code=code,
        language="python",
        files={"in.txt": base64.b64encode(b"ab").decode()},
        fetch_files=["out.txt"],
    )
    assert got.status == "Success", got
    assert base64.b64decode(got.files["out.txt"]) == b"abab"


def test_a_batch_of_20_through_its_concurrent_helper(live_server: LiveServer) -> None:
    requests = [
        {"request": RunCodeRequest(code=f"print({n} * {n})", language="python")}
        for n in range(20)
    ]
    kwargs = [{**r, "endpoint": endpoint(live_server, "trusted")} for r in requests]
    answers = sandbox_fusion.run_concurrent(sandbox_fusion.run_code, kwargs=kwargs, concurrency=20)
    assert [a.run_result.stdout for a in answers] == [f"{n * n}\n" for n in range(20)]


def test_an_unknown_language_is_the_clients_own_exception_with_hazmats_sentence(
    live_server: LiveServer,
) -> None:
    with pytest.raises(Exception, match=r"code 400.*unknown language 'php'"):
        run_code(live_server, "trusted", code="<?php echo 1;", language="php")


def test_verl_in_flight_past_the_keys_places_waits_its_turn(
    live_server: LiveServer, verl: httpx.Client
) -> None:
    # one place for the key, eight requests in flight: each waits for its turn (a 504 only
    # past what its deadline leaves), and none scores -1
    store = KeyStore(live_server.keys_path)
    key = store.create("serial", "unknown", Quotas(concurrent=1))[1]
    url = f"{live_server.url}/sandbox-fusion/{key}/run_code"

    def one(n: int) -> bool | int:
        return reward(verl, url, f"print({n})", "", str(n))[0]

    with ThreadPoolExecutor(8) as pool:
        assert list(pool.map(one, range(8))) == [True] * 8
    assert key.rpartition("_")[2] not in live_server.log()


def test_a_notebook_through_its_client(live_server: LiveServer) -> None:
    cells = [
        "a = 123",
        "a",
        "print(a)",
        "import sys\nsys.stderr.write('err\\n')\n",
        "raise RuntimeError('boom')",
    ]
    got = sandbox_fusion.run_jupyter(
        sandbox_fusion.RunJupyterRequest(cells=cells),
        endpoint=endpoint(live_server, "trusted"),
        max_attempts=1,
    )
    assert got.status == "Success", got
    assert got.cells[2].stdout == "123\n"  # the first cell's variable, kept
    assert got.cells[3].stderr == "err\n"
    assert got.cells[4].error[0]["ename"] == "RuntimeError"
    assert got.cells[4].error[0]["evalue"] == "boom"
