"""The process's log handler: Kafka-style text lines (the default) or, with
`wirekafka serve --log-format json`, one JSON object per line for a log pipeline to parse
without patterns: time (ISO 8601, UTC, milliseconds), level, logger, message, and the exception's
traceback text when there is one. Either goes to stderr, as Kafka's console appender does.

The lines are written by a thread of their own, as many as are waiting in one write. A broker
logs a line per partition whose role, leader or ISR changes (as Kafka's state-change log does):
thousands at once when a broker fails or returns. Written where they were logged, each line was a
write(2) on the event loop that let go of the GIL and had to win it back, and the loop stood still
meanwhile (in the 3,000-partition cluster bench, 15% of the samples taken while the loop was late
by over 100 ms were in that write). A line is formatted where it is logged, so it shows the values
of that moment; at exit (logging.shutdown) every waiting line is written before the process ends.
A kill -9 can lose the lines of the last moment, which had not reached the file anyway."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import threading
import traceback
from datetime import datetime, timezone
from typing import TextIO

TEXT_FORMAT = "[%(asctime)s] %(levelname)s %(name)s: %(message)s"
FORMATS = ("text", "json")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": datetime.fromtimestamp(record.created, timezone.utc).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            entry["exception"] = record.exc_text
        return json.dumps(entry, ensure_ascii=False)


class BatchedStreamHandler(logging.Handler):
    """Formats each record where it is logged and leaves the writing to a writer thread, which
    writes every line waiting in one call. In a forked child (which has no writer thread) it
    writes at once."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__()
        self.stream = stream
        self._pending: list[str] = []
        self._lines = threading.Condition(threading.Lock())
        self._write_lock = threading.Lock()  # one writer at a time, so the lines keep their order
        self._pid = os.getpid()
        threading.Thread(target=self._writer, name="log-writer", daemon=True).start()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record) + "\n"
        except Exception:  # noqa: BLE001 - logging's own policy: report, never raise
            self.handleError(record)
            return
        if os.getpid() != self._pid:
            self._write([line])
            return
        with self._lines:
            self._pending.append(line)
            if len(self._pending) == 1:
                self._lines.notify()

    def flush(self) -> None:
        """Write every waiting line now (logging.shutdown calls this at exit)."""
        with self._write_lock:
            self._write(self._take())

    def _take(self) -> list[str]:
        with self._lines:
            lines, self._pending = self._pending, []
        return lines

    def _writer(self) -> None:
        while True:
            with self._lines:
                while not self._pending:
                    self._lines.wait()
            with self._write_lock:
                self._write(self._take())

    def _write(self, lines: list[str]) -> None:
        if not lines:
            return
        try:
            self.stream.write("".join(lines))
            self.stream.flush()
        except Exception:  # noqa: BLE001 - a closed or broken stream must not stop the broker
            # reported as logging.Handler.handleError reports a failed emit (which, having no
            # record here, it cannot be called for): the traceback on stderr, if that works
            if logging.raiseExceptions:
                with contextlib.suppress(Exception):
                    sys.stderr.write("--- Logging error ---\n" + traceback.format_exc())


def configure(level: str, log_format: str = "text") -> None:
    """Send the process's logs to stderr at level, in log_format ("text" or "json")."""
    handler = BatchedStreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else logging.Formatter(TEXT_FORMAT))
    logging.basicConfig(level=level.upper(), handlers=[handler])
