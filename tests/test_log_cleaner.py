"""The broker's log cleaner service on a BrokerState: picking the dirtiest compacted log, a round
run through its executor, the swaps on the loop, the checkpoint file, and a round whose log
changed under it (discarded, nothing left behind)."""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import trio
import trio.testing

from wirekafka.broker.replica import cleaner_scheduler as log_cleaner
from wirekafka.broker.replica.partition import AppendOrigin, Partition
from wirekafka.broker.state import BrokerState
from wirekafka.config.loader import build_config
from wirekafka.protocol import records
from wirekafka.storage import checkpoint
from wirekafka.storage.cleaner import CHECKPOINT_FILE, CLEANED_SUFFIX, SWAP_SUFFIX

NOW_MS = 1_700_000_000_000


def _state(tmp_path: Path) -> BrokerState:
    state = BrokerState(build_config({"log.dirs": str(tmp_path / "data")}), clock=lambda: NOW_MS / 1000)
    state.load()
    state.cleaner.executor = ThreadPoolExecutor(1)
    return state


async def _compacted(state: BrokerState, name: str, compact: bool = True) -> Partition:
    configs = {"internal.segment.bytes": "400", "min.cleanable.dirty.ratio": "0.01"}
    if compact:
        configs["cleanup.policy"] = "compact"
    topic = await state.metadata.create_topic(name, 1, configs)
    p = topic.partitions[0]
    for r in range(6):
        for k in range(4):
            batch = records.build_batch([(b"k%d" % k, b"v%d-%d" % (k, r), NOW_MS)])
            p.append(batch, records.validate_batch(batch), AppendOrigin.CLIENT)
    return p


def _values(p: Partition) -> list[tuple[int, bytes | None, bytes | None]]:
    return [(r.offset, r.key, r.value) for h, read in p.files.iter_batches(0) for r in records.iter_records(read())]


def _leftovers(state: BrokerState, p: Partition) -> list[str]:
    directory = state.log_dir / f"{p.topic}-{p.index}"
    return [f.name for f in directory.iterdir() if f.name.endswith((CLEANED_SUFFIX, SWAP_SUFFIX))]


def test_cleans_the_dirtiest_compacted_log_and_checkpoints_it(tmp_path: Path) -> None:
    state = _state(tmp_path)

    async def main() -> None:
        p = await _compacted(state, "c")
        await _compacted(state, "plain", compact=False)  # never picked
        before = _values(p)
        picked = state.cleaner.grab_filthiest()
        assert picked is not None and picked[0] is p
        await state.cleaner.clean(*picked)
        after = _values(p)
        assert len(after) < len(before) and {k: v for _, k, v in after} == {k: v for _, k, v in before}
        assert state.cleaner.rounds_done == 1 and not _leftovers(state, p)
        end = state.cleaner.checkpoints[("c", 0)]
        assert checkpoint.read_offsets(state.log_dir / CHECKPOINT_FILE) == {("c", 0): end}
        again = state.cleaner.grab_filthiest()  # nothing new is dirty: nothing to clean
        assert again is None

    trio.run(main)


def test_a_round_whose_log_changed_meanwhile_is_discarded(tmp_path: Path, monkeypatch) -> None:
    state = _state(tmp_path)
    real = log_cleaner.run_round

    async def main() -> None:
        p = await _compacted(state, "c")
        token = trio.lowlevel.current_trio_token()
        doomed = []

        def racing_round(plan):  # DeleteRecords takes the first segment while the round runs
            result = real(plan)
            cut = p.cleaning.cleaning_plan(p.cleaning.cleanable_range(None, NOW_MS), 10**6, 0.9, float("inf"), NOW_MS)[0].segments[1]
            trio.from_thread.run_sync(lambda: doomed.extend(p.delete_records_before(cut.base_offset)),
                                      trio_token=token)
            return result

        monkeypatch.setattr(log_cleaner, "run_round", racing_round)
        before = _values(p)
        await state.cleaner.clean(*state.cleaner.grab_filthiest())
        assert doomed and state.cleaner.rounds_done == 0 and ("c", 0) not in state.cleaner.checkpoints
        assert _values(p) == [v for v in before if v[0] >= p.log_start_offset]
        assert not _leftovers(state, p)

    trio.run(main)


def test_dynamic_settings_restart_the_cleaner_tasks(tmp_path: Path) -> None:
    """The cleaner's settings are dynamic broker configs: a change wakes the tasks sleeping out
    log.cleaner.backoff.ms (Kafka's default 15 s) and restarts them with the new settings, so a
    log that became dirty meanwhile is cleaned at once."""
    state = _state(tmp_path)

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            await nursery.start(state.cleaner.run)
            await trio.testing.wait_all_tasks_blocked()  # the one task found nothing: it sleeps its backoff
            p = await _compacted(state, "c")
            await trio.sleep(0.2)
            assert state.cleaner.rounds_done == 0  # 15 s of backoff to go
            await state.metadata.set_broker_configs("<default>", {
                **state.metadata.broker_configs.defaults, "log.cleaner.backoff.ms": "50",
                "log.cleaner.io.max.bytes.per.second": "1e9"})
            assert (state.cleaner.backoff_s, state.cleaner.io_rate) == (0.05, 1e9)
            with trio.fail_after(10):
                while state.cleaner.rounds_done == 0:
                    await trio.sleep(0.02)
            assert ("c", 0) in state.cleaner.checkpoints and not _leftovers(state, p)
            nursery.cancel_scope.cancel()

    trio.run(main)


def _start_cleaner_process(broker_pid: int) -> subprocess.CompletedProcess:
    code = ("from wirekafka.broker.replica.cleaner_scheduler import _cleaner_process_init\n"
            f"_cleaner_process_init({broker_pid})\nprint('cleaning')")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)


def test_a_cleaner_process_whose_broker_died_while_it_started_exits_at_once() -> None:
    """Its parent is then no longer the broker that started it (the death signal was asked for
    too late to fire): it must not go on writing into the broker's log dir."""
    assert _start_cleaner_process(os.getpid()).stdout == "cleaning\n"  # started by us: it works
    orphan = _start_cleaner_process(os.getpid() + 1_000_000)  # started by a broker that is gone
    assert (orphan.returncode, orphan.stdout) == (1, "")
