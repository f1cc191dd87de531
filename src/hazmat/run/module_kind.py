"""ES modules or CommonJS: which module system a JavaScript or TypeScript program runs as.

Node runs a file as an ES module when it is named `.mjs`, and as CommonJS when it is named
`.cjs`; hazmat names the program's source file accordingly (`Language.module_sources`). A
caller may choose (`module="esm"` or `"commonjs"`); otherwise it is read from the code:

- JavaScript is an ES module when its top level has an `import` or `export` declaration, an
  `await` (top-level await) or `import.meta` — what Node's own detection looks for, so a
  program runs the same on an image whose Node predates that detection.
- TypeScript is bundled by esbuild, which turns `import`/`export` into CommonJS; it becomes
  an ES module only for what CommonJS cannot express: top-level `await` and `import.meta`.
  CommonJS stays the default, so `require` and `__dirname` keep working.
"""

from __future__ import annotations

from hazmat._exceptions import InputError, quoted
from hazmat.languages import Language

__all__ = ["MODULES", "check_module", "module_for"]

MODULES = ("auto", "esm", "commonjs")
# Nodes whose body is a function's own scope: an `await` there is not top-level.
_FUNCTIONS = frozenset(
    {
        "function_declaration",
        "function_expression",
        "function",
        "arrow_function",
        "method_definition",
        "generator_function",
        "generator_function_declaration",
        "class_static_block",
    }
)
_DECLARATIONS = frozenset({"import_statement", "export_statement"})


def check_module(lang: Language, module: str | None) -> None:
    if module is None or module == "auto":
        return
    if module not in MODULES:
        known = ", ".join(MODULES)
        raise InputError(f"unknown module system {quoted(module)} (expected one of: {known})")
    if not lang.module_sources:
        raise InputError(
            f"module={quoted(module)} is for JavaScript and TypeScript, not {lang.name}"
        )


def module_for(lang: Language, code: str, module: str | None) -> str | None:
    """ "esm" or "commonjs" when the source file needs a name of its own, else None."""
    if not lang.module_sources:
        return None
    if module in ("esm", "commonjs"):
        return module
    return "esm" if _is_esm(code, lang.name) else None


def _is_esm(code: str, language: str) -> bool:
    from hazmat.assess.syntax_tree import parse  # tree-sitter: loaded only for JS and TS

    root = parse(code, "typescript" if language == "typescript" else "javascript").root_node
    stack = list(root.children)
    while stack:
        node = stack.pop()
        kind = node.type
        if kind in _FUNCTIONS:
            continue
        if kind in _DECLARATIONS and node.parent == root and language == "javascript":
            return True
        if kind in ("await_expression", "meta_property"):
            return True
        if kind == "for_in_statement" and any(c.type == "await" for c in node.children):
            return True
        stack.extend(node.children)
    return False
