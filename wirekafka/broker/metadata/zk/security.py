"""How a ZooKeeper-mode broker secures its ZooKeeper session, as Kafka 3.9's broker does.

- **SASL**: when the JAAS file named by `-Djava.security.auth.login.config` (a KAFKA_OPTS entry,
  as Kafka's scripts pass it to the JVM) has a `Client` section (`zookeeper.sasl.clientconfig`
  names another), the session logs in with it, through kazoo and pure-sasl: ZooKeeper's
  DigestLoginModule gives SASL DIGEST-MD5 (ZooKeeper then knows the broker as `sasl:<username>`),
  Krb5LoginModule with the broker's keytab gives GSSAPI (`sasl:<principal>`).
- **TLS**: `zookeeper.ssl.client.enable=true` with `zookeeper.clientCnxnSocket` set to ZooKeeper's
  Netty socket connects over TLS, with the `zookeeper.ssl.*` key and trust stores read as the
  listeners' are (wirekafka/security/tls.py). Each key falls back to the ZooKeeper client's system property
  (`zookeeper.ssl.keyStore.location`, ...) as Kafka's does. A client certificate makes ZooKeeper
  know the broker as `x509:<subject>`.
- **ACLs**: with `zookeeper.set.acl=true` every znode the broker creates gets Kafka's
  `ZkData.defaultAcls`: all rights for the creating identity and read for everyone, except the
  credentials' subtrees (/config/users, /config/brokers, /delegation_token: the creator only) and
  the old consumers' /consumers (open to all). Kafka refuses set.acl without SASL or a TLS client
  certificate, since the znodes would then belong to no one: so does this, with its message.

What the broker cannot do as Kafka asks stops start-up with the reason rather than connect less
securely than asked: certificate revocation checks, a Kerberos login without a keytab."""

from __future__ import annotations

import socket
import ssl
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import puresasl
import puresasl.mechanisms
from kazoo.client import KazooClient, TransactionRequest
from kazoo.security import ACL, CREATOR_ALL_ACL, OPEN_ACL_UNSAFE, READ_ACL_UNSAFE

from wirekafka.security import jaas, tls
from wirekafka.security.kerberos import keytab_login as kerberos_login
from wirekafka.broker.metadata.zk.poll_handler import PollHandler
from wirekafka.broker.metadata.zk import layout as zl
from wirekafka.config.broker_config import BrokerConfig
from wirekafka.config.broker_keys import ZK_SECURE_CLIENT_PROPERTY, ZK_TLS_KEYS
from wirekafka.startup_errors import StartupError
from wirekafka.security.jvm_properties import LOGIN_CONFIG, system_property
from wirekafka.security.sasl.gssapi import GssapiClient, GssapiFailure

SASL_CLIENT = "zookeeper.sasl.client"
LOGIN_CONTEXT = "zookeeper.sasl.clientconfig"
SERVICE_NAME = "zookeeper.sasl.client.username"  # the ZooKeeper client's SASL service name
DIGEST_LOGIN_MODULE = "org.apache.zookeeper.server.auth.DigestLoginModule"
GSSAPI_MECHANISM = "WIREKAFKA-GSSAPI"  # pure-sasl's name for _GssapiMechanism
NETTY_SOCKET = "org.apache.zookeeper.ClientCnxnSocketNetty"
# Kafka's ZkData.SensitiveRootPaths: znodes holding credentials, not readable by everyone
SENSITIVE_ROOTS = ("/config/users", "/config/brokers", "/delegation_token/tokens")
# the listener TLS key (wirekafka/security/tls.py) -> the ZooKeeper key it is read from; ZooKeeper's key
# store has no key password of its own: the key is protected by the store's password
_TLS_LOOKUP = {
    "ssl.keystore.location": "zookeeper.ssl.keystore.location",
    "ssl.keystore.password": "zookeeper.ssl.keystore.password",
    "ssl.key.password": "zookeeper.ssl.keystore.password",
    "ssl.keystore.type": "zookeeper.ssl.keystore.type",
    "ssl.truststore.location": "zookeeper.ssl.truststore.location",
    "ssl.truststore.password": "zookeeper.ssl.truststore.password",
    "ssl.truststore.type": "zookeeper.ssl.truststore.type",
    "ssl.cipher.suites": "zookeeper.ssl.cipher.suites",
}
# ZooKeeper's X509Util picks a store's type from its file name when none is set
_STORE_SUFFIXES = {".jks": "JKS", ".p12": "PKCS12", ".pfx": "PKCS12", ".pem": "PEM"}


def default_acls(path: str) -> list[ACL]:
    """Kafka's ZkData.defaultAcls(isSecure=true, path) for a path under the chroot."""
    if path == zl.CONSUMERS:
        return list(OPEN_ACL_UNSAFE)
    if path.startswith(SENSITIVE_ROOTS):
        return list(CREATOR_ALL_ACL)
    return [*CREATOR_ALL_ACL, *READ_ACL_UNSAFE]


