"""What must hold after the faults healed, judged on the producer's acknowledgements and the log
as a consumer reads it back (pure functions: the same verdict for any broker kind)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

Ack = tuple[int, int, bytes]  # partition, offset, value


@dataclass
class Verdict:
    acknowledged: int = 0
    lost: list[Ack] = field(default_factory=list)  # acknowledged, not at its offset (or anywhere)
    reused: list[tuple[int, int]] = field(default_factory=list)  # an offset acknowledged for two values
    duplicated: list[bytes] = field(default_factory=list)  # a value stored twice (idempotence broken)
    unacknowledged: int = 0  # writes that failed or were never answered (stored or not: both fine)
    divergent: list[str] = field(default_factory=list)  # replicas whose committed bytes differ (replicas.py)
    went_back: list[str] = field(default_factory=list)  # a controller or leader epoch that decreased (epochs.py)

    @property
    def ok(self) -> bool:
        return not (self.lost or self.reused or self.duplicated or self.divergent or self.went_back)

    def row(self) -> str:
        return (f"acknowledged {self.acknowledged}, lost {len(self.lost)}, reused {len(self.reused)}, "
                f"duplicated {len(self.duplicated)}, divergent replicas {len(self.divergent)}, "
                f"epochs gone back {len(self.went_back)}")


def judge(acks: list[Ack], log: dict[tuple[int, int], bytes]) -> Verdict:
    """Every acknowledged record at its acknowledged offset; no offset acknowledged twice; no value
    stored twice."""
    verdict = Verdict(acknowledged=len(acks))
    by_offset: dict[tuple[int, int], bytes] = {}
    for partition, offset, value in acks:
        earlier = by_offset.setdefault((partition, offset), value)
        if earlier != value:
            verdict.reused.append((partition, offset))
        if log.get((partition, offset)) != value:
            verdict.lost.append((partition, offset, value))
    verdict.duplicated = sorted(v for v, n in Counter(log.values()).items() if n > 1)
    return verdict
