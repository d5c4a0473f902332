"""Run the conformance suite once against real Apache Kafka and wirekafka side by side and write
conformance/MATRIX.md: one row per scenario with its outcome on each broker and the result of
comparing the two brokers' whole answers.

    python -m conformance.harness.matrix        (from the repository root; scripts/conformance.sh does this)

Both brokers run in one pytest session (`--target both`), so each scenario's [wirekafka] answers
are compared with its [kafka] answers (conformance/conftest.py); the comparisons come back through
the JSON file named by WIREKAFKA_CONFORMANCE_RESULTS, the outcomes through a JUnit XML file."""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

from conformance.harness import coverage

SUITE = Path(__file__).resolve().parents[1]  # conformance/, the suite (this module is in its harness/)
REPO = SUITE.parent
log = logging.getLogger("conformance.harness.matrix")

# Which API each scenario exercises (the first one named is the one under test).
API_OF = {
    "test_add_offsets_to_txn_versions": "AddOffsetsToTxn", "test_add_partitions_errors": "AddPartitionsToTxn",
    "test_add_partitions_to_txn_batched_and_verify_only": "AddPartitionsToTxn",
    "test_delete_groups": "DeleteGroups", "test_describe_groups": "DescribeGroups",
    "test_describe_and_list_transactions_and_producers": "DescribeTransactions/ListTransactions/DescribeProducers",
    "test_end_txn_versions": "EndTxn", "test_end_txn_without_a_transaction": "EndTxn",
    "test_every_advertised_version_is_exercised": "(coverage)", "test_every_session_is_recorded": "(recordings)",
    "test_find_transaction_coordinator": "FindCoordinator", "test_heartbeat": "Heartbeat",
    "test_heartbeat_of_a_static_member": "Heartbeat",
    "test_init_producer_id_with_transactional_id_bumps_the_epoch": "InitProducerId",
    "test_join_before_v4_completes_the_first_join": "JoinGroup", "test_leave_group": "LeaveGroup",
    "test_leave_group_by_instance_id": "LeaveGroup", "test_list_groups": "ListGroups",
    "test_list_transactions_versions": "ListTransactions",
    "test_new_producer_aborts_the_open_transaction": "InitProducerId (transactional)",
    "test_offset_commit": "OffsetCommit", "test_offset_commit_retention": "OffsetCommit",
    "test_offset_fetch": "OffsetFetch", "test_produce_checks_the_records_before_the_log": "Produce",
    "test_produce_legacy_message_set_is_invalid_record": "Produce",
    "test_produce_v0_to_v2_is_advertised_but_closes_the_connection": "Produce",
    "test_produce_zstd_needs_v7": "Produce", "test_replay": "(recorded client sessions)",
    "test_sync_group": "SyncGroup", "test_transaction_moves_the_last_stable_offset": "EndTxn/Fetch/ListOffsets",
    "test_transactional_offsets_count_with_the_commit": "TxnOffsetCommit/OffsetFetch",
    "test_transactional_produce_to_a_partition_outside_the_transaction": "Produce (transactional)",
    "test_txn_offset_commit_versions": "TxnOffsetCommit", "test_write_txn_markers": "WriteTxnMarkers",
    "test_txn_offset_commit_from_a_stale_member": "TxnOffsetCommit",
    "test_clients_may_not_write_control_batches": "Produce (transactional)",
    "test_list_transactions_duration_filter_counts_from_the_last_start": "ListTransactions",
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
    "test_find_coordinator": "FindCoordinator",
    "test_find_coordinator_empty_group_and_unknown_key_type": "FindCoordinator",
    "test_join_requires_member_id_then_completes": "JoinGroup", "test_join_invalid_session_timeout": "JoinGroup",
    "test_sync_heartbeat_commit_fetch_leave": "SyncGroup/Heartbeat/OffsetCommit/OffsetFetch/LeaveGroup/DeleteGroups",
    "test_standalone_commit_and_fetch": "OffsetCommit/OffsetFetch",
    "test_delete_records": "DeleteRecords", "test_offset_for_leader_epoch": "OffsetForLeaderEpoch",
    "test_describe_cluster": "DescribeCluster", "test_incremental_alter_configs": "IncrementalAlterConfigs",
    "test_alter_configs": "AlterConfigs", "test_offset_delete": "OffsetDelete",
    "test_describe_log_dirs": "DescribeLogDirs",
    "test_compaction_keeps_the_latest_record_of_each_key": "Fetch/ListOffsets (log compaction)",
    "test_compaction_removes_tombstones_after_delete_retention": "Fetch/ListOffsets (log compaction)",
    "test_compacted_topic_refuses_every_record_without_key": "Produce (record errors)",
    "test_compacted_topic_lists_every_keyless_record_but_words_three": "Produce (record errors)",
    "test_out_of_range_timestamps_are_refused_record_by_record": "Produce (record errors)",
    "test_a_too_old_first_record_is_refused_alone": "Produce (record errors)",
    "test_compacted_topic_with_bad_timestamps_is_invalid_timestamp_and_lists_both": "Produce (record errors)",
    "test_log_append_time_claimed_by_a_client": "Produce (record errors)",
    "test_throttles_are_set_described_and_deleted": "IncrementalAlterConfigs/DescribeConfigs (broker)",
    "test_invalid_throttle_values": "IncrementalAlterConfigs (broker)",
    "test_throttle_request_errors": "IncrementalAlterConfigs (broker)",
    "test_legacy_alter_configs_replaces_the_brokers_set": "AlterConfigs (broker)",
    "test_legacy_alter_configs_cannot_drop_the_cluster_min_insync_replicas": "AlterConfigs (broker)",
    "test_accepted_broker_keys_are_described_as_kafka_describes_them": "DescribeConfigs (broker)",
    "test_an_idle_connection_is_closed": "(connections.max.idle.ms)",
    "test_connections_beyond_the_per_ip_limit_are_closed": "(max.connections.per.ip)",
    "test_fetch_max_bytes_caps_what_a_fetch_asks_for": "Fetch",
    "test_unverified_transactional_produce_is_appended": "Produce (transactional)",
    "test_limits_change_at_runtime": "IncrementalAlterConfigs (broker)/Produce",
    "test_batches_are_stored_with_the_topics_codec": "Produce/Fetch",
    "test_cluster_default_and_per_broker_retention_reach_topics": "IncrementalAlterConfigs/DescribeConfigs (broker)",
    "test_dynamic_message_max_bytes_and_timestamp_type_apply_to_writes": "IncrementalAlterConfigs (broker)/Produce",
    "test_cluster_min_insync_replicas_default": "IncrementalAlterConfigs/AlterConfigs (broker)",
    "test_dynamic_log_config_errors": "IncrementalAlterConfigs (broker)",
    "test_refused_settings": "IncrementalAlterConfigs (broker)",
    "test_accepted_settings": "IncrementalAlterConfigs (broker)",
    "test_settings_are_described_with_their_sources": "IncrementalAlterConfigs/DescribeConfigs (broker)",
    "test_metadata_lists_each_broker_on_the_requests_listener": "Metadata (two listeners)",
    "test_find_coordinator_names_the_node_on_the_requests_listener": "FindCoordinator (two listeners)",
    "test_describe_cluster_lists_the_brokers_on_the_requests_listener": "DescribeCluster (two listeners)",
    "test_plain_authentication_then_requests": "SaslHandshake/SaslAuthenticate",
    "test_a_failed_authentication_is_answered_then_closed": "SaslAuthenticate",
    "test_an_unknown_mechanism_is_answered_with_the_enabled_ones_then_closed": "SaslHandshake",
    "test_a_request_out_of_turn": "SaslHandshake (out of turn)",
    "test_handshake_v0_then_a_bare_token": "SaslHandshake v0",
    "test_sasl_apis_on_a_listener_without_sasl": "SaslHandshake/SaslAuthenticate",
    "test_requests_over_tls": "Metadata/CreateTopics/Produce/Fetch (TLS)",
    "test_sessions_are_renewed_by_re_authenticating": "SaslHandshake/SaslAuthenticate (re-authentication)",
    "test_re_authenticating_as_another_user_fails": "SaslAuthenticate (re-authentication)",
    "test_an_expired_session_is_closed_at_its_next_request": "(connections.max.reauth.ms)",
    "test_credentials_are_stored_and_described": "AlterUserScramCredentials/DescribeUserScramCredentials",
    "test_alter_errors": "AlterUserScramCredentials",
    "test_scram_login": "SaslHandshake/SaslAuthenticate (SCRAM)",
    "test_ssl_settings_are_described_and_passwords_are_not_shown": "DescribeConfigs (broker, ssl.*)",
}
TARGETS = ("kafka", "wirekafka")


