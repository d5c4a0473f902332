"""The log cleaner's offset map: each key of the dirty section -> the latest offset seen for it, in
the memory log.cleaner.dedupe.buffer.size / log.cleaner.threads gives one cleaner.

Kafka's SkimpyOffsetMap is the model: a fixed table of 24-byte slots (a 16-byte key identity and
an 8-byte offset) found by probing from a hash of the key, filled up to load factor x slots
entries (log.cleaner.io.buffer.load.factor; the cleaner stops mapping when it is reached), and the
offset of the last batch mapped (`latest_offset`, the next round's first dirty offset). A Python
dict costs about 150 bytes an entry; a slot costs 24, so 128 MiB holds about 5M keys (at a 0.9
load factor) instead of 805k, and a log with many distinct keys needs a sixth of the rounds.

The keys are identities (storage/key_identity.py): a key of at most 15 bytes, held zero-padded
with its length + 1 in the 16th byte (exact: two short keys never share an identity), or a longer
key's 16-byte MD5 (a digest equal to a short key's padded bytes is as unlikely: 2^-120 a pair).

A slot is three 64-bit words, offset + 1 (0: an empty slot) and the identity's two halves
(little-endian), in one anonymous mapping made when the entries move there (its pages faulted in
at once): one probe touches one place in memory, and the memory goes back to the system as soon
as the map is cleared or dropped. Probing is double hashing from Python's hash() of the key or
digest (SipHash, seeded per process: a client cannot choose keys that pile onto one probe
sequence), taken as an unsigned 64-bit number, over a prime number of slots, so a sequence visits
every slot and stays short at a 0.9 load (about 2.6 probes a lookup, where linear probing needs
5.5); the map never fills every slot, so an absent key always meets an empty one.

Speed: every dirty record is put and every cleaned record looked up, and a probe into a table of
128 MiB mostly misses the processor's caches. So the map starts as a plain dict, as fast as the
cleaner always was, and stays one while its keys fit the memory at a dict's cost (805k keys in
128 MiB); only a dirty section with more keys than that moves them into the table. The table is
probed with numpy, many keys at once: one probe round for all the keys still looking, where a
loop in Python pays the interpreter per probe (3.1 us a record in a round, 2.2 of them in the
probing, before). Puts wait in a dict of pending keys (the latest offset of each) until enough
gathered, so a log of small batches still probes in bulk; lookups go in bulk for a batch of
LOOKUP_MANY records or more, one by one (the same probe sequence, through a memoryview of the same
memory) for a smaller one. Only the cleaner's processes import this module (and numpy): see
cleaner.run_round."""

from __future__ import annotations

import mmap
from typing import Callable, Iterable, Iterator, Sequence

import numpy as np

from wirekafka.storage.key_identity import MAX_RAW_KEY, KeyedRecord

SLOT_BYTES = 24  # 16 bytes of key identity + 8 of offset, as Kafka's MD5 slots
# a dict entry (slot, key of at most 16 bytes, int): 131-134 bytes with tracemalloc for 200,000
# entries, rounded up for the dict's growth steps
DICT_ENTRY_BYTES = 150
MAX_MEMORY = 2**31 - 1  # Kafka's cap on one cleaner's map (a Java array's size)
# pending puts probed together once this many keys wait (about 0.4 MB of arrays while probing)
PUT_MANY = 8192
# slots scanned at a time for held_offsets (some 24 MB of arrays beside the table)
HELD_CHUNK = 1 << 20
# keys still probing after a bulk round, at most this many, finish one by one: at a 0.9 load a
# probe sequence of 1,000 keys runs some 60 rounds, their last ones for a handful of keys each
FEW_LEFT = 16
# a batch with fewer records than this looks its keys up one by one: numpy's fixed cost per call
# (some 20 calls a bulk lookup) outweighs the probes it saves
LOOKUP_MANY = 24

_LOW = (1 << 64) - 1
# a short key's identity is the number its bytes make (little-endian) with its length + 1 in the
# 16th byte, which no key of 15 bytes or less reaches: the bytes that pad a key to its 16-byte
# identity, by its length (a 16-byte key, a long key's digest, is its own identity)
_PADS = tuple(bytes(MAX_RAW_KEY - n) + bytes((n + 1,)) for n in range(MAX_RAW_KEY + 1)) + (b"",)
_from_le = int.from_bytes
# the table's pages faulted in by mmap itself: one by one, as probes first touch them, they cost
# a fault each (half of the fill time, measured)
_MAP_FLAGS = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | getattr(mmap, "MAP_POPULATE", 0)
_U64 = np.dtype("<u8")


def prime_at_most(n: int) -> int:
    """The largest prime <= n (n >= 2): the table's slot count, so that every probe step is
    coprime with it."""
    for candidate in range(n, 1, -1):
        if candidate < 4 or (candidate % 2 and all(candidate % d for d in range(3, int(candidate ** 0.5) + 1, 2))):
            return candidate
    raise ValueError(f"no prime <= {n}")


