"""A trial index on loopback (policy/packages.py `trial_index`): the one way plain HTTP goes
through the allowlist proxy. pip and npm send a request for an `http://` index to their proxy
as `GET http://localhost:8080/simple/six/ HTTP/1.1`; the proxy forwards it, rewritten, to that
origin's loopback address, and refuses every other plain request (egress/proxy.py).
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Collection

from hazmat.egress.rules import Refused

__all__ = ["LOOPBACK_NAMES", "loopback_address", "parse_forward"]

_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")  # all but a header value's tab
# a loopback name mapped here, never resolved
LOOPBACK_NAMES = {"localhost": "127.0.0.1"}
_HOP_BY_HOP = frozenset(
    {"host", "connection", "proxy-connection", "proxy-authorization", "keep-alive", "te",
     "upgrade", "trailer"}
)  # fmt: skip


def loopback_address(host: str) -> str:
    """The address of a trial index's host: a loopback name's, or the address itself."""
    return LOOPBACK_NAMES.get(host, host)


def parse_forward(head: bytes, trial: Collection[tuple[str, int]]) -> tuple[str, int, bytes]:
    """A plain HTTP request for a trial index (`GET http://localhost:8080/simple/ HTTP/1.1`,
    policy/packages.py `trial_index`): its origin, which must be one of `trial`, and its head
    as the index gets it: the path alone in the request line, Host the origin's, the proxy's
    and hop-by-hop headers dropped, `Connection: close` (one request per connection). Only
    GET and HEAD, with no body; Refused for anything else."""
    if b"\0" in head:
        raise Refused("the request has a NUL byte")
    try:
        line, _, rest = head.decode("ascii").partition("\r\n")
    except UnicodeDecodeError:
        raise Refused("the request is not ASCII") from None
    lines = [line, *rest.removesuffix("\r\n\r\n").split("\r\n")]
    if any(_CONTROL.search(each) for each in lines):
        raise Refused("a control character in the request (a bare CR or LF, say)")
    parts = line.split(" ")
    if len(parts) != 3 or parts[2] not in ("HTTP/1.1", "HTTP/1.0"):
        raise Refused("not an HTTP/1.x request line")
    method, target, version = parts
    if method not in ("GET", "HEAD"):
        raise Refused(f"only CONNECT is proxied (and GET to a trial index), not {method[:16]!r}")
    try:
        url = urllib.parse.urlsplit(target)
        origin = (url.hostname or "", url.port or 80)
    except ValueError:
        raise Refused("the request's target is not a URL") from None
    if url.scheme != "http" or url.username is not None or url.password is not None:
        raise Refused("a plain request's target must be an http:// URL without credentials")
    if origin not in trial:
        raise Refused("plain HTTP is proxied only to the policy's trial index")
    kept = []
    for header in lines[1:]:
        if header[:1] in (" ", "\t"):
            raise Refused("a folded header line")
        name, _, value = header.partition(":")
        name = name.strip().lower()
        if name in ("content-length", "transfer-encoding") and value.strip() != "0":
            raise Refused("a request to a trial index has no body")
        if header and name not in _HOP_BY_HOP:
            kept.append(header + "\r\n")
    path = (url.path or "/") + (f"?{url.query}" if url.query else "")
    netloc = url.netloc.rpartition("@")[2]
    rewritten = f"{method} {path} {version}\r\nHost: {netloc}\r\n{''.join(kept)}"
    return origin[0], origin[1], (rewritten + "Connection: close\r\n\r\n").encode("ascii")

