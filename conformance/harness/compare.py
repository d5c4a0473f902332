"""Whole-response comparison of wirekafka with real Kafka: one decoded response is turned into a
plain tree, values that differ between two brokers by nature are normalised, and what is left is
compared field by field. Fields that differ on purpose are data, listed in `deviations.toml`.

Used by the conformance scenarios (the same request sequence sent to both brokers in one session)
and by the replayer of recorded client sessions (`conformance/harness/replay.py`)."""

from __future__ import annotations

import dataclasses
import fnmatch
import re
import tomllib
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Protocol, Sequence

from wirekafka.protocol import records

DEVIATIONS_FILE = Path(__file__).resolve().parents[1] / "deviations.toml"  # beside the suite's tests

# Values that differ between two brokers by nature, whatever the broker does right. Each name is
# a field of Kafka's message schemas; the reason says why no broker could match another's value.
VOLATILE: dict[str, str] = {
    "throttle_time_ms": "quota accounting is per broker process and per moment; both answer 0 unthrottled, "
                        "but a loaded broker may throttle",
    "cluster_id": "generated once per cluster (meta.properties), random by design",
    "host": "each broker's advertised listener",
    "port": "each broker's advertised listener",
    "error_message": "free text for humans; only its presence (null or not) is compared",
    "log_append_time_ms": "the broker's clock at append; only -1 (CreateTime topics) is compared",
    "client_host": "the client's address as the broker sees it",
    "transaction_start_time_ms": "the transaction coordinator's clock when the transaction began; "
                                 "only -1 and 0 (none, not found) are compared",
    "log_dir": "each broker's data directory (log.dirs), a path on its own host",
    "total_bytes": "the size of the volume holding the broker's log directory",
    "usable_bytes": "the free space, at that moment, on the volume holding the broker's log directory",
    "session_lifetime_ms": "the time left, at the broker's clock when it answered, until connections.max.reauth.ms "
                           "or an OAUTHBEARER token's expiry ends the session; only 0 (no lifetime) is compared, "
                           "and the scenarios assert its range",
    "auth_bytes": "a SCRAM server's messages carry its random nonce and signatures over it; the scenarios "
                  "check them with the client's side of SCRAM instead (conformance/test_scram.py)",
}
# Free-text fields compared word for word except for a part that is the broker's clock: field ->
# (pattern of that part, its replacement, reason).
CLOCK_IN_TEXT: dict[str, tuple[re.Pattern[str], str, str]] = {
    "batch_index_error_message": (
        re.compile(r"The timestamp should be within \[-?\d+, -?\d+\]$"),
        "The timestamp should be within [<broker time - before.max.ms>, <broker time + after.max.ms>]",
        "Produce's record error for an out-of-range timestamp names the range allowed at the broker's clock"),
}
# Identifiers a broker allocates: compared by identity within one exchange sequence (the first id
# seen is #1, the next new one #2, ...), so that "the same id as before" and "a new id" still count.
ALLOCATED: dict[str, str] = {
    "topic_id": "a random UUID per topic (KIP-516); the zero UUID is kept as is",
    "member_id": "client id + a random UUID (KIP-394)",
    "producer_id": "allocated from the cluster's producer-id blocks",
    "session_id": "fetch session ids are random (KIP-227); 0 is kept as is",
}
# Fields that hold an allocated id under another name; they share that id's ordinals.
ALIASES: dict[str, str] = {
    "leader": "member_id",  # JoinGroup: the leader's member id
}
_KEEP_RAW = {"topic_id": {uuid.UUID(int=0), "AAAAAAAAAAAAAAAAAAAAAA"}, "member_id": {""},
             "producer_id": {-1}, "session_id": {0}}  # and null, for every one
# Fields of a record batch written to a LogAppendTime topic (attributes bit 3), and of its
# records, as to_tree decodes them: the broker stamps its clock into the batch when it appends it.
APPEND_TIME_BATCH: dict[str, str] = {
    "max_timestamp": "the broker's clock at append",
    "crc": "covers max_timestamp, the broker's clock at append",
}
APPEND_TIME_RECORD: dict[str, str] = {
    "timestamp": "every record of a LogAppendTime batch reads the batch's max timestamp",
}
# A control batch (attributes bit 5: a transaction's COMMIT or ABORT marker) is written by the
# broker for its transaction coordinator, stamped with the coordinator's clock.
CONTROL_BATCH: dict[str, str] = {
    "base_timestamp": "the transaction coordinator's clock when it wrote the marker",
    "max_timestamp": "the transaction coordinator's clock when it wrote the marker",
    "crc": "covers the marker's timestamps",
}

