"""What must hold after the faults healed, judged on the producer's acknowledgements and the log
as a consumer reads it back (pure functions: the same verdict for any broker kind)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Mapping

from faults.replicas import Writer

if TYPE_CHECKING:
    from faults.copy_job import CopyRun

# partition, offset, value; the offset is None when the client knows the write was stored but not
# where: librdkafka's idempotent producer delivers such a record as a success with an invalid
# offset (-1001, None in confluent-kafka) when a later sequence was acknowledged after the
# record's own request went unanswered, or when a retry is answered as a duplicate without its offset
Ack = tuple[int, int | None, bytes]


@dataclass
class Verdict:
    acknowledged: int = 0
    lost: list[Ack] = field(default_factory=list)  # acknowledged, not at its offset (or, offset unknown, not in its partition)
    reused: list[tuple[int, int]] = field(default_factory=list)  # an offset acknowledged for two values
    duplicated: list[bytes] = field(default_factory=list)  # a value stored twice by one writer (idempotence broken)
    # a value stored once per writer, by two or more (producer id, epoch): the client sent it again
    # after bumping its epoch, which no broker can deduplicate (an epoch's sequences start anew).
    # librdkafka's idempotent producer does so after a leader change fails a request that may have
    # been stored (librdkafka issue #4953, "exactly-once guarantees are only partial for the
    # idempotent producer"): a client finding, reported, not a broker's failure
    resent: list[str] = field(default_factory=list)
    unacknowledged: int = 0  # writes that failed or were never answered (stored or not: both fine)
    divergent: list[str] = field(default_factory=list)  # replicas whose committed bytes differ (replicas.py)
    went_back: list[str] = field(default_factory=list)  # a controller or leader epoch that decreased (epochs.py)
    copy: "CopyVerdict | None" = None  # the transactional copy job's output, when it ran
    copy_failed: str | None = None  # why the copy job ended before copying the input (a finding too)
    group: "GroupVerdict | None" = None  # the consumer group's deliveries and commits, when it ran

    @property
    def ok(self) -> bool:
        return not (self.lost or self.reused or self.duplicated or self.divergent or self.went_back
                    or self.copy_failed or (self.copy is not None and not self.copy.ok)
                    or (self.group is not None and not self.group.ok))

    def row(self) -> str:
        return (f"acknowledged {self.acknowledged}, lost {len(self.lost)}, reused {len(self.reused)}, "
                f"duplicated {len(self.duplicated)}, divergent replicas {len(self.divergent)}, "
                f"epochs gone back {len(self.went_back)}"
                + (f", re-sent by the client after an epoch bump {len(self.resent)}" if self.resent else "")
                + ("" if self.copy is None else f"; {self.copy.row()}")
                + ("" if self.copy_failed is None else f"; copy job failed: {self.copy_failed}")
                + ("" if self.group is None else f"; {self.group.row()}"))


@dataclass
class CopyVerdict:
    """The copy job's output read with read_committed, against the input it copied: each input
    record exactly once, and nothing else (an aborted record read back would show as a copy too
    many, or as one the input never had). `job` is what the job itself reported."""

    copied: int = 0
    missing: list[bytes] = field(default_factory=list)
    duplicated: list[bytes] = field(default_factory=list)
    foreign: list[bytes] = field(default_factory=list)
    job: "CopyRun | None" = None

    @property
    def ok(self) -> bool:
        return not (self.missing or self.duplicated or self.foreign)

    def row(self) -> str:
        job = "" if self.job is None else (
            f" in {self.job.commits} transactions ({self.job.random_aborts} aborted on purpose, "
            f"{self.job.aborts} after an error, {self.job.restarts} producers replaced)")
        return (f"copied {self.copied}{job}, missing {len(self.missing)}, duplicated {len(self.duplicated)}, "
                f"foreign {len(self.foreign)}")


def judge_copy(inputs: list[bytes], output: list[bytes], job: "CopyRun | None" = None) -> CopyVerdict:
    """Exactly once: every input record in the output once, nothing else there. Records are
    counted, not only values: a value the input holds twice (its client re-sent it after an epoch
    bump, Verdict.resent) is two records for the job, and copied twice it is copied exactly once."""
    have = Counter(output)
    want = Counter(inputs)
    return CopyVerdict(copied=len(output), missing=sorted(v for v, n in want.items() if have[v] < n),
                       duplicated=sorted(v for v, n in have.items() if v in want and n > want[v]),
                       foreign=sorted(have.keys() - want.keys()), job=job)


def judge(acks: list[Ack], log: dict[tuple[int, int], bytes],
          writers: Mapping[tuple[int, int], Writer] | None = None) -> Verdict:
    """Every acknowledged record at its acknowledged offset (one acknowledged without an offset
    somewhere in its partition); no offset acknowledged twice; no value stored twice by one
    writer. `writers` holds the (producer id, epoch) of each stored (partition, offset): a value
    whose copies were each written under a different one was re-sent by its client (Verdict.resent);
    without writers every second copy counts as duplicated."""
    verdict = Verdict(acknowledged=len(acks))
    by_offset: dict[tuple[int, int], bytes] = {}
    stored_in: dict[bytes, set[int]] | None = None
    for partition, offset, value in acks:
        if offset is None:
            if stored_in is None:
                stored_in = {}
                for (p, _), v in log.items():
                    stored_in.setdefault(v, set()).add(p)
            if partition not in stored_in.get(value, ()):
                verdict.lost.append((partition, offset, value))
            continue
        earlier = by_offset.setdefault((partition, offset), value)
        if earlier != value:
            verdict.reused.append((partition, offset))
        if log.get((partition, offset)) != value:
            verdict.lost.append((partition, offset, value))
    twice = {v for v, n in Counter(log.values()).items() if n > 1}
    copies: dict[bytes, list[tuple[int, int]]] = {}
    for where, value in log.items():
        if value in twice:
            copies.setdefault(value, []).append(where)
    for value, places in sorted(copies.items()):
        spots = sorted(places)
        by = [w for w in (writers.get(at) for at in spots) if w is not None] if writers is not None else []
        if len(by) < len(spots) or len(set(by)) < len(by):
            verdict.duplicated.append(value)
        else:
            verdict.resent.append(value.decode(errors="replace") + ": " + ", ".join(
                f"partition {p} offset {o} by producer {w[0]} epoch {w[1]}" for (p, o), w in zip(spots, by)))
    return verdict


# a commit the group's consumers saw succeed: partition, committed offset (the next to read), when
# the request was sent and when its answer came back (time.monotonic() of this process)
Commit = tuple[int, int, float, float]
Delivery = tuple[int, int, bytes]  # partition, offset, value as a consumer of the group received it


@dataclass
class GroupVerdict:
    """A consumer group (auto commit off, each consumer committing what it processed) through the
    faults, drained to the end once they healed. Findings: a committed offset that went back (a
    commit asked after another's success, for a lower offset; or a final offset below one seen
    committed); an acknowledged record below the final committed offset that no consumer
    received (skipped, say by a rebalance or a failover); a record received at an offset where
    the log holds no such value (garbage); a partition whose committed offset never reached the
    high watermark (the group did not drain)."""

    consumers: int = 0
    delivered: int = 0  # records received, redeliveries included
    distinct: int = 0  # distinct (partition, offset) received
    commits: int = 0  # commits seen to succeed, per partition
    rejoins: int = 0  # consumers closed after an error and made again
    went_back: list[str] = field(default_factory=list)
    skipped: list[Ack] = field(default_factory=list)
    garbage: list[Delivery] = field(default_factory=list)
    undrained: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.went_back or self.skipped or self.garbage or self.undrained)

    def row(self) -> str:
        return (f"group of {self.consumers}: delivered {self.delivered} ({self.distinct} distinct), "
                f"{self.commits} commits, {self.rejoins} rejoins, committed offsets gone back {len(self.went_back)}, "
                f"skipped {len(self.skipped)}, garbage {len(self.garbage)}, undrained {len(self.undrained)}")


def committed_went_back(commits: list[Commit]) -> list[str]:
    """Per partition, each commit that asked for a lower offset than one already answered as
    committed before it was sent. Commits in flight at the same time are not ordered (the broker
    may apply them either way), so only real-time order counts: sent after the other's answer."""
    findings: list[str] = []
    by_partition: dict[int, list[Commit]] = {}
    for commit in commits:
        by_partition.setdefault(commit[0], []).append(commit)
    for partition, own in sorted(by_partition.items()):
        answered = sorted(own, key=lambda c: c[3])
        highest, at = -1, 0
        for _, offset, sent, _ in sorted(own, key=lambda c: c[2]):
            while at < len(answered) and answered[at][3] < sent:
                highest = max(highest, answered[at][1])
                at += 1
            if offset < highest:
                findings.append(f"partition {partition}: committed {offset} after {highest} was committed")
    return findings


