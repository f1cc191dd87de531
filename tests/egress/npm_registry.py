"""An npm registry for the install tests: packuments and tarballs served over HTTPS on the
host's loopback (127.0.0.2, as "api.mirror.test" through the tests' resolver), with the test
session's CA. Two packages, made here: `hazmat-probe-left`, which depends on
`hazmat-probe-pad` (a range: npm resolves it). And hostile ones: `hazmat-probe-escape`, whose
tarball has a member `package//work/victim.txt` (GNU tar's `--strip-components=1` makes it
`/work/victim.txt`), and `hazmat-probe-linked`, whose member `package/victim` is a symbolic
link to `/work/victim.txt` followed by a file written through it."""

from __future__ import annotations

import base64
import hashlib
import http.server
import io
import json
import tarfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from tls_servers import Routes, https_server

# hostile members, each added after the package's own: (name, type, link target, content)
HOSTILE: dict[str, list[tuple[str, bytes, str, bytes]]] = {
    "hazmat-probe-escape": [("package//work/victim.txt", tarfile.REGTYPE, "", b"overwritten\n")],
    "hazmat-probe-linked": [
        ("package/victim", tarfile.SYMTYPE, "/work/victim.txt", b""),
        ("package/victim", tarfile.REGTYPE, "", b"overwritten\n"),
    ],
}
PACKAGES = {
    "hazmat-probe-escape": ("1.0.0", {}, "module.exports = 1;\n"),
    "hazmat-probe-linked": ("1.0.0", {}, "module.exports = 2;\n"),
    "hazmat-probe-pad": (
        "1.2.0",
        {},
        "module.exports = (s, n) => String(s).padStart(n, '.');\n",
    ),
    "hazmat-probe-left": (
        "2.0.1",
        {"hazmat-probe-pad": "^1.0.0"},
        "const pad = require('hazmat-probe-pad');\nmodule.exports = (n) => pad(n, 4);\n",
    ),
}


@dataclass
class Registry:
    url: str
    ca_pem: bytes
    requests: Counter[str] = field(default_factory=Counter)  # path -> GETs


def _tarball(name: str, version: str, dependencies: dict[str, str], code: str) -> bytes:
    manifest = {"name": name, "version": version, "main": "index.js"}
    manifest["dependencies"] = dependencies  # type: ignore[assignment]
    files = {
        "package/package.json": json.dumps(manifest).encode(),
        "package/index.js": code.encode(),
    }
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as archive:
        for path, data in files.items():
            info = tarfile.TarInfo(path)
            info.size, info.mode = len(data), 0o644
            archive.addfile(info, io.BytesIO(data))
        for path, kind, target, data in HOSTILE.get(name, []):
            info = tarfile.TarInfo(path)
            info.type, info.linkname, info.size, info.mode = kind, target, len(data), 0o644
            archive.addfile(info, io.BytesIO(data) if data else None)
    return out.getvalue()


def serve(
    directory: Path, host: str = "api.mirror.test"
) -> tuple[Registry, http.server.HTTPServer]:
    routes: Routes = {}
    server, ca_pem, requests = https_server(directory, routes)
    url = f"https://{host}:{server.server_address[1]}"
    for name, (version, dependencies, code) in PACKAGES.items():
        data = _tarball(name, version, dependencies, code)
        tarball = f"/{name}/-/{name}-{version}.tgz"
        integrity = "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()
        dist = {
            "tarball": url + tarball,
            "integrity": integrity,
            "shasum": hashlib.sha1(data).hexdigest(),
        }
        meta = {"name": name, "version": version, "dependencies": dependencies, "dist": dist}
        packument = {"name": name, "dist-tags": {"latest": version}, "versions": {version: meta}}
        routes[f"/{name}"] = ({"Content-Type": "application/json"}, json.dumps(packument).encode())
        routes[tarball] = ({"Content-Type": "application/octet-stream"}, data)
    return Registry(url + "/", ca_pem, requests), server
