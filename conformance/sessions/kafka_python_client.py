"""kafka-python session: a producer that auto-creates its topic, then a group consumer."""

from __future__ import annotations

import time

from kafka import KafkaConsumer, KafkaProducer

from conformance.sessions import Session, expect

TOPIC, GROUP = "kp-events", "kp-events-readers"
RECORDS = [(f"kp-key-{i}".encode(), f"kp-value-{i}".encode()) for i in range(8)]


def produce_consume(bootstrap: str, _kafka: str) -> None:
    """Produce to a topic the broker auto-creates on the producer's Metadata request, then a
    group consumer reads everything, commits and leaves."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, request_timeout_ms=10000)
    futures = [producer.send(TOPIC, key=k, value=v, headers=[("n", k)]) for k, v in RECORDS]
    producer.flush(20)
    offsets = [f.get(10).offset for f in futures]
    producer.close(5)
    expect(offsets == list(range(len(RECORDS))), f"offsets {offsets}")
    consumer = KafkaConsumer(TOPIC, bootstrap_servers=bootstrap, group_id=GROUP, auto_offset_reset="earliest",
                             enable_auto_commit=False, fetch_max_wait_ms=200, heartbeat_interval_ms=1000,
                             session_timeout_ms=10000)
    got: list[tuple[bytes, bytes]] = []
    deadline = time.monotonic() + 20
    while len(got) < len(RECORDS) and time.monotonic() < deadline:
        for batch in consumer.poll(200).values():
            got += [(m.key, m.value) for m in batch]
    expect(got == RECORDS, f"consumed {got}")
    consumer.commit()
    consumer.close()


SESSIONS = [Session("kafka_python_produce_consume", "kafka-python", produce_consume.__doc__ or "",
                    produce_consume)]
