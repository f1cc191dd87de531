"""The host's side of what runs inside the sandbox: the modules that assemble the agents,
the runners and a session's interpreters from the files in backends/inside/."""
