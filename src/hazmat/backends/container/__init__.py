"""Mechanics both tiers share: the seam (`backend.Driver`, `ContainerBackend`), the
engine client, the hardening and the settings expected of a sandbox, its cgroup, streams, uids
and owners."""
