"""Typed reads of a kafka-python schema class's metadata, for code that holds any message class.

kafka-python declares `API_KEY`, `valid_versions` and `fields` on its base classes with its own
`classproperty` descriptor, whose `__get__` is untyped, and its compiled schema as `_struct = None`;
its stubs give the concrete classes typed attributes but not the base. Code that holds a
`type[ApiMessage]` (the dispatch table, the served-versions registry, the peer client) reads
them through here, so that the loose typing is handled in one place."""

from __future__ import annotations

from typing import Any, cast

from kafka.protocol.api_header import RequestHeader
from kafka.protocol.api_message import ApiMessage


def api_key(cls: type[ApiMessage]) -> int:
    return cast(int, cls.API_KEY)


def valid_versions(cls: type[ApiMessage]) -> tuple[int, int]:
    lo, hi = cast(tuple[int, int], cls.valid_versions)
    return lo, hi


def has_field(cls: type[ApiMessage], name: str) -> bool:
    """Whether the schema has a top-level field of this name (at any version)."""
    return name in cast(dict[str, Any], cls.fields)


def request_version(request: ApiMessage) -> int:
    """The version a request was built with; ValueError for one built without."""
    version = cast("int | None", request.API_VERSION)
    if version is None:
        raise ValueError(f"{type(request).__name__} has no version: build it with version=...")
    return version


def response_class_of(request: ApiMessage) -> type[ApiMessage] | None:
    """The response class kafka-python registers for a request that has its header
    (with_header), or None."""
    header = cast("RequestHeader | None", request.header)
    if header is None:
        raise ValueError(f"{type(request).__name__} has no header: call with_header first")
    return cast("type[ApiMessage] | None", header.get_response_class())


def compiled_struct(cls: type[Any]) -> Any:
    """The schema's compiled struct (its generated encoders and decoders), which kafka-python
    keeps in the private `_struct` of every schema class."""
    return getattr(cls, "_struct")
