"""The error codes a response carries, counted as Kafka's `AbstractResponse.errorCounts()` counts
them for RequestMetrics' ErrorsPerSec: the response's own error code and every nested one (a
topic's, a partition's), NONE included.

Which fields to visit is worked out once per response class from its schema (a plan: does this
level have an `error_code`, and which struct or array fields lead to one), so counting walks only
the parts of a response that can hold an error — per partition at most, never per record."""

from __future__ import annotations

from typing import Any, Mapping

from wirekafka.protocol.encoded_response import EncodedResponse
from wirekafka.protocol.produce_response import FastProduceResponse

# (this level has error_code, ((field name, is an array, the plan below it), ...))
Plan = tuple[bool, tuple[tuple[str, bool, "Plan"], ...]]

_NO_ERRORS: Plan = (False, ())
_LEAF: Plan = (True, ())  # a level with an error code and nothing below: a partition's, usually
_plans: dict[type, Plan] = {}


def plan_of(fields: Mapping[str, Any]) -> Plan:
    """The plan for a level of a schema given its fields (name -> kafka-python Field)."""
    has_error = False
    children: list[tuple[str, bool, Plan]] = []
    for name, field in fields.items():
        if name == "error_code":
            has_error = True
        elif field.is_struct() or field.is_struct_array():
            below = plan_of(field.fields)
            if below[0] or below[1]:
                children.append((name, bool(field.is_struct_array()), below))
    return _LEAF if has_error and not children else (has_error, tuple(children))


def count_errors(response: object, into: dict[int, int]) -> None:
    """Add the error codes of a response body (a kafka-python response, or wirekafka's own
    produce answer) to `into` (code -> occurrences)."""
    if isinstance(response, EncodedResponse):  # a cached answer: the errors of what it was encoded from, once
        counts = response.error_counts
        if not counts:
            count_errors(response.body, counts)
        for code, n in counts.items():
            into[code] = into.get(code, 0) + n
        return
    if isinstance(response, FastProduceResponse):  # the busiest answer, with no schema: a loop of its own
        for topic in response.topics:
            for partition in topic.partitions:
                into[partition.error_code] = into.get(partition.error_code, 0) + 1
        return
    cls = type(response)
    plan = _plans.get(cls)
    if plan is None:
        fields = getattr(cls, "fields", None)  # None: a body that is not a schema class
        plan = _plans[cls] = plan_of(fields) if isinstance(fields, Mapping) else _NO_ERRORS
    _walk(response, plan, into)


def _walk(node: object, plan: Plan, into: dict[int, int]) -> None:
    has_error, children = plan
    if has_error:
        code = getattr(node, "error_code", None)
        if code is not None:  # a field the response's version does not have
            into[code] = into.get(code, 0) + 1
    for name, is_array, below in children:
        value = getattr(node, name, None)
        if value is None:
            continue
        if is_array and below is _LEAF:  # the partitions of a topic: a loop, not a call each
            for item in value:
                code = getattr(item, "error_code", None)
                if code is not None:
                    into[code] = into.get(code, 0) + 1
        elif is_array:
            for item in value:
                _walk(item, below, into)
        else:
            _walk(value, below, into)
