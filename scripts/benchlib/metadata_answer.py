"""Metadata for all topics on a ZooKeeper-mode broker, in-process: what building and encoding
the answer costs the event loop, whole and from the parts kept per topic (issue 38: Metadata
p99 at 10,000 partitions).

In a cluster the answer is kept until the metadata changes, and the metadata changes all the
time (an ISR here, a leader there); each change used to cost a whole new answer. This row runs
wirekafka's Metadata handler on a ClusterView holding a snapshot made in memory (topics of 100
partitions, replication 3 over three live brokers; no ZooKeeper, no network) and times the
handler and the response's encoding, not a client's decoding:
- whole: no answer cache (as with an authorizer), every partition described and encoded;
- first: the answer cache empty, every topic's part built (the first request after start);
- one partition changed: a state of one partition replaced, as an AlterPartition's amendment does;
- every topic changed: a state in each topic replaced;
- kept: the answer unchanged since the last request.
Kafka has no such cache (it encodes every answer anew), so the row has no Kafka column; the
cluster-scale row measures both brokers' round trips."""

from __future__ import annotations

import statistics
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import trio
from kafka.protocol.metadata.metadata import MetadataRequest

from wirekafka.broker import dispatch
from wirekafka.broker.context import RequestContext
from wirekafka.broker.metadata.answer_cache import AnswerCache
from wirekafka.broker.metadata.cluster_metadata import BrokerInfo, Topic
from wirekafka.broker.metadata.zk.cluster_view import ClusterView
from wirekafka.broker.metadata.zk.controller import ClusterSnapshot, LeaderAndIsr, TopicView
from wirekafka.broker.state import BrokerState
from wirekafka.config.loader import build_config
from wirekafka.protocol import codec

TOPIC_PARTITIONS = 100
NODES = (1, 2, 3)
VERSION = 12  # what the cluster-scale row asks with
RUNS = 7


@dataclass(frozen=True)
class AnswerFigures:
    partitions: int
    answer_bytes: int
    ms: dict[str, float]  # case -> median milliseconds of handling and encoding one request


class _ZkMetadata:
    """The look-ups Metadata makes, answered by a ClusterView as ZkBackend answers them, with
    an answer cache that is handed in (None: no caching)."""

    def __init__(self, view: ClusterView, cache: AnswerCache | None) -> None:
        self.view = view
        self.cache = cache

    def __getattr__(self, name: str) -> object:
        return getattr(self.view, name)

    def answer_cache(self) -> AnswerCache | None:
        return self.cache


def _views(topics: int, epoch: int) -> dict[str, TopicView]:
    return {f"scale-{i:04d}": TopicView(
        uuid.UUID(int=i + 1),
        {p: tuple(NODES[(p + r) % 3] for r in range(3)) for p in range(TOPIC_PARTITIONS)},
        states={p: (LeaderAndIsr(NODES[p % 3], epoch, NODES, 1), epoch) for p in range(TOPIC_PARTITIONS)})
        for i in range(topics)}


def _bump(view: TopicView, index: int) -> None:
    state, version = view.states[index]
    view.states[index] = (LeaderAndIsr(state.leader, state.leader_epoch + 1, state.isr, 1), version + 1)


def run(partitions: int) -> AnswerFigures:
    with tempfile.TemporaryDirectory() as tmp:
        node = BrokerState(build_config({"log.dirs": str(Path(tmp) / "data")}))
        node.load()
        listener = node.config.listeners[0].name
        view = ClusterView(node.config, lambda *_: None, lambda: None)  # type: ignore[arg-type, return-value]
        brokers = {n: BrokerInfo(n, "127.0.0.1", 9091 + n, endpoints={listener: ("127.0.0.1", 9091 + n)})
                   for n in NODES}
        view.snapshot = ClusterSnapshot(brokers, NODES[0], 1, 1, _views(max(partitions // TOPIC_PARTITIONS, 1), 1))
        for name, topic_view in view.snapshot.topics.items():
            topic = Topic(name, topic_view.topic_id)
            topic.partitions = [None] * len(topic_view.assignment)  # no replicas here: Metadata reads the views
            view.by_name[name] = topic  # type: ignore[index]  # the view's own dict, filled as apply would
        cache = AnswerCache(view.topic_answer_key)
        metadata = _ZkMetadata(view, cache)
        node.metadata = metadata  # type: ignore[assignment]
        names = list(view.snapshot.topics)
        request = MetadataRequest(topics=None, allow_auto_topic_creation=False,
                                  include_topic_authorized_operations=False)
        request.API_VERSION = VERSION
        request.with_header(correlation_id=1, client_id="bench-metadata")
        header = codec.parse_header(bytes(request.encode(header=True)))
        body = codec.decode_body(header, bytes(request.encode(header=True)))
        ctx = RequestContext(node, header, listener, "127.0.0.1:5000")
        sizes: list[int] = []

        def answer() -> None:
            sizes.append(len(codec.encode_response(header.api_key, VERSION, 1, trio.run(dispatch.dispatch, ctx, body))))

        def timed(prepare: Callable[[], None]) -> float:
            times = []
            for _ in range(RUNS):
                prepare()
                t0 = time.perf_counter()
                answer()
                times.append((time.perf_counter() - t0) * 1000)
            return statistics.median(times)

        def uncached() -> None:
            metadata.cache = None

        def empty() -> None:
            metadata.cache = AnswerCache(view.topic_answer_key)

        def one_changed() -> None:
            metadata.cache = cache
            _bump(view.snapshot.topics[names[len(names) // 2]], 3)
            cache.changed(names)

        def all_changed() -> None:
            for topic_view in view.snapshot.topics.values():
                _bump(topic_view, 0)
            cache.changed(names)

        ms = {"whole": timed(uncached), "first": timed(empty)}
        metadata.cache = cache
        answer()  # the parts of every topic, kept
        ms["one partition changed"] = timed(one_changed)
        ms["every topic changed"] = timed(all_changed)
        ms["kept"] = timed(lambda: None)
        return AnswerFigures(len(names) * TOPIC_PARTITIONS, sizes[-1], ms)
