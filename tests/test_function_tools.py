"""hazmat.tools: the function-calling schemas and the handler, over the pipeline with the
recording backend (the examples in examples/agents/ run them on the real engine)."""

from __future__ import annotations

import json

import pytest

from hazmat import Sandbox
from hazmat.backends.base import Job, RunReport
from hazmat.testing import RecordingBackend, as_asked, report
from hazmat.tools import CodeTools


def answer(job: Job) -> RunReport:
    """A Python call's report: the code's own text back on stdout; a chart for code that
    plots; a ZeroDivisionError for code that divides by zero."""
    if "main.py" not in job.program.files:
        return report()  # a files call: an upload
    code = job.program.files["main.py"].decode()
    if "1 / 0" in code:
        stderr = (
            b'Traceback (most recent call last):\n  File "/work/main.py", line 1, in <module>\n'
            b"ZeroDivisionError: division by zero\n"
        )
        return report(exit_code=1, stderr=stderr)
    if "plot" in code:
        shown = json.dumps(
            {"image/png": "iVBORw0KGgoAAAAAAAAAAAAAAAAAAAAA", "text/plain": "<Figure>"}
        )
        return report(stdout=b"plotted\n", displays=shown.encode() + b"\n")
    return report(stdout=code.encode() + b"\n")


@pytest.fixture
def backend() -> RecordingBackend:
    return RecordingBackend(answer=answer)


@pytest.fixture
def tools(backend: RecordingBackend) -> CodeTools:
    sandbox = Sandbox(as_asked(), backend=backend)
    return CodeTools(sandbox)


def test_the_schemas_are_the_vendors_shapes(tools: CodeTools) -> None:
    openai, anthropic = tools.openai(), tools.anthropic()
    assert [t["function"]["name"] for t in openai] == ["run_code", "write_file", "read_file"]
    assert all(t["type"] == "function" for t in openai)
    assert [t["name"] for t in anthropic] == ["run_code", "write_file", "read_file"]
    for tool in anthropic:
        schema = tool["input_schema"]
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        assert all(p["description"] for p in schema["properties"].values())


def test_calls_run_in_one_session_and_come_back_for_each_vendor(
    tools: CodeTools, backend: RecordingBackend
) -> None:
    first = tools.handle("run_code", '{"code": "x = 41"}')  # OpenAI's: JSON text
    second = tools.handle("run_code", {"code": "x + 1", "timeout": 5})  # Anthropic's: an object
    assert json.loads(first.text)["stdout"] == "x = 41\n" and not first.is_error
    assert json.loads(second.text)["outcome"] == "ok"
    [kept] = backend.kept  # one session for both calls
    assert [mode for mode, _ in kept.calls] == ["run", "run"]
    assert kept.calls[1][1].limits.timeout_s == 5
    assert first.openai_message("call_1") == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": first.text,
    }
    block = second.anthropic_block("toolu_1")
    assert block["type"] == "tool_result" and block["tool_use_id"] == "toolu_1"
    assert "is_error" not in block


def test_a_chart_comes_back_as_an_image_and_a_failure_with_its_exception(
    tools: CodeTools,
) -> None:
    chart = tools.handle("run_code", {"code": "plot()"})
    [(mime, data)] = chart.images
    assert mime == "image/png" and data.startswith("iVBORw0KGgo")
    image = chart.anthropic_block("t")["content"][1]
    assert image == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": data},
    }
    failed = json.loads(tools.handle("run_code", {"code": "1 / 0"}).text)
    assert failed["outcome"] == "error"
    assert failed["exception"]["name"] == "ZeroDivisionError"


@pytest.mark.parametrize(
    ("name", "arguments", "says"),
    [
        ("run_code", "{not json", "not a JSON object"),
        ("run_code", "[1, 2]", "must be a JSON object"),
        ("run_code", {}, "run_code needs a string 'code'"),
        ("run_code", {"code": "1", "shell": True}, "run_code has no argument 'shell'"),
        ("rm_rf", {}, "there is no tool 'rm_rf'; the tools are: run_code, write_file, read_file"),
        ("run_code", {"code": ""}, "code is empty"),
    ],
)
def test_a_bad_call_is_an_error_the_model_reads_never_a_raise(
    tools: CodeTools, name: str, arguments: object, says: str
) -> None:
    output = tools.handle(name, arguments)  # type: ignore[arg-type]
    assert output.is_error and says in json.loads(output.text)["error"]
    assert output.anthropic_block("t")["is_error"] is True


def test_files_go_in_and_come_out(tools: CodeTools, backend: RecordingBackend) -> None:
    written = tools.handle("write_file", {"name": "notes.txt", "content": "hello"})
    assert json.loads(written.text) == {"written": "notes.txt"}
    [kept] = backend.kept
    mode, job = kept.calls[-1]
    assert mode == "files" and job.program.files["notes.txt"] == b"hello"
    backend.answer = lambda job: report(files={"notes.txt": b"\xff\xfe"})
    read = json.loads(tools.handle("read_file", {"name": "notes.txt"}).text)
    assert read == {"name": "notes.txt", "base64": "//4="}


def test_a_session_that_ended_is_replaced_and_the_model_is_told(
    tools: CodeTools, backend: RecordingBackend
) -> None:
    tools.handle("run_code", {"code": "x = 1"})
    assert tools._session is not None
    tools._session.close()
    again = json.loads(tools.handle("run_code", {"code": "x"}).text)
    assert "this is a new one, without the variables" in again["note"]
    assert len(backend.kept) == 2
    tools.close()
    assert backend.kept[1].ended is not None


def test_install_packages_is_offered_only_where_the_policy_lets_the_session_install() -> None:
    from hazmat.policy.file import parse_policy

    index = {"levels": ["unknown"], "python": {"index": "https://pypi.mirror.example/simple/"}}
    failed = report(exit_code=3, stderr=b"ERROR: No matching distribution found for nope\n")
    sandbox = Sandbox(parse_policy({"packages": index}), backend=RecordingBackend(failed))
    with CodeTools(sandbox, trust="unknown") as tools, CodeTools(sandbox) as untrusted:
        assert [t["name"] for t in tools.anthropic()][-1] == "install_packages"
        assert "install_packages" not in [t["name"] for t in untrusted.anthropic()]
        wrong = tools.handle("install_packages", {"packages": "nope"})
        assert wrong.is_error and "needs a list 'packages'" in wrong.text
        missing = tools.handle("install_packages", '{"packages": ["nope"]}')
        assert missing.is_error and "No matching distribution found for nope" in missing.text
        absent = untrusted.handle("install_packages", {"packages": ["six"]})
        assert absent.is_error and "there is no tool 'install_packages'" in absent.text
    sandbox.close()
