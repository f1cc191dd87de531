"""A note for a program that failed reaching the network its sandbox does not have.

Model-written code fetches a URL, resolves a host or runs `pip install` as a matter of course;
a sandbox has no network (or only the hosts its policy allows, through hazmat's proxy), and
the errors a program then sees (`Temporary failure in name resolution`, `getaddrinfo
ENOTFOUND`, pip's `externally-managed-environment`) do not say why. The result gets a note
saying so, and what the model can do instead.
"""

from __future__ import annotations

import re

__all__ = ["offline_note"]

# what the runtimes and tools print when a name does not resolve or a connection cannot be made
_SIGNS = re.compile(
    r"Temporary failure in name resolution|Name or service not known"
    r"|nodename nor servname|getaddrinfo (?:ENOTFOUND|EAI_AGAIN)|Could not resolve host"
    r"|Network is unreachable|ENETUNREACH|No address associated with hostname"
    r"|externally-managed-environment|Failed to establish a new connection"
    r"|dial tcp: lookup "
)


def offline_note(stderr: str, allowed: tuple[str, ...]) -> str | None:
    """The note for a failed run whose stderr shows it reached for the network, else None."""
    if not _SIGNS.search(stderr):
        return None
    if not allowed:
        return (
            "The sandbox has no network: no host can be reached and nothing can be downloaded "
            "or installed from the program. Work with the files and input given to the run."
        )
    hosts = ", ".join(allowed)
    return (
        f"The sandbox reaches only these hosts, through hazmat's proxy: {hosts}; any other "
        "host cannot be resolved or reached, and nothing else can be downloaded or installed."
    )
