"""Who waits for a replica to move, and how often it has moved.

Why its own module: a replica is waited on two ways. A long-polling fetch or an acks=all produce
waits for one moment (a trio.Event, set once, then forgotten). A fetch session's quiet
partitions (quiet_partitions.py) wait for as long as the session lives: each is told once, by a
call, when the replica next moves, and no fetch looks at it before. The change count lets the
follower's fetcher and a session tell cheaply whether anything moved since they last looked."""

from __future__ import annotations

from typing import Any, Protocol

import trio


class PartitionWatch(Protocol):
    """What a fetch session's quiet partitions are told when their replica moves."""

    def stirred(self, part: Any, replica: Any) -> None: ...


class ReadWaiters:
    """A replica's waiters and change count; on the event loop only."""

    def __init__(self) -> None:
        self.changes = 0  # moves when what a read finds may have (quiet_partitions.py)
        self._events: set[trio.Event] = set()
        self._watches: dict[Any, PartitionWatch] = {}  # session partition -> its session's watch

    def add(self, event: trio.Event) -> None:
        self._events.add(event)

    def discard(self, event: trio.Event) -> None:
        self._events.discard(event)

    def watch(self, part: object, watch: PartitionWatch) -> None:
        """Tell watch (once) when the replica next moves: part, a fetch session's partition, was
        set aside as quiet."""
        self._watches[part] = watch

    def unwatch(self, part: object) -> None:
        self._watches.pop(part, None)

    def stir(self, replica: object) -> None:
        """What a read finds, the role, the ISR or the log start may have moved: count it and
        tell the sessions watching."""
        self.changes += 1
        if self._watches:
            watches, self._watches = self._watches, {}
            for part, watch in watches.items():
                watch.stirred(part, replica)

    def wake(self, replica: object) -> None:
        """Stir, and end every wait: the high watermark, the log end, the last stable offset or
        the role moved."""
        self.stir(replica)
        for event in self._events:
            event.set()
        self._events.clear()
