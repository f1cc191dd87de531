"""The programs and shapes the bash rules know (bash.py): shells, network tools, privileged and
container programs, wrappers that run the command after them, and the node tests for fork
bombs and loops with no way out."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from hazmat.assess.syntax_tree import Node, text, walk
from hazmat.assess.tree_rules import Loop, Report
from hazmat.models import Severity

__all__ = [
    "DELETES",
    "DEPTH",
    "DOWNLOADERS",
    "ECHOES",
    "INTERPRETERS",
    "LOOP",
    "NETWORK",
    "PLAIN_DECODERS",
    "PROGRAMS",
    "SHELLS",
    "WRAPPERS",
    "WRITES",
    "Files",
    "Name",
    "backgrounded",
    "command_index",
    "dangerous",
    "decoded",
    "in_pipeline",
    "redirects",
    "setuid",
]

S = Severity

SHELLS = {"sh", "bash", "dash", "zsh", "ksh", "ash", "mksh", "busybox"}
INTERPRETERS = {"python", "python3", "perl", "ruby", "node", "php", "lua", "awk"}
DOWNLOADERS = {"curl", "wget", "fetch", "aria2c", "http", "https", "nc", "ncat", "lynx"}
# Decoders only count with their decode flag (base64 -d); these need none.
PLAIN_DECODERS = {"rev", "base32", "uudecode", "gunzip", "zcat", "xxd"}
NETWORK: dict[str, tuple[Severity, str]] = {
    **dict.fromkeys(("curl", "wget", "aria2c", "http", "lynx"), (S.MEDIUM, "network access")),
    **dict.fromkeys(
        ("nc", "ncat", "netcat", "socat", "telnet", "nmap", "ftp"), (S.HIGH, "raw network access")
    ),
    **dict.fromkeys(("ssh", "scp", "sftp"), (S.HIGH, "runs commands or copies files remotely")),
}
# program -> (rule, severity, why)
PROGRAMS: dict[str, tuple[str, Severity, str]] = {
    **dict.fromkeys(
        ("sudo", "su", "doas", "pkexec"), ("privilege", S.HIGH, "runs as another user")
    ),
    "nsenter": ("namespace-escape", S.CRITICAL, "enters another process's namespaces"),
    "unshare": ("namespace-escape", S.HIGH, "makes new namespaces"),
    "chroot": ("namespace-escape", S.HIGH, "changes the root directory"),
    **dict.fromkeys(("mount", "umount"), ("mount", S.HIGH, "mounts file systems")),
    **dict.fromkeys(
        ("docker", "podman", "kubectl", "ctr", "crictl", "runc", "nerdctl"),
        ("container-engine", S.HIGH, "drives a container engine"),
    ),
    **dict.fromkeys(
        ("insmod", "modprobe", "rmmod"), ("kernel-module", S.CRITICAL, "loads kernel code")
    ),
    **dict.fromkeys(("setcap", "capsh"), ("capabilities", S.HIGH, "changes capabilities")),
    **dict.fromkeys(("iptables", "ip6tables", "nft"), ("firewall", S.HIGH, "changes the firewall")),
    **dict.fromkeys(
        ("crontab", "at", "systemctl"), ("persistence", S.HIGH, "schedules code to run later")
    ),
    **dict.fromkeys(
        ("useradd", "usermod", "passwd", "chpasswd", "visudo"),
        ("accounts", S.HIGH, "changes user accounts"),
    ),
    "chattr": ("chattr", S.HIGH, "changes file attributes"),
    **dict.fromkeys(("kill", "pkill", "killall"), ("signal", S.MEDIUM, "signals processes")),
    "gdb": ("debugger", S.HIGH, "attaches to processes"),
    "strace": ("debugger", S.HIGH, "traces processes"),
}
# Commands that only run the command after them (after their own options).
WRAPPERS = {"sudo", "doas", "env", "nohup", "timeout", "nice", "command", "builtin", "time",
            "xargs", "setsid", "stdbuf", "exec", "ionice", "chrt", "taskset"}  # fmt: skip
ECHOES = {"echo", "printf", "test", "[", "[[", "true", "false", ":", "read", "local", "export",
          "declare", "typeset", "readonly", "alias", "shift", "return", "exit"}  # fmt: skip
DELETES = {"rm", "rmdir", "unlink", "shred", "truncate"}
WRITES = {"tee", "touch", "mkdir", "chmod", "chown", "chgrp"}
DEPTH = 3  # `bash -c '...'` strings are read as scripts this many levels deep


@dataclass(frozen=True)
class Name:
    """How a command's name resolves: `name` ("" when computed), `evasion` when its spelling
    hides it (decoded, pieced together from quotes)."""

    name: str
    evasion: str = ""


def command_index(name: str, words: list[str]) -> int:
    """Where the wrapped command starts among a wrapper's arguments."""
    index = 0
    while index < len(words):
        word = words[index]
        if word.startswith("-") or (name == "env" and "=" in word):
            index += (
                2
                if name in ("sudo", "su", "nice", "ionice", "taskset")
                and word in ("-u", "-n", "-c")
                else 1
            )
        elif name in ("timeout", "chrt", "taskset") and word[:1].isdigit():
            index += 1
        else:
            break
    return index


