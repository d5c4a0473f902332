"""Valid request frames for every (API, version), built from the JSON schemas the broker serves.

The fuzzer needs more than bytes: to mutate a request field by field it must know where each
field sits in the encoding. kafka-python's codec encodes a whole message at once, so this module
walks the same JSON schema (the request class's ``_json``) itself and records a ``Span`` for every
leaf value, array count and tagged-field section it writes. The bytes it produces for a valid
request are checked against kafka-python's decoder and encoder (faults/fuzz/test_fuzz.py), so the
two never drift apart.

Values are chosen to be sensible for a single broker: the campaign's topic, a small pool of group
and transactional ids, short timeouts (so that no valid request waits), a valid record batch for
Produce."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

from kafka.record.default_records import DefaultRecordBatchBuilder

# the fixed-size schema types: struct format and width
FIXED: dict[str, struct.Struct] = {
    "bool": struct.Struct(">?"), "int8": struct.Struct(">b"), "int16": struct.Struct(">h"),
    "uint16": struct.Struct(">H"), "int32": struct.Struct(">i"), "uint32": struct.Struct(">I"),
    "int64": struct.Struct(">q"), "float64": struct.Struct(">d"),
}
# names of int fields that make a broker wait (Fetch max wait, produce/admin timeouts, group
# timeouts): valid values stay short, and mutations never make them long (see mutators)
DELAY_FIELDS = ("TimeoutMs", "MaxWaitMs", "RebalanceTimeoutMs", "SessionTimeoutMs")
# ACL enums (Kafka closes the connection on an ACL request naming UNKNOWN): TOPIC, LITERAL, ALL, ALLOW
ACL_ENUMS = {"ResourceType": 2, "ResourceTypeFilter": 2, "ResourcePatternType": 3, "PatternTypeFilter": 3,
             "Operation": 2, "PermissionType": 3}
ACL_FILTERS = ("DescribeAclsRequest", "DeleteAclsRequest")


def uvarint(value: int) -> bytes:
    out = bytearray()
    value &= 0xFFFFFFFF
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def parse_versions(text: str | None) -> tuple[int, int] | None:
    """A schema version range ("0+", "3-13", "5", "none") as (low, high) inclusive, or None."""
    if text is None or text == "none":
        return None
    if text.endswith("+"):
        return int(text[:-1]), 1 << 15
    if "-" in text:
        low, high = text.split("-")
        return int(low), int(high)
    return int(text), int(text)


def _in(text: str | None, version: int) -> bool:
    rng = parse_versions(text)
    return rng is not None and rng[0] <= version <= rng[1]


@dataclass(frozen=True, slots=True)
class Span:
    """Where one encoded element sits in a request body: a leaf value (kind is its schema type),
    an array's count prefix ("count") or a struct's tagged-field section ("tags")."""
    path: str
    kind: str
    start: int
    end: int
    nullable: bool
    field_name: str


@dataclass(slots=True)
class Targets:
    """The broker's names the valid requests refer to."""
    topic: str
    topic_id: bytes
    absent_topic: str = "fuzz-absent"
    group: str = "fuzz-group"
    transactional_id: str = "fuzz-txn"
    user: str = "fuzzer"
    password: str = "fuzzer-secret"


@dataclass(slots=True)
class Encoded:
    body: bytes
    spans: list[Span] = field(default_factory=list)


