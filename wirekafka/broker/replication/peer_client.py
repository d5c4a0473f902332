"""PeerClient: one broker's connection to another, speaking Kafka's own protocol.

Followers fetch from leaders (Fetch, OffsetForLeaderEpoch), and a broker may ask a peer for
ApiVersions or Metadata; all of it goes through this client.

- Requests are kafka-python's schema-driven ApiMessage objects at a chosen version (for example
  ``FetchRequest(version=12, ...)`` or ``FetchRequest[12](...)``); kafka-python encodes the
  request header (v1, or v2 with tagged fields when the body is flexible) and the body, and
  decodes the response body at the request's version. Only the 4-byte size prefix and the
  response header's correlation id check are done here.
- The response header is v1 (tagged fields) when the response body is flexible, except for
  ApiVersions, whose response header is always v0 (KIP-511).
- Fetch responses keep ``records`` as the raw bytes of the record batches, exactly as the
  leader sent them: kafka-python's schema maps the ``records`` type to plain bytes and never
  parses batches, so a follower can append them as-is.
- One TCP connection (TCP_NODELAY), opened lazily on the first send and again after any error;
  one request at a time (a trio.Lock), so a response must carry the correlation id just sent.
- Every failure of the peer or the path to it raises PeerUnavailable and drops the connection:
  connect refused or timed out, request timed out, connection reset or closed, a response that
  does not match the request (PeerProtocolError, a PeerUnavailable). The caller backs off and
  retries; the next send reconnects. ``request_timeout_s`` must exceed a Fetch's max_wait_ms.
- Cancellation from outside during a request drops the connection too (a half-read response
  would desynchronise it), then propagates.
- A response frame is read into one preallocated bytearray with recv_into: each byte is copied
  once from the kernel, then once more when the schema decoder slices ``records`` out of it.
- On a SASL listener (``security.sasl`` = the mechanism and its JAAS login options) each new
  connection first authenticates, as Kafka's inter-broker clients do: SaslHandshake v1, then
  SaslAuthenticate v2 (once for PLAIN with the `username` and `password` options; twice for SCRAM,
  whose server signature is checked; once for OAUTHBEARER with the unsecured token the
  unsecuredLogin* options make, fresh for each connection; for GSSAPI, RFC 4752's steps with the
  listener's Kerberos principal and keytab, to <sasl.kerberos.service.name>/<peer host name>). A
  refusal is a PeerUnavailable carrying the peer's message. A session the peer gave a lifetime
  (connections.max.reauth.ms, an OAUTHBEARER token's expiry) is replaced by a new connection once
  85% of it has passed, before the peer would close it, where Kafka's clients re-authenticate on
  the same connection.
- On an SSL or SASL_SSL listener (``security.tls`` = this broker's client context) the connection is TLS,
  checked as ssl.endpoint.identification.algorithm asks; SASL then runs inside it.
- Not implemented: pipelining several requests on one connection."""

from __future__ import annotations

import math
import random
import socket
import ssl
import struct
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Awaitable, Callable, TypeVar

import trio
from kafka.protocol.api_header import ResponseHeader
from kafka.protocol.api_message import ApiMessage
from kafka.protocol.metadata.api_versions import ApiVersionsResponse
from kafka.protocol.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)

from wirekafka.security.kerberos import gssapi_binding
from wirekafka.config.broker_config import BrokerConfig
from wirekafka.security.kerberos.keytab_login import KerberosLogin
from wirekafka.security.oauth.token_login import LoginFailed, SecuredLogin
from wirekafka.security.sasl import gssapi
from wirekafka.security.sasl import oauthbearer as oauth
from wirekafka.security.sasl.plain import MECHANISM as PLAIN
from wirekafka.security.sasl.plain import client_message
from wirekafka.security.sasl.scram import ScramClient, ScramFailure
from wirekafka.broker.replication.receive import receive_into
from wirekafka.protocol.schema_meta import compiled_struct, request_version, response_class_of

