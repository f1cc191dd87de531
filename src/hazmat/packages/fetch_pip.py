"""Runs in the download sandbox as its program (hazmat/packages/fetch.py sends it; it is never
imported). pip works out what the asked requirements need beside what the image has (`pip
install --dry-run --report`, binary files only: nothing of a package runs here), then downloads
each file the host's cache lacks, checked against the hash the index lists. Everything goes back
in one archive: `plan.json` (each file's package, version, name, the SHA-256 the index lists
and its member in the archive) and the files, each named by its own SHA-256. pip reaches the
index through the allowlist proxy (HTTPS_PROXY) and nothing else."""

import hashlib
import json
import os
import subprocess
import sys
import tarfile
import urllib.parse

with open("want.json") as f:
    want = json.load(f)
# pip's HTTP cache, for this run only: the files the dry run fetches (Debian's pip 25.1 fetches
# each, PEP 658 metadata or not: pip's issue 12603) are not fetched again by the download,
# where the index lets them be cached (PyPI's files are immutable)
os.environ.update(
    HOME="/tmp", PIP_CACHE_DIR="/tmp/pip-cache", PIP_NO_INPUT="1", PIP_DISABLE_PIP_VERSION_CHECK="1"
)
pip = [sys.executable, "-m", "pip"]
quiet = ["--only-binary=:all:", "--progress-bar", "off", "--quiet"]
# --break-system-packages: only a dry run, for the report (the image's Python is Debian's)
dry = ["install", "--dry-run", "--break-system-packages", "--report", "/tmp/plan.json"]
if subprocess.run([*pip, *dry, *quiet, *want["requirements"]]).returncode:
    sys.exit(3)
with open("/tmp/plan.json") as f:
    items = json.load(f)["install"]
plan, urls = [], []
for item in items:
    info = item["download_info"]
    name = urllib.parse.unquote(urllib.parse.urlsplit(info["url"]).path.rsplit("/", 1)[-1])
    sha256 = info.get("archive_info", {}).get("hashes", {}).get("sha256", "")
    meta = item["metadata"]
    plan.append(
        {
            "name": meta["name"],
            "version": meta["version"],
            "file": name,
            "digest": sha256,
            "member": "",
            "requested": bool(item.get("requested")),
        }
    )
    if not sha256 or sha256 not in want["cached"]:
        urls.append(info["url"])
if len(plan) > want["most_files"]:
    names = ", ".join(p["name"] for p in plan)
    print(
        f"hazmat: these need {len(plan)} packages ({names}); at most {want['most_files']} "
        "may be installed at once (policy packages.max_packages)",
        file=sys.stderr,
    )
    sys.exit(4)
os.makedirs("/tmp/files")
if (
    urls
    and subprocess.run(
        [*pip, "download", "--no-deps", "--dest", "/tmp/files", *quiet, *urls]
    ).returncode
):
    sys.exit(5)
size = sum(os.path.getsize(os.path.join("/tmp/files", n)) for n in os.listdir("/tmp/files"))
if size > want["most_bytes"]:
    print(
        f"hazmat: the files to download take {size / 2**20:.1f} MB; at most "
        f"{want['most_bytes'] / 2**20:.0f} MB may be installed at once (policy "
        "packages.max_mb)",
        file=sys.stderr,
    )
    sys.exit(4)
members = {}
for name in os.listdir("/tmp/files"):
    with open(os.path.join("/tmp/files", name), "rb") as f:
        members[name] = hashlib.sha256(f.read()).hexdigest()
for entry in plan:
    entry["member"] = members.get(entry["file"], "")
with open("/tmp/plan-out.json", "w") as f:
    json.dump(plan, f)
with tarfile.open("files.tar", "w") as out:
    out.add("/tmp/plan-out.json", arcname="plan.json")
    for name, digest in sorted(members.items()):
        out.add(os.path.join("/tmp/files", name), arcname=digest)
