"""A log directory that fills up (issue 34, hole 7), as Kafka's LogDirFailureChannel handles it:
the write that hit the full disk is refused (KAFKA_STORAGE_ERROR), never acknowledged; the
directory goes offline and, it being the broker's only one, the broker stops with a non-zero
status. After space returns and a restart every acknowledged record reads back at its offset,
no offset is used twice, and the broker takes writes again.

The full disk is the broker's own RLIMIT_FSIZE (testsupport/broker_process.py): the segment
write is cut short at the limit, then fails with EFBIG, as a full file system cuts it short then
fails with ENOSPC. Failed before the fix: the broker went on serving after the failed write,
with the short write's bytes left in the segment behind its in-memory end."""

from __future__ import annotations

import logging
import time

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from client_support import read_confluent

pytestmark = pytest.mark.timeout(150)

_LOG = logging.getLogger("librdkafka")
LIMIT = 1 << 20  # the largest file the broker may write
VALUE = 2000  # bytes per record: a segment reaches LIMIT after some 500 records


def _produce_until_refused(bootstrap: str, topic: str, count: int) -> tuple[list[tuple[int, bytes]], list[KafkaError]]:
    """acks=all, one record at a time in flight: (offset, value) of each acknowledged record, and
    the errors of those refused."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                         "linger.ms": 0, "message.timeout.ms": 8000, "retry.backoff.ms": 200,
                         "logger": _LOG})
    acked: list[tuple[int, bytes]] = []
    errors: list[KafkaError] = []

    def on_delivery(err, msg) -> None:
        if err is None:
            acked.append((msg.offset(), msg.value()))
        else:
            errors.append(err)

    for i in range(count):
        value = b"%06d-" % i + b"x" * (VALUE - 7)
        producer.produce(topic, value=value, partition=0, on_delivery=on_delivery)
        producer.flush(20)
        if errors:
            break
    producer.flush(20)
    return acked, errors


def test_a_full_disk_refuses_the_write_and_loses_no_acknowledged_record(broker_factory, topic_name):
    broker = broker_factory()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap, "logger": _LOG})  # alive until the result
    admin.create_topics([NewTopic(topic_name, 1, 1)])[topic_name].result(15)
    broker.stop()
    broker.file_size_limit = LIMIT
    broker.start()

    acked, errors = _produce_until_refused(broker.bootstrap, topic_name, 2 * LIMIT // VALUE)
    assert errors, "the disk never filled: nothing was tested"
    assert len(acked) > 100
    assert [offset for offset, _ in acked] == list(range(len(acked))), "acknowledged offsets are dense"
    deadline = time.monotonic() + 30
    while broker.alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not broker.alive(), "a broker whose only log directory failed stops"
    assert broker.proc is not None and broker.proc.returncode == 1
    assert "have failed" in broker.log_tail()

    broker.file_size_limit = None  # space is back
    broker.start()
    got = read_confluent(broker.bootstrap, topic_name, {0: len(acked)})
    assert [(g.offset, g.value) for g in got] == acked
    more, refused = _produce_until_refused(broker.bootstrap, topic_name, 5)
    assert not refused and [offset for offset, _ in more] == list(range(len(acked), len(acked) + 5))
    got = read_confluent(broker.bootstrap, topic_name, {0: len(acked) + 5})
    assert [(g.offset, g.value) for g in got] == acked + more
