"""The console's front-end libraries are the files scripts/vendor-console.sh brought, each with
its license beside it, and the console's pages load nothing from anywhere else."""

from __future__ import annotations

import hashlib
import json
import re
from importlib import resources

STATIC = resources.files("hazmat.server.console") / "static"
TEMPLATES = resources.files("hazmat.server.console") / "templates"


def test_each_vendored_file_is_the_one_its_manifest_names() -> None:
    manifest = json.loads((STATIC / "VENDORED.json").read_text())
    assert set(manifest) == {"htmx.min.js", "uPlot.iife.min.js", "uPlot.min.css"}
    for name, entry in manifest.items():
        digest = hashlib.sha256((STATIC / name).read_bytes()).hexdigest()
        assert digest == entry["sha256"], f"{name} changed: run scripts/vendor-console.sh"
        assert (STATIC / f"LICENSE.{entry['package']}").is_file()


def test_the_pages_load_only_the_consoles_own_files() -> None:
    for template in TEMPLATES.iterdir():
        text = template.read_text()
        for url in re.findall(r'(?:src|href)="([^"{]+)"', text):
            assert url.startswith("/console/") or url in ("#", "data:,"), (template.name, url)
        assert "<script>" not in text and " style=" not in text, template.name  # CSP: none inline
