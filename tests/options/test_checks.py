from __future__ import annotations

import pytest

from hazmat import InputError, UnknownLanguage, UnsafeFileName, get_language
from hazmat.languages import language_for_path
from hazmat.models import check_code
from hazmat.options.checks import check_file_name


@pytest.mark.parametrize(
    "name",
    [
        "..",
        ".",
        "a/b",
        "../etc/passwd",
        "/etc/passwd",
        "a\\b",
        "nul\x00byte",
        "x" * 256,
        "é" * 128,
        "line\nbreak",
        " lead",
        "trail ",
        "",
        "bidi\u202etxt.py",
        "tab\tname",
    ],
)
def test_unsafe_file_names_are_refused(name: str) -> None:
    with pytest.raises(UnsafeFileName):
        check_file_name(name)


@pytest.mark.parametrize(
    "name", ["data.csv", "x" * 255, "é" * 127, "with space.txt", ".hidden", "-dash"]
)
def test_plain_file_names_are_accepted(name: str) -> None:
    assert check_file_name(name) == name


def test_code_checks() -> None:
    assert check_code(b"print(1)") == "print(1)"
    with pytest.raises(InputError, match="empty"):
        check_code("  \n ")
    with pytest.raises(InputError, match="not valid UTF-8"):
        check_code(b"print('\xff')")
    with pytest.raises(InputError, match="NUL"):
        check_code("print(1)\x00")


def test_languages_and_aliases() -> None:
    assert get_language("py").name == "python"
    assert get_language("TS").name == "typescript"
    assert get_language("golang").name == "go"
    assert get_language("sh").name == "bash"
    assert get_language("C++").name == "cpp"
    assert get_language("rb").name == "ruby"
    assert get_language("rs").name == "rust"
    assert language_for_path("x/y/prog.mjs").name == "javascript"
    assert language_for_path("solve.cc").name == "cpp"
    assert language_for_path("Solution.java").name == "java"
    assert language_for_path("check.bash").name == "bash"
    assert language_for_path("fit.R").name == "r"
    with pytest.raises(
        UnknownLanguage,
        match="known: bash, c, cpp, go, java, javascript, python, r, ruby, rust, typescript",
    ):
        get_language("cobol")
    with pytest.raises(UnknownLanguage, match="--lang"):
        language_for_path("notes.txt")