if TYPE_CHECKING:
    from wirekafka.broker.metadata.cluster_metadata import BrokerInfo

_SIZE = struct.Struct(">i")
DEFAULT_MAX_RESPONSE_BYTES = 128 * 1024 * 1024
_API_VERSIONS_KEY = ApiVersionsResponse.API_KEY
T = TypeVar("T")
R = TypeVar("R", bound="ApiMessage")  # a string: the class itself is falsy (its metaclass has __len__)


@dataclass(frozen=True)
class PeerSasl:
    """The inter-broker SASL login: the mechanism and its JAAS login module's options; for
    OAUTHBEARER with Kafka's secured login, where its token comes from (oauth_login.py); for
    GSSAPI, the listener's Kerberos identity (kerberos_login.py)."""

    mechanism: str
    options: dict[str, str] = field(default_factory=dict)
    secured: SecuredLogin | None = None
    kerberos: KerberosLogin | None = None

    @property
    def username(self) -> str:
        return self.options.get("username", "")

    async def first_token(self) -> tuple[bytes, ScramClient | None]:
        """The first SaslAuthenticate bytes, and the SCRAM exchange they begin (if SCRAM)."""
        if self.mechanism == oauth.MECHANISM and self.secured is not None:
            try:
                token = await self.secured.token()
            except LoginFailed as exc:
                raise PeerUnavailable(f"the OAuth login got no token: {exc}") from None
            return oauth.first_message(token, oauth.login_extensions(self.options)), None
        if self.mechanism == oauth.MECHANISM:
            token = oauth.login_token(self.options, time.time())
            if token is None:
                raise PeerUnavailable("the OAUTHBEARER login module has no unsecuredLogin options: no token to send")
            return oauth.first_message(token, oauth.login_extensions(self.options)), None
        if self.mechanism == PLAIN:
            return client_message(self.username, self.options.get("password", "")), None
        scram = ScramClient(self.mechanism, self.username, self.options.get("password", ""))
        return scram.first_message(), scram


@dataclass(frozen=True)
class PeerSecurity:
    """How this broker connects to the others, as its inter-broker listener asks: TLS (this
    broker's client context) and SASL. Built once at start-up and shared by every peer client:
    building the context reads the key stores from disk."""

    sasl: PeerSasl | None = None
    tls: ssl.SSLContext | None = None

    @classmethod
    def of(cls, config: BrokerConfig) -> "PeerSecurity":
        login = config.inter_broker_sasl()
        listener = config.inter_broker_listener
        secured = config.oauth_login(listener) if login and login[0] == oauth.MECHANISM else None
        kerberos = config.kerberos_login(listener) if login and login[0] == gssapi.MECHANISM else None
        return cls(PeerSasl(*login, secured=SecuredLogin(secured) if secured is not None else None, kerberos=kerberos)
                   if login is not None else None,
                   config.tls_context(listener, server=False))


class PeerUnavailable(Exception):
    """The peer cannot be reached or did not answer properly; back off and retry."""


class PeerProtocolError(PeerUnavailable):
    """The peer answered something that is not the response to our request (wrong correlation id,
    bad frame size, undecodable body). The connection is dropped; a retry reconnects."""


def answer_of(answer: ApiMessage | None, response_type: type[R]) -> R:
    """A peer's answer as the response class its request implies (send decodes it with that
    class); PeerProtocolError for anything else."""
    if not isinstance(answer, response_type):
        raise PeerProtocolError(f"expected a {response_type.__name__}, got {type(answer).__name__}")
    return answer


def _response_header_decoder(flexible: bool) -> Callable[..., tuple[ResponseHeader, int]]:
    # ResponseHeader v0: correlation id; v1 adds tagged fields. ApiHeader.decode wants a file-like
    # object; the struct's compiled decoder reads straight from the frame's memoryview instead.
    version = 1 if flexible else 0
    return compiled_struct(ResponseHeader).compiled_decode_from(version, compact=False, tagged=flexible,
                                                       data_class=ResponseHeader)


