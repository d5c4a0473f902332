"""ZkSession: the broker's one ZooKeeper connection (kazoo), and the one place its threads meet trio.

kazoo runs its own threads: its blocking calls run here in trio worker threads (`call`), and
everything kazoo calls back — one-shot watches set by reads, and session state changes — only
marks a `ChangeFeed` on the loop through the trio token (`run_sync_soon`, safe from any thread;
`_post` is the one place). A burst of watch events (a failover changes thousands of states, each
firing a watch) reaches the loop as one hand-off: `_post` queues the call and wakes the loop only
when nothing was queued yet, since every wake-up is a system call on kazoo's thread, which must
take the GIL back from the loop afterwards. The metadata's feed (the watch of its reads through `cache`,
`wait_changed`) wakes the reconcile loop, and the controller's state writer through a feed of
its own (`metadata_feed()`); another consumer (the ACL store's change notifications) gets a feed of its own (`feed()`),
so its watches neither wake the metadata's full re-read nor are consumed by it. A session change
marks every feed. A consumer never reacts to a single watch: it re-reads what it follows, so a
missed or coalesced notification cannot leave it wrong.

Session loss matters for fencing: when ZooKeeper expires the session, its ephemeral znodes
(/brokers/ids/N, /controller) are gone and another broker may lead our partitions; the loop sees
`session_id()` change and re-registers. A chroot in zookeeper.connect is created if it is
missing, as Kafka does. How the client logs in, over what, and which ACLs its znodes get is
security.py's."""

from __future__ import annotations

import functools
import logging
import threading
from typing import Any, Callable

import trio
from kazoo.client import KazooState
from kazoo.exceptions import AuthFailedError

from wirekafka.broker.metadata.zk.cache import ZnodeCache
from wirekafka.broker.metadata.zk.security import ZkClientSecurity, client_security
from wirekafka.config.broker_config import BrokerConfig
from wirekafka.startup_errors import StartupError

log = logging.getLogger(__name__)


def split_connect(connect: str) -> tuple[str, str]:
    """zookeeper.connect -> (hosts, chroot or "")."""
    slash = connect.find("/")
    if slash < 0:
        return connect, ""
    return connect[:slash], connect[slash:].rstrip("/")


def session_for(config: BrokerConfig) -> ZkSession:
    """The session a broker configured with `config` opens: zookeeper.connect, its session and
    connection timeouts (the connection's defaulting to the session's, as Kafka's does), and how
    its client logs in."""
    session_timeout_ms = config.int("zookeeper.session.timeout.ms")
    connection_timeout_ms = (config.int("zookeeper.connection.timeout.ms")
                             if config["zookeeper.connection.timeout.ms"] is not None else session_timeout_ms)
    return ZkSession(str(config["zookeeper.connect"]), session_timeout_ms, connection_timeout_ms,
                     client_security(config))


