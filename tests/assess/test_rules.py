"""Single rules of hazmat's own analysers, in process (the child runs the same objects)."""

from __future__ import annotations

import pytest
from rule_findings import rules

from hazmat.assess.go import GoAnalyzer
from hazmat.assess.javascript import JavaScriptAnalyzer
from hazmat.assess.python_ast import PythonAnalyzer
from hazmat.models import Severity


@pytest.mark.parametrize(
    ("code", "rule", "severity"),
    [
        ("import subprocess", "import-subprocess", Severity.HIGH),
        ("from ctypes import CDLL", "import-ctypes", Severity.CRITICAL),
        ("import pickle as p\np.loads(b'')", "unsafe-deserialization", Severity.HIGH),
        ("import os as o\no.system('id')", "os-process", Severity.HIGH),
        ("from os import system as s\ns('id')", "os-process", Severity.HIGH),
        ("eval(input())", "call-eval", Severity.HIGH),
        ("exec('x = 1')", "call-exec", Severity.HIGH),
        ("compile(src, 'f', 'exec')", "call-compile", Severity.HIGH),
        ("breakpoint()", "call-breakpoint", Severity.MEDIUM),
        ("getattr(obj, name)", "dynamic-attribute", Severity.MEDIUM),
        ("getattr(obj, 'sys' + 'tem')", "obfuscated-name", Severity.CRITICAL),
        ("__import__(''.join(['o', 's']))", "obfuscated-name", Severity.CRITICAL),
        ("__import__(bytes.fromhex('6f73').decode())", "obfuscated-name", Severity.CRITICAL),
        (
            "import codecs\n__import__(codecs.decode('bf', 'rot13'))",
            "obfuscated-name",
            Severity.CRITICAL,
        ),
        ("__import__(f'{a}s')", "obfuscated-name", Severity.CRITICAL),
        ("__import__(name)", "dynamic-import", Severity.HIGH),
        ("importlib.import_module(name)", "dynamic-import", Severity.HIGH),
        ("globals()['ev' + 'al']", "obfuscated-name", Severity.CRITICAL),
        ("vars(obj)", "reflection", Severity.MEDIUM),
        ("x.__subclasses__()", "object-graph", Severity.CRITICAL),
        ("f.__globals__['os']", "object-graph", Severity.CRITICAL),
        ("f.__code__ = g.__code__", "object-graph", Severity.CRITICAL),
        ("getattr(x, '__subclasses__')", "object-graph-string", Severity.CRITICAL),
        ("g.gi_frame.f_back", "object-graph", Severity.CRITICAL),
        ("e.__traceback__.tb_frame", "object-graph", Severity.CRITICAL),
        ("import sys\nsys._getframe(1)", "frame-access", Severity.HIGH),
        ("import sys\nsys.modules['os']", "sys-modules", Severity.HIGH),
        ("import gc\ngc.get_referrers(x)", "object-graph", Severity.HIGH),
        ("open('/proc/self/environ').read()", "proc-access", Severity.MEDIUM),
        ("\uff45\uff56\uff41\uff4c('1')", "nfkc-identifier", Severity.CRITICAL),
        ("\u210cello = 1", "nfkc-identifier", Severity.HIGH),
        ("x = 1  # \u202e reversed", "trojan-source-bidi", Severity.CRITICAL),
        ("x = 'a\u200bb'", "invisible-character", Severity.MEDIUM),
    ],
)
def test_python_rule(code: str, rule: str, severity: Severity) -> None:
    assert rules(code).get(rule) == severity, rules(code)


@pytest.mark.parametrize(
    "code",
    [
        "import json, re, math, collections, itertools, statistics",
        "getattr(obj, 'name', None)",
        "print(chr(65) + 'b')",
        "self.__class__.__name__",
        "from os import path\npath.join('a', 'b')",
        "'caf\u00e9'.upper()",
    ],
)
def test_python_benign_shapes_score_nothing_above_low(code: str) -> None:
    assert all(sev.rank <= Severity.LOW.rank for sev in rules(code).values()), rules(code)


def test_python_syntax_error_is_a_finding_not_an_exception() -> None:
    found = PythonAnalyzer().analyze("def f(:\n  pass", "python")
    assert [f.rule for f in found] == ["syntax-error"]
    assert found[0].line == 1 and "syntax error" in found[0].message


def test_python_walk_survives_a_deep_tree() -> None:
    # A 900-term sum is a BinOp chain 900 deep: a recursive visitor needs two frames a level.
    code = "x = " + "[" * 190 + "]" * 190 + "\n" + "y = " + " + ".join(["1"] * 900)
    assert rules(code) == {}


