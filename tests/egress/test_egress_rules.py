"""The proxy's pure checks: host names, allowlist entries, narrowing, addresses."""

from __future__ import annotations

import ipaddress

import pytest

from hazmat.egress.rules import Refused, check_address, check_host, check_pattern, matches
from hazmat.egress.settings import NetworkSettings, narrowed


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [("Files.Example.ORG", "files.example.org"), ("a-b.example.net.", "a-b.example.net")],
)
def test_host_names_are_canonical(raw: str, canonical: str) -> None:
    assert check_host(raw) == canonical


@pytest.mark.parametrize(
    "raw",
    [
        "",
        ".",
        "a..b",
        "-a.example",
        "a-.example",
        "a_b.example",
        "a b.example",
        "a\x00b",
        "a\nb",
        "é.example",
        "a.example:443",
        "user@a.example",
        "a%2eexample",
        "[::1]",
        "::1",
        "127.0.0.1",
        "2130706433",
        "0x7f.1",
        "0177.0.0.1",
        "1.2.3.4.",
        "a.0x1f",
        "x" * 64 + ".a",
        ("a." * 127) + "a",
    ],
)
def test_anything_but_a_plain_host_name_is_refused(raw: str) -> None:
    with pytest.raises(Refused):
        check_host(raw)


def test_wildcards_match_the_names_below_them_only() -> None:
    patterns = [check_pattern("*.Example.net"), check_pattern("files.example.org")]
    assert patterns == ["*.example.net", "files.example.org"]
    assert matches("a.example.net", patterns) and matches("a.b.example.net", patterns)
    assert not matches("example.net", patterns)
    assert not matches("badexample.net", patterns)
    assert not matches("example.net.evil.test", patterns)
    assert not matches("x.files.example.org", patterns)
    for bad in ("*.net", "*", "**.example.net", "a.*.example.net", "1.2.3.4", "*.1.2.3.4"):
        with pytest.raises(ValueError):
            check_pattern(bad)


def test_a_run_may_narrow_the_levels_list_but_never_widen_it() -> None:
    level = NetworkSettings(("files.example.org", "*.example.net"))
    assert narrowed(level, None) == level.allow
    assert narrowed(level, []) == ()
    assert narrowed(level, ["files.example.org", "a.example.net", "*.b.example.net"]) == (
        "files.example.org",
        "a.example.net",
        "*.b.example.net",
    )
    for wider in (["other.example.org"], ["example.net"], ["*.example.org"], ["*.a.example.org"]):
        with pytest.raises(ValueError, match="not allowed at this trust level"):
            narrowed(level, wider)
    with pytest.raises(ValueError, match="list of host names"):
        narrowed(level, "files.example.org")
    with pytest.raises(ValueError, match="not allowed"):
        narrowed(NetworkSettings(), ["files.example.org"])


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "10.0.0.1",
        "172.16.0.1",
        "192.168.0.1",
        "169.254.169.254",
        "100.64.0.1",
        "0.0.0.0",
        "224.0.0.1",
        "255.255.255.255",
        "192.0.2.1",
        "::1",
        "::",
        "fe80::1",
        "fd00:ec2::254",
        "ff02::1",
        "::ffff:10.0.0.1",
        "2002:7f00:1::1",
        "64:ff9b::7f00:1",
        "2001:db8::1",
    ],
)
def test_non_public_addresses_are_refused(address: str) -> None:
    with pytest.raises(Refused, match="not a public address"):
        check_address(ipaddress.ip_address(address))


def test_public_addresses_pass_and_reachable_ranges_are_exempt() -> None:
    check_address(ipaddress.ip_address("11.0.0.1"))
    check_address(ipaddress.ip_address("2a00:1450::1"))
    mirror = [ipaddress.ip_network("10.9.0.0/16")]
    check_address(ipaddress.ip_address("10.9.1.1"), mirror)
    with pytest.raises(Refused):
        check_address(ipaddress.ip_address("10.8.1.1"), mirror)


def test_a_reachable_range_never_waives_an_embedded_ipv4_address() -> None:
    """An operator's range waives the address itself, not the IPv4 address it spells: with
    2002::/16 reachable, 2002:7f00:1:: (6to4 of 127.0.0.1) is still refused."""
    wide = [ipaddress.ip_network("2002::/16"), ipaddress.ip_network("::ffff:0:0/96")]
    for spelled in ("2002:7f00:1::", "2002:a9fe:a9fe::", "::ffff:127.0.0.1"):
        with pytest.raises(Refused):
            check_address(ipaddress.ip_address(spelled), wide)
    check_address(ipaddress.ip_address("2002:0b00:0001::"), wide)  # 11.0.0.1: public
