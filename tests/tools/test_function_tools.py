"""hazmat.tools: the function-calling schemas and the handler, over the pipeline with the
recording backend (the examples in examples/agents/ run them on the real engine)."""

from __future__ import annotations

import copy
import json

import pytest
from anthropic.types import ToolParam, ToolResultBlockParam
from openai.lib._pydantic import _ensure_strict_json_schema
from openai.types.chat import ChatCompletionFunctionToolParam, ChatCompletionUserMessageParam
from openai.types.responses import FunctionToolParam
from openai.types.responses.response_input_param import FunctionCallOutput
from pydantic import TypeAdapter

from hazmat import Sandbox
from hazmat._exceptions import UnknownLanguage
from hazmat.backends.base import Job, RunReport
from hazmat.languages import LANGUAGES
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


def test_the_schemas_are_the_vendors_shapes_and_openais_are_strict(tools: CodeTools) -> None:
    openai, responses, anthropic = tools.openai(), tools.responses(), tools.anthropic()
    names = ["run_code", "write_file", "read_file"]
    assert [t["function"]["name"] for t in openai] == [t["name"] for t in responses] == names
    assert [t["name"] for t in anthropic] == names
    # the vendors' own request types (their SDKs, pinned in the dev extras) take them
    TypeAdapter(list[ChatCompletionFunctionToolParam]).validate_python(openai)
    TypeAdapter(list[FunctionToolParam]).validate_python(responses)
    TypeAdapter(list[ToolParam]).validate_python(anthropic)
    for tool in [*(t["function"] for t in openai), *responses]:
        # strict mode's rules as OpenAI's SDK applies them: a schema already strict is
        # unchanged by them (every property required, no other allowed)
        assert tool["strict"] is True
        schema = tool["parameters"]
        assert _ensure_strict_json_schema(copy.deepcopy(schema), path=(), root={}) == schema
    for tool in anthropic:
        schema = tool["input_schema"]
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        assert all(p["description"] for p in schema["properties"].values())


@pytest.mark.parametrize("language", sorted(LANGUAGES))
def test_run_code_says_what_the_language_keeps_and_how_it_looks(language: str) -> None:
    lang = LANGUAGES[language]
    sandbox = Sandbox(as_asked(), backend=RecordingBackend())
    said = CodeTools(sandbox, language).anthropic()[0]["description"]
    assert said.startswith(f"Run {lang.title} code") and lang.hello.strip() in said
    assert ("keeps its files only" in said) is (lang.repl is None)
    assert (lang.keeps in said) if lang.keeps else "Python" not in said
    assert lang.shows in said


def test_an_image_is_a_session_of_its_own_and_null_is_an_argument_left_out(
    tools: CodeTools, backend: RecordingBackend
) -> None:
    run = tools.anthropic()[0]["input_schema"]["properties"]
    assert run["image"]["enum"] == ["python", "python-data"]  # the level's, the default first
    tools.handle("run_code", '{"code": "x = 1", "timeout": null, "image": null}')
    tools.handle("run_code", {"code": "import pandas", "image": "python-data"})
    tools.handle("write_file", {"name": "a.txt", "content": "in the data image"})
    tools.handle("run_code", {"code": "x", "image": "python"})
    first, data = backend.kept
    assert [m for m, _ in first.calls] == ["run", "run"]
    assert [m for m, _ in data.calls] == ["run", "files"]
    assert "python-data" in data.calls[0][1].spec.image
    refused = tools.handle("run_code", {"code": "1", "image": "gcc"})
    assert refused.is_error and "one of python, python-data, not 'gcc'" in refused.text
    other = CodeTools(Sandbox(as_asked(), backend=RecordingBackend()), "javascript")
    assert "image" not in other.anthropic()[0]["input_schema"]["properties"]


def test_an_unknown_language_is_refused_when_the_tools_are_made() -> None:
    with pytest.raises(UnknownLanguage, match="cobol"):
        CodeTools(Sandbox(as_asked(), backend=RecordingBackend()), "cobol")


def test_calls_run_in_one_session_and_come_back_for_each_vendor(
    tools: CodeTools, backend: RecordingBackend
) -> None:
    first = tools.handle("run_code", '{"code": "x = 41"}')  # OpenAI's: JSON text
    second = tools.handle("run_code", {"code": "x + 1", "timeout": 5})  # Anthropic's: an object
    assert json.loads(first.text)["stdout"] == "x = 41\n" and not first.is_error
    assert first.responses_item("fc_1") == {
        "type": "function_call_output",
        "call_id": "fc_1",
        "output": first.text,
    }
    assert first.openai_images_message() is None
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
    url = f"data:image/png;base64,{data}"
    item = chart.responses_item("call_1")  # the Responses API carries the image with the text
    assert item["output"][1] == {"type": "input_image", "image_url": url}
    message = chart.openai_images_message()  # Chat Completions: a message of its own
    assert message is not None and message["content"][1]["image_url"]["url"] == url
    TypeAdapter(FunctionCallOutput).validate_python(item)
    TypeAdapter(ChatCompletionUserMessageParam).validate_python(message)
    TypeAdapter(ToolResultBlockParam).validate_python(chart.anthropic_block("t"))
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
        ("run_code", {"code": "1", "timeout": "5"}, "run_code needs a number 'timeout'"),
        ("run_code", {"code": "1", "timeout": True}, "run_code needs a number 'timeout'"),
        ("run_code", {"code": None}, "run_code needs a string 'code'"),
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
    assert read == {"name": "notes.txt", "size": 2, "base64": "//4="}


def test_a_session_that_ended_is_replaced_and_the_model_is_told(
    tools: CodeTools, backend: RecordingBackend
) -> None:
    tools.handle("run_code", {"code": "x = 1"})
    [session] = tools._sessions.values()
    session.close()
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
