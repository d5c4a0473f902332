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

server_tls also reports what a dynamic change of the stores is checked against (Kafka's
SslFactory): the key store's certificate entries (alias, subject, SubjectAltNames) and whether a
trust store is configured; a store that does not load carries the text Kafka's exception gives.

Python's ssl module loads a certificate chain only from files, so a PKCS12 key store is turned
into PEM in a private temporary file (mode 0600) that is removed as soon as it is loaded."""

from __future__ import annotations

import os
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from cryptography import x509
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


_PEM_ALIAS = "kafka"  # the alias Kafka's PEM key store gives its one key entry


class TlsConfigError(ValueError):
    """An ssl.* setting wirekafka cannot act on, or a store it cannot read; the message says which.
    `kafka` is what Kafka's own exception for the same problem prints (class: message), where one
    is known: a dynamic change is refused with that text, as Kafka refuses it."""

    def __init__(self, message: str, kafka: str | None = None) -> None:
        super().__init__(message)
        self.kafka = kafka


@dataclass(frozen=True)
class CertEntry:
    """A key store entry's certificate as Kafka compares it across a reconfiguration: alias,
    subject and SubjectAltNames as (GeneralName type number, value), in the certificate's order."""
    alias: str
    subject: x509.Name
    sans: tuple[tuple[int, str], ...]


@dataclass(frozen=True)
class ServerTls:
    """A listener's context with what a later change of its stores is checked against."""
    context: ssl.SSLContext
    key_entries: tuple[CertEntry, ...]
    truststore: bool  # a trust store is configured (else the system's CAs)


def server_tls(lookup: Lookup) -> ServerTls:
    """A listener's context: its key store is required, its trust store checks client
    certificates (and, once configured, is loaded whatever ssl.client.auth says, as Kafka loads it,
    so that a trust store that does not load is refused)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _versions(ctx, lookup)
    entries = _load_key_store(ctx, lookup)
    if entries is None:
        raise TlsConfigError("an SSL listener needs a key store: set ssl.keystore.location (or ssl.keystore.key "
                             "and ssl.keystore.certificate.chain with ssl.keystore.type=PEM)",
                             kafka="org.apache.kafka.common.config.ConfigException: Cannot remove the SSL keystore "
                                   "from an existing listener for which a keystore was configured.")
    auth = str(lookup("ssl.client.auth") or "none").lower()
    if auth not in CLIENT_AUTH:
        raise TlsConfigError(f"Invalid value {auth} for configuration ssl.client.auth: String must be one of: "
                             "required, requested, none")
    ctx.verify_mode = CLIENT_AUTH[auth]
    truststore = bool(lookup("ssl.truststore.location") or lookup("ssl.truststore.certificates"))
    if auth != "none" or truststore:
        _load_trust_store(ctx, lookup, ssl.Purpose.CLIENT_AUTH)
    return ServerTls(ctx, tuple(entries), truststore)


def server_context(lookup: Lookup) -> ssl.SSLContext:
    """A listener's context (server_tls without what reconfiguration compares)."""
    return server_tls(lookup).context


