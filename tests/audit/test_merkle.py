from __future__ import annotations

import pytest

from hazmat.audit.merkle import (
    EMPTY_ROOT,
    Frontier,
    consistency_proof,
    inclusion_proof,
    leaf_hash,
    root,
    verify_consistency,
    verify_inclusion,
)

# RFC 6962 test vectors (certificate-transparency's reference data): leaf inputs and roots.
INPUTS = [
    b"",
    b"\x00",
    b"\x10",
    b"\x20\x21",
    b"\x30\x31",
    b"\x40\x41\x42\x43",
    bytes(range(0x50, 0x58)),
    bytes(range(0x60, 0x70)),
]
ROOTS = {
    1: "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    8: "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
}


def test_known_roots() -> None:
    leaves = [leaf_hash(x) for x in INPUTS]
    assert root([]) == EMPTY_ROOT
    for size, expected in ROOTS.items():
        assert root(leaves[:size]).hex() == expected


@pytest.mark.parametrize("n", range(1, 40))
def test_every_inclusion_and_consistency_proof_verifies(n: int) -> None:
    leaves = [leaf_hash(i.to_bytes(4, "big")) for i in range(n)]
    top = root(leaves)
    for i in range(n):
        proof = inclusion_proof(i, leaves)
        assert verify_inclusion(i, n, leaves[i], proof, top)
        assert not verify_inclusion(i, n, leaf_hash(b"other"), proof, top)
    for m in range(1, n + 1):
        proof = consistency_proof(m, leaves)
        assert verify_consistency(m, n, root(leaves[:m]), top, proof)
        if m < n:
            assert not verify_consistency(m, n, leaf_hash(b"x"), top, proof)


def test_frontier_matches_the_recursive_definition() -> None:
    frontier = Frontier()
    leaves = []
    for i in range(300):
        leaves.append(leaf_hash(str(i).encode()))
        frontier.append(leaves[-1])
        assert len(frontier.hashes) == bin(i + 1).count("1")
    assert frontier.root() == root(leaves)
    with pytest.raises(ValueError):
        Frontier(3, [leaves[0]])


def test_assembled_record_bytes_are_rfc8785_canonical() -> None:
    import rfc8785

    from hazmat.audit.records import Record

    record = Record(
        12,
        "2026-11-21T00:00:00.000001Z",
        "run.started",
        "ab" * 32,
        {"z": [1, 2.5, "é\u2028\x00"], "a": None, "code": 'print("x")\n'},
    )
    assert record.canonical() == rfc8785.dumps(record.as_json())
