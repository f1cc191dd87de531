"""Packages on demand: a session installs packages from the policy's index (install.py)."""
