"""The runtimes in hazmat's images, and the module systems of JavaScript and TypeScript, on the
real engine under runc and runsc, cold and pooled."""

from __future__ import annotations

import pytest

from hazmat import Outcome, Sandbox

pytestmark = [pytest.mark.docker, pytest.mark.oci, pytest.mark.matrix]

# Debian 13's runtimes, each shown by what older ones cannot do
VERSIONS = {
    "python": ("import sys\nprint(sys.version_info[:2] >= (3, 13), f'{1=}')\n", "True 1=1\n"),
    "javascript": (
        "console.log(Number(process.versions.node.split('.')[0]) >= 20, [3, 1, 2].toSorted())\n",
        "true [ 1, 2, 3 ]\n",
    ),
    "typescript": (
        "const xs: number[] = [3, 1, 2];\n"
        "console.log(xs.toSorted().at(-1), xs.findLast(x => x < 3))\n",
        "3 2\n",
    ),
    "go": (
        'package main\n\nimport (\n\t"fmt"\n\t"slices"\n)\n\n'
        "func main() {\n\tfor i := range 3 {\n\t\tfmt.Print(i)\n\t}\n"
        "\tfmt.Println(slices.Max([]int{4, 9, 2}), min(3, 1))\n}\n",
        "0129 1\n",
    ),
}


@pytest.mark.parametrize("language", sorted(VERSIONS))
def test_current_runtimes(sandbox: Sandbox, runtime: str, language: str) -> None:
    code, expected = VERSIONS[language]
    result = sandbox.run(code, language, runtime=runtime)
    assert result.outcome is Outcome.OK, result.error
    assert result.stdout == expected
    assert result.image.endswith(":2")


# (language, code, module option, what it prints)
MODULES = {
    "js import is an ES module": (
        "javascript",
        "import { platform } from 'node:os';\n"
        "console.log(platform(), typeof require, import.meta.url)\n",
        None,
        "linux undefined file:///work/main.mjs\n",
    ),
    "js top-level await": (
        "javascript",
        "const x = await Promise.resolve(42);\nconsole.log(x, typeof module)\n",
        None,
        "42 undefined\n",
    ),
    "js export with dynamic import": (
        "javascript",
        "export const n = 2;\nconst { sep } = await import('node:path');\nconsole.log(n, sep)\n",
        None,
        "2 /\n",
    ),
    "js chosen as esm": (
        "javascript",
        "console.log(this === undefined, typeof __dirname)\n",
        "esm",
        "true undefined\n",
    ),
    "js commonjs stays commonjs": (
        "javascript",
        "const os = require('os');\n"
        "console.log(typeof os.cpus, __filename, this === module.exports)\n",
        None,
        "function /work/main.js true\n",
    ),
    "js chosen as commonjs": (
        "javascript",
        "const p = require('path');\nconsole.log(p.basename(__filename))\n",
        "commonjs",
        "main.cjs\n",
    ),
    "ts top-level await": (
        "typescript",
        "const n: number = await Promise.resolve(7);\nconsole.log(n, typeof __dirname)\n",
        None,
        "7 undefined\n",
    ),
    "ts import.meta": (
        "typescript",
        "import { basename } from 'node:path';\n"
        "console.log(basename(new URL(import.meta.url).pathname))\n",
        None,
        "main.mjs\n",
    ),
    "ts imports stay commonjs": (
        "typescript",
        "import * as path from 'path';\nconst here: string = path.basename(__dirname);\n"
        "console.log(here, typeof require)\n",
        None,
        ".hazmat-build function\n",
    ),
    "ts chosen as esm": (
        "typescript",
        "const t: string = typeof __filename;\nconsole.log(t)\n",
        "esm",
        "undefined\n",
    ),
}


@pytest.mark.one_cell  # how a language loads modules is the image's, not the tier's
@pytest.mark.parametrize("case", sorted(MODULES))
def test_module_systems(sandbox: Sandbox, runtime: str, case: str) -> None:
    language, code, module, expected = MODULES[case]
    result = sandbox.run(code, language, runtime=runtime, module=module)
    assert result.outcome is Outcome.OK, (result.error, result.stderr)
    assert result.stdout == expected


def test_an_es_module_imports_an_input_file(sandbox: Sandbox) -> None:
    code = "import { twice } from './lib.mjs';\nconsole.log(twice(await Promise.resolve(21)))\n"
    files = {"lib.mjs": "export const twice = (n) => n * 2;\n"}
    result = sandbox.run(code, "javascript", files=files)
    assert result.outcome is Outcome.OK, result.stderr
    assert result.stdout == "42\n"


def test_a_go_panic_names_the_source_line(sandbox: Sandbox) -> None:
    # Go programs are linked without symbol table or DWARF (-s -w): the stack trace must still
    # name the function, the file and the line
    code = (
        'package main\n\nimport "fmt"\n\n'
        "func boom(xs []int) int { return xs[5] }\n\n"
        "func main() {\n\tfmt.Println(boom([]int{1, 2}))\n}\n"
    )
    result = sandbox.run(code, "go")
    assert result.outcome is Outcome.ERROR
    assert "index out of range [5] with length 2" in result.stderr
    assert "main.boom(" in result.stderr
    assert "/work/main.go:5" in result.stderr
    assert "/work/main.go:8" in result.stderr
