"""AnswerCache: answers derived only from the cluster metadata (Metadata's), kept while it stays
the same, and each topic's part of them kept across changes while that topic's state stays the
same.

Why two levels: in a cluster the metadata changes all the time (an ISR here, a leader there),
and a whole answer describing 10,000 partitions took about 100 ms to build and encode again
after each change, on the event loop. A change touches few topics: an answer rebuilt from the
parts of the topics that did not change (kept with the key their state had, compared on use)
costs in proportion to the change."""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Callable, Container

import trio

if TYPE_CHECKING:
    from wirekafka.broker.metadata.cluster_metadata import Topic

# (listener, version) shapes whose topic parts are kept at once: clients of a few kinds ask
# with a few versions; each shape holds its own copy of every topic (about 4 MB per 10,000
# partitions), so a zoo of versions must not hold 14 of them
MAX_SHAPES = 4


class AnswerCache:
    """topic_key(topic): what every partition view of the topic depends on in the metadata that
    owns the cache, as one value compared with ==: equal keys, equal views."""

    def __init__(self, topic_key: Callable[[Topic], object]) -> None:
        self.topic_key = topic_key
        self.answers: dict[tuple, Any] = {}  # whole answers, emptied by changed()
        self.named_partitions = 0  # partitions in the answers to topics by name among them
        # (listener, version) -> topic name -> (the topic's key when built, its part)
        self._parts: OrderedDict[tuple[str, int], dict[str, tuple[object, Any]]] = OrderedDict()
        self._applied = trio.Event()  # set when the owner applied a change, until wait_applied takes it

    def changed(self, topics: Container[str]) -> None:
        """The metadata changed, and holds these topics now: no whole answer holds any more;
        the parts of topics that are gone are dropped, the others are checked against their
        keys when used."""
        self.answers = {}
        self.named_partitions = 0
        for held in self._parts.values():
            for name in [n for n in held if n not in topics]:
                del held[name]

    def parts(self, listener: str, version: int) -> dict[str, tuple[object, Any]]:
        """The topics' parts of answers on listener at version: name -> (key, part). The caller
        compares the key with the topic's key now and replaces a part whose key differs."""
        shape = (listener, version)
        held = self._parts.get(shape)
        if held is None:
            held = self._parts[shape] = {}
            while len(self._parts) > MAX_SHAPES:
                self._parts.popitem(last=False)
        else:
            self._parts.move_to_end(shape)
        return held

    def held(self) -> list[tuple[str, int, dict[str, tuple[object, Any]]]]:
        """The shapes whose parts are kept, least recently asked for first: (listener, version,
        their parts), as parts() gives them, without counting as asked for."""
        return [(listener, version, held) for (listener, version), held in self._parts.items()]

    def applied(self) -> None:
        """The owner applied a change to the metadata (a reconcile's new snapshot): a task
        waiting in wait_applied builds the parts it made stale (handlers/metadata.py)."""
        self._applied.set()

    async def wait_applied(self) -> None:
        """Until the owner applied a change since the last return (changes meanwhile are one)."""
        await self._applied.wait()
        self._applied = trio.Event()