# Kafka clients' connections.max.idle.ms default (9 min): under the brokers' 10 min, so a client
# lets go of an idle connection before the broker closes it.
CLIENT_IDLE_S = 540.0


@dataclass(frozen=True)
class SetupTimeout:
    """Kafka's connection setup timeout (socket.connection.setup.timeout.ms): the first attempt's,
    doubled after each failed attempt up to socket.connection.setup.timeout.max.ms, with 20%
    jitter either way, so that brokers reconnecting to a dead peer do not all retry in step."""

    initial_s: float
    max_s: float

    def after(self, failures: int) -> float:
        """The timeout of the attempt that follows `failures` consecutive failed ones."""
        if self.max_s <= self.initial_s:
            return self.initial_s
        exponent = min(failures, math.log(self.max_s / self.initial_s, 2))
        return min(self.max_s, self.initial_s * 2 ** exponent * random.uniform(0.8, 1.2))

    @classmethod
    def of(cls, config: BrokerConfig) -> "SetupTimeout":
        return cls(config.int("socket.connection.setup.timeout.ms") / 1000,
                   config.int("socket.connection.setup.timeout.max.ms") / 1000)


class PeerClient:
    def __init__(self, host: str, port: int, client_id: str, connect_timeout: float | SetupTimeout,
                 request_timeout_s: float, *, max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
                 receive_buffer: int | None = None, idle_s: float = CLIENT_IDLE_S,
                 security: PeerSecurity | None = None) -> None:
        """connect_timeout: seconds, or Kafka's growing setup timeout. receive_buffer: SO_RCVBUF in
        bytes, None or -1 for the OS's (autotuned). A connection unused
        for idle_s is replaced before the next request rather than risk one the peer closed
        as idle (connections.max.idle.ms)."""
        self.host = host
        self.port = port
        self.client_id = client_id
        self.setup_timeout = (connect_timeout if isinstance(connect_timeout, SetupTimeout)
                              else SetupTimeout(connect_timeout, connect_timeout))
        self._failed_connects = 0  # consecutive failed attempts: they lengthen the next one's timeout
        self.request_timeout_s = request_timeout_s
        self.max_response_bytes = max_response_bytes
        self.receive_buffer = receive_buffer
        self.idle_s = idle_s
        self.security = security or PeerSecurity()
        self._last_used = 0.0
        self._session_renew_at: float | None = None  # trio time to replace an authenticated session
        self._stream: trio.abc.Stream | None = None  # the TCP stream, or TLS over it
        self._socket: trio.socket.SocketType | None = None
        self._lock = trio.Lock()
        self._correlation_id = 0
        self._closed = False

    def __repr__(self) -> str:
        return f"PeerClient({self.host}:{self.port}, client_id={self.client_id!r})"

    @property
    def connected(self) -> bool:
        return self._stream is not None

    async def __aenter__(self) -> "PeerClient":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection for good; a send in progress fails, later sends raise
        trio.ClosedResourceError."""
        self._closed = True
        self._drop()
        await trio.lowlevel.checkpoint()

    async def ready(self) -> None:
        """Open (and authenticate) the connection now if it is not open: Kafka's awaitReady, which
        a caller bounds on its own (a ControlledShutdown by controller.socket.timeout.ms).

        Raises PeerUnavailable when the peer cannot be reached or refuses the login."""
        async with self._lock:
            await self._ready()

    async def send(self, request: ApiMessage, timeout_s: float | None = None) -> ApiMessage | None:
        """Send one request and return its decoded response (None for a request that expects no
        response, such as Produce with acks=0); `timeout_s` replaces request_timeout_s for it.

        Raises PeerUnavailable (or its PeerProtocolError) when the peer fails; ValueError for a
        request without a version; trio.ClosedResourceError after aclose()."""
        request_version(request)  # a request without one fails before it takes the connection
        async with self._lock:
            stream = await self._ready()
            return await self._dropping_on_failure(self._exchange(stream, request, timeout_s))

    async def _ready(self) -> trio.abc.Stream:
        """The open, authenticated connection (the lock is held)."""
        if self._closed:
            raise trio.ClosedResourceError(f"{self!r} is closed")
        stream, fresh = await self._dropping_on_failure(self._connect())
        if fresh and self.security.sasl is not None:
            await self._dropping_on_failure(self._authenticate(stream, self.security.sasl))
        return stream

    async def _dropping_on_failure(self, step: Awaitable[T]) -> T:
        """`step`'s result; on any failure the connection is dropped (its state is unknown), and
        an I/O error becomes PeerUnavailable."""
        try:
            return await step
        except (OSError, trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            self._drop()
            if self._closed:
                raise trio.ClosedResourceError(f"{self!r} was closed during the request") from exc
            raise PeerUnavailable(f"{self!r}: connection failed: {exc!r}") from exc
        except BaseException:  # PeerUnavailable, cancellation, anything
            self._drop()
            raise

    async def _exchange(self, stream: trio.abc.Stream, request: ApiMessage,
                        timeout_s: float | None = None) -> ApiMessage | None:
        """One request and its response on stream within timeout_s (default request_timeout_s;
        the lock is held)."""
        timeout_s = self.request_timeout_s if timeout_s is None else timeout_s
        self._correlation_id = (self._correlation_id + 1) & 0x7FFFFFFF
        correlation_id = self._correlation_id
        request.with_header(correlation_id=correlation_id, client_id=self.client_id)
        frame = request.encode(header=True, framed=True)
        response_class = response_class_of(request) if request.expect_response() else None
        if request.expect_response() and response_class is None:
            raise ValueError(f"no response class for {type(request).__name__}")
        version = request_version(request)
        body: bytearray | None = None
        with trio.move_on_after(timeout_s) as scope:
            await stream.send_all(frame)
            if response_class is None:
                return None
            body = await self._receive_frame(stream)
        if scope.cancelled_caught or body is None or response_class is None:
            raise PeerUnavailable(f"{self!r}: no response to {type(request).__name__} "
                                  f"v{version} within {timeout_s}s")
        return self._decode(response_class, version, correlation_id, body)

    async def _authenticate(self, stream: trio.abc.Stream, login: PeerSasl) -> None:
        """SASL on a new connection; PeerUnavailable if the peer refuses it."""
        mechanism = login.mechanism
        handshake = answer_of(await self._exchange(stream, SaslHandshakeRequest(version=1, mechanism=mechanism)),
                              SaslHandshakeResponse)
        if handshake.error_code:
            raise PeerUnavailable(f"{self!r}: SASL mechanism {mechanism} refused (error {handshake.error_code}); "
                                  f"the peer enables {handshake.mechanisms}")
        if login.kerberos is not None:
            await self._authenticate_gssapi(stream, login.kerberos)
            return
        token, scram = await login.first_token()
        while True:
            answer = await self._sasl_step(stream, token, login.username, mechanism)
            challenge = bytes(answer.auth_bytes)
            if mechanism == oauth.MECHANISM and challenge:  # the token's refusal: acknowledge it, hear why
                if token == oauth.CONTROL_A:
                    raise PeerUnavailable(f"{self!r}: unexpected OAUTHBEARER answer {challenge!r}")
                token = oauth.CONTROL_A
                continue
            if scram is not None:
                try:
                    if token.startswith(b"n,"):  # the server's first message came back
                        token = scram.final_message(challenge)
                        continue
                    scram.verify(challenge)
                except ScramFailure as exc:
                    raise PeerUnavailable(f"{self!r}: {exc}") from exc
            self._renew_session_after(answer.session_lifetime_ms)
            return

    async def _authenticate_gssapi(self, stream: trio.abc.Stream, kerberos: KerberosLogin) -> None:
        """RFC 4752 as Kafka's inter-broker client runs it (sasl_gssapi.GssapiClient). The GSS-API
        calls resolve names and talk to the KDC, so they run in worker threads."""
        if not kerberos.initiator:
            raise PeerUnavailable(f"{self!r}: the GSSAPI login module has isInitiator=false: no ticket to log in "
                                  "to other brokers with")
        try:
            context = await trio.to_thread.run_sync(kerberos.client_context, self.host)
            client = gssapi.GssapiClient(context, kerberos.principal)
            try:
                token = await trio.to_thread.run_sync(client.evaluate, b"")
                while True:
                    answer = await self._sasl_step(stream, token, kerberos.principal, gssapi.MECHANISM)
                    if client.complete:
                        self._renew_session_after(answer.session_lifetime_ms)
                        return
                    token = await trio.to_thread.run_sync(client.evaluate, bytes(answer.auth_bytes))
            finally:
                context.delete()
        except (gssapi_binding.GssError, gssapi.GssapiFailure) as exc:
            raise PeerUnavailable(f"{self!r}: GSSAPI login as {kerberos.principal} failed: {exc}") from exc

    async def _sasl_step(self, stream: trio.abc.Stream, token: bytes, identity: str,
                         mechanism: str) -> SaslAuthenticateResponse:
        """One SaslAuthenticate; PeerUnavailable when the peer refuses the login."""
        answer = answer_of(await self._exchange(stream, SaslAuthenticateRequest(version=2, auth_bytes=token)),
                           SaslAuthenticateResponse)
        if answer.error_code:
            raise PeerUnavailable(f"{self!r}: SASL authentication as {identity!r} with {mechanism} failed: "
                                  f"{answer.error_message}")
        return answer

    def _renew_session_after(self, lifetime_ms: int) -> None:
        """A session the peer gave a lifetime is replaced once 85% of it has passed."""
        self._session_renew_at = trio.current_time() + 0.85 * lifetime_ms / 1000 if lifetime_ms > 0 else None

    async def _connect(self) -> tuple[trio.abc.Stream, bool]:
        """The connection, and whether it was opened just now."""
        now = trio.current_time()
        if self._stream is not None and (now - self._last_used > self.idle_s
                                         or (self._session_renew_at is not None and now > self._session_renew_at)):
            self._drop()
        self._last_used = now
        if self._stream is not None:
            return self._stream, False
        timeout_s = self.setup_timeout.after(self._failed_connects)
        self._failed_connects += 1
        try:
            with trio.move_on_after(timeout_s):
                tcp = await trio.open_tcp_stream(self.host, self.port)
                tcp.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, True)
                if self.receive_buffer is not None and self.receive_buffer >= 0:
                    tcp.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.receive_buffer)
                self._socket = tcp.socket
                stream: trio.abc.Stream = tcp
                if self.security.tls is not None:
                    stream = trio.SSLStream(tcp, self.security.tls, server_hostname=self.host)
                    self._stream = stream
                    await stream.do_handshake()
                self._stream = stream
                self._failed_connects = 0
                return stream, True
        except (trio.BrokenResourceError, ssl.SSLError) as exc:
            self._drop()
            raise PeerUnavailable(f"{self!r}: TLS handshake failed: {exc!r}") from exc
        except OSError as exc:
            self._drop()
            _forget_frames(exc)
            raise PeerUnavailable(f"{self!r}: cannot connect: {exc!r}") from exc
        self._drop()
        raise PeerUnavailable(f"{self!r}: no connection within {timeout_s:.1f}s")

    def _drop(self) -> None:
        """Close the connection now (synchronously, so it also works while being cancelled)."""
        sock, self._socket, self._stream = self._socket, None, None
        self._session_renew_at = None
        if sock is not None:
            sock.close()

    async def _receive_frame(self, stream: trio.abc.Stream) -> bytearray:
        size_buf = bytearray(4)
        await self._receive_into(stream, memoryview(size_buf))
        (size,) = _SIZE.unpack(size_buf)
        if size < 4 or size > self.max_response_bytes:
            raise PeerProtocolError(f"{self!r}: response frame of {size} bytes "
                                    f"(allowed 4..{self.max_response_bytes})")
        body = bytearray(size)
        await self._receive_into(stream, memoryview(body))
        return body

    async def _receive_into(self, stream: trio.abc.Stream, view: memoryview) -> None:
        got, want = 0, len(view)
        while got < want:
            n = await receive_into(stream, view[got:])
            if n == 0:
                raise PeerUnavailable(f"{self!r}: connection closed by the peer "
                                      f"({got} of {want} bytes received)")
            got += n

    def _decode(self, response_class: type[ApiMessage], version: int, correlation_id: int,
                body: bytearray) -> ApiMessage:
        view = memoryview(body)
        flexible_header = response_class.API_KEY != _API_VERSIONS_KEY and response_class.flexible_version_q(version)
        try:
            header, pos = _response_header_decoder(flexible_header)(view, 0)
        except Exception as exc:
            raise PeerProtocolError(f"{self!r}: bad response header: {exc!r}") from exc
        if header.correlation_id != correlation_id:
            raise PeerProtocolError(f"{self!r}: response correlation id {header.correlation_id}, "
                                    f"expected {correlation_id}")
        try:
            return response_class.decode(view[pos:], version=version)
        except Exception as exc:  # the generated decoder raises assorted errors on bad bytes
            raise PeerProtocolError(f"{self!r}: cannot decode {response_class.__name__} "
                                    f"v{version} ({len(body)} bytes): {exc!r}") from exc


class PeerPool:
    """One kept PeerClient per peer broker, for requests a broker sends its peers on its own
    account (transaction markers to leaders, AlterPartition to the controller): `lookup` finds a
    live broker's inter-broker endpoint by id, and a client is replaced when that endpoint moved
    (the broker restarted on another port)."""

    def __init__(self, lookup: Callable[[int], BrokerInfo | None], config: BrokerConfig, purpose: str,
                 security: PeerSecurity, request_timeout_key: str = "request.timeout.ms") -> None:
        """request_timeout_key: the config key bounding each request (Kafka's channel to the
        controller uses controller.socket.timeout.ms)."""
        self.lookup = lookup
        self.config = config
        self.request_timeout_key = request_timeout_key
        self.client_id = f"broker-{config.node_id}-{purpose}"
        self.security = security
        self._clients: dict[int, PeerClient] = {}

    def client(self, node: int) -> PeerClient | None:
        """The client for broker `node`; None when it is not a live broker on the inter-broker listener."""
        broker = self.lookup(node)
        if broker is None:
            return None
        client = self._clients.get(node)
        if client is None or (client.host, client.port) != (broker.host, broker.port):
            client = PeerClient(broker.host, broker.port, self.client_id, SetupTimeout.of(self.config),
                                self.config.int(self.request_timeout_key) / 1000, security=self.security)
            self._clients[node] = client
        return client


def _forget_frames(exc: BaseException) -> None:
    """Drop the tracebacks of a failed connect's errors (trio's open_tcp_stream raises one error
    from a group of each attempt's): an attempt's error keeps its frame through its traceback, and
    the frame keeps the list of errors, a reference cycle left to the cyclic collector at every
    refused connect (a follower retrying a dead leader: a full collection that finds garbage is
    not followed by a freeze, see server/gc_policy.py). The errors' messages stay."""
    seen: set[int] = set()
    pending = [exc]
    while pending:
        e = pending.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        e.__traceback__ = None
        pending += [x for x in (e.__cause__, e.__context__) if x is not None]
        if isinstance(e, BaseExceptionGroup):
            pending += e.exceptions
