"""Fixtures for the service's tests (the helpers are in tests/server_helpers.py)."""

from server_helpers import live_server

__all__ = ["live_server"]
