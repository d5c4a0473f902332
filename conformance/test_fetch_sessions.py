"""Incremental fetch sessions (KIP-227): creation, incremental answers, forgetting, the session
errors and the order of a session's partitions. Session ids are random on both brokers; the
comparison pairs them by order of appearance (compare.ALLOCATED)."""

from __future__ import annotations

from typing import Any

import pytest
from kafka.protocol.consumer.fetch import FetchRequest

from conformance.harness.scenarios import batch, produce, record_offsets
from conformance.harness.wire import Connection, create_topic, unique

FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH, FETCH_SESSION_TOPIC_ID_ERROR = 70, 71, 106
UNKNOWN_SERVER_ERROR, UNKNOWN_TOPIC_OR_PARTITION = -1, 3
VERSIONS = [12, 13, 18]  # by name, by topic id, the newest


class Topic:
    """A topic as a fetch names it: by name before v13, by id from v13."""

    def __init__(self, conn: Connection, partitions: int = 1) -> None:
        self.name = unique()
        self.id = create_topic(conn, self.name, partitions=partitions).topic_id


def fetch(conn: Connection, version: int, session_id: int, epoch: int, topic: Topic,
          offsets: dict[int, int], forget: list[int] | None = None, max_bytes: int = 1 << 20) -> Any:
    """A Fetch in a session: offsets names the partitions added or changed (partition -> fetch
    offset), forget those to drop from the session."""
    by_id = version >= 13
    name, tid = (None, topic.id) if by_id else (topic.name, None)
    req = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=max_bytes, isolation_level=0,
                       session_id=session_id, session_epoch=epoch,
                       topics=[FetchRequest.FetchTopic(topic=name, topic_id=tid, partitions=[
                           FetchRequest.FetchTopic.FetchPartition(
                               partition=p, current_leader_epoch=-1, fetch_offset=offset, last_fetched_epoch=-1,
                               log_start_offset=-1, partition_max_bytes=1 << 20)
                           for p, offset in offsets.items()])] if offsets else [],
                       forgotten_topics_data=[FetchRequest.ForgottenTopic(topic=name, topic_id=tid, partitions=forget)]
                       if forget else [], rack_id="")
    return conn.call(req, version)


def answered(response: Any) -> dict[int, Any]:
    """The partitions an answer lists, by index, in order."""
    return {p.partition_index: p for t in response.responses for p in t.partitions}


@pytest.mark.parametrize("version", VERSIONS)
def test_an_incremental_fetch_answers_only_partitions_with_news(target, version):
    with Connection(target.bootstrap) as conn:
        topic = Topic(conn, partitions=3)
        produce(conn, topic.name, batch([b"a"]), partition=0)
        full = fetch(conn, version, 0, 0, topic, {0: 0, 1: 0, 2: 0})
        assert full.error_code == 0 and full.session_id != 0
        assert list(answered(full)) == [0, 1, 2]
        sid = full.session_id
        quiet = fetch(conn, version, sid, 1, topic, {0: 1})  # the client moved past what it read
        assert (quiet.error_code, quiet.session_id, quiet.responses) == (0, sid, [])
        produce(conn, topic.name, batch([b"b", b"c"]), partition=2)
        news = fetch(conn, version, sid, 2, topic, {})
        parts = answered(news)
        assert list(parts) == [2]
        assert parts[2].high_watermark == 2 and record_offsets(parts[2].records) == [0, 1]
        # not told a new position, the broker reads partition 2 where it did: the same records again
        again = answered(fetch(conn, version, sid, 3, topic, {}))
        assert list(again) == [2] and record_offsets(again[2].records) == [0, 1]


@pytest.mark.parametrize("version", VERSIONS)
def test_partitions_added_and_forgotten(target, version):
    with Connection(target.bootstrap) as conn:
        topic = Topic(conn, partitions=3)
        sid = fetch(conn, version, 0, 0, topic, {0: 0}).session_id
        added = fetch(conn, version, sid, 1, topic, {1: 0, 2: 0})  # new partitions are news once
        assert list(answered(added)) == [1, 2]
        produce(conn, topic.name, batch([b"x"]), partition=0)
        produce(conn, topic.name, batch([b"y"]), partition=1)
        kept = fetch(conn, version, sid, 2, topic, {}, forget=[0])
        assert list(answered(kept)) == [1]
        emptied = fetch(conn, version, sid, 3, topic, {}, forget=[1, 2])  # nothing left: closed
        assert (emptied.error_code, emptied.session_id, emptied.responses) == (0, 0, [])
        gone = fetch(conn, version, sid, 4, topic, {})
        assert (gone.error_code, gone.session_id, gone.responses) == (FETCH_SESSION_ID_NOT_FOUND, 0, [])


