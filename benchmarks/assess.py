"""Static assessment speed: a 200-line Python file through hazmat's rules and Bandit (warm),
each language's parser and rules, and Semgrep cold and cached.

    .venv/bin/python benchmarks/assess.py --write
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from hazmat.assess.assessor import Assessor
from hazmat.assess.bandit import BanditAnalyzer
from hazmat.assess.go import GoAnalyzer
from hazmat.assess.javascript import JavaScriptAnalyzer
from hazmat.assess.python_ast import PythonAnalyzer
from hazmat.assess.semgrep import Semgrep
from hazmat.assess.syntax_tree import parse

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs" / "benchmarks.md"
CORPUS = ROOT / "tests" / "assess" / "corpus" / "benign"
BEGIN, END = "<!-- assess:begin -->", "<!-- assess:end -->"


def sample(language: str, lines: int = 200) -> str:
    """About `lines` lines of realistic code: the benign corpus, concatenated (Go: generated
    functions in one file, since Go files cannot be concatenated)."""
    if language == "go":
        body = ['package main\n\nimport (\n\t"fmt"\n\t"strings"\n)\n']
        n = 0
        while sum(part.count("\n") for part in body) < lines - 12:
            body.append(
                f"func f{n}(words []string) map[string]int {{\n"
                "\tcounts := map[string]int{}\n"
                "\tfor _, w := range words {\n"
                "\t\tcounts[strings.ToLower(w)]++\n"
                "\t}\n"
                "\treturn counts\n"
                "}\n\n"
            )
            n += 1
        body.append('func main() {\n\tfmt.Println(f0(strings.Fields("a b a")))\n}\n')
        return "".join(body)
    suffix = {"python": ".py", "javascript": ".js", "typescript": ".ts"}[language]
    parts: list[str] = []
    for path in sorted(CORPUS.glob(f"*{suffix}")) * 4:
        if sum(p.count("\n") for p in parts) >= lines:
            break
        parts.append(path.read_text(encoding="utf-8").rstrip("\n") + "\n\n")
    return "".join(parts)


def timed(func: Callable[[], object], runs: int) -> tuple[float, float]:
    """Median and p95 in milliseconds."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        func()
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return statistics.median(times), times[max(0, int(len(times) * 0.95) - 1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--semgrep-runs", type=int, default=3)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    rows: list[tuple[str, str, float, float]] = []

    code = {lang: sample(lang) for lang in ("python", "javascript", "typescript", "go")}
    lines = {lang: text.count("\n") for lang, text in code.items()}
    with Assessor() as assessor:
        assessor.start()
        for lang, text in code.items():
            assessor.assess(text, lang)  # warm
            med, p95 = timed(lambda t=text, la=lang: assessor.assess(t, la), args.runs)
            what = "hazmat rules + Bandit" if lang == "python" else "parse + hazmat rules"
            rows.append((f"`Assessor.assess`, {lines[lang]}-line {lang}", what, med, p95))
            print(rows[-1], flush=True)

    py = code["python"]
    ast_rules, bandit = PythonAnalyzer(), BanditAnalyzer()
    rows.append(
        (
            f"in process, {lines['python']}-line python",
            "hazmat AST rules",
            *timed(lambda: ast_rules.analyze(py, "python"), args.runs),
        )
    )
    rows.append(
        (
            f"in process, {lines['python']}-line python",
            "Bandit (warm)",
            *timed(lambda: bandit.analyze(py, "python"), args.runs),
        )
    )
    bandit.close()
    for lang, grammar in (("javascript", "javascript"), ("typescript", "typescript"), ("go", "go")):
        text = code[lang]
        rows.append(
            (
                f"in process, {lines[lang]}-line {lang}",
                "tree-sitter parse only",
                *timed(lambda t=text, g=grammar: parse(t, g), args.runs),
            )
        )
        analyzer = GoAnalyzer() if lang == "go" else JavaScriptAnalyzer()
        rows.append(
            (
                f"in process, {lines[lang]}-line {lang}",
                "parse + hazmat rules",
                *timed(lambda t=text, a=analyzer, la=lang: a.analyze(t, la), args.runs),
            )
        )
    for row in rows[-8:]:
        print(row, flush=True)

    with tempfile.TemporaryDirectory() as cache:
        semgrep = Semgrep(cache_dir=Path(cache))
        if semgrep.available:
            for lang, text in code.items():
                rows.append(
                    (
                        f"Semgrep, {lines[lang]}-line {lang}",
                        "cold (no cache)",
                        *timed(
                            lambda t=text, la=lang: semgrep.scan(t, la, use_cache=False),
                            args.semgrep_runs,
                        ),
                    )
                )
                semgrep.scan(text, lang)
                rows.append(
                    (
                        f"Semgrep, {lines[lang]}-line {lang}",
                        "cached",
                        *timed(lambda t=text, la=lang: semgrep.scan(t, la), args.runs),
                    )
                )
                print(rows[-2], rows[-1], flush=True)
            version = semgrep.version
        else:
            version = "not installed"

    table = "\n".join(
        [
            f"Measured {datetime.now(UTC):%Y-%m-%d} with `benchmarks/assess.py --runs "
            f"{args.runs}`. `Assessor.assess` is end to end: validation, the request to the "
            "warm worker process, every in-process analyser for the language, the verdict. "
            "In-process rows time one analyser alone. Semgrep "
            f"{version}, cold: a full `semgrep scan` subprocess (median of "
            f"{args.semgrep_runs}); cached: the on-disk result for the same code and rules. "
            "Samples: the benign corpus concatenated (Go: generated functions).",
            "",
            "| what | analysers | median ms | p95 ms |",
            "|---|---|---:|---:|",
            *(
                f"| {what} | {analysers} | {med:.2f} | {p95:.2f} |"
                for what, analysers, med, p95 in rows
            ),
        ]
    )
    print(table)
    if args.write:
        text = DOCS.read_text()
        if BEGIN not in text:
            text += f"\n## Static assessment\n\n{BEGIN}\n{END}\n"
        before, rest = text.split(BEGIN, 1)
        DOCS.write_text(f"{before}{BEGIN}\n{table}\n{END}{rest.split(END, 1)[1]}")
        print(f"written to {DOCS}")


if __name__ == "__main__":
    main()
