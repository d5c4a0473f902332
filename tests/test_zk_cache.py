"""The per-path cache of the metadata's watched ZooKeeper reads (replication/zk_cache.py), on a
fake kazoo client whose watches the test fires by hand; compat-tests/test_zk_cache_real_zookeeper.py runs it on a
real ZooKeeper."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from kazoo.exceptions import NoNodeError
from kazoo.protocol.states import EventType

from wirekafka.broker.metadata.zk.cache import ZnodeCache


class _Answer:
    def __init__(self, value: object = None, error: Exception | None = None) -> None:
        self.value, self.error = value, error

    def get(self) -> object:
        if self.error is not None:
            raise self.error
        return self.value


class _Client:
    """kazoo's async reads over a dict of znodes (path -> data) and a dict of children."""

    def __init__(self) -> None:
        self.data: dict[str, bytes] = {}
        self.children: dict[str, list[str]] = {}
        self.sent: list[tuple[str, str]] = []
        self.watches: set = set()

    def _answer(self, kind: str, path: str, watch, value, present: bool) -> _Answer:
        self.sent.append((kind, path))
        self.watches.add(watch)
        return _Answer(value) if present else _Answer(error=NoNodeError())

    def get_async(self, path: str, watch=None) -> _Answer:
        return self._answer("get", path, watch, (self.data.get(path), SimpleNamespace(version=1)), path in self.data)

    def exists_async(self, path: str, watch=None) -> _Answer:
        self.sent.append(("exists", path))
        return _Answer(SimpleNamespace(version=1) if path in self.data else None)

    def get_children_async(self, path: str, watch=None) -> _Answer:
        return self._answer("children", path, watch, list(self.children.get(path, [])), path in self.children)


def event(kind: int | str, path: str) -> SimpleNamespace:
    return SimpleNamespace(type=kind, path=path)


@pytest.fixture
def setup():
    client, heard = _Client(), []
    return client, ZnodeCache(client, heard.append), heard


def test_a_read_is_kept_until_its_watch_fires(setup) -> None:
    client, cache, heard = setup
    client.data["/a"] = b"1"
    assert cache.get_async("/a").get()[0] == b"1"
    client.data["/a"] = b"2"  # changed, but no watch event yet: the kept answer stands
    assert cache.get_async("/a").get()[0] == b"1"
    assert client.sent == [("get", "/a")]
    cache.watch(event(EventType.CHANGED, "/a"))
    assert heard[-1].path == "/a"
    assert cache.get_async("/a").get()[0] == b"2"
    assert client.sent == [("get", "/a"), ("get", "/a")]
    assert (cache.reads, cache.hits) == (2, 1)


def test_every_read_sets_the_caches_own_watch(setup) -> None:
    client, cache, _ = setup
    client.data["/a"] = b"1"
    client.children["/p"] = ["a"]
    cache.get_async("/a", watch=print).get()
    cache.get_children("/p", watch=print)
    assert client.watches == {cache.watch}


def test_a_missing_znode_read_by_get_is_asked_again_but_exists_keeps_its_absence(setup) -> None:
    client, cache, _ = setup
    for _ in range(2):
        with pytest.raises(NoNodeError):
            cache.get_async("/gone").get()
        assert cache.exists_async("/gone").get() is None
    assert client.sent == [("get", "/gone"), ("exists", "/gone"), ("get", "/gone")]
    client.data["/gone"] = b"x"
    cache.watch(event(EventType.CREATED, "/gone"))
    assert cache.exists_async("/gone").get() is not None
    assert cache.get_async("/gone").get()[0] == b"x"


def test_a_child_event_drops_only_the_listing(setup) -> None:
    client, cache, _ = setup
    client.data["/p"] = b"d"
    client.children["/p"] = ["a"]
    cache.get_async("/p").get()
    assert cache.get_children("/p") == ["a"]
    client.children["/p"] = ["a", "b"]
    cache.watch(event(EventType.CHILD, "/p"))
    assert cache.get_children("/p") == ["a", "b"]
    cache.get_async("/p").get()
    assert client.sent.count(("get", "/p")) == 1 and client.sent.count(("children", "/p")) == 2


def test_a_deletion_drops_data_existence_and_listing(setup) -> None:
    client, cache, _ = setup
    client.data["/p"] = b"d"
    client.children["/p"] = []
    cache.get_async("/p").get()
    cache.exists_async("/p").get()
    cache.get_children("/p")
    assert len(cache) == 3
    cache.watch(event(EventType.DELETED, "/p"))
    assert len(cache) == 0


def test_an_answer_that_arrives_after_its_watch_fired_is_not_kept(setup) -> None:
    client, cache, _ = setup
    client.data["/a"] = b"old"
    reading = cache.get_async("/a")  # sent
    client.data["/a"] = b"new"
    cache.watch(event(EventType.CHANGED, "/a"))  # the change's event comes before the reader looks
    assert reading.get()[0] == b"old"  # the answer itself is still returned
    assert cache.get_async("/a").get()[0] == b"new"


def test_clear_drops_everything_and_answers_in_flight(setup) -> None:
    client, cache, heard = setup
    client.data["/a"] = b"1"
    client.data["/b"] = b"1"
    cache.get_async("/a").get()
    reading = cache.get_async("/b")
    cache.clear()
    reading.get()
    assert len(cache) == 0
    cache.watch(None)  # a watch call without an event (another read asked for): clears too
    assert heard == [None] and len(cache) == 0


def test_a_second_reader_of_a_path_in_flight_shares_its_answer(setup) -> None:
    """The reconcile loop and the controller's read at once: one request, until it is answered;
    a watch that fires meanwhile makes the next read ask again."""
    client, cache, _ = setup
    client.data["/a"] = b"1"
    first, second = cache.get_async("/a"), cache.get_async("/a")
    assert first is second and client.sent == [("get", "/a")]
    cache.watch(event(EventType.CHANGED, "/a"))
    third = cache.get_async("/a")
    assert third is not first and client.sent == [("get", "/a"), ("get", "/a")]
    assert first.get()[0] == b"1" and third.get()[0] == b"1"
    assert cache.get_async("/a").get()[0] == b"1" and len(client.sent) == 2  # the later answer was kept


def test_a_missing_node_is_known_absent_while_its_exists_watch_holds(setup) -> None:
    client, cache, _ = setup
    assert not cache.known_absent("/s")  # never asked
    assert cache.exists_async("/s").get() is None
    assert cache.known_absent("/s")
    cache.watch(event(EventType.CREATED, "/s"))
    assert not cache.known_absent("/s")
    client.data["/s"] = b"x"
    assert cache.exists_async("/s").get() is not None
    assert not cache.known_absent("/s")


def test_a_hit_hands_out_the_kept_answer_itself(setup) -> None:
    """The kept answer object is handed out on every hit (no wrapper made per read): the
    snapshot reader's memo compares answers by identity, and a reconcile at 10,000 partitions
    would otherwise make 10,000 short-lived objects the collector moves to its oldest generation."""
    client, cache, _ = setup
    client.data["/a"] = b"1"
    first = cache.get_async("/a")
    value = first.get()
    kept = cache.get_async("/a")
    assert cache.get_async("/a") is kept
    assert kept.get() is value
    cache.watch(event(EventType.CHANGED, "/a"))
    assert cache.get_async("/a") is not kept
