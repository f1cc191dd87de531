"""The allowlist proxy's own certificate authority, for the hosts whose TLS it terminates to add
a secret (egress/secrets.py): made in memory when the proxy first needs it, never written
where a sandbox can read its key, and gone with the process. A run whose gate holds secrets
gets its certificate (and the host's usual ones) as the CA bundle its clients read.
"""

from __future__ import annotations

import datetime
import ssl
import tempfile
import threading
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = ["Authority", "host_bundle"]

_DAY = datetime.timedelta(days=1)
_HOST_BUNDLES = ("/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt")


def host_bundle() -> bytes:
    """The host's own CA certificates (Debian's or Red Hat's bundle), or none."""
    for path in _HOST_BUNDLES:
        try:
            return Path(path).read_bytes()
        except OSError:
            continue
    return b""


class Authority:
    """A CA of this process and a server context per host, its certificate signed by it."""

    def __init__(self) -> None:
        now = datetime.datetime.now(datetime.UTC)
        self._key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "hazmat egress proxy CA")])
        self._name = name
        self.certificate = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(self._key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + 30 * _DAY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(
                x509.KeyUsage(False, False, False, False, False, True, True, False, False),
                critical=True,
            )
            .add_extension(
                x509.SubjectKeyIdentifier.from_public_key(self._key.public_key()), critical=False
            )
            .sign(self._key, hashes.SHA256())
        )
        self.pem = self.certificate.public_bytes(serialization.Encoding.PEM)
        self._contexts: dict[str, ssl.SSLContext] = {}
        self._lock = threading.Lock()

    def context(self, host: str) -> ssl.SSLContext:
        """A server-side TLS context presenting `host`'s certificate (HTTP/1.1 only)."""
        with self._lock:
            found = self._contexts.get(host)
            if found is None:
                found = self._contexts[host] = self._make(host)
            return found

    def _make(self, host: str) -> ssl.SSLContext:
        now = datetime.datetime.now(datetime.UTC)
        key = ec.generate_private_key(ec.SECP256R1())
        leaf = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)]))
            .issuer_name(self._name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + 7 * _DAY)
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(host)]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
            )
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self._key.public_key()),
                critical=False,
            )
            .sign(self._key, hashes.SHA256())
        )
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.set_alpn_protocols(["http/1.1"])
        # ssl loads a chain only from files: a private folder, removed at once
        with tempfile.TemporaryDirectory(prefix="hazmat-authority-") as folder:
            chain = Path(folder) / "chain.pem"
            chain.touch(mode=0o600)
            chain.write_bytes(
                key.private_bytes(
                    serialization.Encoding.PEM,
                    serialization.PrivateFormat.PKCS8,
                    serialization.NoEncryption(),
                )
                + leaf.public_bytes(serialization.Encoding.PEM)
            )
            context.load_cert_chain(chain)
        return context
