"""`hazmat serve` for a benchmark: one process on loopback (or a unix socket), its key store,
audit log and paused sessions in a temporary folder, one key."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from hazmat.service.tenant_keys import KeyStore, Quotas


def serve(
    tmp: Path,
    trust: str,
    quotas: Quotas | None = None,
    where: Sequence[str] = ("--port", "0"),
    options: Sequence[str] = (),
) -> tuple[subprocess.Popen[str], str, str]:
    """(the process, its URL, a key of `trust` with `quotas`) once it listens; `where` is
    `--port 0` (any free port) or `--socket PATH`, `options` more of `serve`'s."""
    key = KeyStore(tmp / "keys.json").create("bench", trust, quotas or Quotas())[1]
    env = {**os.environ, "HAZMAT_AUDIT_DIR": str(tmp / "audit"),
           "HAZMAT_SESSIONS_DIR": str(tmp / "sessions")}
    cmd = [sys.executable, "-m", "hazmat", "serve", "--keys", str(tmp / "keys.json"), *where,
           *options]
    server = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              text=True, env=env)
    assert server.stdout is not None
    for line in server.stdout:
        if "listening on " in line:
            return server, line.split("listening on ", 1)[1].split()[0], key
    raise SystemExit(f"hazmat serve did not start ({' '.join(where)})")
