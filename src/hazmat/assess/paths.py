"""Paths that matter outside the program's own files: the one list, and what a program that
reaches them scores. Every language's rules use it (python_ast.py, javascript.py, go.py).

An analyser reports each file operation it sees as an `Access`: what the call does (read,
write, delete) and the path its arguments spell out, pieced together from the string literals
in them and in the variables they came from (`os.path.join(Path.home(), ".ssh", "id_rsa")` is
`~/.ssh/id_rsa`). `findings` turns those, and whether the program also talks to a network,
into findings:

    a host secret's path, anywhere in the code          MEDIUM   secret-path
    ... reaching a read                                   HIGH     secret-read
    ... read, in a program that also opens a connection   CRITICAL secret-exfiltration
    a write to a start-up, scheduler or login file        HIGH     persistence-write
    a write or delete in the system's or a user's files   HIGH     outside-write / outside-delete
    ... elsewhere outside the working directory           MEDIUM   outside-write / outside-delete
    deleting logs, shell history or the audit trail       HIGH     destroy-evidence
    a path climbing two or more levels ("../..")          HIGH     path-traversal

Inside the sandbox these files are the container's, not the host's: what is scored is intent,
which is what the policy decides on. Paths under the working directory, /tmp and /dev/shm are
the program's own.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from hazmat.models import Finding, Severity

__all__ = ["Access", "findings", "host_secret", "spell"]

S = Severity

# Host secrets: credentials, keys, other processes' environments, the engine's socket.
SECRETS: tuple[tuple[str, str], ...] = (
    (r"^/etc/(shadow|gshadow|sudoers)(\.d)?\b", "the host's password hashes or sudo rules"),
    (r"(^|/)\.ssh(/|$)", "SSH keys"),
    (r"(^|/)id_(rsa|dsa|ecdsa|ed25519)\b", "an SSH private key"),
    (r"(^|/)\.aws/(credentials|config)\b", "cloud credentials"),
    (r"(^|/)\.config/gcloud(/|$)", "cloud credentials"),
    (r"(^|/)\.azure(/|$)", "cloud credentials"),
    (r"(^|/)\.kube/config\b", "cluster credentials"),
    (r"(^|/)\.docker/config\.json\b", "registry credentials"),
    (r"(^|/)\.(netrc|pgpass|git-credentials|npmrc|pypirc)\b", "stored passwords or tokens"),
    (r"(^|/)\.gnupg(/|$)", "private keys"),
    (r"^/proc/[^/]+/(environ|mem|maps|cmdline)\b", "another process's environment or memory"),
    (r"^/(var/)?run/secrets(/|$)", "mounted secrets"),
    (r"^/(var/)?run/docker\.sock\b", "the container engine's socket"),
    (r"^/etc/ssl/private(/|$)", "TLS private keys"),
    (r"^/root(/|$)", "root's home"),
    (r"(^|/)\.(bash|zsh|python)_history\b", "shell history"),
    (r"^/var/lib/hazmat(/|$)", "hazmat's own state"),
)
# Files read at login, boot or on a schedule: writing them makes code run later.
PERSISTENCE: tuple[tuple[str, str], ...] = (
    (r"^/etc/(cron\.[a-z]+|crontab|anacrontab)\b", "a cron schedule"),
    (r"^/var/spool/cron(/|$)", "a cron schedule"),
    (r"^/etc/(systemd|init\.d|rc\.local|rc\d\.d)\b", "a boot-time service"),
    (r"^/etc/(profile|bash\.bashrc|environment|ld\.so\.preload)\b", "a login or loader file"),
    (r"(^|/)\.(bashrc|bash_profile|profile|zshrc|zprofile|bash_login)$", "a shell start-up file"),
    (r"(^|/)\.config/autostart(/|$)", "a desktop autostart entry"),
    (r"(^|/)authorized_keys\b", "SSH login keys"),
    (r"^/etc/(passwd|group|sudoers)\b", "the user database"),
)
# What an intruder deletes to hide: logs, history, audit trails.
EVIDENCE: tuple[tuple[str, str], ...] = (
    (r"^/var/log(/|$)", "system logs"),
    (r"(^|/)\.(bash|zsh|python)_history\b", "shell history"),
    (r"^/var/lib/hazmat(/|$)", "hazmat's audit trail"),
)
_OWN = ("/work", "/tmp", "/dev/shm", "/dev/null", "/dev/stdout", "/dev/stderr", "/dev/stdin")
_SYSTEM = {"etc", "usr", "bin", "sbin", "lib", "lib64", "boot", "root", "home", "var", "opt",
           "proc", "sys", "dev", "run", "srv"}  # fmt: skip
_CLIMB = re.compile(r"(^|/)\.\.(/\.\.)+(/|$)")


@dataclass(frozen=True)
class Access:
    """One file operation: `kind` is read, write or delete; `path` as spelled by `spell`."""

    kind: str
    path: str
    call: str
    line: int
    column: int


def spell(pieces: Iterable[str]) -> str:
    """The path a sequence of literal pieces spells: joined with `/` where neither side has
    one, `$HOME` written as `~`, duplicate slashes folded."""
    out = ""
    for raw in pieces:
        piece = raw.replace("${HOME}", "~").replace("$HOME", "~")
        if not piece:
            continue
        joint = "" if not out or out.endswith("/") or piece.startswith("/") else "/"
        out = out + joint + piece
    return re.sub(r"/{2,}", "/", out)


_ANY_SECRET = re.compile("|".join(f"(?:{pattern})" for pattern, _ in SECRETS))


def _match(table: tuple[tuple[str, str], ...], path: str) -> str | None:
    for pattern, why in table:
        if re.search(pattern, path):
            return why
    return None


def host_secret(path: str) -> str | None:
    """Why `path` names a host secret, or None."""
    if not path or _ANY_SECRET.search(path) is None:  # one pass for the common case
        return None
    return _match(SECRETS, path)


def _outside(path: str) -> Severity | None:
    """For a path outside the program's own directories: HIGH in the system's and the users'
    (`/etc`, `/usr`, `/var`, a home...), MEDIUM elsewhere (`/mnt/data/out.csv`, where code
    written for other sandboxes puts its output). None for the program's own."""
    if path.startswith("~"):
        return S.HIGH
    if not path.startswith("/"):
        return None
    normal = posixpath.normpath(path)
    if any(normal == own or normal.startswith(own + "/") for own in _OWN):
        return None
    return S.HIGH if normal == "/" or normal.split("/")[1] in _SYSTEM else S.MEDIUM


