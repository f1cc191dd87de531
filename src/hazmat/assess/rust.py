"""Rust rules on tree-sitter's Rust grammar.

Paths are resolved through `use` declarations, so `use std::process::Command as Cmd;` makes
`Cmd::new` the standard library's `Command::new`. `unsafe` alone is MEDIUM (fast code uses it);
what it is used for (raw system calls, inline assembly, foreign functions, transmuting bytes
into a function) is what counts.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from hazmat.assess.syntax_tree import Node, read, string_value, text, walk
from hazmat.assess.tree_rules import UNKNOWN, Loop, Report, Values
from hazmat.models import Finding, Severity

__all__ = ["RustAnalyzer"]

SOURCE = "rust"
S = Severity

# path prefix (after `use` aliases are resolved) -> (rule, severity, why, cwe)
PATHS: dict[str, tuple[str, Severity, str, int | None]] = {
    "std::process::Command": ("process-exec", S.HIGH, "starts a program", 78),
    "std::os::unix::process::CommandExt": ("process-exec", S.HIGH, "replaces the process", 78),
    "tokio::process::Command": ("process-exec", S.HIGH, "starts a program", 78),
    "nix::unistd::fork": ("process-fork", S.HIGH, "starts a process", None),
    "nix::unistd::execv": ("process-exec", S.HIGH, "starts a program", 78),
    "nix::unistd::execve": ("process-exec", S.HIGH, "starts a program", 78),
    "std::net::TcpStream": ("socket", S.HIGH, "raw network access", None),
    "std::net::TcpListener": ("socket", S.HIGH, "raw network access", None),
    "std::net::UdpSocket": ("socket", S.HIGH, "raw network access", None),
    "tokio::net": ("socket", S.HIGH, "raw network access", None),
    "reqwest": ("network", S.MEDIUM, "network access", None),
    "ureq": ("network", S.MEDIUM, "network access", None),
    "hyper": ("network", S.MEDIUM, "network access", None),
    "libloading": ("dynamic-loading", S.HIGH, "loads native code at run time", 114),
    "std::arch": ("arch-intrinsics", S.MEDIUM, "processor-specific instructions", None),
    "core::arch": ("arch-intrinsics", S.MEDIUM, "processor-specific instructions", None),
    "std::mem::transmute": ("transmute", S.MEDIUM, "reinterprets bits as another type", 843),
    "std::env::vars": ("env-dump", S.MEDIUM, "reads every environment variable", 526),
    "std::env::vars_os": ("env-dump", S.MEDIUM, "reads every environment variable", 526),
}
# libc functions (libc::x, nix::libc::x, or declared in an `extern "C"` block)
LIBC: dict[str, tuple[str, Severity, str, int | None]] = {
    **dict.fromkeys(
        ("system", "popen", "execve", "execv", "execvp", "execl", "posix_spawn"),
        ("process-exec", S.HIGH, "starts a program", 78),
    ),
    **dict.fromkeys(("fork", "vfork", "clone"), ("process-fork", S.HIGH, "starts a process", None)),
    "syscall": ("raw-syscall", S.HIGH, "a raw system call", None),
    "ptrace": ("ptrace", S.CRITICAL, "traces and rewrites other processes", None),
    **dict.fromkeys(
        ("mount", "umount2", "setns", "unshare", "pivot_root"),
        ("namespace-escape", S.CRITICAL, "mounts or changes namespaces", None),
    ),
    **dict.fromkeys(("dlopen", "dlsym"), ("dynamic-loading", S.HIGH, "loads native code", 114)),
    **dict.fromkeys(("setuid", "setgid", "setresuid"), ("setuid", S.HIGH, "changes user", None)),
    **dict.fromkeys(("socket", "connect"), ("socket", S.HIGH, "raw network access", None)),
    "kill": ("signal", S.MEDIUM, "signals processes", None),
}
_FILES: dict[str, tuple[str, int]] = {
    **dict.fromkeys(("read_to_string", "read", "read_dir", "File::open", "read_link"), ("read", 0)),
    **dict.fromkeys(
        ("write", "File::create", "create_dir", "create_dir_all", "set_permissions"), ("write", 0)
    ),
    **dict.fromkeys(("remove_file", "remove_dir", "remove_dir_all"), ("delete", 0)),
    **dict.fromkeys(("symlink", "hard_link"), ("write", 1)),
}
_PAIRS = {"copy": "read", "rename": "delete"}
_HOME = ("home_dir", "std::env::home_dir", "dirs::home_dir", "home::home_dir")
_EXIT_MACROS = {"panic", "unreachable", "todo", "unimplemented"}
_EXIT_CALLS = {"exit", "abort", "read_line", "lines", "recv", "join", "next", "read", "wait",
               "accept", "incoming"}  # fmt: skip
_GROWERS = {"push", "push_str", "extend", "insert", "with_capacity", "new", "resize", "spawn"}
_ASM_SYSCALLS = ("syscall", "sysenter", "int 0x80", "svc ")


class RustAnalyzer:
    """hazmat's Rust rules."""

    name = SOURCE
    languages = frozenset({"rust"})

    def analyze(self, code: str, language: str) -> Sequence[Finding]:
        findings, root = read(code, "rust", SOURCE)
        rules = _Rules(Report(SOURCE))
        rules.check(root)
        return findings + rules.report.finish()


