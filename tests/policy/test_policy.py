from __future__ import annotations

import re
from pathlib import Path

import pytest

from hazmat import PRESETS, Limits, Policy, PolicyError, Runtime, TrustLevel, load_policy
from hazmat.policy import HostResources, SessionTemplate
from hazmat.policy.file import parse_policy


def test_presets_match_the_documented_figures() -> None:
    standard, strict = PRESETS["standard"], PRESETS["strict"]
    assert (standard.memory_mb, standard.cpus, standard.timeout_s, standard.pids) == (
        512,
        0.5,
        30,
        64,
    )
    assert (strict.memory_mb, strict.timeout_s, strict.pids) == (256, 15, 32)


def test_default_policy_is_strict_for_untrusted_and_untrusted_by_default() -> None:
    policy = Policy()
    assert policy.default_trust is TrustLevel.UNTRUSTED
    assert policy.settings("untrusted").limits == PRESETS["strict"]
    assert policy.settings("unknown").limits == PRESETS["standard"]
    assert policy.settings("untrusted").runtime is Runtime.RUNSC  # gVisor for untrusted code
    assert policy.settings("unknown").runtime is policy.settings("trusted").runtime is Runtime.RUNC
    listed = parse_policy({"trust": {"untrusted": {"timeout_s": 5}, "trusted": {}}})
    assert listed.settings("untrusted").runtime is Runtime.RUNSC
    assert listed.settings("trusted").runtime is Runtime.RUNC


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "policy.yaml"
    path.write_text(text)
    return path


