"""C and C++ rules on tree-sitter's C and C++ grammars (the same rules for both: C++ reaches the
system through the same C library).

Calls are named by their last part (`std::system` and `::system` are `system`), through the
names a program gives them (`#define RUN system`, `int (*f)(const char *) = system;`). Headers
that only an escape needs raise the score; `<bits/stdc++.h>`, `<unistd.h>` and Boost's
algorithms do not.
"""

from __future__ import annotations

from collections.abc import Sequence

from hazmat.assess.syntax_tree import Node, read, string_value, text, walk
from hazmat.assess.tree_rules import UNKNOWN, Loop, Report, Values
from hazmat.models import Finding, Severity

__all__ = ["CFamilyAnalyzer"]

SOURCE = "c-family"
S = Severity

HEADERS: dict[str, tuple[Severity, str]] = {
    "sys/ptrace.h": (S.HIGH, "traces and rewrites other processes"),
    "sys/mount.h": (S.HIGH, "mounts file systems"),
    "sys/reboot.h": (S.HIGH, "reboots the machine"),
    "dlfcn.h": (S.HIGH, "loads shared objects at run time"),
    "spawn.h": (S.HIGH, "starts other programs"),
    "sys/syscall.h": (S.MEDIUM, "system call numbers"),
    "sys/socket.h": (S.MEDIUM, "network access"),
    "netinet/in.h": (S.MEDIUM, "network access"),
    "arpa/inet.h": (S.MEDIUM, "network access"),
    "netdb.h": (S.MEDIUM, "network access"),
    "curl/curl.h": (S.MEDIUM, "network access"),
    "boost/asio.hpp": (S.MEDIUM, "network access"),
    "boost/process.hpp": (S.HIGH, "starts other programs"),
    "sys/prctl.h": (S.MEDIUM, "process control"),
    "sys/capability.h": (S.MEDIUM, "capabilities"),
    "linux/bpf.h": (S.HIGH, "kernel programs"),
    "sys/mman.h": (S.LOW, "memory mappings"),
    "unistd.h": (S.LOW, "operating-system interface"),
}
# function -> (rule, severity, why, cwe)
CALLS: dict[str, tuple[str, Severity, str, int | None]] = {
    **{
        name: ("process-exec", S.HIGH, "starts a program", 78)
        for name in (
            "system",
            "popen",
            "execl",
            "execlp",
            "execle",
            "execv",
            "execvp",
            "execvpe",
            "execve",
            "fexecve",
            "execveat",
            "posix_spawn",
            "posix_spawnp",
            "_popen",
            "_wsystem",
            "WinExec",
            "ShellExecute",
            "CreateProcess",
        )
    },
    **{
        name: ("process-fork", S.HIGH, "starts a process", None)
        for name in ("fork", "vfork", "clone", "clone3")
    },
    "syscall": ("raw-syscall", S.HIGH, "a raw system call", None),
    "ptrace": ("ptrace", S.CRITICAL, "traces and rewrites other processes", None),
    "process_vm_readv": ("ptrace", S.CRITICAL, "reads another process's memory", None),
    "process_vm_writev": ("ptrace", S.CRITICAL, "writes another process's memory", None),
    **{
        name: ("namespace-escape", S.CRITICAL, "mounts or changes namespaces", None)
        for name in ("mount", "umount", "umount2", "pivot_root", "setns", "unshare")
    },
    "chroot": ("namespace-escape", S.HIGH, "changes the root directory", None),
    **{
        name: ("kernel-module", S.CRITICAL, "loads kernel code", None)
        for name in ("init_module", "finit_module", "delete_module")
    },
    "reboot": ("kernel-module", S.CRITICAL, "reboots the machine", None),
    **{
        name: ("setuid", S.HIGH, "changes user or group", None)
        for name in ("setuid", "setgid", "seteuid", "setegid", "setresuid", "setresgid", "setreuid")
    },
    **{
        name: ("dynamic-loading", S.HIGH, "loads native code at run time", 114)
        for name in (
            "dlopen",
            "dlmopen",
            "dlsym",
            "dlvsym",
            "LoadLibrary",
            "LoadLibraryA",
            "GetProcAddress",
        )
    },
    **{
        name: ("signal", S.MEDIUM, "signals processes", None)
        for name in ("kill", "tgkill", "killpg")
    },
    "prctl": ("prctl", S.MEDIUM, "process control", None),
    **{
        name: ("socket", S.HIGH, "raw network access", None)
        for name in ("socket", "connect", "gethostbyname", "getaddrinfo", "inet_pton", "inet_addr")
    },
    **{
        name: ("network", S.MEDIUM, "network access", None)
        for name in ("curl_easy_init", "curl_easy_perform")
    },
}
_NETWORK_CALLS = {"socket", "connect", "curl_easy_perform", "sendto", "send", "getaddrinfo"}
# function -> (kind of access, which argument is the path); fopen's mode decides
_FILES: dict[str, tuple[str, int]] = {
    **dict.fromkeys(("opendir", "scandir", "stat", "lstat", "readlink", "realpath"), ("read", 0)),
    **dict.fromkeys(
        ("creat", "mkdir", "chmod", "chown", "lchown", "mkfifo", "mknod"), ("write", 0)
    ),
    **dict.fromkeys(("unlink", "remove", "rmdir", "truncate", "remove_all"), ("delete", 0)),
    **dict.fromkeys(
        ("symlink", "link", "create_symlink", "create_directory_symlink"), ("write", 1)
    ),
    **dict.fromkeys(
        ("create_directory", "create_directories", "permissions", "resize_file"), ("write", 0)
    ),
}
_PAIRS = {"rename": "delete", "copy": "read", "copy_file": "read"}
_STREAMS = {
    "ifstream": "read",
    "ofstream": "write",
    "fstream": "write",
    "wifstream": "read",
    "wofstream": "write",
    "basic_ifstream": "read",
    "basic_ofstream": "write",
}
_WRITE_FLAGS = ("O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND")
_EXIT_CALLS = {"exit", "_exit", "_Exit", "abort", "quick_exit", "longjmp", "scanf", "fgets",
               "getline", "getchar", "read", "fread", "fscanf", "getc", "fgetc", "recv", "pause",
               "wait", "waitpid", "terminate"}  # fmt: skip
