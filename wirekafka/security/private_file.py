"""Files that hold credentials (SCRAM keys, dynamic store passwords), written readable by their
owner only, whatever the umask: the temp file is created 0600 before a byte is written, fsynced,
then renamed over the old file, so a crash leaves the old or the new file and neither is ever
readable by others (a file left 0644 by an older version becomes 0600 at its next write)."""

from __future__ import annotations

import os
from pathlib import Path

MODE = 0o600


def write_private(path: Path, text: str) -> None:
    """Replace path's content with text, atomically, the file mode 0600."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.unlink(missing_ok=True)  # a crash's leftover, possibly made with another mode
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, MODE)
    try:
        os.fchmod(fd, MODE)  # the umask may have taken bits off; never adds any
        with os.fdopen(fd, "w") as f:
            fd = -1
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
    finally:
        if fd >= 0:
            os.close(fd)
    os.replace(tmp, path)
