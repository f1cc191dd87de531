"""The tamper-evident audit log: records, Merkle tree, checkpoints, writer and verifier."""
