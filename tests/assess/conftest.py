"""One warm assessor for the assessment tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from hazmat.assess.assessor import Assessor


@pytest.fixture(scope="session")
def assessor() -> Iterator[Assessor]:
    with Assessor() as a:
        a.start()
        yield a