def client_context(lookup: Lookup, check_host: bool = True) -> ssl.SSLContext:
    """A broker's context for connecting to another broker's SSL listener; check_host False for
    the client side of a validation handshake, which (as Kafka's) names no host."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    _versions(ctx, lookup)
    _load_trust_store(ctx, lookup, ssl.Purpose.SERVER_AUTH)
    _load_key_store(ctx, lookup)  # presented if the peer asks (ssl.client.auth)
    ctx.check_hostname = check_host and str(lookup("ssl.endpoint.identification.algorithm") or "").lower() == "https"
    ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx


def handshake(server: ssl.SSLContext, client: ssl.SSLContext) -> None:
    """A TLS handshake between the two contexts in memory, as Kafka's SslEngineValidator runs one
    to check that a listener's new stores still talk to its old ones: raises ssl.SSLError when
    the client does not trust the server's certificate, or the server (asking for one) the
    client's (the server's side fails then: a TLS 1.3 server checks it after the client is done)."""
    s_in, s_out, c_in, c_out = ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO()
    sides = [(client.wrap_bio(c_in, c_out, server_side=False), c_out, s_in),
             (server.wrap_bio(s_in, s_out, server_side=True), s_out, c_in)]
    finished: set[int] = set()
    for _ in range(20):  # a handshake takes a few flights; a bound keeps a misbehaving peer finite
        for i, (side, out, peer_in) in enumerate(sides):
            if i not in finished:
                try:
                    side.do_handshake()
                    finished.add(i)
                except ssl.SSLWantReadError:
                    pass
            peer_in.write(out.read())
        if len(finished) == len(sides):
            return
    raise ssl.SSLError("the handshake did not finish")


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


def _load_key_store(ctx: ssl.SSLContext, lookup: Lookup) -> list[CertEntry] | None:
    """Load the key store into ctx: its certificate entries; None when none is configured."""
    kind = _store_type(lookup, "ssl.keystore.type")
    location, inline_key = lookup("ssl.keystore.location"), lookup("ssl.keystore.key")
    if inline_key:
        if kind != "PEM":
            raise TlsConfigError("ssl.keystore.key is set: ssl.keystore.type must be PEM",
                                 kafka=_invalid_config("SSL private key can be specified only for PEM, but key store "
                                                       f"type is {lookup('ssl.keystore.type')}."))
        chain = str(lookup("ssl.keystore.certificate.chain") or "")
        if not chain:
            raise TlsConfigError("ssl.keystore.key is set without ssl.keystore.certificate.chain",
                                 kafka=_invalid_config("SSL private key is specified, but certificate chain is not "
                                                       "specified."))
        pem = (chain.strip() + "\n" + str(inline_key).strip() + "\n").encode()
        _load_chain(ctx, pem, _password(lookup, "ssl.key.password"), _invalid_config("Invalid PEM keystore configs"))
        return _pem_entries(pem, _invalid_config("Invalid PEM keystore configs"))
    if not location:
        return None
    if kind == "PEM":
        failed = _invalid_config(f"Failed to load PEM SSL keystore {location}")
        data = _read(str(location), "ssl.keystore.location", failed)
        _load_chain(ctx, data, _password(lookup, "ssl.key.password"), failed)
        return _pem_entries(data, failed)
    failed = _load_failure(str(location), lookup("ssl.keystore.type"))
    if not lookup("ssl.keystore.password"):
        raise TlsConfigError("ssl.keystore.location is set without ssl.keystore.password",
                             kafka=_invalid_config("SSL key store is specified, but key store password is not "
                                                   "specified."))
    data = _read(str(location), "ssl.keystore.location", failed)
    _refuse_jks(data, str(location))
    try:
        store = pkcs12.load_pkcs12(data, _password(lookup, "ssl.keystore.password"))
    except ValueError as exc:
        raise TlsConfigError(f"cannot read the key store {location}: {exc} (is ssl.keystore.password right?)",
                             kafka=failed) from None
    if store.key is None or store.cert is None:
        raise TlsConfigError(f"the key store {location} holds no private key and certificate", kafka=failed)
    certs = [store.cert.certificate, *(c.certificate for c in store.additional_certs)]
    pem = store.key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
    pem += b"".join(c.public_bytes(Encoding.PEM) for c in certs)
    _load_chain(ctx, pem, None, failed)
    # Java lists a PKCS12 store's named entries: the key's certificate, then trusted certificates
    # (a key's chain certificates carry no name)
    named = [store.cert, *(c for c in store.additional_certs if c.friendly_name)]
    return [_entry((c.friendly_name or b"").decode(errors="replace"), c.certificate) for c in named]


def _entry(alias: str, cert: x509.Certificate) -> CertEntry:
    try:
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        names = x509.SubjectAlternativeName([])
    return CertEntry(alias, cert.subject, tuple(_general_name(n) for n in names))


# GeneralName type numbers (RFC 5280), as Java's getSubjectAlternativeNames reports them
_GENERAL_NAME_TYPES: list[tuple[type, int]] = [
    (x509.OtherName, 0), (x509.RFC822Name, 1), (x509.DNSName, 2), (x509.DirectoryName, 4),
    (x509.UniformResourceIdentifier, 6), (x509.IPAddress, 7), (x509.RegisteredID, 8)]


def _general_name(name: x509.GeneralName) -> tuple[int, str]:
    kind = next((n for cls, n in _GENERAL_NAME_TYPES if isinstance(name, cls)), -1)
    value = name.value
    if isinstance(name, x509.IPAddress):
        text = str(value) if value.version == 4 else ":".join(  # Java's uncompressed IPv6 form
            format(int.from_bytes(value.packed[i:i + 2], "big"), "x") for i in range(0, 16, 2))
    elif isinstance(name, x509.DirectoryName):
        text = value.rfc4514_string()
    elif isinstance(name, x509.RegisteredID):
        text = value.dotted_string
    elif isinstance(name, x509.OtherName):
        text = value.hex()
    else:
        text = str(value)
    return kind, text


def _pem_entries(pem: bytes, failed: str) -> list[CertEntry]:
    """A PEM key store's one entry: the first certificate of its chain, under Kafka's alias."""
    try:
        return [_entry(_PEM_ALIAS, load_pem_x509_certificates(pem)[0])]
    except ValueError:
        raise TlsConfigError("cannot read the key store's certificates", kafka=failed) from None


def _invalid_config(message: str) -> str:
    return f"org.apache.kafka.common.errors.InvalidConfigurationException: {message}"


def _load_failure(location: str, kind: object) -> str:
    """Kafka's text when a key or trust store file does not load (missing, wrong password, ...)."""
    return f"org.apache.kafka.common.KafkaException: Failed to load SSL keystore {location} of type {kind or 'JKS'}"


