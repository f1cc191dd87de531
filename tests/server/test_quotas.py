"""Per-tenant quotas, on a clock the test moves."""

from __future__ import annotations

import contextlib

import pytest

from hazmat import QuotaExceeded
from hazmat.service.quotas import QuotaBook
from hazmat.service.tenant_keys import Quotas
from hazmat.testing import Clock


def test_runs_at_once_are_capped_per_tenant() -> None:
    book = QuotaBook(Clock())
    quotas = Quotas(concurrent=2, per_minute=100)
    with contextlib.ExitStack() as stack:
        stack.enter_context(book.admit("a", quotas))
        stack.enter_context(book.admit("a", quotas))
        with pytest.raises(QuotaExceeded, match="concurrent") as info:
            stack.enter_context(book.admit("a", quotas))
        assert info.value.retry_after_s >= 1
        stack.enter_context(book.admit("b", quotas))  # another tenant is not affected
        assert book.active("a") == 2
    assert book.active("a") == 0
    with book.admit("a", quotas):
        pass


def test_the_minute_window_slides() -> None:
    clock = Clock()
    book = QuotaBook(clock)
    quotas = Quotas(concurrent=10, per_minute=3)
    for step in range(3):
        clock.now = 1000.0 + step * 10
        with book.admit("a", quotas):
            pass
    clock.now = 1025.0
    with pytest.raises(QuotaExceeded, match="per-minute") as info, book.admit("a", quotas):
        pass
    assert info.value.retry_after_s == 35  # the first start leaves the window at 1060
    assert (book.started("a"), book.started("b")) == (3, 0)  # what the console shows
    clock.now = 1060.0
    assert book.started("a") == 2
    with book.admit("a", quotas):
        pass


def test_a_failing_run_gives_its_slot_back() -> None:
    book = QuotaBook(Clock())
    quotas = Quotas(concurrent=1)
    with pytest.raises(RuntimeError), book.admit("a", quotas):
        raise RuntimeError("boom")
    assert book.active("a") == 0
