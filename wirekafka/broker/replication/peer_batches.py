"""PeerBatches: what callers ask of one peer broker, merged into one request while another is in
flight, as Kafka's inter-broker send threads do for transaction markers
(TransactionMarkerChannelManager) and transaction verification (AddPartitionsToTxnManager).

Each destination has at most one request outstanding. A caller that finds none goes out at once
(no added latency when the broker is quiet); callers that arrive meanwhile queue, and the next
request carries all of them. Under load the number of requests per destination is bounded by the
round trips, not by the number of transactions.

There is no sender task: the caller whose ask heads the queue sends, and when its own answer is
in, hands the sending on to the next queued caller, so a caller never waits for later callers'
round trips. Two asks with the same key (one producer's markers, one transactional id's
verification) never share a request, since their answers could not be told apart; the later
one goes in the next request. A request that fails with an exception (the sending caller
cancelled) answers every ask it carried with `unanswered`, a retriable answer."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import trio

Item = TypeVar("Item")
Answer = TypeVar("Answer")


@dataclass(eq=False)
class _Ask(Generic[Item, Answer]):
    key: Hashable
    item: Item
    woken: trio.Event = field(default_factory=trio.Event)
    answer: Answer | None = None
    answered: bool = False
    sends: bool = False  # handed the sending role while it waited


class PeerBatches(Generic[Item, Answer]):
    def __init__(self, send: Callable[[int, list[Item]], Awaitable[list[Answer]]],
                 unanswered: Callable[[Item], Answer]) -> None:
        """send(node, items) makes one request of them and returns their answers in order."""
        self._send = send
        self._unanswered = unanswered
        self._queues: dict[int, list[_Ask[Item, Answer]]] = {}
        self._busy: set[int] = set()  # destinations with a request in flight or a sender woken

    async def ask(self, node: int, key: Hashable, item: Item) -> Answer:
        """item's answer from broker `node`, sent alone or with whatever else is queued for it."""
        mine: _Ask[Item, Answer] = _Ask(key, item)
        queue = self._queues.setdefault(node, [])
        queue.append(mine)
        if node in self._busy:
            try:
                await mine.woken.wait()
            except BaseException:  # cancelled while queued: it is not sent, and others go on
                if mine in queue:
                    queue.remove(mine)
                    if mine.sends:
                        self._pass_on(node)
                raise
            if not mine.sends:
                return mine.answer  # type: ignore[return-value]  # set with answered
        self._busy.add(node)
        try:
            while not mine.answered:
                await self._send_batch(node, queue, mine)
        finally:
            self._pass_on(node)
        return mine.answer  # type: ignore[return-value]  # set with answered

    async def _send_batch(self, node: int, queue: list[_Ask[Item, Answer]], mine: _Ask[Item, Answer]) -> None:
        keys: set[Hashable] = set()
        batch: list[_Ask[Item, Answer]] = []
        for queued in queue:
            if queued.key not in keys:
                keys.add(queued.key)
                batch.append(queued)
        for queued in batch:
            queue.remove(queued)
        try:
            answers = await self._send(node, [a.item for a in batch])
        except BaseException:
            for a in batch:
                self._settle(a, self._unanswered(a.item), mine)
            raise
        for a, answer in zip(batch, answers, strict=True):
            self._settle(a, answer, mine)

    @staticmethod
    def _settle(ask: _Ask[Item, Answer], answer: Answer, mine: _Ask[Item, Answer]) -> None:
        ask.answer, ask.answered = answer, True
        if ask is not mine:
            ask.woken.set()

    def _pass_on(self, node: int) -> None:
        """The sending role to the first queued caller, or the destination idle."""
        queue = self._queues.get(node)
        if queue:
            queue[0].sends = True
            queue[0].woken.set()
        else:
            self._busy.discard(node)
            self._queues.pop(node, None)
