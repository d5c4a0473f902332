#!/usr/bin/env python3
"""The nemesis suite's long run (issue 34): one seeded schedule of many faults (kill -9, some
restarted before the ZooKeeper session expires; SIGSTOP past the session, then SIGCONT; one
broker's link to ZooKeeper cut past the session, then healed; one broker cut from its peers past
replica.lag.time.max.ms, then healed; with --kinds, also disk-full: one broker's log dir, a tmpfs of
its own, filled to ENOSPC; slow-disk: its file writes and flushes delayed; torn-tail: kill -9 with
its active segments' tails cut mid-batch; and combined: two of --combine at once on two brokers),
one at a time,
under an idempotent acks=all producer, a transactional Java job copying its topic
(faults/copy_job.py; --no-copy leaves it out) and a consumer group of three committing what it
processed (--no-group leaves it out), on a three-broker wirekafka cluster and, at the
same time, on a three-broker Kafka 3.9.1 ZooKeeper-mode cluster with the same settings
(faults/clusters.py), each on its own chroot of one real ZooKeeper. Prints one markdown table: per broker kind, the faults by
kind, the records acknowledged, and those lost, reused or duplicated (stored twice by one producer
epoch: a value the client re-sent after bumping its epoch is listed under the table instead), the partitions whose replicas
differ below the high watermark (faults/replicas.py); the copy job's transactions and its output
read with read_committed (input records missing from it or in it twice, records the input never
had); the consumer group's records received and commits, and its findings (a committed offset
gone back, an acknowledged record below the committed offset never received, a record received
that the log does not hold); and the wall time.

    .venv/bin/python scripts/nemesis_long_run.py                         # 200 faults on both (about 30 minutes)
    .venv/bin/python scripts/nemesis_long_run.py --faults 20 --no-kafka  # a shorter look at wirekafka
    .venv/bin/python scripts/nemesis_long_run.py --faults 60 --kinds kill,pause --no-wirekafka  # Kafka alone
    .venv/bin/python scripts/nemesis_long_run.py --seed 7 --out docs/nemesis.md
    .venv/bin/python scripts/nemesis_long_run.py --kinds kill,pause             # no network cuts
    .venv/bin/python scripts/nemesis_long_run.py \
        --kinds kill,pause,zk-cut,peer-cut,combined,disk-full,slow-disk,torn-tail  # all (root: tmpfs; cc)

The test command runs a short schedule of the same kind (faults/test_nemesis.py). A finding on
Kafka is reported in its row like any other, not hidden. Exits 1 if any cluster lost, reused or
duplicated an acknowledged record, its copy is not exactly-once, or its consumer group has a finding.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

if not __package__:  # run as a file: siblings are imported as scripts.*, from the repository root
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from faults.checkers import Verdict  # noqa: E402
from faults.clusters import NODES, REPLICA_LAG_S, SESSION_TIMEOUT_S, on_kafka39, on_wirekafka  # noqa: E402
from faults.schedule import COMBINABLE, COMBINED, KILL, KINDS, Fault, make_schedule  # noqa: E402
from scripts import zookeeper as zookeeper_launcher  # noqa: E402

log = logging.getLogger("nemesis")


def fault_mix(faults: list[Fault]) -> str:
    kinds = Counter(f.kind for f in faults)
    quick = sum(1 for f in faults for part in (f.parts or (f,)) if part.kind == KILL and part.hold_s < SESSION_TIMEOUT_S)
    pairs = Counter("+".join(f.kinds()) for f in faults if f.kind == COMBINED)
    return (", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items()))
            + (f" ({', '.join(f'{n} {pair}' for pair, n in sorted(pairs.items()))})" if pairs else "")
            + f" ({quick} kills restarted within the session)")


def table(seed: int, faults: list[Fault], rows: list[tuple[str, Verdict | str, float]]) -> str:
    at_once = " (a combined one: two at once)" if any(f.kind == COMBINED for f in faults) else ""
    lines = [f"Seed {seed}: {len(faults)} faults, one at a time{at_once}: {fault_mix(faults)}; ZooKeeper session "
             f"{SESSION_TIMEOUT_S:g} s; an idempotent acks=all producer at 100 records/s over 3 partitions "
             "(replication factor 3, min.insync.replicas=2).", "",
             "| cluster | acknowledged | lost | reused | duplicated | divergent replicas | epochs gone back "
             "| unacknowledged | copy: transactions (aborted) | copy: missing / twice / foreign "
             "| group: received (distinct) / commits / rejoins | group: gone back / skipped / garbage / undrained "
             "| minutes |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    notes: list[str] = []
    for name, verdict, seconds in rows:
        if isinstance(verdict, str):
            lines.append(f"| {name} | failed to run: {verdict.splitlines()[0]} | | | | | | | | | | | "
                         f"{seconds / 60:.1f} |")
        else:
            copy = verdict.copy
            lines.append(f"| {name} | {verdict.acknowledged:,} | {len(verdict.lost)} | {len(verdict.reused)} | "
                         f"{len(verdict.duplicated)} | {len(verdict.divergent)} | {len(verdict.went_back)} | "
                         f"{verdict.unacknowledged:,} | "
                         + (f"job failed: {verdict.copy_failed} | - | " if verdict.copy_failed else
                            "- | - | " if copy is None or copy.job is None else
                            f"{copy.job.commits:,} ({copy.job.random_aborts + copy.job.aborts}) | "
                            f"{len(copy.missing)} / {len(copy.duplicated)} / {len(copy.foreign)} | ")
                         + _group_cells(verdict) + f"{seconds / 60:.1f} |")
            notes.extend(f"- {name}: {finding}" for finding in verdict.divergent + verdict.went_back)
            notes.extend(f"- {name}: re-sent by the client after an epoch bump (not a broker's duplicate): {value}"
                         for value in verdict.resent)
            if verdict.group is not None:
                notes.extend(f"- {name}: consumer group: {finding}" for finding in verdict.group.went_back
                             + verdict.group.undrained)
    return "\n".join(lines + ([""] + notes if notes else [])) + "\n"


def _group_cells(verdict: Verdict) -> str:
    group = verdict.group
    if group is None:
        return "- | - | "
    return (f"{group.delivered:,} ({group.distinct:,}) / {group.commits:,} / {group.rejoins} | "
            f"{len(group.went_back)} / {len(group.skipped)} / {len(group.garbage)} / {len(group.undrained)} | ")


def one_cluster(name: str, run: Callable[..., Verdict], tmp: Path, zookeeper: str, args: argparse.Namespace,
                faults: list[Fault]) -> tuple[str, Verdict | str, float]:
    """The whole schedule on one kind of cluster (its own ZooKeeper chroot and work dir); a run
    that fails is a row of the table too."""
    workdir = tmp / name.split()[0].lower()
    workdir.mkdir()
    started = time.monotonic()
    try:
        verdict: Verdict | str = run(workdir, zookeeper, f"nemesis-{args.seed}", args.partitions, faults,
                                     copy=not args.no_copy, group=not args.no_group)
    except Exception as exc:  # noqa: BLE001 - reported in the table
        log.exception("%s: the run failed", name)
        verdict = f"{type(exc).__name__}: {exc}"
    return name, verdict, time.monotonic() - started


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=20261128)
    ap.add_argument("--faults", type=int, default=200)
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--kinds", default=",".join(KINDS), help=f"fault kinds (default {','.join(KINDS)})")
    ap.add_argument("--no-kafka", action="store_true", help="wirekafka only")
    ap.add_argument("--no-wirekafka", action="store_true", help="Kafka 3.9.1 only")
    ap.add_argument("--no-copy", action="store_true", help="without the transactional copy job")
    ap.add_argument("--no-group", action="store_true", help="without the consumer group")
    ap.add_argument("--combine", default=",".join(COMBINABLE),
                    help=f"the kinds a combined fault pairs (default {','.join(COMBINABLE)})")
    ap.add_argument("--out", type=Path, help="also write the table to this file")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s: %(message)s",
                        datefmt="%H:%M:%S")
    faults = make_schedule(args.seed, NODES, args.faults, SESSION_TIMEOUT_S, args.kinds.split(","), REPLICA_LAG_S,
                           args.combine.split(","))
    log.info("schedule: %s", fault_mix(faults))
    runs = (([] if args.no_wirekafka else [("wirekafka", on_wirekafka)])
            + ([] if args.no_kafka else [("Kafka 3.9.1", on_kafka39)]))
    if not runs:
        ap.error("--no-kafka and --no-wirekafka leave nothing to run")
    with tempfile.TemporaryDirectory(prefix="wirekafka-nemesis-") as tmp:
        server = zookeeper_launcher.ZooKeeperServer(Path(tmp) / "zookeeper")
        server.start(timeout=60)
        try:
            with ThreadPoolExecutor(len(runs)) as pool:  # side by side: both clusters at once
                rows = list(pool.map(lambda run: one_cluster(run[0], run[1], Path(tmp), server.connect_string,
                                                             args, faults), runs))
        finally:
            server.stop()
    text = table(args.seed, faults, rows)
    sys.stdout.write(text)
    if args.out:
        args.out.write_text(text)
    return 0 if all(not isinstance(v, str) and v.ok for _, v, _ in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
