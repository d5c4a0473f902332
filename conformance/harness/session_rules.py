"""How a replayed answer is held to the recorded one: the rules for answers that depend on
timing, and for lists whose order Kafka does not define. Every rule is here, with its reason.

A replay keeps the recording's causality but not its clock: each answer is compared whole unless
a rule below says why the two brokers could rightly have answered differently at that moment."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from conformance.harness.compare import ALLOCATED, Difference
from conformance.harness.frames import structs

# Error codes with which Kafka says "not yet": a topic created a moment ago whose leader the
# KRaft metadata has not yet propagated to the broker, a coordinator partition still loading.
# wirekafka has one node and no propagation: it is ready at once. A request Kafka refused this
# way is not replayed (see withhold_reason); the client's retry is, and its answer compared.
# A request refused only in part is replayed, and the refused parts are not compared.
# (UNKNOWN_TOPIC_OR_PARTITION for a topic being auto-created is not one: the request did start the
# creation, so it is replayed; see timing_reasons.)
NOT_READY: dict[int, str] = {
    5: "LEADER_NOT_AVAILABLE",
    6: "NOT_LEADER_OR_FOLLOWER",
    14: "COORDINATOR_LOAD_IN_PROGRESS",
    15: "COORDINATOR_NOT_AVAILABLE",
    16: "NOT_COORDINATOR",
}
UNKNOWN_TOPIC_OR_PARTITION, REBALANCE_IN_PROGRESS = 3, 27


@dataclass(frozen=True)
class OrderFree:
    """A list whose order the protocol leaves to the broker: compared sorted by ``key``. Lists
    keyed by an allocated id are sorted after normalisation (by the ids' ordinals)."""
    api: str
    path: str  # dotted path from the response root; "[*]" descends into every list item
    key: str
    reason: str


ORDER_FREE: list[OrderFree] = [
    OrderFree("Metadata", "topics", "name",
              "Kafka lists the topics from its metadata image's hash maps; clients key them by name"),
    OrderFree("ListOffsets", "topics", "name",
              "Kafka collects the answers per topic in a hash map, not in request order"),
    OrderFree("ListOffsets", "topics[*].partitions", "partition_index",
              "Kafka collects the answers in a hash map keyed by topic-partition, not in request order"),
    OrderFree("OffsetFetch", "topics[*].partitions", "partition_index",
              "asked for all partitions, Kafka answers from the group's offsets map, not in any order"),
    OrderFree("OffsetFetch", "groups[*].topics", "name",
              "asked for all topics, Kafka answers from the group's offsets map, not in any order"),
    OrderFree("OffsetFetch", "groups[*].topics[*].partitions", "partition_index",
              "asked for all partitions, Kafka answers from the group's offsets map, not in any order"),
    OrderFree("DescribeConfigs", "results[*].configs", "name",
              "Kafka lists a resource's configs in the iteration order of a Java HashMap of their names; "
              "clients read them into a map by name"),
    OrderFree("CreateTopics", "topics[*].configs", "name",
              "the topic's configs as a set (Kafka sorts them by name here, a detail of its implementation)"),
    OrderFree("JoinGroup", "members", "member_id",
              "the leader gets the members as Kafka's group keeps them, in a hash map by member id (random)"),
]


def _has_code(struct: Any) -> bool:
    return "error_code" in struct.fields


def _outcome_codes(response: Any) -> list[int]:
    """The error codes that say how each part of a request went: those of the innermost structs
    that carry one (each partition of a Produce answer, the whole of a JoinGroup answer)."""
    return [s.error_code for s in structs(response)
            if _has_code(s) and not any(_has_code(inner) for inner in list(structs(s))[1:])]


def withhold_reason(recorded: Any) -> str | None:
    """Why the replay does not send a request at all, or None to send it.

    Kafka refused all of it as not ready (every outcome code in its answer is a NOT_READY one), so
    it had no effect there; sent to wirekafka, which is ready, it would have one (a JoinGroup adds
    a pending member that the rebalance then waits for, a Produce appends records the client's
    retry appends again). The client's retry is replayed and compared. A request Kafka refused
    only in part is sent (see _not_ready_entries)."""
    codes = _outcome_codes(recorded)
    if codes and all(c in NOT_READY for c in codes):
        return f"not sent: Kafka refused it with {NOT_READY[codes[0]]} (not ready yet)"
    return None


@dataclass(frozen=True)
class Answers:
    """One exchange as the timing rules see it: the API, the request as replayed, both answers
    as compared (normalised, order-free lists sorted), and the APIs of the exchanges on other
    connections that overlapped it in the recording (sent before its answer came, answered after
    it was sent): those the broker may have handled before or after it."""
    api: str
    request: Any
    kafka: Any
    wirekafka: Any
    concurrent: frozenset[str]


def _auto_creation_in_flight(a: Answers, differences: list[Difference]) -> list[Difference]:
    """Metadata with auto-creation: Kafka answers UNKNOWN_TOPIC_OR_PARTITION for a topic until its
    controller has created it and the broker has learnt of it, however many requests ask in the
    meantime; wirekafka so answers only the request that creates the topic (and any arriving while
    it does). Differences in the entry of a topic Kafka was still creating are explained."""
    if a.api != "Metadata" or not getattr(a.request, "allow_auto_topic_creation", False):
        return []
    creating = [f"topics[{i}]" for i, t in enumerate(a.kafka.get("topics") or [])
                if t["error_code"] == UNKNOWN_TOPIC_OR_PARTITION]
    return [d for d in differences if d.path.startswith(tuple(creating))] if creating else []


def _not_ready_entries(a: Answers, differences: list[Difference]) -> list[Difference]:
    """A request Kafka refused in part as not ready (a Metadata answer with a new topic's
    LEADER_NOT_AVAILABLE beside ready ones): differences in the refused entries are explained."""
    refused = [path for path, node in _dicts(a.kafka) if node.get("error_code") in NOT_READY]
    return [d for d in differences if d.path.startswith(tuple(refused))] if refused else []


def _dicts(tree: Any, path: str = "") -> list[tuple[str, dict[str, Any]]]:
    """(field path, dict) of every dict in a tree, the path as compare.diff writes it."""
    if isinstance(tree, list):
        return [found for i, item in enumerate(tree) for found in _dicts(item, f"{path}[{i}]")]
    if not isinstance(tree, dict):
        return []
    return [(path, tree)] + [found for k, v in tree.items() for found in _dicts(v, f"{path}.{k}" if path else k)]


def _fetch_during_produce(a: Answers, differences: list[Difference]) -> list[Difference]:
    """A Fetch in flight while a Produce on another connection appended: which of the two each
    broker handled first decides what the fetch returns. A partition is compared only when both
    brokers answered at the same log state (the same high watermark); for one at different states
    the differences in its entry are explained."""
    if a.api != "Fetch" or "Produce" not in a.concurrent:
        return []
    moved = []
    for i, (k_topic, w_topic) in enumerate(zip(a.kafka.get("responses") or [], a.wirekafka.get("responses") or [])):
        for j, (k_part, w_part) in enumerate(zip(k_topic["partitions"], w_topic["partitions"])):
            if k_part["high_watermark"] != w_part["high_watermark"]:
                moved.append(f"responses[{i}].partitions[{j}]")
    return [d for d in differences if d.path.startswith(tuple(moved))] if moved else []


def _heartbeat_during_rebalance(a: Answers, differences: list[Difference]) -> list[Difference]:
    """A Heartbeat in flight while another member joined, synced or left: it reports the
    rebalance (REBALANCE_IN_PROGRESS) or not depending on which the coordinator handled first.
    Only that error code, and only between those two values, is explained."""
    if a.api != "Heartbeat" or not a.concurrent & {"JoinGroup", "SyncGroup", "LeaveGroup"}:
        return []
    return [d for d in differences if d.path == "error_code" and {d.kafka, d.wirekafka} <= {0, REBALANCE_IN_PROGRESS}]


TIMING_RULES = [
    (_auto_creation_in_flight, "Kafka's controller was still creating the auto-created topic"),
    (_not_ready_entries, "Kafka answered that part not ready yet, where wirekafka is ready at once"),
    (_fetch_during_produce, "the fetch raced a produce on another connection: the brokers answered at "
                            "different log states (high watermarks)"),
    (_heartbeat_during_rebalance, "the heartbeat raced another member's JoinGroup/SyncGroup/LeaveGroup"),
]


def timing_reasons(answers: Answers, differences: list[Difference]) -> list[tuple[Difference, str]]:
    """The differences the timing of the two brokers explains, each with its rule's reason."""
    explained: list[tuple[Difference, str]] = []
    for rule, reason in TIMING_RULES:
        explained += [(d, reason) for d in rule(answers, differences) if all(d is not e for e, _ in explained)]
    return explained


def sort_order_free(api: str, tree: Any, normalised: bool) -> Any:
    """The tree with this API's order-free lists sorted by their key (in place): before
    normalisation the lists with ordinary keys, after it those keyed by an allocated id."""
    for rule in ORDER_FREE:
        if rule.api == api and (rule.key in ALLOCATED) == normalised:
            for items in _lists_at(tree, rule.path.split(".")):
                items.sort(key=lambda item: str(item.get(rule.key)) if isinstance(item, dict) else str(item))
    return tree


def _lists_at(tree: Any, steps: list[str]) -> list[list[Any]]:
    if not steps:
        return [tree] if isinstance(tree, list) else []
    step, rest = steps[0], steps[1:]
    each = step.endswith("[*]")
    node = tree.get(step.removesuffix("[*]")) if isinstance(tree, dict) else None
    if node is None:
        return []
    if each:
        return [found for item in node for found in _lists_at(item, rest)]
    return _lists_at(node, rest)
