"""A Polygon package's files, read within bounds (`hazmat polygon`, grade/polygon.py).

A package is a folder holding `problem.xml`, or the .zip Polygon gives. Whatever it holds, the
reader stays bounded: each file it reads is a regular file inside the package (in a folder, no
component of its path is a link, and a FIFO, a device or a socket is refused before it is
opened for reading, so nothing blocks; in a zip, an entry marked as a link or a folder is
refused), no file is over its own cap, and the bytes read from the whole package, counted for
every read (the same file read for 200 tests counts 200 times), stay within `budget`: a task
line holds every test, so a package that would make one over `MAX_LINE_BYTES` is refused as
soon as its reads pass that. `problem.xml` is parsed by defusedxml with its DTD and entities
refused, in whatever encoding it declares.
"""

from __future__ import annotations

import os
import posixpath
import stat
import zipfile
import zlib
from pathlib import Path
from xml.etree.ElementTree import Element, ParseError

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import fromstring

from hazmat._exceptions import InputError, quoted
from hazmat.grade.tasks import MAX_LINE_BYTES

__all__ = ["MAX_XML", "Package", "parse_xml"]

MAX_XML = 4 * 1024 * 1024
# a package's reads together: its tests (which one task line must hold), its problem.xml and
# its checker's and interactor's sources
BUDGET = MAX_LINE_BYTES + 3 * MAX_XML
_WHY_MISSING = {"problem.xml": " (not a Polygon package)"}


class Package:
    """A package's files, from a folder or a zip, by the paths problem.xml names."""

    def __init__(self, path: Path, budget: int = BUDGET) -> None:
        self.path = path
        self.left = budget
        self.budget = budget
        self.zip: zipfile.ZipFile | None = None
        try:
            if path.is_file():
                self.zip = zipfile.ZipFile(path)
                self.prefix = _zip_root(self.zip.namelist())
            elif not (path / "problem.xml").exists():
                raise InputError(f"{path}: not a Polygon package (no problem.xml in it)")
        except (OSError, zipfile.BadZipFile) as exc:
            raise InputError(f"{path}: not a Polygon package folder or .zip ({exc})") from None

    def __enter__(self) -> Package:
        return self

    def __exit__(self, *_: object) -> None:
        if self.zip is not None:
            self.zip.close()

    def read(self, name: str, most: int = MAX_LINE_BYTES) -> bytes:
        """The bytes of the file `name`, at most `most` of them, counted against the budget."""
        clean = posixpath.normpath(name.replace("\\", "/"))
        if clean.startswith(("/", "../")) or clean == "..":
            raise InputError(f"{self.path}: {quoted(name)} is outside the package")
        try:
            if self.zip is not None:
                return self._from_zip(clean, most)
            return self._from_folder(clean, name, most)
        except (zipfile.BadZipFile, zlib.error) as exc:
            raise InputError(f"{self.path}: {clean} cannot be unpacked: {exc}") from None
        except (KeyError, FileNotFoundError):
            raise InputError(
                f"{self.path}: {clean} is missing{_WHY_MISSING.get(clean, '')}"
            ) from None
        except OSError as exc:
            raise InputError(f"{self.path}: cannot read {clean}: {exc.strerror or exc}") from None

    def text(self, name: str) -> str:
        try:
            return self.read(name).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"{self.path}: {name} is not UTF-8 text (byte {exc.start})") from None

    def _from_zip(self, clean: str, most: int) -> bytes:
        assert self.zip is not None
        info = self.zip.getinfo(self.prefix + clean)
        kind = stat.S_IFMT(info.external_attr >> 16)
        if info.is_dir() or kind not in (0, stat.S_IFREG):
            raise InputError(f"{self.path}: {clean} is not a regular file in the .zip")
        self._take(clean, info.file_size, most)
        return self.zip.read(info)  # never more than file_size bytes (zipfile's own bound)

    def _from_folder(self, clean: str, name: str, most: int) -> bytes:
        where = self.path
        for part in clean.split("/"):
            where = where / part
            if stat.S_ISLNK(os.lstat(where).st_mode):
                raise InputError(f"{self.path}: {quoted(name)} is a link; a package holds files")
        fd = os.open(where, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as file:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise InputError(f"{self.path}: {clean} is not a regular file")
            self._take(clean, info.st_size, most)
            data = file.read(info.st_size + 1)
        if len(data) > info.st_size:  # it grew while read
            raise InputError(f"{self.path}: {clean} changed while it was read")
        return data

    def _take(self, clean: str, size: int, most: int) -> None:
        if size > most:
            raise InputError(f"{self.path}: {clean} is over {most} bytes")
        if size > self.left:
            raise InputError(
                f"{self.path}: reading {clean} would take the package's reads over "
                f"{self.budget} bytes (its tests must fit in one task line; a file read for "
                "several tests counts each time)"
            )
        self.left -= size


def parse_xml(data: bytes, path: Path) -> Element:
    """problem.xml, with a DTD, entities and external references refused in any encoding."""
    try:
        root: Element = fromstring(data, forbid_dtd=True)
    except DefusedXmlException:
        raise InputError(f"{path}: problem.xml declares a DOCTYPE or entities; refused") from None
    except ParseError as exc:
        raise InputError(f"{path}: problem.xml is not XML: {exc}") from None
    return root


def _zip_root(names: list[str]) -> str:
    """The folder inside a zip that holds problem.xml ("" at its top)."""
    found = sorted((n for n in names if posixpath.basename(n) == "problem.xml"), key=len)
    if not found:
        raise InputError("the .zip holds no problem.xml (not a Polygon package)")
    return found[0][: -len("problem.xml")]
