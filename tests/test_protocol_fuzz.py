"""Whatever the program writes, the host-side parsers give a result, never an exception, and
never a file over its cap. The program shares the container with the agent and can forge any
protocol bytes (it can read the nonce), so these parsers see arbitrary input.

Seeded random inputs and mutations of valid ones (deterministic: the same cases every run)."""

from __future__ import annotations

import random
import struct

import pytest

from hazmat.backends.agent.single import end_marker, file_marker, parse_end, parse_files
from hazmat.backends.container.stream import Capture, Exchange, _Demux

NONCE = "0" * 32
WANT = ["out.txt", "data/r.csv", "ü.bin"]
CAP = 64
ALPHABET = [
    b"file ",
    b"missing ",
    b"too_large ",
    b"\n",
    b" ",
    b"0",
    b"9",
    b"12",
    b"\xc2\xb2",
    b"\xd9\xa3",
    b"out.txt",
    b"data/r.csv",
    "ü.bin".encode(),
    b"x" * 70,
    b"\x00",
    b"\xff",
    b"-1",
    b"+5",
    b"99999999999999999999",
    b"\r",
    b"\x85",
]


def random_blob(rng: random.Random) -> bytes:
    return b"".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 30)))


def valid_blob(rng: random.Random) -> bytes:
    out = []
    for name in rng.sample(WANT, rng.randint(0, len(WANT))):
        data = rng.randbytes(rng.randint(0, CAP))
        out.append(f"file {len(data)} {name}\n".encode() + data)
    return b"".join(out)


def mutate(rng: random.Random, blob: bytes) -> bytes:
    data = bytearray(blob)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(3)
        at = rng.randint(0, len(data))
        if op == 0 and data:
            del data[at : at + rng.randint(1, 8)]
        elif op == 1:
            data[at:at] = rng.choice(ALPHABET)
        elif data:
            data[min(at, len(data) - 1)] = rng.randrange(256)
    return bytes(data)


def check_files(blob: bytes) -> None:
    files, notes = parse_files(blob, WANT, CAP, 1 << 20)
    assert set(files) <= set(WANT)
    assert all(len(data) <= CAP for data in files.values())
    assert all(isinstance(n, str) for n in notes)


@pytest.mark.parametrize("seed", range(20))
def test_parse_files_never_raises_and_never_passes_the_cap(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(500):
        check_files(random_blob(rng))
        check_files(mutate(rng, valid_blob(rng)))


def test_forged_records_from_the_red_team() -> None:
    # A size in non-ASCII digits (passes str.isdigit, fails int) and a file over the cap.
    files, notes = parse_files(b"file \xc2\xb2 out.txt\nab", WANT, CAP, 1 << 20)
    assert files == {} and "malformed" in notes[0]
    files, notes = parse_files(b"file 65 out.txt\n" + b"x" * 65, WANT, CAP, 1 << 20)
    assert files == {} and "over the limit" in notes[0]
    files, notes = parse_files(b"file 1 out.txt\nafile 1 out.txt\nb", WANT, CAP, 1 << 20)
    assert files == {"out.txt": b"a"} and "malformed" in notes[0]  # a name given twice


@pytest.mark.parametrize("seed", range(5))
def test_parse_end_never_raises(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(2000):
        tail = random_blob(rng)
        status = parse_end(tail)
        assert status is None or -1 <= status <= 999
    assert parse_end("²\n".encode()) == -1
    assert parse_end("٣\n".encode()) == -1
    assert parse_end(b"137\n") == 137


@pytest.mark.parametrize("seed", range(10))
def test_the_stream_demultiplexer_takes_any_frames(seed: int) -> None:
    """Frames of any stream id and content, split anywhere, with forged markers inside."""
    rng = random.Random(seed)
    pieces = [file_marker(NONCE), end_marker(NONCE), b"0\n", b"\xc2\xb2\n", *ALPHABET]
    for _ in range(200):
        capture = Capture()
        exchange = Exchange(
            b"", 10, 256, end=end_marker(NONCE), marker=file_marker(NONCE), files_cap=512
        )
        demux = _Demux(capture, exchange)
        stream = b"".join(
            struct.pack(">BxxxL", rng.choice([0, 1, 2, 3, 255]), len(body)) + body
            for body in (
                b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
                for _ in range(rng.randint(0, 20))
            )
        )
        at = 0
        while at < len(stream):
            step = rng.randint(1, 64)
            demux.feed(stream[at : at + step])
            at += step
            if demux.must_stop:
                break
        demux.finish()
        assert len(capture.stdout) + len(capture.stderr) <= 256
        assert capture.end_status is None or -1 <= capture.end_status <= 999
        if capture.files_blob is not None and not capture.files_exceeded:
            check_files(bytes(capture.files_blob))
