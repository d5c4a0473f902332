"""What Kafka's generated request readers refuse that kafka-python's decoders let through: a
request breaking them is invalid, and the connection closes.

- Null where the schema does not allow it ("non-nullable field X was serialized as null").
  kafka-python reads a length or count of -1 as None in any string, bytes, records or array
  field; left in, the None reaches a handler that trusts the schema and fails there (the fuzzing
  campaign found 35 APIs logging TypeErrors). Array elements are never nullable.
- A string longer than 32,767 bytes ("string field X had invalid length"): a flexible version's
  compact string may claim more, but Kafka's readers refuse it in any version. Let through, such a
  string reached records written with int16 lengths (a group's) and stopped the broker.

A plan per (request class, version) lists only the fields these rules can break, and skips arrays
whose elements hold none of them (a Fetch's partitions are all integers), so a check costs a few
attribute reads per request, not a walk of the whole schema."""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

from wirekafka.protocol.errors import MAX_STRING_BYTES

_NULLABLE_TYPES = frozenset({"string", "bytes", "records"})


class _Rule(NamedTuple):
    attr: str
    name: str  # the schema's name, for the message
    required: bool  # None is refused here
    string: bool  # a string (or, for an array, its elements are strings): length-checked
    elements_sized: bool  # an array of strings/bytes/records: no element may be None
    inner: "tuple[_Rule, ...] | None"  # a struct's (or struct array element's) own rules


def _rules(struct: Any, version: int) -> tuple[_Rule, ...] | None:
    found = []
    for f in struct.fields.values():
        if not f.for_version_q(version) or f.tagged_field_q(version):
            continue
        required = not f.nullable_for_version_q(version)
        if f.is_struct_array() or f.is_struct():
            inner = _rules(f, version)
            if required or inner is not None:
                found.append(_Rule(f.name, f._name, required, False, False, inner))
        elif f.is_array():
            element = f.type_str[2:]
            if required or element in _NULLABLE_TYPES:
                found.append(_Rule(f.name, f._name, required, element == "string", element in _NULLABLE_TYPES, None))
        elif f.type_str == "string":
            found.append(_Rule(f.name, f._name, required, True, False, None))
        elif f.type_str in _NULLABLE_TYPES and required:
            found.append(_Rule(f.name, f._name, True, False, False, None))
    return tuple(found) or None


@functools.lru_cache(maxsize=None)
def _plan(request_class: type, version: int) -> tuple[_Rule, ...] | None:
    return _rules(request_class, version)


def broken_rule(request_class: type, version: int, request: Any) -> str | None:
    """How the decoded request breaks a rule of Kafka's readers (a message naming the field), or None."""
    plan = _plan(request_class, version)
    return None if plan is None else _first(plan, request)


def _too_long(s: str) -> bool:
    n = len(s)  # a character takes 1-4 bytes: only a string of 8,192-32,767 characters needs encoding
    return n > MAX_STRING_BYTES // 4 and (n > MAX_STRING_BYTES or len(s.encode()) > MAX_STRING_BYTES)


def _first(plan: tuple[_Rule, ...], obj: Any) -> str | None:
    for rule in plan:
        value = getattr(obj, rule.attr, None)
        if value is None:
            if rule.required:
                return f"non-nullable field {rule.name} was serialized as null"
            continue
        if rule.inner is not None:
            for item in (value if isinstance(value, list) else (value,)):
                if item is None:
                    return f"non-nullable field {rule.name} was serialized as null"
                found = _first(rule.inner, item)
                if found is not None:
                    return found
        elif isinstance(value, list):
            if rule.elements_sized and any(v is None for v in value):
                return f"non-nullable field {rule.name} was serialized as null"
            if rule.string and any(_too_long(v) for v in value):
                return f"string field {rule.name} had invalid length"
        elif rule.string and _too_long(value):
            return f"string field {rule.name} had invalid length"
    return None