@pytest.mark.parametrize(
    ("code", "language", "rule", "severity"),
    [
        ("require('child_process')", "javascript", "require-child_process", Severity.HIGH),
        (
            "import {exec} from 'node:child_process'",
            "javascript",
            "require-child_process",
            Severity.HIGH,
        ),
        ("const {Script} = require('vm')", "javascript", "require-vm", Severity.HIGH),
        ("eval(code)", "javascript", "call-eval", Severity.HIGH),
        ("new Function('a', 'return a')", "javascript", "new-function", Severity.HIGH),
        ("setTimeout('alert(1)', 10)", "javascript", "string-timer", Severity.MEDIUM),
        ("require(name)", "javascript", "dynamic-require", Severity.HIGH),
        ("require('child_' + 'process')", "javascript", "obfuscated-name", Severity.CRITICAL),
        ("require(`${a}_process`)", "javascript", "obfuscated-name", Severity.CRITICAL),
        ("require('\\x63hild_process')", "javascript", "obfuscated-name", Severity.CRITICAL),
        ("import(mod)", "javascript", "dynamic-require", Severity.HIGH),
        ("process.binding('fs')", "javascript", "process-binding", Severity.CRITICAL),
        ("process.mainModule.require('fs')", "javascript", "process-mainModule", Severity.HIGH),
        ("const p = process; p.binding('fs')", "javascript", "binding-call", Severity.HIGH),
        (
            "x.constructor.constructor('return this')()",
            "javascript",
            "constructor-chain",
            Severity.CRITICAL,
        ),
        ("obj['constructor']", "javascript", "string-member", Severity.HIGH),
        ("globalThis[key]()", "javascript", "global-lookup", Severity.HIGH),
        ("this['ev' + 'al']('1')", "javascript", "obfuscated-name", Severity.CRITICAL),
        ("fs.writeFileSync('a', 'b')", "javascript", "fs-write", Severity.MEDIUM),
        ("o.__proto__.polluted = 1", "javascript", "prototype", Severity.HIGH),
        (
            "import cp = require('child_process')",
            "typescript",
            "require-child_process",
            Severity.HIGH,
        ),
        ("const f: Function = new Function('x')", "typescript", "new-function", Severity.HIGH),
        ("let n: number = eval(s as string)", "typescript", "call-eval", Severity.HIGH),
    ],
)
def test_javascript_rule(code: str, language: str, rule: str, severity: Severity) -> None:
    assert rules(code, language).get(rule) == severity, rules(code, language)


@pytest.mark.parametrize(
    ("code", "rule", "severity"),
    [
        ('import "os/exec"', "import-os-exec", Severity.HIGH),
        ('import x "os/exec"\nfunc f() { x.Command("id") }', "exec-command", Severity.HIGH),
        (
            'import "syscall"\nfunc f() { syscall.Syscall(1, 2, 3, 4) }',
            "raw-syscall",
            Severity.HIGH,
        ),
        ('import "unsafe"\nvar p = unsafe.Pointer(nil)', "unsafe-pointer", Severity.HIGH),
        ('import "plugin"', "import-plugin", Severity.CRITICAL),
        ('// #include <stdio.h>\nimport "C"', "cgo", Severity.CRITICAL),
        ("//go:linkname f runtime.f\nfunc f()", "go-directive", Severity.CRITICAL),
        ('import "net"', "import-net", Severity.HIGH),
        (
            'import "os"\nfunc f() { os.StartProcess("/bin/sh", nil, nil) }',
            "start-process",
            Severity.HIGH,
        ),
    ],
)
def test_go_rule(code: str, rule: str, severity: Severity) -> None:
    source = "package main\n" + code + "\n"
    assert rules(source, "go").get(rule) == severity, rules(source, "go")


def test_go_calls_are_resolved_through_the_import_alias_only() -> None:
    # A local variable called `exec` is not os/exec.
    code = (
        'package main\nfunc main() { exec := struct{ Command func(string) }{}\n exec.Command("x") }'
    )
    assert rules(code, "go") == {}


@pytest.mark.parametrize("language", ["javascript", "typescript", "go"])
def test_tree_sitter_syntax_error_is_reported_with_its_line(language: str) -> None:
    code = {
        "go": "package main\nfunc main() {\n x := \n}",
        "javascript": "let x = (1;\n",
        "typescript": "let x: = 1;\n",
    }[language]
    analyzer = GoAnalyzer() if language == "go" else JavaScriptAnalyzer()
    found = [f for f in analyzer.analyze(code, language) if f.rule == "syntax-error"]
    assert found and found[0].severity is Severity.MEDIUM and found[0].line >= 1
