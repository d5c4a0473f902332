"""A failing disk is a state, not an exception (Kafka's LogDirFailureChannel): an I/O error while
appending to, flushing or checkpointing a log takes the log directory holding it offline through
this one channel. The partitions in that directory stop being served (KAFKA_STORAGE_ERROR, as
Kafka's ReplicaManager.handleLogDirFailure leaves them) while the other directories of log.dirs
keep serving. When none is left, or the failed one holds the single node's metadata files (the
first, as Kafka's metadata.log.dir, whose failure stops a Kafka broker), the broker stops at once
and exits non-zero, without a clean-shutdown marker, so that the next start recovers the logs
(Kafka halts then too). Nothing
acknowledged is lost or renumbered: the write that failed was not acknowledged, and recovery cuts
whatever part of it reached the disk.

In a ZooKeeper cluster no dir holds metadata (ZooKeeper does), so the broker goes on while any
dir is left, as Kafka 3.9's ZooKeeper-mode broker does (KIP-112): it tells the controller through
a log dir event notification, and the controller moves the failed replicas' leaderships and ISR
places away (metadata/zk/offline_replicas.py)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Callable

import trio

log = logging.getLogger(__name__)


class LogDirFailed(Exception):
    """No log directory is left (or the single node's metadata dir failed): the broker stops."""


class LogDirFailureChannel:
    def __init__(self, log_dirs: tuple[Path, ...] | list[Path], metadata_dir: Path | None = None) -> None:
        """metadata_dir: the dir whose failure stops the broker even while others are left."""
        self.log_dirs = tuple(log_dirs)
        self.failures: dict[Path, str] = {}  # each offline directory: what took it offline
        self._metadata_dir = metadata_dir
        self._listeners: list[Callable[[Path], None]] = []
        self._halt = trio.Event()

    @property
    def offline(self) -> bool:
        """Whether the broker has stopped serving for a failed directory (none left, or a cluster's first)."""
        return self._halt.is_set()

    def is_offline(self, log_dir: Path) -> bool:
        return log_dir in self.failures

    @property
    def online_dirs(self) -> list[Path]:
        return [d for d in self.log_dirs if d not in self.failures]

    def log_dir_of(self, path: Path) -> Path:
        """The log directory holding path (a partition's directory or a file in one); the first
        directory for a path outside them all."""
        for d in self.log_dirs:
            if path == d or d in path.parents:
                return d
        return self.log_dirs[0]

    def on_offline(self, listener: Callable[[Path], None]) -> None:
        """Call listener(log_dir) on the loop when a directory goes offline."""
        self._listeners.append(listener)

    def fail(self, what: str, exc: OSError, where: Path | None = None) -> None:
        """Take the directory holding `where` (the first one when None) offline after an I/O
        error (callable from the loop only)."""
        log_dir = self.log_dirs[0] if where is None else self.log_dir_of(where)
        if log_dir in self.failures:
            return
        self.failures[log_dir] = f"{what}: {exc}"
        log.error("Error while %s in dir %s: %s; the log directory is offline", what, log_dir, exc)
        for listener in self._listeners:
            listener(log_dir)
        if log_dir == self._metadata_dir or not self.online_dirs:
            self._halt.set()

    async def halt_when_offline(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Raise LogDirFailed once the broker must stop, ending it."""
        task_status.started()
        await self._halt.wait()
        failed = ", ".join(str(d) for d in self.failures)
        why = "; ".join(self.failures.values())
        if not self.online_dirs:
            raise LogDirFailed(f"Shutdown broker because all log dirs in {failed} have failed ({why})")
        raise LogDirFailed(f"Shutdown broker because the metadata log dir {self._metadata_dir} has failed ({why})")