# Batches the log cleaner wrote in place of a compacted topic's originals (Kafka's
# MemoryRecords.filterTo). A batch whose tombstones (or empty transaction's marker) the cleaner
# kept carries a delete horizon (attributes bit 6) as its base timestamp; a compressed batch it
# rebuilt (records dropped, or a horizon set) holds the kept records compressed anew.
DELETE_HORIZON_BATCH: dict[str, str] = {
    "base_timestamp": "the delete horizon: the cleaner's clock in the round that first kept the batch's "
                      "tombstones, plus delete.retention.ms",
    "crc": "covers the delete horizon",
}
# A compressed batch may hold bytes the broker compressed itself: the cleaner's rebuilt batches,
# and every batch of a topic whose compression.type is not the producer's codec.
RECOMPRESSED_BATCH: dict[str, str] = {
    "batch_length": "the broker compressed the records anew (the cleaner, or a topic's compression.type), with "
                    "its own libraries (Kafka: the JVM's zlib, lz4-java, zstd-jni, snappy-java); the records "
                    "are compared decoded",
    "crc": "covers the compressed bytes",
}
DELETE_HORIZON_MASK = 0x40


class Normalizer:
    """Normalises the trees of one exchange sequence; allocated ids get stable ordinals."""

    def __init__(self) -> None:
        self._ids: dict[str, dict[Any, int]] = {name: {} for name in ALLOCATED}

    def __call__(self, tree: Any) -> Any:
        if isinstance(tree, dict):
            return {k: self._value(k, v) for k, v in tree.items()}
        if isinstance(tree, list):
            return [self(v) for v in tree]
        return tree

    def _value(self, key: str, value: Any) -> Any:
        if key in VOLATILE:
            if key == "error_message":
                return None if value is None else "<message>"
            if key == "log_append_time_ms":
                return value if value == -1 else "<broker time>"
            if key == "transaction_start_time_ms":
                return value if value in (-1, 0) else "<broker time>"
            if key == "session_lifetime_ms":
                return value if value == 0 else "<time left>"
            return f"<{key}>"
        clock = CLOCK_IN_TEXT.get(key)
        if clock is not None and isinstance(value, str):
            return clock[0].sub(clock[1], value)
        kind = ALIASES.get(key, key)
        if kind in ALLOCATED:
            if isinstance(value, list):
                return [self._value(key, v) for v in value]
            if value is None or value in _KEEP_RAW[kind]:
                return value
            seen = self._ids[kind]
            return f"<{kind}#{seen.setdefault(value, len(seen) + 1)}>"
        if key == "records" and isinstance(value, list):
            return [self(_stamped(batch)) for batch in value]
        return self(value)


# Lists whose order Kafka leaves to a hash map, so that it follows the hash of topic or group
# names rather than the request (the protocol promises no order): both sides are sorted by the
# given field before they are compared. (API, path of the list, items as [*]) -> (field, reason).
UNORDERED: dict[tuple[str, str], tuple[str, str]] = {
    ("ListOffsets", "topics"): ("name", "Kafka groups the answers by topic in a hash map"),
    ("ListOffsets", "topics[*].partitions"): (
        "partition_index", "Kafka collects the answers in a Scala HashMap keyed by TopicPartition"),
    ("DeleteGroups", "results"): ("group_id", "Kafka groups the groups by __consumer_offsets partition in a HashMap"),
    ("AddPartitionsToTxn", "results_by_topic_v3_and_below[*].results_by_partition"): (
        "partition_index", "Kafka collects the partition results in a HashMap"),
    ("AddPartitionsToTxn", "results_by_transaction[*].topic_results[*].results_by_partition"): (
        "partition_index", "Kafka collects the partition results in a HashMap"),
    ("WriteTxnMarkers", "markers[*].topics[*].partitions"): (
        "partition_index", "Kafka collects the partition results in a HashMap"),
    ("DescribeTransactions", "transaction_states[*].topics"): (
        "topic", "Kafka keeps a transaction's partitions in a HashSet"),
    ("DescribeLogDirs", "results[*].topics"): ("name", "Kafka groups a log dir's partitions by topic in a Map"),
    ("DescribeLogDirs", "results[*].topics[*].partitions"): (
        "partition_index", "Kafka lists a log dir's logs from its log manager's concurrent hash maps"),
    ("DescribeConfigs", "results[*].configs"): (
        "name", "Kafka lists a resource's configs in the iteration order of a Scala mutable.HashMap of every key "
                "it holds (originals and defaults), so where a key lands depends on all the others"),
}
# Lists of group members: Kafka keeps a group's members in a HashMap keyed by member id, a random
# UUID, so their order is random. They are sorted by member id after normalisation, where each
# member id is the ordinal of its first appearance (its own JoinGroup answer): join order.
MEMBER_LISTS: dict[tuple[str, str], str] = {
    ("JoinGroup", "members"): "member_id",
    ("DescribeGroups", "groups[*].members"): "member_id",
}


