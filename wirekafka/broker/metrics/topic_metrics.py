"""Kafka's BrokerTopicMetrics: messages and bytes appended by producers (MessagesInPerSec,
BytesInPerSec), bytes sent to consumers (BytesOutPerSec; a follower's fetches are replication,
which Kafka counts apart), and produce and fetch requests per topic (TotalProduceRequestsPerSec,
TotalFetchRequestsPerSec), each per topic and for all topics together.

Bumped once per partition of a produce or fetch, with the count a batch header already holds: no
work per record. Kafka has no messages-out figure (its fetch path never counts records); neither
has this. A deleted topic keeps its series until the broker restarts."""

from __future__ import annotations


class TopicCounts:
    __slots__ = ("messages_in", "bytes_in", "bytes_out", "produce_requests", "fetch_requests")

    def __init__(self) -> None:
        self.messages_in = 0
        self.bytes_in = 0
        self.bytes_out = 0
        self.produce_requests = 0
        self.fetch_requests = 0


class TopicMetrics:
    """Per-topic counts; the all-topics series are their sums, taken when scraped (topics are
    never dropped, so the sums are the totals), which halves the work per partition."""

    def __init__(self) -> None:
        self.topics: dict[str, TopicCounts] = {}

    def _new(self, topic: str) -> TopicCounts:
        counts = self.topics[topic] = TopicCounts()
        return counts

    def appended(self, topic: str, messages: int, size: int) -> None:
        """A producer's batch was appended to one of topic's partitions."""
        counts = self.topics.get(topic) or self._new(topic)
        counts.messages_in += messages
        counts.bytes_in += size
        counts.produce_requests += 1

    def fetched(self, topic: str, size: int) -> None:
        """A consumer's fetch read size bytes of one of topic's partitions."""
        counts = self.topics.get(topic) or self._new(topic)
        counts.bytes_out += size
        counts.fetch_requests += 1

    def total(self, attribute: str) -> int:
        """The all-topics figure of a TopicCounts attribute."""
        return sum(getattr(counts, attribute) for counts in self.topics.values())
