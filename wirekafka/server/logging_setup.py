"""The process's log handler: Kafka-style text lines (the default) or, with
`wirekafka serve --log-format json`, one JSON object per line for a log pipeline to parse
without patterns: time (ISO 8601, UTC, milliseconds), level, logger, message, and the exception's
traceback text when there is one. Either goes to stderr, as Kafka's console appender does."""

from __future__ import annotations

import json
import logging
import sys
from datetime import datetime, timezone

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


def configure(level: str, log_format: str = "text") -> None:
    """Send the process's logs to stderr at level, in log_format ("text" or "json")."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else logging.Formatter(TEXT_FORMAT))
    logging.basicConfig(level=level.upper(), handlers=[handler])