_GROWERS = {"malloc", "calloc", "realloc", "push_back", "emplace_back", "resize", "insert",
            "append", "reserve", "strdup", "mmap"}  # fmt: skip
_FORKS = {"fork", "vfork", "clone", "system", "popen", "posix_spawn", "execv", "execvp"}
_BUILDS = {"sprintf", "snprintf", "strcpy", "strncpy", "strcat", "strncat"}
_ASM_SYSCALLS = ("syscall", "sysenter", "int $0x80", "int 0x80", "svc ")


class CFamilyAnalyzer:
    """hazmat's C and C++ rules."""

    name = SOURCE
    languages = frozenset({"c", "cpp"})

    def analyze(self, code: str, language: str) -> Sequence[Finding]:
        findings, root = read(code, "cpp" if language == "cpp" else "c", SOURCE)
        rules = _Rules(Report(SOURCE))
        rules.check(root)
        return findings + rules.report.finish()


class _Rules:
    def __init__(self, report: Report) -> None:
        self.report = report
        self.aliases: dict[str, str] = {}  # a macro or function pointer -> the function
        self.values = Values(self._terminal, self._reference, self._parts)

    def add(
        self, node: Node, rule: str, severity: Severity, message: str, cwe: int | None = None
    ) -> None:
        self.report.add(node, rule, severity, message, cwe)

    def check(self, root: Node) -> None:
        nodes = list(walk(root))
        for node in nodes:
            if node.type in ("preproc_def", "init_declarator", "assignment_expression"):
                self._assign(node)
            elif node.type == "call_expression" and self.callee(node) in _BUILDS:
                self._build(node)
        for node in nodes:
            self._visit(node)

    def _build(self, call: Node) -> None:
        """`snprintf(path, n, "%s/.ssh/id_rsa", home)`: the buffer holds what is built in it."""
        args = _arguments(call)
        if args and args[0].type == "identifier":
            self.values.assign(text(args[0]), call)

    def _visit(self, node: Node) -> None:
        kind = node.type
        if kind == "preproc_include":
            self._include(node)
        elif kind == "call_expression":
            self._call(node)
        elif kind == "gnu_asm_expression" or kind == "asm_statement":
            self._asm(node)
        elif kind == "declaration":
            self._stream(node, node.child_by_field_name("type"), node)
        elif kind in ("while_statement", "for_statement", "do_statement"):
            self._loop(node)
        elif kind == "identifier" and text(node) in ("environ", "envp", "__environ"):
            self.report.dumps_environment(node, text(node))
        elif kind in ("string_literal", "raw_string_literal", "concatenated_string"):
            value = string_value(node)
            if value is not None and (
                node.parent is None or node.parent.type != "concatenated_string"
            ):
                self.report.literal(value, node)

    # --- names ------------------------------------------------------------------------

    def _assign(self, node: Node) -> None:
        if node.type == "preproc_def":
            name, value = node.child_by_field_name("name"), node.child_by_field_name("value")
            if name is not None and value is not None:
                self.aliases[text(name)] = text(value).strip()
            return
        left = node.child_by_field_name("declarator") or node.child_by_field_name("left")
        right = node.child_by_field_name("value") or node.child_by_field_name("right")
        if left is None or right is None:
            return
        declared = _declared(left)
        target = _last(text(right))
        if target in CALLS:
            self.aliases[declared] = target
        self.values.assign(declared, right)

    def callee(self, call: Node) -> str:
        name = _last(text(call.child_by_field_name("function")))
        seen = 0
        while name in self.aliases and seen < 8:
            name, seen = _last(self.aliases[name]), seen + 1
        return name

    def _terminal(self, node: Node) -> list[str] | None:
        value = string_value(node)
        if value is not None:
            return [value]
        if node.type == "call_expression":
            name = self.callee(node)
            args = _arguments(node)
            if name in ("getenv", "secure_getenv") and args and string_value(args[0]) == "HOME":
                return ["~"]
        return None

    def _reference(self, node: Node) -> str | None:
        return text(node) if node.type == "identifier" else None

    def _parts(self, node: Node) -> list[Node]:
        if node.type == "call_expression":
            return _arguments(node)
        return [c for c in node.children if c.type not in ("field_identifier",)]

    # --- rules ------------------------------------------------------------------------

    def _include(self, node: Node) -> None:
        header = text(node.child_by_field_name("path")).strip('<>"')
        if header in HEADERS:
            severity, why = HEADERS[header]
            rule = "include-" + header.rsplit(".", 1)[0].replace("/", "-")
            self.add(node, rule, severity, f"includes <{header}>: {why}")

    def _call(self, node: Node) -> None:
        name = self.callee(node)
        args = _arguments(node)
        self.report.network = self.report.network or name in _NETWORK_CALLS
        if name in CALLS:
            rule, severity, why, cwe = CALLS[name]
            self.add(node, rule, severity, f"{name}(): {why}", cwe)
        if name in ("mmap", "mprotect", "VirtualAlloc", "VirtualProtect") and "EXEC" in text(node):
            self.add(node, "executable-memory", S.CRITICAL, f"{name}() with execute permission", 94)
        function = node.child_by_field_name("function")
        if (
            function is not None
            and function.type == "parenthesized_expression"
            and any(c.type == "cast_expression" for c in function.children)
        ):
            self.add(
                node, "shellcode-call", S.CRITICAL, "calls data cast to a function pointer", 94
            )
        self._files(node, name, args)

    def _files(self, node: Node, name: str, args: list[Node]) -> None:
        def at(kind: str, index: int) -> None:
            if index < len(args):
                self.report.access(kind, self.values.pieces(args[index]), f"{name}()", node)

        if name in ("fopen", "freopen", "fopen64"):
            mode = string_value(args[1]) if len(args) > 1 else "r"
            at(
                "read"
                if mode is not None and mode.startswith("r") and "+" not in mode
                else "write",
                0,
            )
        elif name in ("open", "open64", "openat"):
            index = 1 if name == "openat" else 0
            flags = text(args[index + 1]) if len(args) > index + 1 else ""
            at("write" if any(f in flags for f in _WRITE_FLAGS) else "read", index)
        elif name in _FILES:
            at(*_FILES[name])
        elif name in _PAIRS:
            at(_PAIRS[name], 0)
            at("write", 1)
        elif name in _STREAMS:
            at(_STREAMS[name], 0)

    def _stream(self, node: Node, kind: Node | None, declaration: Node) -> None:
        """`std::ifstream in("/etc/shadow");` and `std::ofstream out{"/etc/x"};`"""
        stream = _last(text(kind))
        if stream not in _STREAMS:
            return
        for declarator in declaration.children_by_field_name("declarator"):
            pieces = self._stream_path(declarator)
            if pieces:
                self.report.access(_STREAMS[stream], pieces, stream, node)

    def _stream_path(self, declarator: Node) -> list[str]:
        if declarator.type == "function_declarator":  # `std::ofstream out(path);` parses so
            parameters = declarator.child_by_field_name("parameters")
            first = parameters.named_children[0] if parameters is not None else None
            if first is None:
                return []
            return self.values.value(text(first)) or [UNKNOWN]
        value = declarator.child_by_field_name("value")
        if value is not None and value.named_children:
            return self.values.pieces(value.named_children[0])
        return []

    def _asm(self, node: Node) -> None:
        body = text(node).lower()
        if any(word in body for word in _ASM_SYSCALLS):
            self.add(node, "inline-asm", S.CRITICAL, "inline assembly that makes system calls")
        else:
            self.add(node, "inline-asm", S.HIGH, "inline assembly: code outside the language")

    def _loop(self, node: Node) -> None:
        condition = node.child_by_field_name("condition")
        test = text(condition).strip("() \t;")
        if node.type == "for_statement":
            endless = (condition is None and ";;" in text(node).replace(" ", "")[:12]) or test in (
                "1",
                "true",
            )
        else:
            endless = test in ("1", "true", "!0", "1u")
        if endless:
            _Loop(self).loop.check(self.report, node, node.child_by_field_name("body"))


