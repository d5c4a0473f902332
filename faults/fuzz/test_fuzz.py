"""The fuzzing campaign (issue 36, "Hostile input"): the frame generator checked against
kafka-python's schema codec, and a short seeded run against a live broker that must end with no
crash, no hang, every close explained by the frame it came on, and nothing logged at ERROR.

scripts/fuzz_long_run.py runs the same campaign for 1,000,000 frames (docs/fuzzing.md)."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

from kafka.protocol.consumer.group import OffsetCommitRequest, OffsetCommitResponse
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest

from wirekafka.protocol import served_versions
from wirekafka.protocol.errors import ErrorCode

from faults.fuzz.campaign import create_topic, run_campaign, scan_log, send_request, start_broker
from faults.fuzz.frame_builder import Targets, encode_body
from faults.fuzz.frame_source import FrameSource, served_pairs
from faults.fuzz.fuzz_results import markdown, verdict_failures

TARGETS = Targets("fuzz-topic", bytes(range(16)))
SEED = 36


def test_valid_bodies_are_what_the_schema_codec_reads_and_writes() -> None:
    """For every served (API, version): kafka-python decodes the generated body and encodes it
    back byte for byte, so field spans point where the codec reads fields."""
    for key, version in served_pairs():
        cls = served_versions.request_class(key)
        encoded = encode_body(cls, version, TARGETS)
        decoded = cls.decode(encoded.body, version=version)
        decoded._header = None  # decode leaves it unset; encode reads it
        assert bytes(decoded.encode(version=version)) == encoded.body, (cls.name, version)
        assert all(0 <= s.start < s.end <= len(encoded.body) for s in encoded.spans), (cls.name, version)


def test_frames_come_from_the_seed_alone() -> None:
    first, second = FrameSource(SEED, TARGETS), FrameSource(SEED, TARGETS)
    assert [first.next_frame() for _ in range(500)] == [second.next_frame() for _ in range(500)]
    assert FrameSource(SEED + 1, TARGETS).next_frame() != FrameSource(SEED, TARGETS).next_frame()


def test_every_pair_and_every_kind_of_mutation_is_drawn() -> None:
    source = FrameSource(SEED, TARGETS)
    frames = [source.next_frame() for _ in range(4000)]
    assert {(f.api_key, f.version) for f in frames} == set(served_pairs())
    kinds = Counter(f.mutation.split(":")[0] for f in frames)
    assert set(kinds) == {"valid", "field", "header", "bytes", "size"}, kinds
    field_kinds = {f.mutation.split(":")[1] for f in frames if f.mutation.startswith("field:")}
    assert {"int32", "string", "count", "tags", "records"} <= field_kinds
    assert any(not f.codec_ok for f in frames) and any(f.codec_ok and f.mutation != "valid" for f in frames)


def test_short_campaign_against_a_live_broker(tmp_path: Path) -> None:
    """Every served (API, version) on the plaintext listener and on the SASL one before and after
    logging in, then more frames for the rest of a bounded time."""
    report = run_campaign(tmp_path / "fuzz", SEED, frames=3 * len(served_pairs()) + 3000, time_limit_s=40)
    assert report.stats.frames >= 3 * len(served_pairs())
    assert set(report.stats.apis) == set(served_pairs())
    assert not verdict_failures(report), markdown(report)


def test_offset_commit_with_the_longest_retention_is_answered(tmp_path: Path) -> None:
    """A fuzz finding: OffsetCommit v2-4 with retention_time_ms = Long.MAX_VALUE made the expire
    timestamp overflow the offset record's int64 (a logged bug, UNKNOWN_SERVER_ERROR). Kafka's
    long addition wraps; the commit is answered and nothing is logged at ERROR."""
    broker, _sasl = start_broker(tmp_path)
    try:
        targets = create_topic(broker.port)
        since = broker.log_path.stat().st_size
        find = encode_body(FindCoordinatorRequest, 3, targets).body
        request = OffsetCommitRequest.decode(encode_body(OffsetCommitRequest, 2, targets).body, version=2)
        request._header = None  # decode leaves it unset; encode reads it
        request.generation_id_or_member_epoch, request.member_id = -1, ""  # a standalone consumer's commit
        request.retention_time_ms = (1 << 63) - 1
        deadline = time.monotonic() + 30
        while True:  # the offsets topic is created by the first FindCoordinator
            send_request(broker.port, FindCoordinatorRequest, 3, find)
            answer = OffsetCommitResponse.decode(
                send_request(broker.port, OffsetCommitRequest, 2, bytes(request.encode(version=2))), version=2)
            codes = [p.error_code for t in answer.topics for p in t.partitions]
            if codes != [ErrorCode.COORDINATOR_LOAD_IN_PROGRESS] or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert codes == [ErrorCode.NONE]
        assert scan_log(broker.log_path, since) == []
    finally:
        broker.stop()