@dataclass(frozen=True)
class ZkClientSecurity:
    """What every ZooKeeper client of the broker is made with (the session, the chroot check)."""

    secure_acls: bool = False
    sasl: Mapping[str, Any] | None = None  # kazoo's sasl_options
    tls: ssl.SSLContext | None = field(default=None, compare=False)

    def client(self, hosts: str, timeout_s: float) -> KazooClient:
        kwargs: dict[str, Any] = {"hosts": hosts, "timeout": timeout_s, "randomize_hosts": False}
        if self.sasl is not None:
            kwargs["sasl_options"] = dict(self.sasl)  # a copy: kazoo adds to it
        kwargs["handler"] = PollHandler() if self.tls is None else TlsHandler(self.tls)
        return (AclKazooClient if self.secure_acls else KazooClient)(**kwargs)


def client_security(config: BrokerConfig) -> ZkClientSecurity:
    """The ZooKeeper client's security from the broker's config, its JAAS file and KAFKA_OPTS'
    system properties; StartupError (Kafka's message where it has one) for what cannot be honoured."""
    sasl = _sasl_login(config)
    setting = _settings(config)
    context = _tls_context(setting) if str(setting("zookeeper.ssl.client.enable")).lower() == "true" else None
    secure_acls = config.bool("zookeeper.set.acl")
    tls_client_auth = context is not None and bool(setting("zookeeper.ssl.keystore.location"))
    if secure_acls and sasl is None and not tls_client_auth:
        raise StartupError(
            "zookeeper.set.acl is true, but ZooKeeper client TLS configuration identifying at least "
            "zookeeper.ssl.client.enable, zookeeper.clientCnxnSocket, and zookeeper.ssl.keystore.location was not "
            f"present and the verification of the JAAS login file failed {_sasl_properties()}")
    return ZkClientSecurity(secure_acls, sasl, context)


# ---- SASL ------------------------------------------------------------------------------------
def _sasl_properties() -> str:
    """Kafka's JaasUtils.zkSecuritySysConfigString: the system properties its messages quote."""
    login = system_property(LOGIN_CONFIG) or "null"  # as Java prints an unset property
    enabled = system_property(SASL_CLIENT) or "default:true"
    context = system_property(LOGIN_CONTEXT) or "default:Client"
    return f"[{LOGIN_CONFIG}={login}, {SASL_CLIENT}={enabled}, {LOGIN_CONTEXT}={context}]"


def _sasl_login(config: BrokerConfig) -> dict[str, Any] | None:
    """kazoo's sasl_options from the JAAS file's ZooKeeper client section; None without one."""
    try:
        location, sections = config.jaas_file
    except (OSError, jaas.JaasError) as exc:
        raise StartupError(f"Exception while loading Zookeeper JAAS login context {_sasl_properties()}: "
                           f"{exc}") from None
    modules = sections.get(system_property(LOGIN_CONTEXT) or "Client")
    if not modules:
        return None
    if (system_property(SASL_CLIENT) or "true").lower() != "true":
        raise StartupError(f"Exception while determining if ZooKeeper is secure {_sasl_properties()}")
    module = modules[0]
    if module.name == DIGEST_LOGIN_MODULE:
        username, password = module.options.get("username"), module.options.get("password")
        if username is None or password is None:
            raise StartupError(f"the JAAS section for ZooKeeper ({location}) has {DIGEST_LOGIN_MODULE} without "
                               "username and password")
        return {"mechanism": "DIGEST-MD5", "username": username, "password": password,
                "service": system_property(SERVICE_NAME) or "zookeeper"}
    if module.name in kerberos_login.LOGIN_MODULES:
        try:  # the broker's own keys, as for a GSSAPI listener; the service is ZooKeeper's
            login = kerberos_login.configure(module.name, dict(module.options),
                                             system_property(SERVICE_NAME) or "zookeeper", ())
        except kerberos_login.KerberosLoginError as exc:
            raise StartupError(f"the JAAS section for ZooKeeper ({location}): {exc}") from None
        return {"mechanism": GSSAPI_MECHANISM, "login": login}
    raise StartupError(f"the JAAS section for ZooKeeper ({location}) names {module.name}: ZooKeeper's client logs "
                       f"in with {DIGEST_LOGIN_MODULE} or {kerberos_login.LOGIN_MODULES[0]}")


class _GssapiMechanism(puresasl.mechanisms.Mechanism):
    """A ZooKeeper login over Kerberos for kazoo, which runs SASL through pure-sasl: RFC 4752's
    client steps (protocol/sasl_gssapi.GssapiClient) on wirekafka's GSS-API binding, the one the
    inter-broker logins use (pure-sasl's own GSSAPI needs another Kerberos package). Like Java's
    ZooKeeper client it asks for a ticket to <zookeeper.sasl.client.username>/<the server's host
    name>, the address resolved to its name, and names its own principal as authorization id.
    It runs in kazoo's connection thread, where blocking on the KDC is fine."""

    name = GSSAPI_MECHANISM

    def __init__(self, sasl: Any, login: kerberos_login.KerberosLogin, **_props: Any) -> None:
        super().__init__(sasl)
        self._login = login
        self._client: GssapiClient | None = None

    def process(self, challenge: bytes | None = None) -> bytes:
        if self._client is None:
            self._client = GssapiClient(self._login.client_context(self.sasl.host), self._login.principal)
        try:
            response = self._client.evaluate(challenge or b"")
        except GssapiFailure as exc:
            raise puresasl.SASLProtocolException(str(exc)) from exc
        self.complete = self._client.complete
        return response

    def dispose(self) -> None:
        if self._client is not None:
            self._client.context.delete()
            self._client = None


