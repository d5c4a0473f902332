"""Sends fuzz frames to a live broker and classifies what each one got back.

Frames go out pipelined, a window at a time, each window followed by a sentinel ApiVersions
request: responses leave in request order, so once the sentinel is answered every frame before it
was either answered or (a Produce with acks=0) deliberately left unanswered. When the broker
closes the connection, the first frame still waiting is the one it closed on; the frames behind it
were never read, and go out again on the next connection (each frame counts once, when the broker
has processed it). A frame whose size prefix lies is sent last on its connection.

Per frame: answered (a response with its correlation id that kafka-python decodes), silent
(allowed only for acks=0 Produce), closed (explained when the broker's codec refuses the frame or
Kafka closes for that request on that listener state, otherwise unexplained), hang (no progress
within the bound)."""

from __future__ import annotations

import socket
import struct
import time
from collections import Counter, deque
from collections.abc import Iterator
from dataclasses import dataclass, field

from wirekafka.protocol import served_versions

from faults.fuzz.frame_builder import Targets, encode_body, encode_header
from faults.fuzz.mutators import FuzzFrame

API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 17, 36
SASL_APIS = (API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE)
ACL_APIS = (29, 30, 31)  # DescribeAcls, CreateAcls, DeleteAcls
SENTINEL = struct.pack(">hhih", API_VERSIONS, 0, -0x5EED, 4) + b"fuzz"
SENTINEL_CORR = -0x5EED
MAX_REFUSED_LOGINS = 5  # in a row: the listener is unusable, the run stops
MAX_FINDINGS = 20  # examples kept per kind of finding; all are counted


@dataclass(frozen=True, slots=True)
class Listener:
    """Where frames go: a port, and whether its connections authenticate first."""
    name: str  # "plaintext", "sasl-preauth", "sasl-authenticated"
    port: int
    authenticate: bool = False
    sasl: bool = False


@dataclass
class Stats:
    """What the frames got back, by listener state."""
    frames: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)  # "answered", "silent", "closed", "hang", ...
    closes: Counter[str] = field(default_factory=Counter)  # by explanation
    per_listener: Counter[str] = field(default_factory=Counter)
    apis: Counter[tuple[int, int]] = field(default_factory=Counter)
    findings: dict[str, list[str]] = field(default_factory=dict)  # examples by kind
    finding_counts: Counter[str] = field(default_factory=Counter)  # by kind, API and mutation
    hangs: int = 0
    unexplained: int = 0
    connections: int = 0

    def finding(self, kind: str, frame: FuzzFrame | None, text: str) -> None:
        examples = self.findings.setdefault(kind, [])
        if len(examples) < MAX_FINDINGS:
            examples.append(text)
        where = f"api {frame.api_key} {frame.mutation.rsplit(':', 1)[0]}" if frame is not None else ""
        self.finding_counts[f"{kind}: {where}".rstrip(": ")] += 1

    def count(self, listener: Listener, frame: FuzzFrame, outcome: str) -> None:
        self.frames += 1
        self.outcomes[outcome] += 1
        self.per_listener[listener.name] += 1
        self.apis[(frame.api_key, frame.version)] += 1


def _describe(frame: FuzzFrame) -> str:
    return f"api {frame.api_key} v{frame.version} {frame.mutation} {frame.path}".rstrip()


def _expected_corr(frame: FuzzFrame) -> int | None:
    if len(frame.payload) < 8:
        return None
    return struct.unpack_from(">i", frame.payload, 4)[0]


class Connection:
    """One TCP connection with a receive buffer of whole response frames."""

    def __init__(self, port: int, bound_s: float) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=bound_s)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()

    def send(self, data: bytes) -> bool:
        try:
            self.sock.sendall(data)
            return True
        except OSError:  # the broker closed on an earlier frame: the read side will tell
            return False

    def read_frame(self) -> bytes | None:
        """One response payload; None when the broker closed. socket.timeout when none came."""
        while True:
            if len(self.buf) >= 4:
                size = struct.unpack_from(">i", self.buf, 0)[0]
                if len(self.buf) >= 4 + size:
                    payload = bytes(self.buf[4:4 + size])
                    del self.buf[:4 + size]
                    return payload
            try:
                data = self.sock.recv(1 << 16)
            except (ConnectionResetError, BrokenPipeError):
                return None
            if not data:
                return None
            self.buf += data

    def close(self) -> None:
        self.sock.close()


class LoginRefused(RuntimeError):
    """A valid PLAIN login was closed or refused."""