class ZkSession:
    def __init__(self, connect: str, session_timeout_ms: int, connection_timeout_ms: int,
                 security: ZkClientSecurity = ZkClientSecurity()) -> None:
        self.hosts, self.chroot = split_connect(connect)
        self.session_timeout_ms = session_timeout_ms
        self.connection_timeout_s = connection_timeout_ms / 1000
        self._security = security
        self.client = security.client(self.hosts + self.chroot, session_timeout_ms / 1000)
        self._token: trio.lowlevel.TrioToken | None = None
        self._posts_lock = threading.Lock()
        self._posts: list[Callable[[], None]] = []  # kazoo's calls for the loop, in order
        self._metadata_feed = ChangeFeed(self)
        self._feeds = [self._metadata_feed]
        self._metadata_feeds = [self._metadata_feed]  # every feed the metadata's watches mark
        # the metadata's watched reads, kept until their watch fires (zk_cache.py)
        self.cache = ZnodeCache(self.client, self._metadata_watcher)
        self.connected = False
        self._closing = False
        # Kafka's SessionExpireListener ZooKeeperExpiresPerSec and ZooKeeperDisconnectsPerSec
        self.expires = 0
        self.disconnects = 0

    async def start(self) -> None:
        """Connect (creating the chroot first if needed); raise if ZooKeeper does not answer
        within zookeeper.connection.timeout.ms, StartupError if it refuses the broker's login."""
        self._token = trio.lowlevel.current_trio_token()
        try:
            if self.chroot:
                await trio.to_thread.run_sync(self._ensure_chroot)
            self.client.add_listener(self._on_state)
            await trio.to_thread.run_sync(functools.partial(_start, self.client, self.connection_timeout_s))
            # the SASL login runs after the connection is up: a refused one fails the first request
            await trio.to_thread.run_sync(self.client.exists, "/")
        except AuthFailedError:
            raise StartupError("ZooKeeper refused the broker's login (the JAAS file's ZooKeeper client section, or "
                               "its TLS certificate): Auth failed either before or while waiting for connection") from None
        self.connected = True

    def _ensure_chroot(self) -> None:
        plain = self._security.client(self.hosts, self.session_timeout_ms / 1000)
        _start(plain, self.connection_timeout_s)
        try:
            plain.ensure_path(self.chroot)
        finally:
            plain.stop()
            plain.close()

    async def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run a blocking kazoo call in a worker thread. A cancelled caller does not wait for it
        (kazoo retries while ZooKeeper is unreachable: a bounded shutdown must not hang on it);
        the thread finishes on its own, its result dropped."""
        return await trio.to_thread.run_sync(functools.partial(fn, *args, **kwargs), abandon_on_cancel=True)

    def feed(self) -> ChangeFeed:
        """A feed of its own for another consumer of watches (see ChangeFeed)."""
        feed = ChangeFeed(self)
        self._feeds.append(feed)
        return feed

    def metadata_feed(self) -> ChangeFeed:
        """Another consumer of the metadata's own watches (the controller's state writer): its
        feed is marked by every watch of the cache, every mark_changed and every session
        change, as the reconcile loop's is, and is waited on apart from it."""
        feed = self.feed()
        self._metadata_feeds.append(feed)
        return feed

    def _metadata_watcher(self, event: object = None) -> None:
        """The cache's watch events (kazoo thread), handed to the loop for every metadata feed."""
        self._post(functools.partial(self.mark_changed, getattr(event, "path", None)))

    def _on_state(self, state: str) -> None:
        """kazoo's session listener (kazoo thread; it must not block). Cached reads go at once:
        their watches may not survive what happened to the session."""
        self.cache.clear()
        self._post(functools.partial(self._state_changed, state))

    def _post(self, fn: Callable[[], None]) -> None:
        """Run fn on the loop soon (from any thread), after every call posted before it."""
        token = self._token
        if token is None:
            return
        with self._posts_lock:
            self._posts.append(fn)
            if len(self._posts) > 1:
                return  # the loop is already asked to run the queue
        try:
            token.run_sync_soon(self._run_posts)
        except trio.RunFinishedError:
            with self._posts_lock:
                self._posts = []

    def _run_posts(self) -> None:
        """The calls posted since the last run (on the loop)."""
        with self._posts_lock:
            posts, self._posts = self._posts, []
        for fn in posts:
            fn()

    def _state_changed(self, state: str) -> None:
        if self._closing:  # our own close ends the session: not an expiry
            return
        if state == KazooState.LOST:
            log.warning("ZooKeeper session expired")
            self.expires += 1
            self.connected = False
        elif state == KazooState.SUSPENDED:
            log.warning("ZooKeeper connection suspended")
            self.disconnects += 1
            self.connected = False
        elif state == KazooState.CONNECTED:
            if not self.connected:
                log.info("ZooKeeper connection (re)established")
            self.connected = True
        for feed in self._feeds:
            feed.mark(None)

    def session_id(self) -> int | None:
        """The current ZooKeeper session's id; a new one means our ephemerals are gone."""
        cid = self.client.client_id
        return cid[0] if cid else None

    async def wait_changed(self, timeout_s: float) -> set[str | None]:
        """Sleep until a metadata watch fires or the session changes (or timeout_s, a safety
        net); the paths whose watches fired meanwhile (None among them: anything may have changed)."""
        return await self._metadata_feed.wait(timeout_s)

    def mark_changed(self, path: str | None = None) -> None:
        """Ask for a reconcile soon (after a write of our own, say): of everything, or, given the
        path of what changed, with the cached reads of everything else kept."""
        for feed in self._metadata_feeds:
            feed.mark(path)

    async def close(self) -> None:
        self._closing = True
        await trio.to_thread.run_sync(self._close)

    def _close(self) -> None:
        try:
            self.client.stop()
            self.client.close()
        except Exception:  # closing a session that already failed  # noqa: BLE001
            log.debug("closing the ZooKeeper client failed", exc_info=True)


class ChangeFeed:
    """What one consumer of ZooKeeper watches waits on: the paths whose watches (set with this
    feed's `watcher`) fired since its last `wait`, None for a session change or a `mark(None)`.
    Marked on the event loop only; kazoo's threads reach it through the session's `_post`."""

    def __init__(self, session: ZkSession) -> None:
        self._session = session
        self._changed = trio.Event()
        self._paths: set[str | None] = set()

    def watcher(self, event: object = None) -> None:
        """The watch to pass to kazoo reads (kazoo thread): hand the event to the loop."""
        self._session._post(functools.partial(self.mark, getattr(event, "path", None)))

    def mark(self, path: str | None) -> None:
        self._paths.add(path)
        self._changed.set()

    async def wait(self, timeout_s: float) -> set[str | None]:
        """Sleep until something is marked (or timeout_s, a safety net); what was marked."""
        with trio.move_on_after(timeout_s):
            await self._changed.wait()
        self._changed = trio.Event()
        paths, self._paths = self._paths, set()
        return paths


def _start(client: Any, timeout_s: float) -> None:
    """KazooClient.start, waiting up to timeout_s seconds (any number: it waits on an Event;
    the client is Any because a checker infers int from kazoo's default of 15)."""
    client.start(timeout=timeout_s)
