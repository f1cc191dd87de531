"""One line of `hazmat doctor`'s report (cli/doctor.py, cli/doctor_oci.py)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Check"]


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""
    needed: bool = True  # False: a failure is a warning (a tier the policy does not use)