_Add = Callable[[str, Severity, str, Access, "int | None"], None]


def findings(
    accesses: Iterable[Access], literals: Iterable[tuple[str, int, int]], network: bool, source: str
) -> list[Finding]:
    """Findings for the file operations a program makes; `literals` are its string literals
    (value, line, column), for secrets named but not seen reaching a read."""
    found: list[Finding] = []

    def add(rule: str, severity: Severity, message: str, at: Access, cwe: int | None) -> None:
        found.append(Finding(rule, source, severity, message, at.line, at.column, cwe))

    read_secret = False
    for a in accesses:
        secret = host_secret(a.path)
        if a.kind == "read" and secret:
            read_secret = True
            add("secret-read", S.HIGH, f"{a.call} reads {a.path!r}: {secret}", a, 200)
            if network:
                message = f"{a.call} reads {a.path!r} ({secret}) in a program that connects out"
                add("secret-exfiltration", S.CRITICAL, message, a, 200)
        if a.kind in ("write", "delete"):
            _write_findings(a, add)
        if _CLIMB.search(a.path):
            add("path-traversal", S.HIGH, f"{a.call} climbs out with {a.path!r}", a, 22)
    if not read_secret:
        for value, line, column in literals:
            why = host_secret(value) if len(value) < 256 else None
            if why:
                message = f"names {value!r}: {why}"
                found.append(Finding("secret-path", source, S.MEDIUM, message, line, column))
                break
    return found


def _write_findings(a: Access, add: _Add) -> None:
    persistence = _match(PERSISTENCE, a.path)
    evidence = _match(EVIDENCE, a.path)
    if a.kind == "write" and persistence:
        add("persistence-write", S.HIGH, f"{a.call} writes {a.path!r}: {persistence}", a, 506)
    elif evidence:
        add("destroy-evidence", S.HIGH, f"{a.call} {a.kind}s {a.path!r}: {evidence}", a, 779)
    elif severity := _outside(a.path):
        rule = "outside-write" if a.kind == "write" else "outside-delete"
        message = f"{a.call} {a.kind}s {a.path!r}, outside the working directory"
        add(rule, severity, message, a, 73)
