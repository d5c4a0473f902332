"""What a handler sees of the request it answers: the broker state and the request header."""

from __future__ import annotations

from dataclasses import dataclass

from wirekafka.broker.state import BrokerState
from wirekafka.protocol.codec import RequestHeader


class CloseConnection(Exception):
    """Raised by a handler when Kafka would drop the connection instead of answering
    (for example an acks=0 produce that failed: the only way to tell that client)."""


@dataclass(slots=True)
class RequestContext:
    state: BrokerState
    header: RequestHeader
    # the listener the request came in on: Metadata and the coordinator look-ups answer with
    # the brokers' endpoints on that same listener, as Kafka does
    listener: str
    peer: str = ""

    @property
    def version(self) -> int:
        return self.header.api_version
