"""Shared helpers for the tree-sitter analysers (JavaScript, TypeScript, Go).

tree-sitter parses without recursion and recovers from errors, so a program it cannot fully
parse still yields a tree; the ERROR and MISSING nodes are reported as one syntax-error finding
and the recovered parts are still checked. The walk here is iterative as well.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import cache

import tree_sitter

from hazmat.assess.base import SYNTAX_ERROR
from hazmat.models import Finding, Severity

__all__ = ["Node", "language", "parse", "position", "string_value", "syntax_finding", "walk"]

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
    return tree_sitter.Language(loaders[name]())


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


def string_value(node: Node | None) -> str | None:
    """The value of a plain string literal (no substitutions), or None."""
    if node is None:
        return None
    if node.type in ("string", "interpreted_string_literal", "raw_string_literal"):
        parts = []
        for child in node.children:
            if child.type in (
                "string_fragment",
                "interpreted_string_literal_content",
                "raw_string_literal_content",
            ):
                parts.append(text(child))
            elif child.type == "escape_sequence":
                return None  # escapes can spell anything; treat as computed
        return "".join(parts)
    if node.type == "template_string" and not any(
        c.type == "template_substitution" for c in node.children
    ):
        return "".join(text(c) for c in node.children if c.type == "string_fragment")
    return None


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
