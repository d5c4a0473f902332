"""Stock clients read what a topic's compression.type makes the broker store: a producer's
batches recompressed with the topic's codec (or decompressed for "uncompressed") reach
confluent-kafka and kafka-python consumers whole, keys, values, headers and timestamps included."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer

from client_support import log_batches

COUNT = 50


@pytest.mark.parametrize("topic_codec, producer_codec", [("zstd", "none"), ("lz4", "gzip"), ("gzip", "zstd"),
                                                         ("snappy", "lz4"), ("uncompressed", "zstd")])
def test_consumers_read_recompressed_batches(broker, topic_name, topic_codec, producer_codec) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic_name, 1, 1, config={"compression.type": topic_codec})])[topic_name].result(10)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "compression.type": producer_codec, "linger.ms": 50})
    for i in range(COUNT):
        producer.produce(topic_name, key=b"k%03d" % i, value=b"value-%03d" % i * 20, headers=[("n", b"%d" % i)],
                         timestamp=1_700_000_000_000 + i)
    assert producer.flush(15) == 0
    codecs = {"uncompressed": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
    assert {h.compression for h in log_batches(broker.data_dir, topic_name, 0)} == {codecs[topic_codec]}

    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": topic_name, "auto.offset.reset": "earliest"})
    consumer.subscribe([topic_name])
    seen = []
    deadline = time.monotonic() + 30
    while len(seen) < COUNT and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            seen.append((msg.key(), msg.value(), msg.headers(), msg.timestamp()[1]))
    consumer.close()
    assert seen == [(b"k%03d" % i, b"value-%03d" % i * 20, [("n", b"%d" % i)], 1_700_000_000_000 + i)
                    for i in range(COUNT)]

    reader = KafkaConsumer(topic_name, bootstrap_servers=broker.bootstrap, auto_offset_reset="earliest",
                           consumer_timeout_ms=5000)
    values = [(m.key, m.value, m.timestamp) for m in reader]
    reader.close()
    assert values == [(b"k%03d" % i, b"value-%03d" % i * 20, 1_700_000_000_000 + i) for i in range(COUNT)]
