"""A topic's compression.type, as Kafka 4.3.1 applies it: "producer" stores batches as sent; a
codec (or "uncompressed") different from the producer's has the broker decompress the batch and
store it recompressed, with the same offsets, producer fields, timestamps and records. What the
consumer gets back is compared decoded (a compressed batch's length and CRC depend on the
compressing library: conformance/harness/compare.py)."""

from __future__ import annotations

import pytest

from conformance.harness.scenarios import batch, fetch, produce
from conformance.harness.wire import Connection, create_topic, unique
from wirekafka.protocol import records

CODECS = {"uncompressed": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
VALUES = [b"alpha" * 40, b"beta" * 40, None, b"delta"]


def _stored(conn: Connection, topic: str) -> list[tuple[int, int, int, int, list]]:
    """Per stored batch: codec, base offset, record count, last offset delta, and the records
    (offset delta, timestamp, key, value, headers) as a consumer decodes them."""
    from kafka.record.default_records import DefaultRecordBatch

    data = fetch(conn, topic, 0).records or b""
    out = []
    view = memoryview(data)
    for start, end in records.split_batches(view):
        raw = bytes(view[start:end])
        header = records.parse_header(raw)
        decoded = DefaultRecordBatch(raw)
        rows = [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in decoded]
        out.append((header.compression, header.base_offset, header.records_count, header.last_offset_delta, rows))
    return out


@pytest.mark.parametrize("topic_codec", ["producer", *CODECS])
@pytest.mark.parametrize("sent_codec", [0, 3, 4])
def test_batches_are_stored_with_the_topics_codec(target, topic_codec, sent_codec):
    topic = unique()
    with Connection(target.bootstrap) as conn:
        create_topic(conn, topic, configs={"compression.type": topic_codec})
        entries = [(b"k%d" % i, v, 1_700_000_000_000 + 7 * i) for i, v in enumerate(VALUES)]
        sent = records.build_batch(entries, compression=sent_codec, headers=[("h", b"x")])
        assert produce(conn, topic, sent).error_code == 0
        assert produce(conn, topic, batch([b"second"])).error_code == 0
        stored = _stored(conn, topic)
        expected_codec = sent_codec if topic_codec == "producer" else CODECS[topic_codec]
        assert [(c, b, n, d) for c, b, n, d, _ in stored] == [
            (expected_codec, 0, 4, 3),
            (0 if topic_codec == "producer" else CODECS[topic_codec], 4, 1, 0)]
        assert stored[0][4] == [(i, 1_700_000_000_000 + 7 * i, b"k%d" % i, v, [("h", b"x")])
                                for i, v in enumerate(VALUES)]