def _login(conn: Connection, targets: Targets) -> None:
    """SaslHandshake v1 (PLAIN) and SaslAuthenticate v2, as a client logs in."""
    for key, version in ((SASL_HANDSHAKE, 1), (SASL_AUTHENTICATE, 2)):
        flexible = served_versions.request_header_is_flexible(key, version)
        body = encode_body(served_versions.request_class(key), version, targets).body
        payload = encode_header(key, version, 1, "fuzz-login", flexible) + body
        conn.send(struct.pack(">i", len(payload)) + payload)
        answer = conn.read_frame()
        if answer is None:
            raise LoginRefused(f"the broker closed the connection during login (api {key})")
        response = served_versions.response_class(key).decode(answer[4 + flexible:], version=version)
        if response.error_code != 0:
            raise LoginRefused(f"login failed at api {key}: error {response.error_code}")


def _decodes(frame: FuzzFrame, answer: bytes) -> bool:
    """Whether the response decodes at the version the frame's header carries (a mutation may
    have changed it)."""
    if len(frame.payload) < 4:
        return False
    key, version = struct.unpack_from(">hh", frame.payload, 0)
    if key not in served_versions.RESPONSE_CLASSES:
        return False
    if key == API_VERSIONS and not served_versions.is_served(key, version):
        version = 0
    flexible = key != API_VERSIONS and served_versions.request_header_is_flexible(key, version)
    try:
        served_versions.response_class(key).decode(answer[4 + flexible:], version=version)
        return True
    except Exception:
        return False


