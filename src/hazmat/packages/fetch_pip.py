"""Runs in the download sandbox as its program (hazmat/packages/fetch.py sends it; it is never
imported). pip works out what the asked requirements need beside what the image has (`pip
install --dry-run --report`), then downloads each file of that plan, checked against the
SHA-256 the index lists. Everything goes back in one archive: `plan.json` (each file's package,
version, name, the SHA-256 the index lists and its member in the archive) and the files, each
named by its own SHA-256. pip reaches the index through the allowlist proxy (HTTPS_PROXY) and
nothing else; this sandbox is told nothing of the host's cache (the host keeps what it lacks).

Nothing of a package runs here. pip runs in a process of its own (this file again, with `pip`
as its first argument) under four guards, each of which ends the fetch with status 4 (the host
refuses the install) before the thing guarded happens:
- no program starts from pip's process: a build backend (PEP 517's hooks, `setup.py`) always
  runs as one, whatever depth of dependency asked for it;
- no requirement is a URL or a path, neither one asked nor one that a package's metadata names
  (`Requires-Dist: x @ https://...`);
- no source distribution's metadata is prepared (the step that calls a build backend);
- pip fetches only https wheels whose SHA-256 the index lists (http ones only from a trial
  index on the host's loopback, which the policy names: fetch.py).
"""

import hashlib
import json
import os
import subprocess
import sys
import tarfile
import urllib.parse
from typing import Any, NoReturn

REFUSED = 4  # the fetch's status for a refusal (fetch.py)
GUARDED = 86  # pip's process ended by a guard (none of pip's own statuses)
UNGUARDED = 87  # pip lacks what the guards replace: not run


def refuse(text: str) -> NoReturn:
    """End pip's process at once, before what is refused happens (pip catches exceptions)."""
    sys.stderr.write(f"hazmat: {text}\n")
    sys.stderr.flush()
    os._exit(GUARDED)


def no_program(*args: Any, **kwargs: Any) -> NoReturn:
    shown = args[1] if len(args) > 1 else kwargs.get("args", "?")
    refuse(
        f"pip tried to start a program ({str(shown)[:200]}), a package's build step: nothing "
        "of a package runs while it is fetched"
    )


def guard_processes() -> None:
    """pip's process starts nothing (pip's own probes for rustc, lsb_release and a keyring
    are harmless to lose: PIP_KEYRING_PROVIDER is off; the others are skipped below)."""
    subprocess.Popen.__init__ = no_program  # type: ignore[method-assign]
    for name in ("system", "fork", "forkpty", "posix_spawn", "posix_spawnp", "execv", "execve"):
        if hasattr(os, name):
            setattr(os, name, no_program)


def guard_pip() -> None:
    from pip._internal.distributions.sdist import SourceDistribution
    from pip._internal.network import session
    from pip._internal.operations.prepare import RequirementPreparer
    from pip._internal.req.req_install import InstallRequirement

    made = InstallRequirement.__init__

    def checked_requirement(self: Any, req: Any, comes_from: Any, *args: Any, **kw: Any) -> None:
        made(self, req, comes_from, *args, **kw)
        if (req is not None and req.url) or (req is None and self.link) or self.editable:
            where = getattr(comes_from, "name", None) or "the request"
            refuse(
                f"{where} asks for {str(req or self.link)[:300]}: a URL or a path (packages come "
                "from the index alone, and nothing of a package runs while it is fetched)"
            )

    def no_build(self: Any, *args: Any, **kwargs: Any) -> NoReturn:
        refuse(
            f"{str(getattr(self, 'req', self))[:200]} is a source distribution (wheels only: "
            "nothing of a package runs while it is fetched)"
        )

    prepare_one = RequirementPreparer.prepare_linked_requirement

    def wheel_only(self: Any, req: Any, *args: Any, **kwargs: Any) -> Any:
        link = req.link
        if link is None or not secure(link) or not link.is_wheel or not listed(link):
            refuse(f"{str(link)[:300]} is not a wheel whose SHA-256 the index lists: not fetched")
        return prepare_one(self, req, *args, **kwargs)

    InstallRequirement.__init__ = checked_requirement  # type: ignore[method-assign]
    InstallRequirement.prepare_metadata = no_build  # type: ignore[method-assign]
    SourceDistribution.prepare_distribution_metadata = no_build  # type: ignore[method-assign]
    RequirementPreparer.prepare_linked_requirement = wheel_only  # type: ignore[method-assign]
    # pip's user agent asks rustc for its version: a program; answer as where there is none
    session.user_agent = lambda: "pip/hazmat"


def secure(link: Any) -> bool:
    """Whether `link` is https, or http from the trial index on loopback the host named
    (`PIP_TRUSTED_HOST`: policy packages.trial_index) and nowhere else."""
    trial = os.environ.get("PIP_TRUSTED_HOST")
    scheme, netloc = str(link.scheme), str(link.netloc)
    return scheme == "https" or (scheme == "http" and trial == netloc)


