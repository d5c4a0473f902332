"""When the controller checks the leaders' balance (auto.leader.rebalance.enable): 5 s after it
becomes the controller, as Kafka 3.9's onControllerFailover schedules the first check, then every
leader.imbalance.check.interval.seconds. On trio's mock clock; the decisions themselves are
tests/test_controller.py's."""

from __future__ import annotations

import uuid
from types import SimpleNamespace

import trio
import trio.testing

from wirekafka.broker.metadata.cluster_metadata import BrokerInfo
from wirekafka.broker.metadata.zk import znode_io as io
from wirekafka.broker.metadata.zk.active_controller import ActiveController
from wirekafka.broker.metadata.zk.controller import ClusterSnapshot, LeaderAndIsr, TopicView

INTERVAL_S = 300  # Kafka's default leader.imbalance.check.interval.seconds


def _led_away_from_home() -> ClusterSnapshot:
    """Broker 1, the controller, is the preferred leader of 4 partitions broker 2 leads."""
    states = {p: (LeaderAndIsr(2, 1, (1, 2), 6), 3) for p in range(4)}
    view = TopicView(uuid.uuid4(), {p: (1, 2) for p in range(4)}, {}, states, {}, {})
    return ClusterSnapshot({b: BrokerInfo(b, "127.0.0.1", 9000 + b) for b in (1, 2)}, 1, 7, 5, {"t": view})


def test_the_first_check_comes_5_s_after_becoming_the_controller_then_every_interval() -> None:
    checks: list[tuple[float, int]] = []  # (time, leaderships moved)

    async def call(fn, *args):
        if fn is io.claim_controller:
            return 7
        assert fn is io.write_states
        checks.append((trio.current_time(), len(args[1])))
        return [4] * len(args[1])

    zk = SimpleNamespace(call=call, client=None, connected=True, mark_changed=lambda path=None: None)
    config = SimpleNamespace(node_id=1, int={"leader.imbalance.check.interval.seconds": INTERVAL_S,
                                             "leader.imbalance.per.broker.percentage": 10}.__getitem__)
    offline = SimpleNamespace(lay_over=lambda snapshot: {}, forget=lambda: None)

    async def main() -> None:
        controller = ActiveController(config, zk, SimpleNamespace(), SimpleNamespace(), offline)  # type: ignore[arg-type]
        async with trio.open_nursery() as nursery:
            nursery.start_soon(controller.run_rebalance)
            await trio.sleep(2 * INTERVAL_S)
            assert checks == []  # never the controller: no check
            controller._last_read = _led_away_from_home()
            await controller.try_claim()
            became = trio.current_time()
            await trio.sleep(4.9)
            assert checks == []
            await trio.sleep(0.2)
            assert checks == [(became + 5, 4)]
            await trio.sleep(INTERVAL_S - 0.2)
            assert len(checks) == 1
            await trio.sleep(0.2)
            assert [t - became for t, _ in checks] == [5, 5 + INTERVAL_S]
            nursery.cancel_scope.cancel()

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
