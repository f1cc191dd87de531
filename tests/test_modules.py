"""ES module or CommonJS: how a JavaScript or TypeScript program's source file is named."""

from __future__ import annotations

import re

import pytest

from hazmat import InputError, Policy, Sandbox
from hazmat.languages import get_language
from hazmat.run.module_kind import check_module, module_for
from hazmat.testing import RecordingBackend

JS, TS = get_language("javascript"), get_language("typescript")


@pytest.mark.parametrize(
    ("code", "esm"),
    [
        ("import fs from 'fs';\nfs.readFileSync('x')", True),
        ("export const a = 1;", True),
        ("export default function f() {}", True),
        ("const x = await fetchIt();", True),
        ("for await (const line of lines()) {}", True),
        ("if (ok) { await later(); }", True),
        ("console.log(import.meta.url)", True),
        ("const fs = require('fs');", False),
        ("async function f() { await g(); }", False),
        ("const f = async () => { await g(); };", False),
        ("class A { async m() { await g(); } }", False),
        ("const m = await_this(); // import x from 'y'", False),
        ("const s = 'import x from \"y\"';", False),
        ("import('./lazy.mjs').then(m => m.run());", False),
    ],
)
def test_javascript_is_an_es_module_when_its_top_level_says_so(code: str, esm: bool) -> None:
    assert module_for(JS, code, None) == ("esm" if esm else None)


@pytest.mark.parametrize(
    ("code", "esm"),
    [
        ("const n: number = await Promise.resolve(1);", True),
        ("const u: string = import.meta.url;", True),
        ("import * as fs from 'fs';\nconsole.log(__dirname)", False),  # esbuild makes it CJS
        ("export function f(): void {}", False),
        ("async function f(): Promise<void> { await g(); }", False),
    ],
)
def test_typescript_is_an_es_module_only_when_commonjs_cannot_express_it(
    code: str, esm: bool
) -> None:
    assert module_for(TS, code, None) == ("esm" if esm else None)


def test_a_chosen_module_system_wins_and_names_the_source_file() -> None:
    assert JS.source_for(module_for(JS, "require('x')", "esm")) == "main.mjs"
    assert JS.source_for(module_for(JS, "import x from 'x'", "commonjs")) == "main.cjs"
    assert TS.source_for(module_for(TS, "await x", "auto")) == "main.mts"
    assert TS.source_for(module_for(TS, "let a = 1", None)) == "main.ts"
    assert module_for(get_language("python"), "await x", None) is None


def test_bad_module_options_are_input_errors() -> None:
    with pytest.raises(InputError, match="unknown module system 'amd'"):
        check_module(JS, "amd")
    with pytest.raises(InputError, match="for JavaScript and TypeScript, not python"):
        check_module(get_language("python"), "esm")
    backend = RecordingBackend()
    with Sandbox(Policy(), backend=backend) as sandbox:
        with pytest.raises(InputError, match="unknown module system"):
            sandbox.run("1", "javascript", module="es6")
        with pytest.raises(
            InputError, match=re.escape("'main.mjs' is taken by the program's source")
        ):
            sandbox.run("1", "javascript", files={"main.mjs": "x"})
        sandbox.run("export const a = 1", "javascript")
        assert next(iter(backend.jobs[-1].program.files)) == "main.mjs"
