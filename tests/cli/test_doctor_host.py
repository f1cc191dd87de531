"""`hazmat doctor`'s host check (cli/doctor_host.py), from engine infos as Docker writes them."""

from __future__ import annotations

from hazmat.cli.doctor_host import host_check

ROOTFUL = ["name=apparmor", "name=seccomp,profile=builtin", "name=cgroupns"]


def test_the_tested_setups_are_said_to_be_tested() -> None:
    for cgroup, driver in (("1", "cgroupfs"), ("2", "systemd"), ("2", "cgroupfs")):
        raw = {"CgroupDriver": driver, "SecurityOptions": ROOTFUL, "OperatingSystem": "Debian"}
        check = host_check(raw, cgroup, environ={})
        assert check.ok, check
        assert check.detail.startswith(f"cgroup v{cgroup} with Docker's {driver} cgroup driver")


def test_an_untested_setup_is_a_warning_that_names_it() -> None:
    cases = {
        "rootless Docker": (
            {"CgroupDriver": "systemd", "SecurityOptions": [*ROOTFUL, "name=rootless"]}, {}
        ),
        "Docker Desktop": (
            {"CgroupDriver": "cgroupfs", "OperatingSystem": "Docker Desktop"}, {}
        ),
        "inside a Kubernetes pod": (
            {"CgroupDriver": "systemd"}, {"KUBERNETES_SERVICE_HOST": "10.0.0.1"}
        ),
        "cgroup v1 with Docker's systemd cgroup driver": ({"CgroupDriver": "systemd"}, {}),
    }  # fmt: skip
    for name, (raw, environ) in cases.items():
        cgroup = "1" if name.startswith("cgroup v1") else "2"
        check = host_check(raw, cgroup, environ=environ)
        assert not check.ok and not check.needed, check  # a warning, never a failure
        assert name in check.detail and "architecture.md" in check.fix, check


def test_an_info_without_a_driver_is_not_taken_for_a_tested_one() -> None:
    check = host_check({}, "2", environ={})
    assert not check.ok and "unknown cgroup driver" in check.detail, check
