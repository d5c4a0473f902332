"""aiokafka session: topic creation through its admin client, a producer, a group consumer."""

from __future__ import annotations

import asyncio

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from conformance.sessions import Session, expect

TOPIC, GROUP = "aio-events", "aio-events-readers"
RECORDS = [(f"aio-key-{i}".encode(), f"aio-value-{i}".encode()) for i in range(6)]


async def _session(bootstrap: str) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        response = await admin.create_topics([NewTopic(TOPIC, 2, 1)])
        expect(all(t[1] == 0 for t in response.topic_errors), f"create failed: {response}")
    finally:
        await admin.close()
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    await producer.start()
    try:
        for i, (key, value) in enumerate(RECORDS):
            await producer.send(TOPIC, value=value, key=key, partition=i % 2)
        await producer.flush()
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(TOPIC, bootstrap_servers=bootstrap, group_id=GROUP, auto_offset_reset="earliest",
                                enable_auto_commit=False, fetch_max_wait_ms=200, heartbeat_interval_ms=1000,
                                session_timeout_ms=10000)
    await consumer.start()
    try:
        got = []
        async with asyncio.timeout(20):
            while len(got) < len(RECORDS):
                for batch in (await consumer.getmany(timeout_ms=200)).values():
                    got += [(m.key, m.value) for m in batch]
        expect(sorted(got) == sorted(RECORDS), f"consumed {got}")
        await consumer.commit()
    finally:
        await consumer.stop()


def produce_consume(bootstrap: str, _kafka: str) -> None:
    """Create a two-partition topic with the admin client, produce to both partitions, read
    everything back in a group and commit."""
    asyncio.run(_session(bootstrap))


SESSIONS = [Session("aiokafka_produce_consume", "aiokafka", produce_consume.__doc__ or "", produce_consume)]
