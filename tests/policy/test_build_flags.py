"""Compiler flags a run may ask for (build_flags.py): the policy's allowlist per level and
language, the request's check against it, and where the flags go (the build command, the
result, the audit record, the wire). tests/execution/test_judging.py builds with them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hazmat import InputError, Policy, PolicyError, Sandbox, TrustLevel, parse_policy
from hazmat.backends.agent.session_agent import session_environment
from hazmat.backends.container.hardening import environment
from hazmat.grade.task_runs import check_task
from hazmat.grade.tasks import parse_task
from hazmat.languages import get_language
from hazmat.policy import PRESETS, TrustSettings
from hazmat.policy.build_flags import DEFAULT_BUILD_FLAGS, FLAG_LANGUAGES, build_command
from hazmat.run.intake import admit
from hazmat.service.wire import request_from_wire, request_to_wire, result_from_wire, result_to_wire
from hazmat.testing import RecordingBackend, audit_records

CPP = "int main() { return 0; }\n"


def run(policy: Policy, flags: object, language: str = "cpp") -> RecordingBackend:
    backend = RecordingBackend()
    with Sandbox(policy, backend=backend) as sandbox:
        sandbox.run(CPP, language, build_flags=flags, trust="unknown")
    return backend


def test_allowed_flags_reach_the_build_command_after_hazmats_own() -> None:
    backend = run(Policy(), ["-std=c++17", "-DONLINE_JUDGE"])
    job = backend.jobs[0]
    assert job.build_flags == ("-std=c++17", "-DONLINE_JUDGE")
    assert job.spec.build_flags == job.build_flags  # a container is made for them
    cpp = get_language("cpp")
    build = environment(job.spec, cpp, 1000)["HAZMAT_BUILD"]
    assert build == cpp.build + " -std=c++17 -DONLINE_JUDGE"
    assert build.index("-std=c++20") < build.index("-std=c++17")  # the last -std wins
    kept = session_environment(cpp, 256, True, False, job.build_flags)["HAZMAT_BUILD"]
    assert kept.endswith(" -std=c++17 -DONLINE_JUDGE")
    assert build_command(cpp, ()) == cpp.build


@pytest.mark.parametrize(
    ("flags", "language", "message"),
    [
        (
            ["-fplugin=evil.so"],
            "cpp",
            r"'-fplugin=evil\.so' is not allowed for cpp at this level "
            r"\(policy trust\.unknown\.build_flags\.cpp: -O0 ",
        ),
        (["-O2; rm -rf /"], "cpp", r"not allowed for cpp"),
        (["-O2"], "python", r"python takes no compiler flags \(only c, cpp\)"),
        (["-std=c++17"], "c", r"'-std=c\+\+17' is not allowed for c"),
        ("-O2", "cpp", r"option 'build_flags' must be a list of compiler flags"),
        ([2], "cpp", r"2 is not allowed for cpp"),
    ],
)
def test_a_flag_outside_the_levels_allowlist_is_refused_naming_the_key(
    flags: object, language: str, message: str
) -> None:
    with pytest.raises(InputError, match=message):
        admit(Policy(), CPP, language, **{"build_flags": flags, "trust": "unknown"})


def test_a_policy_replaces_a_languages_allowlist_per_level() -> None:
    policy = parse_policy({"trust": {"untrusted": {"build_flags": {"c++": ["-O2"], "c": []}}}})
    assert policy.settings("untrusted").build_flags["cpp"] == ("-O2",)
    assert policy.settings("unknown").build_flags == DEFAULT_BUILD_FLAGS
    with pytest.raises(InputError, match=r"policy trust\.untrusted\.build_flags\.cpp: -O2\)"):
        admit(policy, CPP, "cpp", **{"build_flags": ["-O3"], "trust": "untrusted"})
    with pytest.raises(InputError, match=r"build_flags\.c: none\)"):
        admit(policy, CPP, "c", **{"build_flags": ["-O2"], "trust": "untrusted"})
    admit(policy, CPP, "cpp", **{"build_flags": ["-O2"], "trust": "untrusted"})


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"python": ["-O2"]}, r"build_flags\.python: python takes no compiler flags"),
        ({"cpp": "-O2"}, r"build_flags\.cpp: expected a list of flags"),
        ({"cpp": ["-O2 -O3"]}, r"'-O2 -O3' is not a compiler flag hazmat passes"),
        ({"cpp": ["$(id)"]}, r"'\$\(id\)' is not a compiler flag"),
        ({"cpp": ["@/etc/passwd"]}, r"'@/etc/passwd' is not a compiler flag"),
        ({"cobol": []}, r"build_flags\.cobol: unknown language 'cobol'"),
        (["-O2"], r"trust\.unknown\.build_flags"),
    ],
)
def test_a_malformed_allowlist_names_its_key(given: object, message: str) -> None:
    with pytest.raises(PolicyError, match=message):
        parse_policy({"trust": {"unknown": {"build_flags": given}}})


@pytest.mark.parametrize(
    "flag",
    [
        "-fplugin=x.so", "-fplugin-arg-x-y=z", "-fpass-plugin=x.so", "-B.", "-Bbin",
        "-wrapper", "-specs=x", "-load", "-Xclang", "-Xlinker", "-mllvm", "-cc1",
        "-Wl,--plugin=x.so", "-Wa,-x", "-Wp,-imacros,x", "-Tscript.ld", "-L.", "-I.",
        "-include", "-imacros", "-isystem.", "-iplugindir=.", "-fmodule-mapper=x",
        "-fcompare-debug=-fplugin=x.so",
    ],
)  # fmt: skip
def test_a_flag_that_loads_code_is_refused_in_any_allowlist(flag: str) -> None:
    """A flag that makes the toolchain load or run code the source does not name is refused
    in the policy itself: a file's, and settings made in Python."""
    with pytest.raises(PolicyError, match=r"build_flags\.cpp: .* makes the compiler load or run"):
        parse_policy({"trust": {"unknown": {"build_flags": {"cpp": ["-O2", flag]}}}})
    with pytest.raises(PolicyError, match=r"^build_flags\.c: .* no level may allow it"):
        TrustSettings(PRESETS["strict"], build_flags={"c": (flag,)})


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"c++": ["-O2", "-fplugin=x.so"]}, r"build_flags\.c\+\+: .*load or run code"),
        ({"cpp": ["-O2"], "c++": ["-O3"]}, r"build_flags\.c\+\+: names cpp, as the key 'cpp'"),
        ({"cobol": ["-O2"]}, r"build_flags\.cobol: unknown language 'cobol'"),
        ({"python": ()}, r"build_flags\.python: python takes no compiler flags"),
        ({"cpp": "-O2"}, r"build_flags\.cpp: expected a list of flags"),
    ],
)
def test_every_language_key_of_an_allowlist_made_in_python_is_checked(
    given: dict[str, object], message: str
) -> None:
    """Settings built in Python are checked as a file's are: no key is left unread."""
    with pytest.raises(PolicyError, match=message):
        TrustSettings(PRESETS["strict"], build_flags=given)
    with pytest.raises(PolicyError, match=message):
        parse_policy({"trust": {"unknown": {"build_flags": given}}})


