"""The log cleaner's offset map: each key of the dirty section -> the latest offset seen for it, in
the memory log.cleaner.dedupe.buffer.size / log.cleaner.threads gives one cleaner.

Kafka's SkimpyOffsetMap is the model: a fixed table of 24-byte slots (a 16-byte key identity and
an 8-byte offset) found by probing from a hash of the key, filled up to load factor x slots
entries (log.cleaner.io.buffer.load.factor; the cleaner stops mapping when it is reached), and the
offset of the last batch mapped (`latest_offset`, the next round's first dirty offset). A Python
dict costs about 150 bytes an entry; a slot costs 24, so 128 MiB holds about 5M keys (at a 0.9
load factor) instead of 805k, and a log with many distinct keys needs a sixth of the rounds.

The key identity: a key of at most 15 bytes is itself, zero-padded, with its length + 1 in the
16th byte (exact: two short keys never share an identity); a longer key is its 16-byte MD5,
Kafka's hash, so two long keys with one digest are one key to the cleaner, as they are to Kafka
(a digest equal to a short key's padded bytes is as unlikely: 2^-120 a pair).

A slot is three 64-bit words, offset + 1 (0: an empty slot) and the identity's two halves, in one
anonymous mapping made when the entries move there (its pages faulted in at once): one probe
touches one place in memory, and the memory goes back to the system as soon as the map is
cleared or dropped. Probing is
double hashing from Python's hash() of the key or digest (SipHash, seeded per process: a client
cannot choose keys that pile onto one probe sequence) over a prime number of slots, so a sequence
visits every slot and stays short at a 0.9 load (about 2.6 probes a lookup, where linear probing
needs 5.5); the map never fills every slot, so an absent key always meets an empty one.

Speed: every dirty record is put and every cleaned record looked up, in Python, and a probe into
a table of 128 MiB mostly misses the processor's caches: the table costs about twice the CPU of
a dict per record. So the map starts as a plain dict, as fast as the cleaner always was, and
stays one while its keys fit the memory at a dict's cost (805k keys in 128 MiB); only a dirty
section with more keys than that moves them into the table, one by one, so that what the dict
frees goes back as the table fills."""

from __future__ import annotations

import mmap
from hashlib import md5
from itertools import chain
from typing import Callable, Iterable

SLOT_BYTES = 24  # 16 bytes of key identity + 8 of offset, as Kafka's MD5 slots
MAX_RAW_KEY = 15  # keys up to this length are their own identity
KEY_DIGEST = md5  # a longer key's identity is its digest, Kafka's hash
# A record as the map takes it: (offset delta, key identity or None without a key, has a value).
# The caller gives identities (storage/batch_filter.keyed_records hashes a long key as it streams
# past), so put and get take a long key's 16-byte digest, never the key.
KeyedRecord = tuple[int, "bytes | None", bool]


def key_identity(key: bytes | memoryview) -> bytes:
    """What the map holds for key: the key up to MAX_RAW_KEY bytes, else its digest."""
    return bytes(key) if len(key) <= MAX_RAW_KEY else KEY_DIGEST(key).digest()
# a dict entry (slot, key of at most 16 bytes, int): 131-134 bytes with tracemalloc for 200,000
# entries, rounded up for the dict's growth steps
DICT_ENTRY_BYTES = 150
MAX_MEMORY = 2**31 - 1  # Kafka's cap on one cleaner's map (a Java array's size)

_LOW = (1 << 64) - 1
# a short key's identity is the number its bytes make (little-endian) with its length + 1 in the
# 16th byte, which no key of 15 bytes or less reaches
_TAGS = tuple((n + 1) << 120 for n in range(MAX_RAW_KEY + 1))
_from_le = int.from_bytes
# the table's pages faulted in by mmap itself: one by one, as probes first touch them, they cost
# a fault each (half of the fill time, measured)
_MAP_FLAGS = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | getattr(mmap, "MAP_POPULATE", 0)


def prime_at_most(n: int) -> int:
    """The largest prime <= n (n >= 2): the table's slot count, so that every probe step is
    coprime with it."""
    for candidate in range(n, 1, -1):
        if candidate < 4 or (candidate % 2 and all(candidate % d for d in range(3, int(candidate ** 0.5) + 1, 2))):
            return candidate
    raise ValueError(f"no prime <= {n}")


