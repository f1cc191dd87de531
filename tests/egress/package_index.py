"""A package index for the install tests: PEP 503 pages and wheels served over HTTPS on the
host's loopback (127.0.0.2, as "api.mirror.test" through the tests' resolver), with the test
session's CA. Two packages, made here: `hazmat-probe-native`, a compiled one (a shared object
built with the host's C compiler, loaded with ctypes: what a compiled extension needs of the
place it is installed in), and `hazmat-probe-pure`, which depends on it. Each file's metadata
is served on its own too (PEP 658), as PyPI does."""

from __future__ import annotations

import base64
import hashlib
import http.server
import io
import shutil
import subprocess
import sysconfig
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from tls_servers import Routes, https_server

NATIVE_INIT = """import ctypes, os
_lib = ctypes.CDLL(os.path.join(os.path.dirname(__file__), "libprobe.so"))
def twice(x):
    return _lib.probe_twice(x)
"""
PURE_INIT = """from probe_native import twice
VALUE = twice(21)
class Box:
    def __init__(self, n):
        self.n = n
"""


@dataclass
class Index:
    url: str
    ca_pem: bytes
    requests: Counter[str] = field(default_factory=Counter)  # path -> GETs


def _wheel(dist: str, version: str, tag: str, files: dict[str, bytes], requires: str) -> bytes:
    info = f"{dist.replace('-', '_')}-{version}.dist-info"
    meta = f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n{requires}"
    files = {
        **files,
        f"{info}/METADATA": meta.encode(),
        f"{info}/WHEEL": (
            f"Wheel-Version: 1.0\nGenerator: hazmat-tests\nRoot-Is-Purelib: "
            f"{'true' if tag.endswith('any') else 'false'}\nTag: {tag}\n"
        ).encode(),
    }
    record = [
        f"{name},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},{len(data)}"
        for name, data in files.items()
    ]
    files[f"{info}/RECORD"] = ("\n".join([*record, f"{info}/RECORD,,"]) + "\n").encode()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return out.getvalue()


def _shared_object(directory: Path) -> bytes:
    compiler = shutil.which("cc") or shutil.which("gcc")
    assert compiler, "the install tests build a shared object: install gcc (Debian's gcc)"
    source = directory / "probe.c"
    source.write_text("int probe_twice(int x) { return 2 * x; }\n")
    target = directory / "libprobe.so"
    subprocess.run([compiler, "-shared", "-fPIC", "-O2", "-o", target, source], check=True)
    return target.read_bytes()


def wheels(directory: Path) -> dict[str, bytes]:
    """The two packages' files, by file name."""
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    native = _wheel(
        "hazmat-probe-native",
        "1.0",
        f"py3-none-{platform}",
        {
            "probe_native/__init__.py": NATIVE_INIT.encode(),
            "probe_native/libprobe.so": _shared_object(directory),
        },
        "",
    )
    pure = _wheel(
        "hazmat-probe-pure",
        "1.0",
        "py3-none-any",
        {"probe_pure/__init__.py": PURE_INIT.encode()},
        "Requires-Dist: hazmat-probe-native\n",
    )
    return {
        f"hazmat_probe_native-1.0-py3-none-{platform}.whl": native,
        "hazmat_probe_pure-1.0-py3-none-any.whl": pure,
    }


def serve(directory: Path, host: str = "api.mirror.test") -> tuple[Index, http.server.HTTPServer]:
    routes: Routes = {}
    html = {"Content-Type": "text/html"}
    # as PyPI serves its files: they never change
    files = {
        "Content-Type": "application/octet-stream",
        "Cache-Control": "max-age=365000000, immutable",
    }
    for name, data in wheels(directory).items():
        project = name.split("-", 1)[0].replace("_", "-")
        # its metadata on its own (PEP 658, as PyPI serves it): pip resolves without the file
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            [meta] = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
            metadata = archive.read(meta)
        core = f"sha256={hashlib.sha256(metadata).hexdigest()}"
        link = (
            f'<a href="/files/{name}#sha256={hashlib.sha256(data).hexdigest()}" '
            f'data-core-metadata="{core}" data-dist-info-metadata="{core}">{name}</a>\n'
        )
        page = f"<!DOCTYPE html><html><body>\n{link}</body></html>".encode()
        routes[f"/simple/{project}/"] = (html, page)
        routes[f"/files/{name}"] = (files, data)
        routes[f"/files/{name}.metadata"] = (files, metadata)
    server, ca_pem, requests = https_server(directory, routes)
    url = f"https://{host}:{server.server_address[1]}/simple/"
    return Index(url, ca_pem, requests), server
