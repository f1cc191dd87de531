"""What a package download's failure is (packages/fetch.py): an index that does not answer is
the service's infrastructure failing (`InfraError` naming the index), never the caller's
`InputError`; a requirement the index does not have stays the caller's, in pip's words."""

from __future__ import annotations

import pytest

from hazmat import InfraError, InputError
from hazmat.packages.fetch import _sent
from hazmat.policy.packages import PackageSettings, Source
from hazmat.testing import report

INDEX = Source("python", "https://pypi.mirror.example:8443/simple/")
NPM = Source("npm", "https://registry.mirror.example/")
# pip's own words (its urllib3's retry warning, then its resolver's error) and npm's
PIP_NO_ANSWER = (
    b"WARNING: Retrying (Retry(total=4, connect=None, read=None, redirect=None, status=None)) "
    b"after connection broken by 'ProxyError('Unable to connect to proxy', OSError('Tunnel "
    b"connection failed: 502 Bad Gateway'))': /simple/six/\n"
    b"ERROR: Could not find a version that satisfies the requirement six (from versions: none)\n"
    b"ERROR: No matching distribution found for six\n"
)
PIP_REFUSED = (
    b"WARNING: Retrying (Retry(total=0, connect=None, read=None, redirect=None, status=None)) "
    b"after connection broken by 'NewConnectionError('<pip._vendor.urllib3.connection."
    b"HTTPSConnection object at 0x7f>: Failed to establish a new connection: [Errno 111] "
    b"Connection refused')': /simple/six/\n"
    b"ERROR: Could not find a version that satisfies the requirement six (from versions: none)\n"
)
NPM_NO_ANSWER = b"npm error code ECONNREFUSED\nnpm error errno ECONNREFUSED\n"
PIP_NOT_THERE = (
    b"ERROR: Could not find a version that satisfies the requirement nope (from versions: none)\n"
    b"ERROR: No matching distribution found for nope\n"
)


@pytest.mark.parametrize(
    ("source", "stderr", "how"),
    [(INDEX, PIP_NO_ANSWER, "ProxyError"), (INDEX, PIP_REFUSED, "NewConnectionError"),
     (NPM, NPM_NO_ANSWER, "ECONNREFUSED")],
)  # fmt: skip
def test_an_index_that_does_not_answer_is_an_infrastructure_error(
    source: Source, stderr: bytes, how: str
) -> None:
    with pytest.raises(InfraError) as caught:
        _sent(report(exit_code=3, stderr=stderr), PackageSettings(), source)
    assert str(caught.value) == (
        f"the package index at {source.url} did not answer ({how}); nothing was installed: "
        "the service's operator can check that the index is reachable"
    )


def test_a_requirement_the_index_lacks_is_the_callers_in_pips_words() -> None:
    with pytest.raises(InputError, match="No matching distribution found for nope"):
        _sent(report(exit_code=3, stderr=PIP_NOT_THERE), PackageSettings(), INDEX)
