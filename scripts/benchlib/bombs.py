"""Compression bombs: small record batches that inflate to hundreds of MB, and the bench row that
sends them to a broker while a bystander produces.

A bomb is one magic-v2 batch of one record whose value is `inflated` zero bytes, compressed with
a streaming compressor (so building a 192 MB bomb never holds 192 MB). Its timestamps lie ten
days ahead, past message.timestamp.after.max.ms (one hour by default), so a broker must read the
record to refuse it: Kafka streams through it and answers INVALID_TIMESTAMP. `trailing` adds that
many zero bytes after the record (Kafka reads one byte past the declared records and answers
INVALID_RECORD); `key=None` makes the record keyless (refused on a compacted topic).

The row (`run`): on a fresh topic, a bystander producer (1 KB records at 200/s, acks=all, linger
0) runs for a quiet phase, then four bombs go out at once over raw connections (Produce v9)
while it keeps producing; RSS is sampled every 20 ms. Reported: each bomb's error code, RSS
growth (the largest sample from the bombs' start until the last answer, minus the median of the
quiet phase), and the bystander's worst ack in the quiet phase and among records sent while the
bombs were in flight."""

from __future__ import annotations

import logging
import socket
import statistics
import struct
import threading
import time
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

import crc32c
import lz4.frame
import snappy
import zstandard
from confluent_kafka import KafkaError, Producer
from kafka.protocol.producer.produce import ProduceRequest, ProduceResponse

from wirekafka.protocol.varint import encode_varint
from scripts.benchlib import workloads
from scripts.benchlib.brokers import rss_mb

if TYPE_CHECKING:
    from scripts.bench import Bench
    from scripts.benchlib.brokers import Broker

log = logging.getLogger(__name__)

GZIP, SNAPPY, LZ4, ZSTD = 1, 2, 3, 4
DAY_MS = 86_400_000
INVALID_TIMESTAMP = 32
_PIECE = 1 << 20  # zeros fed to the compressor at a time
_ZEROS = bytes(_PIECE)


def _compress_zeros(codec: int, prefix: bytes, zeros: int, suffix: bytes) -> bytes:
    """prefix + zeros zero bytes + suffix, compressed with codec piece by piece."""
    parts: list[bytes] = []
    if codec == SNAPPY:  # xerial framing, 32 KiB blocks as snappy-java writes them
        parts.append(b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1))
        pending, left = prefix, zeros
        while True:
            take = min(left, max(32 * 1024 - len(pending), 0))
            pending += bytes(take)
            left -= take
            if not left:
                pending += suffix
            out = snappy.compress(pending)
            parts.append(struct.pack(">i", len(out)) + out)
            if not left:
                return b"".join(parts)
            pending = b""
    if codec == GZIP:
        c = zlib.compressobj(9, zlib.DEFLATED, 31)
    elif codec == LZ4:
        c = lz4.frame.LZ4FrameCompressor(block_linked=False)
        parts.append(c.begin())
    elif codec == ZSTD:
        c = zstandard.ZstdCompressor(level=3).compressobj()
    else:
        raise ValueError(f"codec {codec}")
    parts.append(c.compress(prefix))
    left = zeros
    while left:
        take = min(left, _PIECE)
        parts.append(c.compress(_ZEROS[:take]))
        left -= take
    parts.append(c.compress(suffix))
    parts.append(c.flush())
    return b"".join(parts)


def bomb_batch(inflated: int, timestamp_ms: int, codec: int = ZSTD, key: bytes | None = b"bomb",
               trailing: int = 0, then_after_ms: int | None = None) -> bytes:
    """One batch of one record whose value is `inflated` zero bytes (see the module docstring);
    then_after_ms: a second, small record follows it, that many ms later (so a reader looking for
    it must get through the bomb first)."""
    key_field = encode_varint(-1) if key is None else encode_varint(len(key)) + key
    head = b"\x00" + encode_varint(0) + encode_varint(0) + key_field + encode_varint(inflated)  # attributes, deltas, key, value size
    body_len = len(head) + inflated + 1  # + the headers count
    prefix = encode_varint(body_len) + head
    suffix = encode_varint(0)
    last_delta, max_timestamp, count = 0, timestamp_ms, 1
    if then_after_ms is not None:
        second = (b"\x00" + encode_varint(then_after_ms) + encode_varint(1) + key_field + encode_varint(5)
                  + b"after" + encode_varint(0))
        suffix += encode_varint(len(second)) + second
        last_delta, max_timestamp, count = 1, timestamp_ms + then_after_ms, 2
    section = _compress_zeros(codec, prefix, inflated, suffix + bytes(trailing))
    attributes = codec
    rest = struct.pack(">hiqqqhii", attributes, last_delta, timestamp_ms, max_timestamp, -1, -1, -1, count) + section
    crc = crc32c.crc32c(rest)
    return struct.pack(">qiibI", 0, 4 + 1 + 4 + len(rest), -1, 2, crc) + rest


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("the broker closed the connection")
        buf += chunk
    return bytes(buf)


def produce_raw(host: str, port: int, topic: str, batch: bytes, timeout: float = 120.0,
                correlation_id: int = 1) -> int:
    """Send one batch to partition 0 of topic (Produce v9, acks=all) on a new connection; the
    partition's error code."""
    req = ProduceRequest(version=9, transactional_id=None, acks=-1, timeout_ms=30000, topic_data=[
        ProduceRequest.TopicProduceData(name=topic, partition_data=[
            ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=batch)])])
    req.with_header(correlation_id=correlation_id, client_id="bomb")
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(bytes(req.encode(header=True, framed=True)))
        (size,) = struct.unpack(">i", _recv_exact(sock, 4))
        payload = _recv_exact(sock, size)
    resp = ProduceResponse.decode(payload[4 + 1:], version=9)  # correlation id, empty tagged fields
    return resp.responses[0].partition_responses[0].error_code


