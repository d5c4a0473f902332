"""Each TLS listener's current context, and Kafka's checks when its stores change at runtime.

Kafka lets an admin rotate a listener's certificates without a restart (KIP-226): the listener's
key and trust store keys (its SslFactory's reconfigurable configs, SSL_STORE_KEYS) may be set
per broker with the listener prefix, listener.name.<l>.ssl.keystore.location and so on. A change
is checked before it is stored, the way Kafka's SslFactory checks it:
- the new stores must load (with their passwords); Kafka's text for a store that does not;
- the key store's entries must keep their subject DN (unless ssl.allow.dn.changes) and at least
  their SubjectAltNames (unless ssl.allow.san.changes), entry by entry;
- a listener without a trust store cannot be given one;
- on the inter-broker listener only (Kafka's keystoreVerifiableUsingTruststore), the new stores
  must complete a TLS handshake with the old ones both ways — old server with a new client, new
  server with an old client — so that brokers mid-rotation still reach each other. The client
  side names no host (Kafka's validation engine has no endpoint identification).
A listener whose stores' settings did not change is not checked; when its per-broker settings are
stored again, store files changed in place are reloaded (Kafka reloads them too), and a reload
that fails is logged and leaves the old context.

Contexts are built in worker threads (they read files); the accept loop asks context() for the
current one per new connection, so existing connections keep theirs. Only the server side
changes: this broker's own connections to other brokers keep the start-up context."""

from __future__ import annotations

import logging
import os
import re
import ssl
from dataclasses import dataclass
from typing import Callable, Mapping

import trio

from wirekafka.jvm import java_hash, java_hashmap_order, java_objects_hash
from wirekafka.config.broker_config import BrokerConfig
from wirekafka.config.listeners import TLS_PROTOCOLS
from wirekafka.protocol.errors import ErrorCode, KafkaApiError
from wirekafka.security.tls import CertEntry, Lookup, ServerTls, TlsConfigError, client_context, handshake, server_tls

log = logging.getLogger(__name__)

#: Kafka's SslConfigs.RECONFIGURABLE_CONFIGS: the keys a listener's stores may change by.
SSL_STORE_KEYS = ("ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
                  "ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password",
                  "ssl.keystore.certificate.chain", "ssl.keystore.key", "ssl.truststore.certificates")
_LISTENER_KEY = re.compile(r"listener\.name\.([^.]*)\.(.+)")
_FILE_KEYS = ("ssl.keystore.location", "ssl.truststore.location")
_CONFIG_EXCEPTION = "org.apache.kafka.common.config.ConfigException"


def listener_store_key(name: str) -> tuple[str, str] | None:
    """(listener, base key) of a listener-prefixed store key, None for any other name."""
    match = _LISTENER_KEY.fullmatch(name)
    return (match[1], match[2]) if match and match[2] in SSL_STORE_KEYS else None


def ssl_refusal(reason: str) -> KafkaApiError:
    """Kafka's answer when its SslFactory refuses a change: the exception it wraps, as printed
    (class: message), inside DynamicBrokerConfig's "Invalid dynamic configuration"."""
    return KafkaApiError(ErrorCode.INVALID_REQUEST,
                         f"Invalid value {_CONFIG_EXCEPTION}: Validation of dynamic config update of SSLFactory "
                         f"failed: {reason} for configuration Invalid dynamic configuration")


@dataclass(frozen=True)
class ListenerContext:
    """A listener's context with what it was built from."""
    listener: str
    dynamic: tuple[str | None, ...]  # its per-broker store settings, in SSL_STORE_KEYS order
    tls: ServerTls
    client: ssl.SSLContext | None  # the client side for validation handshakes (inter-broker listener)
    mtimes: tuple[float | None, ...]  # the store files' modification times when read


