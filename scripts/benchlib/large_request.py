"""Large requests: one huge Produce request beside a small acks=all producer (issue 36, item 2).

A bystander producer (confluent-kafka, acks=all, linger 0, 1 KB records at BYSTANDER_RATE) runs
on its own topic; once it is warm, one raw Produce v9 request of `size` bytes of records (a
single uncompressed batch of 1 MiB records, acks=1) goes to another topic on its own connection.
The figure is the bystander's worst produce->ack time while the big request was in flight (from
its first byte sent to its answer), with the big request's own round trip for scale.

The broker must accept the frame: socket.request.max.bytes and message.max.bytes (and the big
topic's max.message.bytes) above `size`; BROKER_OVERRIDES has them for 100 MB.

`send_produce_requests` is the load of the memory-pool test (compat-tests/test_large_requests.py):
many connections each sending one large request at once, every answer read back."""

from __future__ import annotations

import logging
import socket
import struct
import threading
import time
from dataclasses import dataclass
from typing import Callable

from confluent_kafka import KafkaError, Producer
from kafka.protocol.producer.produce import ProduceRequest, ProduceResponse

from scripts.benchlib import workloads
from scripts.benchlib.brokers import Broker
from wirekafka.protocol.records import build_batch

log = logging.getLogger(__name__)

LIMIT = 200 * 1024 * 1024
BROKER_OVERRIDES = {"socket.request.max.bytes": str(LIMIT), "message.max.bytes": str(LIMIT)}
BYSTANDER_RATE = 200.0  # records/s
RECORD = 1 << 20
VERSION = 9


@dataclass(frozen=True)
class LargeRequestFigures:
    request_bytes: int        # the big Produce frame's size
    round_trip_s: float       # its first byte sent -> its answer read
    error_code: int           # its partition's error code
    bystander_worst_ms: float  # the bystander's worst produce->ack among records sent during it
    bystander_p50_ms: float    # the bystander's median over the same window
    bystander_samples: int
    bystander_failed: int      # bystander records not acknowledged (any error)


def produce_frame(topic: str, size: int, correlation_id: int = 1, acks: int = 1) -> bytes:
    """A framed Produce v9 request: one partition, one batch of `size` bytes of 1 MiB records."""
    value = b"\xa5" * RECORD
    now = int(time.time() * 1000)
    batch = build_batch([(None, value[:min(RECORD, size - i)], now) for i in range(0, size, RECORD)])
    T = ProduceRequest.TopicProduceData
    request = ProduceRequest(version=VERSION, transactional_id=None, acks=acks, timeout_ms=60_000, topic_data=[
        T(name=topic, partition_data=[T.PartitionProduceData(index=0, records=batch)])])
    request.with_header(correlation_id=correlation_id, client_id="large-request")
    return bytes(request.encode(header=True, framed=True))


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise ConnectionError("the broker closed the connection")
        out += chunk
    return bytes(out)


def read_produce_answer(sock: socket.socket) -> int:
    """The one partition's error code from a Produce v9 response on sock."""
    (size,) = struct.unpack(">i", _recv_exact(sock, 4))
    payload = _recv_exact(sock, size)
    response = ProduceResponse.decode(payload[5:], version=VERSION)  # correlation id, empty header tags
    return int(response.responses[0].partition_responses[0].error_code)


def send_produce_requests(host: str, port: int, frames: list[bytes], timeout: float) -> list[int]:
    """Send each frame on a connection of its own, all at once (one thread each), and read every
    answer: the error codes, in the frames' order (a missing answer raises)."""
    codes: list[int | None] = [None] * len(frames)
    failures: list[BaseException] = []

    def one(i: int) -> None:
        try:
            with socket.create_connection((host, port), timeout=timeout) as sock:
                sock.sendall(frames[i])
                codes[i] = read_produce_answer(sock)
        except BaseException as exc:  # noqa: BLE001 - reported by the caller's check below
            failures.append(exc)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(frames))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    if failures:
        raise RuntimeError(f"{len(failures)} of {len(frames)} large requests failed: {failures[0]!r}")
    if any(c is None for c in codes):
        raise TimeoutError("a large request was not answered in time")
    return [c for c in codes if c is not None]


