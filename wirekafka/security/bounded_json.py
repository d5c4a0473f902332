"""JSON from before authentication (a token's header and claims), parsed with its nesting bounded.

Python's decoder recurses once per `[` or `{`: a token of nested brackets, well within the
pre-authentication frame limit, raises RecursionError, which no token check expects. Kafka's
Jackson refuses nesting deeper than 1000 (StreamReadConstraints' default) as malformed JSON; here
the same depth, or whatever the interpreter's recursion allows first, is a ValueError that every
caller already turns into its "malformed JSON" refusal."""

from __future__ import annotations

from typing import Any, Callable, TypeVar

_Text = TypeVar("_Text", bound="str | bytes")
MAX_NESTING_DEPTH = 1000  # Jackson's StreamReadConstraints.DEFAULT_MAX_DEPTH


class TooDeep(ValueError):
    """JSON nested deeper than MAX_NESTING_DEPTH."""


def parse(decode: Callable[[_Text], Any], text: _Text) -> Any:
    """decode(text), refusing nesting deeper than MAX_NESTING_DEPTH with TooDeep (a ValueError)."""
    try:
        value = decode(text)
    except RecursionError:
        raise TooDeep(f"JSON nested deeper than {MAX_NESTING_DEPTH} levels") from None
    if depth(value) > MAX_NESTING_DEPTH:  # an interpreter whose parser goes deeper than Jackson's
        raise TooDeep(f"JSON nested deeper than {MAX_NESTING_DEPTH} levels")
    return value


def depth(value: Any) -> int:
    """How deep containers nest in a decoded JSON value (a scalar: 0), without recursing."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, (list, tuple)):
            deepest = max(deepest, level + 1)
            stack.extend((child, level + 1) for child in item)
    return deepest
