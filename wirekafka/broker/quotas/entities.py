"""Client quotas as the cluster metadata keeps them (KIP-546): per quota entity, its quota values.

An entity names a user, a client id, both, or an IP address; a name of None is that type's
default entity (`<default>`). Kafka 4 keeps them in its metadata image, a Java HashMap, and both
DescribeClientQuotas and the alter results come out in that map's order, so this store keeps its
entities (and each entity's keys) in the order Kafka's image would have them after the same
changes. On a ZooKeeper cluster they live where Kafka 3.9 writes them: /config/users/<user>,
/config/clients/<client>, /config/users/<user>/clients/<client> and /config/ips/<ip>, values as
strings, beside a user's SCRAM credentials.

This module is the data; broker/quota_manager.py enforces it and handlers/client_quotas.py is the
admin API."""

from __future__ import annotations

import decimal
import math
from typing import Iterable, Mapping, cast

from wirekafka.jvm import java_hash, java_hashmap_order

USER, CLIENT_ID, IP = "user", "client-id", "ip"
ENTITY_TYPES = (USER, CLIENT_ID, IP)
DEFAULT_NAME = "<default>"  # a default entity's name in ZooKeeper paths and metric tags

PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
CONTROLLER_MUTATION_RATE = "controller_mutation_rate"
CONNECTION_CREATION_RATE = "connection_creation_rate"
# Kafka's QuotaConfig: the keys a user / client-id entity takes, and an ip entity's, with their
# ConfigDef types (which decide the values AlterClientQuotas accepts).
USER_AND_CLIENT_KEYS = {PRODUCER_BYTE_RATE: "LONG", CONSUMER_BYTE_RATE: "LONG", REQUEST_PERCENTAGE: "DOUBLE",
                        CONTROLLER_MUTATION_RATE: "DOUBLE"}
IP_KEYS = {CONNECTION_CREATION_RATE: "INT"}
# the integral ConfigDef types among them: their largest value, and how Kafka's messages name them
INTEGRAL_TYPES = {"INT": (2**31 - 1, "an INT"), "LONG": (2**63 - 1, "a LONG")}

# An entity: (type, name) pairs sorted by type, name None for the type's default.
Entity = tuple[tuple[str, "str | None"], ...]


def entity_of(pairs: Iterable[tuple[str, str | None]]) -> Entity:
    """The entity the pairs name; a type given twice keeps its last name, as Kafka's map does."""
    return tuple(sorted(dict(pairs).items()))


def entity_hash(entity: Entity) -> int:
    """`ClientQuotaEntity.hashCode()`: Objects.hash over its entries map."""
    return (31 + sum(java_hash(t) ^ java_hash(n) for t, n in entity)) & 0xFFFFFFFF


def entity_entries(entity: Entity) -> list[tuple[str, str | None]]:
    """The entity's (type, name) pairs in the order Kafka's entries map lists them."""
    names = dict(entity)
    return [(t, names[t]) for t in java_hashmap_order(names)]


def entity_text(entity: Entity) -> str:
    """`ClientQuotaEntity.toString()`, as Kafka's messages quote it."""
    inner = ", ".join(f"{t}={'null' if n is None else n}" for t, n in entity_entries(entity))
    return f"ClientQuotaEntity(entries={{{inner}}})"


def keys_for(entity: Entity) -> dict[str, str]:
    return IP_KEYS if any(t == IP for t, _ in entity) else USER_AND_CLIENT_KEYS


def stored_text(key: str, value: float) -> str:
    """A quota value as Kafka 3.9 writes it into a config znode: integral types as integers,
    doubles as Java's Double.toString."""
    kind = USER_AND_CLIENT_KEYS.get(key) or IP_KEYS.get(key)
    if kind in INTEGRAL_TYPES:
        return str(int(value + 1e-6))
    return java_double_text(value)


