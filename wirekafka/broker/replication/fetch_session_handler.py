"""A follower's side of a fetch session (KIP-227), as Kafka's FetchSessionHandler keeps it.

Why: a follower fetches every partition it follows on a leader, many times a second; in a
session it names only the partitions whose fetch position or limits changed, and the leader
answers only partitions with news (broker/fetch_sessions.py is the leader's side).

- The first fetch is full with epoch 0, asking for a session. If the leader gives one, the next
  fetches are incremental (epoch 1, 2, ...): partitions new or changed are sent, partitions
  dropped are forgotten. A leader that gives none (id 0) gets full fetches asking anew.
- A session error (the leader restarted, evicted the session, or lost count), a failed request or
  a replaced replica starts over: a full fetch, closing the old session if the leader may still
  hold it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from wirekafka.broker.replica.fetch_sessions import INITIAL_EPOCH, INVALID_SESSION_ID, next_epoch
from wirekafka.protocol.errors import ErrorCode

Key = tuple[str, int]  # (topic, partition)


@dataclass(frozen=True, slots=True)
class PartitionFetch:
    """What a fetch asks of one partition; a change in any of it is sent in the next request."""

    fetch_offset: int
    log_start_offset: int
    current_leader_epoch: int
    max_bytes: int
    last_fetched_epoch: int = -1  # the epoch of the follower's last batch: the leader checks divergence


@dataclass(frozen=True, slots=True)
class NextRequest:
    session_id: int
    epoch: int
    to_send: dict[Key, PartitionFetch]
    forgotten: list[Key]


class FetchSessionHandler:
    def __init__(self) -> None:
        self.session_id = INVALID_SESSION_ID
        self.epoch = INITIAL_EPOCH
        self._session: dict[Key, PartitionFetch] = {}  # what the leader's session holds
        self._pending: dict[Key, PartitionFetch] = {}  # what a full request in flight would make it
        # what an incremental one in flight changes: partitions sent, partitions forgotten
        self._pending_changes: tuple[dict[Key, PartitionFetch], list[Key]] = ({}, [])
        self._sent_full = True  # whether the request in flight is a full one
        self._restarted = False  # a restart asked for while a request was in flight

    def build(self, wanted: dict[Key, PartitionFetch], changed: Iterable[Key] | None = None) -> NextRequest:
        """The next request for these partitions (in order). changed, when given, holds every key
        whose entry may differ from the last request's (added, changed or gone from wanted): an
        incremental request then looks at those only, not at the whole session."""
        self._restarted = False
        self._sent_full = self.epoch == INITIAL_EPOCH
        if self._sent_full:
            self._pending = dict(wanted)
            return NextRequest(self.session_id, self.epoch, self._pending, [])
        keys = changed if changed is not None else [*wanted, *(k for k in self._session if k not in wanted)]
        to_send: dict[Key, PartitionFetch] = {}
        forgotten: list[Key] = []
        for k in keys:
            want, sent = wanted.get(k), self._session.get(k)
            if want is None:
                if sent is not None:
                    forgotten.append(k)
            elif sent is not want and sent != want:
                to_send[k] = want
        self._pending_changes = (to_send, forgotten)
        return NextRequest(self.session_id, self.epoch, to_send, forgotten)

    def handle_response(self, error: int, session_id: int) -> None:
        """Move the session on after an answer (its top-level error and session id)."""
        if self._restarted:  # the next fetch is a full one anyway; it closes what this one made
            if session_id != INVALID_SESSION_ID:
                self.session_id = session_id
            return
        if error != ErrorCode.NONE:
            if error == ErrorCode.FETCH_SESSION_ID_NOT_FOUND:
                self.session_id = INVALID_SESSION_ID
            self.restart()
            return
        if session_id == INVALID_SESSION_ID:  # no session given, or the leader closed it
            self.session_id = INVALID_SESSION_ID
            self.restart()
            return
        self.session_id = session_id
        self.epoch = next_epoch(INITIAL_EPOCH if self._sent_full else self.epoch)
        if self._sent_full:
            self._session = self._pending
        else:
            to_send, forgotten = self._pending_changes
            self._session.update(to_send)
            for k in forgotten:
                self._session.pop(k, None)

    def restart(self) -> None:
        """Start over with a full fetch, closing the session the leader may still hold: after a
        request that failed without an answer, or when a partition's replica was replaced (an
        incremental answer would leave it out until its watermarks move)."""
        self._restarted = True
        self.epoch = INITIAL_EPOCH
        self._session = {}
