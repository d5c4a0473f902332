"""Reads of znodes that do not exist leave no reference cycle behind.

kazoo's async result keeps the NoNodeError it raises; the raise gives that error a traceback whose
frames hold the result and, up the stack, every read of the same round. Left alone, each reconcile
that met a missing znode (/admin/reassign_partitions, normally absent, is read every time) made a
cycle of a whole snapshot's reads: at 3,000 partitions 30,000-110,000 objects a round, freed only
by full collections of 100-400 ms on the broker's loop (measured with gc.callbacks in the
cluster-scale bench)."""

from __future__ import annotations

import gc

from kazoo.exceptions import NoNodeError
from kazoo.handlers.threading import AsyncResult, SequentialThreadingHandler
from kazoo.protocol.states import ZnodeStat

from wirekafka.broker.metadata.zk import layout as zl
from wirekafka.broker.metadata.zk.controller import LeaderAndIsr
from wirekafka.broker.metadata.zk.znode_io import encode_state, read_for_alter_partition

_HANDLER = SequentialThreadingHandler()
_STAT = ZnodeStat(czxid=7, mzxid=7, ctime=0, mtime=0, version=3, cversion=0, aversion=0, ephemeralOwner=0,
                  dataLength=0, numChildren=0, pzxid=7)


def _answered(value: object = None, error: Exception | None = None) -> AsyncResult:
    result = AsyncResult(_HANDLER)
    if error is not None:
        result.set_exception(error)
    else:
        result.set(value)
    return result


class _Client:
    """kazoo's async reads over a fixed set of state znodes, answered at once as kazoo answers
    them (a missing znode's read raises NoNodeError from the result's get)."""

    def __init__(self, states: dict[str, bytes]) -> None:
        self.states = states

    def exists_async(self, path: str, watch=None) -> AsyncResult:
        return _answered(_STAT)

    def get_children_async(self, path: str, watch=None) -> AsyncResult:
        return _answered(["1", "2"])

    def get_async(self, path: str, watch=None) -> AsyncResult:
        if path not in self.states:
            return _answered(error=NoNodeError())
        return _answered((self.states[path], _STAT))


def test_missing_state_znodes_leave_no_cycle_to_collect() -> None:
    state = encode_state(LeaderAndIsr(leader=1, leader_epoch=2, isr=(1, 2), controller_epoch=1))
    paths = [zl.partition_state_path("t", i) for i in range(200)]
    client = _Client({path: state for path in paths[::2]})  # every other partition has no state
    gc.collect()
    gc.disable()
    try:
        epoch, live, states = read_for_alter_partition(client, 1, paths)
        assert (epoch, live) == (7, {1, 2})
        assert [s is None for s in states] == [i % 2 == 1 for i in range(200)]
        assert states[0] == (LeaderAndIsr(leader=1, leader_epoch=2, isr=(1, 2), controller_epoch=1), 3)
        del states
        # everything the reads made went with its last reference: nothing is left for the collector
        assert gc.collect() == 0
    finally:
        gc.enable()