def _load_trust_store(ctx: ssl.SSLContext, lookup: Lookup, purpose: ssl.Purpose) -> None:
    """Trusted certificates from the trust store, or the system's when none is configured."""
    kind = _store_type(lookup, "ssl.truststore.type")
    location, inline = lookup("ssl.truststore.location"), lookup("ssl.truststore.certificates")
    if inline:
        if kind != "PEM":
            raise TlsConfigError("ssl.truststore.certificates is set: ssl.truststore.type must be PEM",
                                 kafka=_invalid_config("SSL trust store certs can be specified only for PEM, but "
                                                       f"trust store type is {lookup('ssl.truststore.type')}."))
        _trust_pem(ctx, str(inline).encode(), "ssl.truststore.certificates",
                   _invalid_config("Invalid PEM truststore configs"))
        return
    if not location:
        ctx.load_default_certs(purpose)
        return
    if kind == "PEM":
        failed = _invalid_config(f"Failed to load PEM SSL keystore {location}")
        _trust_pem(ctx, _read(str(location), "ssl.truststore.location", failed), str(location), failed)
        return
    failed = _load_failure(str(location), lookup("ssl.truststore.type"))
    data = _read(str(location), "ssl.truststore.location", failed)
    _refuse_jks(data, str(location))
    try:
        _key, cert, extra = pkcs12.load_key_and_certificates(data, _password(lookup, "ssl.truststore.password"))
    except ValueError as exc:
        raise TlsConfigError(f"cannot read the trust store {location}: {exc} "
                             "(is ssl.truststore.password right?)", kafka=failed) from None
    certs = [c for c in [cert, *extra] if c is not None]
    if not certs:
        raise TlsConfigError(f"the trust store {location} holds no certificate", kafka=failed)
    ctx.load_verify_locations(cadata="".join(c.public_bytes(Encoding.PEM).decode() for c in certs))


def _trust_pem(ctx: ssl.SSLContext, data: bytes, where: str, failed: str) -> None:
    try:
        certs = load_pem_x509_certificates(data)
    except ValueError as exc:
        raise TlsConfigError(f"cannot read certificates from {where}: {exc}", kafka=failed) from None
    ctx.load_verify_locations(cadata="".join(c.public_bytes(Encoding.PEM).decode() for c in certs))


def _load_chain(ctx: ssl.SSLContext, pem: bytes, key_password: bytes | None, failed: str) -> None:
    """Load a PEM key and certificate chain through a private temporary file, removed at once."""
    if key_password is not None and b"ENCRYPTED" not in pem:
        key_password = None
    fd, path = tempfile.mkstemp(prefix="wirekafka-tls-", suffix=".pem")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(pem)
        ctx.load_cert_chain(path, password=key_password)
    except ssl.SSLError as exc:
        raise TlsConfigError(f"cannot use the key store's key and certificates: {exc}", kafka=failed) from None
    finally:
        os.unlink(path)


def _read(location: str, key: str, failed: str) -> bytes:
    try:
        return Path(location).read_bytes()
    except OSError as exc:
        raise TlsConfigError(f"{key}={location}: {exc.strerror}", kafka=failed) from None


def _refuse_jks(data: bytes, location: str) -> None:
    if data[:4] == _JKS_MAGIC:
        raise TlsConfigError(f"{location} is a JKS key store, a JVM-only format: convert it with "
                             f"keytool -importkeystore -srckeystore {location} -destkeystore <new>.p12 "
                             "-deststoretype PKCS12, and set ssl.keystore.type (or ssl.truststore.type) to PKCS12")

