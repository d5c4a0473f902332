"""Produce at the versions and record formats an old client would use, as Kafka 4.3.1 answers.

Kafka 4.3.1 advertises Produce v0-13, but v0-2 only for librdkafka's sake (it reads message-format
support from the advertised minimum, KAFKA-18659): a request at v0-2 closes the connection,
whatever it carries. From v3 a partition's records must be exactly one magic-2 batch: a legacy
(magic 0/1) message set is INVALID_RECORD, ZStandard needs v7, and these request-level refusals
come without offsets or log start offset. Bytes after the batch that do not make a second one are
dropped, not refused."""

from __future__ import annotations

import struct
import zlib

import pytest
from kafka.protocol.metadata.api_versions import ApiVersionsRequest

from conformance.harness.scenarios import batch, fetch, produce
from conformance.harness.wire import Connection, create_topic, unique

NONE, CORRUPT_MESSAGE, INVALID_RECORD, UNSUPPORTED_COMPRESSION_TYPE = 0, 2, 87, 76
ZSTD = 4


def legacy_message_set(values: list[bytes], magic: int) -> bytes:
    """A message set in the pre-0.11 formats (magic 0, or 1 with timestamps), CRC-32 and all."""
    out = b""
    for offset, value in enumerate(values):
        body = bytes([magic, 0]) + (struct.pack(">q", 1_700_000_000_000) if magic == 1 else b"") \
            + struct.pack(">ii", -1, len(value)) + value  # no key
        message = struct.pack(">I", zlib.crc32(body)) + body
        out += struct.pack(">qi", offset, len(message)) + message
    return out


@pytest.mark.parametrize("records_format", ["magic2", "magic1"])
@pytest.mark.parametrize("version", range(0, 3))
def test_produce_v0_to_v2_is_advertised_but_closes_the_connection(target, version, records_format):
    name = unique()
    records = batch([b"a", b"b"]) if records_format == "magic2" else legacy_message_set([b"a", b"b"], 1)
    with Connection(target.bootstrap) as conn:
        create_topic(conn, name)
        listed = conn.call(ApiVersionsRequest(client_software_name="conformance", client_software_version="1"), 3)
        assert [(k.min_version, k.max_version) for k in listed.api_keys if k.api_key == 0] == [(0, 13)]
    with Connection(target.bootstrap) as old_client:
        with pytest.raises(ConnectionError):
            produce(old_client, name, records, version=version)
    with Connection(target.bootstrap) as conn:
        assert fetch(conn, name, 0).high_watermark == 0


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("version", [3, 9, 13])
def test_produce_legacy_message_set_is_invalid_record(target, version, magic):
    name = unique()
    with Connection(target.bootstrap) as conn:
        created = create_topic(conn, name)
        for values in ([b"x"], [b"x", b"y"]):
            answer = produce(conn, name, legacy_message_set(values, magic), version=version,
                             topic_id=created.topic_id if version >= 13 else None)
            assert (answer.error_code, answer.base_offset, answer.log_append_time_ms) == (INVALID_RECORD, -1, -1)
            if version >= 5:
                assert answer.log_start_offset == -1
            if version >= 8:
                assert answer.error_message is None and answer.record_errors == []
        assert fetch(conn, name, 0).high_watermark == 0


@pytest.mark.parametrize("version", [6, 7])
def test_produce_zstd_needs_v7(target, version):
    name = unique()
    with Connection(target.bootstrap) as conn:
        create_topic(conn, name)
        answer = produce(conn, name, batch([b"z" * 100], compression=ZSTD), version=version)
        if version < 7:
            assert (answer.error_code, answer.base_offset, answer.log_start_offset) \
                == (UNSUPPORTED_COMPRESSION_TYPE, -1, -1)
        else:
            assert (answer.error_code, answer.base_offset) == (NONE, 0)
        assert fetch(conn, name, 0).high_watermark == (0 if version < 7 else 1)


def test_produce_checks_the_records_before_the_log(target):
    """Request-level refusals: no batch at all, or a second batch (INVALID_RECORD); a first batch
    whose size or magic cannot be read (CORRUPT_MESSAGE, worded), and a second one that cannot
    (CORRUPT_MESSAGE, unworded). Trailing bytes that are no batch are dropped and the batch kept."""
    name = unique()
    good = batch([b"a"])
    tiny = bytearray(good)
    tiny[8:12] = struct.pack(">i", 10)
    strange = bytearray(good)
    strange[16] = 200
    with Connection(target.bootstrap) as conn:
        create_topic(conn, name)
        refused = [produce(conn, name, records) for records in (
            b"", good + batch([b"b"]), bytes(tiny), bytes(strange), good + bytes(strange))]
        assert [(a.error_code, a.base_offset, a.log_start_offset, a.error_message) for a in refused] == [
            (INVALID_RECORD, -1, -1, None),
            (INVALID_RECORD, -1, -1, None),
            (CORRUPT_MESSAGE, -1, -1, "Record size 10 is less than the minimum record overhead (14)"),
            (CORRUPT_MESSAGE, -1, -1, "Invalid magic found in record: -56"),
            (CORRUPT_MESSAGE, -1, -1, None)]
        kept = produce(conn, name, good + b"\x00" * 5)
        assert (kept.error_code, kept.base_offset, kept.log_start_offset) == (NONE, 0, 0)
        kept = produce(conn, name, good + good[:20])
        assert (kept.error_code, kept.base_offset) == (NONE, 1)
        assert fetch(conn, name, 0).high_watermark == 2
