"""offsets.topic.compression.codec against Kafka 4.3.1: the group coordinator writes every batch of
__consumer_offsets with the configured codec — a simple consumer's commit, a group's metadata
record once its leader syncs, and a transactional offset commit — and the offsets read back
through OffsetFetch. The pair is this module's own, one per codec id (gzip, snappy, lz4, zstd),
with one __consumer_offsets partition."""

from __future__ import annotations

import pytest
from kafka.protocol.consumer.group import JoinGroupRequest, OffsetCommitRequest, OffsetFetchRequest, SyncGroupRequest

from conformance.harness import transcript
from conformance.harness.own_brokers import own_broker_pair
from conformance.harness.scenarios import fetch
from conformance.harness.wire import Connection, create_topic, ensure_group_coordinator, metadata, retry_transient, unique
from wirekafka.protocol import records

CODECS = {"gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
_Commit = OffsetCommitRequest.OffsetCommitRequestTopic
_FetchGroup = OffsetFetchRequest.OffsetFetchRequestGroup


def _pair(codec: int) -> tuple:
    """The module-scoped wirekafka and Kafka fixtures of one codec."""
    own_wirekafka, own_kafka, _ = own_broker_pair({"offsets.topic.compression.codec": str(codec),
                                                   "offsets.topic.num.partitions": "1",
                                                   "group.initial.rebalance.delay.ms": "0"})
    return own_wirekafka, own_kafka


gzip_wirekafka, gzip_kafka = _pair(CODECS["gzip"])
snappy_wirekafka, snappy_kafka = _pair(CODECS["snappy"])
lz4_wirekafka, lz4_kafka = _pair(CODECS["lz4"])
zstd_wirekafka, zstd_kafka = _pair(CODECS["zstd"])


@pytest.fixture
def target(request: pytest.FixtureRequest) -> str:
    """The target's name (conftest parametrizes it); each scenario picks its codec's broker."""
    return request.param


def _offsets_topic_codecs(conn: Connection) -> list[int]:
    """The codec of every data batch in __consumer_offsets, oldest first (read quietly: the raw
    batches hold each broker's timestamps and member ids)."""
    codecs: list[int] = []
    with transcript.unrecorded():
        position = 0
        while True:
            answer = fetch(conn, "__consumer_offsets", position)
            data = answer.records or b""
            for start, _ in records.split_batches(data):
                header = records.parse_header(data, start)
                position = header.next_offset
                if not header.is_control:
                    codecs.append(header.compression)
            if position >= answer.high_watermark or not data:
                return codecs


def _commit(conn: Connection, group: str, topic: str, offset: int, generation: int = -1, member: str = "") -> int:
    req = OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=generation, member_id=member,
                              group_instance_id=None, retention_time_ms=-1, topics=[_Commit(
                                  name=topic, topic_id=None, partitions=[_Commit.OffsetCommitRequestPartition(
                                      partition_index=0, committed_offset=offset, committed_leader_epoch=-1,
                                      committed_metadata="")])])
    return conn.call(req, 8).topics[0].partitions[0].error_code


def _committed(conn: Connection, group: str, topic: str) -> int:
    req = OffsetFetchRequest(groups=[_FetchGroup(group_id=group, member_id=None, member_epoch=-1, topics=[
        _FetchGroup.OffsetFetchRequestTopics(name=topic, topic_id=None, partition_indexes=[0])])],
        require_stable=True)
    return conn.call(req, 9).groups[0].topics[0].partitions[0].committed_offset


def _scenario(broker, codec_name: str) -> None:
    group, topic = unique("grp"), unique("topic")
    with Connection(broker.bootstrap) as conn:
        create_topic(conn, topic)
        ensure_group_coordinator(conn, group)
        metadata(conn, ["__consumer_offsets"])
        # a simple consumer's commit; retried while the coordinator still loads its partition, as
        # clients retry COORDINATOR_LOAD_IN_PROGRESS (real Kafka under load answered it once)
        assert retry_transient(lambda: _commit(conn, group, topic, 5), lambda code: code) == 0
        joined = conn.call(JoinGroupRequest(group_id=group, session_timeout_ms=10000, rebalance_timeout_ms=10000,
                                            member_id="", group_instance_id=None, protocol_type="consumer",
                                            protocols=[JoinGroupRequest.JoinGroupRequestProtocol(
                                                name="range", metadata=b"sub")]), 3)
        assert joined.error_code == 0
        synced = conn.call(SyncGroupRequest(group_id=group, generation_id=joined.generation_id,
                                            member_id=joined.member_id, group_instance_id=None,
                                            assignments=[SyncGroupRequest.SyncGroupRequestAssignment(
                                                member_id=joined.member_id, assignment=b"a")]), 3)
        assert synced.error_code == 0
        assert _commit(conn, group, topic, 9, joined.generation_id, joined.member_id) == 0
        assert _committed(conn, group, topic) == 9
        codecs = _offsets_topic_codecs(conn)
        assert len(codecs) >= 3 and set(codecs) == {CODECS[codec_name]}, codecs


@pytest.mark.parametrize("codec", list(CODECS))
def test_every_coordinator_batch_has_the_codec(target, codec, request):
    _scenario(request.getfixturevalue(f"{codec}_{target}"), codec)
