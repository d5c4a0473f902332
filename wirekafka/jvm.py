"""What a Kafka broker's JVM computes that its output depends on: Java's and Kafka's hash codes,
and the order in which Kafka's Java and Scala collections list their contents.

Kafka places a consumer group or a transactional id by `String.hashCode`, builds most of its
znode JSON from hash maps, and words many answers and error messages from Scala collections, so
what it writes comes out in hash order, not in the order things were added. A client or a JSON
reader does not care, but placing a group where Kafka does and a byte-for-byte comparison with a
real broker's znodes, answers and error messages do. So the hashes live here,
once: Java's `String.hashCode`, `Integer.hashCode` (an int hashes to itself), `Objects.hash`,
Kafka's `Uuid.hashCode` and `TopicPartition.hashCode`; and with them the iteration orders of the
collections Kafka uses there (Scala 2.13's `mutable.HashMap` and immutable `Map`/`Set`,
`java.util.HashMap`, and `java.util.Properties`, which since Java 9 keeps its entries in a
`ConcurrentHashMap`). Keys are `str`, `int`, `uuid.UUID` or TopicPartitionKey.

Hashes are unsigned 32-bit values (a Java int's bits) unless the name says otherwise;
`java_int` turns one into the signed int Java sees."""

from __future__ import annotations

import functools
import uuid
from typing import Callable, Hashable, Iterable, NamedTuple, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

_MASK = 0xFFFFFFFF


class TopicPartitionKey(NamedTuple):
    """A key that hashes as Kafka's TopicPartition: Objects.hash(partition, topic)."""

    topic: str
    partition: int


def java_hash(key: object) -> int:
    """`hashCode()` (Scala's `##`) of a Java String, an Integer, Kafka's Uuid or TopicPartition,
    or 0 for null."""
    if key is None:
        return 0
    if isinstance(key, TopicPartitionKey):
        return java_objects_hash(key.partition, java_hash(key.topic))
    if isinstance(key, str):
        return _string_hash(key)
    if isinstance(key, int):
        return key & _MASK
    if isinstance(key, uuid.UUID):
        return kafka_uuid_hash(key)
    raise TypeError(f"no JVM hash for {type(key).__name__}")


def java_int(x: int) -> int:
    """A Java (int) cast: the low 32 bits, signed."""
    x &= _MASK
    return x - (1 << 32) if x & 0x80000000 else x


def java_string_hash(s: str) -> int:
    """Java's String.hashCode (over UTF-16 code units) as the signed int Java sees."""
    return java_int(java_hash(s))


def kafka_uuid_hash(u: uuid.UUID) -> int:
    """Kafka's Uuid.hashCode: the two halves of (most ^ least significant 64 bits) xor-ed."""
    xor = (u.int >> 64) ^ (u.int & 0xFFFFFFFFFFFFFFFF)
    return ((xor >> 32) ^ xor) & _MASK


def java_objects_hash(*hashes: int) -> int:
    """Java's Objects.hash (Arrays.hashCode) of values with these hash codes: 31 * the hash so far
    + the next, from 1. Also the shape of Kafka's TopicPartition and TopicIdPartition hashCode and
    of a List's."""
    h = 1
    for element in hashes:
        h = (31 * h + element) & _MASK
    return h


def _utf16_units(s: str) -> Iterable[int]:
    for ch in s:
        cp = ord(ch)
        if cp < 0x10000:
            yield cp
        else:
            cp -= 0x10000
            yield 0xD800 + (cp >> 10)
            yield 0xDC00 + (cp & 0x3FF)


@functools.lru_cache(maxsize=1 << 16)
def _string_hash(key: str) -> int:
    """String.hashCode(), kept for the names asked again and again: the topic of each of 10,000
    partitions in one ControlledShutdown answer's order (130 ms of CPU, every name hashed twice
    per partition, before)."""
    h = 0
    for unit in _utf16_units(key):
        h = (31 * h + unit) & _MASK
    return h


def scala_mutable_hashmap_order(keys: Iterable[K]) -> list[K]:
    """Iteration order of a Scala 2.13 `mutable.HashMap` that started empty (a 16-slot table).

    The table doubles just before the insert that would reach three quarters of it; a slot is the
    hash with its high half folded into the low half, masked; a slot's chain is sorted by that
    folded hash (as a signed int)."""
    distinct = list(dict.fromkeys(keys))
    size = 16
    for count in range(len(distinct)):
        if count + 1 >= int(size * 0.75):
            size *= 2

    def folded(key: K) -> int:
        h = java_hash(key)
        return java_int(h ^ (h >> 16))

    def slot_then_hash(key: K) -> tuple[int, int]:
        h = folded(key)
        return h & (size - 1), h

    return sorted(distinct, key=slot_then_hash)


def _improve(h: int) -> int:
    """Scala 2.13's `Hashing.improve`, the spreading step of its immutable hash collections."""
    h = (h + (~(h << 9) & _MASK)) & _MASK
    h ^= h >> 14
    h = (h + (h << 4)) & _MASK
    return h ^ (h >> 10)


def scala_immutable_order(keys: Iterable[K]) -> list[K]:
    """Iteration order of a Scala 2.13 immutable `Map` or `Set` built from `keys` in that order.

    Up to four entries are kept in insertion order (`Map1`..`Map4`); beyond that it is a CHAMP
    trie, walked node by node: a node's own entries in the order of their 5-bit hash fragment, then
    its sub-nodes in the same order."""
    distinct = list(dict.fromkeys(keys))
    if len(distinct) <= 4:
        return distinct
    return scala_hashset_order(distinct)