def members_in_join_order(api: str, tree: Any, path: str = "") -> Any:
    """`tree` (normalised) with its MEMBER_LISTS sorted by member ordinal."""
    if isinstance(tree, dict):
        return {k: members_in_join_order(api, v, f"{path}.{k}" if path else k) for k, v in tree.items()}
    if isinstance(tree, list):
        items = [members_in_join_order(api, v, f"{path}[*]") for v in tree]
        key = MEMBER_LISTS.get((api, path))
        if key and all(isinstance(i, dict) and isinstance(i.get(key), str) for i in items):
            items.sort(key=lambda i: (len(i[key]), i[key]))
        return items
    return tree


# Listings of everything a broker holds. Within one session they include what other scenarios
# left behind, in states that depend on timing (a member expires after its session timeout),
# so only the items the exchange sequence named itself are compared. (API, path) -> (name field,
# reason).
BROKER_WIDE: dict[tuple[str, str], tuple[str, str]] = {
    ("ListGroups", "groups"): ("group_id", "every group on the broker, in coordinator-shard order"),
    ("DescribeLogDirs", "results[*].topics"): ("name", "every topic on the broker when asked for all (topics=null)"),
}


def canonical_order(api: str, tree: Any, owned: Callable[[str], bool] | None = None, path: str = "") -> Any:
    """`tree` (one response of `api`) with its UNORDERED lists sorted by their key field and, when
    `owned` tells which names belong to the exchange sequence, its BROKER_WIDE lists cut to those
    (and sorted by name)."""
    if isinstance(tree, dict):
        return {k: canonical_order(api, v, owned, f"{path}.{k}" if path else k) for k, v in tree.items()}
    if isinstance(tree, list):
        items = [canonical_order(api, v, owned, f"{path}[*]") for v in tree]
        rule = UNORDERED.get((api, path))
        wide = BROKER_WIDE.get((api, path))
        if wide and owned is not None:
            rule = wide
            items = [i for i in items if not isinstance(i, dict) or owned(str(i.get(wide[0])))]
        if rule and all(isinstance(i, dict) and rule[0] in i for i in items):
            items.sort(key=lambda i: (i[rule[0]] is None, 0 if i[rule[0]] is None else i[rule[0]]))
        return items
    return tree


def _stamped(batch: Any) -> Any:
    """A decoded batch with the values a broker stamps into it replaced: LogAppendTime batches,
    transaction markers, and what the log cleaner writes (a delete horizon, compressed bytes)."""
    if not (isinstance(batch, dict) and isinstance(batch.get("attributes"), int)):
        return batch
    attributes = batch["attributes"]
    stamped: dict[str, str] = {}
    stamped_records: dict[str, str] = {}
    if attributes & records.CONTROL_MASK:
        stamped, stamped_records = CONTROL_BATCH, APPEND_TIME_RECORD
    elif attributes & records.TIMESTAMP_TYPE_MASK:
        stamped, stamped_records = APPEND_TIME_BATCH, APPEND_TIME_RECORD
    if attributes & DELETE_HORIZON_MASK:
        stamped = {**stamped, **DELETE_HORIZON_BATCH}
    if attributes & records.COMPRESSION_MASK:
        stamped = {**stamped, **RECOMPRESSED_BATCH}
    if not stamped:
        return batch
    out = {k: f"<stamped {k}>" if k in stamped else v for k, v in batch.items()}
    if stamped_records and isinstance(out.get("records"), list):
        out["records"] = [{k: f"<stamped {k}>" if k in stamped_records else v for k, v in r.items()}
                          if isinstance(r, dict) else r for r in out["records"]]
    return out


