"""What a follower's fetch asks its leader for (replication/fetch_plan.py): kept by change, so
that a fetch round looks only at the partitions that may have moved, and the incremental request
names exactly those whose position changed."""

from __future__ import annotations

from pathlib import Path

import trio

from wirekafka.broker.replica.partition import Partition
from wirekafka.broker.replication.fetch_plan import FetchPlan, Followed
from wirekafka.broker.replication.fetch_session_handler import FetchSessionHandler
from wirekafka.broker.state import BrokerState
from wirekafka.config.loader import build_config
from wirekafka.protocol import records

LEADER = 2
MAX_BYTES = 1 << 20


def _state(tmp_path: Path) -> BrokerState:
    state = BrokerState(build_config({"log.dirs": str(tmp_path / "data"),
                                      "log.message.timestamp.before.max.ms": str(2**62)}))
    state.load()
    return state


def _following(p: Partition) -> Followed:
    me = p.replica_set.local_id
    p.make_follower(1, LEADER, (LEADER, me), frozenset((LEADER, me)))
    return Followed(p, 1, needs_truncation=False)


def _replicate(p: Partition, base: int) -> None:
    """A batch from the leader at offset base, in epoch 1."""
    batch = bytearray(records.build_batch([(b"k", b"v", 0)]))
    records.assign_offsets(batch, base, 1)
    p.append_replicated(bytes(batch), records.check_integrity(bytes(batch)))


def _planned(topic) -> tuple[dict, FetchPlan]:
    """Every partition of topic followed, marked in a new plan, and the plan's first round made."""
    followed = {}
    plan = FetchPlan()
    for p in topic.partitions:
        f = _following(p)
        followed[f.key] = f
        plan.mark(f)
    plan.refresh(followed, MAX_BYTES, False, lambda f: False, 0.0)
    return followed, plan


def test_a_round_looks_only_at_what_moved(tmp_path: Path) -> None:
    state = _state(tmp_path)

    async def main() -> None:
        topic = await state.metadata.create_topic("t", 3)
        followed, plan = _planned(topic)
        assert list(plan.wanted) == [("t", 0), ("t", 1), ("t", 2)] and list(plan.changed) == list(plan.wanted)
        first = plan.round
        assert all(plan.asked_for(f, first) for f in followed.values())
        plan.take_changed()
        plan.refresh(followed, MAX_BYTES, False, lambda f: False, 0.0)
        assert plan.changed == {}  # nothing moved: nothing to send
        _replicate(topic.partitions[1], 0)  # the replica moved: its position is sent
        plan.refresh(followed, MAX_BYTES, False, lambda f: False, 0.0)
        assert list(plan.changed) == [("t", 1)] and plan.wanted[("t", 1)].fetch_offset == 1
        plan.take_changed()
        # a partition that starts to lead leaves the request (forgotten)
        p0 = topic.partitions[0]
        p0.make_leader(2, (p0.replica_set.local_id, LEADER), frozenset((p0.replica_set.local_id, LEADER)))
        plan.refresh(followed, MAX_BYTES, False, lambda f: False, 0.0)
        assert list(plan.changed) == [("t", 0)] and ("t", 0) not in plan.wanted
        assert not plan.asked_for(followed[("t", 0)], plan.round)
        # a replica followed anew (a new leader epoch) is asked for, and its answers taken
        plan.take_changed()
        p1 = topic.partitions[1]
        p1.make_follower(3, LEADER, (LEADER, p1.replica_set.local_id), frozenset((LEADER, p1.replica_set.local_id)))
        renewed = followed[("t", 1)] = Followed(p1, 3, needs_truncation=False)
        plan.mark(renewed)
        plan.refresh(followed, MAX_BYTES, False, lambda f: False, 0.0)
        assert plan.asked_for(renewed, plan.round) and list(plan.changed) == [("t", 1)]
        # a removed one leaves
        plan.take_changed()
        gone = followed.pop(("t", 2))
        plan.forget(gone)
        plan.refresh(followed, MAX_BYTES, False, lambda f: False, 0.0)
        assert list(plan.changed) == [("t", 2)] and list(plan.wanted) == [("t", 1)]

    trio.run(main)


def test_while_throttling_every_round_decides_who_is_held_back(tmp_path: Path) -> None:
    state = _state(tmp_path)

    async def main() -> None:
        followed, plan = _planned(await state.metadata.create_topic("t", 2))
        plan.take_changed()
        held = {("t", 0)}
        plan.refresh(followed, MAX_BYTES, True, lambda f: f.key in held, 0.0)
        assert list(plan.changed) == [("t", 0)] and list(plan.wanted) == [("t", 1)]
        plan.take_changed()
        plan.refresh(followed, MAX_BYTES, False, lambda f: f.key in held, 0.0)  # the round after: all again
        assert list(plan.changed) == [("t", 0)] and set(plan.wanted) == {("t", 0), ("t", 1)}

    trio.run(main)


def test_the_session_handler_sends_only_the_changed_entries(tmp_path: Path) -> None:
    state = _state(tmp_path)

    async def main() -> None:
        topic = await state.metadata.create_topic("t", 2)
        followed, plan = _planned(topic)
        session = FetchSessionHandler()
        full = session.build(plan.wanted, plan.take_changed())
        assert full.epoch == 0 and set(full.to_send) == {("t", 0), ("t", 1)}
        session.handle_response(0, 77)
        _replicate(topic.partitions[0], 0)
        plan.refresh(followed, MAX_BYTES, False, lambda f: False, 0.0)
        nxt = session.build(plan.wanted, plan.take_changed())
        assert nxt.session_id == 77 and list(nxt.to_send) == [("t", 0)] and nxt.forgotten == []
        # the same answer with the whole session compared gives the same request
        assert session.build(plan.wanted).to_send == nxt.to_send

    trio.run(main)
