"""What must hold after the faults healed, judged on the producer's acknowledgements and the log
as a consumer reads it back (pure functions: the same verdict for any broker kind)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

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
    duplicated: list[bytes] = field(default_factory=list)  # a value stored twice (idempotence broken)
    unacknowledged: int = 0  # writes that failed or were never answered (stored or not: both fine)
    divergent: list[str] = field(default_factory=list)  # replicas whose committed bytes differ (replicas.py)
    went_back: list[str] = field(default_factory=list)  # a controller or leader epoch that decreased (epochs.py)
    copy: "CopyVerdict | None" = None  # the transactional copy job's output, when it ran
    copy_failed: str | None = None  # why the copy job ended before copying the input (a finding too)

    @property
    def ok(self) -> bool:
        return not (self.lost or self.reused or self.duplicated or self.divergent or self.went_back
                    or self.copy_failed or (self.copy is not None and not self.copy.ok))

    def row(self) -> str:
        return (f"acknowledged {self.acknowledged}, lost {len(self.lost)}, reused {len(self.reused)}, "
                f"duplicated {len(self.duplicated)}, divergent replicas {len(self.divergent)}, "
                f"epochs gone back {len(self.went_back)}" + ("" if self.copy is None else f"; {self.copy.row()}")
                + ("" if self.copy_failed is None else f"; copy job failed: {self.copy_failed}"))


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
    """Exactly once: every input value in the output once, no other value there."""
    counts = Counter(output)
    wanted = set(inputs)
    return CopyVerdict(copied=len(output), missing=sorted(wanted - counts.keys()),
                       duplicated=sorted(v for v, n in counts.items() if n > 1),
                       foreign=sorted(counts.keys() - wanted), job=job)


def judge(acks: list[Ack], log: dict[tuple[int, int], bytes]) -> Verdict:
    """Every acknowledged record at its acknowledged offset (one acknowledged without an offset
    somewhere in its partition); no offset acknowledged twice; no value stored twice."""
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
    verdict.duplicated = sorted(v for v, n in Counter(log.values()).items() if n > 1)
    return verdict
