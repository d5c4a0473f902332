"""The cleaner's offset map (wirekafka.storage.offset_map): Kafka's density (24-byte slots, >= 4M
keys in the default 128 MiB), the latest offset of a key winning, the full map refusing as the
cleaner expects, and keys told apart exactly as Kafka's MD5 map tells them apart - in the small
dict and in the table, and across the move from one to the other."""

from __future__ import annotations

import gc
import weakref

import pytest

from wirekafka.storage.key_identity import key_identity
from wirekafka.storage.offset_map import DICT_ENTRY_BYTES, SLOT_BYTES, OffsetMap, prime_at_most

DEFAULT_BUFFER = 128 * 1024 * 1024  # log.cleaner.dedupe.buffer.size
# a pair of 128-byte messages with one MD5 (Wang and Yu, 2004)
MD5_TWIN_A = bytes.fromhex(
    "d131dd02c5e6eec4693d9a0698aff95c2fcab58712467eab4004583eb8fb7f8955ad340609f4b30283e488832571415a"
    "085125e8f7cdc99fd91dbdf280373c5bd8823e3156348f5bae6dacd436c919c6dd53e2b487da03fd02396306d248cda0"
    "e99f33420f577ee8ce54b67080a80d1ec69821bcb6a8839396f9652b6ff72a70")
MD5_TWIN_B = bytes.fromhex(
    "d131dd02c5e6eec4693d9a0698aff95c2fcab50712467eab4004583eb8fb7f8955ad340609f4b30283e4888325f1415a"
    "085125e8f7cdc99fd91dbd7280373c5bd8823e3156348f5bae6dacd436c919c6dd53e23487da03fd02396306d248cda0"
    "e99f33420f577ee8ce54b67080280d1ec69821bcb6a8839396f965ab6ff72a70")


def _records(keys: list[bytes | None]) -> list[tuple[int, bytes | None, bool]]:
    """Records as batch_filter.keyed_records yields them (keys as identities), offset deltas 0, 1, ..."""
    return [(delta, None if key is None else key_identity(key), True) for delta, key in enumerate(keys)]


def _put(m: OffsetMap, base: int, keys: list[bytes | None], min_offset: int = 0) -> tuple[bool, int]:
    return m.put_keys(base, _records(keys), min_offset)


def _get(m: OffsetMap, key: bytes) -> int:
    return m.offsets_of([key_identity(key)])[0]


def _table(keys: int = 8000) -> OffsetMap:
    """A map of 1 MiB that moved its entries from the dict to the table (it held more keys than
    its memory allows a dict: 1 MiB / 150 bytes)."""
    m = OffsetMap(1 << 20, 0.9)
    assert _put(m, 0, [b"k%d" % i for i in range(keys)]) == (False, keys)
    assert m.size == keys and m._table is not None
    return m


def test_the_default_buffer_holds_kafkas_count_of_keys() -> None:
    m = OffsetMap(DEFAULT_BUFFER, 0.9)
    assert DEFAULT_BUFFER // SLOT_BYTES - 100 < m.slots <= DEFAULT_BUFFER // SLOT_BYTES
    assert m.capacity == int(m.slots * 0.9) and m.capacity >= 5_000_000
    assert OffsetMap(DEFAULT_BUFFER, 0.75).capacity >= 4_000_000


def test_the_map_is_capped_as_kafkas_and_never_fills_every_slot() -> None:
    assert OffsetMap(1 << 40, 0.9).slots <= (2**31 - 1) // SLOT_BYTES
    m = OffsetMap(100 * SLOT_BYTES, 1.0)
    assert m.capacity == m.slots - 1


def test_slot_counts_are_prime() -> None:
    assert [prime_at_most(n) for n in (2, 3, 4, 30, 100, 5_592_405)] == [2, 3, 3, 29, 97, 5_592_373]


@pytest.mark.parametrize("make", [lambda: OffsetMap(1 << 20, 0.9), _table], ids=["dict", "table"])
def test_the_latest_offset_of_a_key_wins(make) -> None:
    m = make()
    assert _put(m, 10_000, [b"a", b"long key, more than fifteen bytes", b"a", None]) == (False, 4)
    assert _put(m, 20_000, [b"long key, more than fifteen bytes"]) == (False, 1)
    assert _get(m, b"a") == 10_002
    assert _get(m, b"long key, more than fifteen bytes") == 20_000
    assert _get(m, b"absent") == -1 and _get(m, b"an absent key longer than 15 bytes") == -1


@pytest.mark.parametrize("make", [lambda: OffsetMap(1 << 20, 0.9), _table], ids=["dict", "table"])
def test_keys_are_told_apart_exactly_up_to_15_bytes_and_by_md5_past_them(make) -> None:
    m = make()
    keys = [b"", b"\x00", b"\x00\x00", b"a", b"a\x00", b"\x00a", b"x" * 15, b"x" * 16, b"x" * 15 + b"\x10",
            b"x" * 14 + b"\x0f", bytes(15), bytes(16)]
    assert _put(m, 50_000, keys) == (False, len(keys))
    assert [_get(m, k) for k in keys] == [50_000 + i for i in range(len(keys))]
    # two long keys with one MD5 are one key, as in Kafka's map: the later offset stands for both
    assert _put(m, 60_000, [MD5_TWIN_A, MD5_TWIN_B]) == (False, 2)
    assert _get(m, MD5_TWIN_A) == _get(m, MD5_TWIN_B) == 60_001


def test_records_before_the_first_dirty_offset_and_without_a_key_are_not_mapped() -> None:
    m = OffsetMap(1 << 20, 0.9)
    assert _put(m, 100, [b"old", None, b"new"], min_offset=101) == (False, 3)
    assert _get(m, b"old") == -1 and _get(m, b"new") == 102 and m.size == 1