def scala_hashset_order(keys: Iterable[K]) -> list[K]:
    """Iteration order of a Scala 2.13 immutable `HashSet` (a CHAMP trie) of `keys`, whatever its
    size: what a `HashSet`'s own `partition`, `filter`, `diff` and `map` build, down to one entry.
    A node's own entries come in the order of their 5-bit hash fragment, then its sub-nodes in the
    same order."""
    return _champ_order(list(dict.fromkeys(keys)), 0)


def _champ_order(group: list[K], shift: int) -> list[K]:
    """The order of one CHAMP node's keys at this hash shift (scala_hashset_order). A function of
    the module, not a closure calling itself: such a closure is a reference cycle, left to the
    cyclic collector at every call (in a broker, every Metadata request for more than four topics)."""
    if shift > 30:  # the same hash: one collision node, in the order its keys were added
        return group
    by_fragment: dict[int, list[K]] = {}
    for k in group:
        by_fragment.setdefault((_improve(java_hash(k)) >> shift) & 31, []).append(k)
    fragments = sorted(by_fragment)
    out = [by_fragment[f][0] for f in fragments if len(by_fragment[f]) == 1]
    for f in fragments:
        if len(by_fragment[f]) > 1:
            out += _champ_order(by_fragment[f], shift + 5)
    return out


def java_properties_order(keys: Iterable[str]) -> list[str]:
    """Iteration order of a `java.util.Properties` (Java 9+) after `setProperty` of `keys` in order.

    Its `ConcurrentHashMap` starts with 16 bins and doubles when the count reaches three quarters;
    a new key goes to the tail of its bin (hash with the high half folded in, masked). Doubling
    splits each bin in two: the bin's longest tail that moves together keeps its order, the nodes
    before it are prepended one by one, so they come out reversed."""
    size = 16
    bins: list[list[str]] = [[] for _ in range(size)]

    def spread(key: str) -> int:
        h = java_hash(key)
        return (h ^ (h >> 16)) & 0x7FFFFFFF

    for count, key in enumerate(dict.fromkeys(keys), start=1):
        bins[spread(key) & (size - 1)].append(key)
        if count >= size - (size >> 2):
            grown: list[list[str]] = [[] for _ in range(2 * size)]
            for index, chain in enumerate(bins):
                if not chain:
                    continue
                high = [bool(spread(k) & size) for k in chain]
                run = len(chain) - 1
                while run > 0 and high[run - 1] == high[run]:
                    run -= 1
                low_part = chain[run:] if not high[run] else []
                high_part = chain[run:] if high[run] else []
                for k, is_high in zip(chain[:run], high[:run]):
                    if is_high:
                        high_part.insert(0, k)
                    else:
                        low_part.insert(0, k)
                grown[index], grown[index + size] = low_part, high_part
            bins, size = grown, 2 * size
    return [k for chain in bins for k in chain]


def java_hashmap_order(keys: Iterable[K], capacity: int = 16, hash: Callable[[K], int] | None = None) -> list[K]:
    """Iteration order of a `java.util.HashMap` built with `new HashMap<>(capacity)` (the default
    constructor is 16) after `put` of `keys` in order. The table starts at the power of two at or
    above the capacity; a key goes to the tail of its bucket (hash with the high half folded in,
    masked); the table doubles once the count exceeds three quarters of it, and doubling keeps each
    bucket's keys in order in both halves. `hash` gives a key's `hashCode()` for keys that are not
    strings or ints. (A bucket of 8 or more turns into a tree; not modelled.)"""
    size = 1
    while size < capacity:
        size *= 2
    buckets: list[list[K]] = [[] for _ in range(size)]
    key_hash = hash or java_hash

    def spread(key: K) -> int:
        h = key_hash(key) & _MASK
        return h ^ (h >> 16)

    for count, key in enumerate(dict.fromkeys(keys), start=1):
        buckets[spread(key) & (size - 1)].append(key)
        if count > size * 3 // 4:
            size *= 2
            grown: list[list[K]] = [[] for _ in range(size)]
            for chain in buckets:
                for k in chain:
                    grown[spread(k) & (size - 1)].append(k)
            buckets = grown
    return [k for chain in buckets for k in chain]


def kafka_grouped(answers: dict[TopicPartitionKey, V]) -> list[tuple[str, list[V]]]:
    """Per-partition answers as Kafka's ReplicaManager and KafkaApis group them into topics: a
    `groupBy(topic)` of a map keyed by TopicPartition, whose result is an immutable HashMap (topics
    in its hash order, even for one or two) of maps built entry by entry (each topic's partitions
    in a `mutable.HashMap`'s order, however it was filled)."""
    by_topic = _keys_by_topic(answers)
    return [(topic, [answers[k] for k in scala_mutable_hashmap_order(by_topic[topic])])
            for topic in scala_hashset_order(by_topic)]


def _keys_by_topic(keys: Iterable[TopicPartitionKey]) -> dict[str, list[TopicPartitionKey]]:
    by_topic: dict[str, list[TopicPartitionKey]] = {}
    for key in keys:
        by_topic.setdefault(key.topic, []).append(key)
    return by_topic


def kafka_immutable_grouped(answers: dict[TopicPartitionKey, V]) -> list[tuple[str, list[V]]]:
    """kafka_grouped for answers Kafka collected in an immutable Map (in `answers`' order): up to
    four entries keep that order, and so does each topic's map built from it; with more it is a
    HashMap, whose groupBy builds each topic's partitions into a HashMap of their own (its hash
    order: a CHAMP trie's order depends on all its keys, so not the whole map's order)."""
    hashed = len(answers) > 4
    by_topic = _keys_by_topic(answers)
    return [(topic, [answers[k] for k in (scala_hashset_order(by_topic[topic]) if hashed else by_topic[topic])])
            for topic in scala_hashset_order(by_topic)]
