"""Whole-response comparison of wirekafka with real Kafka: one decoded response is turned into a
plain tree, values that differ between two brokers by nature are normalised, and what is left is
compared field by field. Fields that differ on purpose are data, listed in `deviations.toml`.

Used by the conformance scenarios (the same request sequence sent to both brokers in one session)
and by the replayer of recorded client sessions (`conformance/replay.py`)."""

from __future__ import annotations

import dataclasses
import fnmatch
import tomllib
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from wirekafka.protocol import records

DEVIATIONS_FILE = Path(__file__).resolve().parent / "deviations.toml"

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
}
# Identifiers a broker allocates: compared by identity within one exchange sequence (the first id
# seen is #1, the next new one #2, ...), so that "the same id as before" and "a new id" still count.
ALLOCATED: dict[str, str] = {
    "topic_id": "a random UUID per topic (KIP-516); the zero UUID is kept as is",
    "member_id": "client id + a random UUID (KIP-394)",
    "producer_id": "allocated from the cluster's producer-id blocks",
    "session_id": "fetch session ids are random (KIP-227); 0 is kept as is",
}
_KEEP_RAW = {"topic_id": {uuid.UUID(int=0), "AAAAAAAAAAAAAAAAAAAAAA"}, "member_id": {"", None},
             "producer_id": {-1}, "session_id": {0}}


class Normalizer:
    """Normalises the trees of one exchange sequence; allocated ids get stable ordinals."""

    def __init__(self) -> None:
        self._ids: dict[str, dict[Any, int]] = {name: {} for name in ALLOCATED}

    def __call__(self, tree: Any, key: str | None = None) -> Any:
        if isinstance(tree, dict):
            return {k: self._value(k, v) for k, v in tree.items()}
        if isinstance(tree, list):
            return [self(v, key) for v in tree]
        return tree

    def _value(self, key: str, value: Any) -> Any:
        if key in VOLATILE:
            if key == "error_message":
                return None if value is None else "<message>"
            if key == "log_append_time_ms":
                return value if value == -1 else "<broker time>"
            return f"<{key}>"
        if key in ALLOCATED:
            if isinstance(value, list):
                return [self._value(key, v) for v in value]
            if value in _KEEP_RAW[key]:
                return value
            seen = self._ids[key]
            return f"<{key}#{seen.setdefault(value, len(seen) + 1)}>"
        return self(value, key)


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
    """Record data as a list of batches (header fields plus records); a truncated last batch
    (Kafka cuts at partition_max_bytes) is kept as its length."""
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
    if tail < len(data):
        out.append({"partial_batch_bytes": len(data) - tail})
    return out


@dataclass(frozen=True)
class Difference:
    path: str
    kafka: Any
    wirekafka: Any

    def __str__(self) -> str:
        return f"{self.path}: kafka={self.kafka!r} wirekafka={self.wirekafka!r}"


def diff(kafka: Any, wirekafka: Any, path: str = "") -> Iterator[Difference]:
    """Every leaf where two normalised trees differ, by field path (list items as [i])."""
    if isinstance(kafka, dict) and isinstance(wirekafka, dict):
        for k in list(kafka) + [k for k in wirekafka if k not in kafka]:
            sub = f"{path}.{k}" if path else k
            if k not in kafka or k not in wirekafka:
                yield Difference(sub, kafka.get(k, "<absent>"), wirekafka.get(k, "<absent>"))
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
