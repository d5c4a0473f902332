"""Record schemas of Kafka's internal coordinator topics (`__consumer_offsets`,
`__transaction_state`), built by kafka-python's schema-driven codec from Kafka 4.3.1's own JSON in
`wirekafka.protocol.schemas`, so that these records are Kafka's bytes by construction.

A coordinator record's key is an int16 record type (the schema's ``apiKey``: 0 TransactionLogKey
in `__transaction_state`; 1 OffsetCommitKey and 2 GroupMetadataKey in `__consumer_offsets`), then
the key's fields at version 0. Its value is an int16 version, then the value's fields at that
version (flexible versions with compact encodings and tagged fields).

Three adjustments to the JSON as loaded, none changing what is encoded: the schema type
("coordinator-key"/"coordinator-value") reads as kafka-python's "data"; a tagged field declared
with "taggedVersions" alone gets those as its "versions" too (Kafka's default, which kafka-python
does not apply); and tagged fields are put in tag order, because kafka-python writes them in the
order they are declared while Kafka writes them by tag (TransactionLogValue declares
NextProducerEpoch, tag 3, before tag 2)."""

from __future__ import annotations

import struct
from typing import Any

from kafka.protocol.api_data import ApiData
from kafka.protocol.schemas.fields.codecs import EncodeBufferPool

from wirekafka.protocol import schemas

_INT16 = struct.Struct(">h")


def _field(json: dict[str, Any]) -> dict[str, Any]:
    """One field with Kafka's defaults filled in, its nested fields too."""
    json = dict(json)
    if "taggedVersions" in json:
        json.setdefault("versions", json["taggedVersions"])
    if "fields" in json:
        json["fields"] = _in_tag_order(json["fields"])
    return json


def _in_tag_order(fields: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The fields with the tagged ones moved after the others, by tag: the order in which Kafka
    writes a tag section (untagged fields keep their order, so their encoding is the same)."""
    fields = [_field(f) for f in fields]
    return [f for f in fields if "tag" not in f] + sorted((f for f in fields if "tag" in f), key=lambda f: f["tag"])


def _as_kafka_record(metacls: type, json: dict[str, Any]) -> dict[str, Any]:
    """A coordinator record's schema as kafka-python's data schemas: kafka-python calls it with
    the JSON it loaded (as ``json_patch``)."""
    return dict(json, type="data", fields=_in_tag_order(json["fields"]))


def read(schema: Any, data: bytes, version: int) -> Any:
    """The fields after a record's leading int16, as ``schema`` at ``version``; ValueError for
    data that does not hold them (truncated, a bad length, invalid UTF-8) and for a version the
    schema does not have. Read by the decoder kafka-python compiles for the version, as its
    ApiMessage classes are (its ApiData classes take a slower path)."""
    if not 0 <= version <= schema.max_version:
        raise ValueError(f"{schema.name} has no version {version}")
    flexible = schema.flexible_version_q(version)
    decode = schema._struct.compiled_decode_from(version, compact=flexible, tagged=flexible, data_class=schema)
    try:
        return decode(memoryview(data)[_INT16.size:], 0)[0]
    except (struct.error, ValueError, IndexError) as exc:  # what it raises on short or garbled data
        raise ValueError(f"unreadable {schema.name} v{version}: {exc!r}") from exc


def record_type(data: bytes) -> int:
    """The leading int16 of a key (its record type) or a value (its version)."""
    if len(data) < _INT16.size:
        raise ValueError(f"coordinator record of {len(data)} bytes has no leading int16")
    return _INT16.unpack_from(data)[0]


def _encode(record: Any, leading: int, version: int) -> bytes:
    flexible = record.flexible_version_q(version)
    with EncodeBufferPool.acquire() as out:
        record._struct.compiled_encode_into(version, compact=flexible, tagged=flexible)(record, out)
        return _INT16.pack(leading) + out.result()


def encode_key(key: Any) -> bytes:
    """The key's record type (its schema's apiKey), then its fields at version 0."""
    return _encode(key, key.json["apiKey"], 0)


def encode_value(value: Any, version: int) -> bytes:
    """The value's version, then its fields at that version."""
    return _encode(value, version, version)


def _schema(name: str) -> Any:
    """The schema class kafka-python builds from Kafka's ``name``.json, as a class statement
    ``class name(ApiData, load_json=schemas)`` would, with the adjustments above. Typed Any: its
    fields and nested classes exist only once the JSON is loaded, so no checker can see them (the
    tests pin their bytes instead)."""
    metaclass: Any = type(ApiData)  # kafka-python's schema metaclass takes the JSON's package as a keyword
    return metaclass(name, (ApiData,), {"__module__": __name__, "json_patch": classmethod(_as_kafka_record)},
                     load_json=schemas)


OffsetCommitKey = _schema("OffsetCommitKey")  # record type 1; type 0, the legacy key, has the same fields
OffsetCommitValue = _schema("OffsetCommitValue")
GroupMetadataKey = _schema("GroupMetadataKey")  # record type 2
GroupMetadataValue = _schema("GroupMetadataValue")
TransactionLogKey = _schema("TransactionLogKey")  # record type 0 of __transaction_state
TransactionLogValue = _schema("TransactionLogValue")
