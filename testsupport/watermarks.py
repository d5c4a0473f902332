"""High watermarks read after a failover as Kafka's own consumer reads them: a ListOffsets answered
NOT_LEADER_FOR_PARTITION or LEADER_NOT_AVAILABLE (the leadership still moving: a broker just
restarted takes its preferred partitions back) is asked again once the client has learnt the new
leader, where librdkafka's get_watermark_offsets gives up at the first such answer. For tests that
read a topic right after killing and restarting brokers, on either cluster."""

from __future__ import annotations

import time
from typing import Iterable

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

MOVING_LEADER = frozenset((KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE))
RETRY_S = 0.2


def high_watermarks(consumer: Consumer, topic: str, partitions: Iterable[int], timeout: float = 30) -> dict[int, int]:
    """Each partition's high watermark, retried while its leader moves, for at most timeout."""
    deadline = time.monotonic() + timeout
    ends: dict[int, int] = {}
    for p in partitions:
        while True:
            try:
                ends[p] = consumer.get_watermark_offsets(TopicPartition(topic, p),
                                                         timeout=max(1.0, deadline - time.monotonic()))[1]
                break
            except KafkaException as exc:
                if exc.args[0].code() not in MOVING_LEADER or time.monotonic() > deadline:
                    raise
                time.sleep(RETRY_S)
    return ends
