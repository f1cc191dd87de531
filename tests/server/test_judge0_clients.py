"""Judge0 CE's API with its own SDK (`judge0` from PyPI) against a live `hazmat serve` on the
real engine, under runc (a `trusted` key) and gVisor (an `untrusted` key). The mapping's
details, refusals and queue: test_judge0_logic.py."""

from __future__ import annotations

from collections.abc import Iterator

import judge0
import pytest
from judge0 import LanguageAlias, Status, Submission

from hazmat.languages import LANGUAGES
from server_helpers import RUNTIME_KEYS, LiveServer

pytestmark = pytest.mark.docker

@pytest.fixture
def client(live_server: LiveServer, runtime: str) -> Iterator[judge0.Client]:
    """The SDK's client at the service's Judge0 prefix, the key in X-Auth-Token (it reads the
    languages and the configuration as it is made)."""
    made = judge0.Client(
        f"{live_server.url}/judge0", {"X-Auth-Token": live_server.keys[RUNTIME_KEYS[runtime]]}
    )
    yield made
    made.client.close()


def test_every_language_by_its_id(client: judge0.Client) -> None:
    submissions = []
    for lang in LANGUAGES.values():
        assert lang.self_test is not None
        submissions.append(
            Submission(
                source_code=lang.self_test.greet,
                language=int(lang.names["judge0"][0]),
                stdin="judge0",
                expected_output="hello judge0",
            )
        )
    done = judge0.run(client=client, submissions=submissions)
    for lang, got in zip(LANGUAGES, done, strict=True):
        assert got.status == Status.ACCEPTED, (lang, got.stdout, got.compile_output, got.message)


@pytest.mark.matrix
def test_each_verdict_through_the_sdk(client: judge0.Client) -> None:
    cases = [
        ("print(int(input()) * 2)\n", LanguageAlias.PYTHON, "21", "42", Status.ACCEPTED),
        ("print(int(input()) * 3)\n", LanguageAlias.PYTHON, "21", "42", Status.WRONG_ANSWER),
        ("int main( {\n", LanguageAlias.CPP, "", None, Status.COMPILATION_ERROR),
        ("while True:\n    pass\n", LanguageAlias.PYTHON, "", None, Status.TIME_LIMIT_EXCEEDED),
        ("import sys\nsys.exit(3)\n", LanguageAlias.PYTHON, "", None, Status.RUNTIME_ERROR_NZEC),
        ("int main(void) { int *p = 0; return *p; }\n", LanguageAlias.C, "", None,
         Status.RUNTIME_ERROR_SIGSEGV),
        ("a = []\nwhile True:\n    a.append(bytearray(10**7))\n", LanguageAlias.PYTHON, "",
         None, Status.RUNTIME_ERROR_OTHER),
    ]
    submissions = [
        Submission(source_code=code, language=language, stdin=stdin, expected_output=expected,
                   cpu_time_limit=2)
        for code, language, stdin, expected, _ in cases
    ]
    done = judge0.run(client=client, submissions=submissions)
    for (code, *_, wanted), got in zip(cases, done, strict=True):
        assert got.status == wanted, (code, got.status, got.message, got.compile_output)
    assert "memory" in (done[-1].message or "")
    assert done[2].compile_output and done[4].exit_code == 3
    assert done[3].time is not None and done[3].time >= 2.0


def test_a_batch_of_20_and_files(live_server: LiveServer) -> None:
    client = judge0.Client(
        f"{live_server.url}/judge0", {"X-Auth-Token": live_server.keys["trusted"]}
    )
    try:
        batch = [
            Submission(source_code=f"print({n} * {n})", language=LanguageAlias.PYTHON)
            for n in range(20)
        ]
        done = judge0.run(client=client, submissions=batch)
        assert [s.stdout for s in done] == [f"{n * n}\n" for n in range(20)]
        files = judge0.Filesystem(content=[judge0.File(name="in.txt", content="abc")])
        with_files = judge0.run(
            client=client,
            source_code="print(open('in.txt').read()[::-1])",
            language=LanguageAlias.PYTHON,
            additional_files=files,
        )
        assert with_files.stdout == "cba\n", with_files
    finally:
        client.client.close()


def test_the_sdks_errors_for_a_bad_key(live_server: LiveServer) -> None:
    with pytest.raises(RuntimeError, match="Authentication failed"):
        judge0.Client(f"{live_server.url}/judge0", {"X-Auth-Token": "hzm_nope"})
