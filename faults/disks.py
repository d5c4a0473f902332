"""Disk faults for the nemesis (issue 34). Full disks: each broker's log dir on its own
size-limited tmpfs, and a filler file that takes what space is left until the file system
answers ENOSPC. Torn tails (`tear_tails`): the last bytes of a stopped broker's active segments
cut off mid-batch. Slow disks are faults/slow_disk.py. Only the
log dirs are mounted: ZooKeeper's data, the brokers' own logs and the copy job's files stay on
the machine's disk, so filling a broker's disk fails that broker's log dir and nothing else.

Mounting needs root (this machine's test runs are root). A run that asks for full disks where
mounting is impossible fails with the reason: it must not pass as if the fault had been tried."""

from __future__ import annotations

import errno
import logging
import os
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator

log = logging.getLogger(__name__)

FILLER = "nemesis-filler"  # a plain file in the log dir: both brokers' log dir scans skip files
_BIG, _SMALL = 1 << 20, 4096


class DiskUnavailable(RuntimeError):
    """The tmpfs could not be mounted (not root, no mount(8), a kernel without tmpfs...)."""


def mount(directory: Path, size_mb: int) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mb}m,mode=0755", "tmpfs", str(directory)],
                          capture_output=True, text=True, timeout=30)
    if done.returncode != 0 or not os.path.ismount(directory):
        raise DiskUnavailable(f"the disk-full fault needs {directory} on a tmpfs of its own, and mounting it "
                              f"failed (exit {done.returncode}: {done.stderr.strip() or done.stdout.strip()}); "
                              "it needs root and tmpfs")


def unmount(directory: Path) -> None:
    """Unmount, lazily if a process still holds a file there (a broker that has not died yet):
    the mount must not outlive the run whatever happened."""
    if not os.path.ismount(directory):
        return
    for _ in range(20):
        if subprocess.run(["umount", str(directory)], capture_output=True, timeout=30).returncode == 0:
            return
        time.sleep(0.25)
    subprocess.run(["umount", "-l", str(directory)], capture_output=True, timeout=30)
    if os.path.ismount(directory):
        log.error("could not unmount %s", directory)


@contextmanager
def tmpfs_disks(directories: Iterable[Path], size_mb: int) -> Iterator[None]:
    """Each directory a tmpfs of size_mb for the duration; all unmounted on the way out."""
    mounted: list[Path] = []
    try:
        for directory in directories:
            mount(directory, size_mb)
            mounted.append(directory)
            log.info("log dir %s on a tmpfs of %d MB", directory, size_mb)
        yield
    finally:
        for directory in mounted:
            unmount(directory)


def fill(directory: Path) -> int:
    """Write the filler in directory until the file system is full; how many bytes it took.
    Big chunks first, then small ones, so that only a few KB are left (a broker's next page)."""
    if not os.path.ismount(directory):
        raise DiskUnavailable(f"{directory} is not a tmpfs of its own: filling it would fill the machine's disk")
    written = 0
    fd = os.open(directory / FILLER, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        for chunk in (b"\0" * _BIG, b"\0" * _SMALL):
            while True:
                try:
                    n = os.write(fd, chunk)
                except OSError as exc:
                    if exc.errno != errno.ENOSPC:
                        raise
                    break
                written += n
                if n < len(chunk):  # a short write: the file system just filled up
                    break
    finally:
        os.close(fd)
    return written


def free(directory: Path) -> None:
    """Remove the filler: the space is back."""
    try:
        (directory / FILLER).unlink()
    except FileNotFoundError:
        pass


TORN_BYTES = 20  # cut from an active segment's end: inside its last batch (a batch header is 61 bytes)


def tear_tails(directory: Path, topic_prefix: str) -> list[Path]:
    """Cut TORN_BYTES off the active (newest) segment of every partition directory of the topics
    named topic_prefix* in a stopped broker's log dir, as a power loss leaves writes the page
    cache never flushed; the segments torn. Both brokers' recovery must truncate to the last
    whole batch (Kafka's LogLoader, wirekafka's log_loader)."""
    torn = []
    for partition in sorted(directory.glob(f"{topic_prefix}*-[0-9]*")):
        segments = sorted(partition.glob("*.log"))
        if not segments or segments[-1].stat().st_size <= TORN_BYTES:
            continue
        size = segments[-1].stat().st_size
        os.truncate(segments[-1], size - TORN_BYTES)
        torn.append(segments[-1])
    return torn