def test_yaml_overrides_single_keys_on_top_of_a_preset(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
default_trust: unknown
trust:
  untrusted:
    runtime: runsc
    timeout_s: 5
  trusted:
    preset: strict
    memory_mb: 1024
images:
  python: python:3.12-slim
""",
    )
    policy = load_policy(path)
    assert policy.default_trust is TrustLevel.UNKNOWN
    untrusted = policy.settings("untrusted")
    assert untrusted.runtime is Runtime.RUNSC
    assert untrusted.limits == PRESETS["strict"].replace(timeout_s=5)
    assert policy.settings("trusted").limits.memory_mb == 1024
    assert policy.settings("trusted").limits.pids == PRESETS["strict"].pids
    assert policy.images["python"] == "python:3.12-slim"
    assert policy.source == str(path)


def test_empty_file_gives_the_default_policy(tmp_path: Path) -> None:
    assert load_policy(write(tmp_path, "")).levels == Policy().levels


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("trust:\n  untrusted:\n    memry_mb: 5\n", "trust.untrusted.memry_mb: unknown key"),
        (
            "trust:\n  untrusted:\n    memory_mb: lots\n",
            "trust.untrusted.memory_mb: expected a number",
        ),
        (
            "trust:\n  untrusted:\n    memory_mb: 1.5\n",
            "trust.untrusted.memory_mb: expected a whole number",
        ),
        ("trust:\n  untrusted:\n    memory_mb: -1\n", "trust.untrusted.memory_mb: -1 is outside"),
        ("trust:\n  untrusted:\n    timeout_s: 0\n", "trust.untrusted.timeout_s: 0 is outside"),
        ("trust:\n  untrusted:\n    pids: true\n", "trust.untrusted.pids: expected a number"),
        ("trust:\n  untrusted:\n    cpus: .nan\n", "trust.untrusted.cpus: nan is outside"),
        (
            "trust:\n  untrusted:\n    runtime: kata\n",
            "trust.untrusted.runtime: unknown runtime 'kata'",
        ),
        ("trust:\n  untrusted:\n    preset: lax\n", "trust.untrusted.preset: unknown preset 'lax'"),
        ("trust:\n  admin: {}\n", "trust.admin: unknown trust level 'admin'"),
        ("trust:\n  untrusted: 5\n", "trust.untrusted: expected a mapping"),
        ("trust: []\n", "trust: expected a mapping"),
        ("images:\n  python: ''\n", "images.python: expected an image name"),
        ("images:\n  cobol: x\n", "images.cobol: unknown language 'cobol'"),
        (
            "trust:\n  trusted:\n    images:\n      go: 3\n",
            "trust.trusted.images.go: expected an image name",
        ),
        (
            "trust:\n  trusted:\n    allow_images: python-data\n",
            "trust.trusted.allow_images: expected a list of image names",
        ),
        (
            "trust:\n  trusted:\n    compile_timeout_s: 0\n",
            "trust.trusted.compile_timeout_s: 0 is outside",
        ),
        ("default_trust: root\n", "default_trust: unknown trust level 'root'"),
        ("version: 2\n", "version: only version 1"),
        ("sandbox: {}\n", "sandbox: unknown key"),
        ("- a\n- b\n", "top level: expected a mapping"),
        ("trust: {untrusted: {memory_mb: [1}}\n", "not valid YAML"),
        ("audit:\n  dirr: /x\n", "audit.dirr: unknown key"),
        ("audit:\n  checkpoint_every: 0\n", "audit.checkpoint_every: 0 is outside"),
        ("audit:\n  keep_segments: two\n", "audit.keep_segments: expected a number"),
        ("audit:\n  anchor: ''\n", "audit.anchor: expected a directory path"),
        ("egress:\n  reachable: 10.0.0.0/8\n", "egress.reachable: expected a list"),
        ("egress:\n  reach: []\n", "egress.reach: unknown key"),
        ("egress:\n  reachable: [10.0.0.1/8]\n", "egress.reachable[0]: 10.0.0.1/8 has host bits"),
        ("egress:\n  reachable: [127.0.0.0/8]\n", "reachable[0]: 127.0.0.0/8 takes in loopback"),
        (
            "egress:\n  reachable: [10.0.0.0/8, 169.254.169.254/32]\n",
            "egress.reachable[1]: 169.254.169.254/32 takes in link-local",
        ),
        ("egress:\n  reachable: ['::/0']\n", "egress.reachable[0]: ::/0 takes in loopback"),
        (
            "egress:\n  reachable: [169.252.0.0/14]\n",  # neither end is link-local
            "egress.reachable[0]: 169.252.0.0/14 takes in link-local",
        ),
        ("egress:\n  reachable: ['::ffff:10.0.0.0/104']\n", "takes in IPv4-mapped"),
        ("egress:\n  reachable: ['2002:7f00::/24']\n", "takes in 6to4"),
        ("egress:\n  reachable: ['64:ff9b::/96']\n", "takes in NAT64"),
        ("egress:\n  reachable: ['2001::/32']\n", "takes in Teredo"),
        ("egress:\n  reachable: ['fd00::/8']\n", "takes in cloud metadata"),
        ("egress:\n  reachable: [100.64.0.0/10]\n", "takes in cloud metadata"),
        ("egress:\n  reachable: [0.0.0.0/0]\n", "egress.reachable[0]: 0.0.0.0/0 takes in loopback"),
        ("egress:\n  reachable: [224.0.0.0/4]\n", "reachable[0]: 224.0.0.0/4 takes in multicast"),
    ],
)
def test_bad_policy_names_the_file_and_the_key(tmp_path: Path, text: str, names: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(PolicyError) as info:
        load_policy(path)
    assert str(path) in str(info.value)
    assert names in str(info.value)


def test_unreadable_or_missing_policy_file_is_a_policy_error(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match="cannot read policy file"):
        load_policy(tmp_path / "nope.yaml")
    binary = tmp_path / "bin.yaml"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(PolicyError, match="cannot read policy file"):
        load_policy(binary)


def test_limits_are_validated_when_built() -> None:
    with pytest.raises(PolicyError, match="memory_mb"):
        PRESETS["standard"].replace(memory_mb=0)
    with pytest.raises(PolicyError, match="timeout_s"):
        PRESETS["standard"].replace(timeout_s=float("inf"))


def test_limits_are_clamped_to_a_safe_share_of_the_host() -> None:
    asked = PRESETS["standard"].replace(memory_mb=64 * 1024, cpus=16)
    applied = asked.clamped(HostResources(cpus=2, memory_mb=24 * 1024))
    assert applied.memory_mb == 12 * 1024
    assert applied.cpus == 2
    small = PRESETS["standard"].clamped(HostResources(cpus=2, memory_mb=24 * 1024))
    assert small == PRESETS["standard"]


def test_policy_objects_are_immutable() -> None:
    policy = Policy()
    with pytest.raises(TypeError):
        policy.levels[TrustLevel.TRUSTED] = policy.levels[TrustLevel.UNTRUSTED]  # type: ignore[index]
    with pytest.raises(AttributeError):
        policy.default_trust = TrustLevel.TRUSTED  # type: ignore[misc]
    assert isinstance(PRESETS["strict"], Limits)


def test_parse_policy_accepts_plain_data() -> None:
    policy = parse_policy({"trust": {"unknown": {"pids": 100}}}, source="inline")
    assert policy.settings("unknown").limits.pids == 100


def test_policy_session_keys_are_validated() -> None:
    with pytest.raises(PolicyError, match=re.escape("sessions.idle_s: 0 is outside")):
        parse_policy({"sessions": {"idle_s": 0}})
    with pytest.raises(PolicyError, match=re.escape("sessions.max_open: expected a number")):
        parse_policy({"sessions": {"max_open": 1.5}})
    with pytest.raises(PolicyError, match=re.escape("sessions.max_open: expected a number")):
        parse_policy({"sessions": {"max_open": True}})
    with pytest.raises(PolicyError, match=re.escape("sessions.idel_s: unknown key")):
        parse_policy({"sessions": {"idel_s": 5}})
    with pytest.raises(PolicyError, match="sessions"):
        parse_policy({"sessions": ["idle_s"]})
    with pytest.raises(PolicyError, match=re.escape("sessions.on_idle: expected end or pause")):
        parse_policy({"sessions": {"on_idle": "sleep"}})
    with pytest.raises(PolicyError, match=re.escape("sessions.store: expected a directory")):
        parse_policy({"sessions": {"store": 3}})
    with pytest.raises(PolicyError, match=re.escape("sessions.keep_paused_s: 1 is outside")):
        parse_policy({"sessions": {"keep_paused_s": 1}})
    paused = parse_policy({"sessions": {"on_idle": "pause", "store": "/srv/paused"}}).sessions
    assert (paused.on_idle, paused.store) == ("pause", "/srv/paused")
    policy = parse_policy({"sessions": {"idle_s": 60, "lifetime_s": 600.5, "max_open": 2}})
    assert (policy.sessions.idle_s, policy.sessions.lifetime_s) == (60, 600.5)
    assert (policy.sessions.max_open, policy.sessions.cpu_s) == (2, 600.0)


def test_session_templates_replace_the_defaults_and_are_validated() -> None:
    default = parse_policy({}).sessions.templates
    assert default["code-interpreter-v1"] == SessionTemplate("python", "python-data")
    named = parse_policy(
        {"sessions": {"templates": {"js-1": {"language": "js", "trust": "unknown"}}}}
    ).sessions.templates
    assert dict(named) == {"js-1": SessionTemplate("javascript", None, TrustLevel.UNKNOWN)}
    for templates, says in [
        ({"bad name": {"language": "python"}}, "sessions.templates.bad name: a template's name"),
        ({"t": {"language": "cobol"}}, "sessions.templates.t.language: unknown language"),
        ({"t": {"image": "x"}}, "sessions.templates.t.language: expected a language's name"),
        ({"t": {"language": "python", "size": 3}}, "sessions.templates.t.size: unknown key"),
        ({"t": {"language": "python", "trust": "root"}}, "sessions.templates.t.trust"),
        ({"t": {"language": "python", "image": ""}}, "sessions.templates.t.image: expected"),
        (["base"], "sessions.templates: expected a mapping"),
    ]:
        with pytest.raises(PolicyError, match=re.escape(says)):
            parse_policy({"sessions": {"templates": templates}})


def test_an_operators_reachable_ranges_reach_the_allowlist_proxy() -> None:
    """`egress.reachable` (an internal mirror on a private address) goes to the proxy every
    front-end's Sandbox makes; what the proxy does with it is tests/egress."""
    import ipaddress

    from hazmat import Sandbox
    from hazmat.testing import RecordingBackend

    policy = parse_policy({"egress": {"reachable": ["10.20.0.0/16", "fd12::/16"]}})
    assert policy.reachable == (
        ipaddress.ip_network("10.20.0.0/16"),
        ipaddress.ip_network("fd12::/16"),
    )
    assert Policy().reachable == ()  # nothing private is reachable unless declared
    with Sandbox(policy, backend=RecordingBackend()) as sandbox:
        assert sandbox._gates.proxy().reachable == policy.reachable
