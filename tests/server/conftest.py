"""Fixtures for the service's tests (the helpers are in tests/server_helpers.py): every test
here fails if the service it used logged a traceback (`no_tracebacks`)."""

import pytest

from server_helpers import live_server, no_tracebacks

__all__ = ["live_server", "no_tracebacks", "tracebacks_fail_the_test"]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "allow_traceback(text, reason): the service may log a traceback holding text in this "
        "test, for the reason given",
    )


@pytest.fixture(autouse=True)
def tracebacks_fail_the_test(no_tracebacks: None) -> None:
    """`no_tracebacks` for every test of the service."""