def to_tree(message: Any) -> Any:
    """A decoded kafka-python message as nested dicts and lists; record data as decoded batches
    (header fields and records), so that a difference names the batch field that differs."""
    if message is None:
        return None
    tree = message.to_dict(json=False)
    return _expand(tree)


def _expand(value: Any, key: str | None = None) -> Any:
    if isinstance(value, dict):
        return {k: _expand(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_expand(v) for v in value]
    if key == "records" and isinstance(value, (bytes, bytearray, memoryview)):
        return decode_batches(bytes(value))
    if isinstance(value, uuid.UUID):
        return str(value) if value.int else uuid.UUID(int=0)
    return value


def decode_batches(data: bytes) -> list[dict[str, Any]]:
    """Record data as a list of batches (header fields plus records), then the length of a
    truncated last batch (Kafka cuts at partition_max_bytes; 0 when there is none), so that a
    difference in that tail alone is one field, records[-1].partial_batch_bytes."""
    out: list[dict[str, Any]] = []
    tail = 0
    for start, end in records.split_batches(data):
        batch: dict[str, Any] = dataclasses.asdict(records.parse_header(data, start))
        try:
            batch["records"] = [dataclasses.asdict(r) for r in records.iter_records(data[start:end])]
        except Exception as exc:  # noqa: BLE001 - a batch the decoder cannot expand is compared as bytes
            batch["records"] = {"undecoded": data[start:end], "reason": type(exc).__name__}
        out.append(batch)
        tail = end
    if data:
        out.append({"partial_batch_bytes": len(data) - tail})
    return out


@dataclass(frozen=True)
class Difference:
    path: str
    kafka: Any
    wirekafka: Any

    def __str__(self) -> str:
        return f"{self.path}: kafka={self.kafka!r} wirekafka={self.wirekafka!r}"


# Lists whose items are compared by an identity field rather than by position, so that a missing
# or extra item is reported as itself instead of as a change to every item after it. Their order
# is still compared (as the sequence of the keys both have).
KEYED: dict[str, str] = {
    "api_keys": "api_key",  # ApiVersions
    "supported_features": "name",  # ApiVersions v3+
    "finalized_features": "name",  # ApiVersions v3+
    "configs": "name",      # CreateTopics, DescribeConfigs
}


def diff(kafka: Any, wirekafka: Any, path: str = "") -> Iterator[Difference]:
    """Every leaf where two normalised trees differ, by field path (list items as [i], items of
    KEYED lists as [field=value])."""
    if isinstance(kafka, dict) and isinstance(wirekafka, dict):
        for k in list(kafka) + [k for k in wirekafka if k not in kafka]:
            sub = f"{path}.{k}" if path else k
            if k not in kafka or k not in wirekafka:
                yield Difference(sub, kafka.get(k, "<absent>"), wirekafka.get(k, "<absent>"))
            elif k in KEYED and _keyed(kafka[k], KEYED[k]) and _keyed(wirekafka[k], KEYED[k]):
                yield from _diff_keyed(kafka[k], wirekafka[k], KEYED[k], sub)
            else:
                yield from diff(kafka[k], wirekafka[k], sub)
    elif isinstance(kafka, list) and isinstance(wirekafka, list):
        for i in range(max(len(kafka), len(wirekafka))):
            sub = f"{path}[{i}]"
            if i >= len(kafka) or i >= len(wirekafka):
                yield Difference(sub, kafka[i] if i < len(kafka) else "<absent>",
                                 wirekafka[i] if i < len(wirekafka) else "<absent>")
            else:
                yield from diff(kafka[i], wirekafka[i], sub)
    elif kafka != wirekafka:
        yield Difference(path, kafka, wirekafka)


def _keyed(items: Any, key: str) -> bool:
    return isinstance(items, list) and all(isinstance(i, dict) and key in i for i in items) \
        and len({i[key] for i in items}) == len(items)


def _diff_keyed(kafka: list[dict[str, Any]], wirekafka: list[dict[str, Any]], key: str,
                path: str) -> Iterator[Difference]:
    by_kafka = {i[key]: i for i in kafka}
    by_wirekafka = {i[key]: i for i in wirekafka}
    shared_kafka = [k for k in by_kafka if k in by_wirekafka]
    shared_wirekafka = [k for k in by_wirekafka if k in by_kafka]
    if shared_kafka != shared_wirekafka:
        yield Difference(f"{path}.<order of {key}>", shared_kafka, shared_wirekafka)
    for k in list(by_kafka) + [k for k in by_wirekafka if k not in by_kafka]:
        sub = f"{path}[{key}={k}]"
        if k not in by_kafka or k not in by_wirekafka:
            yield Difference(sub, by_kafka.get(k, "<absent>"), by_wirekafka.get(k, "<absent>"))
        else:
            yield from diff(by_kafka[k], by_wirekafka[k], sub)


@dataclass(frozen=True)
class Deviation:
    """A field that differs from Kafka on purpose: API name, versions, a path pattern, the reason."""
    api: str
    versions: tuple[int, int]
    path: str
    reason: str
    scenario: str = "*"

    def covers(self, api: str, version: int, path: str, scenario: str = "") -> bool:
        pattern = self.path.replace("[*]", "[[]*[]]")
        return (self.api == api and self.versions[0] <= version <= self.versions[1]
                and fnmatch.fnmatchcase(path, pattern) and fnmatch.fnmatchcase(scenario or "", self.scenario))


def load_deviations(path: Path = DEVIATIONS_FILE) -> list[Deviation]:
    data = tomllib.loads(path.read_text()) if path.exists() else {}
    out = []
    for entry in data.get("deviation", []):
        lo, _, hi = str(entry.get("versions", "0-32767")).partition("-")
        out.append(Deviation(entry["api"], (int(lo), int(hi or lo)), entry["path"], entry["reason"],
                             entry.get("scenario", "*")))
    return out


@dataclass
class Verdict:
    """The outcome of comparing one response: unexplained differences and deliberate ones."""
    unexplained: list[Difference] = field(default_factory=list)
    deliberate: list[tuple[Difference, Deviation]] = field(default_factory=list)


def judge(api: str, version: int, differences: list[Difference], deviations: list[Deviation],
          scenario: str = "") -> Verdict:
    verdict = Verdict()
    for d in differences:
        match = next((dev for dev in deviations if dev.covers(api, version, d.path, scenario)), None)
        if match is None:
            verdict.unexplained.append(d)
        else:
            verdict.deliberate.append((d, match))
    return verdict


class Exchange(Protocol):
    """One request and its decoded answer (conformance.harness.transcript.Exchange)."""
    api_key: int
    version: int
    request: Any
    response: Any

    @property
    def api(self) -> str: ...


def compare_transcripts(kafka: Sequence[Exchange], wirekafka: Sequence[Exchange], deviations: list[Deviation],
                        scenario: str = "", owned: Callable[[str], bool] | None = None) -> Verdict:
    """Compare the answers to the same request sequence sent to both brokers: the sequences must
    have the same length and the same API and version at each step; then each response pair is
    put in canonical order (`owned` names the topics and groups the sequence made itself),
    normalised (one Normalizer per broker, so allocated ids count up on each side) and diffed.
    Each difference's path starts with its exchange: "#3 Fetch v12 responses[0]..."."""
    out = Verdict()
    if len(kafka) != len(wirekafka):
        out.unexplained.append(Difference("exchanges", len(kafka), len(wirekafka)))
    norm_kafka, norm_wirekafka = Normalizer(), Normalizer()
    for i, (k, w) in enumerate(zip(kafka, wirekafka)):
        where = f"#{i} {k.api} v{k.version}"
        if (k.api_key, k.version) != (w.api_key, w.version):
            out.unexplained.append(Difference(f"#{i}", where, f"{w.api} v{w.version}"))
            break
        found = list(diff(
            members_in_join_order(k.api, norm_kafka(canonical_order(k.api, to_tree(k.response), owned))),
            members_in_join_order(w.api, norm_wirekafka(canonical_order(w.api, to_tree(w.response), owned)))))
        verdict = judge(k.api, k.version, found, deviations, scenario)
        out.unexplained += [dataclasses.replace(d, path=f"{where} {d.path}") for d in verdict.unexplained]
        out.deliberate += [(dataclasses.replace(d, path=f"{where} {d.path}"), dev) for d, dev in verdict.deliberate]
    return out
