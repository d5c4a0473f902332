"""confluent-kafka (librdkafka) against a live wirekafka: the basic round trip."""

from __future__ import annotations

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


def test_create_produce_consume(broker, topic_name):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic_name, 2, 1)])[topic_name].result(10)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True})
    for i in range(100):
        producer.produce(topic_name, key=b"k%d" % i, value=b"v%d" % i, partition=i % 2)
    assert producer.flush(10) == 0
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "smoke",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic_name, p, 0) for p in range(2)])
    got = {}
    for _ in range(200):
        msg = consumer.poll(0.5)
        if msg is not None and not msg.error():
            got[(msg.partition(), msg.offset())] = (msg.key(), msg.value())
        if len(got) == 100:
            break
    consumer.close()
    assert len(got) == 100
    for p in range(2):
        offsets = sorted(o for (pp, o) in got if pp == p)
        assert offsets == list(range(50))
    assert got[(1, 0)] == (b"k1", b"v1")