def test_an_alias_key_is_kept_under_its_languages_name() -> None:
    settings = TrustSettings(PRESETS["strict"], build_flags={"c++": ["-O3"]})
    assert dict(settings.build_flags) == {"cpp": ("-O3",)}
    levels = {**Policy().levels, TrustLevel.UNKNOWN: settings}
    with Sandbox(Policy(levels=levels), backend=RecordingBackend()) as box:
        with pytest.raises(InputError, match=r"'-O2' is not allowed for cpp"):
            box.request(CPP, "cpp", build_flags=["-O2"], trust="unknown")
        box.request(CPP, "cpp", build_flags=["-O3"], trust="unknown")


def test_every_default_flag_is_one_word_for_a_language_that_takes_flags() -> None:
    assert set(DEFAULT_BUILD_FLAGS) == set(FLAG_LANGUAGES)
    for flags in DEFAULT_BUILD_FLAGS.values():
        parse_policy({"trust": {"unknown": {"build_flags": {"cpp": list(flags)}}}})


def test_the_flags_are_in_the_result_the_audit_record_and_on_the_wire() -> None:
    backend = RecordingBackend()
    with Sandbox(Policy(), backend=backend) as sandbox:
        result = sandbox.run(CPP, "cpp", build_flags=["-O3"], trust="unknown")
        plain = sandbox.run(CPP, "cpp", trust="unknown")
        records = audit_records(sandbox)
    assert result.build_flags == ("-O3",) and result.to_dict()["build_flags"] == ["-O3"]
    assert plain.to_dict()["build_flags"] == [] and backend.jobs[1].build_flags == ()
    started = [data for kind, data in records if kind == "run.started"][-2:]  # this test's
    assert started[0]["build_flags"] == ["-O3"] and "build_flags" not in started[1]
    assert result_from_wire(result_to_wire(result)).build_flags == ("-O3",)
    request = admit(Policy(), CPP, "cpp", **{"build_flags": ["-O1"]})
    assert request_from_wire(request_to_wire(request))[2]["build_flags"] == ["-O1"]


def test_a_task_takes_its_own_languages_flags_and_the_policy_checks_them() -> None:
    line = {
        "id": "t", "language": "c++", "code": CPP, "tests": [{"stdin": "", "expected_stdout": ""}],
        "build_flags": {"cpp": ["-O3", "-DONLINE_JUDGE"], "c": ["-std=c11"]},
    }  # fmt: skip
    task = parse_task(line)
    assert task.build_flags == ("-O3", "-DONLINE_JUDGE")
    assert parse_task({**line, "language": "python"}).build_flags == ()

    def request(code: str, language: str, **options: object) -> object:
        return admit(Policy(), code, language, **options)

    check_task(task, request, {})
    bad = parse_task({**line, "build_flags": {"cpp": ["-fplugin=x"]}})
    with pytest.raises(InputError, match=r"task 't', run 1: build_flags: '-fplugin=x' is not"):
        check_task(bad, request, {})
    with pytest.raises(InputError, match=r"task\.build_flags\['cobol'\]: unknown language"):
        parse_task({**line, "build_flags": {"cobol": []}})


def test_docs_policy_lists_hazmats_own_flags_as_they_are() -> None:
    """docs/policy.md's list of hazmat's flags is DEFAULT_BUILD_FLAGS, word for word."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "policy.md").read_text()
    listed = text.split("hazmat's list, at every level:", 1)[1].split("\n\n", 1)[0]
    common, rest = listed.split("for C `-std=`", 1)
    c_std, cpp_std = rest.split("for C++ `-std=`", 1)

    def ticked(part: str) -> list[str]:
        return re.findall(r"`([^`]+)`", part)

    c, cpp = DEFAULT_BUILD_FLAGS["c"], DEFAULT_BUILD_FLAGS["cpp"]
    assert ticked(common) == [f for f in c if f in cpp]
    assert [f"-std={v}" for v in ticked(c_std)] == [f for f in c if f.startswith("-std=")]
    standards = [v for v in ticked(cpp_std) if v.startswith("c++")]
    gnu = [v.replace("c++", "gnu++") for v in standards]  # "and their gnu++ forms"
    assert sorted(f"-std={v}" for v in standards + gnu) == sorted(
        f for f in cpp if f.startswith("-std=")
    )
