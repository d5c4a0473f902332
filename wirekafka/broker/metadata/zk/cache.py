"""ZnodeCache: the metadata's watched ZooKeeper reads, kept per path until their watch fires.

The reconcile loop reads the whole cluster state each time a watch fires. Read through this
cache, a znode (its data, its existence, or its children) is asked of ZooKeeper again only when
the watch its last read set has fired, so one ISR change costs one read instead of one per
partition of the cluster. The reads keep kazoo's interface (`get_async`, `exists_async`,
`get_children`, `get_children_async`), so the snapshot reader does not know whether it reads
through the cache.

Why it stays right:
- A cached entry holds only what a read with a watch returned, and ZooKeeper keeps that watch
  until the znode changes; the watch (this cache's `watch`, kazoo's event thread) drops the entry
  before anything else hears of the change. A missing znode read with get or get_children sets no
  watch, so it is never cached (exists sets one, so its "absent" is).
- A read whose answer arrives after its path's watch fired (a generation count per path moved
  meanwhile) is returned but not kept: it may predate the change.
- `clear()` drops everything: on any session state change (watches may be lost with a session)
  and whenever a caller asks for a re-read without naming what changed.
Entries are taken and dropped under one lock: reads run in trio worker threads, watches in
kazoo's thread."""

from __future__ import annotations

import threading
from typing import Any, Callable

from kazoo.protocol.states import EventType

_DATA, _EXISTS, _CHILDREN = "data", "exists", "children"
# what each watch event makes stale: data watches (get, exists) and child watches (get_children)
_STALE_BY_EVENT = {EventType.CREATED: (_DATA, _EXISTS), EventType.CHANGED: (_DATA, _EXISTS),
                   EventType.CHILD: (_CHILDREN,), EventType.DELETED: (_DATA, _EXISTS, _CHILDREN)}


class _Ready:
    """A cached answer, with the async result's `get`. The cache keeps these and hands out the
    same one on every hit: a reconcile at 10,000 partitions made 10,000 of them per snapshot,
    and the snapshot's reads held them long enough for the collector to move them to its oldest
    generation (a census there found 10,000-20,000)."""

    def __init__(self, value: Any) -> None:
        self._value = value

    def get(self) -> Any:
        return self._value


class _Reading:
    """An answer on its way from ZooKeeper: kept in the cache when it comes, unless the path's
    watch fired (or the cache was cleared) since the read was sent."""

    def __init__(self, cache: "ZnodeCache", key: tuple[str, str], token: tuple[int, int], request: Any,
                 keep_missing: bool) -> None:
        self._cache, self._key, self._token, self._request = cache, key, token, request
        self._keep_missing = keep_missing

    def get(self) -> Any:
        try:
            value = self._request.get()  # a missing znode raises NoNodeError: nothing kept
        finally:
            self._cache._arrived(self._key, self)
        if value is not None or self._keep_missing:
            self._cache._keep(self._key, self._token, value)
        return value


class ZnodeCache:
    def __init__(self, client: Any, notify: Callable[[Any], None]) -> None:
        """client: the kazoo client; notify: called (kazoo's thread) with every watch event after
        the cache has dropped what it made stale."""
        self.client = client
        self._notify = notify
        self._lock = threading.Lock()
        self._entries: dict[tuple[str, str], _Ready] = {}
        self._generations: dict[str, int] = {}  # per path: watch events seen
        # reads sent and not yet answered: a second reader of the same path (the reconcile
        # loop and the controller's, at once) shares the answer instead of asking again
        self._in_flight: dict[tuple[str, str], _Reading] = {}
        self._clears = 0
        self.reads = 0  # reads sent to ZooKeeper (for tests and the benchmark)
        self.hits = 0

    # ---- kazoo's read interface -------------------------------------------------------------------
    def get_async(self, path: str, watch: Callable | None = None) -> Any:
        return self._read(_DATA, path, self.client.get_async, keep_missing=False)

    def exists_async(self, path: str, watch: Callable | None = None) -> Any:
        return self._read(_EXISTS, path, self.client.exists_async, keep_missing=True)

    def get_children_async(self, path: str, watch: Callable | None = None) -> Any:
        return self._read(_CHILDREN, path, self.client.get_children_async, keep_missing=False)

    def get_children(self, path: str, watch: Callable | None = None) -> list[str]:
        return self.get_children_async(path).get()

    def known_absent(self, path: str) -> bool:
        """Whether a watched exists() found the znode missing and nothing fired since: a read of
        it would only be refused (a partition the controller has yet to elect, read by every
        reconcile until it is)."""
        with self._lock:
            entry = self._entries.get((_EXISTS, path))
            return entry is not None and entry.get() is None

    # ---- watches and invalidation ------------------------------------------------------------------
    def watch(self, event: Any = None) -> None:
        """The watch every read through the cache sets (kazoo's thread): drop what the event made
        stale, then pass it on. An event without a path (or a call without one) drops everything."""
        path = getattr(event, "path", None)
        kinds = _STALE_BY_EVENT.get(getattr(event, "type", ""))
        if path is None or kinds is None:
            self.clear()
        else:
            with self._lock:
                self._generations[path] = self._generations.get(path, 0) + 1
                for kind in kinds:
                    self._entries.pop((kind, path), None)
        self._notify(event)

    def clear(self) -> None:
        with self._lock:
            self._clears += 1  # reads sent before this are not kept
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)

    # ---- internals -------------------------------------------------------------------------------
    def _read(self, kind: str, path: str, send: Callable[..., Any], keep_missing: bool) -> Any:
        with self._lock:
            entry = self._entries.get((kind, path))
            if entry is not None:
                self.hits += 1
                return entry
            token = (self._clears, self._generations.get(path, 0))  # taken before the read is sent
            sent = self._in_flight.get((kind, path))
            if sent is not None and sent._token == token:
                self.hits += 1
                return sent
        self.reads += 1
        reading = _Reading(self, (kind, path), token, send(path, watch=self.watch), keep_missing)
        with self._lock:
            self._in_flight[(kind, path)] = reading
        return reading

    def _arrived(self, key: tuple[str, str], reading: _Reading) -> None:
        with self._lock:
            if self._in_flight.get(key) is reading:
                del self._in_flight[key]

    def _keep(self, key: tuple[str, str], token: tuple[int, int], value: Any) -> None:
        with self._lock:
            if (self._clears, self._generations.get(key[1], 0)) == token:
                self._entries[key] = _Ready(value)
