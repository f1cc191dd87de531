"""Prepared root file systems for the direct OCI tier (backends/oci/driver.py): each image hazmat
runs, exported once from the engine into a folder named by the image's ID, which every
sandbox of that image mounts read-only. The engine is needed only here, once per image; no
run goes through it.

A folder is complete when its `ready` file exists (written last, after a rename), so a
preparation that died half-way is never used, and one under way in another process is
waited for: a lock per image ID, taken before the `ready` file is looked at again. Its
release (the other process done, or dead: the kernel releases a dead process's lock) is
what is waited for, for at most `EXPORT_WAIT_S`; an export that holds it longer is an
`InfraError` naming the image and the lock. A new build of an image has a new ID, hence a
new folder; `hazmat doctor` lists the folders (`prepared`), and `remove_unused` deletes those
of IDs the engine no longer has.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import docker.errors

from hazmat._exceptions import InfraError
from hazmat.backends.container.engine import Engine, map_docker_errors
from hazmat.backends.container.owners import LABEL, owner_labels

__all__ = ["EXPORT_WAIT_S", "OCI_DIR", "RootFs", "oci_dir"]

OCI_DIR = Path("/var/lib/hazmat/oci")
# How long to wait for another process's export of the same image (the largest image, under
# load, exports in a few minutes)
EXPORT_WAIT_S = 600.0
_READY = "ready"


def oci_dir() -> Path:
    """Where the tier keeps its prepared root file systems: $HAZMAT_OCI_DIR, else OCI_DIR."""
    return Path(os.environ.get("HAZMAT_OCI_DIR") or OCI_DIR)


class RootFs:
    """The prepared root file systems under `base`/rootfs, made from `engine`'s images."""

    def __init__(self, engine: Engine | None = None, base: Path | None = None) -> None:
        self._engine = engine
        self.tier_dir = base or oci_dir()  # the tier's folder: these roots, the compiled agent
        self.base = self.tier_dir / "rootfs"
        self._known: dict[str, Path] = {}  # image reference -> its prepared root
        self._lock = threading.Lock()

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            self._engine = Engine()
        return self._engine

    def path(self, image: str) -> Path:
        """The read-only root of `image`, prepared now if it is not yet (once per image ID:
        a rebuilt image is prepared again under its new ID)."""
        with self._lock:
            known = self._known.get(image)
        if known is not None and (known.parent / _READY).is_file():
            return known
        with map_docker_errors(image):
            image_id = str(self.engine.api.inspect_image(image)["Id"])
        folder = self.base / image_id.split(":")[-1][:24]
        root = folder / "root"
        if not (folder / _READY).is_file():
            with self._locked(folder.name, image):
                if not (folder / _READY).is_file():
                    self._export(image, image_id, folder)
        with self._lock:
            self._known[image] = root
        return root

    def prepared(self) -> list[Path]:
        """The complete folders there are now."""
        if not self.base.is_dir():
            return []
        return sorted(p for p in self.base.iterdir() if (p / _READY).is_file())

    def remove_unused(self) -> list[Path]:
        """Delete the folders whose image ID the engine no longer has; what was deleted."""
        with map_docker_errors():
            ids = {str(i["Id"]).split(":")[-1][:24] for i in self.engine.api.images(all=True)}
        gone = [p for p in self.prepared() if p.name not in ids]
        for folder in gone:
            shutil.rmtree(folder, ignore_errors=True)
        return gone

    @contextlib.contextmanager
    def _locked(self, name: str, image: str) -> Iterator[None]:
        """Hold the image's lock; while another process holds it, try again at growing
        intervals (10 ms to 0.5 s) for at most `EXPORT_WAIT_S`."""
        self.base.mkdir(parents=True, exist_ok=True)
        self.base.chmod(0o700)
        path = self.base / f".{name}.lock"
        with open(path, "w") as lock:
            deadline = time.monotonic() + EXPORT_WAIT_S
            pause = 0.01
            while True:
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise InfraError(
                            f"{image}: another process has been preparing its root file system "
                            f"for the OCI tier for over {EXPORT_WAIT_S:g} s (it holds {path})"
                        ) from None
                    time.sleep(min(pause, left))
                    pause = min(pause * 2, 0.5)
            yield

    def _export(self, image: str, image_id: str, folder: Path) -> None:
        """`docker export` of a container of `image`, never started, unpacked by tar (which
        keeps owners, modes, links and device files as they are in the image)."""
        partial = folder.with_name(folder.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        shutil.rmtree(folder, ignore_errors=True)
        (partial / "root").mkdir(parents=True)
        api = self.engine.api
        with map_docker_errors(image):
            cid = api.create_container(
                image, command=["/bin/true"], network_disabled=True,
                labels={**owner_labels(), f"{LABEL}.purpose": "oci-export"},
            )["Id"]  # fmt: skip
        try:
            self._unpack(api.export(cid), partial / "root")
        except (docker.errors.APIError, OSError) as exc:
            shutil.rmtree(partial, ignore_errors=True)
            raise InfraError(f"could not export {image} for the OCI tier: {exc}") from exc
        finally:
            with contextlib.suppress(docker.errors.APIError):
                api.remove_container(cid, force=True)
        (partial / "image").write_text(f"{image}\n{image_id}\n")
        partial.rename(folder)
        (folder / _READY).write_text(image_id + "\n")

    @staticmethod
    def _unpack(chunks: Iterator[bytes], into: Path) -> None:
        tar = subprocess.Popen(
            ["tar", "-x", "--numeric-owner", "--same-permissions", "-C", str(into)],
            stdin=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        assert tar.stdin is not None and tar.stderr is not None
        with tar.stderr:
            try:
                for chunk in chunks:
                    tar.stdin.write(chunk)
            finally:
                tar.stdin.close()
                err = tar.stderr.read()
                code = tar.wait()
        if code != 0:
            raise OSError(f"tar exited with {code}: {err.decode(errors='replace')[-300:]}")
