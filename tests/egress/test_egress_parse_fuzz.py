"""The proxy's parsers see bytes a hostile program chose: whatever they get, they answer with
a value or `Refused`, never another exception. Seeded random inputs and mutations of real
requests, real ClientHellos and a trial index's plain requests (deterministic: the same cases
every run)."""

from __future__ import annotations

import contextlib
import random
import ssl

import pytest

from hazmat.egress.proxy import parse_connect
from hazmat.egress.rules import Refused, check_host
from hazmat.egress.tls import server_name
from hazmat.egress.trial import parse_forward

CASES = 3000


def _hello(name: str | None) -> bytes:
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    context = ssl.create_default_context()
    if name is None:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    tls = context.wrap_bio(incoming, outgoing, server_hostname=name)
    with pytest.raises(ssl.SSLWantReadError):
        tls.do_handshake()
    return outgoing.read()


def test_a_real_client_hello_gives_its_server_name_at_any_split() -> None:
    hello = _hello("files.example.org")
    assert server_name(hello) == "files.example.org"
    for cut in range(0, len(hello), 7):
        assert server_name(hello[:cut]) is None  # more bytes needed, never a wrong answer
    assert server_name(hello + b"extra bytes after") == "files.example.org"
    with pytest.raises(Refused, match="no server_name"):
        server_name(_hello(None))


def test_a_client_hello_split_over_two_records_is_joined() -> None:
    hello = _hello("files.example.org")
    body = hello[5:]
    first, second = body[:40], body[40:]
    split = (
        hello[:3]
        + len(first).to_bytes(2, "big")
        + first
        + hello[:3]
        + len(second).to_bytes(2, "big")
        + second
    )
    assert server_name(split) == "files.example.org"


def _mutate(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 6)):
        choice = rng.random()
        pos = rng.randrange(len(out) + 1)
        if choice < 0.4 and out:
            out[min(pos, len(out) - 1)] = rng.randrange(256)
        elif choice < 0.6:
            out[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        elif choice < 0.8 and out:
            del out[pos : pos + rng.randint(1, 16)]
        else:
            out = out[: rng.randrange(len(out) + 1)]
    return bytes(out)


def test_mutated_client_hellos_give_a_name_none_or_refused() -> None:
    rng = random.Random(14)
    seeds = [_hello("files.example.org"), _hello("a.b.example.net"), _hello(None)]
    for _ in range(CASES):
        data = _mutate(rng, rng.choice(seeds))
        try:
            name = server_name(data)
        except Refused:
            continue
        assert name is None or isinstance(name, str)


def test_random_bytes_give_none_or_refused() -> None:
    rng = random.Random(15)
    for _ in range(CASES):
        prefix = rng.choice([b"", b"\x16\x03\x01", b"\x16\x03\x03\x40\x00\x01"])
        data = prefix + bytes(rng.randrange(256) for _ in range(rng.randint(0, 300)))
        with contextlib.suppress(Refused):
            assert server_name(data) in (None,) or isinstance(server_name(data), str)


def test_mutated_connect_requests_give_host_and_port_or_refused() -> None:
    rng = random.Random(16)
    seeds = [
        b"CONNECT files.example.org:443 HTTP/1.1\r\nHost: files.example.org:443\r\n\r\n",
        b"CONNECT a.b.example.net:8443 HTTP/1.0\r\n\r\n",
        b"GET / HTTP/1.1\r\n\r\n",
    ]
    for _ in range(CASES):
        data = _mutate(rng, rng.choice(seeds))
        try:
            host, port = parse_connect(data)
            assert 0 < port < 65536
            check_host(host)
        except Refused:
            continue


def test_mutated_plain_requests_for_a_trial_index_give_its_origin_or_refused() -> None:
    rng = random.Random(17)
    trial = {("localhost", 8080), ("127.0.0.1", 3141)}
    seeds = [
        b"GET http://localhost:8080/simple/six/ HTTP/1.1\r\nHost: localhost:8080\r\n"
        b"Accept: text/html\r\nProxy-Authorization: Basic eA==\r\n\r\n",
        b"HEAD http://127.0.0.1:3141/root/ HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
        b"GET http://localhost:8080/?a=1&b=%20 HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
    ]
    for _ in range(CASES):
        data = _mutate(rng, rng.choice(seeds))
        try:
            host, port, rewritten = parse_forward(data, trial)
        except Refused:
            continue
        assert (host, port) in trial
        line, _, rest = rewritten.partition(b"\r\n")
        assert line.split(b" ")[1].startswith(b"/") and rewritten.endswith(b"\r\n\r\n")
        names = [h.split(b":", 1)[0].strip().lower() for h in rest.split(b"\r\n") if h]
        assert b"proxy-authorization" not in names and names.count(b"host") == 1
        assert not any(b in rewritten for b in (b"\0", b"\r\r", b"\n\n")) and b"\r" not in line
