"""The allowlist proxy as one Sandbox uses it: a gate (a proxy socket of its own) per run that
has an allowlist, the proxy itself started with the first such run."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from hazmat._exceptions import InfraError
from hazmat.egress.proxy import EgressProxy, Gate
from hazmat.egress.rules import Network
from hazmat.egress.secrets import Secret


class Gates:
    def __init__(
        self,
        proxy: EgressProxy | None = None,
        reachable: Sequence[Network] = (),
        trial: Sequence[tuple[str, int]] = (),
    ) -> None:
        self._proxy = proxy
        self._reachable = tuple(reachable)  # the policy's egress.reachable
        self._trial = tuple(trial)  # its trial indexes' origins (packages.trial_index)
        self._lock = threading.Lock()

    def proxy(self) -> EgressProxy:
        with self._lock:
            if self._proxy is None:
                self._proxy = EgressProxy(reachable=self._reachable, trial=self._trial)
            return self._proxy

    def open(
        self, allow: Sequence[str], ports: Sequence[int], secrets: Sequence[Secret] = ()
    ) -> Gate | None:
        """A gate for a run allowed to reach `allow` on `ports`, with `secrets` (the policy's
        for it: their values are read now); None when the list is empty."""
        if not allow:
            return None
        held = [secret.held() for secret in secrets]
        try:
            return self.proxy().open(allow, ports, held)
        except OSError as exc:
            raise InfraError(f"cannot open the allowlist proxy's socket: {exc}") from exc

    def close(self, gate: Gate) -> list[dict[str, Any]]:
        """Close a run's gate (again harmlessly); what its program connected to, or tried."""
        return [connection.to_dict() for connection in self.proxy().close_gate(gate)]

    def shutdown(self) -> None:
        with self._lock:
            if self._proxy is not None:
                self._proxy.close()