class _Writer:
    def __init__(self, version: int, flexible: bool, targets: Targets, api_name: str) -> None:
        self.buf = bytearray()
        self.spans: list[Span] = []
        self.version = version
        self.flexible = flexible
        self.targets = targets
        self.api_name = api_name

    def struct(self, fields: list[dict[str, Any]], path: str) -> None:
        for f in fields:
            if not _in(f.get("versions"), self.version):
                continue
            if self.flexible and _in(f.get("taggedVersions"), self.version):
                continue  # tagged fields take their defaults: left out of the valid request
            self.field(f, f"{path}.{f['name']}")
        if self.flexible:
            start = len(self.buf)
            self.buf += uvarint(0)
            self.spans.append(Span(path + ".<tags>", "tags", start, len(self.buf), False, "<tags>"))

    def field(self, f: dict[str, Any], path: str) -> None:
        typ: str = f["type"]
        nullable = _in(f.get("nullableVersions"), self.version)
        if typ.startswith("[]"):
            inner = typ[2:]
            values = self._array_items(f, inner)
            start = len(self.buf)
            self.buf += uvarint(len(values) + 1) if self.flexible else FIXED["int32"].pack(len(values))
            self.spans.append(Span(path, "count", start, len(self.buf), nullable, f["name"]))
            for i, value in enumerate(values):
                if "fields" in f:
                    self.struct(f["fields"], f"{path}[{i}]")
                else:
                    self.leaf(inner, value, f"{path}[{i}]", False, f["name"])
            return
        if "fields" in f:  # a single struct; a nullable one is left null (a -1 presence byte)
            if nullable:
                self.leaf("int8", -1, path, True, f["name"])
                return
            self.struct(f["fields"], path)
            return
        self.leaf(typ, self._value(f, typ, nullable), path, nullable, f["name"])

    def leaf(self, typ: str, value: Any, path: str, nullable: bool, name: str) -> None:
        start = len(self.buf)
        if typ in FIXED:
            self.buf += FIXED[typ].pack(value)
        elif typ == "uuid":
            self.buf += value
        elif typ == "string":
            self._sized(None if value is None else value.encode(), 2)
        elif typ in ("bytes", "records"):
            self._sized(value, 4)
        else:
            raise ValueError(f"schema type {typ} at {path}")
        self.spans.append(Span(path, typ, start, len(self.buf), nullable, name))

    def _sized(self, data: bytes | None, width: int) -> None:
        if self.flexible:
            self.buf += uvarint(0 if data is None else len(data) + 1)
        else:
            self.buf += (FIXED["int16"] if width == 2 else FIXED["int32"]).pack(-1 if data is None else len(data))
        if data is not None:
            self.buf += data

    def _array_items(self, f: dict[str, Any], inner: str) -> list[Any]:
        if "fields" in f:
            return [None]
        if inner == "string":
            return [self._entity(f) or "fuzz"]
        return [0]

    def _entity(self, f: dict[str, Any]) -> str | None:
        """The campaign's own name for a field naming a topic, group or transactional id. A
        DeleteTopics request names a topic that is not there: the campaign's topic must stay."""
        entity = f.get("entityType")
        if entity == "topicName":
            return self.targets.absent_topic if self.api_name == "DeleteTopicsRequest" else self.targets.topic
        if entity == "groupId":
            return self.targets.group
        if entity == "transactionalId":
            return self.targets.transactional_id
        return None

    def _value(self, f: dict[str, Any], typ: str, nullable: bool) -> Any:
        """A sensible value for one field, by its name, then its schema default."""
        name: str = f["name"]
        t = self.targets
        if typ == "records":
            return valid_batch()
        if typ == "uuid":
            return t.topic_id if "Topic" in name and self.api_name != "DeleteTopicsRequest" else bytes(16)
        if typ == "bytes":
            if name == "AuthBytes":
                return b"\x00" + t.user.encode() + b"\x00" + t.password.encode()
            return b""
        if typ == "string":
            return self._string(name, f, nullable)
        if typ == "bool":
            return name == "ValidateOnly" or f.get("default") == "true"
        return self._int(name, f, typ)

    def _string(self, name: str, f: dict[str, Any], nullable: bool) -> str | None:
        if name == "Mechanism":
            return "PLAIN"
        if name == "TransactionalId" and nullable:
            return None  # an idempotent, not a transactional, request
        entity = self._entity(f)
        if entity is not None:
            return entity
        if name == "ProtocolType":
            return "consumer"
        if name in ("MemberId", "GroupInstanceId") or f.get("default") == "null":
            return None if nullable else ""
        if name in ("ResourceName", "Principal", "EntityName"):
            return self.targets.user
        if name == "Host":
            return "*"
        return "fuzz"

    def _int(self, name: str, f: dict[str, Any], typ: str) -> int | float:
        if typ == "float64":
            return 0.0
        if name.endswith(DELAY_FIELDS):
            return 10 if "Session" in name or "Rebalance" in name else 0
        if name == "Acks":
            return -1
        if name in ACL_ENUMS:  # a known resource, pattern, operation and permission (or ANY in a filter)
            return 1 if "Filter" in name or self.api_name in ACL_FILTERS else ACL_ENUMS[name]
        if name in ("NumPartitions", "ReplicationFactor"):
            return 1
        default = f.get("default")
        if isinstance(default, str) and default not in ("null", "true", "false", ""):
            try:
                value = int(default, 0)
            except ValueError:
                value = 0
            return value if _fits(typ, value) else 0
        return 0


def _fits(typ: str, value: int) -> bool:
    width = FIXED[typ].size * 8
    if typ.startswith("u"):
        return 0 <= value < (1 << width)
    return -(1 << (width - 1)) <= value < (1 << (width - 1))


_BATCH: bytes | None = None


def valid_batch() -> bytes:
    """One uncompressed magic-v2 batch of two small records (the same bytes every time)."""
    global _BATCH
    if _BATCH is None:
        builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                            producer_id=-1, producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
        builder.append(0, timestamp=1_700_000_000_000, key=b"k", value=b"fuzz", headers=[])
        builder.append(1, timestamp=1_700_000_000_001, key=None, value=b"fuzz-2", headers=[("h", b"v")])
        _BATCH = bytes(builder.build())
    return _BATCH


def encode_body(request_class: Any, version: int, targets: Targets) -> Encoded:
    """A valid body of request_class at version, with the spans of its fields."""
    writer = _Writer(version, request_class.flexible_version_q(version), targets, request_class.name)
    writer.struct(request_class._json["fields"], request_class.name)
    return Encoded(bytes(writer.buf), writer.spans)


def encode_header(api_key: int, version: int, correlation_id: int, client_id: str | None, flexible: bool) -> bytes:
    """Request header v1 (v2 with an empty tagged-field section when flexible)."""
    cid = b"\xff\xff" if client_id is None else FIXED["int16"].pack(len(client_id)) + client_id.encode()
    return FIXED["int16"].pack(api_key) + FIXED["int16"].pack(version) + FIXED["int32"].pack(correlation_id) + cid + (
        b"\x00" if flexible else b"")
