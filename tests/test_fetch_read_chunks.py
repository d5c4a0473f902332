"""A fetch naming many partitions reads them in chunks of READ_CHUNK, each chunk in a task step of
its own: a restarted follower's first fetch names every partition it follows (1,500 at 3,000
partitions on three brokers, a step of 40-180 ms of CPU on the leader before, measured with a
trio instrument in the cluster-scale bench), and the loop must serve other tasks meanwhile."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from wirekafka.broker.replica import replica_manager
from wirekafka.broker.replica.partition import Partition
from wirekafka.broker.replica.replica_manager import FetchParams, FetchTarget
from wirekafka.broker.state import BrokerState
from wirekafka.config.loader import build_config
from wirekafka.protocol.errors import ErrorCode


class TaskSteps(trio.abc.Instrument):
    """Counts task steps: two reads made in one step saw the same count."""

    def __init__(self) -> None:
        self.count = 0

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        self.count += 1


def test_a_fetch_of_many_partitions_gives_the_loop_back_between_chunks(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(replica_manager, "READ_CHUNK", 10)
    state = BrokerState(build_config({"log.dirs": str(tmp_path / "data")}))
    state.load()
    steps = TaskSteps()
    seen: list[int] = []
    check = Partition.check_leader_epoch

    def checked(self: Partition, epoch: int) -> None:
        seen.append(steps.count)
        check(self, epoch)

    monkeypatch.setattr(Partition, "check_leader_epoch", checked)

    async def main() -> None:
        topic = await state.metadata.create_topic("t", 25)
        targets = [FetchTarget(p, 0, 10**6) for p in topic.partitions]
        trio.lowlevel.add_instrument(steps)
        outcomes = await state.replicas.fetch(FetchParams(10**6, 0, 0), targets)
        assert [o.error for o in outcomes] == [ErrorCode.NONE] * 25
        for o in outcomes:
            if o.read is not None and o.read.region is not None:
                o.read.region.close()

    trio.run(main)
    assert len(seen) == 25
    # 25 partitions: three steps of 10, 10 and 5
    assert [len(set(seen[i:i + 10])) for i in range(0, 25, 10)] == [1, 1, 1]
    assert len(set(seen)) == 3
