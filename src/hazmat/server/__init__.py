"""hazmat as a service: the HTTP API (http.py) with its routes for sessions
(session_routes.py), server-sent events (sse.py) and MCP (mcp_tools.py), what a key may ask for
(fields.py), where runs go (executor.py), connection limits (guard.py) and the listening socket
(listening.py). Tenants' keys and quotas, and the wire, are in hazmat/service/, shared with the
cluster; the client the CLI uses when a server is running is cli/remote.py."""
