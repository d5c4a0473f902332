"""The log dir failure channel (broker/replica/log_dir_failure.py): which failure stops the broker
(the last dir, the first dir holding the metadata, any dir in a ZooKeeper cluster), the listeners
told of each failed dir once, and the dir a failing path belongs to."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from wirekafka.broker.replica.log_dir_failure import LogDirFailed, LogDirFailureChannel

A, B, C = Path("/data/a"), Path("/data/b"), Path("/data/c")


def test_a_dir_other_than_the_first_goes_offline_alone() -> None:
    channel = LogDirFailureChannel((A, B, C))
    told: list[Path] = []
    channel.on_offline(told.append)
    channel.fail("appending to t-0", OSError(28, "No space left on device"), B / "t-0")
    channel.fail("flushing t-0", OSError(5, "Input/output error"), B / "t-0" / "00000000000000000000.log")
    assert told == [B] and channel.is_offline(B) and not channel.offline
    assert channel.online_dirs == [A, C]
    channel.fail("writing the offset checkpoints", OSError(20, "Not a directory"), C)
    assert not channel.offline
    channel.fail("appending to u-0", OSError(28, "No space left on device"), A / "u-0")
    assert channel.offline and told == [B, C, A]


@pytest.mark.parametrize(("dirs", "failed", "halt_on_first", "message"), [
    ((A,), A, False, "all log dirs in /data/a have failed"),
    ((A, B), A, False, "the metadata log dir /data/a has failed"),
    ((A, B), B, True, "log dir /data/b has failed in a ZooKeeper cluster"),
])
def test_the_failures_that_stop_the_broker(dirs, failed, halt_on_first, message) -> None:
    channel = LogDirFailureChannel(dirs, halt_on_first)

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            await nursery.start(channel.halt_when_offline)
            channel.fail("appending to t-0", OSError(28, "No space left on device"), failed / "t-0")

    with pytest.raises(BaseExceptionGroup) as group:
        trio.run(main)
    (stopped,) = group.value.exceptions
    assert isinstance(stopped, LogDirFailed) and message in str(stopped) and "No space left" in str(stopped)
