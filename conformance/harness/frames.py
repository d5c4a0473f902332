"""Kafka request and response frames read and written with kafka-python's schema classes, for
tools that sit between a client and a broker (the recording proxy, the replayer).

Such tools see every API a client may send, not only the ones wirekafka serves, so the schema
classes are looked up in kafka-python's whole message set. A frame here is a payload without its
4-byte size prefix: the header, then the body."""

from __future__ import annotations

import functools
import importlib
import pkgutil
import struct
from dataclasses import dataclass
from typing import Any, Iterator

import kafka.protocol
from kafka.protocol.api_key import ApiKey
from kafka.protocol.api_message import ApiMessage

_KEY_VERSION_CID = struct.Struct(">hhi")
_CID = struct.Struct(">i")
_SIZE = struct.Struct(">i")
PRODUCE, API_VERSIONS = 0, 18


@dataclass(frozen=True)
class RequestHead:
    """What a proxy must know of a request without decoding its body."""
    api_key: int
    version: int
    correlation_id: int


def api_name(api_key: int) -> str:
    """The API's name as in Kafka's message schemas ("Metadata"), or "Api<key>" if unknown."""
    try:
        return ApiKey(api_key).name
    except ValueError:
        return f"Api{api_key}"


@functools.cache
def _classes() -> dict[tuple[int, str], type[ApiMessage]]:
    """Every request and response class kafka-python defines, by (api key, "request"|"response")."""
    for module in pkgutil.walk_packages(kafka.protocol.__path__, "kafka.protocol."):
        if not any(part in module.name for part in (".old", ".schemas", "generate_stubs")):
            importlib.import_module(module.name)
    found: dict[tuple[int, str], type[ApiMessage]] = {}
    pending = list(ApiMessage.__subclasses__())
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        if getattr(cls, "_class_version", 1) is None and cls.__dict__.get("_json") is not None:
            found[(cls.API_KEY, cls.type)] = cls
    return found


def request_class(api_key: int) -> type[ApiMessage] | None:
    return _classes().get((api_key, "request"))


def response_class(api_key: int) -> type[ApiMessage] | None:
    return _classes().get((api_key, "response"))


def request_head(frame: bytes) -> RequestHead:
    api_key, version, cid = _KEY_VERSION_CID.unpack_from(frame, 0)
    return RequestHead(api_key, version, cid)


def response_correlation_id(frame: bytes) -> int:
    return _CID.unpack_from(frame, 0)[0]


def decodable(cls: type[ApiMessage] | None, version: int) -> bool:
    return cls is not None and 0 <= version <= cls.max_version


def decode_request(frame: bytes) -> Any:
    """The request with its header (`request.header`); raises ValueError if kafka-python has no
    schema for this API and version."""
    head = request_head(frame)
    cls = request_class(head.api_key)
    if not decodable(cls, head.version):
        raise ValueError(f"no schema for {api_name(head.api_key)} v{head.version}")
    return cls.decode(frame, version=head.version, header=True)  # type: ignore[union-attr]


def decode_response(api_key: int, version: int, frame: bytes) -> Any:
    """The response (header included) to a request of this API and version."""
    cls = response_class(api_key)
    if not decodable(cls, version):
        raise ValueError(f"no schema for {api_name(api_key)} v{version}")
    return cls.decode(frame, version=version, header=True)  # type: ignore[union-attr]


def encode_request(request: Any, version: int) -> bytes:
    """A decoded request (with its header) back to a frame at the same version."""
    return bytes(request.encode(version=version, header=True))


def encode_response(response: Any, version: int) -> bytes:
    """A decoded response (with its header) back to a frame at the same version. The header is
    written apart: kafka-python's encode(header=True) handles only request headers."""
    header, response._header = response._header, None
    try:
        body = bytes(response.encode(version=version))
    finally:
        response._header = header
    flexible = response.API_KEY != API_VERSIONS and response.flexible_version_q(version)
    return bytes(header.encode(flexible=flexible)) + body


def expects_response(frame: bytes) -> bool:
    """False only for a Produce request with acks=0, which Kafka never answers."""
    head = request_head(frame)
    if head.api_key != PRODUCE:
        return True
    return decode_request(frame).acks != 0


def size_prefixed(frame: bytes) -> bytes:
    return _SIZE.pack(len(frame)) + frame


def present_fields(message: Any) -> Iterator[tuple[Any, Any]]:
    """(schema field, value) of each field a decoded struct has at its version."""
    version = message.version
    for field in message.fields.values():
        if version is None or field.for_version_q(version):
            yield field, getattr(message, field.name)


def structs(message: Any) -> Iterator[Any]:
    """The message and every nested struct present at its version."""
    yield message
    for field, value in present_fields(message):
        if field.is_struct() and value is not None:
            yield from structs(value)
        elif field.is_struct_array() and value:
            for item in value:
                yield from structs(item)
