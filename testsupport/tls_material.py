"""Key and trust stores for TLS tests, made with the JDK's keytool as Kafka users make theirs:

- broker.p12: the broker's key and self-signed certificate (CN=localhost, SAN IP:127.0.0.1 and
  DNS:localhost, so hostname verification passes on loopback), PKCS12;
- client.p12: a client's key and self-signed certificate (CN=client), for ssl.client.auth;
- truststore.p12: both certificates as trusted entries (Java's and wirekafka's trust store);
- broker.pem / client.pem / client.key: the same in PEM, for librdkafka, kcat and the Python clients;
- on request (broker_keystore), more broker key stores beside them: a new key and certificate
  with the same or another subject, for rotating the broker's certificate at runtime.

All stores use PASSWORD. Made once per directory: an existing set is reused."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat, pkcs12

PASSWORD = "wirekafka-secret"


class TlsMaterial:
    """The stores' paths under one directory (made by make())."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self.keystore, self.client_keystore, self.truststore = (
            self.directory / name for name in ("broker.p12", "client.p12", "truststore.p12"))
        self.broker_pem, self.client_pem, self.client_key = (
            self.directory / name for name in ("broker.pem", "client.pem", "client.key"))

    def broker_settings(self, prefix: str = "") -> dict[str, str]:
        """server.properties entries for a listener (prefix e.g. "listener.name.ssl.") or all."""
        return {f"{prefix}ssl.keystore.type": "PKCS12", f"{prefix}ssl.keystore.location": str(self.keystore),
                f"{prefix}ssl.keystore.password": PASSWORD, f"{prefix}ssl.key.password": PASSWORD,
                f"{prefix}ssl.truststore.type": "PKCS12", f"{prefix}ssl.truststore.location": str(self.truststore),
                f"{prefix}ssl.truststore.password": PASSWORD}

    def librdkafka_settings(self, client_auth: bool = False) -> dict[str, str]:
        settings = {"security.protocol": "SSL", "ssl.ca.location": str(self.broker_pem)}
        if client_auth:
            settings.update({"ssl.certificate.location": str(self.client_pem),
                             "ssl.key.location": str(self.client_key)})
        return settings


def _keytool() -> str:
    java = os.environ.get("WIREKAFKA_JAVA") or shutil.which("java")
    if java is None:
        raise RuntimeError("keytool needs a JDK: run scripts/install_system_deps.sh")
    keytool = Path(os.path.realpath(java)).with_name("keytool")
    return str(keytool) if keytool.exists() else "keytool"


def _run(*args: str) -> None:
    proc = subprocess.run([_keytool(), *args], capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise RuntimeError(f"keytool {' '.join(args)}: {proc.stdout}{proc.stderr}")


def make(directory: Path) -> TlsMaterial:
    material = TlsMaterial(Path(directory))
    if material.client_key.exists():
        return material
    material.directory.mkdir(parents=True, exist_ok=True)
    for alias, store, dname, san in (("broker", material.keystore, "CN=localhost", "SAN=IP:127.0.0.1,DNS:localhost"),
                                     ("client", material.client_keystore, "CN=client", "SAN=DNS:client")):
        _run("-genkeypair", "-alias", alias, "-keyalg", "RSA", "-keysize", "2048", "-validity", "3650",
             "-dname", dname, "-ext", san, "-storetype", "PKCS12", "-keystore", str(store),
             "-storepass", PASSWORD, "-keypass", PASSWORD)
        pem = material.directory / f"{alias}.pem"
        _run("-exportcert", "-rfc", "-alias", alias, "-keystore", str(store), "-storepass", PASSWORD,
             "-file", str(pem))
        _run("-importcert", "-noprompt", "-alias", alias, "-file", str(pem), "-storetype", "PKCS12",
             "-keystore", str(material.truststore), "-storepass", PASSWORD)
    key, _cert, _extra = pkcs12.load_key_and_certificates(material.client_keystore.read_bytes(), PASSWORD.encode())
    assert key is not None
    material.client_key.write_bytes(key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()))
    return material


@functools.cache
def shared(prefix: str) -> TlsMaterial:
    """Stores made once per process in a temporary directory named by prefix, for modules whose
    broker settings need them before any fixture runs."""
    return make(Path(tempfile.mkdtemp(prefix=prefix)))


def broker_keystore(material: TlsMaterial, name: str, dname: str = "CN=localhost",
                    san: str = "SAN=IP:127.0.0.1,DNS:localhost") -> Path:
    """Another broker key store, <name>.p12 beside the others: a new key and self-signed
    certificate under the alias "broker" (as broker.p12's), with the given subject and
    SubjectAltNames; made once."""
    store = material.directory / f"{name}.p12"
    if not store.exists():
        _run("-genkeypair", "-alias", "broker", "-keyalg", "RSA", "-keysize", "2048", "-validity", "3650",
             "-dname", dname, "-ext", san, "-storetype", "PKCS12", "-keystore", str(store),
             "-storepass", PASSWORD, "-keypass", PASSWORD)
    return store