def run(junit: Path, results: Path, pairs: Path) -> None:
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(SUITE), "--target", "both",
           f"--junitxml={junit}", f"--coverage-out={pairs}"]
    log.info("running %s", " ".join(cmd))
    subprocess.run(cmd, cwd=REPO, check=False, env={**os.environ, "WIREKAFKA_CONFORMANCE_RESULTS": str(results)})


def outcomes(junit: Path) -> dict[str, str]:
    """Test id (conformance/<module>.py::<name>) -> pass / FAIL / skip."""
    out: dict[str, str] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        status = "pass"
        if case.find("failure") is not None or case.find("error") is not None:
            status = "FAIL"
        elif case.find("skipped") is not None:
            status = "skip"
        module = case.get("classname", "").rsplit(".", 1)[-1]
        out[f"{SUITE.name}/{module}.py::{case.get('name', '')}"] = status
    return out


def split(test_id: str) -> tuple[str, str]:
    """(scenario id without the target, target) of a collected test id; the target is the first
    parameter (conformance/conftest.py parametrizes it before any other)."""
    base, _, params = test_id.partition("[")
    target, _, rest = params.removesuffix("]").partition("-")
    return (f"{base}[{rest}]" if rest else base), target


def fields(paths: list[str]) -> str:
    """Difference paths ("#3 Fetch v12 responses[0].partitions[1].x") as distinct field patterns
    ("Fetch v12 responses[*].partitions[*].x"): exchange numbers dropped, list items as [*]."""
    seen = dict.fromkeys(re.sub(r"\[[^\]]*\]", "[*]", p.split(" ", 1)[-1]) for p in paths)
    return ", ".join(f"`{p}`" for p in seen)


