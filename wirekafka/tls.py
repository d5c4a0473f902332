"""TLS for SSL and SASL_SSL listeners and for connections to other brokers, from Kafka's ssl.*
keys: an ssl.SSLContext built the way Kafka's DefaultSslEngineFactory builds its engine.

- Key store: `ssl.keystore.type` PKCS12, or JKS naming a PKCS12 file (what keytool writes since
  Java 9, and what Java's JKS type also loads), at `ssl.keystore.location` with
  `ssl.keystore.password` (and `ssl.key.password`); or PEM, in a file or given inline as
  `ssl.keystore.key` + `ssl.keystore.certificate.chain`. A true JKS file (0xFEEDFEED) needs the
  JVM's format: convert it with `keytool -importkeystore -deststoretype PKCS12`.
- Trust store: the same types, `ssl.truststore.location|password` or `ssl.truststore.certificates`;
  without one, the system's CAs, as Java's default trust store.
- `ssl.enabled.protocols` (TLSv1.2, TLSv1.3) bound the versions; `ssl.client.auth`
  none|requested|required asks for client certificates; a broker's own connections check the
  peer's name when `ssl.endpoint.identification.algorithm` is https (Kafka's default).
- Each key may be given for one listener: listener.name.<listener>.<key> wins.

Python's ssl module loads a certificate chain only from files, so a PKCS12 key store is turned
into PEM in a private temporary file (mode 0600) that is removed as soon as it is loaded."""

from __future__ import annotations

import os
import ssl
import tempfile
from pathlib import Path
from typing import Callable

from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    pkcs12,
)
from cryptography.x509 import load_pem_x509_certificates

PROTOCOLS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}
STORE_TYPES = ("JKS", "PKCS12", "PEM")
_JKS_MAGIC = b"\xfe\xed\xfe\xed"

# (key) -> its value for a listener: the listener-prefixed one, else the broker's
Lookup = Callable[[str], object]


class TlsConfigError(ValueError):
    """An ssl.* setting wirekafka cannot act on, or a store it cannot read; the message says which."""


def server_context(lookup: Lookup) -> ssl.SSLContext:
    """A listener's context: its key store is required, its trust store checks client certificates."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _versions(ctx, lookup)
    if not _load_key_store(ctx, lookup):
        raise TlsConfigError("an SSL listener needs a key store: set ssl.keystore.location (or ssl.keystore.key "
                             "and ssl.keystore.certificate.chain with ssl.keystore.type=PEM)")
    auth = str(lookup("ssl.client.auth") or "none").lower()
    if auth not in CLIENT_AUTH:
        raise TlsConfigError(f"Invalid value {auth} for configuration ssl.client.auth: String must be one of: "
                             "required, requested, none")
    ctx.verify_mode = CLIENT_AUTH[auth]
    if auth != "none":
        _load_trust_store(ctx, lookup, ssl.Purpose.CLIENT_AUTH)
    return ctx


def client_context(lookup: Lookup) -> ssl.SSLContext:
    """A broker's context for connecting to another broker's SSL listener."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    _versions(ctx, lookup)
    _load_trust_store(ctx, lookup, ssl.Purpose.SERVER_AUTH)
    _load_key_store(ctx, lookup)  # presented if the peer asks (ssl.client.auth)
    ctx.check_hostname = str(lookup("ssl.endpoint.identification.algorithm") or "").lower() == "https"
    ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx


def _versions(ctx: ssl.SSLContext, lookup: Lookup) -> None:
    enabled = [p.strip() for p in str(lookup("ssl.enabled.protocols") or "").split(",") if p.strip()]
    unknown = [p for p in enabled if p not in PROTOCOLS]
    if unknown or not enabled:
        raise TlsConfigError(f"ssl.enabled.protocols={','.join(enabled)}: wirekafka serves TLSv1.2 and TLSv1.3")
    if str(lookup("ssl.cipher.suites") or ""):
        raise TlsConfigError("ssl.cipher.suites is set: wirekafka uses OpenSSL's default suites and does not map "
                             "Java's suite names")
    chosen = sorted(PROTOCOLS[p] for p in enabled)
    ctx.minimum_version, ctx.maximum_version = chosen[0], chosen[-1]


def _store_type(lookup: Lookup, key: str) -> str:
    kind = str(lookup(key) or "JKS").upper()
    if kind not in STORE_TYPES:
        raise TlsConfigError(f"{key}={kind}: wirekafka reads PKCS12 (or JKS naming a PKCS12 file) and PEM stores")
    return kind


def _password(lookup: Lookup, key: str) -> bytes | None:
    value = lookup(key)
    return str(value).encode() if value else None


