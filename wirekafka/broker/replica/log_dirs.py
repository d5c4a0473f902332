"""Which of log.dirs holds each partition (Kafka's LogManager with several log directories).

At start-up every directory is scanned for partition directories (`<topic>-<partition>`; the
`-delete`, `-future` and `-stray` ones are not partitions); one partition found in two
directories stops the start-up, with Kafka's message, since either copy could be the stale one.
A partition created on this broker goes to the online directory holding the fewest partitions,
the first of them on a tie (Kafka's nextLogDirs), and stays there. The directories themselves
(meta.properties, checkpoints, the clean-shutdown marker) are BrokerState's."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Callable, Iterable

from wirekafka.protocol.errors import ErrorCode, KafkaApiError
from wirekafka.startup_errors import StartupError

Key = tuple[str, int]
# <topic>-<partition>: a topic name is [a-zA-Z0-9._-]+, so the partition is the last dash's number
_PARTITION_DIR = re.compile(r"^(?P<topic>[a-zA-Z0-9._-]+)-(?P<partition>\d+)$")


def partition_key(name: str) -> Key | None:
    """The partition a directory name stands for; None for anything else (a `-delete`, `-future`
    or `-stray` directory ends in letters, not a partition number)."""
    match = _PARTITION_DIR.match(name)
    return None if match is None else (match["topic"], int(match["partition"]))


class LogDirPlacement:
    def __init__(self, log_dirs: Iterable[Path], is_online: Callable[[Path], bool]) -> None:
        self.log_dirs = tuple(log_dirs)
        self._is_online = is_online
        self._where: dict[Key, Path] = {}  # partition -> the log dir holding it
        # partitions per log dir, kept with _where: counting them for each placement made
        # opening 10,000 new replicas quadratic (1.1M path hashes for 500, measured)
        self._counts: dict[Path, int] = {d: 0 for d in self.log_dirs}

    def scan(self) -> None:
        """Find the partitions already on disk (worker thread, at start-up)."""
        for log_dir in self.log_dirs:
            for entry in sorted(log_dir.iterdir()):
                key = partition_key(entry.name)
                if key is None or not entry.is_dir():
                    continue
                other = self._where.get(key)
                if other is not None:
                    raise StartupError(
                        f"Duplicate log directories for {key[0]}-{key[1]} are found in both {other / entry.name} "
                        f"and {entry}. Recover the broker by deleting one of the two directories for this "
                        f"partition (the one in the log directory known to have failed recently).")
                self._where[key] = log_dir
                self._counts[log_dir] += 1

    def held_in(self, log_dir: Path) -> set[Key]:
        """The partitions found in or placed on log_dir."""
        return {key for key, where in self._where.items() if where == log_dir}

    def log_dir(self, key: Key) -> Path:
        """The log dir holding the partition: where it is, else the online one with the fewest
        partitions (KAFKA_STORAGE_ERROR when none is online)."""
        where = self._where.get(key)
        if where is not None:
            return where
        online = [d for d in self.log_dirs if self._is_online(d)]
        if not online:
            raise KafkaApiError(ErrorCode.KAFKA_STORAGE_ERROR, "no log directory is online")
        chosen = min(online, key=lambda d: self._counts[d])  # min keeps the first of equals
        self._where[key] = chosen
        self._counts[chosen] += 1
        return chosen

    def forget(self, key: Key) -> None:
        """The partition's directory is gone (topic deleted, replica removed): placed anew if it
        comes back."""
        where = self._where.pop(key, None)
        if where is not None:
            self._counts[where] -= 1
