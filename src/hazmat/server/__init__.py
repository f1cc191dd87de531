"""hazmat as a service: the HTTP API (http.py), tenants and keys (keys.py), quotas (quotas.py);
the client the CLI uses when a server is running is cli/remote.py."""