class ListenerTls:
    """The TLS listeners' current contexts, from the static settings and this broker's own
    dynamic ones (own() gives them as they are now)."""

    def __init__(self, static: BrokerConfig, own: Callable[[], Mapping[str, str]]) -> None:
        self._static = static
        self._own = own
        self._current: dict[str, ListenerContext] = {}
        self._refused: dict[str, tuple[str | None, ...]] = {}  # per listener: stored settings apply_stored refused

    def listeners(self) -> list[str]:
        """The listeners served over TLS (SSL, SASL_SSL)."""
        return [lst.name for lst in self._static.listeners
                if self._static.security_protocol(lst.name) in TLS_PROTOCOLS]

    def context(self, listener: str) -> ssl.SSLContext:
        """The context a new connection on the listener gets (start() has built them all)."""
        return self._current[listener].tls.context

    async def start(self) -> None:
        """Build every TLS listener's context. Dynamic settings that no longer load (a store file
        gone) are logged and the static ones used, as Kafka logs per-broker configs it cannot apply."""
        own = dict(self._own())
        for listener in self.listeners():
            try:
                built = await trio.to_thread.run_sync(self._build, listener, own)
            except Exception as exc:  # whatever a stored setting does, the broker starts on its static ones
                log.error("listener %s: its dynamic SSL settings cannot be applied (%s); using the static ones",
                          listener, exc)
                built = await trio.to_thread.run_sync(self._build, listener, {})
            self._current[listener] = built

    async def prepare(self, own_after: Mapping[str, str]) -> list[ListenerContext]:
        """The new contexts this broker's settings own_after would give, each checked against its
        listener's current one (raises KafkaApiError with Kafka's refusal); none for listeners
        whose store settings stay the same."""
        own_now, after = dict(self._own()), dict(own_after)
        prepared = []
        for listener in self.listeners():
            if _dynamic(listener, after) == _dynamic(listener, own_now):
                continue
            old = await self._ensure(listener, own_now)
            prepared.append(await trio.to_thread.run_sync(self._build_checked, listener, after, old))
        return prepared

    def install(self, prepared: list[ListenerContext]) -> None:
        """Use the prepared contexts for new connections, each if its listener's settings are still
        the ones it was built from (a later change installs its own)."""
        own = self._own()
        for built in prepared:
            if built.dynamic == _dynamic(built.listener, own):
                self._current[built.listener] = built
                log.info("listener %s: new connections get its new SSL stores", built.listener)

    async def apply_stored(self) -> None:
        """Follow this broker's settings as stored now, changed by any writer of its config (in
        ZooKeeper mode, Kafka's brokers apply their own entity from its change notification):
        each built listener whose store settings differ from its context's is rebuilt with
        Kafka's checks. Settings the checks refuse are logged once and the listener keeps its
        context, as Kafka logs a dynamic update it cannot apply."""
        own = dict(self._own())
        for listener, old in list(self._current.items()):
            wanted = _dynamic(listener, own)
            if wanted == old.dynamic or self._refused.get(listener) == wanted:
                continue
            try:
                new = await trio.to_thread.run_sync(self._build_checked, listener, own, old)
            except KafkaApiError as exc:
                self._refused[listener] = wanted
                log.error("listener %s: its stored SSL settings were not applied: %s", listener, exc.message)
                continue
            if self._current.get(listener) is old and new.dynamic == _dynamic(listener, self._own()):
                self._current[listener] = new
                log.info("listener %s: new connections get its stored SSL stores", listener)

    async def reload_modified(self) -> None:
        """Reload the listeners whose store files changed in place (their settings stored again)."""
        own = dict(self._own())
        for listener, old in list(self._current.items()):
            if await trio.to_thread.run_sync(_mtimes, self._lookup(listener, own)) == old.mtimes:
                continue
            try:
                new = await trio.to_thread.run_sync(self._build_checked, listener, own, old)
            except KafkaApiError as exc:
                log.error("listener %s: its changed store files were not reloaded: %s", listener, exc.message)
                continue
            if self._current.get(listener) is old:
                self._current[listener] = new
                log.info("listener %s: reloaded its changed store files", listener)

    async def _ensure(self, listener: str, own: dict[str, str]) -> ListenerContext:
        """The listener's current context (built now when start() has not run, as in unit tests)."""
        if listener not in self._current:
            self._current[listener] = await trio.to_thread.run_sync(self._build, listener, own)
        return self._current[listener]

    def _lookup(self, listener: str, own: Mapping[str, str]) -> Lookup:
        """A key as the listener sees it: its per-broker store setting, else the static ones."""
        prefix = f"listener.name.{listener.lower()}."

        def lookup(key: str) -> object:
            if key in SSL_STORE_KEYS and prefix + key in own:
                return own[prefix + key]
            return self._static.listener_value(listener, key)
        return lookup

    def _build(self, listener: str, own: Mapping[str, str]) -> ListenerContext:
        """Load the listener's stores (in a worker thread); raises TlsConfigError."""
        lookup = self._lookup(listener, own)
        inter_broker = listener == self._static.inter_broker_listener
        client = client_context(lookup, check_host=False) if inter_broker else None
        return ListenerContext(listener, _dynamic(listener, own), server_tls(lookup), client, _mtimes(lookup))

    def _build_checked(self, listener: str, own: Mapping[str, str], old: ListenerContext) -> ListenerContext:
        """_build, then Kafka's checks of the new stores against the old (in a worker thread)."""
        try:
            new = self._build(listener, own)
        except TlsConfigError as exc:
            raise ssl_refusal(exc.kafka or f"{_CONFIG_EXCEPTION}: {exc}") from None
        except (ValueError, ssl.SSLError, OSError) as exc:  # a store the libraries refuse in their own words
            raise ssl_refusal(f"{_CONFIG_EXCEPTION}: {exc}") from None
        allow_dn = _true(self._static.listener_value(listener, "ssl.allow.dn.changes"))
        allow_san = _true(self._static.listener_value(listener, "ssl.allow.san.changes"))
        problem = incompatibility(old.tls.key_entries, new.tls.key_entries, allow_dn, allow_san)
        if problem is None and new.tls.truststore and not old.tls.truststore:
            problem = ("Cannot add SSL truststore to an existing listener for which no truststore was "
                       "configured.")
        if problem is not None:
            raise ssl_refusal(f"{_CONFIG_EXCEPTION}: {problem}")
        if new.client is not None and old.client is not None:
            try:
                handshake(old.tls.context, new.client)
                handshake(new.tls.context, old.client)
            except ssl.SSLError as exc:
                raise ssl_refusal(f"javax.net.ssl.SSLHandshakeException: {exc.reason or exc}") from None
        return new