@dataclass
class BombResult:
    codes: list[int]
    rss_growth_mb: float
    quiet_worst_ack_ms: float
    bombs_worst_ack_ms: float
    bombs_seconds: float
    bombs_acks: int  # bystander records sent while the bombs were in flight, acknowledged


class _Sampler(threading.Thread):
    """RSS of pid every 20 ms, with the time of each sample."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.samples: list[tuple[float, float]] = []
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(0.02):
            rss = rss_mb(self.pid)
            if rss is not None:
                self.samples.append((time.perf_counter(), rss))


def run(bootstrap: str, pid: int, bombs: int = 4, inflated: int = 192 << 20, quiet_seconds: float = 3.0,
        after_seconds: float = 2.0, rate: float = 200.0, topic_config: dict[str, str] | None = None,
        batch: bytes | None = None) -> BombResult:
    """The row on one broker (see the module docstring); topic_config for the bombs' topic,
    batch instead of the default bomb (a zstd one, ten days ahead)."""
    host, port = bootstrap.rsplit(":", 1)
    topic = workloads.new_topic_name("bombs")
    workloads.create_topic(bootstrap, topic, 1, config=topic_config)
    bystander_topic = workloads.new_topic_name("bystander")
    workloads.create_topic(bootstrap, bystander_topic, 1)
    if batch is None:
        batch = bomb_batch(inflated, int(time.time() * 1000) + 10 * DAY_MS)
    log.info("bomb: %d bytes", len(batch))
    acks: list[tuple[float, float]] = []  # (sent at, ack ms)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0,
                         "enable.idempotence": True})
    sampler = _Sampler(pid)
    codes: list[int] = []
    window = [0.0, 0.0]
    try:
        producer.produce(bystander_topic, b"warm-up")
        producer.flush(10)
        sampler.start()

        def bombard() -> None:
            results: list[int] = [0] * bombs

            def one(i: int) -> None:
                try:
                    results[i] = produce_raw(host, int(port), topic, batch, correlation_id=i + 1)
                except (OSError, ConnectionError) as exc:
                    log.warning("bomb %d: %s", i, exc)
                    results[i] = -1
            threads = [threading.Thread(target=one, args=(i,)) for i in range(bombs)]
            window[0] = time.perf_counter()
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            window[1] = time.perf_counter()
            codes.extend(results)

        payload = bytes(1024)
        start = time.perf_counter()
        bomber: threading.Thread | None = None
        interval = 1.0 / rate
        next_send = start
        while True:
            now = time.perf_counter()
            if bomber is None and now - start >= quiet_seconds:
                bomber = threading.Thread(target=bombard)
                bomber.start()
            if bomber is not None and not bomber.is_alive() and now - window[1] >= after_seconds:
                break
            while (wait := next_send - time.perf_counter()) > 0.001:
                producer.poll(wait)
            sent_at = time.perf_counter()

            def on_delivery(err: KafkaError | None, _msg: object, sent_at: float = sent_at) -> None:
                if err is None:
                    acks.append((sent_at, (time.perf_counter() - sent_at) * 1000))

            producer.produce(bystander_topic, payload, on_delivery=on_delivery)
            producer.poll(0)
            next_send += interval
        producer.flush(30)
    finally:
        sampler.stop.set()
        if sampler.is_alive():
            sampler.join()
        for name in (topic, bystander_topic):
            workloads.delete_topic(bootstrap, name)
    quiet = [rss for t, rss in sampler.samples if t < window[0]]
    during = [rss for t, rss in sampler.samples if window[0] <= t <= window[1] + 0.1]
    growth = (max(during) - statistics.median(quiet)) if quiet and during else float("nan")
    quiet_acks = [ms for t, ms in acks if t < window[0]]
    bomb_acks = [ms for t, ms in acks if window[0] <= t <= window[1]]
    return BombResult(codes, growth, max(quiet_acks, default=float("nan")), max(bomb_acks, default=float("nan")),
                      window[1] - window[0], len(bomb_acks))


def bench_row(bench: "Bench", inflated: int, count: int = 4) -> None:
    """The `bombs` row of scripts/bench.py on each of the bench's brokers."""
    workload = (f"{count} concurrent zstd bombs inflating to {inflated >> 20} MiB each (one record, 10 days "
                "ahead), a bystander producing 1 KB at 200/s, acks=all")

    def one(broker: "Broker") -> None:
        r = run(broker.bootstrap, broker.pid, bombs=count, inflated=inflated)
        put = bench.report.set
        refused = sum(code == INVALID_TIMESTAMP for code in r.codes)
        put(workload, "bombs refused with INVALID_TIMESTAMP", broker.name, f"{refused}/{len(r.codes)}", "", 0)
        put(workload, "broker RSS growth, MB", broker.name, r.rss_growth_mb, "lower", 1)
        put(workload, "bystander worst ack before the bombs, ms", broker.name, r.quiet_worst_ack_ms, "lower", 1)
        put(workload, "bystander worst ack while they are in flight, ms", broker.name, r.bombs_worst_ack_ms,
            "lower", 1)
        put(workload, "bombs sent -> all answered, s", broker.name, r.bombs_seconds, "lower", 2)
        if refused < len(r.codes):
            bench.report.note(f"bombs on {broker.name}: error codes {r.codes}")

    bench.each("bombs", one)
    bench.report.note("bombs: RSS growth is the largest 20 ms sample while the bombs were in flight minus the "
                      "median before them; the bystander's worst ack counts records sent in each phase.")
