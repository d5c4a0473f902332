"""storage/codec_stream and record_stream: Kafka's codecs as bounded streams, and the produce
path's record checks and conversion over them (batch_validation.inspect_records), with memory
that does not grow with what a batch inflates to."""

from __future__ import annotations

import time
import tracemalloc

import kafka.codec as kc
import pytest
from kafka.record.default_records import DefaultRecordBatch

from scripts.benchlib import bombs
from wirekafka.broker.replica.batch_validation import (AppendPolicy, InvalidRecords, check_client_batch,
                                                        inspect_records, validate_client_batch)
from wirekafka.protocol import records
from wirekafka.protocol.errors import ErrorCode, KafkaApiError
from wirekafka.storage import batch_filter, codec_stream

CODECS = [bombs.GZIP, bombs.SNAPPY, bombs.LZ4, bombs.ZSTD]
NOW = 1_700_000_000_000
HOUR = 3_600_000
MB = 1 << 20


def _policy(**kw) -> AppendPolicy:
    base = dict(max_message_bytes=8 * MB, log_append_time=False, timestamp_before_ms=2**63 - 1,
                timestamp_after_ms=HOUR, compacted=False, min_insync_replicas=1)
    base.update(kw)
    return AppendPolicy(**base)


def _read_all(source: codec_stream.Inflater, n: int) -> bytes:
    parts = []
    while chunk := source.read(n):
        assert len(chunk) <= n
        parts.append(chunk)
    return b"".join(parts)


DATA = b"".join(b"record %d " % i * (i % 7 + 1) for i in range(20_000))


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("level", [None, 1])
def test_deflate_then_inflate_in_small_pieces_gives_the_data_back(codec: int, level: int | None) -> None:
    out = codec_stream.deflater(codec, None if codec == bombs.SNAPPY else level)
    for i in range(0, len(DATA), 10_000):
        out.write(memoryview(DATA)[i:i + 10_000])
    compressed = out.finish()
    assert _read_all(codec_stream.inflater(codec, compressed), 4096) == DATA
    decode = {bombs.GZIP: kc.gzip_decode, bombs.SNAPPY: kc.snappy_decode, bombs.LZ4: kc.lz4_decode,
              bombs.ZSTD: kc.zstd_decode}[codec]
    assert decode(compressed) == DATA  # what other readers (kafka-python) make of it


@pytest.mark.parametrize("encode, codec", [(kc.gzip_encode, bombs.GZIP), (kc.snappy_encode, bombs.SNAPPY),
                                           (lambda d: kc.snappy_encode(d, xerial_compatible=False), bombs.SNAPPY),
                                           (kc.lz4_encode, bombs.LZ4), (kc.zstd_encode, bombs.ZSTD)])
def test_inflaters_read_what_other_writers_write(encode, codec: int) -> None:
    assert _read_all(codec_stream.inflater(codec, encode(DATA)), 1000) == DATA


def test_gzip_reads_concatenated_members_and_ignores_what_follows_the_last() -> None:
    data = kc.gzip_encode(b"first ") + kc.gzip_encode(b"second") + b"trailing, not gzip"
    assert _read_all(codec_stream.inflater(bombs.GZIP, data), 3) == b"first second"