def _load_key_store(ctx: ssl.SSLContext, lookup: Lookup) -> bool:
    """Load the key store into ctx; False when none is configured."""
    kind = _store_type(lookup, "ssl.keystore.type")
    location, inline_key = lookup("ssl.keystore.location"), lookup("ssl.keystore.key")
    if inline_key:
        if kind != "PEM":
            raise TlsConfigError("ssl.keystore.key is set: ssl.keystore.type must be PEM")
        chain = str(lookup("ssl.keystore.certificate.chain") or "")
        if not chain:
            raise TlsConfigError("ssl.keystore.key is set without ssl.keystore.certificate.chain")
        _load_chain(ctx, (chain.strip() + "\n" + str(inline_key).strip() + "\n").encode(),
                    _password(lookup, "ssl.key.password"))
        return True
    if not location:
        return False
    data = _read(str(location), "ssl.keystore.location")
    if kind == "PEM":
        _load_chain(ctx, data, _password(lookup, "ssl.key.password"))
        return True
    _refuse_jks(data, str(location))
    password = _password(lookup, "ssl.keystore.password")
    try:
        key, cert, extra = pkcs12.load_key_and_certificates(data, password)
    except ValueError as exc:
        raise TlsConfigError(f"cannot read the key store {location}: {exc} (is ssl.keystore.password right?)") from None
    if key is None or cert is None:
        raise TlsConfigError(f"the key store {location} holds no private key and certificate")
    pem = key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
    pem += b"".join(c.public_bytes(Encoding.PEM) for c in [cert, *extra])
    _load_chain(ctx, pem, None)
    return True


def _load_trust_store(ctx: ssl.SSLContext, lookup: Lookup, purpose: ssl.Purpose) -> None:
    """Trusted certificates from the trust store, or the system's when none is configured."""
    kind = _store_type(lookup, "ssl.truststore.type")
    location, inline = lookup("ssl.truststore.location"), lookup("ssl.truststore.certificates")
    if inline:
        if kind != "PEM":
            raise TlsConfigError("ssl.truststore.certificates is set: ssl.truststore.type must be PEM")
        _trust_pem(ctx, str(inline).encode(), "ssl.truststore.certificates")
        return
    if not location:
        ctx.load_default_certs(purpose)
        return
    data = _read(str(location), "ssl.truststore.location")
    if kind == "PEM":
        _trust_pem(ctx, data, str(location))
        return
    _refuse_jks(data, str(location))
    try:
        _key, cert, extra = pkcs12.load_key_and_certificates(data, _password(lookup, "ssl.truststore.password"))
    except ValueError as exc:
        raise TlsConfigError(f"cannot read the trust store {location}: {exc} "
                             "(is ssl.truststore.password right?)") from None
    certs = [c for c in [cert, *extra] if c is not None]
    if not certs:
        raise TlsConfigError(f"the trust store {location} holds no certificate")
    ctx.load_verify_locations(cadata="".join(c.public_bytes(Encoding.PEM).decode() for c in certs))


def _trust_pem(ctx: ssl.SSLContext, data: bytes, where: str) -> None:
    try:
        certs = load_pem_x509_certificates(data)
    except ValueError as exc:
        raise TlsConfigError(f"cannot read certificates from {where}: {exc}") from None
    ctx.load_verify_locations(cadata="".join(c.public_bytes(Encoding.PEM).decode() for c in certs))


def _load_chain(ctx: ssl.SSLContext, pem: bytes, key_password: bytes | None) -> None:
    """Load a PEM key and certificate chain through a private temporary file, removed at once."""
    if key_password is not None and b"ENCRYPTED" not in pem:
        key_password = None
    fd, path = tempfile.mkstemp(prefix="wirekafka-tls-", suffix=".pem")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(pem)
        ctx.load_cert_chain(path, password=key_password)
    except ssl.SSLError as exc:
        raise TlsConfigError(f"cannot use the key store's key and certificates: {exc}") from None
    finally:
        os.unlink(path)


def _read(location: str, key: str) -> bytes:
    try:
        return Path(location).read_bytes()
    except OSError as exc:
        raise TlsConfigError(f"{key}={location}: {exc.strerror}") from None


def _refuse_jks(data: bytes, location: str) -> None:
    if data[:4] == _JKS_MAGIC:
        raise TlsConfigError(f"{location} is a JKS key store, a JVM-only format: convert it with "
                             f"keytool -importkeystore -srckeystore {location} -destkeystore <new>.p12 "
                             "-deststoretype PKCS12, and set ssl.keystore.type (or ssl.truststore.type) to PKCS12")

