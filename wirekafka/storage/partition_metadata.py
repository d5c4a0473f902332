"""PartitionMetadataFile: a replica's `partition.metadata` (KIP-516: the topic id its directory
belongs to), written after the replica is opened, not while.

Kafka 3.9 records the topic id when it creates a log and flushes the file from its scheduler
(UnifiedLog.initializeTopicId schedules "flush-metadata-file"), and again before the log is
closed. Written with an fsync while the replica opens, it cost a broker opening 3,000 new replicas
of a create about 40% of the open time. Here the file is written, with its fsync, by the
first of: the broker's next background tick (the epoch checkpoints' worker, at most a second
later), the partition's first log flush, the clean shutdown. A crash before that leaves no file,
as in Kafka: the directory is then taken as the topic's own at the next start, which is what it
is (the file only tells a deleted topic's leftover from a new topic of the same name)."""

from __future__ import annotations

import threading
from pathlib import Path

from wirekafka.storage import checkpoint

FILE_NAME = "partition.metadata"


class PartitionMetadataFile:
    def __init__(self, directory: Path, topic_id_text: str) -> None:
        """topic_id_text: the id as Kafka writes it (base64, URL-safe, unpadded)."""
        self.path = directory / FILE_NAME
        self._text = f"version: 0\ntopic_id: {topic_id_text}\n"
        self._lock = threading.Lock()  # two workers (a tick and a flush) may hold it at once
        self.pending = not self.path.exists()

    def run(self) -> None:
        """Write the file with its fsync if it is not on disk yet (a worker thread). A replica
        deleted meanwhile (its directory renamed away) writes nothing."""
        with self._lock:
            if not self.pending:
                return
            try:
                checkpoint.atomic_write(self.path, self._text)
            except FileNotFoundError:
                if self.path.parent.is_dir():
                    raise
            self.pending = False