class _Loop:
    def __init__(self, rules: _Rules) -> None:
        self.rules = rules
        nested = frozenset({"function_definition", "lambda_expression"})
        self.loop = Loop(self.exits, self.spawns, self.grows, nested)

    def _name(self, node: Node) -> str:
        return self.rules.callee(node) if node.type == "call_expression" else ""

    def exits(self, node: Node) -> bool:
        if node.type in (
            "break_statement",
            "return_statement",
            "goto_statement",
            "throw_statement",
        ):
            return True
        if node.type == "binary_expression" and text(node).replace(" ", "").startswith(
            ("cin>>", "std::cin>>")
        ):
            return True
        return self._name(node) in _EXIT_CALLS

    def spawns(self, node: Node) -> bool:
        return self._name(node) in _FORKS

    def grows(self, node: Node) -> bool:
        return node.type == "new_expression" or self._name(node) in _GROWERS


def _arguments(call: Node) -> list[Node]:
    args = call.child_by_field_name("arguments")
    if args is None:
        return []
    return [c for c in args.named_children if c.type != "comment"]


def _last(name: str) -> str:
    """`system` for `std::system`, `::system`, `obj.open` -> `open`, `(system)` -> `system`."""
    bare = name.strip().strip("()&* ").replace("->", ".").replace("::", ".")
    return bare.rsplit(".", 1)[-1].split("<", 1)[0].strip()


def _declared(declarator: Node) -> str:
    """The name a declarator declares (`p` in `(*p)(const char *)`)."""
    for node in walk(declarator):
        if node.type == "identifier":
            return text(node)
    return UNKNOWN