def incompatibility(old: tuple[CertEntry, ...], new: tuple[CertEntry, ...], allow_dn: bool,
                    allow_san: bool) -> str | None:
    """Kafka's reason to refuse a new key store whose entries differ from the old one's, None
    when they are compatible: the same number of entries, each with the same subject DN (equal,
    or equal ignoring case as RFC 2253 text) and every old SubjectAltName still present."""
    if not allow_dn or not allow_san:
        if len(new) != len(old):
            return (f"Keystore entries do not match, existing store contains {len(old)} entries, new store "
                    f"contains {len(new)} entries")
    if not allow_dn:
        for o, n in zip(old, new):
            if o.subject != n.subject and o.subject.rfc4514_string().lower() != n.subject.rfc4514_string().lower():
                return (f"Keystore DistinguishedName does not match:  existing={{alias={o.alias}, "
                        f"DN={java_dn(o)}}}, new={{alias={n.alias}, DN={java_dn(n)}}}")
    if not allow_san:
        for o, n in zip(old, new):
            if not set(o.sans) <= set(n.sans):
                return (f"Keystore SubjectAltNames do not match:  existing={{alias={o.alias}, "
                        f"SAN={java_sans(o.sans)}}}, new={{alias={n.alias}, SAN={java_sans(n.sans)}}}")
    return None


def java_dn(entry: CertEntry) -> str:
    """A subject as Java's X500Principal prints it: the most specific RDN first, ", " between."""
    return ", ".join(rdn.rfc4514_string() for rdn in reversed(entry.subject.rdns))


def java_sans(sans: tuple[tuple[int, str], ...]) -> str:
    """SubjectAltNames as Kafka prints them: a Java HashSet of [type, value] lists made from the
    names (its table sized for them, as HashSet's copy constructor sizes it), in its order."""
    ordered = java_hashmap_order(sans, capacity=max(int(len(sans) / 0.75) + 1, 16), hash=_java_list_hash)
    return "[" + ", ".join(f"[{kind}, {value}]" for kind, value in ordered) + "]"


def _java_list_hash(name: tuple[int, str]) -> int:
    """Java's List.hashCode of [Integer type, String value]."""
    return java_objects_hash(name[0], java_hash(name[1]))


def _dynamic(listener: str, own: Mapping[str, str]) -> tuple[str | None, ...]:
    prefix = f"listener.name.{listener.lower()}."
    return tuple(own.get(prefix + key) for key in SSL_STORE_KEYS)


def _mtimes(lookup: Lookup) -> tuple[float | None, ...]:
    """The store files' modification times (None for a store given inline or unreadable)."""
    times = []
    for key in _FILE_KEYS:
        location = lookup(key)
        try:
            times.append(os.stat(str(location)).st_mtime if location else None)
        except OSError:
            times.append(None)
    return tuple(times)


def _true(value: object) -> bool:
    return str(value).strip().lower() == "true"