def status_of(comparison: dict[str, object] | None) -> str:
    if comparison is None:
        return "not compared: no [wirekafka] answers"
    kind = comparison["status"]
    if kind == "same":
        return "same"
    if kind == "differs":
        return f"differs: {fields(comparison['differs'])}"  # type: ignore[arg-type]
    if kind == "deliberate":
        return f"deliberate: {fields(comparison['deliberate'])} (see deviations.toml)"  # type: ignore[arg-type]
    return f"not compared: {comparison.get('note', kind)}"


def matrix(results: dict[str, str], comparisons: dict[str, dict[str, object]]) -> tuple[str, Counter]:
    rows: dict[str, dict[str, str]] = {}
    for test_id, outcome in results.items():
        scenario, target = split(test_id)
        if target in TARGETS:
            rows.setdefault(scenario, {})[target] = outcome
    lines = ["# Conformance matrix", "",
             "Generated by `python -m conformance.harness.matrix` (`scripts/conformance.sh`): every scenario in",
             "`conformance/` run in one session against real Apache Kafka 4.3.1 (Maven Central jars, KRaft,",
             "one node) and against wirekafka, with the same server.properties. `kafka` and `wirekafka` are",
             "the outcomes of the scenario's own assertions on each broker; `status` compares wirekafka's",
             "whole answers with Kafka's, response by response, after normalising what differs between any",
             "two brokers by nature (conformance/harness/compare.py): `same`, `differs: <fields>`, or",
             "`deliberate: <fields>` for differences conformance/deviations.toml explains. A wirekafka item",
             "fails when its answers differ, so a `differs` row also shows FAIL. `version / case` is the",
             "request version or case when the scenario is run per version.", "",
             "| API | scenario | version / case | kafka | wirekafka | status |", "| --- | --- | --- | --- | --- | --- |"]
    counts: Counter = Counter()
    table = []
    for scenario, by_target in rows.items():
        base, _, params = scenario.partition("[")
        func = base.rsplit("::", 1)[-1]
        table.append((API_OF.get(func, func), func, params.removesuffix("]"), scenario, by_target))
    for api, func, params, scenario, by_target in sorted(table):
        status = status_of(comparisons.get(scenario))
        counts[status.split(":")[0]] += 1
        k, w = by_target.get("kafka", "-"), by_target.get("wirekafka", "-")
        lines.append(f"| {api} | {func.removeprefix('test_').replace('_', ' ')} | {params or '-'} | {k} | {w} | "
                     f"{status} |")
    lines += ["", "Totals: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())), ""]
    return "\n".join(lines), counts


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    with tempfile.TemporaryDirectory() as tmp:
        junit, results, pairs = Path(tmp) / "junit.xml", Path(tmp) / "comparisons.json", Path(tmp) / "pairs.json"
        run(junit, results, pairs)
        test_outcomes = outcomes(junit) if junit.exists() else {}
        comparisons = json.loads(results.read_text()) if results.exists() else {}
        if pairs.exists():
            coverage.write_coverage(coverage.load_exercised(pairs), coverage.recorded_pairs(), SUITE / "COVERAGE.md")
            log.info("wrote %s", SUITE / "COVERAGE.md")
    text, counts = matrix(test_outcomes, comparisons)
    (SUITE / "MATRIX.md").write_text(text)
    log.info("wrote %s (%s)", SUITE / "MATRIX.md", dict(counts))
    failed = sum(1 for o in test_outcomes.values() if o == "FAIL")
    return 0 if set(counts) <= {"same", "deliberate"} and not failed and test_outcomes else 1


if __name__ == "__main__":
    sys.exit(main())
