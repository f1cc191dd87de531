"""A note for a program that failed to import a package its image does not have.

Model-written code imports numpy, requests or lodash as a matter of course; hazmat's images
hold a runtime's standard library (and python-data its data libraries) and nothing is fetched
at run time. A bare `ModuleNotFoundError` does not tell the user why, so the result gets a
note naming what the image has, written first for the model that wrote the code (what it can
do itself: another image, or the code without the package; the sandbox has no network, so
installing it from the program cannot work), then for the operator: how to build an image
with the package (`hazmat images build --name ... --pip/--npm/--apt ...`, see docs/images.md).
A session the policy lets install packages is told to install it instead.
"""

from __future__ import annotations

import re

from hazmat._exceptions import quoted

__all__ = ["missing_package_note"]

_PYTHON = re.compile(r"^ModuleNotFoundError: No module named '([A-Za-z0-9_]+)", re.MULTILINE)
_NODE = re.compile(r"Cannot find (?:module|package) '([^'\s]+)'")
_GO = re.compile(r'cannot find package "([^"\s]+)"|package ([\w.\-/]+) is not in std')
_DATA_MODULES = frozenset(
    {"numpy", "pandas", "matplotlib", "scipy", "sklearn", "PIL", "dateutil", "pytz", "joblib"}
)
_HAS = {
    "hazmat/python:": "Python's standard library only",
    "hazmat/python-data:": "numpy, pandas, matplotlib, scipy and scikit-learn",
    "hazmat/node:": "Node's built-in modules only",
    "hazmat/go:": "Go's standard library only (modules are not fetched)",
}
_BUILD = (
    "For the operator: build an image with it once, `hazmat images build --name NAME --from "
    "{base} {flag} {pkg}`"
)
_ALLOW = ", and allow NAME in the policy (trust.<level>.allow_images; docs/images.md)."
_OFFLINE = (
    "; the sandbox has no network, so it cannot be installed from the program: write the code "
    "without it."
)


# Python modules whose package on an index has another name
_DISTRIBUTION = {
    "PIL": "pillow",
    "yaml": "PyYAML",
    "sklearn": "scikit-learn",
    "cv2": "opencv-python",
    "bs4": "beautifulsoup4",
    "dateutil": "python-dateutil",
    "dotenv": "python-dotenv",
    "jwt": "PyJWT",
}


def missing_package_note(
    language: str, image: str, stderr: str, installs: bool = False
) -> str | None:
    """The note for a failed run whose stderr says a package is missing, else None;
    `installs`: the run is a call of a session that may install packages (hazmat/packages/),
    and the note says how."""
    package = _missing(language, stderr)
    if package is None:
        return None
    if installs:
        name = _DISTRIBUTION.get(package, package) if language == "python" else package
        return (
            f"{quoted(package)} is not installed in this session: install it first (the "
            f"install_packages tool, session.install([{name!r}]) or POST "
            f"/v1/sessions/<id>/packages), then run the code again."
        )
    has = next((text for prefix, text in _HAS.items() if image.startswith(prefix)), "")
    where = f"{image} ({has})" if has else image
    if language == "go":
        return f"package {package} is not in {where}{_OFFLINE}"
    if language == "python":
        if package in _DATA_MODULES and image.startswith("hazmat/python:"):
            return (
                f"{quoted(package)} is not in {where}; the python-data image has it: run the "
                "code again with image='python-data' (or --image python-data)."
            )
        base = "python-data" if image.startswith("hazmat/python-data:") else "python"
        build = _BUILD.format(base=base, flag="--pip", pkg=package)
    else:
        build = _BUILD.format(base="node", flag="--npm", pkg=package)
    return f"{quoted(package)} is not in {where}{_OFFLINE} {build}{_ALLOW}"


def _missing(language: str, stderr: str) -> str | None:
    if language == "python":
        found = _PYTHON.search(stderr)
        return found.group(1) if found else None
    if language in ("javascript", "typescript"):
        node = _NODE.search(stderr)
        name = node.group(1) if node else ""
        if not name or name.startswith((".", "/", "node:")):
            return None  # a file of the program's own, or a built-in
        parts = name.split("/")
        return "/".join(parts[:2]) if name.startswith("@") else parts[0]
    if language == "go":
        found = _GO.search(stderr)
        return (found.group(1) or found.group(2)) if found else None
    return None
