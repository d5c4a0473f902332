"""Identifiers a broker allocates, carried from a recorded session into its replay.

A recorded request names ids that real Kafka allocated earlier in the session: topic ids
(CreateTopics, Metadata), member ids (JoinGroup), producer ids and epochs (InitProducerId),
fetch session ids. Sent unchanged to another broker they would name nothing. The replayer
therefore learns, from each recorded response and the replayed answer to the same request walked
side by side, which replay value stands for which recorded one, and substitutes the replay values
in every later request before sending it (decoded, substituted, re-encoded at the same version).
Producer ids and epochs also live inside the record batches of a Produce request; there the batch
header is patched and its CRC-32C recomputed (the CRC covers them)."""

from __future__ import annotations

import logging
import struct
import uuid
from typing import Any, Iterator

from conformance.harness.frames import present_fields, structs
from wirekafka.protocol import records

log = logging.getLogger(__name__)

# Mapped fields and the values that name no allocated id (kept as they are).
NO_ID: dict[str, set[Any]] = {
    "topic_id": {uuid.UUID(int=0), None},
    "member_id": {"", None},
    "session_id": {0, None},
}
PRODUCER_ID, PRODUCER_EPOCH = "producer_id", "producer_epoch"
# Fields that identify an item of a list, to pair recorded and replayed items whatever their order.
ITEM_KEYS = ("name", "topic", "partition_index", "partition", "index", "group_id", "key", "resource_name",
             "api_key", "transactional_id")
_PRODUCER_FIELDS = struct.Struct(">qh")
_PRODUCER_OFFSET = 43  # producerId i64 then producerEpoch i16 in a v2 batch header


def _item_key(item: Any) -> str | None:
    return next((k for k in ITEM_KEYS if k in item.fields), None)


def _paired(recorded: list[Any], replayed: list[Any]) -> Iterator[tuple[Any, Any]]:
    """Items of two lists that stand for the same thing: by an identifying field when the items
    have one, else by position when both lists are as long. Items identified only by an
    allocated id (the members of a JoinGroup answer) are not paired: their order is the broker's
    own, and each such id is learned where it stands alone (the member's own JoinGroup answer)."""
    if not recorded or not replayed:
        return
    key = _item_key(recorded[0])
    if key is not None:
        by_key = {getattr(item, key): item for item in replayed}
        for item in recorded:
            if getattr(item, key) in by_key:
                yield item, by_key[getattr(item, key)]
    elif len(recorded) == len(replayed) and not set(recorded[0].fields) & (set(NO_ID) | {PRODUCER_ID}):
        yield from zip(recorded, replayed)


def side_by_side(recorded: Any, replayed: Any) -> Iterator[tuple[Any, Any]]:
    """Pairs of structs at the same place in two decoded messages of the same schema."""
    yield recorded, replayed
    for field, value in present_fields(recorded):
        other = getattr(replayed, field.name)
        if field.is_struct() and value is not None and other is not None:
            yield from side_by_side(value, other)
        elif field.is_struct_array():
            for a, b in _paired(value or [], other or []):
                yield from side_by_side(a, b)


class IdMap:
    """Recorded id -> replay id, per kind of id; producers as (id, epoch) pairs."""

    def __init__(self) -> None:
        self.ids: dict[str, dict[Any, Any]] = {name: {} for name in NO_ID}
        self.producers: dict[tuple[int, int], tuple[int, int]] = {}

    def learn(self, recorded: Any, replayed: Any) -> None:
        """Walk a recorded response and the replayed answer to the same request side by side."""
        for a, b in side_by_side(recorded, replayed):
            for name, seen in self.ids.items():
                if name in a.fields:
                    self._add(seen, name, getattr(a, name), getattr(b, name))
            if PRODUCER_ID in a.fields and getattr(a, PRODUCER_ID, -1) >= 0:
                pair = (getattr(a, PRODUCER_ID), getattr(a, PRODUCER_EPOCH, -1))
                replay = (getattr(b, PRODUCER_ID), getattr(b, PRODUCER_EPOCH, -1))
                if replay[0] >= 0:
                    self.producers.setdefault(pair, replay)

    @staticmethod
    def _add(seen: dict[Any, Any], name: str, value: Any, replay_value: Any) -> None:
        if value in NO_ID[name] or replay_value is None:
            return
        known = seen.setdefault(value, replay_value)
        if known != replay_value:
            log.warning("%s %r already stands for %r, not %r", name, value, known, replay_value)

    def substitute(self, request: Any) -> bool:
        """Put replay ids in place of recorded ones throughout a decoded request; True if any
        value changed."""
        changed = False
        for struct_ in structs(request):
            fields = struct_.fields
            for name, seen in self.ids.items():
                if name in fields and getattr(struct_, name) in seen:
                    setattr(struct_, name, seen[getattr(struct_, name)])
                    changed = True
            if PRODUCER_ID in fields and PRODUCER_EPOCH in fields:
                replay = self.producers.get((struct_.producer_id, struct_.producer_epoch))
                if replay is not None and replay != (struct_.producer_id, struct_.producer_epoch):
                    struct_.producer_id, struct_.producer_epoch = replay
                    changed = True
            if "records" in fields and isinstance(struct_.records, (bytes, bytearray, memoryview)):
                patched = self.patch_batches(bytes(struct_.records))
                if patched is not None:
                    struct_.records = patched
                    changed = True
        return changed

    def translate_batches(self, response: Any) -> None:
        """Put replay producer ids in the record batches of a recorded response (a Fetch), so
        that its batches read as the replay's: a batch's CRC covers the producer id."""
        for struct_ in structs(response):
            if "records" in struct_.fields and isinstance(struct_.records, (bytes, bytearray, memoryview)):
                patched = self.patch_batches(bytes(struct_.records))
                if patched is not None:
                    struct_.records = patched

    def patch_batches(self, data: bytes) -> bytes | None:
        """Record batches with replay producer ids and epochs (CRC recomputed), or None if no
        batch names a mapped producer."""
        out = bytearray(data)
        changed = False
        for start, end in records.split_batches(data):
            header = records.parse_header(data, start)
            replay = self.producers.get((header.producer_id, header.producer_epoch))
            if replay is None or replay == (header.producer_id, header.producer_epoch):
                continue
            _PRODUCER_FIELDS.pack_into(out, start + _PRODUCER_OFFSET, *replay)
            struct.pack_into(">I", out, start + records.CRC_OFFSET, records.compute_crc(out[start:end]))
            changed = True
        return bytes(out) if changed else None