def java_double_text(value: float) -> str:
    """Java's Double.toString: plain decimals from 10^-3 up to 10^7 (Python's repr prints those
    the same way), computerized scientific notation outside ("1.0E7"), shortest digits."""
    if value == 0 or 1e-3 <= abs(value) < 1e7 or not math.isfinite(value):
        return repr(float(value)) if math.isfinite(value) else {math.inf: "Infinity", -math.inf: "-Infinity"}.get(value, "NaN")
    sign, digits, exponent = decimal.Decimal(repr(float(value))).as_tuple()
    if not isinstance(exponent, int):  # 'n', 'N', 'F': NaN and infinities, answered above
        raise ValueError(f"not a finite double: {value!r}")
    figures = list(digits)
    while len(figures) > 1 and figures[-1] == 0:
        figures.pop()
        exponent += 1
    scientific = len(figures) - 1 + exponent
    rest = "".join(map(str, figures[1:])) or "0"
    return f"{'-' if sign else ''}{figures[0]}.{rest}E{scientific}"


class ClientQuotas:
    def __init__(self) -> None:
        self._quotas: dict[Entity, dict[str, float]] = {}  # in Kafka's image order
        self.version = 0  # bumped on every change, so that enforcement re-reads the quotas

    def get(self, entity: Entity) -> dict[str, float]:
        return dict(self._quotas.get(entity, {}))

    def entities(self) -> dict[Entity, dict[str, float]]:
        return {e: dict(q) for e, q in self._quotas.items()}

    def __bool__(self) -> bool:
        return bool(self._quotas)

    def apply(self, changes: Mapping[Entity, Mapping[str, float | None]]) -> None:
        """One metadata delta: per entity, keys set to a value or removed (None), in Kafka's
        order for the rebuilt image (kept entities, then new ones in the delta's order)."""
        changes_order = java_hashmap_order(changes, hash=entity_hash)
        rebuilt: list[tuple[Entity, dict[str, float]]] = []
        for entity, quotas in self._quotas.items():
            change = changes.get(entity)
            updated = quotas if change is None else _apply_keys(quotas, change)
            if updated:
                rebuilt.append((entity, updated))
        known = {e for e, _ in rebuilt}
        for entity in changes_order:
            if entity not in self._quotas and entity not in known:
                added = _apply_keys({}, changes[entity])
                if added:
                    rebuilt.append((entity, added))
        order = java_hashmap_order([e for e, _ in rebuilt], capacity=len(self._quotas), hash=entity_hash)
        values = dict(rebuilt)
        self._quotas = {e: values[e] for e in order}
        self.version += 1

    def replace_all(self, quotas: Mapping[Entity, Mapping[str, float]]) -> None:
        """Every entity's quotas from a full read (a ZooKeeper snapshot or the topics file)."""
        self._quotas = {}
        self.apply({e: dict(q) for e, q in quotas.items() if q})

    def snapshot(self) -> list[dict[str, object]]:
        """The stored form, in order: [{"entity": [[type, name], ...], "quotas": {key: value}}]."""
        return [{"entity": [list(p) for p in e], "quotas": dict(q)} for e, q in self._quotas.items()]

    def load(self, saved: Iterable[Mapping[str, object]]) -> None:
        # the stored form (snapshot) read back from JSON
        self._quotas = {entity_of((p[0], p[1]) for p in cast("list[tuple[str, str | None]]", item["entity"])):
                        dict(cast("dict[str, float]", item["quotas"])) for item in saved}
        self.version += 1

    def describe(self, exact: Mapping[str, str | None], specified: set[str], strict: bool
                 ) -> list[tuple[Entity, dict[str, float]]]:
        """The entities a DescribeClientQuotas filter matches: every exact component's name (None:
        the default entity), every specified type present, and with strict no other type."""
        out = []
        for entity, quotas in self._quotas.items():
            names = dict(entity)
            if strict and len(names) != len(exact) + len(specified):
                continue
            if any(t not in names or names[t] != n for t, n in exact.items()):
                continue
            if any(t not in names for t in specified):
                continue
            out.append((entity, quotas))
        return out


def _apply_keys(quotas: Mapping[str, float], change: Mapping[str, float | None]) -> dict[str, float]:
    """ClientQuotaDelta.apply: kept keys in the image's order, then new ones in the change's."""
    kept = [(k, change.get(k, v) if k in change else v) for k, v in quotas.items()]
    kept = [(k, v) for k, v in kept if v is not None]
    added = [(k, v) for k in java_hashmap_order(change) if k not in quotas and (v := change[k]) is not None]
    items = dict(kept + added)
    return {k: items[k] for k in java_hashmap_order(list(items), capacity=len(quotas))}
