"""Small key and trust stores made in-process with `cryptography` (no JDK), for unit tests of the
TLS settings: a self-signed CN=localhost certificate with SAN IP:127.0.0.1, in the forms Kafka's
ssl.* keys (and zookeeper.ssl.* keys) name: PKCS12, PEM, a PEM key encrypted with the password,
and a stand-in for a JVM-only JKS file."""

from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import (
    BestAvailableEncryption,
    Encoding,
    NoEncryption,
    PrivateFormat,
    pkcs12,
)
from cryptography.x509.oid import NameOID

PASSWORD = "store-secret"


def make_stores(directory: Path) -> Path:
    """broker.p12, cert.pem, key.pem, encrypted-key.pem, chain-and-key.pem and legacy.jks in directory."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(1).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
            .sign(key, hashes.SHA256()))
    (directory / "broker.p12").write_bytes(pkcs12.serialize_key_and_certificates(
        b"broker", key, cert, None, BestAvailableEncryption(PASSWORD.encode())))
    (directory / "cert.pem").write_bytes(cert.public_bytes(Encoding.PEM))
    (directory / "key.pem").write_bytes(key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()))
    (directory / "encrypted-key.pem").write_bytes(key.private_bytes(
        Encoding.PEM, PrivateFormat.PKCS8, BestAvailableEncryption(PASSWORD.encode())))
    (directory / "chain-and-key.pem").write_bytes((directory / "cert.pem").read_bytes()
                                                  + (directory / "key.pem").read_bytes())
    (directory / "legacy.jks").write_bytes(b"\xfe\xed\xfe\xed" + bytes(60))
    return directory
