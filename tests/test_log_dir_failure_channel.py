"""The log dir failure channel (broker/replica/log_dir_failure.py): which failure stops the broker
(the last dir; the single node's first dir, which holds its metadata; in a ZooKeeper cluster no
other), the listeners told of each failed dir once, and the dir a failing path belongs to."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from wirekafka.broker.replica.log_dir_failure import LogDirFailed, LogDirFailureChannel

A, B, C = Path("/data/a"), Path("/data/b"), Path("/data/c")


def test_a_dir_other_than_the_metadata_dir_goes_offline_alone() -> None:
    channel = LogDirFailureChannel((A, B, C), metadata_dir=A)
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


@pytest.mark.parametrize(("dirs", "failed", "metadata_dir", "message"), [
    ((A,), A, A, "all log dirs in /data/a have failed"),
    ((A,), A, None, "all log dirs in /data/a have failed"),
    ((A, B), A, A, "the metadata log dir /data/a has failed"),
])
def test_the_failures_that_stop_the_broker(dirs, failed, metadata_dir, message) -> None:
    channel = LogDirFailureChannel(dirs, metadata_dir)

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            await nursery.start(channel.halt_when_offline)
            channel.fail("appending to t-0", OSError(28, "No space left on device"), failed / "t-0")

    with pytest.raises(BaseExceptionGroup) as group:
        trio.run(main)
    (stopped,) = group.value.exceptions
    assert isinstance(stopped, LogDirFailed) and message in str(stopped) and "No space left" in str(stopped)


def test_in_a_cluster_the_first_dir_goes_offline_alone_too() -> None:
    """ZooKeeper holds a cluster's metadata: like Kafka 3.9's ZooKeeper-mode broker, the broker
    goes on while any dir is left, whichever failed."""
    channel = LogDirFailureChannel((A, B), metadata_dir=None)
    channel.fail("appending to t-0", OSError(28, "No space left on device"), A / "t-0")
    assert channel.is_offline(A) and not channel.offline and channel.online_dirs == [B]
    channel.fail("appending to u-0", OSError(28, "No space left on device"), B / "u-0")
    assert channel.offline