@pytest.mark.parametrize("load_factor", [0.9, 0.5])
def test_a_full_map_refuses_the_next_key_even_one_it_holds(load_factor: float) -> None:
    m = OffsetMap(1 << 20, load_factor)
    keys = [b"key-%d" % i for i in range(m.capacity)]
    assert _put(m, 0, keys) == (False, m.capacity)
    assert m.size == m.capacity and m.utilization == pytest.approx(load_factor, abs=1 / m.slots)
    # Kafka checks the size before each put: a full map takes no key, known or new; the records
    # before the refused one are counted as seen
    assert _put(m, m.capacity, [None, b"another", b"key-0"]) == (True, 1)
    assert _put(m, m.capacity, [b"key-0"]) == (True, 0)
    assert [_get(m, k) for k in keys] == list(range(m.capacity))  # every probe sequence still ends
    assert _get(m, b"another") == -1 and _get(m, b"yet another key, longer than 15") == -1


def test_the_map_is_a_dict_while_the_keys_fit_the_memory_at_a_dicts_cost() -> None:
    m = OffsetMap(1 << 20, 0.9)
    fit = int((1 << 20) / DICT_ENTRY_BYTES * 0.9)  # what the dict-only map held
    first = [b"k%d" % i for i in range(fit - 2)] + [b"long key number %d ..." % i for i in range(2)]
    assert _put(m, 0, first) == (False, fit)
    assert m._table is None
    # the next key moves the entries to the table, in the middle of a batch
    second = [b"k0", None, b"k1", b"fresh", b"long key number 1 ..."]
    assert _put(m, fit, second) == (False, 5)
    assert m._table is not None and m.size == fit + 1
    assert _get(m, b"k0") == fit and _get(m, b"k1") == fit + 2
    assert _get(m, b"fresh") == fit + 3 and _get(m, b"long key number 1 ...") == fit + 4
    assert _get(m, b"k%d" % (fit - 3)) == fit - 3
    assert _get(m, b"long key number 0 ...") == fit - 2


def test_clear_empties_the_map_and_frees_the_table() -> None:
    m = _table()
    m.latest_offset = 7999
    m.clear()
    assert m.size == 0 and m.latest_offset == -1 and _get(m, b"k1") == -1
    assert m._table is None
    assert _put(m, 5, [b"k1"]) == (False, 1) and _get(m, b"k1") == 5


def test_a_dropped_map_unmaps_its_table_at_once() -> None:
    """The cleaner's process outlives its rounds: the table must not wait for the cycle collector."""
    m = _table()
    offsets_of = m.offsets_of
    assert m._table is not None
    region = weakref.ref(m._table._region)
    gc.disable()
    try:
        del m, offsets_of
        assert region() is None
    finally:
        gc.enable()


def _crowded(keys: int) -> OffsetMap:
    """A table of 97 slots holding `keys` keys (capacity 96): most keys are far down their probe
    sequences, and many met one empty slot in the same bulk round."""
    m = OffsetMap(100 * SLOT_BYTES, 1.0)
    assert m.slots == 97 and m.capacity == 96
    assert _put(m, 1000, [b"k%d" % i for i in range(keys)]) == (False, keys)
    assert m._table is not None and m.size == keys
    return m


def test_a_crowded_table_finds_every_key_in_bulk_and_one_by_one() -> None:
    """Also the presence bits: 95 keys set 190 bits in 128 bytes in one bulk put, many of them
    in one byte at once; a bit lost there would make its key absent to the bulk lookup."""
    m = _crowded(95)
    names = [b"k%d" % i for i in range(95)] + [b"absent", b"an absent key longer than 15 bytes"]
    identities = [key_identity(k) for k in names]
    wanted = [1000 + i for i in range(95)] + [-1, -1]
    assert m.offsets_of(identities) == wanted  # one bulk probe (95 keys)
    assert [m.offsets_of(identities[i:i + 1])[0] for i in range(len(names))] == wanted  # one by one
    # an update in bulk lands on the key's own slot: no key is held twice
    assert _put(m, 5000, [b"k%d" % i for i in range(0, 95, 2)]) == (False, 95 // 2 + 1)
    assert m.size == 95
    assert m.offsets_of(identities[:95]) == [5000 + i // 2 if i % 2 == 0 else 1000 + i for i in range(95)]


def test_puts_wait_across_small_batches_and_are_found_after_them() -> None:
    m = _table(8000)
    for i in range(2500):  # batches of one record, each its own put
        assert _put(m, 100_000 + i, [b"k%d" % (i * 3)]) == (False, 1)
    assert m._pending  # still waiting: fewer than PUT_MANY keys, far from full
    assert m.size == 8000  # updates only: the count is exact once flushed
    assert not m._pending
    assert [_get(m, b"k%d" % (i * 3)) for i in range(0, 2500, 7)] == [100_000 + i for i in range(0, 2500, 7)]


def test_the_map_fills_in_the_middle_of_a_batch_as_kafkas_check_says() -> None:
    m = _crowded(94)  # room for two more keys
    batch = [b"n1", b"k0", b"n1", None, b"n2", b"k0", b"n3"]
    # before each keyed record: size < capacity? n1 new (95), k0 held, n1 again, n2 new (96);
    # the second k0 finds the map full, so it and n3 are not mapped; four records seen
    assert _put(m, 9000, batch) == (True, 5)
    assert m.size == 96
    assert [_get(m, k) for k in (b"n1", b"n2", b"k0", b"n3")] == [9002, 9004, 9001, -1]
