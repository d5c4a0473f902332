"""Kafka's small text files: offset checkpoints and leader-epoch checkpoints (meta.properties is
properties_file's).

Checkpoint format (as Kafka writes it): a version line "0", a count line, then one entry per
line. Written to a temp file, fsynced and renamed, so a crash leaves the old or the new file."""

from __future__ import annotations

import os
from pathlib import Path


def atomic_write(path: Path, text: str) -> None:
    """Write through the descriptor itself: a broker writes thousands of these when partitions
    change leaders, in worker threads, and each system call lets go of the GIL and takes it back
    from the event loop; a Python file object adds three (fstat, the isatty ioctl, lseek)."""
    tmp = path.with_name(path.name + ".tmp")
    data = memoryview(text.encode())
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0), 0o666)
    try:
        while data:
            data = data[os.write(fd, data):]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def write_offsets(path: Path, offsets: dict[tuple[str, int], int]) -> None:
    lines = ["0", str(len(offsets))] + [f"{t} {p} {o}" for (t, p), o in sorted(offsets.items())]
    atomic_write(path, "\n".join(lines) + "\n")


def read_offsets(path: Path) -> dict[tuple[str, int], int]:
    if not path.exists():
        return {}
    lines = path.read_text().splitlines()
    if len(lines) < 2 or lines[0].strip() != "0":
        raise ValueError(f"unrecognised checkpoint file {path}")
    out: dict[tuple[str, int], int] = {}
    for line in lines[2 : 2 + int(lines[1])]:
        topic, part, off = line.rsplit(" ", 2)
        out[(topic, int(part))] = int(off)
    return out


def write_leader_epochs(path: Path, epochs: list[tuple[int, int]]) -> None:
    lines = ["0", str(len(epochs))] + [f"{e} {o}" for e, o in epochs]
    atomic_write(path, "\n".join(lines) + "\n")


def read_leader_epochs(path: Path) -> list[tuple[int, int]]:
    if not path.exists():
        return []
    lines = path.read_text().splitlines()
    out = []
    for line in lines[2 : 2 + int(lines[1])]:
        e, o = line.split()
        out.append((int(e), int(o)))
    return out
