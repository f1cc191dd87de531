"""Runs on many Docker engines: `hazmat worker` beside each engine, the service placing runs on
them through Redis (docs/scale.md)."""
