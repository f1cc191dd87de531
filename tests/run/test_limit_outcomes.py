"""The outcome names the limit that bit first, whatever the runtime: a program's own peak
memory past its limit (under runsc the cgroup's limit is a backstop above it), a refused
thread whose crash report then overflowed the output (Go's under gVisor), and the memory a
runtime adds to a sandbox's cgroup limit (Spec)."""

from __future__ import annotations

import dataclasses

import pytest

from hazmat import Sandbox
from hazmat.backends.base import RUNSC_MEMORY_MB, Spec
from hazmat.languages import LANGUAGES
from hazmat.models import Outcome
from hazmat.policy import PRESETS, Runtime
from hazmat.run.results import derive_outcome, limit_notes, memory_message
from hazmat.testing import RecordingBackend, report

MiB = 1024 * 1024
LIMITS = dataclasses.replace(PRESETS["standard"], memory_mb=256, output_bytes=4096)


@pytest.mark.parametrize(
    ("facts", "outcome"),
    [
        ({"exit_code": 0, "memory_exceeded": True}, Outcome.MEMORY_LIMIT),
        ({"exit_code": 1, "memory_exceeded": True}, Outcome.MEMORY_LIMIT),
        ({"exit_code": 137, "timed_out": True, "memory_exceeded": True}, Outcome.MEMORY_LIMIT),
        ({"exit_code": 0, "output_exceeded": True, "memory_exceeded": True}, Outcome.MEMORY_LIMIT),
        # a build past the program's limit is the build's affair: it failed, a compile error
        ({"exit_code": 1, "build_status": 1, "memory_exceeded": True}, Outcome.COMPILE_ERROR),
        ({"exit_code": 137, "output_exceeded": True, "pids_refused": 3}, Outcome.PIDS_LIMIT),
        ({"exit_code": 2, "output_exceeded": True, "pids_refused": 1}, Outcome.PIDS_LIMIT),
        ({"exit_code": 137, "output_exceeded": True}, Outcome.OUTPUT_LIMIT),
        ({"exit_code": 137, "timed_out": True, "pids_refused": 3}, Outcome.TIMEOUT),
    ],
)
def test_the_limit_that_bit_first_decides(facts: dict[str, object], outcome: Outcome) -> None:
    assert derive_outcome(report(**facts)) is outcome


def test_a_peak_past_the_limit_says_how_much() -> None:
    over = report(exit_code=0, memory_exceeded=True, peak_memory_bytes=300 * MiB + 1)
    said = memory_message(over, LIMITS)
    assert (
        said == "the program's memory reached 301 MB at its peak, past its memory limit of 256 MB"
    )
    killed = report(exit_code=137, oom_killed=True, memory_exceeded=True, peak_memory_bytes=1)
    assert memory_message(killed, LIMITS) is None


def test_a_crash_report_after_a_refused_thread_is_noted() -> None:
    flood = report(exit_code=137, output_exceeded=True, pids_refused=2)
    [note] = limit_notes(flood, LIMITS)
    assert "passed the output limit of 4096 bytes" in note


@pytest.mark.parametrize(
    ("runtime", "extra"), [(Runtime.RUNC, 0), (Runtime.RUNSC, RUNSC_MEMORY_MB)]
)
def test_the_cgroup_limit_is_the_programs_plus_the_runtimes_own(
    runtime: Runtime, extra: int
) -> None:
    spec = Spec("c", "img", runtime, 256, 1.0, 64, 64, 64, build_memory_mb=512)
    assert spec.program_cgroup_mb == 256 + extra
    assert spec.start_memory_mb == 512 + extra
    assert Spec("python", "img", runtime, 256, 1.0, 64, 64, 64).start_memory_mb == 256 + extra
    kept = Spec("c", "img", runtime, 256, 1.0, 64, 64, 64, session=True, kept_build=True)
    assert kept.program_cgroup_mb == 256 + extra
    # a session's too: under runsc its calls are ended at 256 by the host's watch, the
    # backstop keeping gVisor's own memory from ending the sandbox (backends/container/memory.py)
    session = Spec("python", "img", runtime, 256, 1.0, 64, 64, 64, session=True)
    assert session.start_memory_mb == session.program_cgroup_mb == 256 + extra


@pytest.mark.parametrize(
    ("facts", "said"),
    [
        # a kept build's later test: no build status of its own, but its program started
        ({"program_ms": 40.0}, "the program was killed at its memory limit of"),
        # the sandbox ended before the agent said the build was done (gVisor's compiler)
        ({}, "the build step was killed at its memory limit of"),
    ],
)
def test_a_memory_kill_names_the_build_only_when_no_program_started(
    facts: dict[str, object], said: str
) -> None:
    killed = report(exit_code=137, oom_killed=True, **facts)
    with Sandbox(backend=RecordingBackend(killed)) as sb:
        result = sb.run("int main(void) { return 0; }", "c", trust="unknown")
    assert result.outcome is Outcome.MEMORY_LIMIT
    assert result.error is not None and result.error.startswith(said), result.error


@pytest.mark.parametrize(
    "language", sorted(name for name, lang in LANGUAGES.items() if lang.out_of_memory)
)
def test_a_runtimes_own_out_of_memory_error_is_the_memory_limit(language: str) -> None:
    """Judges call a JVM's OutOfMemoryError (Python's MemoryError, V8's heap, ...) a memory
    limit, not a runtime error: the program failed because its memory ran out."""
    lang = LANGUAGES[language]
    said = f"some output\n{lang.out_of_memory[0]}: the runtime's words\n  at its stack\n".encode()
    assert derive_outcome(report(exit_code=1, stderr=said), lang) is Outcome.MEMORY_LIMIT
    assert derive_outcome(report(exit_code=134, stderr=said), lang) is Outcome.MEMORY_LIMIT
    assert derive_outcome(report(exit_code=0, stderr=said), lang) is Outcome.OK  # it coped
    assert derive_outcome(report(exit_code=1, stderr=b"ValueError\n"), lang) is Outcome.ERROR
    assert derive_outcome(report(exit_code=1, stderr=said)) is Outcome.ERROR  # no language
    built = report(exit_code=1, build_status=1, stderr=said)  # the compiler's, not the program's
    assert derive_outcome(built, lang) is Outcome.COMPILE_ERROR


def test_the_sentence_quotes_the_runtimes_words() -> None:
    said = b'Exception in thread "main" java.lang.OutOfMemoryError: Java heap space\n\tat Main\n'
    backend = RecordingBackend(report(exit_code=1, stderr=said))
    result = Sandbox(backend=backend).run("class Main {}", "java")
    assert result.outcome is Outcome.MEMORY_LIMIT and result.exit_code == 137  # the outcome's
    assert result.error == (
        "the program ran out of memory (its memory limit is 256 MB) and failed with status 1: "
        'Exception in thread "main" java.lang.OutOfMemoryError: Java heap space'
    )
