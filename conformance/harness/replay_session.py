"""Replay one recorded session against a fresh wirekafka process and judge the answers.

    python -m conformance.harness.replay_session [SESSION ...]    (all recordings by default)

prints, per session, how many answers were compared, skipped (with the rule's reason) and
deliberately different, and every unexplained difference. conformance/test_replay.py runs the
same for each recording."""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Sequence

from conformance.harness.compare import load_deviations
from conformance.recordings import Recording, load, paths
from conformance.harness.replay import replay
from conformance.harness.replay_verdict import Outcome, check, report, summary
from testsupport.broker_process import BrokerProcess
from wirekafka.config.broker_keys import BROKER_KEYS

log = logging.getLogger("conformance.harness.replay_session")


def broker_overrides(recording: Recording) -> dict[str, str]:
    """The recording broker's settings that wirekafka knows (the rest concern what it lacks:
    transaction and share-group state topics), and no fetch sessions: the recording proxy showed
    the client a broker that declines them (client_view), so the client's fetches were all full
    ones asking anew, which a broker without session slots answers as the client saw."""
    overrides = {k: v for k, v in recording.meta.get("broker_config", {}).items() if k in BROKER_KEYS}
    overrides["max.incremental.fetch.session.cache.slots"] = "0"
    return overrides


def replay_fresh(recording: Recording, workdir: Path) -> list[Outcome]:
    """Replay against a fresh wirekafka (own data dir) and judge every answer."""
    broker = BrokerProcess(workdir / "data", broker_overrides(recording), log_path=workdir / "wirekafka.log")
    broker.start()
    try:
        replayed = replay(recording, broker.bootstrap)
    finally:
        broker.stop()
    return check(recording.name, replayed, load_deviations())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", metavar="SESSION")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(name)s %(levelname)s %(message)s")
    failed = False
    for path in paths():
        if args.names and path.stem not in args.names:
            continue
        recording = load(path)
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix=f"replay-{path.stem}-") as workdir:
            outcomes = replay_fresh(recording, Path(workdir))
        skipped = Counter(o.skipped for o in outcomes if o.skipped)
        sys.stdout.write(f"{recording.name}: {summary(outcomes)} in {time.monotonic() - started:.1f}s\n")
        for reason, count in skipped.items():
            sys.stdout.write(f"  skipped {count}x: {reason}\n")
        text = report(recording.name, outcomes)
        if text:
            failed = True
            sys.stdout.write(text + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