class OffsetMap:
    """key -> the latest offset put for it, holding at most `capacity` keys; `latest_offset` is
    where the mapping stopped. `get` is a function of the dict or of the table, rebound when the
    entries move, so the cleaner's per-record lookups go straight to the one in use (and hold no
    reference to the map: no cycle keeps the table mapped once the round drops the map)."""

    def __init__(self, memory_bytes: int, load_factor: float) -> None:
        memory_bytes = min(memory_bytes, MAX_MEMORY)
        self.slots = prime_at_most(max(memory_bytes // SLOT_BYTES, 3))
        # Kafka's maxDesiredMapSize; one slot always stays empty, so a lookup always ends
        self.capacity = max(min(int(self.slots * load_factor), self.slots - 1), 1)
        self._small_limit = min(self.capacity, max(int(memory_bytes / DICT_ENTRY_BYTES * load_factor), 1))
        self.latest_offset = -1
        self._small: dict[bytes, int] = {}
        self._words: memoryview | None = None  # the table: 3 words a slot
        self._size = 0  # keys in the table
        self.get: Callable[[bytes], int] = _dict_lookup(self._small)

    def clear(self) -> None:
        """Empty, in the dict again (the table, if any, is unmapped)."""
        self.latest_offset = -1
        self._small = {}
        if self._words is not None:
            region = self._words.obj
            self._words.release()
            self._words = None
            if isinstance(region, mmap.mmap):
                region.close()
        self._size = 0
        self.get = _dict_lookup(self._small)

    @property
    def size(self) -> int:
        """Distinct keys held."""
        return len(self._small) if self._words is None else self._size

    @property
    def utilization(self) -> float:
        """Keys held / slots, as Kafka's buffer utilization."""
        return self.size / self.slots

    def put_keys(self, base_offset: int, raw: Iterable[KeyedRecord], min_offset: int) -> tuple[bool, int]:
        """Map the keys of one batch's records at or past min_offset, in order: the cleaner's
        innermost loop. Returns (the map filled up, records seen)."""
        if self._words is None:
            return self._small_put_keys(base_offset, raw, min_offset)
        return self._table_put_keys(base_offset, raw, min_offset)

    # ---- the dict, while the keys fit one ------------------------------------------------------
    def _small_put_keys(self, base_offset: int, raw: Iterable[KeyedRecord], min_offset: int) -> tuple[bool, int]:
        offsets = self._small
        limit = self._small_limit
        seen = 0
        records = iter(raw)
        for record in records:
            offset = base_offset + record[0]
            key = record[1]
            if key is not None and offset >= min_offset:
                if len(offsets) >= limit:
                    if limit >= self.capacity:
                        return True, seen
                    self._to_table()
                    full, more = self._table_put_keys(base_offset, chain((record,), records), min_offset)
                    return full, seen + more
                offsets[key] = offset
            seen += 1
        return False, seen

    def _to_table(self) -> None:
        """Map the table and move the dict's entries into it (a long key's digest as it is)."""
        region = mmap.mmap(-1, self.slots * SLOT_BYTES, flags=_MAP_FLAGS)
        self._words = memoryview(region).cast("Q")
        small, self._small = self._small, {}
        self.get = _table_lookup(self._words, self.slots)
        while small:
            key, offset = small.popitem()
            self._table_put_keys(0, [(offset, key, True)], 0)

    # ---- the table ------------------------------------------------------------------------------
    def _table_put_keys(self, base_offset: int, raw: Iterable[KeyedRecord], min_offset: int) -> tuple[bool, int]:
        """As _small_put_keys, into the table."""
        words = self._words
        assert words is not None
        capacity = self.capacity
        slots = self.slots
        end = 3 * slots
        size = self._size
        tags = _TAGS
        low_mask = _LOW
        from_le = _from_le
        seen = 0
        for record in raw:
            offset = base_offset + record[0]
            key = record[1]
            if key is not None and offset >= min_offset:
                if size >= capacity:
                    self._size = size
                    return True, seen
                n = len(key)
                value = from_le(key, "little") | tags[n] if n <= MAX_RAW_KEY else from_le(key, "little")
                h = hash(key)
                low, high = value & low_mask, value >> 64
                i = h % slots * 3
                step = 0
                while words[i]:
                    if words[i + 1] == low and words[i + 2] == high:
                        break
                    if not step:
                        step = (1 + (h >> 32) % (slots - 1)) * 3
                    i += step
                    if i >= end:
                        i -= end
                else:
                    words[i + 1] = low
                    words[i + 2] = high
                    size += 1
                words[i] = offset + 1
            seen += 1
        self._size = size
        return False, seen


def _dict_lookup(small: dict[bytes, int]) -> Callable[[bytes], int]:
    """The dict's `get`."""
    find = small.get

    def get(key: bytes) -> int:
        return find(key, -1)

    return get


def _table_lookup(words: memoryview, slots: int) -> Callable[[bytes], int]:
    """The table's `get`, its constants bound once: it runs once per record the cleaner reads."""
    end = 3 * slots
    tags = _TAGS
    low_mask = _LOW
    from_le = _from_le

    def get(key: bytes) -> int:
        n = len(key)
        value = from_le(key, "little") | tags[n] if n <= MAX_RAW_KEY else from_le(key, "little")
        h = hash(key)
        low, high = value & low_mask, value >> 64
        i = h % slots * 3
        step = 0
        while stored := words[i]:
            if words[i + 1] == low and words[i + 2] == high:
                return stored - 1
            if not step:
                step = (1 + (h >> 32) % (slots - 1)) * 3
            i += step
            if i >= end:
                i -= end
        return -1

    return get
