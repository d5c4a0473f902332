"""What a broker does again and again leaves no reference cycles to the cyclic collector: a full
collection that finds garbage is not followed by a freeze (wirekafka/server/gc_policy.py), so a
steady trickle of cycles keeps every later full collection walking the whole unfrozen heap (at
10,000 partitions, 80-170 ms each). Found with gc.DEBUG_SAVEALL in the cluster-scale bench:
refused connects to a dead leader, and the order of a Metadata request's names."""

from __future__ import annotations

import gc
import socket
from typing import Callable, Iterator

import pytest
import trio

from wirekafka.broker.replication.peer_client import PeerClient, PeerUnavailable
from wirekafka.jvm import scala_hashset_order


@pytest.fixture
def collector_off() -> Iterator[None]:
    """Only the collections the test makes."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _cycles_of(action: Callable[[], None]) -> int:
    """How many objects the cyclic collector frees after `action` (collected before it too)."""
    gc.collect()
    action()
    return gc.collect()


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_refused_connect_leaves_no_cycles(collector_off: None) -> None:
    client = PeerClient("127.0.0.1", _closed_port(), "garbage-test", 1.0, 1.0)

    async def refused() -> None:
        with pytest.raises(PeerUnavailable, match="cannot connect"):
            await client._connect()  # the first: what trio sets up once
        gc.collect()
        for _ in range(5):
            with pytest.raises(PeerUnavailable, match="cannot connect"):
                await client._connect()
        assert gc.collect() == 0

    trio.run(refused)


def test_the_scala_set_order_of_many_names_leaves_no_cycles(collector_off: None) -> None:
    names = [f"topic-{i}" for i in range(100)]
    assert _cycles_of(lambda: scala_hashset_order(names)) == 0
