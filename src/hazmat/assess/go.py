"""Go rules on tree-sitter's Go parser: imports, calls through their import alias, cgo and
compiler directives that reach past the language (`//go:linkname`)."""

from __future__ import annotations

from collections.abc import Sequence

from hazmat.assess.syntax_tree import (
    Node,
    position,
    read,
    string_value,
    text,
    walk,
)
from hazmat.assess.tree_flow import TreeFlow
from hazmat.models import Finding, Severity

__all__ = ["GoAnalyzer"]

SOURCE = "go"
S = Severity

IMPORTS: dict[str, tuple[Severity, str]] = {
    "os/exec": (S.HIGH, "starts other programs"),
    "syscall": (S.HIGH, "raw system calls"),
    "golang.org/x/sys/unix": (S.HIGH, "raw system calls"),
    "unsafe": (S.HIGH, "pointer arithmetic outside the type system"),
    "plugin": (S.CRITICAL, "loads shared objects at run time"),
    "C": (S.CRITICAL, "cgo: arbitrary C code"),
    "runtime/cgo": (S.CRITICAL, "cgo internals"),
    "net": (S.HIGH, "raw network access"),
    "net/http": (S.MEDIUM, "network access"),
    "net/rpc": (S.MEDIUM, "network access"),
    "net/smtp": (S.MEDIUM, "network access"),
    "os/signal": (S.MEDIUM, "signal handling"),
    "os/user": (S.LOW, "user database"),
    "reflect": (S.LOW, "reflection"),
    "os": (S.LOW, "operating-system interface"),
    "debug/elf": (S.MEDIUM, "reads executables"),
}

CALLS: dict[str, tuple[str, Severity, str, int | None]] = {
    "os/exec.Command": ("exec-command", S.HIGH, "starts a program", 78),
    "os/exec.CommandContext": ("exec-command", S.HIGH, "starts a program", 78),
    "os.StartProcess": ("start-process", S.HIGH, "starts a program", 78),
    "syscall.Exec": ("raw-syscall", S.HIGH, "replaces the process", 78),
    "syscall.ForkExec": ("raw-syscall", S.HIGH, "starts a program", 78),
    "syscall.Syscall": ("raw-syscall", S.HIGH, "a raw system call", None),
    "syscall.Syscall6": ("raw-syscall", S.HIGH, "a raw system call", None),
    "syscall.RawSyscall": ("raw-syscall", S.HIGH, "a raw system call", None),
    "syscall.RawSyscall6": ("raw-syscall", S.HIGH, "a raw system call", None),
    "syscall.Ptrace": ("raw-syscall", S.CRITICAL, "ptrace", None),
    "syscall.Mount": ("raw-syscall", S.CRITICAL, "mount", None),
    "syscall.Setuid": ("raw-syscall", S.HIGH, "changes user", None),
    "syscall.Kill": ("raw-syscall", S.MEDIUM, "signals processes", None),
    "plugin.Open": ("plugin-open", S.CRITICAL, "loads a shared object", None),
    "unsafe.Pointer": ("unsafe-pointer", S.HIGH, "converts between pointer types", 843),
    "os.RemoveAll": ("file-delete", S.LOW, "deletes a file tree", None),
    "os.Remove": ("file-delete", S.LOW, "deletes a file", None),
    "os.Chmod": ("file-delete", S.LOW, "changes permissions", None),
}

_DIRECTIVES: dict[str, tuple[Severity, str]] = {
    "//go:linkname": (S.CRITICAL, "binds to unexported runtime symbols"),
    "//go:cgo_": (S.CRITICAL, "cgo linker directive"),
    "//go:uintptrescapes": (S.HIGH, "pointer escape directive"),
    "#cgo": (S.CRITICAL, "cgo build flags"),
}


class GoAnalyzer:
    """hazmat's Go rules."""

    name = SOURCE
    languages = frozenset({"go"})

    def analyze(self, code: str, language: str) -> Sequence[Finding]:
        findings, root = read(code, "go", SOURCE)
        aliases: dict[str, str] = {}  # local package name -> import path
        nodes = list(walk(root))
        for node in nodes:
            if node.type == "import_spec":
                findings.extend(_import(node, aliases))
        flow = TreeFlow("go", lambda call: _callee(call, aliases))
        for node in nodes:
            flow.visit(node)
            if node.type == "comment":
                findings.extend(_comment(node))
            elif node.type in ("selector_expression", "qualified_type"):
                finding = _selector(node, aliases)
                if finding:
                    findings.append(finding)
        findings.extend(flow.finish())
        return findings


def _callee(call: Node, aliases: dict[str, str]) -> str:
    """What a call calls: `os.ReadFile`, `net/http.Get` (import path, then name), `append`."""
    func = call.child_by_field_name("function")
    if func is not None and func.type == "selector_expression":
        package, field = func.child_by_field_name("operand"), func.child_by_field_name("field")
        if package is not None and text(package) in aliases:
            return f"{aliases[text(package)]}.{text(field)}"
    return text(func)


def _import(node: Node, aliases: dict[str, str]) -> list[Finding]:
    path = string_value(node.child_by_field_name("path"))
    if path is None:
        return []
    name = node.child_by_field_name("name")
    local = text(name) if name is not None else path.rsplit("/", 1)[-1]
    if local not in ("_", "."):
        aliases[local] = path
    if path not in IMPORTS:
        return []
    severity, why = IMPORTS[path]
    line, column = position(node)
    rule = "cgo" if path == "C" else f"import-{path.replace('/', '-')}"
    return [Finding(rule, SOURCE, severity, f"imports {path}: {why}", line, column)]


def _selector(node: Node, aliases: dict[str, str]) -> Finding | None:
    if node.type == "qualified_type":
        package, member = node.child_by_field_name("package"), node.child_by_field_name("name")
    else:
        package, member = node.child_by_field_name("operand"), node.child_by_field_name("field")
    if (
        package is None
        or member is None
        or package.type not in ("identifier", "package_identifier")
    ):
        return None
    path = aliases.get(text(package))
    if path is None:
        return None
    key = f"{path}.{text(member)}"
    if key not in CALLS:
        return None
    rule, severity, why, cwe = CALLS[key]
    line, column = position(node)
    return Finding(rule, SOURCE, severity, f"{text(node)}: {why}", line, column, cwe)


def _comment(node: Node) -> list[Finding]:
    body = text(node)
    found = []
    for raw_line in body.splitlines():
        stripped = raw_line.strip().lstrip("/*").strip()
        line_text = raw_line.strip()
        for prefix, (severity, why) in _DIRECTIVES.items():
            if line_text.startswith(prefix) or stripped.startswith(prefix):
                line, column = position(node)
                found.append(
                    Finding("go-directive", SOURCE, severity, f"{prefix}: {why}", line, column)
                )
    return found
