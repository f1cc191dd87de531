"""Network for a sandbox, only to the hosts a policy allows: a host-side CONNECT proxy reached
through a unix socket mounted into the container (proxy.py), its checks on names, addresses
and TLS (rules.py, tls.py)."""
