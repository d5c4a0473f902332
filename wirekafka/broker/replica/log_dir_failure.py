"""A failing disk is a state, not an exception (Kafka's LogDirFailureChannel): an I/O error while
appending to a log takes its log directory offline through this one channel. wirekafka has one
log directory, so an offline directory means what Kafka does when none is left: the broker
stops serving at once and exits non-zero, without a clean-shutdown marker, so that the next start
recovers the logs. Nothing acknowledged is lost or renumbered: the write that failed was not
acknowledged, and recovery cuts whatever part of it reached the disk."""

from __future__ import annotations

import logging
from pathlib import Path

import trio

log = logging.getLogger(__name__)


class LogDirFailed(Exception):
    """The broker's log directory went offline: it stops (Kafka halts when no directory is left)."""


class LogDirFailureChannel:
    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.failure: str | None = None  # what took the directory offline
        self._offline = trio.Event()

    @property
    def offline(self) -> bool:
        return self.failure is not None

    def fail(self, what: str, exc: OSError) -> None:
        """Take the directory offline after an I/O error (callable from the loop only)."""
        if self.failure is None:
            self.failure = f"{what}: {exc}"
            log.error("Error while %s in dir %s: %s; the log directory is offline", what, self.log_dir, exc)
            self._offline.set()

    async def halt_when_offline(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Raise LogDirFailed once the directory is offline, ending the broker."""
        task_status.started()
        await self._offline.wait()
        raise LogDirFailed(f"Shutdown broker because all log dirs in {self.log_dir} have failed ({self.failure})")
