"""Refresh the recorded client sessions: `python -m conformance.harness.record [SESSION ...]`.

For each session (all by default; names from conformance/sessions) a fresh real Kafka 4.3.1 node
is started (scripts/realkafka.py), the session's client runs against it through the recording
proxy, and the proxy's events are written to conformance/recordings/<session>.jsonl. A fresh
broker per session is what the replay gets too (a fresh wirekafka), so answers that list the
whole cluster (Metadata for all topics, ListGroups) mean the same in both."""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path
from typing import Sequence

from conformance.harness import frames
from conformance.harness.recorder import ProxyThread
from conformance.recordings import HERE, REQUEST, Recording, dump
from conformance.sessions import Session, all_sessions
from scripts import realkafka

log = logging.getLogger("conformance.harness.record")


def record(session: Session, out_dir: Path) -> Recording:
    """Run one session through the proxy against a Kafka node of its own and write its file."""
    kafka = realkafka.RealKafka()
    kafka.start()
    try:
        started = time.monotonic()
        with ProxyThread((kafka.host, kafka.port)) as proxy:
            session.run(proxy.bootstrap, kafka.bootstrap)
            if not proxy.wait_idle(15):
                log.warning("%s: connections still open at the end; recorded as closed", session.name)
        duration = time.monotonic() - started
    finally:
        kafka.stop()
    events = proxy.proxy.events
    recording = Recording(session.name, {
        "client": session.client,
        "description": " ".join(session.description.split()),
        "kafka_version": kafka.version,
        "broker_config": dict(realkafka.DEFAULT_BROKER_CONFIG),
        "connections": len({e.conn for e in events}),
        "exchanges": sum(1 for e in events if e.kind == REQUEST),
        "apis": sorted({f"{frames.api_name(e.api_key)} v{e.version}" for e in events if e.kind == REQUEST}),
        "recorded_seconds": round(duration, 1),
    }, events)
    out_dir.mkdir(parents=True, exist_ok=True)
    dump(recording, out_dir / f"{session.name}.jsonl")
    log.info("%s: %d exchanges on %d connections in %.1fs", session.name, recording.meta["exchanges"],
             recording.meta["connections"], duration)
    return recording


def main(argv: Sequence[str] | None = None) -> int:
    sessions = {s.name: s for s in all_sessions()}
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", metavar="SESSION",
                        help=f"sessions to record (default: all of {', '.join(sorted(sessions))})")
    parser.add_argument("--out", type=Path, default=HERE, help="directory for the .jsonl files")
    args = parser.parse_args(argv)
    unknown = set(args.names) - set(sessions)
    if unknown:
        parser.error(f"unknown sessions: {', '.join(sorted(unknown))}")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    started = time.monotonic()
    failed = []
    for name in args.names or sorted(sessions):
        try:
            record(sessions[name], args.out)
        except Exception:  # noqa: BLE001 - reported; the other sessions are still recorded
            log.exception("%s: not recorded", name)
            failed.append(name)
    log.info("recorded %d sessions in %.0fs", len(args.names or sessions) - len(failed), time.monotonic() - started)
    if failed:
        log.error("failed: %s", ", ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
