"""The watch on znodes a cluster-state read found missing: a node created between that read and
the exists() that sets the watch must still lead to another reconcile (a follower once missed a
new partition's state this way until the safety re-read, seconds later)."""

from __future__ import annotations

from types import SimpleNamespace

from kazoo.protocol.states import EventType

from wirekafka.broker.metadata.zk.cache import ZnodeCache
from wirekafka.broker.metadata.zk.znode_io import watch_creation


class _Done:
    def __init__(self, value: object) -> None:
        self.value = value

    def get(self) -> object:
        return self.value


class _Client:
    """kazoo's exists_async over a fixed set of existing paths, recording the watches set."""

    def __init__(self, existing: set[str]) -> None:
        self.existing = existing
        self.watched: list[str] = []

    def exists_async(self, path: str, watch=None) -> _Done:
        self.watched.append(path)
        return _Done(object() if path in self.existing else None)


def test_a_node_still_missing_is_watched_without_a_new_read() -> None:
    client, calls = _Client(set()), []
    watch_creation(client, ["/a", "/b"], calls.append)
    assert client.watched == ["/a", "/b"]
    assert calls == []


def test_a_node_created_meanwhile_asks_for_another_read_of_it_alone() -> None:
    """Each node found created is told as its creation's watch would tell it (a path, not None:
    None would drop every cached read, thousands of them while a large topic comes online)."""
    client, calls = _Client({"/b", "/c"}), []
    watch_creation(client, ["/a", "/b", "/c"], calls.append)
    assert client.watched == ["/a", "/b", "/c"]
    assert [(e.type, e.path) for e in calls] == [(EventType.CREATED, "/b"), (EventType.CREATED, "/c")]


def test_a_created_node_drops_only_its_own_cached_reads() -> None:
    """Through the cache's watch, a node found created leaves every other cached read in place."""
    cache = ZnodeCache(SimpleNamespace(), lambda event: None)
    cache._entries = {("data", "/other"): b"x", ("exists", "/b"): None}
    client = _Client({"/b"})
    watch_creation(client, ["/b"], cache.watch)
    assert cache._entries == {("data", "/other"): b"x"}


def test_nothing_to_watch() -> None:
    client, calls = _Client({"/a"}), []
    watch_creation(client, [], calls.append)
    assert client.watched == [] and calls == []


def test_the_session_reports_which_watches_fired() -> None:
    """wait_changed names the paths whose watches fired since the last call (the controller's fast
    path needs /brokers/ids among them); a change of our own or of the session is None."""
    import trio

    from wirekafka.broker.metadata.zk.session import ZkSession

    async def main() -> None:
        session = ZkSession("127.0.0.1:1", 1000, 1000)  # never started: only the bookkeeping is used
        session._token = trio.lowlevel.current_trio_token()
        session.cache.watch(SimpleNamespace(path="/brokers/ids"))
        session.cache.watch(SimpleNamespace(path="/brokers/ids/3"))
        await trio.sleep(0)  # the watcher posts to the loop, as from kazoo's thread
        assert await session.wait_changed(1) == {"/brokers/ids", "/brokers/ids/3"}
        session.mark_changed()
        assert await session.wait_changed(1) == {None}
        assert await session.wait_changed(0.01) == set()  # nothing fired: the safety timeout

    trio.run(main)
