"""Recorded client sessions against real Apache Kafka: the reference the replayer holds wirekafka to.

One JSON-lines file per session (`<name>.jsonl`), written by `python -m conformance.harness.record`:
the first line describes the session (client, what it does, the broker config Kafka ran with),
every further line is one event in the order the recording proxy saw it, across all of the
session's connections: a request read from the client, a response read from Kafka, or a
connection closed by the client. Frames are base64 of the bytes after the size prefix (header and
body, exactly as sent). The global order is what lets a replay keep causality.

Files are kept small and reviewable: a session that exceeds the bounds below is refused, not
truncated, because a cut recording would replay as a different session."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from conformance.harness.frames import api_name

HERE = Path(__file__).resolve().parent
FORMAT = 1
MAX_EVENTS = 3000
MAX_FILE_BYTES = 1 << 20

REQUEST, RESPONSE, CLOSE = "request", "response", "close"


@dataclass(frozen=True)
class Event:
    """One thing the proxy saw. A response carries its request's API key and version (a response
    frame names only the correlation id)."""
    conn: int
    kind: str
    api_key: int = -1
    version: int = -1
    correlation_id: int = -1
    frame: bytes = b""
    expects_response: bool = True


@dataclass
class Recording:
    name: str
    meta: dict[str, Any]
    events: list[Event] = field(default_factory=list)

    def requests(self) -> Iterator[Event]:
        return (e for e in self.events if e.kind == REQUEST)

    def exercised(self) -> set[tuple[int, int]]:
        return {(e.api_key, e.version) for e in self.requests()}


def _event_json(event: Event) -> str:
    if event.kind == CLOSE:
        return json.dumps({"conn": event.conn, "kind": CLOSE}, separators=(",", ":"))
    item: dict[str, Any] = {"conn": event.conn, "kind": event.kind, "api": api_name(event.api_key),
                            "key": event.api_key, "version": event.version, "cid": event.correlation_id}
    if not event.expects_response:
        item["no_response"] = True
    item["frame"] = base64.b64encode(event.frame).decode()
    return json.dumps(item, separators=(",", ":"))


def dump(recording: Recording, path: Path) -> None:
    """Write one recording; refuses one beyond the bounds (see the module docstring)."""
    if len(recording.events) > MAX_EVENTS:
        raise ValueError(f"{recording.name}: {len(recording.events)} events, more than {MAX_EVENTS}")
    head = {"format": FORMAT, "session": recording.name, **recording.meta}
    text = "\n".join([json.dumps(head, sort_keys=True), *map(_event_json, recording.events)]) + "\n"
    if len(text) > MAX_FILE_BYTES:
        raise ValueError(f"{recording.name}: {len(text)} bytes, more than {MAX_FILE_BYTES}")
    path.write_text(text)


def load(path: Path) -> Recording:
    lines = path.read_text().splitlines()
    head = json.loads(lines[0])
    if head.pop("format") != FORMAT:
        raise ValueError(f"{path}: unknown recording format")
    name = head.pop("session")
    events = []
    for line in lines[1:]:
        item = json.loads(line)
        if item["kind"] == CLOSE:
            events.append(Event(item["conn"], CLOSE))
        else:
            events.append(Event(item["conn"], item["kind"], item["key"], item["version"], item["cid"],
                                base64.b64decode(item["frame"]), not item.get("no_response", False)))
    return Recording(name, head, events)


def paths() -> list[Path]:
    return sorted(HERE.glob("*.jsonl"))


def exercised() -> set[tuple[int, int]]:
    """Every (API key, version) some recorded session sends: raw material for a coverage report."""
    out: set[tuple[int, int]] = set()
    for path in paths():
        out |= load(path).exercised()
    return out
