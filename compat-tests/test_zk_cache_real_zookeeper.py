"""The metadata's per-path read cache (broker/metadata/zk/cache.py) on a real ZooKeeper: after each
kind of change a cluster sees (a partition state written, a topic added, a broker gone, a topic
config changed) the snapshot read through the cache equals a fresh read of everything, and it
asks ZooKeeper only for what changed (plus the few missing znodes, whose reads set no watch)."""

from __future__ import annotations

import threading
import time
import uuid

import pytest
from kazoo.client import KazooClient

from testsupport.zk_chroot import chrooted

from wirekafka.broker.metadata.zk import layout as zl
from wirekafka.broker.metadata.zk.controller import LeaderAndIsr
from wirekafka.broker.metadata.zk.cache import ZnodeCache
from wirekafka.broker.metadata.zk.znode_io import (TopicMemo, create_topic_znodes, encode_state,
                                                   read_snapshot)

pytestmark = pytest.mark.zookeeper
PARTITIONS = 200


class _Heard:
    """The watch events the cache passed on, to wait for one."""

    def __init__(self) -> None:
        self.paths: list[str | None] = []
        self._cond = threading.Condition()

    def __call__(self, event) -> None:
        with self._cond:
            self.paths.append(getattr(event, "path", None))
            self._cond.notify_all()

    def wait_for(self, path: str, timeout_s: float = 10) -> None:
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while path not in self.paths:
                assert self._cond.wait(max(0.0, deadline - time.monotonic())), f"no watch event on {path}"
            self.paths.clear()


def _register(client: KazooClient, broker_id: int) -> None:
    client.create(zl.broker_path(broker_id), zl.BrokerRegistration(
        broker_id, (zl.Endpoint("PLAINTEXT", "127.0.0.1", 9000 + broker_id, "PLAINTEXT"),)).encode(),
        ephemeral=True, makepath=True)


def _add_topic(client: KazooClient, name: str, partitions: int) -> None:
    create_topic_znodes(client, name, uuid.uuid4(), {p: [1, 2] for p in range(partitions)}, {})
    for p in range(partitions):
        client.create(zl.partition_state_path(name, p), encode_state(LeaderAndIsr(1, 0, (1, 2), 1)), makepath=True)


def test_cached_reads_equal_fresh_reads_and_ask_only_for_changes(zookeeper: str, tmp_path) -> None:
    with chrooted(zookeeper, f"/zk-cache-{tmp_path.name}") as client:
        for broker_id in (1, 2):
            _register(client, broker_id)
        _add_topic(client, "big", PARTITIONS)
        heard = _Heard()
        cache = ZnodeCache(client, heard)
        memo = TopicMemo()
        views: dict = {}  # the last cached read's topic views

        def read_both() -> int:
            """Reads sent by a snapshot read through the cache (and the memo of decoded topics),
            which must equal a fresh one."""
            before = cache.reads
            cached = read_snapshot(cache, cache.watch, ("1",), memo)
            assert cached == read_snapshot(client, None, ("1",))
            views.clear()
            views.update(cached.topics)
            return cache.reads - before

        def reused() -> set[str]:
            """The topics whose view the next cached read took from the memo, not decoding them."""
            last = dict(views)
            read_snapshot(cache, cache.watch, ("1",), memo)
            return {name for name, view in memo.topics.items() if last.get(name) is view[1]}

        first = read_both()
        assert first > PARTITIONS
        idle = read_both()  # nothing changed: only the znodes found missing are asked again
        assert idle < 10, idle
        started = time.perf_counter()
        read_snapshot(client, None, ("1",))
        fresh_s = time.perf_counter() - started
        started = time.perf_counter()
        read_snapshot(cache, cache.watch, ("1",))
        print(f"{PARTITIONS} partitions: {first} reads and {fresh_s * 1000:.1f} ms for a fresh snapshot; "
              f"{idle} reads and {(time.perf_counter() - started) * 1000:.1f} ms through the cache")

        assert reused() == {"big"}
        client.set(zl.partition_state_path("big", 7), encode_state(LeaderAndIsr(1, 0, (1,), 1)))
        heard.wait_for(zl.partition_state_path("big", 7))
        assert read_both() == idle + 1

        _add_topic(client, "small", 3)
        heard.wait_for(zl.TOPICS)
        # the topics' listing; the new topic's znode, config and partitions' listing; its states
        assert read_both() == idle + 1 + 3 + 3
        client.set(zl.partition_state_path("small", 1), encode_state(LeaderAndIsr(2, 1, (2,), 1)))
        heard.wait_for(zl.partition_state_path("small", 1))
        assert reused() == {"big"}  # one state changed: only its topic is decoded again
        assert read_both() == idle

        client.set(zl.topic_config_path("small"), zl.encode_entity_config({"retention.ms": "1000"}))
        heard.wait_for(zl.topic_config_path("small"))
        assert read_both() == idle + 1
        assert views["small"].configs == {"retention.ms": "1000"}

        client.delete(zl.broker_path(2))
        heard.wait_for(zl.BROKER_IDS)
        assert read_both() == idle + 1

        cache.clear()
        assert read_both() >= first


def test_a_partial_read_asks_only_for_the_topics_it_names(zookeeper: str, tmp_path) -> None:
    """What an election, a controlled shutdown or a reassignment reads (read_snapshot's `only`):
    the named topics' znodes and the brokers, not every partition state of the cluster."""
    with chrooted(zookeeper, f"/zk-partial-{tmp_path.name}") as client:
        _register(client, 1)
        _add_topic(client, "big", PARTITIONS)
        _add_topic(client, "small", 3)
        whole = read_snapshot(client, None)
        counted = ZnodeCache(client, _Heard())
        partial = read_snapshot(counted, None, (), None, {"small", "gone"}.intersection)
        assert set(partial.topics) == {"small"} and partial.topics["small"] == whole.topics["small"]
        assert partial.brokers == whole.brokers and partial.controller_epoch == whole.controller_epoch
        assert 5 < counted.reads < 30, counted.reads  # "big"'s 200 states were not asked for


def test_a_new_topics_states_are_read_once_the_controller_made_them(zookeeper: str, tmp_path) -> None:
    """A topic whose partitions have no state znode yet costs its listing's read, not a refused
    read per partition at every reconcile; the listing's watch tells when the states come."""
    with chrooted(zookeeper, f"/zk-new-{tmp_path.name}") as client:
        _register(client, 1)
        heard = _Heard()
        cache = ZnodeCache(client, heard)
        read_snapshot(cache, cache.watch)
        create_topic_znodes(client, "new", uuid.uuid4(), {p: [1] for p in range(PARTITIONS)}, {})
        heard.wait_for(zl.TOPICS)
        before = cache.reads
        snapshot = read_snapshot(cache, cache.watch)
        assert snapshot.topics["new"].states == {}
        assert cache.reads - before < 15, cache.reads - before  # none of its 200 states asked for
        before = cache.reads
        read_snapshot(cache, cache.watch)
        assert cache.reads - before < 10
        for p in range(PARTITIONS):
            client.create(zl.partition_state_path("new", p), encode_state(LeaderAndIsr(1, 0, (1,), 1)), makepath=True)
        heard.wait_for(zl.topic_partitions_path("new"))
        deadline = time.monotonic() + 10
        while len(read_snapshot(cache, cache.watch).topics["new"].states) < PARTITIONS:
            assert time.monotonic() < deadline, "the new states were not read"
            time.sleep(0.05)
        assert read_snapshot(cache, cache.watch) == read_snapshot(client, None)