def decoded(node: Node, sources: dict[str, Node]) -> str:
    """Why a command's name is a decoded string, if it is: `$(echo Y3VybA== | base64 -d)`
    or a variable given one."""
    for sub in walk(node):
        if sub.type in ("simple_expansion", "expansion"):
            name = next((text(c) for c in sub.named_children if c.type == "variable_name"), "")
            if name in sources and sources[name] is not node and decoded(sources[name], {}):
                return "decoded at run time"
        if sub.type == "command_substitution" and any(
            c.type == "command"
            and c.child_by_field_name("name") is not None
            and posixpath.basename(text(c.child_by_field_name("name")))
            in ("base64", "xxd", "rev", "openssl", "base32", "printf")
            for c in walk(sub)
        ):
            return "decoded at run time"
    return ""


def dangerous(name: str) -> bool:
    return name in SHELLS or name in NETWORK or name in PROGRAMS or name in ("eval", "rm", "dd")


def setuid(mode: str) -> bool:
    return "+s" in mode or (mode.isdigit() and len(mode) == 4 and mode[0] in "2467")


def backgrounded(node: Node) -> bool:
    sibling = node.next_sibling
    while node.parent is not None and node.parent.type == "pipeline" and sibling is None:
        node = node.parent
        sibling = node.next_sibling
    return sibling is not None and sibling.type == "&"


def in_pipeline(node: Node) -> bool:
    return node.parent is not None and node.parent.type == "pipeline"


def redirects(command: Node) -> list[Node]:
    parent = command.parent
    if parent is None or parent.type != "redirected_statement":
        return []
    return parent.children_by_field_name("redirect")


def _exits(node: Node) -> bool:
    if node.type == "command":
        name = text(node.child_by_field_name("name"))
        return name in ("break", "exit", "return", "read", "wait")
    return False


def _spawns(node: Node) -> bool:
    return node.type == "&"


def _grows(node: Node) -> bool:
    return node.type == "variable_assignment" and "+=" in text(node)[:64]


LOOP = Loop(_exits, _spawns, _grows, frozenset({"function_definition"}))


class Files:
    """The files a command reads, writes or deletes, from its arguments."""

    def __init__(self, report: Report, node: Node, name: str) -> None:
        self.report, self.node, self.name = report, node, name

    def check(self, args: list[Node], words: list[str]) -> None:
        if self.name in ECHOES:
            return
        operands = [w for w in words if not w.startswith("-") or w == "-"]
        if self.name in DELETES:
            self._each("delete", operands)
            self._root(words, operands)
        elif self.name in WRITES:
            self._each("write", operands[1:] if self.name.startswith("ch") else operands)
        elif self.name in ("cp", "mv", "ln", "install") and len(operands) > 1:
            self._each("delete" if self.name == "mv" else "read", operands[:-1])
            self._each("write", operands[-1:])
        elif self.name == "dd":
            self._each("read", [w[3:] for w in words if w.startswith("if=")])
            self._each("write", [w[3:] for w in words if w.startswith("of=")])
        elif self.name == "sed" and any(w.startswith("-i") for w in words):
            self._each("write", operands[1:])
        else:
            self._each("read", operands)
            self._each(
                "read", [w.split("@", 1)[1] for w in words if "@" in w and w.startswith(("@", "-"))]
            )
            self._each("read", [w.partition("=@")[2] for w in words if "=@" in w])

    def _each(self, kind: str, operands: list[str]) -> None:
        for operand in operands:
            self.report.access(kind, [operand], self.name, self.node)

    def _root(self, words: list[str], operands: list[str]) -> None:
        recursive = any(
            w.startswith("-") and ("r" in w.lower() or w == "--recursive") for w in words
        )
        roots = {"/", "/*", "~", "~/", "~/*", "/home", "/etc", "/usr", "/var"}
        if recursive and any(o in roots for o in operands):
            self.report.add(
                self.node,
                "destroy-root",
                S.CRITICAL,
                f"{self.name} -r of the whole system or home",
                73,
            )
