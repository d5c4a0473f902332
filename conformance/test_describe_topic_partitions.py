"""DescribeTopicPartitions (v0) against Kafka 4.3.1: the topics asked for in name order with their
partitions (leader, epoch, replicas, ISR, empty ELR lists, every authorized operation), unknown
and invalid names, and paging: response_partition_limit cutting inside a topic (the cursor names
the next partition) or at a topic's end (the next topic's partition 0), a request resuming from
a cursor, and the cursor errors (a topic not asked for, a negative partition)."""

from __future__ import annotations

from kafka.protocol.admin.topics import DescribeTopicPartitionsRequest

from conformance.harness.wire import Connection, create_topic, unique

UNKNOWN_TOPIC_OR_PARTITION, INVALID_TOPIC_EXCEPTION, INVALID_REQUEST = 3, 17, 42


def _describe(conn: Connection, names: list[str], limit: int = 2000, cursor: tuple[str, int] | None = None):
    request = DescribeTopicPartitionsRequest(
        topics=[DescribeTopicPartitionsRequest.TopicRequest(name=n) for n in names], response_partition_limit=limit,
        cursor=None if cursor is None else DescribeTopicPartitionsRequest.Cursor(topic_name=cursor[0],
                                                                                   partition_index=cursor[1]))
    return conn.call(request, 0)


def _shape(answer) -> tuple[list, tuple[str, int] | None]:
    topics = [(t.name, t.error_code, [p.partition_index for p in t.partitions]) for t in answer.topics]
    cursor = answer.next_cursor
    return topics, None if cursor is None else (cursor.topic_name, cursor.partition_index)


def test_topics_in_name_order_with_their_partitions(target):
    base = unique("dtp")
    a, b, missing = f"{base}-a", f"{base}-b", f"{base}-missing"
    with Connection(target.bootstrap) as conn:
        create_topic(conn, a, partitions=3)
        create_topic(conn, b, partitions=2)
        answer = _describe(conn, [missing, b, a, "bad/name"])
        assert _shape(answer) == ([("bad/name", INVALID_TOPIC_EXCEPTION, []), (a, 0, [0, 1, 2]), (b, 0, [0, 1]),
                                   (missing, UNKNOWN_TOPIC_OR_PARTITION, [])], None)
        first = answer.topics[1].partitions[0]
        assert first.leader_id >= 0 and first.replica_nodes == first.isr_nodes == [first.leader_id]
        assert (first.eligible_leader_replicas, first.last_known_elr, first.offline_replicas) == ([], [], [])


def test_paging_with_the_partition_limit_and_the_cursor(target):
    base = unique("dtp-page")
    a, b = f"{base}-a", f"{base}-b"
    with Connection(target.bootstrap) as conn:
        create_topic(conn, a, partitions=3)
        create_topic(conn, b, partitions=2)
        assert _shape(_describe(conn, [a, b], limit=2)) == ([(a, 0, [0, 1])], (a, 2))
        assert _shape(_describe(conn, [a, b], limit=2, cursor=(a, 2))) == ([(a, 0, [2]), (b, 0, [0])], (b, 1))
        assert _shape(_describe(conn, [a, b], limit=3)) == ([(a, 0, [0, 1, 2])], (b, 0))
        assert _shape(_describe(conn, [a, b], limit=0, cursor=(b, 1))) == ([(b, 0, [1])], None)  # at least one
        assert _shape(_describe(conn, [a, b], cursor=(b, 5))) == ([(b, 0, [])], None)


def test_cursor_errors(target):
    base = unique("dtp-cursor")
    with Connection(target.bootstrap) as conn:
        create_topic(conn, f"{base}-a")
        for cursor in ((f"{base}-zzz", 0), (f"{base}-a", -1)):
            answer = _describe(conn, [f"{base}-a"], cursor=cursor)
            assert _shape(answer) == ([(f"{base}-a", INVALID_REQUEST, [])], None)
