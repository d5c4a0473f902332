"""PeerClient (the broker-to-broker client) against a real wirekafka process.

What a follower will do to its leader: ApiVersions, Metadata, Fetch (v12 by topic name, v13+ by
topic id) of batches a stock client produced, which must come back byte for byte as they lie in
the leader's segment file, OffsetForLeaderEpoch; and what a follower must survive: a leader that
is not there, one that is killed mid-request, one that comes back."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest
import trio
import trio.testing
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.protocol.consumer.fetch import FetchRequest, FetchResponse
from kafka.protocol.consumer.offsets import OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse
from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse
from kafka.protocol.metadata.metadata import MetadataRequest

from testsupport.broker_process import BrokerProcess
from wirekafka.broker.replication.peer_client import PeerClient, PeerUnavailable
from wirekafka.protocol.records import batch_bounds, split_batches

FETCH_VERSIONS = range(12, 19)  # 12: the last by topic name; 13-18 by topic id (wirekafka serves 4-18)
UNKNOWN_TOPIC_OR_PARTITION = 3


def _client(broker, request_timeout_s: float = 10.0) -> PeerClient:
    return PeerClient("127.0.0.1", broker.port, "peer-test", 5.0, request_timeout_s)


def _segment(broker, topic: str) -> bytes:
    data_dir = getattr(broker, "data_dir", None)
    if data_dir is None:
        pytest.skip("the segment comparison needs a wirekafka process started here")
    return (Path(data_dir) / f"{topic}-0" / f"{0:020d}.log").read_bytes()


def _create_topic(broker, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(10)


def _produce_batches(broker, topic: str, batches: list[tuple[dict, list[bytes]]]) -> None:
    """Each (producer config, values) becomes one batch (or more, for values over batch.size)."""
    for config, values in batches:
        producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 1000, **config})
        for i, value in enumerate(values):
            producer.produce(topic, key=b"k%d" % i, value=value, partition=0)
        assert producer.flush(15) == 0


def _fetch(version: int, topic: str, topic_id: uuid.UUID, offset: int, max_wait_ms: int = 0,
           max_bytes: int = 64 << 20) -> FetchRequest:
    by_name = version <= 12
    partition = FetchRequest.FetchTopic.FetchPartition(
        partition=0, current_leader_epoch=-1, fetch_offset=offset, last_fetched_epoch=-1, log_start_offset=-1,
        partition_max_bytes=max_bytes)
    return FetchRequest(version=version, replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=max_bytes,
                        isolation_level=0, session_id=0, session_epoch=-1, rack_id="",
                        topics=[FetchRequest.FetchTopic(topic=topic if by_name else "",
                                                        topic_id=None if by_name else topic_id,
                                                        partitions=[partition])],
                        forgotten_topics_data=[])


async def _topic_metadata(client: PeerClient, topic: str):
    r = await client.send(MetadataRequest(version=12, topics=[MetadataRequest.MetadataRequestTopic(name=topic)],
                                          allow_auto_topic_creation=False,
                                          include_topic_authorized_operations=False))
    (t,) = r.topics
    assert t.error_code == 0, t
    return t


def _records(response: FetchResponse) -> bytes:
    (topic,) = response.responses
    (part,) = topic.partitions
    assert part.error_code == 0, part
    assert isinstance(part.records, (bytes, memoryview)), type(part.records)
    return bytes(part.records)


def test_api_versions_every_version(broker) -> None:
    async def main():
        async with _client(broker) as c:
            for version in range(0, 5):
                r = await c.send(ApiVersionsRequest(version=version, client_software_name="wirekafka-peer",
                                                    client_software_version="0"))
                assert isinstance(r, ApiVersionsResponse) and r.error_code == 0
                ranges = {k.api_key: (k.min_version, k.max_version) for k in r.api_keys}
                assert ranges[1][0] <= 12 and ranges[1][1] >= 18  # Fetch
                assert ranges[23][1] >= 4  # OffsetForLeaderEpoch
            assert c.connected

    trio.run(main)


def test_an_idle_connection_is_replaced_before_the_next_request(broker) -> None:
    """A connection unused for longer than the client's idle time is not trusted (the broker may
    have closed it as idle): the next request goes out on a fresh one."""
    async def main():
        async with PeerClient("127.0.0.1", broker.port, "peer-test", 5.0, 10.0, idle_s=0.2) as c:
            request = ApiVersionsRequest(version=3, client_software_name="p", client_software_version="0")
            assert (await c.send(request)).error_code == 0
            first = c._stream
            assert (await c.send(request)).error_code == 0 and c._stream is first  # in use: kept
            await trio.sleep(0.3)
            assert (await c.send(request)).error_code == 0 and c._stream is not first

    trio.run(main)


def test_metadata_every_version(broker, topic_name) -> None:
    _create_topic(broker, topic_name)

    async def main():
        async with _client(broker) as c:
            for version in range(0, 14):
                r = await c.send(MetadataRequest(version=version,
                                                 topics=[MetadataRequest.MetadataRequestTopic(name=topic_name)],
                                                 allow_auto_topic_creation=False))
                assert [b.port for b in r.brokers] == [broker.port]
                (t,) = r.topics
                assert (t.name, t.error_code, [p.partition_index for p in t.partitions]) == (topic_name, 0, [0])
                if version >= 10:
                    assert t.topic_id.int != 0

    trio.run(main)


def test_fetch_returns_the_batches_on_disk_byte_for_byte(broker, topic_name) -> None:
    _create_topic(broker, topic_name)
    _produce_batches(broker, topic_name, [
        ({}, [b"plain-%d" % i for i in range(5)]),
        ({"compression.type": "lz4"}, [b"lz4-%d" % i * 20 for i in range(7)]),
        ({"compression.type": "zstd", "enable.idempotence": True}, [b"zstd-%d" % i * 30 for i in range(3)]),
        ({"compression.type": "none", "enable.idempotence": True}, [b"idem-%d" % i for i in range(4)]),
    ])
    segment = _segment(broker, topic_name)
    bounds = list(split_batches(segment))
    assert len(bounds) >= 4 and bounds[-1][1] == len(segment)
    # The second batch's last offset is inside it whatever its size (librdkafka may send a
    # producer's first record as a batch of its own): a fetch there starts with that batch.
    second_start = bounds[1][0]
    second_last = batch_bounds(segment, second_start)[2]

    async def main():
        async with _client(broker) as c:
            t = await _topic_metadata(c, topic_name)
            for version in FETCH_VERSIONS:
                r = await c.send(_fetch(version, topic_name, t.topic_id, 0))
                assert isinstance(r, FetchResponse) and r.version == version and r.error_code == 0
                if version <= 12:
                    assert r.responses[0].topic == topic_name
                else:
                    assert r.responses[0].topic_id == t.topic_id
                part = r.responses[0].partitions[0]
                assert part.high_watermark == 19
                assert _records(r) == segment, version
                # From the second batch's last offset: whole batches from that one on.
                r = await c.send(_fetch(version, topic_name, t.topic_id, second_last))
                assert _records(r) == segment[second_start:], version
                # At the log end: nothing, after max_wait_ms (0 here).
                r = await c.send(_fetch(version, topic_name, t.topic_id, 19))
                assert _records(r) == b""

    trio.run(main)


def test_fetch_of_several_megabytes(broker, topic_name) -> None:
    _create_topic(broker, topic_name)
    values = [os.urandom(200_000) for _ in range(30)]  # incompressible, 6 MB
    _produce_batches(broker, topic_name, [({"batch.size": 1_000_000}, values)])
    segment = _segment(broker, topic_name)
    assert len(segment) > 6_000_000 and len(list(split_batches(segment))) > 1

    async def main():
        async with _client(broker) as c:
            t = await _topic_metadata(c, topic_name)
            for version in (12, 18):
                r = await c.send(_fetch(version, topic_name, t.topic_id, 0))
                assert _records(r) == segment

    trio.run(main)


def test_offset_for_leader_epoch(broker, topic_name) -> None:
    _create_topic(broker, topic_name)
    _produce_batches(broker, topic_name, [({}, [b"a", b"b", b"c"])])

    async def main():
        async with _client(broker) as c:
            t = await _topic_metadata(c, topic_name)
            epoch = t.partitions[0].leader_epoch
            for version in (2, 3, 4):
                Topic = OffsetForLeaderEpochRequest.OffsetForLeaderTopic
                r = await c.send(OffsetForLeaderEpochRequest(version=version, replica_id=-1, topics=[Topic(
                    topic=topic_name, partitions=[
                        Topic.OffsetForLeaderPartition(partition=0, current_leader_epoch=-1, leader_epoch=epoch),
                        Topic.OffsetForLeaderPartition(partition=1, current_leader_epoch=-1, leader_epoch=epoch),
                    ])]))
                assert isinstance(r, OffsetForLeaderEpochResponse) and r.version == version
                known, unknown = r.topics[0].partitions
                assert (known.error_code, known.leader_epoch, known.end_offset) == (0, epoch, 3)
                assert unknown.error_code == UNKNOWN_TOPIC_OR_PARTITION

    trio.run(main)


def test_request_timeout_drops_the_connection_then_reconnects(broker, topic_name) -> None:
    """A long-poll fetch that outlasts request_timeout_s: PeerUnavailable, and the next request
    goes over a new connection (the late fetch response is never read as its answer)."""
    _create_topic(broker, topic_name)

    async def main():
        async with _client(broker, request_timeout_s=0.5) as c:
            t = await _topic_metadata(c, topic_name)
            with trio.fail_after(5):
                with pytest.raises(PeerUnavailable, match="within 0.5s"):
                    await c.send(_fetch(18, topic_name, t.topic_id, 0, max_wait_ms=3000))
            assert not c.connected
            r = await c.send(ApiVersionsRequest(version=3, client_software_name="p", client_software_version="0"))
            assert r.error_code == 0

    trio.run(main)


def test_connection_refused_is_peer_unavailable_at_once() -> None:
    async def main():
        with trio.socket.socket() as sock:  # bound, never listening: connections are refused
            await sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
            c = PeerClient("127.0.0.1", port, "peer-test", 10.0, 10.0)
            with trio.fail_after(3):  # well inside connect_timeout_s: refused, not timed out
                with pytest.raises(PeerUnavailable, match="cannot connect"):
                    await c.send(ApiVersionsRequest(version=0))

    trio.run(main)


def test_leader_killed_mid_fetch_then_back(broker_factory, tmp_path: Path) -> None:
    """kill -9 during a long-poll fetch: PeerUnavailable long before max_wait_ms; refused while
    down; after the restart on the same port the same client reconnects and reads the data."""
    proc: BrokerProcess = broker_factory()
    topic = "peer-restart"
    _create_topic(proc, topic)
    _produce_batches(proc, topic, [({}, [b"before-kill"])])

    async def main():
        async with PeerClient("127.0.0.1", proc.port, "peer-test", 5.0, 30.0) as c:
            t = await _topic_metadata(c, topic)
            failed = trio.Event()

            async def long_poll():
                with pytest.raises(PeerUnavailable):
                    await c.send(_fetch(18, topic, t.topic_id, 1, max_wait_ms=20_000))
                failed.set()

            async with trio.open_nursery() as nursery:
                nursery.start_soon(long_poll)
                await trio.testing.wait_all_tasks_blocked()  # the fetch is sent and waiting
                await trio.to_thread.run_sync(proc.kill)
                with trio.fail_after(5):
                    await failed.wait()
            assert not c.connected
            with trio.fail_after(3):
                with pytest.raises(PeerUnavailable, match="cannot connect"):
                    await c.send(ApiVersionsRequest(version=0))
            await trio.to_thread.run_sync(proc.start)
            r = await c.send(_fetch(18, topic, t.topic_id, 0))
            assert _records(r) == _segment(proc, topic)
            assert r.responses[0].partitions[0].high_watermark == 1

    trio.run(main)
