"""Compare a replay's answers with the recording's, response by response.

The reference for each answer is Kafka's recorded response as the client saw it through the
proxy (`client_view`), with the replay's producer ids in its record batches (`IdMap.
translate_batches`: a batch's CRC covers its producer id). Both sides become trees (`compare.to_tree`), each side has one Normalizer
for the whole session (so "the same member id as before" still counts), order-free lists are
sorted (`session_rules`), and `compare.diff` names every field that differs; `compare.judge`
separates deliberate deviations (deviations.toml) from the rest. Answers are taken in the order
Kafka's responses were recorded, so both Normalizers meet ids in the same order."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from conformance.harness import client_view, compare, frames, session_rules
from conformance.harness.compare import Deviation, Difference, Normalizer, Verdict, diff, judge, to_tree
from conformance.harness.replay import Exchange, Replayed


@dataclass
class Outcome:
    exchange: Exchange
    skipped: str | None = None  # why the answer was not compared
    verdict: Verdict = field(default_factory=Verdict)
    timing: list[tuple[Difference, str]] = field(default_factory=list)  # differences timing explains

    @property
    def where(self) -> str:
        e = self.exchange
        return f"#{e.sent_at} conn {e.conn} {e.api} v{e.version} (correlation id {e.correlation_id})"


def check(name: str, replayed: Replayed, deviations: list[Deviation]) -> list[Outcome]:
    kafka_side, wirekafka_side = Normalizer(), Normalizer()
    outcomes = []
    answered = sorted((e for e in replayed.exchanges if e.recorded is not None), key=lambda e: e.answered_at or 0)
    for exchange in answered:
        outcome = Outcome(exchange)
        outcomes.append(outcome)
        outcome.skipped = exchange.withheld
        if outcome.skipped:
            continue
        if exchange.replayed is None:
            outcome.verdict.unexplained.append(Difference("<response>", "answered", exchange.problem))
            continue
        recorded = frames.decode_response(exchange.api_key, exchange.version, exchange.recorded)
        try:
            answer = frames.decode_response(exchange.api_key, exchange.version, exchange.replayed)
        except Exception as exc:  # noqa: BLE001 - an undecodable answer is itself the difference
            outcome.verdict.unexplained.append(Difference("<response>", "decodable", repr(exc)))
            continue
        client_view.present(exchange.api_key, recorded, None)
        replayed.ids.translate_batches(recorded)
        kafka_tree, wirekafka_tree = _tree(exchange.api, recorded, kafka_side), _tree(exchange.api, answer, wirekafka_side)
        differences = list(diff(kafka_tree, wirekafka_tree))
        answers = session_rules.Answers(exchange.api, frames.decode_request(exchange.sent), kafka_tree, wirekafka_tree,
                                        _concurrent(exchange, replayed.exchanges))
        timing = session_rules.timing_reasons(answers, differences)
        outcome.timing = timing
        explained = {id(d) for d, _ in timing}
        outcome.verdict = judge(exchange.api, exchange.version, [d for d in differences if id(d) not in explained],
                                deviations, name)
    return outcomes


def _concurrent(exchange: Exchange, exchanges: list[Exchange]) -> frozenset[str]:
    """The APIs of exchanges on other connections whose time in the recording overlapped this
    one's (an exchange the client closed before its answer lasts to the end)."""
    end = exchange.answered_at if exchange.answered_at is not None else float("inf")
    return frozenset(other.api for other in exchanges if other.conn != exchange.conn and other.sent_at < end
                     and exchange.sent_at < (other.answered_at if other.answered_at is not None else float("inf")))


def _tree(api: str, response: Any, normalizer: Normalizer) -> Any:
    tree = session_rules.sort_order_free(api, to_tree(response), normalised=False)
    if api == "JoinGroup" and "leader" not in getattr(compare, "ALIASES", {}):
        # JoinGroup's leader is a member id, which this compare.Normalizer does not know yet:
        # it gets that member id's ordinal here.
        tree["leader"] = normalizer({"member_id": tree["leader"]})["member_id"]
    return session_rules.sort_order_free(api, normalizer(tree), normalised=True)


def report(name: str, outcomes: list[Outcome]) -> str:
    """Every unexplained difference with its exchange, field path and both values."""
    lines = []
    for outcome in outcomes:
        for d in outcome.verdict.unexplained:
            lines.append(f"{name} {outcome.where}: {d.path}: kafka={d.kafka!r} wirekafka={d.wirekafka!r}")
    return "\n".join(lines)


def summary(outcomes: list[Outcome]) -> dict[str, int]:
    return {
        "answers": len(outcomes),
        "compared": sum(1 for o in outcomes if not o.skipped),
        "skipped": sum(1 for o in outcomes if o.skipped),
        "timing": sum(len(o.timing) for o in outcomes),
        "deliberate": sum(len(o.verdict.deliberate) for o in outcomes),
        "unexplained": sum(len(o.verdict.unexplained) for o in outcomes),
    }