class OffsetMap:
    """key -> the latest offset put for it, holding at most `capacity` keys; `latest_offset` is
    where the mapping stopped. Puts into the table may wait: `flush` probes them in (the cleaner
    calls it when the mapping ends; a lookup or `size` calls it first). `_lookup_one` is a
    function of the dict or of the table, rebound when the entries move, so one-by-one lookups go
    straight to the one in use (and hold no reference to the map: no cycle keeps the table mapped
    once the round drops the map)."""

    def __init__(self, memory_bytes: int, load_factor: float) -> None:
        memory_bytes = min(memory_bytes, MAX_MEMORY)
        self.slots = prime_at_most(max(memory_bytes // SLOT_BYTES, 3))
        # Kafka's maxDesiredMapSize; one slot always stays empty, so a lookup always ends
        self.capacity = max(min(int(self.slots * load_factor), self.slots - 1), 1)
        self._small_limit = min(self.capacity, max(int(memory_bytes / DICT_ENTRY_BYTES * load_factor), 1))
        self.latest_offset = -1
        self._small: dict[bytes, int] = {}
        self._table: _Table | None = None
        self._pending: dict[bytes, int] = {}  # puts waiting for the table: key -> latest offset
        self._lookup_one: Callable[[bytes], int] = _dict_lookup(self._small)

    def clear(self) -> None:
        """Empty, in the dict again (the table, if any, is unmapped)."""
        self.latest_offset = -1
        self._small = {}
        self._pending = {}
        if self._table is not None:
            self._table.close()
            self._table = None
        self._lookup_one = _dict_lookup(self._small)

    @property
    def size(self) -> int:
        """Distinct keys held."""
        self.flush()
        return len(self._small) if self._table is None else self._table.size

    @property
    def utilization(self) -> float:
        """Keys held / slots, as Kafka's buffer utilization."""
        return self.size / self.slots

    def put_keys(self, base_offset: int, raw: Iterable[KeyedRecord], min_offset: int) -> tuple[bool, int]:
        """Map the keys of one batch's records at or past min_offset, in order: the cleaner's
        innermost loop. Returns (the map filled up, records seen)."""
        if self._table is None:
            return self._small_put_keys(base_offset, raw, min_offset)
        return self._table_put_keys(base_offset, raw, min_offset)

    def flush(self) -> None:
        """Probe the pending puts into the table (nothing to do for the dict)."""
        if self._pending and self._table is not None:
            pending, self._pending = self._pending, {}
            self._table.put(list(pending), list(pending.values()))

    def offsets_of(self, keys: Sequence[bytes]) -> list[int]:
        """The latest offset of each key, -1 for one not held: one bulk probe for many keys."""
        self.flush()
        if self._table is None or len(keys) < LOOKUP_MANY:
            get = self._lookup_one
            return [get(key) for key in keys]
        return self._table.find(keys)

    def held_offsets(self) -> Iterator[np.ndarray]:
        """Every offset the map holds (one per key, in no order), in arrays of bounded size."""
        self.flush()
        if self._table is None:
            yield np.fromiter(self._small.values(), dtype=np.int64, count=len(self._small))
        else:
            yield from self._table.held_offsets()

    # ---- the dict, while the keys fit one ------------------------------------------------------
    def _small_put_keys(self, base_offset: int, raw: Iterable[KeyedRecord], min_offset: int) -> tuple[bool, int]:
        """Into the dict: the whole batch at once while even all its keys new would leave the
        dict below its limit (no check per record), else record by record up to the limit."""
        offsets = self._small
        limit = self._small_limit
        batch = raw if isinstance(raw, list) else list(raw)
        if len(offsets) + len(batch) < limit:
            offsets.update(_latest_of_batch(base_offset, batch, min_offset))
            return False, len(batch)
        seen = 0
        records = iter(batch)
        for record in records:
            offset = base_offset + record[0]
            key = record[1]
            if key is not None and offset >= min_offset:
                if len(offsets) >= limit:
                    if limit >= self.capacity:
                        return True, seen
                    self._to_table()
                    full, more = self._table_put_keys(base_offset, batch[seen:], min_offset)
                    return full, seen + more
                offsets[key] = offset
            seen += 1
        return False, seen

    def _to_table(self) -> None:
        """Map the table and move the dict's entries into it (the dict's memory goes back first:
        the keys and offsets wait in two lists)."""
        self._table = table = _Table(self.slots)
        small, self._small = self._small, {}
        self._lookup_one = table.lookup
        keys, offsets = list(small), list(small.values())
        small.clear()
        for start in range(0, len(keys), PUT_MANY):
            table.put(keys[start:start + PUT_MANY], offsets[start:start + PUT_MANY])

    # ---- the table ------------------------------------------------------------------------------
    def _table_put_keys(self, base_offset: int, raw: Iterable[KeyedRecord], min_offset: int) -> tuple[bool, int]:
        """As _small_put_keys, into the table: the batch's keys join the pending ones while even
        all of them new would leave the map short of full; else the pending ones are probed in and
        the batch is put record by record up to where Kafka's check (size < capacity before each
        keyed record) stops it."""
        table = self._table
        assert table is not None
        records = raw if isinstance(raw, list) else list(raw)
        batch = _latest_of_batch(base_offset, records, min_offset)
        pending = self._pending
        if table.size + len(pending) + len(batch) < self.capacity:
            pending.update(batch)
            if len(pending) >= PUT_MANY:
                self.flush()
            return False, len(records)
        self.flush()
        keys = list(batch)
        new = {key for key, found in zip(keys, table.find(keys)) if found < 0}
        if table.size + len(new) < self.capacity:
            table.put(keys, list(batch.values()))
            return False, len(records)
        size = table.size
        taken: dict[bytes, int] = {}
        seen = 0
        full = False
        for delta, key, _ in records:
            offset = base_offset + delta
            if key is not None and offset >= min_offset:
                if size >= self.capacity:
                    full = True
                    break
                if key in new and key not in taken:
                    size += 1
                taken[key] = offset
            seen += 1
        if taken:
            table.put(list(taken), list(taken.values()))
        return full, seen


def _latest_of_batch(base_offset: int, records: list[KeyedRecord], min_offset: int) -> dict[bytes, int]:
    """The batch's keys at or past min_offset, each with its latest offset in the batch."""
    if base_offset >= min_offset:
        return {r[1]: base_offset + r[0] for r in records if r[1] is not None}
    floor = min_offset - base_offset
    return {r[1]: base_offset + r[0] for r in records if r[1] is not None and r[0] >= floor}


class _Table:
    """The slots (see the module docstring), probed in bulk with numpy and one by one through a
    memoryview of the same memory; beside them, presence bits: two bits per key held, picked by
    two disjoint ranges of its hash's bits, in about 8 bits per slot (a Bloom filter). A bulk
    lookup passes over the keys whose two bits are not both set: absent for sure, where the
    probing would have read some 10 slots at a 0.9 load (1.4 us a key, against 0.3 for a key
    held); about 4% of absent keys still probe, at a full map."""

    def __init__(self, slots: int) -> None:
        self.slots = slots
        self.size = 0
        self._region = mmap.mmap(-1, slots * SLOT_BYTES, flags=_MAP_FLAGS)
        self._rows = np.frombuffer(self._region, dtype=_U64).reshape(slots, 3)
        bits = 1 << max(10, (8 * slots - 1).bit_length())  # a power of two, at most 2**30 (MAX_MEMORY)
        self._bit_mask = np.uint64(bits - 1)
        self._bits = np.zeros(bits // 8, dtype=np.uint8)
        self._words = memoryview(self._region).cast("Q")
        locate = _table_locator(self._words, slots)
        self.lookup = _table_lookup(locate, self._words)
        self._put_one = _table_put(locate, self._words)

    def close(self) -> None:
        """Unmap the memory now (the cleaner's process outlives its rounds)."""
        self._words.release()
        del self._rows, self._bits
        self._region.close()

    def held_offsets(self) -> Iterator[np.ndarray]:
        """The offsets of the held slots, HELD_CHUNK slots at a time."""
        for start in range(0, self.slots, HELD_CHUNK):
            stored = self._rows[start:start + HELD_CHUNK, 0]
            yield stored[stored != 0].astype(np.int64) - 1

    def _start(self, keys: Sequence[bytes]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The keys' identities (two columns of words), first slots and probe steps, as the
        one-by-one lookup computes them, and their hashes."""
        identities = np.frombuffer(b"".join([key + _PADS[len(key)] for key in keys]), dtype=_U64).reshape(-1, 2)
        h = np.fromiter(map(hash, keys), dtype=np.int64, count=len(keys)).view(np.uint64)
        slots = np.uint64(self.slots)
        return (identities[:, 0], identities[:, 1], h % slots,
                np.uint64(1) + (h >> np.uint64(32)) % (slots - np.uint64(1)), h)

    def _presence_bits(self, h: np.ndarray) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
        """Each hash's two presence bits, as (byte index, bit mask) pairs."""
        out = []
        for index in (h & self._bit_mask, (h >> np.uint64(34)) & self._bit_mask):
            out.append(((index >> np.uint64(3)).astype(np.intp), np.left_shift(1, index & np.uint64(7)).astype(np.uint8)))
        return out[0], out[1]

    def _mark(self, h: np.ndarray) -> None:
        """Set the hashes' presence bits. A byte named twice in one assignment takes one of the
        writes: the bits still clear are set again until none is."""
        bits = self._bits
        for byte, mask in self._presence_bits(h):
            while byte.size:
                bits[byte] |= mask
                missing = (bits[byte] & mask) == 0
                byte, mask = byte[missing], mask[missing]

    def _maybe_held(self, h: np.ndarray) -> np.ndarray:
        """False for a hash whose presence bits are not both set: its key is not held."""
        (byte1, mask1), (byte2, mask2) = self._presence_bits(h)
        bits = self._bits
        return ((bits[byte1] & mask1) != 0) & ((bits[byte2] & mask2) != 0)

    def find(self, keys: Sequence[bytes]) -> list[int]:
        """The offset held for each key, -1 for one not held."""
        low, high, at, step, h = self._start(keys)
        rows = self._rows
        slots = np.uint64(self.slots)
        found = np.zeros(len(keys), dtype=_U64)  # offset + 1, 0: absent
        todo = np.flatnonzero(self._maybe_held(h))
        at = at[todo]
        while todo.size:
            if todo.size <= FEW_LEFT:
                for i in todo.tolist():
                    found[i] = self.lookup(keys[i]) + 1
                break
            probed = rows[at]
            held = probed[:, 0] != 0
            hit = held & (probed[:, 1] == low[todo]) & (probed[:, 2] == high[todo])
            found[todo[hit]] = probed[hit, 0]
            going = held & ~hit
            todo = todo[going]
            at = (at[going] + step[todo]) % slots
        return (found.astype(np.int64) - 1).tolist()

    def put(self, keys: Sequence[bytes], offsets: Sequence[int]) -> None:
        """Set each key's offset (keys distinct; the caller checked the room for the new ones).
        Keys meeting one empty slot in the same round claim it through its offset word (each
        writes its own number; the one that reads its number back takes the slot), the others
        probe on."""
        if not keys:
            return
        low, high, at, step, h = self._start(keys)
        self._mark(h)
        stored = np.array(offsets, dtype=np.int64).view(np.uint64) + np.uint64(1)
        rows = self._rows
        slots = np.uint64(self.slots)
        todo = np.arange(len(keys))
        while todo.size:
            if todo.size <= FEW_LEFT:
                for i in todo.tolist():
                    self.size += self._put_one(keys[i], offsets[i])
                break
            probed = rows[at]
            empty = probed[:, 0] == 0
            hit = ~empty & (probed[:, 1] == low[todo]) & (probed[:, 2] == high[todo])
            rows[at[hit], 0] = stored[todo[hit]]
            placed = hit
            if empty.any():
                free, claimant = at[empty], todo[empty]
                rows[free, 0] = claimant.astype(np.uint64) + np.uint64(1)
                won = rows[free, 0] == claimant.astype(np.uint64) + np.uint64(1)
                free, claimant = free[won], claimant[won]
                rows[free, 0] = stored[claimant]
                rows[free, 1] = low[claimant]
                rows[free, 2] = high[claimant]
                self.size += len(free)
                placed = hit.copy()
                placed[np.flatnonzero(empty)[won]] = True
            going = ~placed
            todo = todo[going]
            at = (at[going] + step[todo]) % slots


def _dict_lookup(small: dict[bytes, int]) -> Callable[[bytes], int]:
    """The dict's `get`."""
    find = small.get

    def get(key: bytes) -> int:
        return find(key, -1)

    return get


def _table_locator(words: memoryview, slots: int) -> Callable[[bytes], tuple[int, int, int]]:
    """One key's probe in the table, its constants bound once: (the word index of the key's slot,
    or of the empty slot ending its sequence, and the identity's two words). The same sequence as
    the bulk probes, for keys too few to probe in bulk."""
    end = 3 * slots
    pads = _PADS
    low_mask = _LOW
    from_le = _from_le

    def locate(key: bytes) -> tuple[int, int, int]:
        value = from_le(key + pads[len(key)], "little")
        h = hash(key) & low_mask
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
        return i, low, high

    return locate


def _table_lookup(locate: Callable[[bytes], tuple[int, int, int]], words: memoryview) -> Callable[[bytes], int]:
    """The table's lookup of one key: the offset held, -1 (an empty slot's 0, less one) when none."""

    def get(key: bytes) -> int:
        return words[locate(key)[0]] - 1

    return get


def _table_put(locate: Callable[[bytes], tuple[int, int, int]], words: memoryview) -> Callable[[bytes, int], int]:
    """The table's put of one key: 1 when the key is new, 0 when it was held (the caller checked
    the room)."""

    def put(key: bytes, offset: int) -> int:
        i, low, high = locate(key)
        new = not words[i]
        if new:
            words[i + 1] = low
            words[i + 2] = high
        words[i] = offset + 1
        return int(new)

    return put