def judge_group(acks: list[Ack], log: dict[tuple[int, int], bytes], high_watermarks: dict[int, int],
                deliveries: set[Delivery], delivered: int, commits: list[Commit], final: dict[int, int],
                consumers: int = 0, rejoins: int = 0) -> GroupVerdict:
    """The group's verdict: `deliveries` is every distinct (partition, offset, value) a consumer
    received (`delivered` counts them with redeliveries), `commits` the commits seen to succeed,
    `final` the group's committed offset per partition once drained (-1001 or absent: none),
    `log` and `high_watermarks` the topic as read back after the faults."""
    verdict = GroupVerdict(consumers=consumers, delivered=delivered, commits=len(commits), rejoins=rejoins,
                           distinct=len({(p, o) for p, o, _ in deliveries}))
    verdict.went_back = committed_went_back(commits)
    for partition in sorted(high_watermarks):
        seen = max((c[1] for c in commits if c[0] == partition), default=-1)
        end = final.get(partition, -1)
        if seen >= 0 and end < seen:
            verdict.went_back.append(f"partition {partition}: the group's final offset {end} is below {seen}, "
                                     "committed before")
        if max(end, 0) != high_watermarks[partition]:  # a partition never written has nothing to commit
            verdict.undrained.append(f"partition {partition}: committed {end}, high watermark "
                                     f"{high_watermarks[partition]}")
    received = {(p, o) for p, o, _ in deliveries}
    where: dict[tuple[int, bytes], int] | None = None
    for partition, offset, value in acks:
        if offset is None:  # acknowledged without its offset (see Ack): wherever the log holds it
            if where is None:
                where = {(p, v): o for (p, o), v in log.items()}
            offset = where.get((partition, value))
            if offset is None:
                continue  # not in the log at all: judge() reports it lost
        if offset < final.get(partition, -1) and (partition, offset) not in received:
            verdict.skipped.append((partition, offset, value))
    verdict.garbage = sorted(d for d in deliveries if log.get((d[0], d[1])) != d[2])
    return verdict
