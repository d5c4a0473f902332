"""A record key as the log cleaner's offset map holds it: its identity. A key of at most
MAX_RAW_KEY (15) bytes is itself; a longer key is its 16-byte MD5, Kafka's hash, so two long keys
with one digest are one key to the cleaner, as they are to Kafka. batch_filter takes identities
as the records stream past (a long key hashed piece by piece, never held whole) and the offset
map keys on them; this module is apart from the map so that the broker's own process, which
reads keys for the produce path's checks, does not import the map's numpy."""

from __future__ import annotations

from hashlib import md5

MAX_RAW_KEY = 15  # keys up to this length are their own identity
KEY_DIGEST = md5  # a longer key's identity is its digest, Kafka's hash
# A record as the map takes it: (offset delta, key identity or None without a key, has a value).
# The caller gives identities (storage/batch_filter.keyed_records hashes a long key as it streams
# past), so put and get take a long key's 16-byte digest, never the key.
KeyedRecord = tuple[int, "bytes | None", bool]


def key_identity(key: bytes | memoryview) -> bytes:
    """What the map holds for key: the key up to MAX_RAW_KEY bytes, else its digest."""
    return bytes(key) if len(key) <= MAX_RAW_KEY else KEY_DIGEST(key).digest()