# pure-sasl finds a mechanism by name; this one's name is local (ZooKeeper's SASL packets carry none)
_mechanisms: dict[str, Any] = puresasl.mechanisms.mechanisms  # its annotation lists only its own classes
_mechanisms[GSSAPI_MECHANISM] = _GssapiMechanism


# ---- TLS -------------------------------------------------------------------------------------
def _settings(config: BrokerConfig):
    """A ZooKeeper TLS key's value: the broker's config when set there, else the ZooKeeper
    client's system property, else Kafka's default (KafkaConfig's zk*ConfigOrSystemProperty)."""
    def setting(key: str) -> object:
        if key in config.overridden or (key in ZK_TLS_KEYS and key in config.values):
            return config[key]
        spec = ZK_TLS_KEYS.get(key)
        from_property = system_property(ZK_SECURE_CLIENT_PROPERTY if spec is None else spec[2])
        if from_property is None:  # the default: the broker's, or Kafka's for a key only this reads
            return config[key] if spec is None else spec[1]
        if key == "zookeeper.ssl.endpoint.identification.algorithm":  # true/false there, HTTPS/blank here
            return "HTTPS" if from_property.lower() == "true" else ""
        return from_property
    return setting


def _tls_context(setting) -> ssl.SSLContext:
    cnxn_socket = setting("zookeeper.clientCnxnSocket")
    if cnxn_socket != NETTY_SOCKET:
        raise StartupError(f"zookeeper.ssl.client.enable is true, so zookeeper.clientCnxnSocket must be {NETTY_SOCKET} "
                           f"(ZooKeeper's client has TLS with its Netty socket only), not {cnxn_socket}")
    for key in ("zookeeper.ssl.crl.enable", "zookeeper.ssl.ocsp.enable"):
        if str(setting(key)).lower() == "true":
            raise StartupError(f"{key} is true: wirekafka's ZooKeeper client does not check certificate revocation")

    def lookup(key: str) -> object:
        if key == "ssl.enabled.protocols":  # ZooKeeper enables zookeeper.ssl.protocol alone by default
            return setting("zookeeper.ssl.enabled.protocols") or setting("zookeeper.ssl.protocol")
        if key == "ssl.endpoint.identification.algorithm":
            return setting("zookeeper.ssl.endpoint.identification.algorithm")
        zk_key = _TLS_LOOKUP.get(key)
        if zk_key is None:
            return None
        value = setting(zk_key)
        if value is None and key.endswith(".type"):
            location = setting(zk_key.replace(".type", ".location"))
            return _STORE_SUFFIXES.get(Path(str(location)).suffix.lower()) if location else None
        return value

    try:
        return tls.client_context(lookup)
    except tls.TlsConfigError as exc:
        raise StartupError(f"ZooKeeper TLS: {exc}") from None


class TlsHandler(PollHandler):
    """The broker's threading handler (one poll per select), its connections made over TLS with the broker's context (kazoo's
    own TLS option takes PEM files only, and no key store)."""

    def __init__(self, context: ssl.SSLContext) -> None:
        super().__init__()
        self._context = context

    def create_connection(self, address: tuple[str, int], hostname: str | None = None,
                          timeout: float | None = None, **_kazoo_tls_options: object) -> ssl.SSLSocket:
        sock = socket.create_connection(address, timeout)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return self._context.wrap_socket(sock, server_hostname=hostname or address[0])
        except BaseException:
            sock.close()
            raise


# ---- ACLs ------------------------------------------------------------------------------------
class _PathAcls(list):
    """ACLs this client chose for a path itself (not a caller's): a parent created on the way
    (makepath) gets its own path's ACLs, not its child's."""


class AclKazooClient(KazooClient):
    """A kazoo client that creates every znode with Kafka's default ACLs for its path, unless the
    caller names others (zookeeper.set.acl=true)."""

    def create_async(self, path: str, value: bytes = b"", acl: Any = None, ephemeral: bool = False,
                     sequence: bool = False, makepath: bool = False, include_data: bool = False) -> Any:
        return super().create_async(path, value, _PathAcls(default_acls(path)) if acl is None else acl, ephemeral,
                                    sequence, makepath, include_data)

    def ensure_path_async(self, path: str, acl: Any = None) -> Any:
        return super().ensure_path_async(path, None if isinstance(acl, _PathAcls) else acl)

    def transaction(self) -> TransactionRequest:
        return _AclTransaction(self)


class _AclTransaction(TransactionRequest):
    def create(self, path: str, value: bytes = b"", acl: Any = None, ephemeral: bool = False,
               sequence: bool = False) -> None:
        super().create(path, value, default_acls(path) if acl is None else acl, ephemeral, sequence)