class _Rules:
    def __init__(self, report: Report) -> None:
        self.report = report
        self.uses: dict[str, str] = {}  # local name -> full path
        self.foreign: set[str] = set()  # functions declared in `extern "C"` blocks
        self.values = Values(self._terminal, self._reference, self._parts)
        nested = frozenset({"closure_expression", "function_item"})
        self.loop = Loop(self._exits, self._spawns, self._grows, nested)

    def add(
        self, node: Node, rule: str, severity: Severity, message: str, cwe: int | None = None
    ) -> None:
        self.report.add(node, rule, severity, message, cwe)

    def check(self, root: Node) -> None:
        nodes = list(walk(root))
        for node in nodes:
            if node.type == "use_declaration":
                known = set(self.uses.values())
                self._use(node.child_by_field_name("argument"), "")
                for full in set(self.uses.values()) - known:
                    self._path(node, full)
            elif node.type == "let_declaration":
                self._let(node)
            elif node.type == "function_signature_item" and _in_extern(node):
                self.foreign.add(text(node.child_by_field_name("name")))
        for node in nodes:
            self._visit(node)

    def _visit(self, node: Node) -> None:
        kind = node.type
        if kind == "call_expression":
            self._call(node)
        elif kind in ("scoped_identifier", "scoped_type_identifier") and _outermost(node):
            self._path(node, self.resolve(text(node)))
        elif kind == "macro_invocation":
            self._macro(node)
        elif kind == "unsafe_block" or (kind == "function_modifiers" and "unsafe" in text(node)):
            self.add(
                node, "unsafe-block", S.MEDIUM, "unsafe: outside the borrow checker's guarantees"
            )
        elif kind in ("foreign_mod_item", "extern_modifier") and _is_c_abi(node):
            self.add(
                node,
                "extern-c",
                S.HIGH,
                'extern "C": foreign functions outside Rust\'s checks',
                111,
            )
        elif kind == "attribute_item" and text(node).replace(" ", "").startswith("#[link("):
            self.add(node, "link-native", S.HIGH, "#[link]: links a native library", 111)
        elif kind in ("loop_expression", "while_expression"):
            self._loop(node)
        elif kind in ("string_literal", "raw_string_literal"):
            value = string_value(node)
            if value is not None:
                self.report.literal(value, node)

    # --- names ------------------------------------------------------------------------

    def _use(self, node: Node | None, prefix: str) -> None:
        if node is None:
            return
        join = (prefix + "::") if prefix else ""
        if node.type == "use_as_clause":
            path, alias = node.child_by_field_name("path"), node.child_by_field_name("alias")
            self.uses[text(alias)] = join + text(path)
        elif node.type == "scoped_use_list":
            inner = join + text(node.child_by_field_name("path"))
            for child in (node.child_by_field_name("list") or node).named_children:
                self._use(child, inner)
        elif node.type in ("scoped_identifier", "identifier"):
            full = join + text(node)
            self.uses[full.rsplit("::", 1)[-1]] = full
        elif node.type == "self":
            self.uses[prefix.rsplit("::", 1)[-1]] = prefix

    def resolve(self, path: str) -> str:
        """The full path of `Cmd::new` when `use std::process::Command as Cmd;`."""
        head, sep, rest = path.lstrip(":").partition("::")
        full = self.uses.get(head, head)
        return full + sep + rest

    def callee(self, call: Node) -> str:
        function = call.child_by_field_name("function")
        if function is not None and function.type == "field_expression":
            return text(function.child_by_field_name("field"))
        if function is not None and function.type == "generic_function":
            function = function.child_by_field_name("function")
        return self.resolve(text(function))

    def _let(self, node: Node) -> None:
        pattern, value = node.child_by_field_name("pattern"), node.child_by_field_name("value")
        if pattern is not None and value is not None and pattern.type == "identifier":
            self.values.assign(text(pattern), value)

    def _terminal(self, node: Node) -> list[str] | None:
        value = string_value(node)
        if value is not None:
            return [value]
        if node.type == "macro_invocation" and text(node.child_by_field_name("macro")) == "format":
            return self._format(node)
        if node.type == "call_expression":
            name = self.callee(node)
            if name.endswith(_HOME) or (name.endswith("env::var") and '"HOME"' in text(node)):
                return ["~"]
        return None

    def _format(self, node: Node) -> list[str]:
        """`format!("{}/.ssh/id_rsa", home)` with what `home` holds in place of `{}`."""
        tree = node.named_children[-1] if node.named_children else node
        items = [c for c in tree.named_children if c.type != "token_tree"]
        template = string_value(items[0]) if items else None
        if template is None:
            return [UNKNOWN]
        holes = re.split(r"\{[^{}]*\}", template)
        args = ["".join(self.values.pieces(a)) for a in items[1:]]
        args += [UNKNOWN] * len(holes)
        return [_fill(holes, args)]

    def _reference(self, node: Node) -> str | None:
        return text(node) if node.type == "identifier" else None

    def _parts(self, node: Node) -> list[Node]:
        if node.type == "call_expression":
            function = node.child_by_field_name("function")
            args = node.child_by_field_name("arguments")
            own = args.named_children if args is not None else []
            if function is not None and function.type == "field_expression":
                return [function.child_by_field_name("value") or function, *own]
            return list(own)
        return list(node.named_children)

    # --- rules ------------------------------------------------------------------------

    def _path(self, node: Node, full: str) -> None:
        for prefix, (rule, severity, why, cwe) in PATHS.items():
            if full == prefix or full.startswith(prefix + "::"):
                if rule == "env-dump":
                    self.report.dumps_environment(node, full)
                    return
                self.add(node, rule, severity, f"{full}: {why}", cwe)
                self.report.network = self.report.network or rule in ("socket", "network")
                return
        head, _, last = full.rpartition("::")
        if last in LIBC and head.endswith("libc"):
            self._libc(node, last)

    def _libc(self, node: Node, name: str) -> None:
        rule, severity, why, cwe = LIBC[name]
        self.add(node, rule, severity, f"{name}(): {why}", cwe)
        self.report.network = self.report.network or rule == "socket"

    def _call(self, node: Node) -> None:
        name = self.callee(node)
        args = node.child_by_field_name("arguments")
        arguments = args.named_children if args is not None else []
        if name in self.foreign and name in LIBC:
            self._libc(node, name)
        if name.rsplit("::", 1)[-1] in ("mmap", "mprotect") and "PROT_EXEC" in text(args):
            self.add(node, "executable-memory", S.CRITICAL, f"{name}() with execute permission", 94)
        if name.endswith("transmute") and "fn(" in text(
            node.child_by_field_name("function")
        ).replace(" ", ""):
            self.add(node, "shellcode-call", S.CRITICAL, "transmutes data into a function", 94)
        self._files(node, name, arguments)

    def _files(self, node: Node, name: str, arguments: list[Node]) -> None:
        def at(kind: str, index: int) -> None:
            if index < len(arguments):
                self.report.access(kind, self.values.pieces(arguments[index]), f"{name}()", node)

        short = name.replace("std::fs::", "").replace("fs::", "")
        chain = text(node)
        if short == "open" and any(f"{w}(true)" in chain for w in ("write", "append", "create")):
            at("write", 0)
        elif short in _FILES and (
            short.startswith("File::") or "fs::" in name or short in ("symlink",)
        ):
            at(*_FILES[short])
        elif short in _PAIRS and "fs::" in name:
            at(_PAIRS[short], 0)
            at("write", 1)

    def _macro(self, node: Node) -> None:
        name = self.resolve(text(node.child_by_field_name("macro")))
        last = name.rsplit("::", 1)[-1]
        if last in ("asm", "global_asm", "llvm_asm", "naked_asm"):
            body = text(node).lower()
            if any(word in body for word in _ASM_SYSCALLS):
                self.add(node, "inline-asm", S.CRITICAL, "inline assembly that makes system calls")
            else:
                self.add(node, "inline-asm", S.HIGH, "inline assembly: code outside the language")
        elif last in ("include_bytes", "include_str") and "/" in text(node):
            tree = node.named_children[-1] if node.named_children else node
            self.report.access("read", self.values.pieces(tree), f"{last}!", node)

    def _loop(self, node: Node) -> None:
        if (
            node.type == "while_expression"
            and text(node.child_by_field_name("condition")) != "true"
        ):
            return
        self.loop.check(self.report, node, node.child_by_field_name("body"))

    def _exits(self, node: Node) -> bool:
        if node.type in ("break_expression", "return_expression", "try_expression"):
            return True
        if node.type == "macro_invocation":
            return text(node.child_by_field_name("macro")) in _EXIT_MACROS
        return (
            node.type == "call_expression" and self.callee(node).rsplit("::", 1)[-1] in _EXIT_CALLS
        )

    def _spawns(self, node: Node) -> bool:
        if node.type != "call_expression":
            return False
        name = self.callee(node)
        return (
            name.startswith("std::process::Command")
            or name.rsplit("::", 1)[-1] in ("fork", "output", "status")
            or (name == "spawn" and "Command" in text(node))
        )

    def _grows(self, node: Node) -> bool:
        if node.type == "macro_invocation":
            return text(node.child_by_field_name("macro")) in ("vec", "format")
        return node.type == "call_expression" and self.callee(node).rsplit("::", 1)[-1] in _GROWERS


def _fill(holes: list[str], args: list[str]) -> str:
    out = holes[0]
    for hole, arg in zip(holes[1:], args, strict=False):
        out += arg + hole
    return out


def _outermost(node: Node) -> bool:
    """Only the whole path `std::process::Command`, not its part `std::process`, and not in a
    `use` (checked once resolved)."""
    parent = node.parent
    scoped = parent is not None and parent.type in ("scoped_identifier", "scoped_type_identifier")
    if scoped and parent is not None and parent.child_by_field_name("path") == node:
        return False
    while parent is not None:
        if parent.type == "use_declaration":
            return False
        parent = parent.parent
    return True


def _in_extern(node: Node) -> bool:
    parent = node.parent
    return (
        parent is not None
        and parent.parent is not None
        and parent.parent.type == "foreign_mod_item"
    )


def _is_c_abi(node: Node) -> bool:
    own = text(node)
    if node.type == "extern_modifier":
        return (
            (node.parent is None or node.parent.type != "foreign_mod_item") and '"C"' in own
        ) or own == "extern"
    return '"C"' in own.split("{", 1)[0] or own.startswith("extern {")
