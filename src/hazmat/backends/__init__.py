"""Where sandboxes are made and runs happen: the only package that knows Docker.

`base.py` is the seam the rest of hazmat sees (`Backend`, `Spec`, `Job`, `RunReport`). The
rooms, one job each (tests/test_layering.py keeps their borders):

    container/  what both tiers share: `ContainerBackend` and the `Driver` protocol, the
                engine client, hardening and the settings expected, cgroup, streams, uids
    docker/     the Docker driver           oci/  the OCI driver (runc, runsc directly)
    pool/       the warm pool and its sizing
    kept/       a session's kept container, a grader's kept build
    agent/      the host's side of what runs inside: the agents, runners, interpreters
    inside/     what runs inside the sandbox, as real files
"""