class Driver:
    """Runs frames against one listener, a connection at a time."""

    def __init__(self, listener: Listener, targets: Targets, stats: Stats, bound_s: float = 5.0,
                 window: int = 8, per_connection: int = 64, lie_wait_s: float = 0.05) -> None:
        self.listener = listener
        self.targets = targets
        self.stats = stats
        self.bound_s = bound_s
        self.window = window
        self.per_connection = per_connection
        self.lie_wait_s = lie_wait_s
        self.pending: deque[FuzzFrame] = deque()  # not yet processed by the broker
        self.refused_logins = 0  # in a row

    def run(self, frames: Iterator[FuzzFrame], count: int) -> None:
        """Until count frames are processed (the pending ones included)."""
        target = self.stats.frames + count
        while self.stats.frames < target:
            need = min(self.per_connection, target - self.stats.frames) - len(self.pending)
            for _ in range(max(0, need)):
                self.pending.append(next(frames))
            self._connection()

    def _connection(self) -> None:
        conn = Connection(self.listener.port, self.bound_s)
        self.stats.connections += 1
        try:
            if self.listener.authenticate:
                try:
                    _login(conn, self.targets)
                except LoginRefused as exc:  # a finding; the frames wait for the next connection
                    self._login_refused(conn, exc)
                    return
            self.refused_logins = 0
            self._serve(conn)
        finally:
            conn.close()

    def _login_refused(self, conn: Connection, exc: LoginRefused) -> None:
        self.refused_logins += 1
        self.stats.outcomes["login-refused"] += 1
        port = conn.sock.getsockname()[1]
        self.stats.finding("login refused", None, f"{time.strftime('%H:%M:%S')} from 127.0.0.1:{port}: {exc}")
        if self.refused_logins >= MAX_REFUSED_LOGINS:
            raise exc

    def _serve(self, conn: Connection) -> None:
        handshake_seen = False
        while self.pending:
            if self.pending[0].announced_size is not None:
                self._size_lie(conn, self.pending.popleft())
                return
            window: list[FuzzFrame] = []
            while self.pending and len(window) < self.window and self.pending[0].announced_size is None:
                window.append(self.pending.popleft())
            conn.send(b"".join(f.prefix() + f.payload for f in window) + struct.pack(">i", len(SENTINEL)) + SENTINEL)
            state = self._drain(conn, window, handshake_seen)
            if state is None:
                return
            handshake_seen = state

    def _drain(self, conn: Connection, window: list[FuzzFrame], handshake_seen: bool) -> bool | None:
        """Read the window's answers. Returns whether a SaslHandshake was answered so far, or
        None when the connection is over (closed or hung)."""
        waiting = deque(window)
        while True:
            try:
                answer = conn.read_frame()
            except socket.timeout:
                self._hang(waiting)
                return None
            if answer is None:
                self._closed(waiting, handshake_seen)
                return None
            corr = struct.unpack_from(">i", answer, 0)[0]
            if corr == SENTINEL_CORR and not any(_expected_corr(f) == SENTINEL_CORR for f in waiting):
                for frame in waiting:
                    self._unanswered(frame)
                return handshake_seen
            while waiting and _expected_corr(waiting[0]) != corr:
                self._unanswered(waiting.popleft())
            if not waiting:
                self.stats.finding("stray response", None, f"{self.listener.name}: a response with unknown "
                                   f"correlation id {corr}")
                self.stats.outcomes["stray-response"] += 1
                continue
            frame = waiting.popleft()
            if _decodes(frame, answer):
                self.stats.count(self.listener, frame, "answered")
            else:
                self.stats.count(self.listener, frame, "undecodable-response")
                self.stats.finding("undecodable response", frame,
                                   f"{self.listener.name}: undecodable response to {_describe(frame)}: "
                                   f"{frame.payload.hex()[:600]} -> {answer.hex()[:400]}")
            handshake_seen = handshake_seen or frame.api_key == SASL_HANDSHAKE

    def _unanswered(self, frame: FuzzFrame) -> None:
        if frame.silent_ok:
            self.stats.count(self.listener, frame, "silent")
            return
        self.stats.count(self.listener, frame, "unanswered")
        self.stats.finding("unanswered", frame, f"{self.listener.name}: no answer (connection kept) to "
                           f"{_describe(frame)}: {frame.payload.hex()[:600]}")

    def _hang(self, waiting: deque[FuzzFrame]) -> None:
        frame = waiting.popleft() if waiting else None
        self.stats.hangs += 1
        if frame is not None:
            self.stats.count(self.listener, frame, "hang")
            self.stats.finding("hang", frame, f"{self.listener.name}: HANG ({self.bound_s:g} s) on "
                               f"{_describe(frame)}: {frame.payload.hex()[:600]}")
        self.pending.extendleft(reversed(waiting))

    def _closed(self, waiting: deque[FuzzFrame], handshake_seen: bool) -> None:
        """The broker closed: the first waiting frame is the one it closed on (frames with
        acks=0 before it went unanswered); the rest go out again."""
        while len(waiting) > 1 and waiting[0].silent_ok:
            self.stats.count(self.listener, waiting.popleft(), "silent")
        if not waiting:  # the sentinel itself was refused: a SASL exchange left mid-way
            self.stats.closes["sentinel after a SASL state change"] += 1
            return
        frame = waiting.popleft()
        self.pending.extendleft(reversed(waiting))
        cause = self._explain(frame, handshake_seen)
        self.stats.count(self.listener, frame, "closed")
        self.stats.closes[cause] += 1
        if cause.startswith("UNEXPLAINED"):
            self.stats.unexplained += 1
            self.stats.finding("unexplained close", frame, f"{self.listener.name}: {_describe(frame)}")

    def _explain(self, frame: FuzzFrame, handshake_seen: bool) -> str:
        if not frame.codec_ok:
            return f"malformed ({frame.mutation.split(':')[0]}): {frame.reason.split(':')[0]}"
        if frame.silent_ok:
            return "produce acks=0 refused (Kafka closes to signal it)"
        lst = self.listener
        if lst.sasl and not lst.authenticate:
            if frame.api_key not in SASL_APIS:
                return "pre-authentication request other than ApiVersions/SaslHandshake/SaslAuthenticate"
            return "pre-authentication SASL exchange refused"
        if frame.api_key in ACL_APIS:
            return "ACL request naming an UNKNOWN enum (Kafka cannot parse it and closes)"
        if lst.sasl and (handshake_seen or frame.api_key in (SASL_HANDSHAKE, SASL_AUTHENTICATE)):
            return "re-authentication exchange refused"
        return "UNEXPLAINED close of a frame the codec accepts"

    def _size_lie(self, conn: Connection, frame: FuzzFrame) -> None:
        """Sent alone, last: answered, closed, or (when more bytes were announced than sent,
        or the rest of a short frame reads as an unfinished one) a broker waiting for bytes."""
        announced = frame.announced_size or 0
        waits = 0 < announced <= 100 * 1024 * 1024 and announced != len(frame.payload)
        conn.sock.settimeout(self.lie_wait_s if waits else self.bound_s)
        conn.send(frame.prefix() + frame.payload)
        try:
            answer = conn.read_frame()
        except socket.timeout:
            if waits:
                self.stats.count(self.listener, frame, "awaiting-announced-bytes")
            else:
                self.stats.hangs += 1
                self.stats.count(self.listener, frame, "hang")
                self.stats.finding("hang", frame, f"{self.listener.name}: HANG on {_describe(frame)} "
                                   f"(size {announced})")
            return
        if answer is None:
            self.stats.count(self.listener, frame, "closed")
            self.stats.closes[f"size prefix lie ({frame.mutation})"] += 1
        else:
            self.stats.count(self.listener, frame, "answered")
