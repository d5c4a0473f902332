"""Coordinators count their partitions as loading from start-up, before the listeners accept,
until each is replayed: a request served earlier would find no state (Kafka answers
COORDINATOR_LOAD_IN_PROGRESS meanwhile). The transactions load after the groups; an
InitProducerId that came while the groups were loading used to allocate a new producer id and
write it over a transaction still open in the log."""

from __future__ import annotations

from pathlib import Path

import trio

from wirekafka.broker.state import BrokerState
from wirekafka.config.loader import build_config
from wirekafka.protocol.errors import ErrorCode, KafkaApiError


def test_transactions_answer_load_in_progress_while_the_groups_still_load(tmp_path: Path) -> None:
    state = BrokerState(build_config({"log.dirs": str(tmp_path / "data"), "transaction.state.log.num.partitions": "3",
                                      "offsets.topic.num.partitions": "3"}))
    state.load()
    groups_loaded = trio.Event()
    answers: list[ErrorCode] = []

    async def slow_group_load() -> None:
        await groups_loaded.wait()

    async def init_producer_id() -> None:
        try:
            await state.transactions.init_producer_id("app", 60_000, -1, -1)
            answers.append(ErrorCode.NONE)
        except KafkaApiError as exc:
            answers.append(exc.code)

    async def main() -> None:
        await state.transactions.ensure_topic()  # __transaction_state exists, as after a restart
        state.groups.load = slow_group_load  # type: ignore[method-assign]
        async with trio.open_nursery() as nursery:
            await nursery.start(state.load_coordinators)
            await init_producer_id()  # the groups are still loading: so are the transactions
            groups_loaded.set()
            with trio.fail_after(30):
                while state.transactions.loading:  # replayed in worker threads
                    await trio.sleep(0.01)
            await init_producer_id()  # every partition replayed

    trio.run(main)
    assert answers == [ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.NONE]
