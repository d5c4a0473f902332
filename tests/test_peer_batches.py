"""PeerBatches (wirekafka/broker/replication/peer_batches.py): one request in flight per peer, what
is asked meanwhile goes together in the next one, one key at most once per request, and a
request cut short answers its asks with the retriable answer without stopping the others."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable

import trio
import trio.testing

from wirekafka.broker.replication.peer_batches import PeerBatches


def _in_trio(case: Callable[[], Awaitable[None]]) -> Callable[[], None]:
    @functools.wraps(case)
    def run() -> None:
        trio.run(case)
    return run


class Peer:
    """A peer that answers each item with (item, request number), holding every request until
    `release` is set, so the test decides when a round trip ends."""

    def __init__(self) -> None:
        self.requests: list[tuple[int, list[str]]] = []
        self.release = trio.Event()

    async def send(self, node: int, items: list[str]) -> list[tuple[str, int]]:
        self.requests.append((node, list(items)))
        number = len(self.requests)
        await self.release.wait()
        return [(item, number) for item in items]


async def _ask_all(batches: PeerBatches, asks: list[tuple[int, str, str]], answers: dict[str, object],
                   nursery: trio.Nursery) -> None:
    async def one(node: int, key: str, item: str) -> None:
        answers[item] = await batches.ask(node, key, item)

    for node, key, item in asks:
        nursery.start_soon(one, node, key, item)
        await trio.testing.wait_all_tasks_blocked()


@_in_trio
async def test_asks_made_while_a_request_is_in_flight_go_together_in_the_next() -> None:
    peer = Peer()
    batches: PeerBatches[str, object] = PeerBatches(peer.send, lambda item: "unanswered")
    answers: dict[str, object] = {}
    async with trio.open_nursery() as nursery:
        await _ask_all(batches, [(1, "a", "a1"), (1, "b", "b1"), (1, "c", "c1"), (2, "d", "d2")], answers, nursery)
        # the first ask to each peer left at once; the next two to peer 1 wait for its round trip
        assert peer.requests == [(1, ["a1"]), (2, ["d2"])]
        peer.release.set()
    assert peer.requests == [(1, ["a1"]), (2, ["d2"]), (1, ["b1", "c1"])]
    assert answers == {"a1": ("a1", 1), "d2": ("d2", 2), "b1": ("b1", 3), "c1": ("c1", 3)}


@_in_trio
async def test_one_key_goes_once_per_request() -> None:
    peer = Peer()
    batches: PeerBatches[str, object] = PeerBatches(peer.send, lambda item: "unanswered")
    answers: dict[str, object] = {}
    async with trio.open_nursery() as nursery:
        await _ask_all(batches, [(1, "x", "first"), (1, "p", "p-a"), (1, "p", "p-b"), (1, "q", "q-a")],
                       answers, nursery)
        peer.release.set()
    assert peer.requests == [(1, ["first"]), (1, ["p-a", "q-a"]), (1, ["p-b"])]
    assert answers["p-b"] == ("p-b", 3)


@_in_trio
async def test_a_cancelled_sender_answers_its_batch_as_unanswered_and_the_queue_goes_on() -> None:
    peer = Peer()
    batches: PeerBatches[str, object] = PeerBatches(peer.send, lambda item: f"unanswered {item}")
    answers: dict[str, object] = {}
    async with trio.open_nursery() as nursery:
        first = trio.CancelScope()

        async def sender() -> None:
            with first:
                answers["s"] = await batches.ask(1, "s", "s")

        nursery.start_soon(sender)
        await trio.testing.wait_all_tasks_blocked()
        await _ask_all(batches, [(1, "t", "t")], answers, nursery)
        first.cancel()  # the request carrying "s" is cut short
        await trio.testing.wait_all_tasks_blocked()
        assert peer.requests == [(1, ["s"]), (1, ["t"])]  # the queued ask went out on its own
        peer.release.set()
    assert "s" not in answers and answers["t"] == ("t", 2)


@_in_trio
async def test_a_queued_ask_cancelled_is_never_sent() -> None:
    peer = Peer()
    batches: PeerBatches[str, object] = PeerBatches(peer.send, lambda item: "unanswered")
    answers: dict[str, object] = {}
    async with trio.open_nursery() as nursery:
        await _ask_all(batches, [(1, "a", "a")], answers, nursery)
        queued = trio.CancelScope()

        async def waiter() -> None:
            with queued:
                answers["gone"] = await batches.ask(1, "g", "gone")

        nursery.start_soon(waiter)
        await trio.testing.wait_all_tasks_blocked()
        queued.cancel()
        await trio.testing.wait_all_tasks_blocked()
        await _ask_all(batches, [(1, "b", "b")], answers, nursery)
        peer.release.set()
    assert peer.requests == [(1, ["a"]), (1, ["b"])] and "gone" not in answers


@_in_trio
async def test_a_quiet_peer_is_forgotten_once_answered() -> None:
    peer = Peer()
    peer.release.set()
    batches: PeerBatches[str, object] = PeerBatches(peer.send, lambda item: "unanswered")
    assert await batches.ask(3, "k", "one") == ("one", 1)
    assert await batches.ask(3, "k", "two") == ("two", 2)
    assert not batches._busy and not batches._queues  # noqa: SLF001 - nothing left behind
