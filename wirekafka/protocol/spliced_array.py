"""A response encoded by the schema codec around one struct array whose elements were encoded
before, one by one, by the same codec.

Why: a Metadata answer for every topic is one struct per partition, about 100 ms to build and
encode at 10,000 partitions, and in a cluster it was built again after every change, however
small. Kept per topic (its element's bytes, for as long as the topic's state is the same), an
answer after a change encodes only the topics that changed and joins the others' bytes. The
bytes are the codec's own: each element is encoded by the array's struct codec, every other
field by its field codec, as kafka-python's StructField.encode does for the whole message (the
tests compare the result byte for byte with the message encoded whole, at every version)."""

from __future__ import annotations

from typing import Any, Sequence

from kafka.protocol.schemas.fields.codecs.encode_buffer import EncodeBuffer
from kafka.protocol.schemas.fields.codecs.types import Int32, UnsignedVarInt32


_ELEMENT_BUFFER = 4096  # bytes to start an element's buffer with (it grows as needed)


def encode_element(message_class: Any, array_field: str, item: Any, version: int) -> bytes:
    """One element of message_class's struct array `array_field`, as the whole message's
    encoding at `version` holds it."""
    flexible = message_class.flexible_version_q(version)
    encode_into = message_class.fields[array_field].array_of.compiled_encode_into(version, compact=flexible,
                                                                                  tagged=flexible)
    out = EncodeBuffer(_ELEMENT_BUFFER)
    encode_into(item, out)
    return bytes(out.result())


def encode_spliced(message: Any, version: int, array_field: str, elements: Sequence[bytes]) -> bytes:
    """message encoded at `version`, with the struct array `array_field` holding the already
    encoded elements (encode_element) instead of what the message's own field holds."""
    struct = type(message)._struct
    flexible = message.flexible_version_q(version)
    parts: list[bytes] = []
    for field in struct.untagged_fields(version):
        if field.name == array_field:
            parts.append(UnsignedVarInt32.encode(len(elements) + 1) if flexible else Int32.encode(len(elements)))
            parts.extend(elements)
        else:
            parts.append(field.encode(getattr(message, field.name), version=version, compact=flexible,
                                      tagged=flexible))
    if flexible:
        parts.append(struct.tagged_fields(version).encode(message, version=version))
    return b"".join(parts)
