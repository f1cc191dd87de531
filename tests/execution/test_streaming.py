"""Output as it comes (`on_output`, hazmat.Watch) on the real engine, under runc and runsc.

That output reaches the caller while the program still runs is shown without any timing: the
caller cancels the run when its first chunk arrives, and a program that would otherwise spin
until its 60 s timeout ends `cancelled` with just that chunk.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from hazmat import Outcome, Sandbox, Watch, parse_policy
from hazmat.backends.container.engine import Engine
from hazmat.backends.docker.driver import DockerBackend
from hazmat.testing import as_asked

pytestmark = [pytest.mark.docker, pytest.mark.oci, pytest.mark.matrix]
OVERRIDE = "streaming test: the container must contain this whatever the assessment says"


class Seen:
    def __init__(self) -> None:
        self.chunks: list[tuple[str, bytes]] = []

    def __call__(self, stream: str, data: bytes) -> None:
        self.chunks.append((stream, data))

    def joined(self, stream: str) -> bytes:
        return b"".join(data for name, data in self.chunks if name == stream)


def first_chunk_cancels() -> Watch:
    watch = Watch()
    watch.on_output = lambda stream, data: watch.cancel("seen enough")
    return watch


SPIN_AFTER_FIRST = "import sys\nprint('first', flush=True)\nwhile True:\n    pass\n"


@pytest.fixture(scope="module")
def sb(engine: Engine) -> Iterator[Sandbox]:
    """Runs that spin until cancelled may take 60 s at most: the policy lets them."""
    policy = parse_policy({"trust": {"untrusted": {"timeout_s": 60}}})
    with Sandbox(as_asked(policy), backend=DockerBackend(engine)) as sandbox:
        yield sandbox


def test_the_chunks_are_the_result_s_output(sandbox: Sandbox) -> None:
    code = (
        "import sys\n"
        "for i in range(50):\n"
        "    print('line', i, 'é', flush=True)\n"
        "    sys.stderr.write(f'err {i}--\\n'); sys.stderr.flush()\n"
        "sys.stdout.buffer.write(b'\\xff no newline-')\n"
    )
    seen = Seen()
    result = sandbox.run(code, on_output=seen, trust="trusted")
    assert result.outcome is Outcome.OK, result.error
    assert seen.joined("stdout") == result.stdout_bytes
    assert seen.joined("stderr") == result.stderr_bytes
    assert result.stdout_bytes.endswith(b"\xff no newline-")
    assert len(seen.chunks) >= 2


def test_output_comes_while_the_program_runs_and_cancel_stops_it(sb: Sandbox, runtime: str) -> None:
    watch = first_chunk_cancels()
    result = sb.run(SPIN_AFTER_FIRST, on_output=watch, runtime=runtime, timeout=60)
    assert result.outcome is Outcome.CANCELLED, (result.outcome, result.error)
    assert result.exit_code == 130 and result.stdout == "first\n"
    assert result.error == "the run was stopped by its caller"
    assert "cancelled: seen enough" in result.notes


def test_a_watch_can_cancel_a_silent_program_from_another_thread(sb: Sandbox) -> None:
    import threading

    watch = Watch()
    code = "import sys, time\nsys.stderr.write('going quiet\\n')\nwhile True:\n    time.sleep(1)\n"

    def stop_when_it_speaks(stream: str, data: bytes) -> None:
        # cancel from a thread of our own, after the run's thread has moved on
        threading.Thread(target=watch.cancel).start()

    watch.on_output = stop_when_it_speaks
    result = sb.run(code, on_output=watch, timeout=60)
    assert result.outcome is Outcome.CANCELLED and result.stderr == "going quiet\n"


def test_an_on_output_that_raises_cancels_the_run(sb: Sandbox) -> None:
    def broken(stream: str, data: bytes) -> None:
        raise RuntimeError("display closed")

    result = sb.run(SPIN_AFTER_FIRST, on_output=broken, timeout=60)
    assert result.outcome is Outcome.CANCELLED
    assert "cancelled: on_output raised RuntimeError: display closed" in result.notes


def test_output_files_never_reach_the_watch(sb: Sandbox) -> None:
    seen = Seen()
    code = "open('out.txt', 'w').write('file body')\nprint('printed')"
    result = sb.run(code, on_output=seen, output_files=["out.txt"])
    assert result.files == {"out.txt": b"file body"}
    assert seen.joined("stdout") == b"printed\n" and seen.joined("stderr") == b""


@pytest.mark.parametrize("language", ["go", "javascript", "typescript"])
def test_compiled_and_node_languages_stream_too(sb: Sandbox, language: str) -> None:
    code = {
        "go": 'package main\nimport "fmt"\nfunc main() { fmt.Println("from go") }\n',
        "javascript": "console.log('from javascript')",
        "typescript": "const who: string = 'typescript'; console.log(`from ${who}`)",
    }[language]
    seen = Seen()
    result = sb.run(code, language=language, on_output=seen)
    assert result.outcome is Outcome.OK, result.error
    assert seen.joined("stdout") == result.stdout_bytes == f"from {language}\n".encode()


def test_a_go_compile_error_streams_the_compiler_s_words(sb: Sandbox) -> None:
    seen = Seen()
    result = sb.run("package main\nfunc main() { undefined() }\n", language="go", on_output=seen)
    assert result.outcome is Outcome.COMPILE_ERROR
    assert seen.joined("stderr") == result.stderr_bytes and b"undefined" in result.stderr_bytes


def test_a_session_call_streams_and_cancelling_it_keeps_the_session(
    sb: Sandbox, runtime: str
) -> None:
    with sb.session("python", runtime=runtime) as session:
        seen = Seen()
        first = session.run("x = 41\nprint('x is', x)", on_output=seen)
        assert seen.joined("stdout") == first.stdout_bytes == b"x is 41\n"
        seen = Seen()
        second = session.run("x + 1", on_output=seen)  # the echoed value streams too
        assert seen.joined("stdout") == second.stdout_bytes == b"42\n"
        cancelled = session.run(SPIN_AFTER_FIRST, on_output=first_chunk_cancels(), timeout=60)
        assert cancelled.outcome is Outcome.CANCELLED and cancelled.stdout == "first\n"
        assert any("was cancelled: it was interrupted" in note for note in cancelled.notes)
        assert session.run("x").stdout == "41\n"  # the interpreter and its variables stay
