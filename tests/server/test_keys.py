"""The key store: keys shown once, stored hashed, checked in constant time, revocable while a
server holds the store open, and a damaged store is a clear error."""

from __future__ import annotations

import json
import re
import stat
from pathlib import Path

import pytest

from hazmat import AccessDenied, InputError, PolicyError, TrustLevel
from hazmat.service.tenant_keys import KeyStore, Quotas


def test_a_key_is_shown_once_and_stored_hashed(tmp_path: Path) -> None:
    store = KeyStore(tmp_path / "keys.json")
    entry, secret = store.create("acme", "untrusted")
    assert secret.startswith(f"hzm_{entry.id}_")
    text = (tmp_path / "keys.json").read_text()
    assert secret not in text and secret.removeprefix(f"hzm_{entry.id}_") not in text
    assert stat.S_IMODE((tmp_path / "keys.json").stat().st_mode) == 0o600
    assert store.check(secret) == entry
    assert entry.trust is TrustLevel.UNTRUSTED and entry.caller == f"tenant:acme key:{entry.id}"


@pytest.mark.parametrize(
    "presented",
    [None, "", "hzm_", "Bearer x", "hzm_000000000000_" + "A" * 43, "hzm_%s_" + "A" * 43],
)
def test_unknown_keys_are_refused(tmp_path: Path, presented: str | None) -> None:
    store = KeyStore(tmp_path / "keys.json")
    entry, _ = store.create("acme", "trusted")
    if presented and "%s" in presented:
        presented = presented % entry.id  # the right id, the wrong secret
    with pytest.raises(AccessDenied, match="valid API key"):
        store.check(presented)


def test_an_unknown_id_costs_the_same_check_as_a_wrong_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Timing must not tell whether a key id exists: both are hashed and compared once."""
    import hmac

    from hazmat.service import tenant_keys as keys

    store = KeyStore(tmp_path / "keys.json")
    entry, _ = store.create("acme", "trusted")
    compared: list[tuple[str, str]] = []
    real = hmac.compare_digest

    def counting(a: str, b: str) -> bool:
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(keys.hmac, "compare_digest", counting)
    for presented in (f"hzm_{entry.id}_" + "A" * 43, "hzm_000000000000_" + "A" * 43):
        with pytest.raises(AccessDenied, match="valid API key"):
            store.check(presented)
    assert len(compared) == 2 and all(len(a) == len(b) == 64 for a, b in compared)


def test_a_revoked_key_stops_working_for_a_store_already_open(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    server_side = KeyStore(path)
    entry, secret = KeyStore(path).create("acme", "unknown")
    assert server_side.check(secret).id == entry.id
    KeyStore(path).revoke("_".join(secret.split("_", 2)[:2]))  # by its hzm_<id> part
    with pytest.raises(AccessDenied, match="revoked"):
        server_side.check(secret)
    listed = server_side.list()
    assert [k.id for k in listed] == [entry.id] and listed[0].revoked
    assert "digest" not in listed[0].public()


def test_bad_names_and_quotas_are_input_errors(tmp_path: Path) -> None:
    store = KeyStore(tmp_path / "keys.json")
    with pytest.raises(InputError, match="tenant name"):
        store.create("../etc", "trusted")
    with pytest.raises(InputError, match="trust level"):
        store.create("acme", "root")
    with pytest.raises(InputError, match="concurrent"):
        Quotas(concurrent=0)
    with pytest.raises(InputError, match="no key with id"):
        store.revoke("abcdef123456")
    assert not (tmp_path / "keys.json").exists()


def test_a_damaged_store_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    path.write_text(json.dumps({"keys": [{"id": "x"}]}))
    with pytest.raises(PolicyError, match=re.escape("keys.json: the key store is damaged")):
        KeyStore(path).check("hzm_000000000000_" + "A" * 43)
    path.write_text("{")
    with pytest.raises(PolicyError, match="damaged"):
        KeyStore(path).list()


def test_only_a_key_made_for_any_runtime_may_ask_for_runc_at_a_runsc_level(
    tmp_path: Path,
) -> None:
    """A service's key may ask for gVisor, never for runc where its level has gVisor; the key
    the local server makes for its own user (`any_runtime`) may, as a run in-process may. The
    flag survives the key file."""
    from hazmat import NotPermitted, Policy
    from hazmat.server.fields import run_arguments

    store = KeyStore(tmp_path / "keys.json")
    service, service_secret = store.create("t", "untrusted")
    own, own_secret = store.create("local", "trusted", any_runtime=True)
    asked = {"code": "print(1)", "runtime": "runc"}
    with pytest.raises(NotPermitted, match="cannot ask for runc"):
        run_arguments(asked, service, Policy())
    assert run_arguments(asked, own, Policy())[2]["runtime"] == "runc"
    again = KeyStore(tmp_path / "keys.json")
    assert again.check(own_secret).any_runtime and not again.check(service_secret).any_runtime