def listed(link: Any) -> str:
    """The SHA-256 the index lists for `link` (its page's `#sha256=` or its JSON hashes)."""
    hashes = getattr(link, "_hashes", None)
    if isinstance(hashes, dict):
        return str(hashes.get("sha256") or "")
    return str(link.hash or "") if link.hash_name == "sha256" else ""


def run_pip(args: list[str]) -> NoReturn:
    """pip in this process, guarded: the child that `pip()` starts. A pip without the parts
    the guards replace is not run at all (the download fails, as the host's fault)."""
    try:
        guard_pip()
        from pip._internal.cli.main import main
    except (ImportError, AttributeError) as exc:
        sys.stderr.write(f"hazmat: this image's pip cannot be guarded ({exc!r}): not run\n")
        sys.exit(UNGUARDED)
    guard_processes()
    sys.exit(main(args))


def pip(args: list[str]) -> int:
    quiet = ["--only-binary=:all:", "--no-build-isolation", "--progress-bar", "off", "--quiet"]
    status = subprocess.run([sys.executable, sys.argv[0], "pip", *args, *quiet]).returncode
    if status in (GUARDED, UNGUARDED):
        sys.exit(REFUSED if status == GUARDED else 1)
    return status


def say(text: str) -> NoReturn:
    print(f"hazmat: {text}", file=sys.stderr)
    sys.exit(REFUSED)


def planned(want: dict[str, Any]) -> list[dict[str, Any]]:
    # --break-system-packages: only a dry run, for the report (the image's Python is Debian's)
    dry = ["install", "--dry-run", "--break-system-packages", "--report", "/tmp/plan.json"]
    if pip([*dry, *want["requirements"]]):
        sys.exit(3)
    with open("/tmp/plan.json") as f:
        items = json.load(f)["install"]
    plan = [entry(item) for item in items]
    if len(plan) > want["most_files"]:
        names = ", ".join(p["name"] for p in plan)
        say(
            f"these need {len(plan)} packages ({names}); at most {want['most_files']} may be "
            "installed at once (policy packages.max_packages)"
        )
    return plan


def entry(item: dict[str, Any]) -> dict[str, Any]:
    info = item["download_info"]
    url = urllib.parse.urlsplit(info["url"])._replace(fragment="").geturl()
    name = urllib.parse.unquote(urllib.parse.urlsplit(url).path.rsplit("/", 1)[-1])
    sha256 = str(info.get("archive_info", {}).get("hashes", {}).get("sha256", ""))
    if not sha256 or not name.endswith(".whl"):
        say(f"{name}: not a wheel whose SHA-256 the index lists")
    meta = item["metadata"]
    return {
        "name": meta["name"],
        "version": meta["version"],
        "file": name,
        "digest": sha256,
        "member": "",
        "requested": bool(item.get("requested")),
        "url": f"{url}#sha256={sha256}",
    }


def download(want: dict[str, Any], plan: list[dict[str, Any]]) -> dict[str, str]:
    """Every file of the plan (the dry run fetched each already: pip's HTTP cache has them):
    its name -> its SHA-256."""
    os.makedirs("/tmp/files")
    urls = sorted({p.pop("url") for p in plan})
    if urls and pip(["download", "--no-deps", "--dest", "/tmp/files", *urls]):
        sys.exit(5)
    size = sum(os.path.getsize(os.path.join("/tmp/files", n)) for n in os.listdir("/tmp/files"))
    if size > want["most_bytes"]:
        say(
            f"the files to download take {size / 2**20:.1f} MB; at most "
            f"{want['most_bytes'] / 2**20:.0f} MB may be installed at once (policy "
            "packages.max_mb)"
        )
    members = {}
    for name in os.listdir("/tmp/files"):
        with open(os.path.join("/tmp/files", name), "rb") as f:
            members[name] = hashlib.sha256(f.read()).hexdigest()
    return members


def main() -> None:
    with open("want.json") as f:
        want = json.load(f)
    # pip's HTTP cache, for this run only: the files the dry run fetches (Debian's pip 25.1
    # fetches each, PEP 658 metadata or not: pip's issue 12603) are not fetched again by the
    # download, where the index lets them be cached (PyPI's files are immutable)
    os.environ.update(
        HOME="/tmp",
        PIP_CACHE_DIR="/tmp/pip-cache",
        PIP_NO_INPUT="1",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        PIP_KEYRING_PROVIDER="disabled",
        PIP_CONFIG_FILE=os.devnull,
    )
    plan = planned(want)
    members = download(want, plan)
    for item in plan:
        item["member"] = members.get(item["file"], "")
    with open("/tmp/plan-out.json", "w") as f:
        json.dump(plan, f)
    with tarfile.open("files.tar", "w") as out:
        out.add("/tmp/plan-out.json", arcname="plan.json")
        for name, digest in sorted(members.items()):
            out.add(os.path.join("/tmp/files", name), arcname=digest)


if __name__ == "__main__":
    if sys.argv[1:2] == ["pip"]:
        run_pip(sys.argv[2:])
    main()