@pytest.mark.parametrize("version", VERSIONS)
def test_partitions_that_returned_records_go_to_the_end(target, version):
    with Connection(target.bootstrap) as conn:
        topic = Topic(conn, partitions=3)
        for p in range(3):
            produce(conn, topic.name, batch([b"v" * 50]), partition=p)
        # max_bytes 1: only the first partition read returns its one batch (KIP-74)
        full = fetch(conn, version, 0, 0, topic, {0: 0, 1: 0, 2: 0}, max_bytes=1)
        assert [p for p, a in answered(full).items() if a.records] == [0]
        sid, order = full.session_id, []
        for epoch in range(1, 5):
            parts = answered(fetch(conn, version, sid, epoch, topic, {}, max_bytes=1))
            assert list(parts) == [p for p, a in parts.items() if a.records]
            order.extend(parts)
        assert order == [0, 1, 2, 0]


@pytest.mark.parametrize("version", VERSIONS)
def test_errors_are_answered_every_time(target, version):
    with Connection(target.bootstrap) as conn:
        topic = Topic(conn, partitions=1)
        full = fetch(conn, version, 0, 0, topic, {0: 0, 7: 0})
        assert [(p, a.error_code) for p, a in answered(full).items()] == [(0, 0), (7, UNKNOWN_TOPIC_OR_PARTITION)]
        for epoch in (1, 2):
            again = fetch(conn, version, full.session_id, epoch, topic, {})
            assert [(p, a.error_code) for p, a in answered(again).items()] == [(7, UNKNOWN_TOPIC_OR_PARTITION)]


@pytest.mark.parametrize("version", VERSIONS)
def test_session_errors(target, version):
    with Connection(target.bootstrap) as conn:
        topic = Topic(conn, partitions=1)
        sid = fetch(conn, version, 0, 0, topic, {0: 0}).session_id
        assert fetch(conn, version, sid, 1, topic, {}).error_code == 0
        for stale in (1, 5):  # epoch 1 is spent, 5 is ahead: the session expects 2
            wrong = fetch(conn, version, sid, stale, topic, {})
            assert (wrong.error_code, wrong.session_id, wrong.responses) == (INVALID_FETCH_SESSION_EPOCH, 0, [])
        assert fetch(conn, version, sid, 2, topic, {}).error_code == 0  # errors do not move the epoch
        other = 12 if version >= 13 else 13
        mixed = fetch(conn, other, sid, 3, topic, {})
        assert (mixed.error_code, mixed.responses) == (FETCH_SESSION_TOPIC_ID_ERROR, [])


@pytest.mark.parametrize("version", VERSIONS)
def test_a_full_fetch_closes_the_session_it_names(target, version):
    with Connection(target.bootstrap) as conn:
        topic = Topic(conn, partitions=1)
        first = fetch(conn, version, 0, 0, topic, {0: 0}).session_id
        renewed = fetch(conn, version, first, 0, topic, {0: 0})  # epoch 0: a new session instead
        assert renewed.session_id not in (0, first) and list(answered(renewed)) == [0]
        assert fetch(conn, version, first, 1, topic, {}).error_code == FETCH_SESSION_ID_NOT_FOUND
        closed = fetch(conn, version, renewed.session_id, -1, topic, {0: 0})  # epoch -1: no session
        assert (closed.error_code, closed.session_id, list(answered(closed))) == (0, 0, [0])
        assert fetch(conn, version, renewed.session_id, 1, topic, {}).error_code == FETCH_SESSION_ID_NOT_FOUND


@pytest.mark.parametrize("version", [12, 13])
def test_a_session_id_outside_every_shard_fails_the_request(target, version):
    with Connection(target.bootstrap) as conn:
        topic = Topic(conn, partitions=2)
        answer = fetch(conn, version, 2**31 - 1, 1, topic, {0: 0, 1: 0})
        assert (answer.error_code, answer.session_id) == (UNKNOWN_SERVER_ERROR, 2**31 - 1)  # echoed
        if version < 13:
            assert [(p, a.error_code) for p, a in answered(answer).items()] == [(0, -1), (1, -1)]
        else:
            assert answer.responses == []
