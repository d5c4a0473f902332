"""kazoo's callbacks reach the event loop in order, a burst of them through one wake-up of the
loop (ZkSession._post): a failover fires a watch per changed state, thousands at once."""

from __future__ import annotations

import threading
from typing import Any, Callable

import trio

from wirekafka.broker.metadata.zk.session import ZkSession


class _CountingToken:
    """A trio token that counts the loop's wake-ups."""

    def __init__(self, token: trio.lowlevel.TrioToken) -> None:
        self.token = token
        self.wakeups = 0

    def run_sync_soon(self, fn: Callable[..., Any], *args: Any) -> None:
        self.wakeups += 1
        self.token.run_sync_soon(fn, *args)


def test_a_burst_from_kazoos_threads_runs_in_order_through_few_wake_ups() -> None:
    session = ZkSession("127.0.0.1:1", 6000, 6000)
    ran: list[tuple[int, int]] = []

    async def main() -> _CountingToken:
        token = _CountingToken(trio.lowlevel.current_trio_token())
        session._token = token  # type: ignore[assignment]  # what start() sets

        def burst(thread: int) -> None:
            for i in range(2000):
                session._post(lambda i=i: ran.append((thread, i)))

        # the loop is held while two threads post: everything they post waits for one run
        threads = [threading.Thread(target=burst, args=(n,)) for n in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        while len(ran) < 4000:
            await trio.sleep(0.01)
        return token

    token = trio.run(main)
    assert len(ran) == 4000
    for n in range(2):
        assert [i for thread, i in ran if thread == n] == list(range(2000))
    assert token.wakeups == 1


def test_a_call_posted_while_the_queue_runs_gets_a_run_of_its_own() -> None:
    session = ZkSession("127.0.0.1:1", 6000, 6000)
    ran: list[str] = []

    async def main() -> None:
        session._token = trio.lowlevel.current_trio_token()

        def first() -> None:
            ran.append("first")
            threading.Thread(target=session._post, args=(lambda: ran.append("second"),)).start()

        session._post(first)
        with trio.fail_after(5):
            while len(ran) < 2:
                await trio.sleep(0.01)

    trio.run(main)
    assert ran == ["first", "second"]


def test_posts_after_the_loop_ended_are_dropped() -> None:
    session = ZkSession("127.0.0.1:1", 6000, 6000)

    async def main() -> None:
        session._token = trio.lowlevel.current_trio_token()

    trio.run(main)
    session._post(lambda: None)  # the run is over: nothing to wake, nothing raised
    session._post(lambda: None)
    assert session._posts == []
