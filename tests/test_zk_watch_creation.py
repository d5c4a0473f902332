"""The watch on znodes a cluster-state read found missing: a node created between that read and
the exists() that sets the watch must still lead to another reconcile (a follower once missed a
new partition's state this way until the safety re-read, seconds later)."""

from __future__ import annotations

from wirekafka.broker.replication.zk_metadata import _watch_creation


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
    _watch_creation(client, ["/a", "/b"], calls.append)
    assert client.watched == ["/a", "/b"]
    assert calls == []


def test_a_node_created_meanwhile_asks_for_another_read() -> None:
    client, calls = _Client({"/b"}), []
    _watch_creation(client, ["/a", "/b", "/c"], calls.append)
    assert client.watched == ["/a", "/b", "/c"]
    assert calls == [None]  # one request, however many nodes appeared


def test_nothing_to_watch() -> None:
    client, calls = _Client({"/a"}), []
    _watch_creation(client, [], calls.append)
    assert client.watched == [] and calls == []
