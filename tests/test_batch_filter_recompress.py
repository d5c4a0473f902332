"""batch_filter.recompress: a producer's batch stored with the topic's codec (Kafka's LogValidator
when compression.type is not the producer's)."""

from __future__ import annotations

import pytest
from kafka.record.default_records import DefaultRecordBatch

from wirekafka.protocol import records
from wirekafka.storage import batch_filter

T0 = 1_700_000_000_000


@pytest.mark.parametrize("source", range(5))
@pytest.mark.parametrize("codec, level", [(0, None), (1, -1), (1, 9), (2, None), (3, 9), (3, 17), (4, 3), (4, 19)])
def test_recompress_keeps_everything_but_the_codec(source: int, codec: int, level: int | None) -> None:
    entries = [(b"k%d" % i, b"v" * (i * 50) if i != 2 else None, T0 + 10 - i) for i in range(5)]
    original = records.build_batch(entries, compression=source, producer_id=7, producer_epoch=2, base_sequence=40,
                                   transactional=True, headers=[("h", b"1")], base_offset=100)
    header = records.parse_header(original)
    out = batch_filter.recompress(original, header, codec, level)
    new = records.check_integrity(out)  # a whole batch with a valid CRC
    assert new.compression == codec
    assert (new.base_offset, new.last_offset_delta, new.records_count, new.producer_id, new.producer_epoch,
            new.base_sequence, new.is_transactional) == (100, 4, 5, 7, 2, 40, True)
    assert (new.base_timestamp, new.max_timestamp) == (T0 + 10, T0 + 10)  # the first record's; the largest
    decoded = [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in DefaultRecordBatch(out)]
    assert decoded == [(100 + i, T0 + 10 - i, k, v, [("h", b"1")]) for i, (k, v, _) in enumerate(entries)]


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_compress_is_recompress_without_decoding(codec: int) -> None:
    """compress (the coordinators' batches) gives recompress's batch for an uncompressed one."""
    entries = [(b"k%d" % i, b"v" * (i * 50) if i != 2 else None, T0 + 10 - i) for i in range(5)]
    plain = records.build_batch(entries, producer_id=7, producer_epoch=2, transactional=True, base_offset=100)
    header = records.parse_header(plain)
    fast, slow = batch_filter.compress(plain, header, codec), batch_filter.recompress(plain, header, codec, None)
    f, s = records.check_integrity(fast), records.check_integrity(slow)  # both whole, valid CRCs
    assert (f.attributes, f.base_timestamp, f.max_timestamp, f.records_count, f.producer_id, f.last_offset) == \
        (s.attributes, s.base_timestamp, s.max_timestamp, s.records_count, s.producer_id, s.last_offset)
    assert [(r.offset, r.timestamp, r.key, r.value) for r in DefaultRecordBatch(fast)] == \
        [(r.offset, r.timestamp, r.key, r.value) for r in DefaultRecordBatch(slow)]
    if codec != 1:  # gzip's stream stamps the time it was made
        assert fast == slow
    with pytest.raises(ValueError):
        batch_filter.compress(fast, records.parse_header(fast), codec)
