#!/usr/bin/env python3
"""The fuzzing campaign's long run (issue 36, "Hostile input"): structure-aware fuzzing of every
served (API, version) against one live `wirekafka serve`, on its PLAINTEXT listener and on a
SASL_PLAINTEXT (PLAIN) one before and after logging in (faults/fuzz/). Prints one markdown report:
frames and rate, crashes, hangs, failed liveness probes, closes by cause, the broker's ERROR log
entries, its RSS before and after.

    .venv/bin/python scripts/fuzz_long_run.py                              # 1,000,000 frames
    .venv/bin/python scripts/fuzz_long_run.py --frames 50000 --seed 7
    .venv/bin/python scripts/fuzz_long_run.py --hours 1 --out /tmp/fuzz.md  # stop after an hour

The test command runs a short seeded run of the same campaign (faults/fuzz/test_fuzz.py). A
finding is replayed from its seed: frames are drawn from random.Random(seed) alone. Exits 1 unless
the run passes (no crash, hang, unexplained close, unanswered frame, broker ERROR entry, and RSS
within 10 % of its level after the warm-up).
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
from pathlib import Path

if not __package__:  # run as a file: siblings are imported as scripts.*, from the repository root
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from faults.fuzz.campaign import Report, run_campaign  # noqa: E402
from faults.fuzz.fuzz_results import markdown, verdict_failures  # noqa: E402

log = logging.getLogger("fuzz")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frames", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=36)
    parser.add_argument("--hours", type=float, default=None, help="stop after this long even if short of --frames")
    parser.add_argument("--out", type=Path, default=None, help="also write the report here")
    parser.add_argument("--workdir", type=Path, default=None, help="keep the broker's data and log here")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")

    def progress(report: Report) -> None:
        s = report.stats
        log.info("%d frames in %.0f s (%.0f/s): crashes %d, hangs %d, unexplained closes %d, %s", s.frames,
                 report.seconds, s.frames / max(report.seconds, 1e-9), len(report.crashes), s.hangs, s.unexplained,
                 dict(s.outcomes))

    with tempfile.TemporaryDirectory(prefix="wirekafka-fuzz-") as tmp:
        workdir = args.workdir or Path(tmp)
        report = run_campaign(workdir, args.seed, args.frames,
                              time_limit_s=args.hours * 3600 if args.hours else None, progress=progress)
    text = markdown(report)
    print(text)
    if args.out:
        args.out.write_text(text)
    return 1 if verdict_failures(report) else 0


if __name__ == "__main__":
    sys.exit(main())