@pytest.mark.parametrize("codec", CODECS)
def test_damaged_or_truncated_streams_are_corrupt(codec: int) -> None:
    out = codec_stream.deflater(codec)
    out.write(DATA)
    compressed = out.finish()
    if codec == bombs.ZSTD:  # python-zstandard's reader ends a truncated frame quietly: the records come up short
        assert len(_read_all(codec_stream.inflater(codec, compressed[:len(compressed) // 2]), 1 << 16)) < len(DATA)
    else:
        with pytest.raises(codec_stream.CorruptStream):
            _read_all(codec_stream.inflater(codec, compressed[:len(compressed) // 2]), 1 << 16)
    with pytest.raises(codec_stream.CorruptStream):
        _read_all(codec_stream.inflater(codec, b"\x82SNAPPY\x00" + b"\x00" * 8 + b"\xff" * 64
                                        if codec == bombs.SNAPPY else b"\x00" * 64), 1 << 16)


def test_a_snappy_block_declaring_more_than_snappy_can_hold_allocates_nothing() -> None:
    lying = b"\xff\xff\xff\xff\x0f" + b"\x00" * 10  # declares 4 GiB in 15 bytes
    tracemalloc.start()
    try:
        with pytest.raises(codec_stream.CorruptStream, match="cannot hold"):
            codec_stream.inflater(bombs.SNAPPY, lying).read(100)
        assert tracemalloc.get_traced_memory()[1] < MB
    finally:
        tracemalloc.stop()


def test_unknown_codec() -> None:
    with pytest.raises(codec_stream.UnknownCodec):
        codec_stream.inflater(6, b"")
    with pytest.raises(codec_stream.UnknownCodec):
        codec_stream.deflater(7)


@pytest.mark.parametrize("codec", CODECS)
def test_reading_a_bomb_through_holds_a_window_not_the_inflated_size(codec: int) -> None:
    inflated = 64 * MB
    compressed = bombs._compress_zeros(codec, b"", inflated, b"")
    tracemalloc.start()
    try:
        source = codec_stream.inflater(codec, compressed)
        total = 0
        while chunk := source.read(256 * 1024):
            total += len(chunk)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert total == inflated
    assert peak < len(compressed) + 4 * MB, peak  # the input itself, and pieces of the output


def _inspect(batch: bytes, policy: AppendPolicy) -> tuple[bytes | None, int]:
    """inspect_records run to its end: (its result, how many times it yielded)."""
    batch_view, header = check_client_batch(batch, policy)
    steps = inspect_records(batch_view, header, policy, NOW, "t", 0)
    yields = 0
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value, yields
        yields += 1


@pytest.mark.parametrize("codec", CODECS)
def test_a_bomb_with_a_future_timestamp_is_refused_invalid_timestamp_in_bounded_memory(codec: int) -> None:
    inflated = 48 * MB
    batch = bombs.bomb_batch(inflated, NOW + 10 * 24 * HOUR, codec=codec)
    tracemalloc.start()
    try:
        with pytest.raises(InvalidRecords) as info:
            _inspect(batch, _policy(max_message_bytes=8 * MB))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert info.value.code == ErrorCode.INVALID_TIMESTAMP
    assert [i for i, _ in info.value.record_errors] == [0]
    assert peak < len(batch) + 4 * MB, peak


def test_the_inspection_yields_while_it_streams_a_long_record() -> None:
    batch = bombs.bomb_batch(32 * MB, NOW + 10 * 24 * HOUR)
    with pytest.raises(InvalidRecords):
        validate_client_batch(batch, _policy(), NOW)
    steps = inspect_records(*check_client_batch(batch, _policy()), _policy(), NOW, "t", 0)
    yields = 0
    with pytest.raises(InvalidRecords):
        for _ in steps:
            yields += 1
    assert yields >= 32 * MB // (256 * 1024)  # a yield per piece pumped through


@pytest.mark.parametrize("codec", CODECS)
def test_bytes_after_the_declared_records_are_invalid_record_and_not_read_on(codec: int) -> None:
    trailing = 64 * MB if codec == bombs.SNAPPY else 256 * MB  # snappy inflates ~21x at most
    batch = bombs.bomb_batch(10, NOW, codec=codec, trailing=trailing)
    started = time.process_time()  # CPU time: other processes' load does not count
    with pytest.raises(KafkaApiError) as info:
        _inspect(batch, _policy(compacted=True))
    assert info.value.code == ErrorCode.INVALID_RECORD
    assert not isinstance(info.value, InvalidRecords)
    assert time.process_time() - started < 2  # one window past the record, not all that follows


def test_a_keyless_bomb_on_a_compacted_topic_is_refused_for_its_key() -> None:
    batch = bombs.bomb_batch(16 * MB, NOW, key=None)
    with pytest.raises(InvalidRecords) as info:
        _inspect(batch, _policy(compacted=True))
    assert info.value.code == ErrorCode.INVALID_RECORD
    assert "without key" in info.value.record_errors[0][1]


def test_converting_a_bomb_stops_at_max_message_bytes() -> None:
    batch = bombs.bomb_batch(64 * MB, NOW)
    tracemalloc.start()
    try:
        with pytest.raises(KafkaApiError) as info:
            _inspect(batch, _policy(max_message_bytes=MB, codec=0))  # compression.type=uncompressed
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert info.value.code == ErrorCode.MESSAGE_TOO_LARGE
    assert peak < 4 * MB, peak


@pytest.mark.parametrize("target", CODECS)
def test_a_long_record_converted_to_another_codec_keeps_its_bytes(target: int) -> None:
    batch = bombs.bomb_batch(3 * MB, NOW, codec=bombs.ZSTD if target != bombs.ZSTD else bombs.GZIP)
    converted, _ = _inspect(batch, _policy(codec=target, compression_level=None))
    assert converted is not None
    header = records.check_integrity(converted)
    assert header.compression == target and header.records_count == 1
    (rec,) = list(DefaultRecordBatch(converted))
    assert (rec.key, rec.value, rec.timestamp) == (b"bomb", bytes(3 * MB), NOW)


def test_records_shorter_than_their_fields_are_invalid_record() -> None:
    good = records.build_batch([(b"k", b"v" * 100, NOW)], compression=bombs.ZSTD)
    plain = records.build_batch([(b"k", b"v" * 100, NOW)])
    damaged = bytearray(plain)
    damaged[records.HEADER_SIZE] = 0x0A  # the record's length: 5 bytes, shorter than its key and value
    damaged[records.CRC_OFFSET:records.CRC_OFFSET + 4] = records.compute_crc(damaged).to_bytes(4, "big")
    assert _inspect(good, _policy(compacted=True)) == (None, 0)
    with pytest.raises(KafkaApiError) as info:
        _inspect(bytes(damaged), _policy(compacted=True))
    assert info.value.code == ErrorCode.INVALID_RECORD


@pytest.mark.parametrize("codec", [0, *CODECS])
@pytest.mark.parametrize("append_time", [False, True])
def test_record_positions_are_the_offsets_and_timestamps_kafka_python_reads(codec: int, append_time: bool) -> None:
    entries = [(b"k%d" % i if i % 3 else None, b"v" * (i % 300), NOW + (i * 37) % 1000) for i in range(500)]
    batch = bytearray(records.build_batch(entries, base_offset=1000, compression=codec))
    if append_time:
        records.set_log_append_time(batch, NOW + 5000)
    header = records.parse_header(bytes(batch))
    expected = [(r.offset, r.timestamp) for r in records.iter_records(bytes(batch))]
    assert list(batch_filter.record_positions(bytes(batch), header)) == expected
    assert expected[0] == (1000, NOW + 5000 if append_time else NOW)


@pytest.mark.parametrize("codec", CODECS)
def test_record_positions_stream_past_a_bomb(codec: int) -> None:
    batch = bombs.bomb_batch(64 * MB, NOW, codec=codec, then_after_ms=5)
    header = records.parse_header(batch)
    tracemalloc.start()
    try:
        assert list(batch_filter.record_positions(batch, header)) == [(0, NOW), (1, NOW + 5)]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < len(batch) + 4 * MB, peak
