"""Shared helpers for the tree-sitter analysers (JavaScript, TypeScript, Go, bash, C, C++, Java,
Rust, Ruby).

tree-sitter parses without recursion and recovers from errors, so a program it cannot fully
parse still yields a tree; the ERROR and MISSING nodes are reported as one syntax-error finding
and the recovered parts are still checked. The walk here is iterative as well.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import cache

import tree_sitter

from hazmat.assess.base import SYNTAX_ERROR, text_findings
from hazmat.models import Finding, Severity

__all__ = [
    "Node",
    "language",
    "parse",
    "position",
    "read",
    "string_value",
    "syntax_finding",
    "walk",
]

Node = tree_sitter.Node


@cache
def language(name: str) -> tree_sitter.Language:
    """The tree-sitter grammar for `name` (loaded once per process)."""
    loaders: dict[str, Callable[[], object]] = {}
    if name == "javascript":
        import tree_sitter_javascript

        loaders[name] = tree_sitter_javascript.language
    elif name in ("typescript", "tsx"):
        import tree_sitter_typescript

        loaders["typescript"] = tree_sitter_typescript.language_typescript
        loaders["tsx"] = tree_sitter_typescript.language_tsx
    elif name == "go":
        import tree_sitter_go

        loaders[name] = tree_sitter_go.language
    else:
        loaders[name] = _more_grammars(name)
    return tree_sitter.Language(loaders[name]())


def _more_grammars(name: str) -> Callable[[], object]:
    """The loaders of the grammars added with bash, C, C++, Java, Rust and Ruby."""
    if name == "bash":
        import tree_sitter_bash

        return tree_sitter_bash.language
    if name == "c":
        import tree_sitter_c

        return tree_sitter_c.language
    if name == "cpp":
        import tree_sitter_cpp

        return tree_sitter_cpp.language
    if name == "java":
        import tree_sitter_java

        return tree_sitter_java.language
    if name == "rust":
        import tree_sitter_rust

        return tree_sitter_rust.language
    if name == "ruby":
        import tree_sitter_ruby

        return tree_sitter_ruby.language
    raise KeyError(name)


def read(code: str, grammar: str, source: str) -> tuple[list[Finding], Node]:
    """What every analyser on a syntax tree starts with: the findings of the text itself
    (bidirectional and invisible characters) and of its syntax error if it has one, and the
    tree's root to check further."""
    root = parse(code, grammar).root_node
    findings = text_findings(code, source)
    syntax = syntax_finding(root, source)
    if syntax:
        findings.append(syntax)
    return findings, root


def parse(code: str, grammar: str) -> tree_sitter.Tree:
    return tree_sitter.Parser(language(grammar)).parse(code.encode("utf-8"))


def walk(root: Node) -> Iterator[Node]:
    """Every node under `root`, depth first, without recursion."""
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(node.children))


def position(node: Node) -> tuple[int, int]:
    """1-based line and column."""
    return node.start_point.row + 1, node.start_point.column + 1


def text(node: Node | None) -> str:
    if node is None or node.text is None:
        return ""
    return node.text.decode("utf-8", "replace")


# String nodes of the grammars, and the children that hold their literal text.
_STRING_NODES = {"string", "interpreted_string_literal", "raw_string_literal", "string_literal"}
_FRAGMENTS = {
    "string_fragment",
    "interpreted_string_literal_content",
    "raw_string_literal_content",
    "string_content",  # bash, C, C++, Rust, Ruby
    "raw_string_content",  # C++ R"(...)"
    "multiline_string_fragment",  # Java text blocks
}
# Children that make a string's value known only at run time: escapes can spell anything, and
# substitutions are computed (bash's $x and $(...), Ruby's #{...}).
_COMPUTED = {
    "escape_sequence",
    "interpolation",
    "simple_expansion",
    "expansion",
    "command_substitution",
    "arithmetic_expansion",
    "template_substitution",
}


def string_value(node: Node | None) -> str | None:
    """The value of a plain string literal (no substitutions, no escapes), or None: a string
    computed at run time is unknown, never taken for a harmless one."""
    if node is None:
        return None
    if node.type in _STRING_NODES:
        return _fragments(node)
    if node.type == "template_string" and not any(
        c.type == "template_substitution" for c in node.children
    ):
        return "".join(text(c) for c in node.children if c.type == "string_fragment")
    return _other_literal(node)


def _other_literal(node: Node) -> str | None:
    """bash's '...', Ruby's :symbols, C's "a" "b"."""
    if node.type == "raw_string":  # bash single quotes: no escapes, no substitutions
        return text(node)[1:-1]
    if node.type == "simple_symbol":
        return text(node)[1:]
    if node.type in ("delimited_symbol", "bare_symbol"):
        return _fragments(node)
    if node.type == "concatenated_string":
        values = [string_value(c) for c in node.named_children]
        return None if any(v is None for v in values) else "".join(v or "" for v in values)
    return None


def _fragments(node: Node) -> str | None:
    parts = []
    for child in node.children:
        if child.type in _FRAGMENTS:
            parts.append(text(child))
        elif child.type in _COMPUTED:
            return None
    return "".join(parts)


def syntax_finding(root: Node, source: str) -> Finding | None:
    """One finding for the first ERROR or MISSING node, if the tree has any."""
    if not root.has_error:
        return None
    for node in walk(root):
        if node.is_error or node.is_missing:
            line, column = position(node)
            what = f"missing {node.type!r}" if node.is_missing else "cannot parse this"
            return Finding(
                SYNTAX_ERROR, source, Severity.MEDIUM, f"syntax error: {what}", line, column
            )
    return Finding(SYNTAX_ERROR, source, Severity.MEDIUM, "syntax error", 0, 0)
