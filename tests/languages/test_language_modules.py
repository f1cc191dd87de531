"""The languages package (hazmat/languages/): one module per language, found by the package
itself, each with everything hazmat needs of it (its image, its analysers, its own test, the
names other systems give it), checked here without an engine."""

from __future__ import annotations

import pytest

from hazmat.assess import assessor
from hazmat.assess.assessor import Assessor
from hazmat.backends.agent.session_agent import HAZMAT_REPLS, kept_interpreter, session_environment
from hazmat.images.recipes import RECIPES
from hazmat.languages import LANGUAGES, Repl, get_language
from hazmat.models import RiskLevel


def test_every_module_is_found_in_its_rank_with_python_first() -> None:
    ranks = [lang.rank for lang in LANGUAGES.values()]
    assert ranks == sorted(ranks) and next(iter(LANGUAGES)) == "python"
    assert len(set(ranks)) == len(ranks), "two languages share a rank"


@pytest.mark.parametrize("name", list(LANGUAGES))
def test_each_language_is_whole(name: str) -> None:
    lang = LANGUAGES[name]
    assert lang.image.partition(":")[0].removeprefix("hazmat/") in RECIPES
    assert lang.self_test is not None, f"{name} has no self_test"
    assert (lang.self_test.compile_error is not None) == bool(lang.build), name
    assert lang.hello and lang.version and lang.analysers
    # the words a model reads (hazmat.tools): what a session keeps where it keeps an
    # interpreter, how rich output comes back where the program shows displays
    assert lang.title and bool(lang.keeps) is (lang.repl is not None), name
    assert bool(lang.shows) is lang.displays, name


def test_what_a_session_keeps_is_the_languages_own_declaration() -> None:
    """A session keeps an interpreter for the languages that declare a `Repl`, and for no other;
    one that names hazmat's own gets that code, one that brings its own gets its own."""
    kept = {name: kept_interpreter(lang) for name, lang in LANGUAGES.items()}
    assert {name for name, what in kept.items() if what} == {
        name for name, lang in LANGUAGES.items() if lang.repl
    }
    assert (kept["python"], kept["bash"], kept["javascript"]) == ("interpreter", "shell", None)
    for lang in LANGUAGES.values():
        if lang.repl is None:
            continue
        code = session_environment(lang, 256)["HAZMAT_REPL_CODE"]
        if lang.repl.hazmat:
            assert lang.repl.hazmat in HAZMAT_REPLS and not lang.repl.code
            assert "/tmp/.hazmat-session/go" in code, lang.name
        else:
            assert code == lang.repl.code
    with pytest.raises(ValueError, match="not both"):
        Repl(command="x", code="y", hazmat="python")
    with pytest.raises(ValueError, match="not both"):
        Repl(command="x")


def test_the_images_a_language_brings_are_built_from_its_packages() -> None:
    for lang in LANGUAGES.values():
        for spec in lang.images:
            recipe = RECIPES[spec.name]
            assert recipe.packages[: len(spec.packages)] == spec.packages
            assert recipe.summary == spec.summary


def test_each_languages_own_test_is_assessed_completely_by_its_analysers() -> None:
    with Assessor() as judge:
        for name, lang in LANGUAGES.items():
            assert lang.self_test is not None
            found = judge.assess(lang.self_test.greet, name)
            assert found.complete, (name, found.problems)
            assert list(found.analyzers) == list(lang.analysers), name


def test_a_language_no_analyser_reads_is_never_low(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(assessor, "analyzers_for", lambda language: [])
    with Assessor() as judge:
        found = judge.assess("puts 1", "ruby")
    assert not found.complete and found.level.rank >= RiskLevel.HIGH.rank
    assert found.problems == ("no analyser reads ruby (its module in languages/ names none)",)


@pytest.mark.parametrize(
    ("source_type", "language"),
    [
        ("cpp.g++17", "cpp"),
        ("c.gcc", "c"),
        ("java11", "java"),
        ("python.3", "python"),
        ("python.2", None),
        ("js.9", "javascript"),
        ("rust", "rust"),
        ("pascal.fpc", None),
    ],
)
def test_polygons_source_types_name_the_language(source_type: str, language: str | None) -> None:
    from hazmat.grade import polygon

    found = None if source_type.startswith(polygon._NOT_OURS) else polygon._polygon_language(
        source_type
    )
    assert found == language
    if language is not None:
        assert get_language(language).name == language
