"""Waiting on a descriptor with poll(2) (_waiting.py): select(2) refused one numbered 1,024 or
more, and under verl's load (64 requests in flight) the service's process held that many, so
that one run in twelve was an internal error ("filedescriptor out of range in select()")."""

from __future__ import annotations

import os
import resource
import socket
from collections.abc import Iterator

import pytest

from hazmat import Outcome, Sandbox
from hazmat._waiting import readable

HIGH = 1500  # past select(2)'s FD_SETSIZE of 1,024


@pytest.fixture
def many_descriptors() -> Iterator[list[int]]:
    """This process holding more than 1,024 descriptors (its soft limit raised for the test)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < HIGH + 64:
        pytest.skip(f"the hard limit on open files is {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, HIGH + 64), hard))
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(HIGH)]
    try:
        yield held
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_a_descriptor_past_1024_is_waited_on(many_descriptors: list[int]) -> None:
    read, write = os.pipe()
    assert read >= 1024
    try:
        assert not readable(read)
        os.write(write, b"x")
        assert readable(read) and readable(read, 0.5)
        os.close(write)
        os.read(read, 1)
        assert readable(read)  # its end
    finally:
        os.close(read)


def test_a_closed_socket_is_refused_as_select_refuses_it() -> None:
    closed = socket.socket()
    closed.close()
    with pytest.raises(ValueError, match="closed"):
        readable(closed)


@pytest.mark.docker
def test_a_run_works_while_the_process_holds_more_than_1024_descriptors(
    many_descriptors: list[int],
) -> None:
    with Sandbox() as sandbox:  # the default tier and its pool, as a user gets them
        results = [sandbox.run("print(1)") for _ in range(3)]
    assert [r.outcome for r in results] == [Outcome.OK] * 3, [r.error for r in results]
