"""Run the conformance suite against real Apache Kafka and wirekafka and write conformance/MATRIX.md:
one row per API × version × scenario, with the outcome on each broker.

    python -m conformance.report        (from the repository root; scripts/conformance.sh does this)
"""

from __future__ import annotations

import logging
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
log = logging.getLogger("conformance.report")

# Which API each scenario exercises (the first one named is the one under test).
API_OF = {
    "test_api_versions": "ApiVersions", "test_unsupported_api_versions_version_gets_v0_error_body": "ApiVersions",
    "test_create_topics": "CreateTopics", "test_create_topics_errors": "CreateTopics",
    "test_create_topics_invalid_name": "CreateTopics", "test_create_topics_validate_only": "CreateTopics",
    "test_metadata_existing_topic": "Metadata", "test_metadata_unknown_topic_without_auto_create": "Metadata",
    "test_metadata_auto_creates_topic": "Metadata", "test_metadata_invalid_topic_name": "Metadata",
    "test_create_partitions": "CreatePartitions", "test_delete_topics": "DeleteTopics",
    "test_describe_configs_topic": "DescribeConfigs",
    "test_produce_assigns_dense_offsets": "Produce", "test_produce_acks": "Produce",
    "test_produce_wrong_crc_is_corrupt_message": "Produce", "test_produce_two_batches_is_invalid_record": "Produce",
    "test_produce_too_large_for_topic": "Produce", "test_produce_unknown_partition": "Produce",
    "test_produce_log_append_time": "Produce",
    "test_fetch_returns_records_and_watermarks": "Fetch", "test_fetch_mid_batch_starts_with_the_containing_batch": "Fetch",
    "test_fetch_small_max_bytes_returns_one_whole_batch": "Fetch", "test_fetch_out_of_range": "Fetch",
    "test_fetch_at_log_end_is_empty_not_an_error": "Fetch", "test_fetch_unknown_topic": "Fetch",
    "test_empty_fetch_long_polls_for_max_wait": "Fetch", "test_fetch_is_woken_by_a_produce": "Fetch",
    "test_fetch_min_bytes_waits_for_enough_data": "Fetch",
    "test_earliest_and_latest": "ListOffsets", "test_by_timestamp": "ListOffsets", "test_max_timestamp": "ListOffsets",
    "test_empty_partition": "ListOffsets", "test_unknown_partition": "ListOffsets",
    "test_init_producer_id": "InitProducerId", "test_sequences_duplicates_and_gaps": "Produce (idempotent)",
    "test_new_epoch_must_start_at_zero_and_old_epoch_is_fenced": "Produce (idempotent)",
    "test_find_coordinator": "FindCoordinator", "test_join_requires_member_id_then_completes": "JoinGroup",
    "test_join_invalid_session_timeout": "JoinGroup",
    "test_sync_heartbeat_commit_fetch_leave": "SyncGroup/Heartbeat/OffsetCommit/OffsetFetch/LeaveGroup/DeleteGroups",
    "test_standalone_commit_and_fetch": "OffsetCommit/OffsetFetch",
    "test_delete_records": "DeleteRecords", "test_offset_for_leader_epoch": "OffsetForLeaderEpoch",
    "test_describe_cluster": "DescribeCluster", "test_incremental_alter_configs": "IncrementalAlterConfigs",
    "test_alter_configs": "AlterConfigs",
}
# Differences that are deliberate, with the reason (scenario id without target -> reason).
KNOWN_DIFFERENCES: dict[str, str] = {}


def run(target: str, junit: Path) -> None:
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(HERE), "--target", target,
           f"--junitxml={junit}"]
    log.info("running %s", " ".join(cmd))
    subprocess.run(cmd, cwd=REPO, check=False)


def outcomes(junit: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        name = case.get("name", "")
        status = "pass"
        if case.find("failure") is not None or case.find("error") is not None:
            status = "FAIL"
        elif case.find("skipped") is not None:
            status = "skip"
        out[f"{case.get('classname', '').rsplit('.', 1)[-1]}::{name}"] = status
    return out


def split(test_id: str) -> tuple[str, str, str, str]:
    """(module, test function, target, other parameters) of a collected test id."""
    module, rest = test_id.split("::", 1)
    m = re.match(r"([^\[]+)(?:\[(.*)\])?$", rest)
    assert m
    func, params = m.group(1), (m.group(2) or "")
    parts = params.split("-", 1)
    target = parts[0]
    return module, func, target, parts[1] if len(parts) > 1 else ""


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    with tempfile.TemporaryDirectory() as tmp:
        results: dict[str, dict[str, str]] = {}
        for target in ("kafka", "wirekafka"):
            junit = Path(tmp) / f"{target}.xml"
            run(target, junit)
            results[target] = outcomes(junit) if junit.exists() else {}
    rows: dict[tuple[str, str, str], dict[str, str]] = defaultdict(dict)
    for target, res in results.items():
        for test_id, status in res.items():
            module, func, tgt, params = split(test_id)
            rows[(API_OF.get(func, func), func, params)][tgt] = status
    lines = ["# Conformance matrix", "",
             "Generated by `python -m conformance.report` (`scripts/conformance.sh`): every scenario in",
             "`conformance/` run against real Apache Kafka 4.3.1 (Maven Central jars, KRaft, one node) and",
             "against wirekafka. `version` is the request version when the scenario is run per version.", "",
             "| API | scenario | version / case | kafka | wirekafka | status |", "| --- | --- | --- | --- | --- | --- |"]
    counts = defaultdict(int)
    for (api, func, params), by_target in sorted(rows.items()):
        k, w = by_target.get("kafka", "-"), by_target.get("wirekafka", "-")
        key = f"{func}[{params}]" if params else func
        if k == w == "pass":
            status = "same"
        elif key in KNOWN_DIFFERENCES:
            status = f"differs: {KNOWN_DIFFERENCES[key]}"
        else:
            status = "DIFFERS"
        counts[status.split(":")[0]] += 1
        lines.append(f"| {api} | {func.removeprefix('test_').replace('_', ' ')} | {params or '-'} | {k} | {w} | {status} |")
    lines += ["", "Totals: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())), ""]
    (HERE / "MATRIX.md").write_text("\n".join(lines))
    log.info("wrote %s (%s)", HERE / "MATRIX.md", dict(counts))
    return 0 if set(counts) <= {"same", "differs"} else 1


if __name__ == "__main__":
    sys.exit(main())