def run(bootstrap: str, size: int, timeout: float = 120.0) -> LargeRequestFigures:
    """One `size`-byte Produce request beside the bystander (see the module's docstring)."""
    host, port = bootstrap.rsplit(":", 1)
    big_topic = workloads.new_topic_name("large")
    small_topic = workloads.new_topic_name("bystander")
    workloads.create_topic(bootstrap, big_topic, 1, config={"max.message.bytes": str(LIMIT)})
    workloads.create_topic(bootstrap, small_topic, 1)
    frame = produce_frame(big_topic, size)
    samples: list[tuple[float, float]] = []  # (sent at, ms to ack)
    failed: list[KafkaError] = []
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0, "log_level": 3})
    window: list[float] = []
    outcome: list[int] = []
    try:
        producer.produce(small_topic, b"warm-up")
        producer.flush(10)

        def big() -> None:
            with socket.create_connection((host, int(port)), timeout=timeout) as sock:
                window.append(time.perf_counter())
                sock.sendall(frame)
                outcome.append(read_produce_answer(sock))
                window.append(time.perf_counter())

        sender = threading.Thread(target=big, daemon=True)
        launched = False
        interval = 1.0 / BYSTANDER_RATE
        next_send = time.perf_counter()
        started = next_send
        deadline = started + timeout
        while time.perf_counter() < deadline:
            if not launched and time.perf_counter() - started > 1.0:
                sender.start()  # after a second of bystander traffic
                launched = True
            if launched and not sender.is_alive() and len(window) < 2:
                break  # the big request failed: reported below
            if len(window) == 2 and time.perf_counter() - window[1] > 1.0:
                break  # and a second after the answer
            while (wait := next_send - time.perf_counter()) > 0.001:
                producer.poll(wait)
            sent_at = time.perf_counter()

            def on_delivery(err: KafkaError | None, _msg: object, sent_at: float = sent_at) -> None:
                if err is None:
                    samples.append((sent_at, (time.perf_counter() - sent_at) * 1000))
                else:
                    failed.append(err)

            producer.produce(small_topic, b"b" * 1024, on_delivery=on_delivery)
            producer.poll(0)
            next_send += interval
        if producer.flush(30):
            raise TimeoutError("bystander records still unacknowledged 30 s after the last was sent")
        sender.join(timeout)
    finally:
        for topic in (big_topic, small_topic):
            workloads.delete_topic(bootstrap, topic)
    if len(window) < 2 or not outcome:
        raise TimeoutError(f"the {size:,}-byte request was not answered within {timeout:g} s")
    during = sorted(ms for at, ms in samples if window[0] <= at <= window[1])
    worst = max([ms for at, ms in samples if window[0] <= at <= window[1]]
                + [ms for at, ms in samples if at < window[0] and at + ms / 1000 > window[0]], default=0.0)
    log.info("%s: %d-byte request answered in %.2f s (error %d); bystander worst %.1f ms over %d samples, "
             "%d failed", bootstrap, len(frame), window[1] - window[0], outcome[0], worst, len(during), len(failed))
    return LargeRequestFigures(len(frame), window[1] - window[0], outcome[0], worst,
                               during[len(during) // 2] if during else 0.0, len(during), len(failed))


def on_fresh_broker(make_broker: Callable[[], Broker], size: int, timeout: float) -> tuple[str, LargeRequestFigures]:
    """run() on a broker of its own, started with BROKER_OVERRIDES by make_broker and stopped
    after: the broker's name and the figures."""
    broker = make_broker()
    broker.start()
    try:
        return broker.name, run(broker.bootstrap, size, timeout)
    finally:
        broker.stop()
